"""MySQL and MariaDB (Galera clusters too), through PyMySQL or mysqlclient.

Connections always use 4-byte UTF-8, so that any Unicode provider name
round-trips; sessions take the configured sql_mode and wsrep_sync_wait.
Errors are told by the server's and client's error numbers, whichever
driver raised them.

A list of ids travels as one JSON array read by JSON_TABLE where the
server has it, else (MariaDB before 10.6, MySQL before 8.0.4) as bound
values in slices that keep within MySQL's limits. Bound one by one,
3,000 ids cost PyMySQL 10-15 ms of escaping and the server more to
parse; as one JSON array, 1 ms. A list that fills an eighth or more of
the span between its lowest and highest id travels as that range and a
bitmap of it instead: the server scans the range on the column's index
and tests each row's bit, where it would otherwise look each id of the
list up on its own. For the 1,000 trees of a batch that read is 2-4 ms
shorter; for the members of those trees, a third of the time.
"""
import contextlib
import json
import logging
import math
import time
from typing import Any
from typing import Iterator
from typing import Sequence
import weakref

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression
from sqlalchemy.sql import visitors

from placement.db.backends import base

LOG = logging.getLogger(__name__)

_THREE_BYTE_CHARSETS = {'utf8', 'utf8mb3'}

# Server and client error numbers.
_DISCONNECT = {
    # Galera: the node left the primary component (or has not joined
    # it): it serves nobody, and a new connection may reach another.
    1047,
    1927,  # MariaDB: connection was killed
    2006,  # server has gone away
    2013,  # lost connection during query
    4031,  # MariaDB: disconnected for inactivity
}
_TRANSIENT = _DISCONNECT | {
    1205,  # lock wait timeout
    1213,  # deadlock, also how Galera reports a certification failure
}
_STATEMENT_TIMEOUT = {
    1969,  # MariaDB: max_statement_time exceeded
    3024,  # MySQL: max_execution_time exceeded
}
_UNREACHABLE = {
    1040,  # too many connections
    2002,  # can't connect through socket
    2003,  # can't connect to server
    2005,  # unknown host
}
# A connection refused for its user, password or grants.
_CREDENTIALS = {
    1044,  # access denied to the database
    1045,  # access denied for the user (unknown user, wrong password)
    1698,  # access denied (socket authentication)
}
_UNKNOWN_DATABASE = 1049
# A statement naming a table or column the database does not have.
_SCHEMA_MISMATCH = {1054, 1146}
# Text the table's character set cannot hold (a utf8mb3 table adopted from
# an old deployment refuses 4-byte UTF-8), or a value too big for a column.
_UNSTORABLE = {1267, 1366, 1406, 1264}

# The drivers whose rows are worth packing: they decode in Python.
_PACKING_DRIVERS = frozenset({'pymysql'})
# What a packing session's group_concat_max_len is raised to: 1 GiB, the
# largest max_allowed_packet (which still bounds a pack) and the most
# MariaDB takes.
GROUP_CONCAT_MAX_LEN = 2 ** 30

# Seconds an upgrader waits for another to finish migrating.
_MIGRATION_LOCK_TIMEOUT = 600

# Ids per statement where they are bound one by one.
SLICE = 5000
# A list sent as a range and bitmap spans at most this many ids for each
# of its own (below that, looking each up is no slower), and the bitmap
# is at most this many bytes.
SPAN_PER_ID = 8
_BITMAP_BYTES = 2 ** 20

# MariaDB lists every named connection with ALL; MySQL lists every channel
# without it; the SLAVE spellings are older servers'.
_STATUS_STATEMENTS = ('SHOW ALL REPLICAS STATUS', 'SHOW ALL SLAVES STATUS',
                      'SHOW REPLICA STATUS', 'SHOW SLAVE STATUS')


