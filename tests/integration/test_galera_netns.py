"""tools/galera.sh with its nodes on hosts of their own (network
namespaces, tools/netns.sh), as the fault tests use it: each node answers on
its own address; cutting node 1 off makes HAProxy send new connections to
another node within seconds while the other two keep committing, and
healing it brings it back Synced; a node killed with SIGKILL rejoins with
``tools/galera.sh start-node DIR N`` (node 1 too: it joins, it does not
bootstrap a cluster of its own).

The cluster is the one ``PLACEMENT_TEST_FAULT_GALERA_DIR`` names (DIR of
``GALERA_NETNS_PREFIX=... GALERA_NETWORK=... tools/galera.sh start DIR``):
its ``DIR/env`` is read here rather than exported, so that it does not
stand in for the plain cluster of tests/integration/galera.py. Without one
these tests skip loudly (fail under CI=true). They fault the cluster and
undo it before and after each test.
"""
import os
import pathlib
import shlex
import subprocess
import time

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine

from conftest import unavailable
import galera
import private_servers

pytestmark = pytest.mark.integration

DIR_VARIABLE = 'PLACEMENT_TEST_FAULT_GALERA_DIR'
TESTS = 'the Galera fault-cluster tests'
START_HINT = (
    'start one with: GALERA_NETNS_PREFIX=gf GALERA_NETWORK=10.231.1 '
    'GALERA_LAYOUT=single-writer GALERA_SUSPECT_TIMEOUT=PT3S '
    'GALERA_INACTIVE_TIMEOUT=PT6S GALERA_INSTALL_TIMEOUT=PT6S '
    'GALERA_PORT_BASE=14500 tools/galera.sh start DIR, then export %s=DIR'
    % DIR_VARIABLE)
SCRIPT = private_servers.TOOLS / 'galera.sh'
NETNS = private_servers.TOOLS / 'netns.sh'
# HAProxy checks every second and marks a node down after two failures.
FAILOVER_WITHIN = 10
# A cut-off node is evicted after the cluster's evs timeouts (a few seconds
# with the fault settings above); a healed or restarted one catches up.
EVICTED_WITHIN = 40
REJOINED_WITHIN = 60


def _read_env(path):
    """{variable: value} of a DIR/env file (shell assignments)."""
    values = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.partition('=')
        if sep and not line.startswith('#'):
            words = shlex.split(value)
            values[name.strip()] = words[0] if len(words) == 1 else ' '.join(
                words)
    return values


def _run(*command, timeout=private_servers.SCRIPT_TIMEOUT):
    try:
        subprocess.run([str(part) for part in command], check=True,
                       capture_output=True, text=True, timeout=timeout)
    except subprocess.CalledProcessError as exc:
        pytest.fail('%s failed (exit %s): %s' % (
            ' '.join(map(str, command)), exc.returncode, exc.stderr.strip()))


