"""Usages: sums of allocated amounts, per provider or per project/user."""
from collections.abc import Callable
import functools
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


# Built once: building a statement (and its cache key) costs more than
# running this one.
_OF_PROVIDER = (
    sa.select(_RC.c.name, sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0))
    .select_from(
        _INV.join(_RC, _INV.c.resource_class_id == _RC.c.id)
        .outerjoin(_ALLOC, sa.and_(
            _ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
            _ALLOC.c.resource_class_id == _INV.c.resource_class_id)))
    .where(_INV.c.resource_provider_id == sa.bindparam('provider_id'))
    .group_by(_RC.c.id, _RC.c.name)
    .order_by(_RC.c.id))


def by_provider(conn: sa.Connection, provider_id: int) -> dict[str, int]:
    """{class name: used} for every class the provider has inventory of,
    zero when nothing is allocated.
    """
    rows = conn.execute(_OF_PROVIDER, {'provider_id': provider_id})
    return {name: int(used) for name, used in rows}


def by_project(conn: sa.Connection, project_id: str,
               user_id: str | None = None) -> dict[str, int]:
    """{class name: used} over the consumers of a project (and user)."""
    rows = conn.execute(_project_sums(user_id is not None, None, False),
                        _project_params(project_id, user_id))
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
    def key(type_name: str | None) -> str:
        if consumer_type == ALL:
            return ALL
        return UNKNOWN if type_name is None else type_name

    by_user = user_id is not None
    kept = None if consumer_type in (None, ALL) else (
        UNKNOWN if consumer_type == UNKNOWN else 'named')
    params = _project_params(project_id, user_id)
    params['consumer_type'] = consumer_type
    usages: dict[str, dict[str, int]] = {}
    for type_name, class_name, used in conn.execute(
            _project_sums(by_user, kept, True), params):
        usage = usages.setdefault(key(type_name), {})
        usage[class_name] = usage.get(class_name, 0) + int(used)
    # Counted apart from the sums, where a consumer of several classes
    # would count several times; each consumer has one type, so the
    # per-type counts add up to the ``all`` one.
    for type_name, count in conn.execute(
            _project_consumer_counts(by_user, kept), params):
        usage = usages[key(type_name)]
        usage['consumer_count'] = usage.get('consumer_count', 0) + count
    return usages


def _project_params(project_id: str, user_id: str | None) -> dict[str, Any]:
    return {'project_id': project_id, 'user_id': user_id}


# The statements of GET /usages, one per shape (by user or not, kept
# types, by type or not), built once with bound parameters: building one
# took as long as running it. Both go from the project's consumers to
# their allocations (MariaDB, whose index statistics lag behind a table
# that grew, otherwise read every allocation of the cloud, by resource
# class or all of them), and sum by ids: the names are joined to the few
# sums, not to every allocation (a fifth of the time at 10,000 nodes).

@functools.cache
def _project_sums(by_user: bool, kept: str | None,
                  by_type: bool) -> sa.Select:
    """Used amounts by class (and consumer type) of the allocations of
    the project's (and user's) consumers."""
    keys: list[sa.ColumnElement[Any]] = [
        _ALLOC.c.resource_class_id.label('rc_id')]
    if by_type:
        keys.insert(0, _CONSUMER.c.consumer_type_id.label('type_id'))
    sums = _of_project_consumers(
        sa.select(*keys, sa.func.sum(_ALLOC.c.used).label('used')),
        _with_allocations,
        by_user, kept).group_by(*keys).subquery('sums')
    named = sums.join(_RC, _RC.c.id == sums.c.rc_id)
    columns: list[sa.ColumnElement[Any]] = [_RC.c.name, sums.c.used]
    if by_type:
        named = named.outerjoin(_TYPE, _TYPE.c.id == sums.c.type_id)
        columns.insert(0, _TYPE.c.name)
    return sa.select(*columns).select_from(named).order_by(_RC.c.id)


@functools.cache
def _project_consumer_counts(by_user: bool, kept: str | None) -> sa.Select:
    """Consumers of the project (and user) holding allocations, by type:
    counted apart from the sums, where a consumer of several classes
    would count once per class. Through the same join as the sums, on
    the allocations' consumer index alone: MariaDB runs a probe per
    consumer as a subquery each, two and a half times as long."""
    type_id = _CONSUMER.c.consumer_type_id.label('type_id')
    counts = _of_project_consumers(
        sa.select(type_id,
                  sa.func.count(_CONSUMER.c.id.distinct()).label('consumers')),
        _with_allocations,
        by_user, kept).group_by(type_id).subquery('counts')
    return sa.select(_TYPE.c.name, counts.c.consumers).select_from(
        counts.outerjoin(_TYPE, _TYPE.c.id == counts.c.type_id))


def _with_allocations(consumers: sa.FromClause) -> sa.FromClause:
    return consumers.join(_ALLOC, _ALLOC.c.consumer_id == _CONSUMER.c.uuid)


def _of_project_consumers(
        query: sa.Select,
        joined: Callable[[sa.FromClause], sa.FromClause],
        by_user: bool, kept: str | None) -> sa.Select:
    """``query`` from the project's (and user's) consumers, joined by
    ``joined`` to what it reads of them: those of ``:project_id`` (and
    ``:user_id``) of the kept type (``unknown``: none; ``named``:
    ``:consumer_type``). In the order written on MariaDB and MySQL
    (STRAIGHT_JOIN): the project's consumers first."""
    consumers: sa.FromClause = tables.projects.join(
        _CONSUMER, _CONSUMER.c.project_id == tables.projects.c.id)
    query = query.where(
        tables.projects.c.external_id == sa.bindparam('project_id'))
    if by_user:
        consumers = consumers.join(
            tables.users, _CONSUMER.c.user_id == tables.users.c.id)
        query = query.where(
            tables.users.c.external_id == sa.bindparam('user_id'))
    if kept == UNKNOWN:
        query = query.where(_CONSUMER.c.consumer_type_id.is_(None))
    elif kept is not None:
        query = query.where(_CONSUMER.c.consumer_type_id == (
            sa.select(_TYPE.c.id)
            .where(_TYPE.c.name == sa.bindparam('consumer_type'))
            .scalar_subquery()))
    return query.select_from(joined(consumers)).prefix_with(
        'STRAIGHT_JOIN', dialect='mysql')