class MySQL(base.Backend):
    """MySQL and MariaDB (dialects mysql and mariadb)."""
    names = frozenset({'mysql', 'mariadb'})
    # mysql+mysqldb (mysqlclient) is supported as well as PyMySQL.
    drivers = {'mysql': 'mysql+pymysql', 'mariadb': 'mariadb+pymysql'}
    # FLOAT columns are single precision there (every column read costs,
    # too): the candidate engine works sql_ratio out in Python.
    sql_ratio_in_python = True
    anchors_from_trees = True

    def normalize(self, url: sa.engine.URL) -> sa.engine.URL:
        """Our driver for a bare name, and 4-byte UTF-8 always."""
        url = super().normalize(url)
        charset = url.query.get('charset')
        if isinstance(charset, tuple):
            charset = charset[-1]
        if charset and charset.lower() in _THREE_BYTE_CHARSETS:
            LOG.warning('Database connection charset %s cannot store 4-byte '
                        'UTF-8; using utf8mb4 instead', charset)
            charset = None
        if not charset:
            url = url.update_query_dict({'charset': 'utf8mb4'})
        return url

    def set_up(self, engine: sa.Engine, opts: Any, timeout: float) -> None:
        """Sessions with the configured sql_mode and wsrep_sync_wait, whose
        statements the server stops after ``timeout`` (MariaDB's
        max_statement_time; MySQL's max_execution_time, which only stops
        SELECTs); and with packs as large as a row may be where the
        driver packs."""
        _set_session(engine, getattr(opts, 'mysql_sql_mode', 'TRADITIONAL'),
                     getattr(opts, 'mysql_wsrep_sync_wait', None), timeout)
        _log_rows_in_the_binlog(engine)
        if self.packs(engine.dialect):
            _raise_group_concat_max_len(engine)

    def connect_args(self, url: sa.engine.URL,
                     transaction_timeout: float) -> dict[str, Any]:
        """Also read and write timeouts of the transaction timeout: the
        drivers run statements of their own while they connect (SET
        NAMES, autocommit), before the watchdog can watch the socket."""
        args = super().connect_args(url, transaction_timeout)
        if transaction_timeout > 0:
            seconds = max(1, math.ceil(transaction_timeout))
            for name in ('read_timeout', 'write_timeout'):
                if name not in url.query:
                    args[name] = seconds
        return args

    def socket_fileno(self, dbapi_connection: Any) -> int | None:
        """mysqlclient's fileno(); PyMySQL keeps its socket as _sock."""
        sock = getattr(dbapi_connection, '_sock', None)
        if sock is not None:
            return sock.fileno()
        return super().socket_fileno(dbapi_connection)

    def is_transient(self, orig: BaseException) -> bool | None:
        """A deadlock, lock wait timeout, Galera certification failure or
        node not ready, or a broken connection."""
        code = _code(orig)
        return None if code is None else code in _TRANSIENT

    def is_disconnect(self, orig: BaseException) -> bool | None:
        """The server went away, or killed the connection."""
        code = _code(orig)
        return None if code is None else code in _DISCONNECT

    def is_statement_timeout(self, orig: BaseException) -> bool | None:
        """max_statement_time or max_execution_time stopped the
        statement."""
        code = _code(orig)
        return None if code is None else code in _STATEMENT_TIMEOUT

    def is_unreachable(self, orig: BaseException) -> bool | None:
        """Too many connections, or no server to connect to."""
        code = _code(orig)
        return None if code is None else code in _UNREACHABLE

    def is_unstorable(self, orig: BaseException) -> bool | None:
        """Text the column's character set cannot hold, or a value too
        big for the column."""
        code = _code(orig)
        return None if code is None else code in _UNSTORABLE

    def is_schema_mismatch(self, orig: BaseException) -> bool | None:
        """No such table (1146) or column (1054)."""
        code = _code(orig)
        return None if code is None else code in _SCHEMA_MISMATCH

    def connect_failure(self, orig: BaseException) -> str | None:
        code = _code(orig)
        if code in _CREDENTIALS:
            return base.CONNECT_CREDENTIALS
        if code == _UNKNOWN_DATABASE:
            return base.CONNECT_UNKNOWN_DATABASE
        if code in _UNREACHABLE or code in _DISCONNECT:
            return base.CONNECT_UNREACHABLE
        return None

    @contextlib.contextmanager
    def migration_lock(self, connection: sa.Connection) -> Iterator[None]:
        """A named lock; lock names are server-wide, so the name is
        qualified with the database's."""
        name = connection.execute(sa.text(
            "SELECT CONCAT('placement-migrate.', DATABASE())")).scalar()
        got = connection.execute(
            sa.text('SELECT GET_LOCK(:name, :timeout)'),
            {'name': name, 'timeout': _MIGRATION_LOCK_TIMEOUT}).scalar()
        if got != 1:
            raise RuntimeError('timed out waiting for another process to '
                               'finish migrating the placement database')
        try:
            yield
        finally:
            connection.execute(sa.text('SELECT RELEASE_LOCK(:name)'),
                               {'name': name})

    @contextlib.contextmanager
    def explicit_zero_ids(self, connection: sa.Connection) -> Iterator[None]:
        """Store id 0 (VCPU) as given instead of treating it as
        AUTO_INCREMENT. The session's sql_mode is restored afterwards,
        since the connection goes back to a pool shared with request
        handling."""
        saved = connection.exec_driver_sql(
            'SELECT @@SESSION.sql_mode').scalar()
        connection.exec_driver_sql(
            "SET SESSION sql_mode = "
            "CONCAT_WS(',', @@SESSION.sql_mode, 'NO_AUTO_VALUE_ON_ZERO')")
        try:
            yield
        finally:
            connection.execute(sa.text('SET SESSION sql_mode = :mode'),
                               {'mode': saved})

    def among(self, column: Any) -> sa.ColumnElement[bool]:
        """The ids as JSON_TABLE reads them, or bound one by one (see
        _AmongIds)."""
        return _AmongIds(column)

    def id_reads(self, dialect: sa.engine.Dialect, statement: Any,
                 ids: list[int], params: dict[str, Any]) -> base.IdReads:
        """A range and bitmap for a dense list; else one JSON array where
        the server has JSON_TABLE; else slices of bound values."""
        low, high = ids[0], ids[-1]
        span = high - low + 1
        if span <= min(len(ids) * SPAN_PER_ID, _BITMAP_BYTES):
            bits = bytearray(b'0') * span
            for ident in ids:
                bits[ident - low] = 0x31  # '1'
            return [(_in_range(statement),
                     dict(params, ids_low=low, ids_high=high,
                          ids_bits=bytes(bits)))]
        if json_table(dialect):
            return [(statement, dict(params, ids=json.dumps(ids)))]
        return [(statement, dict(params, ids=ids[start:start + SLICE]))
                for start in range(0, len(ids), SLICE)]

    def packs(self, dialect: sa.engine.Dialect) -> bool:
        """PyMySQL decodes every field of every row in Python."""
        return dialect.driver in _PACKING_DRIVERS

    def replica_lag(self, connection: sa.Connection, primary: sa.Engine,
                    bound: float) -> float:
        """A replica's lag (MariaDB: by GTID; MySQL: as its channels
        report it), after every replication connection was found running;
        a Galera node's is zero once synced and ready."""
        channels = _replication_channels(connection)
        if not channels:
            _check_galera_node(connection)
            return 0.0
        behind = []
        for channel in channels:
            lag = channel.get('Seconds_Behind_Master',
                              channel.get('Seconds_Behind_Source'))
            if lag is None:
                raise base.ReplicaUnusable(
                    'replica is not replicating (%s)' % (
                        channel.get('Last_SQL_Error')
                        or channel.get('Last_IO_Error')
                        or 'replication stopped'))
            behind.append(float(lag))
        dialect: Any = connection.dialect
        if dialect.is_mariadb:
            return _mariadb_gtid_lag(connection, primary, bound)
        # Whole seconds, rounded down: n means less than n + 1.
        worst = max(behind)
        return worst + 1.0 if worst else 0.0

    def collation_key(self, text: str) -> str:
        """The default collations compare case-insensitively and ignore
        trailing spaces."""
        return text.lower().rstrip(' ')

    def analyze(self, connection: sa.Connection,
                table_names: Sequence[str]) -> None:
        """ANALYZE TABLE, rather than InnoDB's background sampling in the
        middle of later measurements."""
        connection.exec_driver_sql('ANALYZE TABLE ' + ', '.join(table_names))

    def database_bytes(self, connection: sa.Connection) -> int:
        """Data and index lengths of the schema's tables, as
        information_schema estimates them."""
        return int(connection.exec_driver_sql(
            'SELECT SUM(data_length + index_length) FROM '
            'information_schema.tables WHERE table_schema = DATABASE()'
        ).scalar() or 0)


