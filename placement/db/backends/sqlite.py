"""SQLite: one file (or memory) and a single write lock.

The sqlite3 module's own transaction handling is taken away (it never
BEGINs before a SELECT and breaks SAVEPOINTs); every transaction BEGINs
explicitly. "database is locked" is the transient error: writers
collided on the write lock. Lists of ids travel as one JSON array read
with json_each.

A file on this host is never frozen or cut off, but another process
(a second service, a tool, a backup) may hold its lock: how long a
transaction waits for it (SQLite's busy timeout) is set at each BEGIN to
what is left of the request's deadline (placement.db.watchdog), so that
a write queued behind that lock ends with the deadline's 503 instead of
waiting on.
"""
import json
import math
import os
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import pool

from placement.db import watchdog
from placement.db.backends import base

# How long a transaction without a deadline waits for the lock.
_BUSY_TIMEOUT_MS = 30000


class SQLite(base.Backend):
    """SQLite through Python's sqlite3 module."""
    names = frozenset({'sqlite'})
    # A scan's usage looked up row by row costs SQLite no more.
    usage_by_join = False
    # Without statistics SQLite would walk the class index (most of the
    # table) rather than look the few trees or providers up.
    avoid_class_index = True

    def create_engine(self, url: sa.engine.URL, opts: Any,
                      timeout: float) -> sa.Engine:
        """An engine whose connections wait for the write lock, enforce
        foreign keys and (on a file) use write-ahead logging; an
        in-memory database is one shared connection, or every checkout
        would see an empty database. A file on this host is never frozen
        or cut off: ``timeout`` only bounds the wait for its lock, as
        the request's deadline does."""
        kwargs: dict[str, Any] = {'pool_pre_ping': True}
        in_memory = url.database in (None, '', ':memory:')
        if in_memory:
            kwargs.update(poolclass=pool.StaticPool,
                          connect_args={'check_same_thread': False})
        engine = sa.create_engine(url, **kwargs)
        pragmas = ['PRAGMA foreign_keys = ON']
        if not in_memory:
            pragmas.append('PRAGMA journal_mode = WAL')
        if not getattr(opts, 'sqlite_synchronous', True):
            pragmas.append('PRAGMA synchronous = OFF')
        _take_transaction_control(engine, pragmas, timeout)
        return engine

    def is_transient(self, orig: BaseException) -> bool | None:
        """"database is locked": another writer holds the lock."""
        if type(orig).__module__ != 'sqlite3':
            return None
        return 'locked' in str(orig).lower()

    def is_schema_mismatch(self, orig: BaseException) -> bool | None:
        """"no such table", "no such column"."""
        if type(orig).__module__ != 'sqlite3':
            return None
        return str(orig).startswith(('no such table', 'no such column'))

    def connect_failure(self, orig: BaseException) -> str | None:
        """"unable to open database file": no such directory, or no
        right to it."""
        if type(orig).__module__ != 'sqlite3':
            return None
        if 'unable to open database file' in str(orig):
            return base.CONNECT_UNOPENABLE
        return None

    def claim_write_lock(self, connection: sa.Connection) -> None:
        """A SQLite transaction that reads before it writes cannot wait
        for the lock later: if another writer committed since its first
        read, SQLite refuses at once ("database is locked") instead of
        waiting the busy timeout. A write that matches no row still takes
        the lock."""
        connection.exec_driver_sql(
            'UPDATE resource_providers SET generation = generation WHERE 0')

    def among(self, column: Any) -> sa.ColumnElement[bool]:
        """The ids as one JSON array, read with json_each."""
        return column.in_(sa.select(sa.column('value', sa.Integer))
                          .select_from(sa.func.json_each(
                              sa.bindparam('ids', type_=sa.String))))

    def id_reads(self, dialect: sa.engine.Dialect, statement: Any,
                 ids: list[int], params: dict[str, Any]) -> base.IdReads:
        """One read, the ids bound as one JSON array."""
        return [(statement, dict(params, ids=json.dumps(ids)))]

    # A bulk load is one transaction: SQLite writes it to the file once.
    bulk_commits_each_batch = False

    def database_bytes(self, connection: sa.Connection) -> int:
        """The database file and its write-ahead log."""
        path = connection.engine.url.database or ''
        return sum(os.path.getsize(path + suffix) for suffix in ('', '-wal')
                   if path and os.path.exists(path + suffix))


def _busy_timeout_ms(timeout: float) -> int:
    """Milliseconds the next transaction may wait for the lock: what is
    left of the current deadline, else ``timeout`` (the engine's), else
    _BUSY_TIMEOUT_MS."""
    left = watchdog.remaining()
    if left == float('inf') and timeout > 0:
        left = timeout
    if left == float('inf'):
        return _BUSY_TIMEOUT_MS
    return max(0, min(_BUSY_TIMEOUT_MS, math.ceil(left * 1000)))


def _take_transaction_control(engine: sa.Engine, pragmas: list[str],
                              timeout: float) -> None:
    """Run ``pragmas`` on each new connection of ``engine``, and BEGIN
    every transaction explicitly, waiting for the lock no longer than
    its deadline (or ``timeout``) allows."""
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
        conn.exec_driver_sql(
            'PRAGMA busy_timeout = %d' % _busy_timeout_ms(timeout))
        conn.exec_driver_sql('BEGIN')


BACKEND = SQLite()
