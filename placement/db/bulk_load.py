"""Rows written in bulk straight into an empty database.

A benchmark dataset of 100,000 providers would take half a million API
requests to load; this writes the rows the API would have written (ids,
generations, timestamps) in large batches instead, each backend its
fastest way (``Backend.bulk_insert``: COPY on PostgreSQL, multi-row
INSERTs on MariaDB, executemany on SQLite). Callers name tables by
string and give rows as tuples of the table's ``COLUMNS``, so that
nothing outside the data layer handles table objects. Nothing checks
the rows: the caller gives what the API would have stored, into a
database that nothing else writes to meanwhile.
"""
from collections.abc import Mapping
from collections.abc import Sequence
import datetime
from typing import Any

import sqlalchemy as sa

from placement.db import backends
from placement.db import tables

# Rows buffered before a Writer writes them all.
BATCH_ROWS = 50000

# The columns written, by table, in flush order: referenced rows first.
# Columns left out (updated_at of rows the API only inserts) stay NULL.
COLUMNS: dict[str, tuple[str, ...]] = {
    'placement_aggregates': ('id', 'uuid', 'created_at'),
    'resource_providers': ('id', 'uuid', 'name', 'generation',
                           'root_provider_id', 'parent_provider_id',
                           'created_at', 'updated_at'),
    'inventories': ('id', 'resource_provider_id', 'resource_class_id',
                    'total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                    'allocation_ratio', 'created_at'),
    'resource_provider_traits': ('trait_id', 'resource_provider_id',
                                 'created_at'),
    'resource_provider_aggregates': ('resource_provider_id', 'aggregate_id',
                                     'created_at'),
    'consumers': ('id', 'uuid', 'project_id', 'user_id', 'generation',
                  'consumer_type_id', 'created_at'),
    'allocations': ('id', 'resource_provider_id', 'consumer_id',
                    'resource_class_id', 'used', 'created_at'),
}

_RP = tables.resource_providers


class Writer:
    """Buffers rows by table and writes them all once ``batch_rows`` are
    waiting; hands out the ids of the tables that have one, so that rows
    can reference each other before they are written."""

    def __init__(self, conn: sa.Connection,
                 batch_rows: int = BATCH_ROWS) -> None:
        self.conn = conn
        self.batch_rows = batch_rows
        self._backend = backends.of(conn)
        self._buffers: dict[str, list[Sequence[Any]]] = {
            name: [] for name in COLUMNS}
        self._buffered = 0
        # Rows written, by table.
        self.written: dict[str, int] = {name: 0 for name in COLUMNS}
        # The last id handed out, by table with an id column.
        self.last_ids: dict[str, int] = {
            name: 0 for name, columns in COLUMNS.items() if 'id' in columns}

    def new_id(self, table: str) -> int:
        """The next id of ``table``: 1, 2, ... in an empty database."""
        self.last_ids[table] += 1
        return self.last_ids[table]

    def add(self, table: str, row: Sequence[Any]) -> None:
        """Buffer ``row``, the values of ``COLUMNS[table]`` in order."""
        self._buffers[table].append(row)
        self._buffered += 1

    def flush_if_full(self) -> None:
        """Write the buffered rows if there are a batch of them: called
        between whole units of rows, a batch never splits one."""
        if self._buffered >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        """Write every buffered row, referenced tables first; commit
        where the backend commits each batch."""
        for name, rows in self._buffers.items():
            if not rows:
                continue
            self._backend.bulk_insert(self.conn, tables.metadata.tables[name],
                                      COLUMNS[name], rows)
            self.written[name] += len(rows)
            rows.clear()
        self._buffered = 0
        if self._backend.bulk_commits_each_batch:
            self.conn.commit()

    def finish(self) -> None:
        """Write what is buffered, let the ids the database generates
        continue after those handed out, and commit."""
        self.flush()
        self._backend.continue_ids(self.conn, self.last_ids)
        self.conn.commit()


def add_to_generations(conn: sa.Connection, bumps: Mapping[int, int],
                       updated_at: datetime.datetime) -> None:
    """Add ``bumps`` ({provider id: n}) to the generations of providers
    already written: the requests that changed them after their rows were
    (allocations of consumers written later)."""
    if not bumps:
        return
    conn.execute(
        _RP.update().where(_RP.c.id == sa.bindparam('rp_id'))
        .values(generation=_RP.c.generation + sa.bindparam('bumps'),
                updated_at=updated_at),
        [{'rp_id': provider_id, 'bumps': n}
         for provider_id, n in bumps.items()])


def analyze(conn: sa.Connection) -> None:
    """Gather the planner's statistics now, rather than leave it to the
    server's background sampling in the middle of what follows. ``conn``
    is in autocommit mode: PostgreSQL VACUUMs outside transactions."""
    backends.of(conn).analyze(conn, [
        table.name for table in tables.metadata.sorted_tables])


def database_bytes(conn: sa.Connection) -> int:
    """The size of the database on disk (tables and indexes)."""
    return backends.of(conn).database_bytes(conn)