def _code(orig: BaseException) -> int | None:
    """MySQL error number of a PyMySQL/mysqlclient exception, else None."""
    if type(orig).__module__.split('.')[0] not in ('pymysql', 'MySQLdb'):
        return None
    args = getattr(orig, 'args', ())
    return args[0] if args and isinstance(args[0], int) else None


def _set_session(engine: sa.Engine, sql_mode: str | None,
                 wsrep_sync_wait: int | None, timeout: float) -> None:
    settings: list[tuple[str, Any]] = []
    if sql_mode:
        settings.append(('sql_mode', sql_mode))
    if wsrep_sync_wait is not None:
        settings.append(('wsrep_sync_wait', wsrep_sync_wait))
    if not settings and timeout <= 0:
        return

    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        statement_time: list[tuple[str, Any]] = []
        if timeout > 0:
            # The dialect knows its server from the first connection on.
            mariadb = getattr(engine.dialect, 'is_mariadb', False)
            statement_time = [
                ('max_statement_time', timeout) if mariadb
                else ('max_execution_time', max(1, round(timeout * 1000)))]
        cursor = dbapi_conn.cursor()
        for name, value in settings + statement_time:
            cursor.execute('SET SESSION %s = %%s' % name, (value,))
        cursor.close()


def _log_rows_in_the_binlog(engine: sa.Engine) -> None:
    """Sessions that can write at READ COMMITTED: a server that writes its
    binary log as STATEMENT cannot log InnoDB changes made at that
    isolation level (error 1665, on the first write), so such sessions
    switch to ROW. Where the database user may not (it needs BINLOG ADMIN
    or SUPER), the connection is refused with what to change, before
    anything (db sync's first table) is written."""
    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute('SELECT @@log_bin, @@SESSION.binlog_format')
            log_bin, binlog_format = cursor.fetchone()
            if not log_bin or str(binlog_format).upper() != 'STATEMENT':
                return
            try:
                cursor.execute("SET SESSION binlog_format = 'ROW'")
            except dbapi_conn.Error as exc:
                raise base.UnusableServer(
                    'the MySQL server logs its binary log as STATEMENT '
                    '(binlog_format), which cannot log the READ COMMITTED '
                    'writes of placement, and the database user may not '
                    'switch its sessions to ROW (%s): set binlog_format = '
                    'ROW or MIXED on the server, or grant the user BINLOG '
                    'ADMIN' % (exc,)) from None
        finally:
            cursor.close()


