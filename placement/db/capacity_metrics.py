"""Capacity and usage read for the metrics endpoint.

Each function is one aggregate statement, whatever the number of
providers: inventories are read with the allocations summed by provider
and class (the allocations table has a covering index for that), and the
sums are joined to the names. Never through the API's per-provider reads,
which would cost a request per provider.
"""
import dataclasses

import sqlalchemy as sa

from placement.db import tables

_INV = tables.inventories
_ALLOC = tables.allocations
_RC = tables.resource_classes
_RP = tables.resource_providers
_AGG = tables.placement_aggregates
_RP_AGG = tables.resource_provider_aggregates


@dataclasses.dataclass(frozen=True)
class ClassCapacity:
    resource_class: str
    total: int
    reserved: int
    # Sum over providers of (total - reserved) * allocation_ratio.
    capacity: float
    used: int


@dataclasses.dataclass(frozen=True)
class ProviderCapacity:
    """One inventory of one provider, as its /inventories and /usages
    report it."""
    provider_name: str
    provider_uuid: str
    generation: int
    resource_class: str
    total: int
    reserved: int
    allocation_ratio: float
    used: int


@dataclasses.dataclass(frozen=True)
class AggregateCapacity:
    """Over the providers that are members of an aggregate (a provider in
    several aggregates counts in each)."""
    aggregate_uuid: str
    resource_class: str
    # Sum of (total - reserved) * allocation_ratio.
    capacity: float
    used: int


def _summed_capacity() -> sa.ColumnElement:
    """The allocatable amount of the inventories summed:
    (total - reserved) * allocation_ratio."""
    return sa.func.sum(
        (_INV.c.total - _INV.c.reserved) * _INV.c.allocation_ratio)


def by_resource_class(conn: sa.Connection) -> list[ClassCapacity]:
    """A ClassCapacity for every class some provider has inventory of."""
    inventory = (
        sa.select(
            _INV.c.resource_class_id,
            sa.func.sum(_INV.c.total).label('total'),
            sa.func.sum(_INV.c.reserved).label('reserved'),
            _summed_capacity().label('capacity'))
        .group_by(_INV.c.resource_class_id)
        .subquery())
    usage = (
        sa.select(_ALLOC.c.resource_class_id,
                  sa.func.sum(_ALLOC.c.used).label('used'))
        .group_by(_ALLOC.c.resource_class_id)
        .subquery())
    rows = conn.execute(
        sa.select(_RC.c.name, inventory.c.total, inventory.c.reserved,
                  inventory.c.capacity,
                  sa.func.coalesce(usage.c.used, 0))
        .select_from(
            inventory.join(_RC, _RC.c.id == inventory.c.resource_class_id)
            .outerjoin(usage, usage.c.resource_class_id
                       == inventory.c.resource_class_id))
        .order_by(_RC.c.name))
    return [ClassCapacity(name, int(total), int(reserved), float(capacity),
                          int(used))
            for name, total, reserved, capacity, used in rows]


def _provider_usage() -> sa.Subquery:
    """Allocated amount per provider and class."""
    return (
        sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id,
                  sa.func.sum(_ALLOC.c.used).label('used'))
        .group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id)
        .subquery())


def _with_usage(usage: sa.Subquery) -> sa.Join:
    """Inventories, their class and what is allocated of them (NULL for
    nothing)."""
    return (
        _INV.join(_RC, _RC.c.id == _INV.c.resource_class_id)
        .outerjoin(usage, sa.and_(
            usage.c.resource_provider_id == _INV.c.resource_provider_id,
            usage.c.resource_class_id == _INV.c.resource_class_id)))


def by_provider(conn: sa.Connection) -> list[ProviderCapacity]:
    """A ProviderCapacity for every inventory of every provider, by
    provider name and class name."""
    usage = _provider_usage()
    rows = conn.execute(
        sa.select(sa.func.coalesce(_RP.c.name, ''), _RP.c.uuid,
                  _RP.c.generation, _RC.c.name, _INV.c.total,
                  _INV.c.reserved, _INV.c.allocation_ratio,
                  sa.func.coalesce(usage.c.used, 0))
        .select_from(_with_usage(usage).join(
            _RP, _RP.c.id == _INV.c.resource_provider_id))
        .order_by(_RP.c.name, _RP.c.uuid, _RC.c.name))
    return [ProviderCapacity(name, uuid, int(generation or 0), class_name,
                             int(total), int(reserved), float(ratio),
                             int(used))
            for name, uuid, generation, class_name, total, reserved, ratio,
            used in rows]


def by_aggregate(conn: sa.Connection) -> list[AggregateCapacity]:
    """An AggregateCapacity for every aggregate and class some member has
    inventory of; aggregates without members are left out."""
    usage = _provider_usage()
    rows = conn.execute(
        sa.select(
            _AGG.c.uuid, _RC.c.name, _summed_capacity(),
            sa.func.sum(sa.func.coalesce(usage.c.used, 0)))
        .select_from(
            _with_usage(usage)
            .join(_RP_AGG, _RP_AGG.c.resource_provider_id
                  == _INV.c.resource_provider_id)
            .join(_AGG, _AGG.c.id == _RP_AGG.c.aggregate_id))
        .group_by(_AGG.c.uuid, _RC.c.name)
        .order_by(_AGG.c.uuid, _RC.c.name))
    return [AggregateCapacity(uuid, class_name, float(capacity), int(used))
            for uuid, class_name, capacity, used in rows]
