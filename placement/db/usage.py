"""Usages: sums of allocated amounts, per provider or per project/user."""
from typing import Any

import sqlalchemy as sa

from placement.db import tables

_ALLOC = tables.allocations
_INV = tables.inventories
_RC = tables.resource_classes
_CONSUMER = tables.consumers
_TYPE = tables.consumer_types

# Consumer type filters with a meaning of their own (from 1.38):
# everything under one key, or the consumers that have no type.
ALL = 'all'
UNKNOWN = 'unknown'


def by_provider(conn: sa.Connection, provider_id: int) -> dict[str, int]:
    """{class name: used} for every class the provider has inventory of,
    zero when nothing is allocated.
    """
    rows = conn.execute(
        sa.select(_RC.c.name, sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0))
        .select_from(
            _INV.join(_RC, _INV.c.resource_class_id == _RC.c.id)
            .outerjoin(_ALLOC, sa.and_(
                _ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
                _ALLOC.c.resource_class_id == _INV.c.resource_class_id)))
        .where(_INV.c.resource_provider_id == provider_id)
        .group_by(_RC.c.id, _RC.c.name)
        .order_by(_RC.c.id))
    return {name: int(used) for name, used in rows}


def by_project(conn: sa.Connection, project_id: str,
               user_id: str | None = None) -> dict[str, int]:
    """{class name: used} over the consumers of a project (and user)."""
    rows = conn.execute(
        _project_query(project_id, user_id,
                       _RC.c.name, sa.func.sum(_ALLOC.c.used))
        .group_by(_RC.c.id, _RC.c.name)
        .order_by(_RC.c.id))
    return {name: int(used) for name, used in rows}


def by_consumer_type(conn: sa.Connection, project_id: str,
                     user_id: str | None = None,
                     consumer_type: str | None = None
                     ) -> dict[str, dict[str, int]]:
    """{consumer type: {class name: used, 'consumer_count': n}} over the
    consumers of a project (and user).

    Consumers without a type count as ``unknown``. ``consumer_type``
    keeps one type; ``all`` sums every consumer under the key ``all``.
    """
    def query(*columns: sa.ColumnElement[Any]) -> sa.Select:
        q = _project_query(project_id, user_id, _TYPE.c.name, *columns)
        if consumer_type == UNKNOWN:
            q = q.where(_CONSUMER.c.consumer_type_id.is_(None))
        elif consumer_type not in (None, ALL):
            q = q.where(_TYPE.c.name == consumer_type)
        return q

    def key(type_name: str | None) -> str:
        if consumer_type == ALL:
            return ALL
        return UNKNOWN if type_name is None else type_name

    usages: dict[str, dict[str, int]] = {}
    rows = conn.execute(
        query(_RC.c.name, sa.func.sum(_ALLOC.c.used))
        .group_by(_TYPE.c.name, _RC.c.id, _RC.c.name)
        .order_by(_RC.c.id))
    for type_name, class_name, used in rows:
        usage = usages.setdefault(key(type_name), {})
        usage[class_name] = usage.get(class_name, 0) + int(used)
    # Counted apart from the sums, where a consumer of several classes
    # would count several times; each consumer has one type, so the
    # per-type counts add up to the ``all`` one.
    counts = conn.execute(
        query(sa.func.count(_ALLOC.c.consumer_id.distinct()))
        .group_by(_TYPE.c.name))
    for type_name, count in counts:
        usage = usages[key(type_name)]
        usage['consumer_count'] = usage.get('consumer_count', 0) + count
    return usages


def _project_query(project_id: str, user_id: str | None,
                   *columns: sa.ColumnElement[Any]) -> sa.Select:
    joins = (
        _ALLOC.join(_RC, _ALLOC.c.resource_class_id == _RC.c.id)
        .join(_CONSUMER, _ALLOC.c.consumer_id == _CONSUMER.c.uuid)
        .join(tables.projects, _CONSUMER.c.project_id == tables.projects.c.id)
        .outerjoin(_TYPE, _CONSUMER.c.consumer_type_id == _TYPE.c.id))
    query = sa.select(*columns).where(
        tables.projects.c.external_id == project_id)
    if user_id is not None:
        joins = joins.join(tables.users,
                           _CONSUMER.c.user_id == tables.users.c.id)
        query = query.where(tables.users.c.external_id == user_id)
    return query.select_from(joins)
