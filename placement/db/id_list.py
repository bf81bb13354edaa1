"""Statements about a list of ids, however long.

A list travels as one parameter where the backend takes one (a
PostgreSQL array, a JSON array that SQLite reads with json_each and
MySQL with JSON_TABLE), else (MariaDB before 10.6, MySQL before 8.0.4)
as bound values in slices that keep within MySQL's limits. Bound one by
one, 3,000 ids cost PyMySQL 10-15 ms of escaping and the server more to
parse; as one JSON array, 1 ms.
"""
import json

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression
from sqlalchemy.sql import visitors

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
    return _AmongIds(column)


def _json_table(dialect):
    """Whether the MySQL or MariaDB server behind ``dialect`` has
    JSON_TABLE."""
    version = dialect.server_version_info or ()
    return version >= ((10, 6) if dialect.is_mariadb else (8, 0, 4))


class _AmongIds(expression.ColumnElement[bool]):
    """MySQL: ``column`` is one of the ids bound as ``ids``, read from a
    JSON array by JSON_TABLE where the server has it, else expanded."""
    inherit_cache = True
    type = sa.Boolean()
    # A predicate: MySQL must not see it compared with 1 (which would
    # make the server scan every row for it).
    _is_implicitly_boolean = True
    _traverse_internals = [
        ('column', visitors.InternalTraversal.dp_clauseelement)]

    def __init__(self, column):
        self.column = column


@compiler.compiles(_AmongIds)
def _compile_among_ids(element, sql_compiler, **kw):
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
    if _json_table(conn.dialect):
        return _rows(conn, statement, dict(params, ids=json.dumps(ids)),
                     kinds, ordered)
    rows = []
    for start in range(0, len(ids), _SLICE):
        rows += _rows(conn, statement,
                      dict(params, ids=ids[start:start + _SLICE]), kinds,
                      ordered)
    return rows


def _rows(conn, statement, params, kinds, ordered):
    if kinds is None:
        return conn.execute(statement, params).all()
    return packed.rows(conn, statement, kinds, params, ordered)