def _raise_group_concat_max_len(engine: sa.Engine) -> None:
    """Let the sessions of ``engine`` make packs as large as a row may
    be (placement.db.packed)."""
    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute('SET SESSION group_concat_max_len = %s',
                           (GROUP_CONCAT_MAX_LEN,))
        except dbapi_conn.Error as exc:
            # Packs then stay within the server's limit (1 MiB by
            # default): larger reads come in packs of ROWS_PER_PACK.
            LOG.warning('Could not raise group_concat_max_len: %s', exc)
        finally:
            cursor.close()


def json_table(dialect: Any) -> bool:
    """Whether the MySQL or MariaDB server behind ``dialect`` has
    JSON_TABLE."""
    version = dialect.server_version_info or ()
    return version >= ((10, 6) if dialect.is_mariadb else (8, 0, 4))


class _AmongIds(expression.ColumnElement[bool]):
    """``column`` is one of the ids bound as ``ids``, read from a JSON
    array by JSON_TABLE where the server has it, else expanded; or,
    ``in_range``, one of those marked in the bitmap bound as ``ids_bits``
    of the range bound as ``ids_low`` and ``ids_high``."""
    inherit_cache = True
    type = sa.Boolean()
    # A predicate: MySQL must not see it compared with 1 (which would
    # make the server scan every row for it).
    _is_implicitly_boolean = True
    _traverse_internals = [
        ('column', visitors.InternalTraversal.dp_clauseelement),
        ('in_range', visitors.InternalTraversal.dp_boolean)]

    def __init__(self, column: sa.ColumnElement[Any],
                 in_range: bool = False) -> None:
        self.column = column
        self.in_range = in_range


