"""Consistency audit of placement data (``placement-manage audit``).

Findings, each one set-based query:

- providers whose usage of a class exceeds its capacity (after an
  inventory or allocation ratio change): reported only, never "fixed";
- allocations against a class the provider has no inventory of any more:
  reported only (removing part of a consumer's allocations would be worse);
- consumers without allocations;
- consumers holding allocations that are not in the list of consumers
  that really exist (given by the operator).

The repairs delete one consumer per transaction and only if it is exactly
as the audit saw it (same generation, same allocations); otherwise they
raise Changed and leave it alone. Deleting allocations bumps the
generation of every provider they were against, as any allocation write
does, so a concurrent writer working from the old state fails and
retries.
"""
from collections.abc import Iterable
import dataclasses
import uuid as uuidlib

import sqlalchemy as sa

from placement import exception
from placement.db import inventory as inventory_db
from placement.db import resource_provider as rp_db
from placement.db import tables

_ALLOC = tables.allocations
_INV = tables.inventories
_RP = tables.resource_providers
_RC = tables.resource_classes
_CONSUMER = tables.consumers
_PROJECT = tables.projects
_USER = tables.users

# Consumer uuids per IN list: far below any backend's bind limit.
_CHUNK = 1000


class Changed(exception.ConcurrentUpdate):
    """The consumer changed since the audit saw it: not repaired."""

    def __init__(self, consumer_uuid: str) -> None:
        super().__init__('consumer %s changed since the audit'
                         % consumer_uuid)


@dataclasses.dataclass
class OverCapacity:
    provider_uuid: str
    provider_name: str
    resource_class: str
    used: int
    capacity: int
    total: int
    reserved: int
    allocation_ratio: float


@dataclasses.dataclass
class Allocation:
    """One allocation row, with its provider and class by name; the
    provider and class names are None if their rows are gone.
    """
    consumer_uuid: str
    provider_id: int
    provider_uuid: str | None
    provider_name: str | None
    resource_class: str | None
    used: int


@dataclasses.dataclass
class Consumer:
    """A consumer as the audit saw it; ``id`` and ``generation`` are None
    for allocations whose consumer row is missing (written before
    consumers existed).
    """
    uuid: str
    id: int | None = None
    generation: int | None = None
    project: str | None = None
    user: str | None = None
    allocations: list[Allocation] = dataclasses.field(default_factory=list)


def over_capacity(conn: sa.Connection) -> list[OverCapacity]:
    """Inventories whose allocations add up to more than their capacity,
    by provider id and class id.
    """
    used = sa.func.sum(_ALLOC.c.used)
    rows = conn.execute(
        sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name, _RC.c.id, _RC.c.name,
                  _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
                  used)
        .select_from(
            _INV.join(_ALLOC, sa.and_(
                _ALLOC.c.resource_provider_id == _INV.c.resource_provider_id,
                _ALLOC.c.resource_class_id == _INV.c.resource_class_id))
            .join(_RP, _RP.c.id == _INV.c.resource_provider_id)
            .join(_RC, _RC.c.id == _INV.c.resource_class_id))
        .group_by(_RP.c.id, _RP.c.uuid, _RP.c.name, _RC.c.id, _RC.c.name,
                  _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio)
        # A cheap filter; the capacity as allocation writes compute it
        # decides below.
        .having(used + 1 > (_INV.c.total - _INV.c.reserved)
                * _INV.c.allocation_ratio)
        .order_by(_RP.c.id, _RC.c.id))
    found = []
    for _rp, uuid, name, _rc, rc_name, total, reserved, ratio, usage in rows:
        capacity = inventory_db.capacity(total, reserved, ratio)
        if usage > capacity:
            found.append(OverCapacity(uuid, name, rc_name, int(usage),
                                      capacity, total, reserved, ratio))
    return found


def _allocations() -> sa.Select:
    """Allocation rows with provider and class names (outer joins: an
    allocation may outlive them in a damaged database).
    """
    return (sa.select(_ALLOC.c.consumer_id, _ALLOC.c.resource_provider_id,
                      _RP.c.uuid, _RP.c.name, _RC.c.name, _ALLOC.c.used)
            .select_from(
                _ALLOC
                .outerjoin(_RP, _RP.c.id == _ALLOC.c.resource_provider_id)
                .outerjoin(_RC, _RC.c.id == _ALLOC.c.resource_class_id)))


