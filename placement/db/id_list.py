"""Statements about a list of ids, however long.

A list travels as its backend sends it (placement.db.backends): one
parameter where the backend takes one (a PostgreSQL array, a JSON array
that SQLite reads with json_each and MySQL with JSON_TABLE), else as
bound values in slices, or on MySQL as a range and a bitmap of it.
"""
from typing import Any
from typing import Iterable
from typing import Sequence

import sqlalchemy as sa

from placement.db import backends
from placement.db import packed


def among(column: Any, backend: backends.Backend) -> sa.ColumnElement[bool]:
    """``column`` is one of the ids bound as ``ids``, as ``backend``
    takes a list; ``rows_among`` sends them."""
    return backend.among(column)


def rows_among(conn: sa.Connection, statement: Any, ids: Iterable[int],
               params: dict[str, Any] | None = None,
               kinds: Sequence[packed.Kind] | None = None,
               ordered: bool = False) -> Sequence[Any]:
    """All rows of ``statement`` (built with ``among``) for ``ids``; read
    packed through PyMySQL when the ``kinds`` of its columns are given
    (see placement.db.packed, and its ``ordered``)."""
    ids = sorted(ids)
    if not ids:
        return []
    reads = backends.of(conn).id_reads(conn.dialect, statement, ids,
                                       params or {})
    rows: list[Any] = []
    for read, read_params in reads:
        rows += _rows(conn, read, read_params, kinds, ordered)
    return rows


def _rows(conn, statement, params, kinds, ordered):
    if kinds is None:
        return conn.execute(statement, params).all()
    return packed.rows(conn, statement, kinds, params, ordered)
