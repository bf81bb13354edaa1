"""The unit of work: how the HTTP service and the command-line tools alike
reach the database.

A read runs ``fn(connection, ...)`` on one connection: to the replica
when the caller allows it and the replica is usable now, else to the
primary; a read the replica fails is read again from the primary, so
that a replica never fails a caller. A write runs ``fn(connection, ...)``
in one transaction on the primary, which on SQLite first queues for the
write lock, and re-runs it from the start on transient errors, but never
when the connection broke during COMMIT: the write may be stored, and
CommitOutcomeUnknown says so. Each read or write, all its attempts
together, has the engine's transaction_timeout to finish, or less if an
enclosing deadline (a request's) is sooner: placement.db.watchdog cuts a
connection held longer. Only this module
begins transactions (tests/unit/test_unit_of_work.py keeps it so).
"""
from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import threading
from typing import Any
from typing import TypeVar

from oslo_config import cfg
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement import exception
from placement.db import backends
from placement.db import engine as db_engine
from placement.db import replica as replica_db
from placement.db import standard_sync
from placement.db import watchdog

T = TypeVar('T')

# The servers a read is answered by, as ``on_read`` is told.
PRIMARY = 'primary'
REPLICA = 'replica'

RetryOn = type[BaseException] | tuple[type[BaseException], ...]


class Database:
    """The primary ``engine`` and an optional ``replica``.

    ``sync_standard``: write the standard resource classes and traits
    before the first read or write of this object (the API service does,
    lazily: a database that goes away after the start, or is a read-only
    standby for a while, must not stop a worker from starting).
    ``on_read(server)`` is told of each read a server answered
    (PRIMARY or REPLICA), be it with a result or a domain error (a
    placement.exception.PlacementError such as NotFound).
    """

    def __init__(self, engine: sa.engine.Engine,
                 replica: replica_db.Replica | None = None, *,
                 sync_standard: bool = False,
                 on_read: Callable[[str], Any] | None = None) -> None:
        self.engine = engine
        self.replica = replica
        self._on_read = on_read
        self._synced = not sync_standard
        self._lock = threading.Lock()

    def read(self, fn: Callable[..., T], *args: Any,
             replica_ok: bool = False, **kwargs: Any) -> T:
        """``fn(connection, *args, **kwargs)`` on a connection to the
        replica if ``replica_ok`` and the replica is usable now, else to
        the primary (also when the replica fails the read). A read whose
        connection broke is read once more, on a new connection."""
        self.sync()

        def attempt() -> T:
            replica = self.replica
            if replica_ok and replica is not None and replica.usable():
                try:
                    with _connected(replica.engine) as connection:
                        return self._counted(REPLICA, fn, connection, *args,
                                             **kwargs)
                except sa_exc.SQLAlchemyError as exc:
                    replica.failed(exc)
            with _connected(self.engine) as connection:
                return self._counted(PRIMARY, fn, connection, *args,
                                     **kwargs)
        with watchdog.deadline(watchdog.timeout_of(self.engine)):
            return db_engine.retry_on_transient(attempt, attempts=2)

    def write(self, fn: Callable[..., T], *args: Any,
              attempts: int = db_engine.TRANSIENT_ATTEMPTS,
              retry_also: RetryOn = (),
              on_retry: Callable[[BaseException], Any] | None = None) -> T:
        """``fn(connection, *args)`` in one transaction on the primary,
        re-run from the start when the database reports a deadlock, a
        certification failure or a lost connection, or ``fn`` raises one
        of ``retry_also``, up to ``attempts`` runs in all; ``on_retry(exc)``
        is told of each re-run (see ``db_engine.retry_on_transient``)."""
        self.sync()
        return self._transaction(fn, *args, attempts=attempts,
                                 retry_also=retry_also, on_retry=on_retry)

    def sync(self) -> None:
        """Write the standard classes and traits, once, if this object
        was asked to. If that wrote any, no earlier replica check is
        trusted (a health check may have made one): the replica lacks
        them until it has replicated the write."""
        if self._synced:
            return
        with self._lock:
            if self._synced:
                return
            added = self._transaction(standard_sync.sync_standard)
            self._synced = True
            if added and self.replica is not None:
                self.replica.expire()

    def migrate(self, fn: Callable[..., T], *args: Any,
                attempts: int = db_engine.TRANSIENT_ATTEMPTS) -> T:
        """``fn(connection, *args)`` in one transaction that changes the
        schema, re-run on transient errors up to ``attempts`` runs. It
        holds the backend's migration lock, which serialises upgraders,
        instead of the write lock, whose table may not exist yet."""
        def attempt() -> T:
            with self.engine.begin() as connection, \
                    backends.of(connection).migration_lock(connection):
                return fn(connection, *args)
        # A schema change takes as long as the table is large: no deadline.
        with watchdog.deadline(0):
            return db_engine.retry_on_transient(attempt, attempts=attempts)

    def _transaction(self, fn: Callable[..., T], *args: Any,
                     **retry: Any) -> T:
        """The one place that begins transactions: on SQLite the
        transaction waits for the write lock first, so that concurrent
        writers (threads or processes) queue instead of failing."""
        def attempt() -> T:
            with _connected(self.engine) as connection:
                transaction = connection.begin()
                db_engine.claim_write_lock(connection)
                result = fn(connection, *args)
                _commit(transaction)
                return result
        with watchdog.deadline(watchdog.timeout_of(self.engine)):
            return db_engine.retry_on_transient(attempt, **retry)

    def _counted(self, server: str, fn: Callable[..., T],
                 connection: sa.engine.Connection, *args: Any,
                 **kwargs: Any) -> T:
        """``fn(connection, ...)``, told to ``on_read`` when it answers."""
        try:
            result = fn(connection, *args, **kwargs)
        except exception.PlacementError:
            self._answered(server)
            raise
        self._answered(server)
        return result

    def _answered(self, server: str) -> None:
        if self._on_read is not None:
            self._on_read(server)


