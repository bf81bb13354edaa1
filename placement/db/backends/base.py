"""What every backend answers, and what it does when it has nothing
special to do (the defaults of ``Backend``).

A backend module subclasses ``Backend`` for its kind of database and
overrides only what that database does its own way.
"""
import contextlib
import time
from typing import Any
from typing import Callable
from typing import ContextManager
from typing import Mapping
from typing import Sequence

import sqlalchemy as sa
from sqlalchemy import event

from placement.db import watchdog

# Seconds a connection attempt to a database server may take.
_CONNECT_TIMEOUT = 5

# The statements and parameters one read of a list of ids takes.
IdReads = Sequence[tuple[Any, dict[str, Any]]]


# Why a connection attempt failed (Backend.connect_failure).
CONNECT_UNREACHABLE = 'unreachable'
CONNECT_UNKNOWN_DATABASE = 'unknown database'
CONNECT_CREDENTIALS = 'credentials'
CONNECT_UNOPENABLE = 'unopenable'  # a database file


class UnusableServer(Exception):
    """The database server is set up in a way placement cannot work with;
    the message says what to change."""


class ReplicaUnusable(Exception):
    """The replica answered, but says it is not a replica we can read
    from (not replicating, not synced)."""


class Backend:
    """One kind of database: how its engines are set up, how its driver's
    errors are classified, how lists of ids travel to it, and which
    variant of a statement it is given where the kinds differ.
    """
    # The SQLAlchemy dialect (and URL backend) names it serves.
    names: frozenset[str] = frozenset()
    # The drivers bare backend names get (a named one is kept).
    drivers: Mapping[str, str] = {}

    # Variants of the candidate statements (placement.candidates.sql).
    # The usage of a scan of inventories that is not restricted to listed
    # trees is summed once and joined, not looked up row by row.
    usage_by_join = True
    # allocation_ratio is single precision in the server's arithmetic:
    # the statements leave sql_ratio out and it is worked out in Python.
    sql_ratio_in_python = False
    # A restriction to listed trees or providers hides the class column
    # from the planner, which would otherwise walk the class index.
    avoid_class_index = False
    # Lists worked out first are given to the planner as one array, which
    # it does not misjudge as it does a subquery or a long IN list.
    prefers_arrays = False
    # The sharing anchors of a narrow, dense range of roots are read from
    # the trees (see candidates.sql.TREES_PER_SHARER).
    anchors_from_trees = False

    def __repr__(self) -> str:
        return '<%s backend>' % type(self).__name__

    def normalize(self, url: sa.engine.URL) -> sa.engine.URL:
        """``url`` with the driver we ship for a bare backend name
        (SQLAlchemy 2.1 would pick psycopg 3 for postgresql://)."""
        if url.drivername in self.drivers:
            url = url.set(drivername=self.drivers[url.drivername])
        return url

    def create_engine(self, url: sa.engine.URL, opts: Any,
                      timeout: float) -> sa.Engine:
        """A pooled engine to a database server, as the [placement_database]
        options ``opts`` describe it, its work bounded by ``timeout``
        seconds (placement.db.watchdog; 0: not bounded)."""
        # The watchdog pings pooled connections itself, under its watch.
        kwargs: dict[str, Any] = {
            'isolation_level': 'READ COMMITTED',
            'pool_recycle': getattr(opts, 'connection_recycle_time', 3600)}
        for option, kwarg in (('max_pool_size', 'pool_size'),
                              ('max_overflow', 'max_overflow'),
                              ('pool_timeout', 'pool_timeout')):
            value = getattr(opts, option, None)
            if value is not None:
                kwargs[kwarg] = value
        if timeout > 0 and 'pool_timeout' not in kwargs:
            # Waiting for a free connection past the deadline is no use.
            kwargs['pool_timeout'] = timeout
        connect_args = self.connect_args(url, timeout)
        if connect_args:
            kwargs['connect_args'] = connect_args
        engine = sa.create_engine(url, **kwargs)
        watchdog.watch(engine, timeout, self.socket_fileno)

        @event.listens_for(engine, 'handle_error')
        def _discard_lost(context):
            # What this backend calls a lost connection (a node that left
            # its cluster, a primary become standby) is discarded too, so
            # that a retry connects afresh, perhaps to another server.
            orig = context.original_exception
            if not context.is_disconnect and self.is_disconnect(orig):
                context.is_disconnect = True

        self.set_up(engine, opts, timeout)
        return engine

    def connect_args(self, url: sa.engine.URL,
                     transaction_timeout: float) -> dict[str, Any]:
        """The driver's connection arguments: a connect timeout, unless
        the URL sets one."""
        if 'connect_timeout' in url.query:
            return {}
        return {'connect_timeout': _CONNECT_TIMEOUT}

    def socket_fileno(self, dbapi_connection: Any) -> int | None:
        """The file descriptor of the driver connection's socket (the
        drivers' fileno()), which placement.db.watchdog cuts."""
        fileno = getattr(dbapi_connection, 'fileno', None)
        return fileno() if fileno is not None else None

    def set_up(self, engine: sa.Engine, opts: Any, timeout: float) -> None:
        """Prepare the sessions of a new ``engine``, whose work is bounded
        by ``timeout`` (nothing to do)."""

    # Error classification. Each takes the driver's exception and answers
    # None unless that driver is this backend's and it can tell.
    def is_transient(self, orig: BaseException) -> bool | None:
        """Whether re-running the transaction may succeed."""
        return None

    def is_disconnect(self, orig: BaseException) -> bool | None:
        """Whether the connection broke."""
        return None

    def is_statement_timeout(self, orig: BaseException) -> bool | None:
        """Whether the server stopped a statement that ran out of time."""
        return None

    def is_unreachable(self, orig: BaseException) -> bool | None:
        """Whether the server could not be connected to at all."""
        return None

    def is_unstorable(self, orig: BaseException) -> bool | None:
        """Whether the server refused a value itself."""
        return None

    def is_schema_mismatch(self, orig: BaseException) -> bool | None:
        """Whether a statement named a table or column the database does
        not have."""
        return None

    def connect_failure(self, orig: BaseException) -> str | None:
        """Why a connection attempt failed, as one of the CONNECT_*
        kinds, or None if this is not its driver's failure to
        connect."""
        return None

    def claim_write_lock(self, connection: sa.Connection) -> None:
        """Make a write transaction queue for the database's write lock
        now (rows are locked as statements touch them: nothing to do)."""

    def migration_lock(self, connection: sa.Connection
                       ) -> ContextManager[None]:
        """Hold off concurrent schema upgrades of the database (none
        needed)."""
        return contextlib.nullcontext()

    def explicit_zero_ids(self, connection: sa.Connection
                          ) -> ContextManager[None]:
        """Let inserts store id 0 as given (they do)."""
        return contextlib.nullcontext()

    def among(self, column: Any) -> sa.ColumnElement[bool]:
        """``column`` is one of the ids bound as ``ids`` (id_list.among)."""
        raise NotImplementedError

    def id_reads(self, dialect: sa.engine.Dialect, statement: Any,
                 ids: list[int], params: dict[str, Any]) -> IdReads:
        """The (statement, parameters) reads that give the rows of
        ``statement`` (built with ``among``) for the sorted ``ids``."""
        raise NotImplementedError

    def packs(self, dialect: sa.engine.Dialect) -> bool:
        """Whether reads through ``dialect`` come packed (placement.db.
        packed): only where the driver decodes rows in Python."""
        return False

    def replica_lag(self, connection: sa.Connection, primary: sa.Engine,
                    bound: float) -> float:
        """Seconds the server behind ``connection`` is behind ``primary``
        (placement.db.replica.measure_lag): a server that replicates from
        nobody serves its own data."""
        return 0.0

    def collation_key(self, text: str) -> str:
        """What the database's own comparison of ``text`` sees: it as it
        is."""
        return text

    # Bulk loading (placement.db.bulk_load), into a database nothing else
    # uses yet.
    # Whether each batch is committed: a long transaction of millions of
    # rows would grow the server's undo or write-ahead logs.
    bulk_commits_each_batch = True

    def bulk_insert(self, connection: sa.Connection, table: sa.Table,
                    columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` (values of ``columns``, in order) into ``table``
        in as few round trips as the driver makes of an executemany (the
        MySQL drivers send multi-row INSERTs)."""
        connection.execute(table.insert(), [dict(zip(columns, row))
                                            for row in rows])

    def continue_ids(self, connection: sa.Connection,
                     last_ids: Mapping[str, int]) -> None:
        """Make the ids the database generates for the tables of
        ``last_ids`` follow the ids written there explicitly (they do:
        the next id is above the highest stored)."""

    def analyze(self, connection: sa.Connection,
                table_names: Sequence[str]) -> None:
        """Gather the planner's statistics of ``table_names`` now, on an
        autocommit ``connection`` (none to gather)."""

    def database_bytes(self, connection: sa.Connection) -> int:
        """The size of ``connection``'s database on disk, tables and
        indexes."""
        raise NotImplementedError


# Seconds between two polls of a replica catching up.
POLL = 0.01


def caught_up_within(reached: Callable[[], bool], bound: float) -> float:
    """Seconds until ``reached()`` is true, polled until just past
    ``bound``; the time waited (above ``bound``) if it never is."""
    started = time.monotonic()
    while True:
        waited = time.monotonic() - started
        if reached():
            return waited
        if waited > bound:
            return waited
        time.sleep(POLL)
