"""tools/patroni.sh: both of its URLs reach the primary; when every process
of the leader's namespace is SIGKILLed, the other node is promoted within
seconds, both URLs (new connections) reach it and a row committed before
the kill is there; ``start-node`` brings the old leader back as a standby.

The cluster is the one ``tools/patroni.sh start DIR`` describes in DIR/env
(``set -a; . DIR/env; set +a``). The test kills a node, so it needs root
(``ip netns pids``); it leaves the cluster healthy, the leader swapped.
"""
import os
import signal
import subprocess
import time
import uuid

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine

from conftest import unavailable
import private_servers

pytestmark = pytest.mark.integration

URL_VARIABLE = 'PLACEMENT_TEST_PATRONI_URL'
MULTIHOST_VARIABLE = 'PLACEMENT_TEST_PATRONI_MULTIHOST_URL'
NETNS_VARIABLE = 'PLACEMENT_TEST_PATRONI_NETNS'
DIR_VARIABLE = 'PLACEMENT_TEST_PATRONI_DIR'
SCRIPT = private_servers.TOOLS / 'patroni.sh'
TESTS = 'the Patroni tool tests'
START_HINT = private_servers.start_hint('patroni.sh')
# ttl 10 s + loop_wait 1 s, and a little for the promotion itself.
PROMOTION_TIMEOUT = 20
# HAProxy checks each node's Patroni every second (fall 2, rise 1).
ROUTING_TIMEOUT = 10
SCRIPT_TIMEOUT = 180

WHO = 'SELECT host(inet_server_addr()), pg_is_in_recovery()'


class Cluster:
    """The cluster DIR/env describes: ``url`` (HAProxy), ``multihost_url``,
    ``netns`` (node 1 first) and the nodes' own URLs, taken from the
    multi-host one."""

    def __init__(self, values):
        self.url = values[URL_VARIABLE]
        self.multihost_url = values[MULTIHOST_VARIABLE]
        self.netns = values[NETNS_VARIABLE].split(',')
        self.dir = values[DIR_VARIABLE]
        hosts = db_engine.normalize_url(self.multihost_url).query['host']
        assert len(hosts) == len(self.netns) == 2, (hosts, self.netns)
        self.addresses = [host.rsplit(':', 1)[0] for host in hosts]
        self.node_urls = ['postgresql+psycopg2://postgres@%s/' % host
                          for host in hosts]

    def script(self, *args, check=True):
        try:
            return subprocess.run(
                [str(SCRIPT), args[0], self.dir, *args[1:]], check=check,
                capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
        except subprocess.CalledProcessError as exc:
            pytest.fail('tools/patroni.sh %s failed (exit %s): %s%s'
                        % (' '.join(args), exc.returncode, exc.stdout,
                           exc.stderr))

    def leader(self):
        """The leader's node number (1 or 2) in etcd, or None."""
        result = self.script('leader', check=False)
        return int(result.stdout) if result.returncode == 0 else None

    def kill_node(self, node):
        """SIGKILL every process of ``node``'s namespace."""
        pids = subprocess.run(
            ['ip', 'netns', 'pids', self.netns[node - 1]], check=True,
            capture_output=True, text=True).stdout.split()
        assert pids, 'nothing runs in namespace %s' % self.netns[node - 1]
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def _engine(url, database='postgres'):
    return sa.create_engine(
        db_engine.normalize_url(url).set(database=database),
        poolclass=sa.pool.NullPool, connect_args={'connect_timeout': 3})


def _query(url, statement, database='postgres'):
    """All rows of ``statement``, on a new connection to ``url``."""
    engine = _engine(url, database)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(statement).all()
    finally:
        engine.dispose()


def _who(url):
    """(address, in recovery) of the server a new connection reaches, or
    None when none answers."""
    try:
        return tuple(_query(url, WHO)[0])
    except sa.exc.DBAPIError:
        return None


@pytest.fixture(scope='module')
def cluster():
    values = private_servers.environment(
        (URL_VARIABLE, MULTIHOST_VARIABLE, NETNS_VARIABLE, DIR_VARIABLE),
        TESTS, START_HINT, directory=DIR_VARIABLE)
    if os.geteuid() != 0:
        unavailable('%s need root (ip netns pids): NOT being run' % TESTS)
    found = Cluster(values)
    status = found.script('status', check=False)
    if status.returncode != 0:
        pytest.fail('the Patroni cluster in %s is not healthy:\n%s%s'
                    % (found.dir, status.stdout, status.stderr))
    return found


@pytest.fixture
def database(cluster):
    """A fresh database (through HAProxy), dropped afterwards."""
    name = 'ptest_patroni_' + uuid.uuid4().hex[:12]
    admin = _engine(cluster.url).execution_options(
        isolation_level='AUTOCOMMIT')
    with admin.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    try:
        yield name
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name)
        admin.dispose()


def test_both_urls_reach_the_leader(cluster):
    leader = cluster.leader()
    assert leader in (1, 2)
    primary = (cluster.addresses[leader - 1], False)
    assert _who(cluster.node_urls[leader - 1]) == primary
    assert _who(cluster.node_urls[2 - leader]) == (
        cluster.addresses[2 - leader], True)
    assert _who(cluster.url) == primary
    assert _who(cluster.multihost_url) == primary


def _wait(done, timeout, failure):
    """Seconds ``done()`` took to hold; pytest.fail(failure()) after
    ``timeout``."""
    began = time.monotonic()
    private_servers.poll(done, timeout, failure, interval=0.2)
    return time.monotonic() - began


def test_killed_leader_is_replaced_and_rejoins(cluster, database):
    old = cluster.leader()
    new = 3 - old
    old_url, new_url = cluster.node_urls[old - 1], cluster.node_urls[new - 1]
    engine = _engine(cluster.url, database)
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (value text)')
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO t VALUES ('before the kill')")
    engine.dispose()
    synchronous = _query(old_url, 'SHOW synchronous_standby_names')[0][0]
    if not synchronous:
        # Asynchronous: the commit may not have reached the standby yet.
        lsn = _query(old_url, 'SELECT pg_current_wal_lsn()')[0][0]
        _wait(lambda: _query(new_url, "SELECT pg_last_wal_replay_lsn() >= "
                             "'%s'::pg_lsn" % lsn)[0][0], 10,
              lambda: 'the standby did not replay %s' % lsn)

    cluster.kill_node(old)
    took = _wait(lambda: (cluster.leader() == new
                          and _who(new_url) == (cluster.addresses[new - 1],
                                                False)),
                 PROMOTION_TIMEOUT,
                 lambda: 'node %s was not promoted within %ss of killing '
                         'node %s (leader: %s)'
                         % (new, PROMOTION_TIMEOUT, old, cluster.leader()))
    print('node %s promoted %.1fs after node %s was killed'
          % (new, took, old))
    primary = (cluster.addresses[new - 1], False)
    for url in (cluster.url, cluster.multihost_url):
        _wait(lambda url=url: _who(url) == primary, ROUTING_TIMEOUT,
              lambda url=url: '%s reaches %s, not the new primary %s'
                              % (url, _who(url), primary))
        assert _query(url, 'SELECT value FROM t', database) == [
            ('before the kill',)]

    cluster.script('start-node', str(old))
    assert _who(old_url) == (cluster.addresses[old - 1], True)
    assert _query(old_url, 'SELECT status FROM pg_stat_wal_receiver') == [
        ('streaming',)]
    assert _query(old_url, 'SELECT value FROM t', database) == [
        ('before the kill',)]
    assert cluster.leader() == new
    status = cluster.script('status', check=False)
    assert status.returncode == 0, status.stdout + status.stderr
