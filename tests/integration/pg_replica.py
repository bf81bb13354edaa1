"""A PostgreSQL primary with a streaming hot standby for the integration
tests, started by ``tools/pg-replica.sh start DIR`` (``.ci/run`` does it and
exports what the script writes to ``DIR/env``).

``pg_replica`` (session fixture) is a ``PgReplica``: ``.primary_url`` and
``.standby_url`` are the servers' URLs (``PLACEMENT_TEST_PG_PRIMARY_URL``,
``PLACEMENT_TEST_PG_STANDBY_URL``), ``.dir`` the script's DIR
(``PLACEMENT_TEST_PG_REPLICA_DIR``). With a variable unset or a server
unreachable its tests skip loudly (fail under CI=true); a pair that answers
but does not replicate (the primary in recovery, the standby not in recovery
or not streaming) fails them.

Its methods drive the standby: ``stop_standby()`` and ``start_standby()``
(through the script; the latter returns once it streams again),
``standby_running()``, ``pause_replay()`` and ``resume_replay()``
(``pg_wal_replay_pause()`` / ``pg_wal_replay_resume()``: WAL keeps arriving
but is not applied), ``replay_lag()`` (seconds the standby's data is behind:
0.0 when it has applied all the WAL it received, otherwise the age of the
last transaction it applied) and ``wait_for_replay()`` (until the standby
has applied all the primary has written so far). ``primary_stats(name)``
and ``standby_stats(name)`` are ``xact_commit + xact_rollback`` of database
``name`` in that server's own ``pg_stat_database``: a standby counts the
transactions run on it, not the ones it replays, so the two show which
server did the work. Backends report them when they go idle, at most about
once a second, and a restart of the standby may reset its counts.

``pg_replica.database()`` is a context manager: a fresh database
``ptest_replica_<random>``, created on the primary and visible on the
standby before it is handed out, as a ``ReplicaDatabase`` (``.name``;
``.primary_url`` and ``.standby_url``, SQLAlchemy URL strings as
``placement_database.connection`` takes them); dropped afterwards, its
sessions terminated first. Before and after, the standby is started again
if a test stopped it and replay is resumed if it paused it, so one test
cannot break the next. ``pg_replica_database`` is a fixture doing that for
one test.

Test modules import the fixtures they use, as the other helpers here are
imported::

    from pg_replica import pg_replica, pg_replica_database  # noqa: F401
"""
import contextlib
import dataclasses
import os
import pathlib
import subprocess
import time
import uuid

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine

from conftest import unavailable

PRIMARY_VARIABLE = 'PLACEMENT_TEST_PG_PRIMARY_URL'
STANDBY_VARIABLE = 'PLACEMENT_TEST_PG_STANDBY_URL'
DIR_VARIABLE = 'PLACEMENT_TEST_PG_REPLICA_DIR'
SCRIPT = (pathlib.Path(__file__).resolve().parents[2]
          / 'tools' / 'pg-replica.sh')
START_HINT = ('start one with: tools/pg-replica.sh start DIR, then '
              '"set -a; . DIR/env; set +a"')
# How long the standby may take to show a new database, or to apply WAL.
REPLAY_TIMEOUT = 30
SCRIPT_TIMEOUT = 120

# 0 when the standby has applied everything it received; else the age of
# the last transaction it applied (NULL before it applied any: the age of
# the WAL it waits for is unknown, as good as "now").
_REPLAY_LAG = sa.text("""
    SELECT CASE
        WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
        ELSE COALESCE(EXTRACT(EPOCH FROM
                              now() - pg_last_xact_replay_timestamp()), 0.0)
    END""")
_STATS = sa.text("""
    SELECT xact_commit + xact_rollback FROM pg_stat_database
    WHERE datname = :name""")


@dataclasses.dataclass
class ReplicaDatabase:
    name: str
    primary_url: str
    standby_url: str