@compiler.compiles(_AmongIds)
def _compile_among_ids(element, sql_compiler, **kw):
    if element.in_range:
        column = sql_compiler.process(element.column, **kw)
        low = sql_compiler.process(
            sa.bindparam('ids_low', type_=sa.BigInteger), **kw)
        high = sql_compiler.process(
            sa.bindparam('ids_high', type_=sa.BigInteger), **kw)
        bits = sql_compiler.process(
            sa.bindparam('ids_bits', type_=sa.LargeBinary), **kw)
        # Within the range the row's bit is 1; a binary string, so
        # SUBSTRING finds it by offset.
        return "(%s BETWEEN %s AND %s AND SUBSTRING(%s, %s - %s + 1, 1) " \
            "= '1')" % (column, low, high, bits, column, low)
    if not json_table(sql_compiler.dialect):
        return sql_compiler.process(
            element.column.in_(sa.bindparam('ids', expanding=True)), **kw)
    return "%s IN (SELECT id_list.id FROM JSON_TABLE(%s, '$[*]' COLUMNS " \
        "(id BIGINT PATH '$')) AS id_list)" % (
            sql_compiler.process(element.column, **kw),
            sql_compiler.process(sa.bindparam('ids', type_=sa.String),
                                 **kw))


_RANGED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _in_range(statement: Any) -> Any:
    """``statement`` with each ``among`` in its range and bitmap form."""
    ranged = _RANGED.get(statement)
    if ranged is None:
        ranged = _RANGED[statement] = visitors.replacement_traverse(
            statement, {}, _ranged_among)
    return ranged


def _ranged_among(element: Any, **kw: Any) -> Any:
    if isinstance(element, _AmongIds):
        return _AmongIds(element.column, in_range=True)
    return None


def _replication_channels(connection: sa.Connection) -> list[dict[str, Any]]:
    """The replication connections of the server, as dicts (none if it
    replicates from nobody)."""
    for statement in _STATUS_STATEMENTS:
        try:
            result = connection.exec_driver_sql(statement)
        except sa_exc.ProgrammingError:
            connection.rollback()
            continue
        return [dict(row) for row in result.mappings()]
    return []


def _check_galera_node(connection: sa.Connection) -> None:
    """ReplicaUnusable if the server is a Galera node not synced and
    ready."""
    wsrep_on = connection.exec_driver_sql(
        "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'").first()
    if wsrep_on is None or wsrep_on[1] != 'ON':
        return
    galera: dict[str, str] = dict(connection.exec_driver_sql(
        "SHOW GLOBAL STATUS WHERE Variable_name IN "
        "('wsrep_ready', 'wsrep_local_state_comment')").all())
    state = galera.get('wsrep_local_state_comment')
    if galera.get('wsrep_ready') != 'ON' or state != 'Synced':
        raise base.ReplicaUnusable('Galera node is %s' % state)


def _mariadb_gtid_lag(connection: sa.Connection, primary: sa.Engine,
                      bound: float) -> float:
    """How long the replica takes to apply what the primary has logged
    now (MASTER_GTID_WAIT), past ``bound`` if longer."""
    with primary.connect() as on_primary:
        position = on_primary.exec_driver_sql(
            'SELECT @@GLOBAL.gtid_binlog_pos').scalar()
    started = time.monotonic()
    reached = connection.exec_driver_sql(
        'SELECT MASTER_GTID_WAIT(%s, %s)', (position or '', bound)).scalar()
    waited = time.monotonic() - started
    if reached != 0:
        return max(waited, bound + base.POLL)
    return waited


BACKEND = MySQL()
