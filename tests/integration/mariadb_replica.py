"""A MariaDB primary with an asynchronous replica (binlog replication,
GTID) for the integration tests, started by ``tools/mariadb-replica.sh
start DIR`` (``.ci/run`` does it and exports what the script writes to
``DIR/env``).

``mariadb_replica`` (session fixture) is a ``MariadbReplica``:
``.primary_url`` and ``.replica_url`` are the servers' URLs
(``PLACEMENT_TEST_MARIADB_PRIMARY_URL``,
``PLACEMENT_TEST_MARIADB_REPLICA_URL``), ``.dir`` the script's DIR
(``PLACEMENT_TEST_MARIADB_REPLICA_DIR``). With a variable unset or a server
unreachable its tests skip loudly (fail under CI=true); a pair that answers
but does not replicate (no primary configured on the replica, or a thread
that does not run and cannot be started) fails them.

Its methods drive the replica: ``stop_replica()`` and ``start_replica()``
(its mariadbd, through the script; the latter returns once
Slave_IO_Running and Slave_SQL_Running are Yes), ``replica_running()``,
``stop_sql_thread()`` and ``start_sql_thread()`` (``STOP REPLICA
SQL_THREAD``: events keep arriving but are not applied, and the server
reports ``Seconds_Behind_Master`` NULL: not replicating), ``delay(seconds)``
(``CHANGE MASTER TO MASTER_DELAY``: the replica applies each transaction
that many seconds after the primary committed it; 0 removes the delay),
``status()`` (SHOW REPLICA STATUS as a dict), ``lag()``
(``Seconds_Behind_Master`` as a float, None when NULL) and
``wait_for_replica()`` (until the replica has applied all the primary has
logged so far, by GTID). ``rows_read(server, database, table)`` is what
``information_schema.TABLE_STATISTICS`` (``userstat``, on in both servers)
counts for that table on that server: rows its own clients' statements
read there, so it shows which server did the reading.

``mariadb_replica.database()`` is a context manager: a fresh database
``ptest_mrep_<random>``, created on the primary and present on the replica
before it is handed out, as a ``MariadbReplicaDatabase`` (``.name``;
``.primary_url`` and ``.replica_url``, SQLAlchemy URL strings as
``placement_database.connection`` takes them); dropped on the primary
afterwards (the drop replicates). Before and after, the replica is restored
(``restore()``): started if a test stopped it, its delay removed, its
threads started, so one test cannot break the next.
``mariadb_replica_database`` is a fixture doing that for one test.

Test modules import the fixtures they use, as the other helpers here are
imported::

    from mariadb_replica import mariadb_replica  # noqa: F401 (fixtures)
    from mariadb_replica import mariadb_replica_database  # noqa: F401
"""
import dataclasses

import pytest
import sqlalchemy as sa

import private_servers

PRIMARY_VARIABLE = 'PLACEMENT_TEST_MARIADB_PRIMARY_URL'
REPLICA_VARIABLE = 'PLACEMENT_TEST_MARIADB_REPLICA_URL'
DIR_VARIABLE = 'PLACEMENT_TEST_MARIADB_REPLICA_DIR'
SCRIPT = private_servers.TOOLS / 'mariadb-replica.sh'
START_HINT = private_servers.start_hint('mariadb-replica.sh')
TESTS = 'the MariaDB replica tests'
# How long the replica may take to apply what the primary logged, or its
# threads to start.
REPLAY_TIMEOUT = 30
SCRIPT_TIMEOUT = private_servers.SCRIPT_TIMEOUT
SERVERS = ('primary', 'replica')

_ROWS_READ = sa.text("""
    SELECT COALESCE(SUM(ROWS_READ), 0) FROM information_schema.TABLE_STATISTICS
    WHERE TABLE_SCHEMA = :database AND TABLE_NAME = :table""")


@dataclasses.dataclass
class MariadbReplicaDatabase:
    name: str
    primary_url: str
    replica_url: str


