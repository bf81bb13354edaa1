"""PostgreSQL through psycopg2.

Sessions run without JIT compilation. Errors are told by SQLSTATE:
serialization failures and deadlocks are transient; connection
exceptions, too many connections and a server starting up mean it
cannot be reached. Lists of ids travel as one array parameter, and the
candidate statements give the planner arrays worked out first where it
would misjudge a subquery.
"""
import contextlib
import datetime
import io
from typing import Any
from typing import Callable
from typing import Iterator
from typing import Mapping
from typing import Sequence

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql

from placement.db.backends import base

# A read-only transaction: the server is a standby now (a failover
# demoted it); a new connection finds the primary.
_LOST = {'25006'}
_TRANSIENT = {'40001', '40P01'} | _LOST  # serialization failure, deadlock
# Class 08 (connection exception) plus: too many connections, starting up.
_UNREACHABLE = {'53300', '57P03'}
_CANCELED = '57014'
# undefined_table, undefined_column.
_SCHEMA_MISMATCH = {'42P01', '42703'}
# What a refused connection's SQLSTATE, or without one (libpq's messages
# carry none) its text, says.
_CREDENTIALS = {'28000', '28P01'}
_UNKNOWN_DATABASE = '3D000'
_CREDENTIALS_TEXT = ('password authentication failed', 'no pg_hba.conf entry',
                     'role "')
_UNKNOWN_DATABASE_TEXT = 'database "'
_MIGRATION_LOCK_KEY = 0x706c6163656d6e74  # arbitrary, constant across releases

_STANDBY = sa.text('SELECT pg_is_in_recovery()')
_PRIMARY_POSITION = sa.text('SELECT pg_current_wal_lsn()')
_REPLAYED = sa.text(
    'SELECT pg_last_wal_replay_lsn() >= CAST(:position AS pg_lsn)')

_SET_SEQUENCE = sa.text(
    "SELECT setval(pg_get_serial_sequence(:table, 'id'), :last)")

# COPY's text format of each type of value bulk_insert is given.
_COPY_ESCAPES = str.maketrans({'\\': '\\\\', '\t': '\\t', '\n': '\\n',
                               '\r': '\\r'})
_COPY_TEXT: dict[type, Callable[[Any], str]] = {
    type(None): lambda value: '\\N',
    str: lambda value: value.translate(_COPY_ESCAPES),
    int: str,
    float: repr,
    datetime.datetime: lambda value: value.isoformat(' '),
}


