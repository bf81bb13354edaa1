"""Engine construction and database error classification.

Replaces what upstream gets from oslo.db: URL normalisation, per-backend
connection setup, and deciding whether a failure is worth a retry (transient)
or should become a 503 (database unreachable).
"""

import contextlib
import logging
import os
import random
import time
import traceback
from typing import Any
from typing import Callable
from typing import Iterator
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

from placement import exception
from placement.db import backends
from placement.db import watchdog
from placement.db.backends import base as backend_base

LOG = logging.getLogger(__name__)
T = TypeVar('T')


class DatabaseConfigError(Exception):
    """The [placement_database] settings cannot produce a usable engine."""


class DatabaseUnreachable(Exception):
    """The database could not be connected to at start-up, within
    [placement_database] max_retries and retry_interval."""


# The database server is set up in a way placement cannot work with.
UnusableServer = backends.UnusableServer
# What stops the service or a command before it does anything: each says
# what to change in one line.
CANNOT_START = (DatabaseConfigError, DatabaseUnreachable, UnusableServer)

# What to do about each kind of failure to connect (backends.base).
_CONNECT_ADVICE = {
    backend_base.CONNECT_UNREACHABLE: (
        'cannot connect to the database at %s (%s): check that its server '
        'runs and [placement_database] connection'),
    backend_base.CONNECT_UNKNOWN_DATABASE: (
        'the database at %s does not exist (%s): create it, or correct '
        '[placement_database] connection'),
    backend_base.CONNECT_CREDENTIALS: (
        'the database server refused the user of %s (%s): check the user '
        'and password in [placement_database] connection and the user\'s '
        'privileges'),
    backend_base.CONNECT_UNOPENABLE: (
        'cannot open the database file of %s (%s): check that its '
        'directory exists and that this user may write there'),
}


def normalize_url(url: str | None) -> sa.engine.URL:
    """Parse a configured connection string into a URL we can connect with.

    Bare backend names get the driver we ship (SQLAlchemy 2.1 would pick
    psycopg 3 for postgresql://), and MySQL connections always use 4-byte
    UTF-8 so that any Unicode provider name round-trips.
    """
    return _normalize(_parse(url))


def create_engine(conf: Any, option: str = 'connection',
                  bounded: bool = True) -> sa.Engine:
    """Build the engine described by ``conf.placement_database``, to the
    database its ``option`` names (``slave_connection``: the replica).
    ``bounded``: its work is bounded by [placement_database]
    transaction_timeout, as a request's is; the command-line tools'
    migrations and audits may run for as long as they need."""
    opts = conf.placement_database
    url = _parse(getattr(opts, option, None), option)
    params = getattr(opts, 'connection_parameters', None)
    if params:
        url = url.update_query_string(params)
    url = _normalize(url)
    timeout = getattr(opts, 'transaction_timeout', 0) if bounded else 0
    try:
        engine = backends.of(url).create_engine(url, opts, timeout)
    except ImportError as exc:
        raise DatabaseConfigError(
            f'the driver of [placement_database] {option} '
            f'({url.drivername}) is not installed ({exc}): install it, or '
            f'name one that is') from None
    _log_statements(getattr(opts, 'connection_debug', 0))
    if getattr(opts, 'connection_trace', False):
        _trace_call_sites(engine)
    return engine


def _log_statements(verbosity: int) -> None:
    """[placement_database] connection_debug, as oslo.db reads it: from
    50 SQLAlchemy logs statements (INFO), from 100 their rows too
    (DEBUG)."""
    logger = logging.getLogger('sqlalchemy.engine')
    if verbosity >= 100:
        logger.setLevel(logging.DEBUG)
    elif verbosity >= 50:
        logger.setLevel(logging.INFO)


# The frames of this package that connection_trace names, innermost last.
_TRACED_FRAMES = 5


