"""Engine construction and database error classification.

Replaces what upstream gets from oslo.db: URL normalisation, per-backend
connection setup, and deciding whether a failure is worth a retry (transient)
or should become a 503 (database unreachable).
"""

import logging
import random
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy import pool

from placement.db import packed

LOG = logging.getLogger(__name__)

# Backend (and dialect) names under which SQLAlchemy talks to MySQL/MariaDB.
MYSQL_BACKENDS = frozenset({'mysql', 'mariadb'})

# The drivers bare backend names get. A named one is kept: mysql+mysqldb
# (mysqlclient) is supported as well as PyMySQL, and classified alike.
_DEFAULT_DRIVERS = {'mysql': 'mysql+pymysql', 'mariadb': 'mariadb+pymysql',
                    'postgresql': 'postgresql+psycopg2'}
_THREE_BYTE_CHARSETS = {'utf8', 'utf8mb3'}
_CONNECT_TIMEOUT = 5
_SQLITE_BUSY_TIMEOUT_MS = 30000

# MySQL/MariaDB server and client error numbers.
_MYSQL_DISCONNECT = {
    1927,  # MariaDB: connection was killed
    2006,  # server has gone away
    2013,  # lost connection during query
    4031,  # MariaDB: disconnected for inactivity
}
_MYSQL_TRANSIENT = _MYSQL_DISCONNECT | {
    1205,  # lock wait timeout
    1213,  # deadlock, also how Galera reports a certification failure
    1047,  # Galera node not ready (WSREP has not yet prepared node)
}
_MYSQL_UNREACHABLE = {
    1040,  # too many connections
    2002,  # can't connect through socket
    2003,  # can't connect to server
    2005,  # unknown host
}
_PG_TRANSIENT = {'40001', '40P01'}  # serialization failure, deadlock
# Class 08 (connection exception) plus: too many connections, starting up.
_PG_UNREACHABLE = {'53300', '57P03'}


class DatabaseConfigError(Exception):
    """The [placement_database] settings cannot produce a usable engine."""


def normalize_url(url):
    """Parse a configured connection string into a URL we can connect with.

    Bare backend names get the driver we ship (SQLAlchemy 2.1 would pick
    psycopg 3 for postgresql://), and MySQL connections always use 4-byte
    UTF-8 so that any Unicode provider name round-trips.
    """
    return _normalize(_parse(url))


def create_engine(conf, option='connection'):
    """Build the engine described by ``conf.placement_database``, to the
    database its ``option`` names (``slave_connection``: the replica)."""
    opts = conf.placement_database
    url = _parse(getattr(opts, option, None), option)
    params = getattr(opts, 'connection_parameters', None)
    if params:
        url = url.update_query_string(params)
    url = _normalize(url)

    backend = url.get_backend_name()
    kwargs: dict[str, Any] = {'pool_pre_ping': True}
    if backend == 'sqlite':
        return _sqlite_engine(url, opts, kwargs)

    kwargs['isolation_level'] = 'READ COMMITTED'
    kwargs['pool_recycle'] = getattr(opts, 'connection_recycle_time', 3600)
    for option, kwarg in (('max_pool_size', 'pool_size'),
                          ('max_overflow', 'max_overflow'),
                          ('pool_timeout', 'pool_timeout')):
        value = getattr(opts, option, None)
        if value is not None:
            kwargs[kwarg] = value
    if 'connect_timeout' not in url.query:
        kwargs['connect_args'] = {'connect_timeout': _CONNECT_TIMEOUT}
    engine = sa.create_engine(url, **kwargs)
    if backend == 'postgresql':
        _set_postgresql_session(engine)
    if backend in MYSQL_BACKENDS:
        _set_mysql_session(
            engine, getattr(opts, 'mysql_sql_mode', 'TRADITIONAL'),
            getattr(opts, 'mysql_wsrep_sync_wait', None))
        packed.prepare(engine)
    return engine


def is_transient(exc):
    """True if re-running the whole transaction may well succeed.

    The whole chain of ``exc`` counts: a deadlock or Galera certification
    failure inside a savepoint makes MariaDB roll back the transaction,
    and the ROLLBACK TO SAVEPOINT that follows fails in turn (1305), with
    the deadlock as its context.
    """
    return any(_is_transient_one(link) for link in _chain(exc))


def is_conflict(exc):
    """True if ``exc`` is transient because writers collided (a deadlock,
    lock wait timeout, certification or serialization failure, SQLite
    busy), not because the connection broke.
    """
    return any(_is_transient_one(link) and not _is_disconnect(link)
               for link in _chain(exc))


def _is_transient_one(exc):
    if _is_disconnect(exc):
        return True
    orig = _dbapi_error(exc)
    if orig is None:
        return False
    code = _mysql_code(orig)
    if code is not None:
        return code in _MYSQL_TRANSIENT
    if getattr(orig, 'pgcode', None) in _PG_TRANSIENT:
        return True
    return _is_sqlite_busy(orig)


def _is_disconnect(exc):
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    return _mysql_code(_dbapi_error(exc)) in _MYSQL_DISCONNECT


