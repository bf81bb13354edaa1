"""Statements about a list of ids, however long.

A list travels as one parameter where the backend takes one (a
PostgreSQL array, a JSON array that SQLite reads with json_each), else
as bound values in slices that keep within MySQL's limits.
"""
import json

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from placement.db import packed

# Ids per statement where they are bound one by one.
_SLICE = 5000


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
    return column.in_(sa.bindparam('ids', expanding=True))


def rows_among(conn, statement, ids, params=None, kinds=None):
    """All rows of ``statement`` (built with ``among``) for ``ids``; read
    packed through PyMySQL when the ``kinds`` of its columns are given
    (see placement.db.packed: then in no particular order)."""
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
    rows = []
    for start in range(0, len(ids), _SLICE):
        sliced = dict(params, ids=ids[start:start + _SLICE])
        if kinds is None:
            rows += conn.execute(statement, sliced).all()
        else:
            rows += packed.rows(conn, statement, kinds, sliced)
    return rows