def _trace_call_sites(engine: sa.Engine) -> None:
    """[placement_database] connection_trace: each statement carries, as
    an SQL comment, where in placement it was sent from, so that the
    database's own logs (slow query log, pg_stat_statements) point at
    the code."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    @event.listens_for(engine, 'before_cursor_execute', retval=True)
    def _with_call_site(_conn, _cursor, statement, parameters, _context,
                        _executemany):
        frames = [frame for frame in traceback.extract_stack()[:-1]
                  if frame.filename.startswith(package)]
        if frames:
            statement += '\n-- ' + '\n-- '.join(
                '%s:%s %s' % (os.path.relpath(frame.filename, package),
                              frame.lineno, frame.name)
                for frame in frames[-_TRACED_FRAMES:])
        return statement, parameters


# A wrong user, password or database name: retrying will not help.
_NOT_MENDED_BY_WAITING = (backend_base.CONNECT_CREDENTIALS,
                          backend_base.CONNECT_UNKNOWN_DATABASE)


def wait_until_reachable(engine: sa.Engine, conf: Any) -> None:
    """Connect once, as upstream's services do at start-up: retried
    [placement_database] max_retries times (-1: for ever), retry_interval
    seconds apart; then DatabaseUnreachable, whose message says what is
    wrong and what to do. A refused user or an unknown database fails at
    once."""
    opts = conf.placement_database
    retries, interval = opts.max_retries, opts.retry_interval
    attempt = 0
    while True:
        attempt += 1
        try:
            with engine.connect():
                return
        except sa_exc.DBAPIError as exc:
            reason = _reason(exc)
            kind = connect_failure(exc) or backend_base.CONNECT_UNREACHABLE
            line = _CONNECT_ADVICE[kind] % (_shown(engine.url), reason)
            if kind in _NOT_MENDED_BY_WAITING:
                raise DatabaseUnreachable(line) from None
            if 0 <= retries < attempt:
                raise DatabaseUnreachable(
                    '%s (%d attempts: [placement_database] max_retries = '
                    '%d)' % (line, attempt, retries)) from None
            LOG.warning('The database is unreachable (attempt %d of %s); '
                        'trying again in %d s: %s', attempt,
                        'unlimited' if retries < 0 else retries + 1,
                        interval, reason)
            time.sleep(interval)


@contextlib.contextmanager
def unbounded(conf: Any, engine: sa.Engine) -> Iterator[sa.Engine]:
    """An engine like ``engine`` (made by ``create_engine(conf)``) whose
    work is not bounded by transaction_timeout, for work that takes its
    time (migrations): a new one, disposed of afterwards; or ``engine``
    itself where nothing bounds it (transaction_timeout 0, or SQLite,
    whose engines are not watched and whose in-memory database no other
    engine would reach)."""
    if watchdog.timeout_of(engine) <= 0:
        yield engine
        return
    other = create_engine(conf, bounded=False)
    try:
        yield other
    finally:
        other.dispose()


def is_transient(exc: BaseException) -> bool:
    """True if re-running the whole transaction may well succeed.

    The whole chain of ``exc`` counts: a deadlock or Galera certification
    failure inside a savepoint makes MariaDB roll back the transaction,
    and the ROLLBACK TO SAVEPOINT that follows fails in turn (1305), with
    the deadlock as its context.
    """
    return any(_is_transient_one(link) for link in _chain(exc))


def is_conflict(exc: BaseException) -> bool:
    """True if ``exc`` is transient because writers collided (a deadlock,
    lock wait timeout, certification or serialization failure, SQLite
    busy), not because the connection broke.
    """
    return any(_is_transient_one(link) and not _is_disconnect(link)
               for link in _chain(exc))


def is_lost_connection(exc: BaseException) -> bool:
    """True if ``exc`` is the connection breaking (the server went away,
    or the watchdog cut it), not the server refusing a statement."""
    return _is_disconnect(exc)


def _is_transient_one(exc):
    return _is_disconnect(exc) or bool(
        backends.verdict('is_transient', _dbapi_error(exc)))


def _is_disconnect(exc):
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    return bool(backends.verdict('is_disconnect', _dbapi_error(exc)))


def _chain(exc):
    """``exc`` and the exceptions it was raised from or while handling."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_statement_timeout(exc: BaseException) -> bool:
    """True if the server stopped a statement that ran past the
    request's deadline (its statement timeout)."""
    return bool(backends.verdict('is_statement_timeout', _dbapi_error(exc)))


def is_schema_mismatch(exc: BaseException) -> bool:
    """True if a statement named a table or column the database does not
    have: its schema is not the one this code was written for."""
    return bool(backends.verdict('is_schema_mismatch', _dbapi_error(exc)))