class FaultGalera(galera.Galera):
    """The cluster in ``directory``; node ``n`` (1-based) runs in
    namespace ``netns[n - 1]``."""

    TESTS = TESTS
    START_HINT = START_HINT
    SCRIPT = SCRIPT
    # Nodes go away and come back: no connection is kept.
    POOLED = False
    DATABASE_PREFIX = 'ptest_gfault_'

    def __init__(self, url, node_urls, directory, netns, layout):
        super().__init__(url, node_urls)
        self.dir = directory
        self.netns = list(netns)
        self.layout = layout

    def admin_engine(self, node=0):
        # Bounded reads too: a frozen or cut-off node never answers.
        if node not in self._admins:
            self._admins[node] = sa.create_engine(
                self._admin_url(node), isolation_level='AUTOCOMMIT',
                poolclass=sa.pool.NullPool,
                connect_args={'connect_timeout': 3, 'read_timeout': 5,
                              'write_timeout': 5})
        return self._admins[node]

    def haproxy_engine(self, database=None):
        url = db_engine.normalize_url(self.url)
        if database:
            url = url.set(database=database)
        return sa.create_engine(
            url, poolclass=sa.pool.NullPool,
            connect_args={'connect_timeout': 3, 'read_timeout': 5,
                          'write_timeout': 5})

    # --- Faults ------------------------------------------------------------

    def pids(self, n):
        out = subprocess.run(['ip', 'netns', 'pids', self.netns[n - 1]],
                             check=True, capture_output=True, text=True)
        return [int(pid) for pid in out.stdout.split()]

    def pidfile_pid(self, n):
        path = pathlib.Path(self.dir, 'node%d' % n, 'mariadbd.pid')
        return int(path.read_text().split()[0])

    def cut(self, n):
        _run(NETNS, 'cut', self.netns[n - 1])

    def heal(self, n):
        _run(NETNS, 'heal', self.netns[n - 1])

    def kill(self, n):
        for pid in self.pids(n):
            os.kill(pid, 9)

    def start_node(self, n):
        _run(SCRIPT, 'start-node', self.dir, n)

    def state(self, node):
        """(cluster size, local state, cluster status) of node ``node``
        (0-based), or None when it does not answer."""
        try:
            status = self.node_status(node)
        except sa.exc.DBAPIError:
            return None
        return (int(status.get('wsrep_cluster_size', 0)),
                status.get('wsrep_local_state_comment'),
                status.get('wsrep_cluster_status'))

    def wait_for_state(self, node, want, timeout):
        private_servers.poll(
            lambda: self.state(node) == want, timeout,
            lambda: 'node %d: %r, not %r after %ss'
            % (node + 1, self.state(node), want, timeout), interval=0.5)

    def restore(self):
        """Every link up, every node continued, running (start-node) and
        Synced in a cluster of 3."""
        for n in range(1, len(self.netns) + 1):
            self.heal(n)
            for pid in self.pids(n):
                os.kill(pid, 18)  # SIGCONT
            if not self.pids(n):
                self.start_node(n)
        for node in range(len(self.netns)):
            self.wait_for_state(node, (3, 'Synced', 'Primary'),
                                REJOINED_WITHIN)


def _connect():
    values = private_servers.environment(
        [DIR_VARIABLE], TESTS, START_HINT, directory=DIR_VARIABLE)
    directory = values[DIR_VARIABLE]
    env_file = pathlib.Path(directory, 'env')
    if not env_file.is_file():
        unavailable('%s has no env file (is its cluster running?): %s are '
                    'NOT being run (%s)' % (directory, TESTS, START_HINT))
    env = _read_env(env_file)
    netns = env.get('PLACEMENT_TEST_GALERA_NETNS', '').split()
    if len(netns) != galera.NODE_COUNT:
        unavailable('the cluster in %s does not run its nodes in network '
                    'namespaces (PLACEMENT_TEST_GALERA_NETNS=%r): %s are NOT '
                    'being run (%s)' % (directory, netns, TESTS, START_HINT))
    nodes = env['PLACEMENT_TEST_GALERA_NODES'].split(',')
    return FaultGalera(env['PLACEMENT_TEST_GALERA_URL'], nodes, directory,
                       netns, env.get('PLACEMENT_TEST_GALERA_LAYOUT'))


fault_galera, fault_galera_database = private_servers.fixtures(
    'fault_galera', _connect)


def _engine(url, database):
    return sa.create_engine(
        db_engine.normalize_url(url).set(database=database),
        poolclass=sa.pool.NullPool,
        connect_args={'connect_timeout': 3, 'read_timeout': 5,
                      'write_timeout': 5})


@pytest.fixture
def table(fault_galera, fault_galera_database):  # noqa: F811 (fixture)
    """The database, holding table t; engines per node (node 1 first) and
    through HAProxy."""
    nodes = [_engine(url, fault_galera_database.name)
             for url in fault_galera.node_urls]
    haproxy = fault_galera.haproxy_engine(fault_galera_database.name)
    with nodes[0].begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (id INT AUTO_INCREMENT '
                             'PRIMARY KEY, value VARCHAR(40))')
    try:
        yield nodes, haproxy
    finally:
        for engine in nodes + [haproxy]:
            engine.dispose()


def _insert(engine, value):
    with engine.begin() as conn:
        conn.execute(sa.text('INSERT INTO t (value) VALUES (:value)'),
                     {'value': value})


def _try_insert(engine, value):
    try:
        _insert(engine, value)
    except sa.exc.DBAPIError:
        return False
    return True


def _commits_within(engine, value, timeout):
    """Insert ``value`` through ``engine``, retried until ``timeout``."""
    private_servers.poll(
        lambda: _try_insert(engine, value), timeout,
        lambda: 'no commit of %r within %ss' % (value, timeout),
        interval=0.5)


