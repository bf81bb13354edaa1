"""Statements about a list of ids, however long.

A list travels as one parameter where the backend takes one (a
PostgreSQL array, a JSON array that SQLite reads with json_each and
MySQL with JSON_TABLE), else (MariaDB before 10.6, MySQL before 8.0.4)
as bound values in slices that keep within MySQL's limits. Bound one by
one, 3,000 ids cost PyMySQL 10-15 ms of escaping and the server more to
parse; as one JSON array, 1 ms.

On MySQL a list that fills an eighth or more of the span between its
lowest and highest id travels as that range and a bitmap of it instead:
the server scans the range on the column's index and tests each row's
bit, where it would otherwise look each id of the list up on its own.
For the 1,000 trees of a batch that read is 2-4 ms shorter; for the
members of those trees, a third of the time.
"""
import json
from typing import Any
import weakref

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression
from sqlalchemy.sql import visitors

from placement.db import packed

# Ids per statement where they are bound one by one.
_SLICE = 5000
# A list sent as a range and bitmap on MySQL spans at most this many
# ids for each of its own (below that, looking each up is no slower),
# and the bitmap is at most this many bytes.
_SPAN_PER_ID = 8
_BITMAP_BYTES = 2 ** 20


def among(column, dialect):
    """``column`` is one of the ids bound as ``ids``: one parameter where
    the backend takes a list (a PostgreSQL array, a JSON array in SQLite),
    else an expanded list, sent in slices by ``rows_among``.
    """
    if dialect == 'postgresql':
        return column == sa.any_(
            sa.bindparam('ids', type_=postgresql.ARRAY(sa.Integer)))
    if dialect == 'sqlite':
        return column.in_(sa.select(sa.column('value', sa.Integer))
                          .select_from(sa.func.json_each(
                              sa.bindparam('ids', type_=sa.String))))
    return _AmongIds(column)


def _json_table(dialect):
    """Whether the MySQL or MariaDB server behind ``dialect`` has
    JSON_TABLE."""
    version = dialect.server_version_info or ()
    return version >= ((10, 6) if dialect.is_mariadb else (8, 0, 4))


class _AmongIds(expression.ColumnElement[bool]):
    """MySQL: ``column`` is one of the ids bound as ``ids``, read from a
    JSON array by JSON_TABLE where the server has it, else expanded; or,
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

    def __init__(self, column, in_range=False):
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
    if not _json_table(sql_compiler.dialect):
        return sql_compiler.process(
            element.column.in_(sa.bindparam('ids', expanding=True)), **kw)
    return "%s IN (SELECT id_list.id FROM JSON_TABLE(%s, '$[*]' COLUMNS " \
        "(id BIGINT PATH '$')) AS id_list)" % (
            sql_compiler.process(element.column, **kw),
            sql_compiler.process(sa.bindparam('ids', type_=sa.String),
                                 **kw))


def rows_among(conn, statement, ids, params=None, kinds=None,
               ordered=False):
    """All rows of ``statement`` (built with ``among``) for ``ids``; read
    packed through PyMySQL when the ``kinds`` of its columns are given
    (see placement.db.packed, and its ``ordered``)."""
    ids = sorted(ids)
    if not ids:
        return []
    params = params or {}
    dialect = conn.dialect.name
    if dialect == 'postgresql':
        return conn.execute(statement, dict(params, ids=ids)).all()
    if dialect == 'sqlite':
        return conn.execute(statement,
                            dict(params, ids=json.dumps(ids))).all()
    low, high = ids[0], ids[-1]
    span = high - low + 1
    if span <= min(len(ids) * _SPAN_PER_ID, _BITMAP_BYTES):
        bits = bytearray(b'0') * span
        for ident in ids:
            bits[ident - low] = 0x31  # '1'
        return _rows(conn, _in_range(statement),
                     dict(params, ids_low=low, ids_high=high,
                          ids_bits=bytes(bits)), kinds, ordered)
    if _json_table(conn.dialect):
        return _rows(conn, statement, dict(params, ids=json.dumps(ids)),
                     kinds, ordered)
    rows = []
    for start in range(0, len(ids), _SLICE):
        rows += _rows(conn, statement,
                      dict(params, ids=ids[start:start + _SLICE]), kinds,
                      ordered)
    return rows


_RANGED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _in_range(statement):
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


def _rows(conn, statement, params, kinds, ordered):
    if kinds is None:
        return conn.execute(statement, params).all()
    return packed.rows(conn, statement, kinds, params, ordered)
