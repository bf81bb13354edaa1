"""Resource classes: standard ones (read-only) and CUSTOM_* ones."""
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import rows
from placement.db import standard_sync
from placement.db import tables

_RC = tables.resource_classes


def list_all(conn: sa.Connection) -> list[dict[str, Any]]:
    return rows.dicts(conn.execute(
        sa.select(_RC.c.id, _RC.c.name, _RC.c.created_at, _RC.c.updated_at)
        .order_by(_RC.c.id)))


def get_by_name(conn: sa.Connection, name: str) -> dict[str, Any]:
    row = conn.execute(
        sa.select(_RC.c.id, _RC.c.name, _RC.c.created_at, _RC.c.updated_at)
        .where(_RC.c.name == name)).mappings().first()
    if row is None:
        raise exception.NotFound('No such resource class %s.' % name)
    return dict(row)


def ids_by_name(conn: sa.Connection, names: Sequence[str]) -> dict[str, int]:
    """Map names to ids; raise NotFound naming the first unknown one in
    ``names``' order (upstream resolves them one by one).
    """
    found: dict[str, int] = dict(conn.execute(
        sa.select(_RC.c.name, _RC.c.id)
        .where(_RC.c.name.in_(set(names)))).all())
    for name in names:
        if name not in found:
            raise exception.NotFound('No such resource class %s.' % name)
    return found


def is_standard(name: str) -> bool:
    return not name.startswith('CUSTOM_')


# A concurrent create can take the next id between our read of the
# highest id and our insert; each round reads it again. A lost round
# means another create succeeded, so this bounds how many may run at once.
_CREATE_ROUNDS = 64


def create(conn: sa.Connection, name: str) -> int:
    """Insert a custom class with the next free id from CUSTOM_RC_START."""
    for _ in range(_CREATE_ROUNDS):
        if _exists(conn, name):
            raise exception.Duplicate(name)
        next_id = conn.execute(
            sa.select(sa.func.max(_RC.c.id))
            .where(_RC.c.id >= standard_sync.CUSTOM_RC_START)).scalar()
        next_id = (standard_sync.CUSTOM_RC_START if next_id is None
                   else next_id + 1)
        try:
            with conn.begin_nested():
                conn.execute(_RC.insert().values(id=next_id, name=name))
            return next_id
        except sa.exc.IntegrityError:
            # A concurrent writer took the name (seen on the next round)
            # or the id.
            continue
    raise exception.ConcurrentUpdate(exception.DATA_CHANGED)


def rename(conn: sa.Connection, name: str, new_name: str) -> None:
    row = get_by_name(conn, name)
    if is_standard(name):
        raise exception.Invalid(
            'Cannot update standard resource class %s' % name)
    # Renaming a class to its own name is a successful no-op.
    if new_name != name and _exists(conn, new_name):
        raise exception.Duplicate(new_name)
    try:
        conn.execute(
            _RC.update().where(_RC.c.id == row['id']).values(name=new_name))
    except sa.exc.IntegrityError:
        # The name was taken by a concurrent request since we looked.
        raise exception.Duplicate(new_name) from None


def delete(conn: sa.Connection, name: str) -> None:
    row = get_by_name(conn, name)
    if is_standard(name):
        raise exception.Invalid(
            'Cannot delete standard resource class %s.' % name)
    inv = tables.inventories
    used = conn.execute(sa.select(inv.c.id).where(
        inv.c.resource_class_id == row['id']).limit(1)).first()
    if used is not None:
        raise exception.InUse(
            'Cannot delete resource class %s. Class is in use in '
            'inventory.' % name)
    conn.execute(_RC.delete().where(_RC.c.id == row['id']))


def _exists(conn: sa.Connection, name: str) -> bool:
    return conn.execute(
        sa.select(_RC.c.id).where(_RC.c.name == name)).first() is not None