def _values(engine):
    """The values, once the node has applied what the cluster committed
    before (causal read). A set: a retried insert whose first commit did
    happen (the answer was lost) may be there twice."""
    with engine.connect() as conn:
        conn.exec_driver_sql('SET SESSION wsrep_sync_wait = 1')
        return set(conn.execute(sa.text('SELECT value FROM t')).scalars())


def _serving_node(engine):
    """The node a new connection through ``engine`` reaches, or None."""
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(
                'SELECT @@wsrep_node_name').scalar()
    except sa.exc.DBAPIError:
        return None


def test_each_node_answers_on_its_own_address(fault_galera):  # noqa: F811
    hosts = [db_engine.normalize_url(url).host
             for url in fault_galera.node_urls]
    assert len(set(hosts)) == len(hosts)
    assert '127.0.0.1' not in hosts
    for node, host in enumerate(hosts):
        with fault_galera.admin_engine(node).connect() as conn:
            name, bind = conn.exec_driver_sql(
                'SELECT @@wsrep_node_name, @@bind_address').one()
        assert (name, bind) == ('node%d' % (node + 1), host)
        # The node's namespace holds its mariadbd, and nothing else.
        pids = fault_galera.pids(node + 1)
        assert pids == [fault_galera.pidfile_pid(node + 1)]
        comm = pathlib.Path('/proc/%d/comm' % pids[0]).read_text().strip()
        assert comm == 'mariadbd'


def test_cut_node1_fails_over_and_heals(fault_galera, table):  # noqa: F811
    nodes, haproxy = table
    if fault_galera.layout == 'single-writer':
        # Every connection to node 1 while it is up.
        assert {_serving_node(haproxy) for _ in range(5)} == {'node1'}
    _insert(nodes[0], 'before')

    fault_galera.cut(1)
    began = time.monotonic()
    try:
        # New connections reach another node only, within seconds.
        private_servers.poll(
            lambda: all(_serving_node(haproxy) in ('node2', 'node3')
                        for _ in range(3)),
            FAILOVER_WITHIN, lambda: 'HAProxy still sends connections to '
            'node 1 %ss after it was cut off' % FAILOVER_WITHIN,
            interval=0.2)
        failover = time.monotonic() - began
        if fault_galera.layout == 'single-writer':
            # The first backup takes them all.
            assert _serving_node(haproxy) == 'node2'
        # The other two evict node 1 and keep committing.
        for engine, value in ((nodes[1], 'on node2'), (nodes[2], 'on node3'),
                              (haproxy, 'through haproxy')):
            _commits_within(engine, value, EVICTED_WITHIN)
        assert fault_galera.state(1) == (2, 'Synced', 'Primary')
    finally:
        fault_galera.heal(1)

    # Each node's own view: one that saw node 1 rejoin may still refuse
    # reads for a moment (1047) while it applies the membership change.
    for node in range(len(nodes)):
        fault_galera.wait_for_state(node, (3, 'Synced', 'Primary'),
                                    REJOINED_WITHIN)
    expected = {'before', 'on node2', 'on node3', 'through haproxy'}
    for engine in nodes:
        assert _values(engine) == expected
    if fault_galera.layout == 'single-writer':
        private_servers.poll(
            lambda: _serving_node(haproxy) == 'node1', FAILOVER_WITHIN,
            lambda: 'HAProxy did not go back to node 1 once Synced')
    print('failover after %.1fs' % failover)


@pytest.mark.parametrize('n', [2, 1])
def test_killed_node_rejoins_with_start_node(fault_galera, table,  # noqa
                                             n):
    nodes, haproxy = table
    other = nodes[2]
    _insert(other, 'before')
    fault_galera.kill(n)
    # SIGKILLed processes leave the namespace once the kernel has reaped
    # them, a moment later.
    private_servers.poll(
        lambda: fault_galera.pids(n) == [], 5,
        lambda: 'node %d still has processes: %s' % (n, fault_galera.pids(n)))
    # The other two go on as a cluster of 2.
    fault_galera.wait_for_state(2, (2, 'Synced', 'Primary'), EVICTED_WITHIN)
    _insert(other, 'while down')
    _commits_within(haproxy, 'through haproxy', FAILOVER_WITHIN)

    fault_galera.start_node(n)
    assert fault_galera.state(n - 1) == (3, 'Synced', 'Primary')
    assert fault_galera.pids(n) == [fault_galera.pidfile_pid(n)]
    assert _values(nodes[n - 1]) == {'before', 'while down',
                                     'through haproxy'}