class PostgreSQL(base.Backend):
    """PostgreSQL (psycopg2)."""
    names = frozenset({'postgresql'})
    drivers = {'postgresql': 'postgresql+psycopg2'}
    prefers_arrays = True

    def set_up(self, engine: sa.Engine, opts: Any, timeout: float) -> None:
        """Sessions whose statements the server stops after ``timeout``
        (statement_timeout: a request cut by its deadline leaves no query
        running), and without JIT compilation: it starts on the planner's
        cost estimate, which a correlated subquery over a large table
        inflates, and then spends tens of milliseconds compiling a
        statement that runs in a few (the batch roots of allocation
        candidates at 100,000 providers: 88 ms, 52 without). A server
        without JIT (before 11) keeps that setting as it is.
        """
        @event.listens_for(engine, 'connect')
        def _on_connect(dbapi_conn, _record):
            cursor = dbapi_conn.cursor()
            try:
                if timeout > 0:
                    cursor.execute('SET statement_timeout = %s',
                                   (max(1, round(timeout * 1000)),))
                    dbapi_conn.commit()
                cursor.execute('SET jit = off')
            except dbapi_conn.ProgrammingError:
                dbapi_conn.rollback()
                return
            finally:
                cursor.close()
            # psycopg2 opened a transaction for the statement: the
            # setting lasts the session once it is committed.
            dbapi_conn.commit()

    def is_statement_timeout(self, orig: BaseException) -> bool | None:
        """statement_timeout stopped the statement (query_canceled)."""
        return True if getattr(orig, 'pgcode', None) == _CANCELED else None

    def is_transient(self, orig: BaseException) -> bool | None:
        """A serialization failure or a deadlock."""
        return True if getattr(orig, 'pgcode', None) in _TRANSIENT else None

    def is_disconnect(self, orig: BaseException) -> bool | None:
        """A server that can no longer take writes (the others psycopg2
        reports, SQLAlchemy recognises by their text)."""
        return True if getattr(orig, 'pgcode', None) in _LOST else None

    def is_unreachable(self, orig: BaseException) -> bool | None:
        """A connection exception, too many connections, or a server
        starting up; None without an SQLSTATE (as on connect)."""
        pgcode = getattr(orig, 'pgcode', None)
        if not pgcode:
            return None
        return pgcode.startswith('08') or pgcode in _UNREACHABLE

    def is_schema_mismatch(self, orig: BaseException) -> bool | None:
        """No such table or column."""
        pgcode = getattr(orig, 'pgcode', None)
        return True if pgcode in _SCHEMA_MISMATCH else None

    def connect_failure(self, orig: BaseException) -> str | None:
        if type(orig).__module__.split('.')[0] != 'psycopg2':
            return None
        pgcode = getattr(orig, 'pgcode', None)
        text = str(orig)
        if pgcode in _CREDENTIALS or (not pgcode and any(
                part in text for part in _CREDENTIALS_TEXT)):
            return base.CONNECT_CREDENTIALS
        if pgcode == _UNKNOWN_DATABASE or (
                not pgcode and _UNKNOWN_DATABASE_TEXT in text
                and 'does not exist' in text):
            return base.CONNECT_UNKNOWN_DATABASE
        if not pgcode or pgcode.startswith('08') or pgcode in _UNREACHABLE:
            return base.CONNECT_UNREACHABLE
        return None

    @contextlib.contextmanager
    def migration_lock(self, connection: sa.Connection) -> Iterator[None]:
        """An advisory lock scoped to this database, released with the
        transaction."""
        connection.execute(sa.text('SELECT pg_advisory_xact_lock(:key)'),
                           {'key': _MIGRATION_LOCK_KEY})
        yield

    def among(self, column: Any) -> sa.ColumnElement[bool]:
        """The ids as one array parameter."""
        return column == sa.any_(
            sa.bindparam('ids', type_=postgresql.ARRAY(sa.Integer)))

    def id_reads(self, dialect: sa.engine.Dialect, statement: Any,
                 ids: list[int], params: dict[str, Any]) -> base.IdReads:
        """One read, the ids bound as one array."""
        return [(statement, dict(params, ids=ids))]

    def replica_lag(self, connection: sa.Connection, primary: sa.Engine,
                    bound: float) -> float:
        """A standby's lag: how long it takes to replay what the primary
        has written now, whatever its link to the primary says."""
        if not connection.execute(_STANDBY).scalar():
            return 0.0
        with primary.connect() as on_primary:
            position = on_primary.execute(_PRIMARY_POSITION).scalar()
        return base.caught_up_within(
            lambda: _replayed(connection, position), bound)

    def bulk_insert(self, connection: sa.Connection, table: sa.Table,
                    columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """COPY FROM STDIN in text format: several times faster than an
        executemany, which psycopg2 sends one row a statement."""
        text = io.StringIO()
        for row in rows:
            text.write('\t'.join(_COPY_TEXT[type(value)](value)
                                  for value in row))
            text.write('\n')
        text.seek(0)
        # psycopg2's own cursor: copy_expert is not in the DB-API.
        cursor: Any = connection.connection.cursor()
        try:
            cursor.copy_expert('COPY %s (%s) FROM STDIN' % (
                table.name, ', '.join(columns)), text)
        finally:
            cursor.close()

    def continue_ids(self, connection: sa.Connection,
                     last_ids: Mapping[str, int]) -> None:
        """Move each table's id sequence past the ids written: rows given
        their ids leave the sequence where it was."""
        for table_name, last_id in last_ids.items():
            if last_id > 0:
                connection.execute(_SET_SEQUENCE,
                                   {'table': table_name, 'last': last_id})

    def analyze(self, connection: sa.Connection,
                table_names: Sequence[str]) -> None:
        """VACUUM ANALYZE the database, rather than leaving the statistics
        to autovacuum: the visibility map also allows index-only scans,
        and the first reads do not write hint bits into every freshly
        copied page."""
        connection.exec_driver_sql('VACUUM ANALYZE')

    def database_bytes(self, connection: sa.Connection) -> int:
        """pg_database_size of the current database."""
        return int(connection.exec_driver_sql(
            'SELECT pg_database_size(current_database())').scalar() or 0)


def _replayed(connection: sa.Connection, position: Any) -> bool:
    return bool(connection.execute(_REPLAYED, {'position': position}).scalar())


BACKEND = PostgreSQL()