@contextlib.contextmanager
def _connected(engine: sa.Engine) -> Iterator[sa.Connection]:
    """A connection of ``engine``, closed afterwards, which rolls back
    what it left uncommitted. When the block failed, its error is the one
    raised: a connection the watchdog cut at the deadline cannot roll
    back, and its error would hide why the block ended (the server rolls
    a lost session back itself); such a connection is discarded."""
    connection = engine.connect()
    try:
        yield connection
    except BaseException:
        try:
            connection.close()
        except sa_exc.DBAPIError:
            # A lost connection was invalidated as it failed.
            if not connection.invalidated:
                with contextlib.suppress(sa_exc.SQLAlchemyError):
                    connection.invalidate()
        raise
    connection.close()


def _commit(transaction: sa.engine.Transaction) -> None:
    """Commit. Only a collision with other writers (a deadlock, Galera's
    certification failure, a serialization failure, SQLite busy) tells
    that the transaction was rolled back and may be run again; any other
    failure of the COMMIT (a lost connection, a Galera node that left
    its cluster as it replicated: 1180) leaves the outcome unknown."""
    try:
        transaction.commit()
    except sa_exc.DBAPIError as exc:
        if db_engine.is_conflict(exc):
            raise
        raise exception.CommitOutcomeUnknown() from exc


def open_replica(conf: cfg.ConfigOpts, primary: sa.engine.Engine,
                 on_check: Callable[[replica_db.Check], Any] | None = None,
                 ) -> replica_db.Replica | None:
    """The replica ``conf``'s [placement_database] slave_connection names,
    its lag measured against ``primary``; None if none is configured."""
    opts = conf.placement_database
    if not opts.slave_connection:
        return None
    return replica_db.Replica(
        db_engine.create_engine(conf, option='slave_connection'),
        primary=primary, max_lag=opts.replica_max_lag,
        interval=opts.replica_check_interval, on_check=on_check)