def allocations_without_inventory(conn: sa.Connection) -> list[Allocation]:
    """Allocations of a class their provider has no inventory of."""
    rows = conn.execute(
        _allocations()
        .outerjoin(_INV, sa.and_(
            _INV.c.resource_provider_id == _ALLOC.c.resource_provider_id,
            _INV.c.resource_class_id == _ALLOC.c.resource_class_id))
        .where(_INV.c.id.is_(None))
        .order_by(_ALLOC.c.resource_provider_id, _ALLOC.c.id))
    return [Allocation(*row) for row in rows]


def _consumers() -> sa.Select:
    """Consumer rows as Consumer takes them, with project and user."""
    return (sa.select(_CONSUMER.c.uuid, _CONSUMER.c.id,
                      _CONSUMER.c.generation, _PROJECT.c.external_id,
                      _USER.c.external_id)
            .select_from(
                _CONSUMER
                .outerjoin(_PROJECT, _PROJECT.c.id == _CONSUMER.c.project_id)
                .outerjoin(_USER, _USER.c.id == _CONSUMER.c.user_id)))


def empty_consumers(conn: sa.Connection) -> list[Consumer]:
    """Consumers that hold no allocation."""
    rows = conn.execute(
        _consumers()
        .where(~sa.exists().where(_ALLOC.c.consumer_id == _CONSUMER.c.uuid))
        .order_by(_CONSUMER.c.id))
    return [Consumer(*row) for row in rows]


def _uuid_key(value: str) -> str:
    """Uuids compare in canonical lower-case form (with or without
    dashes, as clients may write them).
    """
    try:
        return str(uuidlib.UUID(value.strip()))
    except ValueError:
        return value.strip().lower()


def orphaned_consumers(conn: sa.Connection,
                       existing: Iterable[str]) -> list[Consumer]:
    """Consumers holding allocations whose uuid is not in ``existing``
    (consumer uuids that really exist), with their allocations.
    """
    known = {_uuid_key(uuid) for uuid in existing}
    holders = conn.execute(
        sa.select(_ALLOC.c.consumer_id).distinct()).scalars()
    orphans = sorted(uuid for uuid in holders if _uuid_key(uuid) not in known)
    found = {}
    for start in range(0, len(orphans), _CHUNK):
        chunk = orphans[start:start + _CHUNK]
        for row in conn.execute(
                _consumers().where(_CONSUMER.c.uuid.in_(chunk))):
            found[row[0]] = Consumer(*row)
        for row in conn.execute(
                _allocations().where(_ALLOC.c.consumer_id.in_(chunk))
                .order_by(_ALLOC.c.id)):
            consumer = found.setdefault(row[0], Consumer(row[0]))
            consumer.allocations.append(Allocation(*row))
    return [found[uuid] for uuid in orphans]


def delete_orphaned_consumer(conn: sa.Connection, consumer: Consumer) -> None:
    """Delete ``consumer`` (from ``orphaned_consumers``) and its
    allocations, in the caller's transaction; Changed unless it is still
    exactly as the audit saw it.
    """
    if consumer.id is not None:
        # The consumer row first: a concurrent rewrite of this consumer
        # then either finished before (its generation moved) or waits.
        deleted = conn.execute(
            _CONSUMER.delete().where(_CONSUMER.c.id == consumer.id)
            .where(_CONSUMER.c.generation == consumer.generation))
        if deleted.rowcount != 1:
            raise Changed(consumer.uuid)
    providers = sorted({a.provider_id for a in consumer.allocations})
    generations: dict[int, int] = dict(conn.execute(
        sa.select(_RP.c.id, _RP.c.generation)
        .where(_RP.c.id.in_(providers))).all())
    # In id order, as allocation writes lock providers.
    for provider_id in providers:
        if provider_id in generations:
            rp_db.increment_generation(
                conn, provider_id, generations[provider_id])
    current = conn.execute(
        _allocations().where(_ALLOC.c.consumer_id == consumer.uuid)
        .order_by(_ALLOC.c.id)).all()
    if [Allocation(*row) for row in current] != consumer.allocations:
        raise Changed(consumer.uuid)
    conn.execute(_ALLOC.delete().where(
        _ALLOC.c.consumer_id == consumer.uuid))


def delete_empty_consumer(conn: sa.Connection, consumer: Consumer) -> None:
    """Delete ``consumer`` (from ``empty_consumers``) in the caller's
    transaction; Changed if it has allocations or a new generation now.
    """
    deleted = conn.execute(
        _CONSUMER.delete().where(_CONSUMER.c.id == consumer.id)
        .where(_CONSUMER.c.generation == consumer.generation)
        .where(~sa.exists().where(_ALLOC.c.consumer_id == consumer.uuid)))
    if deleted.rowcount != 1:
        raise Changed(consumer.uuid)