class PgReplica:
    """The pair at ``primary_url`` and ``standby_url``, run by
    tools/pg-replica.sh in ``directory`` (``.dir``)."""

    def __init__(self, primary_url, standby_url, directory):
        self.primary_url = primary_url
        self.standby_url = standby_url
        self.dir = directory
        self._admins = {}

    def admin_engine(self, server):
        """An AUTOCOMMIT engine on the ``postgres`` database of ``server``
        ('primary' or 'standby'), kept for the session; it pools nothing,
        so a restarted standby leaves no stale connection behind."""
        if server not in self._admins:
            url = {'primary': self.primary_url,
                   'standby': self.standby_url}[server]
            self._admins[server] = sa.create_engine(
                db_engine.normalize_url(url).set(database='postgres'),
                isolation_level='AUTOCOMMIT', poolclass=sa.pool.NullPool,
                connect_args={'connect_timeout': 5})
        return self._admins[server]

    def _scalar(self, server, statement, **params):
        with self.admin_engine(server).connect() as conn:
            if isinstance(statement, str):
                statement = sa.text(statement)
            return conn.execute(statement, params).scalar()

    def check(self):
        """unavailable() if a server does not answer; fail unless the
        standby is in recovery and streams from the primary."""
        states = {}
        for server, url in (('primary', self.primary_url),
                            ('standby', self.standby_url)):
            try:
                states[server] = self._scalar(server,
                                              'SELECT pg_is_in_recovery()')
            except sa.exc.DBAPIError as exc:
                unavailable('PostgreSQL %s %s is unreachable: the replica '
                            'tests are NOT being run (%s): %s'
                            % (server, url, START_HINT, exc.orig))
        problems = []
        if states['primary']:
            problems.append('the primary %s is in recovery'
                            % self.primary_url)
        if not states['standby']:
            problems.append('the standby %s is not in recovery'
                            % self.standby_url)
        elif not self.standby_streams():
            problems.append('the standby %s does not stream from the '
                            'primary' % self.standby_url)
        if problems:
            pytest.fail('PostgreSQL replica pair not healthy (see '
                        'tools/pg-replica.sh status %s): %s'
                        % (self.dir, '; '.join(problems)))

    # --- The standby -------------------------------------------------------

    def _script(self, command):
        try:
            subprocess.run([str(SCRIPT), command, self.dir], check=True,
                           capture_output=True, text=True,
                           timeout=SCRIPT_TIMEOUT)
        except subprocess.CalledProcessError as exc:
            pytest.fail('tools/pg-replica.sh %s %s failed (exit %s): %s'
                        % (command, self.dir, exc.returncode,
                           exc.stderr.strip()))
        except subprocess.TimeoutExpired:
            pytest.fail('tools/pg-replica.sh %s %s took over %ss'
                        % (command, self.dir, SCRIPT_TIMEOUT))

    def stop_standby(self):
        """Stop the standby (fast shutdown: its sessions are ended)."""
        self._script('stop-standby')

    def start_standby(self):
        """Start the standby; return once it streams from the primary."""
        self._script('start-standby')

    def standby_running(self):
        """Whether the standby answers queries."""
        try:
            self._scalar('standby', 'SELECT 1')
        except sa.exc.DBAPIError:
            return False
        return True

    def standby_streams(self):
        """Whether the standby's WAL receiver streams from the primary."""
        try:
            status = self._scalar('standby',
                                  'SELECT status FROM pg_stat_wal_receiver')
        except sa.exc.DBAPIError:
            return False
        return status == 'streaming'

    def pause_replay(self):
        """Stop applying WAL on the standby (it keeps receiving it)."""
        self._scalar('standby', 'SELECT pg_wal_replay_pause()')

    def resume_replay(self):
        self._scalar('standby', 'SELECT pg_wal_replay_resume()')

    def replay_paused(self):
        """Whether replay is paused, or a pause requested."""
        state = self._scalar('standby',
                             'SELECT pg_get_wal_replay_pause_state()')
        return state != 'not paused'

    def replay_lag(self):
        """Seconds the standby's data is behind the WAL it received (0.0
        when it applied all of it), measured on the standby."""
        return float(self._scalar('standby', _REPLAY_LAG))

    def wait_for_replay(self, timeout=REPLAY_TIMEOUT):
        """Wait until the standby has applied all the WAL the primary had
        written when called."""
        target = self._scalar('primary', 'SELECT pg_current_wal_lsn()')
        deadline = time.monotonic() + timeout
        while True:
            behind = self._scalar(
                'standby', "SELECT COALESCE(pg_last_wal_replay_lsn() "
                "< CAST(:target AS pg_lsn), true)", target=target)
            if not behind:
                return
            if time.monotonic() > deadline:
                pytest.fail('the standby %s did not apply the WAL up to %s '
                            'within %ss (replay lag %.1fs)'
                            % (self.standby_url, target, timeout,
                               self.replay_lag()))
            time.sleep(0.05)

    def restore(self):
        """The standby running and replaying, whatever a test did."""
        if not self.standby_running():
            self.start_standby()
        if self.replay_paused():
            self.resume_replay()

    # --- Statistics --------------------------------------------------------

    def primary_stats(self, name):
        """Transactions (commits + rollbacks) run on the primary in
        database ``name``."""
        return int(self._scalar('primary', _STATS, name=name) or 0)

    def standby_stats(self, name):
        """Transactions run on the standby in database ``name`` (its own,
        not the replayed ones)."""
        return int(self._scalar('standby', _STATS, name=name) or 0)

    # --- Databases ---------------------------------------------------------

    @contextlib.contextmanager
    def database(self):
        """A fresh database on the primary, visible on the standby; dropped
        afterwards."""
        self.restore()
        name = 'ptest_replica_' + uuid.uuid4().hex[:12]
        with self.admin_engine('primary').connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
        try:
            self._wait_on_standby(name)
            yield ReplicaDatabase(name,
                                  _with_database(self.primary_url, name),
                                  _with_database(self.standby_url, name))
        finally:
            try:
                self.restore()
            finally:
                self._drop(name)

    def _wait_on_standby(self, name):
        deadline = time.monotonic() + REPLAY_TIMEOUT
        while not self._scalar(
                'standby', 'SELECT count(*) FROM pg_database '
                'WHERE datname = :name', name=name):
            if time.monotonic() > deadline:
                pytest.fail('database %s missing on the standby %s after %ss'
                            % (name, self.standby_url, REPLAY_TIMEOUT))
            time.sleep(0.05)

    def _drop(self, name):
        # Sessions on the standby end when it replays the drop.
        terminate = sa.text(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
            'WHERE datname = :name AND pid <> pg_backend_pid()')
        with self.admin_engine('primary').connect() as conn:
            conn.execute(terminate, {'name': name})
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name)

    def dispose(self):
        for engine in self._admins.values():
            engine.dispose()
        self._admins.clear()


def _with_database(url, name):
    return db_engine.normalize_url(url).set(database=name).render_as_string(
        hide_password=False)


def from_environment():
    """The pair the environment names; unavailable() without one."""
    values = {}
    for variable in (PRIMARY_VARIABLE, STANDBY_VARIABLE, DIR_VARIABLE):
        values[variable] = os.environ.get(variable, '').strip()
        if not values[variable]:
            unavailable('%s is not set: the PostgreSQL replica tests are NOT '
                        'being run (%s)' % (variable, START_HINT))
    if not os.path.isdir(values[DIR_VARIABLE]):
        unavailable('%s=%s is not a directory: the PostgreSQL replica tests '
                    'are NOT being run (%s)'
                    % (DIR_VARIABLE, values[DIR_VARIABLE], START_HINT))
    return PgReplica(values[PRIMARY_VARIABLE], values[STANDBY_VARIABLE],
                     values[DIR_VARIABLE])


@pytest.fixture(scope='session')
def pg_replica():
    pair = from_environment()
    try:
        pair.check()
        yield pair
    finally:
        pair.dispose()


@pytest.fixture
def pg_replica_database(pg_replica):
    with pg_replica.database() as database:
        yield database