class MariadbReplica(private_servers.Servers):
    """The pair at ``primary_url`` and ``replica_url``, run by
    tools/mariadb-replica.sh in ``directory`` (``.dir``)."""

    KIND = 'MariaDB'
    TESTS = TESTS
    START_HINT = START_HINT
    SCRIPT = SCRIPT
    DATABASE_PREFIX = 'ptest_mrep_'

    def __init__(self, primary_url, replica_url, directory):
        super().__init__({'primary': primary_url, 'replica': replica_url},
                         directory)
        self.primary_url = primary_url
        self.replica_url = replica_url

    def admin_engine(self, server):
        """An AUTOCOMMIT engine on ``server`` ('primary' or 'replica'), kept
        for the session; it pools nothing, so a restarted replica leaves no
        stale connection behind."""
        return super().admin_engine(server)

    def check(self):
        """unavailable() if a server does not answer; fail unless the
        replica has a primary configured and replicates (after an attempt
        to restore() it)."""
        for server in SERVERS:
            with self.reachable(server):
                self._scalar(server, 'SELECT 1')
        if self.status() is None:
            pytest.fail('MariaDB replica %s has no primary configured (see '
                        'tools/mariadb-replica.sh status %s)'
                        % (self.replica_url, self.dir))
        self.restore()

    # --- The replica -------------------------------------------------------

    def stop_replica(self):
        """Stop the replica's mariadbd (a clean shutdown: its sessions are
        ended)."""
        self._script('stop-replica')

    def start_replica(self):
        """Start the replica's mariadbd; return once its IO and SQL threads
        run."""
        self._script('start-replica')

    def replica_running(self):
        """Whether the replica answers queries."""
        return self.answers('replica')

    def status(self):
        """The replica's SHOW REPLICA STATUS as a dict, None without a
        primary configured."""
        with self.admin_engine('replica').connect() as conn:
            row = conn.exec_driver_sql(
                'SHOW REPLICA STATUS').mappings().first()
        return None if row is None else dict(row)

    def replicating(self):
        """Whether the replica's IO and SQL threads both run."""
        status = self.status() or {}
        return (status.get('Slave_IO_Running'),
                status.get('Slave_SQL_Running')) == ('Yes', 'Yes')

    def lag(self):
        """The replica's Seconds_Behind_Master (whole seconds), None when
        the server reports NULL (a thread not running)."""
        value = (self.status() or {}).get('Seconds_Behind_Master')
        return None if value is None else float(value)

    def stop_sql_thread(self):
        """Stop applying events (they keep arriving)."""
        self._execute('replica', 'STOP REPLICA SQL_THREAD')

    def start_sql_thread(self):
        self._execute('replica', 'START REPLICA SQL_THREAD')

    def delay(self, seconds):
        """Make the replica apply each transaction ``seconds`` after the
        primary committed it (0: at once). MariaDB changes MASTER_DELAY
        only with both replication threads stopped: they are stopped and
        started again."""
        self._execute('replica', 'STOP REPLICA',
                      'CHANGE MASTER TO MASTER_DELAY = %d' % int(seconds),
                      'START REPLICA')
        self._until_replicating()

    def _until_replicating(self, timeout=REPLAY_TIMEOUT):
        def failure():
            status = self.status() or {}
            return ('the MariaDB replica %s does not replicate after %ss: '
                    'Slave_IO_Running=%s Slave_SQL_Running=%s %s %s'
                    % (self.replica_url, timeout,
                       status.get('Slave_IO_Running'),
                       status.get('Slave_SQL_Running'),
                       status.get('Last_IO_Error'),
                       status.get('Last_SQL_Error')))

        private_servers.poll(self.replicating, timeout, failure)

    def wait_for_replica(self, timeout=REPLAY_TIMEOUT):
        """Wait until the replica has applied every transaction the primary
        had logged when called."""
        position = self._scalar('primary', 'SELECT @@gtid_binlog_pos')
        waited = self._scalar('replica',
                              'SELECT MASTER_GTID_WAIT(:position, :timeout)',
                              position=position, timeout=timeout)
        if waited != 0:
            pytest.fail('the MariaDB replica %s did not apply the primary\'s '
                        'transactions up to %s within %ss (gtid_slave_pos '
                        '%s, Seconds_Behind_Master %s)'
                        % (self.replica_url, position, timeout,
                           self._scalar('replica', 'SELECT @@gtid_slave_pos'),
                           self.lag()))

    def restore(self):
        """The replica running and replicating without delay, whatever a
        test did."""
        if not self.replica_running():
            self.start_replica()
        status = self.status() or {}
        if status.get('SQL_Delay'):
            self.delay(0)
        elif not self.replicating():
            self._execute('replica', 'START REPLICA')
        self._until_replicating()

    # --- Statistics --------------------------------------------------------

    def rows_read(self, server, database, table):
        """Rows read in ``database``.``table`` by statements run on
        ``server`` (information_schema.TABLE_STATISTICS)."""
        return int(self._scalar(server, _ROWS_READ, database=database,
                                table=table))

    # --- Databases ---------------------------------------------------------

    def _database(self, name):
        return MariadbReplicaDatabase(
            name, private_servers.with_database(self.primary_url, name),
            private_servers.with_database(self.replica_url, name))

    def _wait_for_database(self, name):
        self.wait_for_replica()

    def _drop_database(self, name):
        # The drop replicates.
        super()._drop_database(name)
        self.wait_for_replica()


def from_environment():
    """The pair the environment names; unavailable() without one."""
    values = private_servers.environment(
        (PRIMARY_VARIABLE, REPLICA_VARIABLE, DIR_VARIABLE), TESTS,
        START_HINT, directory=DIR_VARIABLE)
    return MariadbReplica(values[PRIMARY_VARIABLE], values[REPLICA_VARIABLE],
                          values[DIR_VARIABLE])


mariadb_replica, mariadb_replica_database = private_servers.fixtures(
    'mariadb_replica', from_environment)
