"""Traits: the os-traits standard set (read-only) and CUSTOM_* ones."""
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import rows
from placement.db import tables

_T = tables.traits
_RPT = tables.resource_provider_traits


def list_all(conn: sa.Connection, names: Collection[str] | None = None,
             prefix: str | None = None,
             associated: bool | None = None) -> list[dict[str, Any]]:
    """Traits ordered by name, filtered as GET /traits allows."""
    query = sa.select(_T.c.name, _T.c.created_at, _T.c.updated_at)
    if names is not None:
        query = query.where(_T.c.name.in_(names))
    if prefix is not None:
        # As upstream, "_" and "%" in the prefix act as LIKE wildcards.
        query = query.where(_T.c.name.startswith(prefix))
    if associated is not None:
        in_use = sa.select(_RPT.c.trait_id).distinct()
        query = query.where(
            _T.c.id.in_(in_use) if associated else _T.c.id.not_in(in_use))
    return rows.dicts(conn.execute(query.order_by(_T.c.name)))


def get_by_name(conn: sa.Connection, name: str) -> dict[str, Any]:
    row = conn.execute(
        sa.select(_T.c.id, _T.c.name, _T.c.created_at, _T.c.updated_at)
        .where(_T.c.name == name)).mappings().first()
    if row is None:
        raise exception.NotFound('No such trait(s): %s.' % name)
    return dict(row)


def ensure(conn: sa.Connection, name: str) -> bool:
    """Create the trait if it is missing; return True if it was created."""
    if exists(conn, name):
        return False
    try:
        with conn.begin_nested():
            conn.execute(_T.insert().values(name=name))
    except sa.exc.IntegrityError:
        # Created by a concurrent request in the meantime.
        return False
    return True


def delete(conn: sa.Connection, name: str) -> None:
    row = get_by_name(conn, name)
    if not name.startswith('CUSTOM_'):
        raise exception.Invalid('Cannot delete standard trait %s.' % name)
    used = conn.execute(sa.select(_RPT.c.trait_id).where(
        _RPT.c.trait_id == row['id']).limit(1)).first()
    if used is not None:
        raise exception.InUse(
            'The trait %s is in use by a resource provider.' % name)
    conn.execute(_T.delete().where(_T.c.id == row['id']))


def exists(conn: sa.Connection, name: str) -> bool:
    return conn.execute(
        sa.select(_T.c.id).where(_T.c.name == name)).first() is not None


def ids_by_name(conn: sa.Connection,
                names: Collection[str]) -> dict[str, int]:
    """Map names to ids; NotFound lists unknown names in request order."""
    found: dict[str, int] = dict(conn.execute(
        sa.select(_T.c.name, _T.c.id)
        .where(_T.c.name.in_(sorted(set(names))))).all())
    missing = [name for name in dict.fromkeys(names) if name not in found]
    if missing:
        raise exception.NotFound('No such trait %s' % ', '.join(missing))
    return found