def connect_failure(exc: BaseException) -> str | None:
    """Why ``exc`` failed to connect (a CONNECT_* kind of
    placement.db.backends.base), or None if it is no failure to
    connect."""
    if not isinstance(exc, sa_exc.DBAPIError):
        return None
    orig = exc.orig
    if orig is None:
        return None
    for backend in backends.ALL:
        kind = backend.connect_failure(orig)
        if kind is not None:
            return kind
    return backend_base.CONNECT_UNREACHABLE if is_unreachable(exc) else None


def connect_failure_line(exc: BaseException,
                         url: sa.engine.URL) -> str | None:
    """What is wrong and what to do, in one line, when ``exc`` failed to
    connect to ``url`` (its password never shown); None if it is no
    failure to connect."""
    kind = connect_failure(exc)
    if kind is None:
        return None
    return _CONNECT_ADVICE[kind] % (_shown(url), _reason(exc))


def _shown(url: sa.engine.URL) -> str:
    return url.render_as_string(hide_password=True)


def _reason(exc: BaseException) -> str:
    """The driver's message on one line (libpq's span several)."""
    return ' '.join(str(_dbapi_error(exc) or exc).split())


def is_out_of_time(exc: BaseException) -> bool:
    """True if ``exc`` ended the work because the current deadline
    passed: the server stopped the statement, the watchdog cut the
    connection, or a wait for a lock (SQLite's busy timeout, set to the
    deadline) ran out."""
    return is_statement_timeout(exc) or (
        (is_lost_connection(exc) or is_conflict(exc))
        and watchdog.remaining() <= 0)


def is_unstorable_value(exc: BaseException) -> bool:
    """True if the database refused a value itself, not the statement."""
    return isinstance(exc, sa.exc.DataError) or bool(
        backends.verdict('is_unstorable', _dbapi_error(exc)))


def is_unreachable(exc: BaseException) -> bool:
    """True if the database could not be connected to at all (answer 503)."""
    orig = _dbapi_error(exc)
    if orig is None:
        return False
    unreachable = backends.verdict('is_unreachable', orig)
    if unreachable is not None:
        return unreachable
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


def retry_on_transient(
        fn: Callable[[], T], attempts: int = TRANSIENT_ATTEMPTS,
        retry_also: type[BaseException] | tuple[type[BaseException], ...] = (),
        on_retry: Callable[[BaseException], Any] | None = None) -> T:
    """Call ``fn()`` and return its result, re-running it on transient
    errors and on the exception types ``retry_also``, up to ``attempts``
    calls in all (at least one); then the last error is raised.
    ``on_retry(exc)`` is told of each re-run.

    ``fn`` must be a whole unit of work that opens and commits its own
    transaction, so that a re-run starts again from fresh data. No re-run
    starts once the current deadline (placement.db.watchdog) would pass
    during the backoff.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 (classified right below)
            # A COMMIT whose outcome is unknown may have been applied: it
            # is never re-run, whatever broke the connection.
            if (attempt >= attempts
                    or isinstance(exc, exception.CommitOutcomeUnknown)
                    or not (isinstance(exc, retry_also)
                            or is_transient(exc))):
                raise
            delay = min(_MAX_DELAY, _BASE_DELAY * 2 ** (attempt - 1))
            delay = random.uniform(delay / 2, delay)
            if watchdog.remaining() <= delay:
                raise
            if on_retry is not None:
                on_retry(exc)
            LOG.info('Transient error (attempt %d/%d), retrying in %.2fs: '
                     '%s', attempt, attempts, delay, _dbapi_error(exc) or exc)
            time.sleep(delay)


def claim_write_lock(connection: sa.Connection) -> None:
    """Make a write transaction queue for the database's write lock now
    (SQLite's single one; other backends lock rows as statements touch
    them). Call it first thing in the transaction."""
    backends.of(connection).claim_write_lock(connection)


def _parse(url, option='connection'):
    if not url or not url.strip():
        raise DatabaseConfigError(
            f'[placement_database] {option} is not set')
    try:
        parsed = sa.engine.make_url(url.strip())
        parsed.get_dialect()
        backends.of(parsed)
    except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ValueError,
            backends.UnsupportedBackend) as exc:
        raise DatabaseConfigError(
            f'invalid [placement_database] {option} URL: {exc}') from None
    return parsed


def _normalize(url):
    return backends.of(url).normalize(url)


def _dbapi_error(exc):
    """The driver-level exception behind ``exc``, if any."""
    if isinstance(exc, sa_exc.DBAPIError):
        return exc.orig
    return None