def _chain(exc):
    """``exc`` and the exceptions it was raised from or while handling."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


# Text the table's character set cannot hold (a utf8mb3 table adopted from
# an old deployment refuses 4-byte UTF-8), or a value too big for a column.
_MYSQL_UNSTORABLE = {1267, 1366, 1406, 1264}


def is_unstorable_value(exc):
    """True if the database refused a value itself, not the statement."""
    if isinstance(exc, sa.exc.DataError):
        return True
    code = _mysql_code(_dbapi_error(exc))
    return code in _MYSQL_UNSTORABLE


def is_unreachable(exc):
    """True if the database could not be connected to at all (answer 503)."""
    orig = _dbapi_error(exc)
    if orig is None:
        return False
    code = _mysql_code(orig)
    if code is not None:
        return code in _MYSQL_UNREACHABLE
    pgcode = getattr(orig, 'pgcode', None)
    if pgcode:
        return pgcode.startswith('08') or pgcode in _PG_UNREACHABLE
    # SQLAlchemy records no statement when the failure happened on connect.
    return (isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError))
            and exc.statement is None)


# Attempts of a unit of work that keeps meeting transient errors.
TRANSIENT_ATTEMPTS = 5
# Backoff before attempt n+1: d = min(_MAX_DELAY, _BASE_DELAY * 2**(n-1))
# seconds, half of it fixed and half random, so that writers who
# collided spread out instead of colliding again in lockstep.
_BASE_DELAY = 0.05
_MAX_DELAY = 1.0


def retry_on_transient(fn, attempts=TRANSIENT_ATTEMPTS, retry_also=(),
                       on_retry=None):
    """Call ``fn()`` and return its result, re-running it on transient
    errors and on the exception types ``retry_also``, up to ``attempts``
    calls in all; then the last error is raised. ``on_retry(exc)`` is
    told of each re-run.

    ``fn`` must be a whole unit of work that opens and commits its own
    transaction, so that a re-run starts again from fresh data.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 (classified right below)
            if attempt >= attempts or not (isinstance(exc, retry_also)
                                           or is_transient(exc)):
                raise
            if on_retry is not None:
                on_retry(exc)
            delay = min(_MAX_DELAY, _BASE_DELAY * 2 ** (attempt - 1))
            delay = random.uniform(delay / 2, delay)
            LOG.info('Transient error (attempt %d/%d), retrying in %.2fs: '
                     '%s', attempt, attempts, delay, _dbapi_error(exc) or exc)
            time.sleep(delay)


def claim_write_lock(connection):
    """Make a write transaction queue for SQLite's single write lock now.

    Call it first thing in the transaction. A SQLite transaction that
    reads before it writes cannot wait for the lock later: if another
    writer committed since its first read, SQLite refuses at once
    ("database is locked") instead of waiting the busy timeout. Other
    backends lock rows as statements touch them: nothing to do.
    """
    if connection.dialect.name == 'sqlite':
        # A write that matches no row still takes the lock.
        connection.exec_driver_sql(
            'UPDATE resource_providers SET generation = generation WHERE 0')


def _parse(url, option='connection'):
    if not url or not url.strip():
        raise DatabaseConfigError(
            f'[placement_database] {option} is not set')
    try:
        parsed = sa.engine.make_url(url.strip())
        parsed.get_dialect()
    except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ValueError) as exc:
        raise DatabaseConfigError(
            f'invalid [placement_database] {option} URL: {exc}') from None
    return parsed


def _normalize(url):
    if url.drivername in _DEFAULT_DRIVERS:
        url = url.set(drivername=_DEFAULT_DRIVERS[url.drivername])
    if url.get_backend_name() in MYSQL_BACKENDS:
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


def _sqlite_engine(url, opts, kwargs):
    in_memory = url.database in (None, '', ':memory:')
    if in_memory:
        # One shared connection, or every checkout sees an empty database.
        kwargs.update(poolclass=pool.StaticPool,
                      connect_args={'check_same_thread': False})
    engine = sa.create_engine(url, **kwargs)
    pragmas = [f'PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}',
               'PRAGMA foreign_keys = ON']
    if not in_memory:
        pragmas.append('PRAGMA journal_mode = WAL')
    if not getattr(opts, 'sqlite_synchronous', True):
        pragmas.append('PRAGMA synchronous = OFF')

    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        # Take transaction control away from the sqlite3 module, which
        # otherwise never BEGINs before SELECT and breaks SAVEPOINTs.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        for pragma in pragmas:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, 'begin')
    def _on_begin(conn):
        conn.exec_driver_sql('BEGIN')

    return engine


def _set_mysql_session(engine, sql_mode, wsrep_sync_wait):
    settings = []
    if sql_mode:
        settings.append(('sql_mode', sql_mode))
    if wsrep_sync_wait is not None:
        settings.append(('wsrep_sync_wait', wsrep_sync_wait))
    if not settings:
        return

    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        cursor = dbapi_conn.cursor()
        for name, value in settings:
            cursor.execute('SET SESSION %s = %%s' % name, (value,))
        cursor.close()


def _set_postgresql_session(engine):
    """Sessions without JIT compilation: it starts on the planner's cost
    estimate, which a correlated subquery over a large table inflates,
    and then spends tens of milliseconds compiling a statement that runs
    in a few (the batch roots of allocation candidates at 100,000
    providers: 88 ms, 52 without). A server without JIT (before 11)
    keeps its session as it is.
    """
    @event.listens_for(engine, 'connect')
    def _on_connect(dbapi_conn, _record):
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute('SET jit = off')
        except dbapi_conn.ProgrammingError:
            dbapi_conn.rollback()
            return
        finally:
            cursor.close()
        # psycopg2 opened a transaction for the statement: the setting
        # lasts the session once it is committed.
        dbapi_conn.commit()


def _dbapi_error(exc):
    """The driver-level exception behind ``exc``, if any."""
    if isinstance(exc, sa_exc.DBAPIError):
        return exc.orig
    return None


def _mysql_code(orig):
    """MySQL error number of a PyMySQL/mysqlclient exception, else None."""
    if type(orig).__module__.split('.')[0] not in ('pymysql', 'MySQLdb'):
        return None
    args = getattr(orig, 'args', ())
    return args[0] if args and isinstance(args[0], int) else None


def _is_sqlite_busy(orig):
    return (type(orig).__module__ == 'sqlite3'
            and 'locked' in str(orig).lower())
