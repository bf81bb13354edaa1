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
import dataclasses

import pytest
import sqlalchemy as sa

import private_servers

PRIMARY_VARIABLE = 'PLACEMENT_TEST_PG_PRIMARY_URL'
STANDBY_VARIABLE = 'PLACEMENT_TEST_PG_STANDBY_URL'
DIR_VARIABLE = 'PLACEMENT_TEST_PG_REPLICA_DIR'
SCRIPT = private_servers.TOOLS / 'pg-replica.sh'
START_HINT = private_servers.start_hint('pg-replica.sh')
TESTS = 'the PostgreSQL replica tests'
# How long the standby may take to show a new database, or to apply WAL.
REPLAY_TIMEOUT = 30
SCRIPT_TIMEOUT = private_servers.SCRIPT_TIMEOUT

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


class PgReplica(private_servers.Servers):
    """The pair at ``primary_url`` and ``standby_url``, run by
    tools/pg-replica.sh in ``directory`` (``.dir``)."""

    KIND = 'PostgreSQL'
    TESTS = TESTS
    START_HINT = START_HINT
    SCRIPT = SCRIPT
    DATABASE_PREFIX = 'ptest_replica_'

    def __init__(self, primary_url, standby_url, directory):
        super().__init__({'primary': primary_url, 'standby': standby_url},
                         directory)
        self.primary_url = primary_url
        self.standby_url = standby_url

    def _admin_url(self, server):
        return super()._admin_url(server).set(database='postgres')

    def admin_engine(self, server):
        """An AUTOCOMMIT engine on the ``postgres`` database of ``server``
        ('primary' or 'standby'), kept for the session; it pools nothing,
        so a restarted standby leaves no stale connection behind."""
        return super().admin_engine(server)

    def check(self):
        """unavailable() if a server does not answer; fail unless the
        standby is in recovery and streams from the primary."""
        states = {}
        for server in ('primary', 'standby'):
            with self.reachable(server):
                states[server] = self._scalar(server,
                                              'SELECT pg_is_in_recovery()')
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

    def stop_standby(self):
        """Stop the standby (fast shutdown: its sessions are ended)."""
        self._script('stop-standby')

    def start_standby(self):
        """Start the standby; return once it streams from the primary."""
        self._script('start-standby')

    def standby_running(self):
        """Whether the standby answers queries."""
        return self.answers('standby')

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
        private_servers.poll(
            lambda: not self._scalar(
                'standby', "SELECT COALESCE(pg_last_wal_replay_lsn() "
                "< CAST(:target AS pg_lsn), true)", target=target),
            timeout,
            lambda: 'the standby %s did not apply the WAL up to %s within '
                    '%ss (replay lag %.1fs)' % (self.standby_url, target,
                                                timeout, self.replay_lag()))

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

    def _database(self, name):
        return ReplicaDatabase(
            name, private_servers.with_database(self.primary_url, name),
            private_servers.with_database(self.standby_url, name))

    def _wait_for_database(self, name):
        private_servers.poll(
            lambda: self._scalar('standby', 'SELECT count(*) FROM '
                                 'pg_database WHERE datname = :name',
                                 name=name),
            REPLAY_TIMEOUT,
            lambda: 'database %s missing on the standby %s after %ss'
                    % (name, self.standby_url, REPLAY_TIMEOUT))

    def _drop_database(self, name):
        # Sessions on the standby end when it replays the drop.
        terminate = sa.text(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
            'WHERE datname = :name AND pid <> pg_backend_pid()')
        with self.admin_engine('primary').connect() as conn:
            conn.execute(terminate, {'name': name})
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name)


def from_environment():
    """The pair the environment names; unavailable() without one."""
    values = private_servers.environment(
        (PRIMARY_VARIABLE, STANDBY_VARIABLE, DIR_VARIABLE), TESTS,
        START_HINT, directory=DIR_VARIABLE)
    return PgReplica(values[PRIMARY_VARIABLE], values[STANDBY_VARIABLE],
                     values[DIR_VARIABLE])


pg_replica, pg_replica_database = private_servers.fixtures(
    'pg_replica', from_environment)
