"""Allocations: the amounts of providers' inventories consumers hold.

Writing them keeps Placement's core promise: however many processes
write at once, no request that increases the usage of a provider's
resource class beyond its capacity commits. ``plan`` locks the rows of
every provider a request allocates from, in one fixed order, BEFORE
anything is written or usage is read: any other writer of those
providers has either committed, and is counted, or waits for this
transaction to end. Claims therefore queue for the providers they share
instead of failing; each one bumps the generations of the providers it
allocates from, as upstream does. On SQLite, whose writers take turns,
wsgi.write claims the write lock first thing instead. (On a Galera
cluster a row lock holds on its own node only: a writer on another node
fails its certification instead, and the caller retries it.)

A request names, per consumer, its complete new set of allocations: they
replace whatever the consumer held. Failures raise (and so roll back the
caller's transaction) in upstream's order of checks:

- consumer.GenerationConflict: the client's consumer generation is stale;
- UnknownProvider: an allocation names a provider that does not exist;
- exception.NotFound: an unknown resource class;
- exception.Invalid: a class the provider has no inventory of, an amount
  breaking min_unit/max_unit/step_size, or capacity exceeded;
- exception.ConcurrentUpdate: a consumer changed under us, or a provider
  went away (the caller retries the whole transaction).
"""
import collections
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import consumer as consumer_db
from placement.db import inventory as inventory_db
from placement.db import resource_class as rc_db
from placement.db import resource_provider as rp_db
from placement.db import rows
from placement.db import tables

_ALLOC = tables.allocations
_RP = tables.resource_providers
_RC = tables.resource_classes
_INV = tables.inventories
_CONSUMER = tables.consumers
_PROJECT = tables.projects
_USER = tables.users
_TYPE = tables.consumer_types

# The consumer generation a request leaves unchecked (before 1.28).
UNCHECKED = object()

_INVALID_INVENTORY = "Inventory for '%s' on resource provider '%s' invalid."
_UNABLE = ("Unable to create allocation for '%s' on resource provider "
           "'%s'. The requested amount would %s.")


class UnknownProvider(exception.NotFound):
    """An allocation names a provider that does not exist."""

    def __init__(self, uuid: str) -> None:
        super().__init__("Allocation for resource provider '%s' that does "
                         "not exist." % uuid)


@dataclasses.dataclass
class ConsumerRequest:
    """The complete set of allocations one consumer asks for.

    ``resources`` is {provider uuid: {class name: amount}} in the order the
    request gave them (an empty dict removes the consumer's allocations).
    ``consumer_type`` None keeps the type a consumer has (none if new);
    ``generation`` is the one the client expects (None: a new consumer).
    """
    uuid: str
    resources: dict[str, dict[str, int]]
    project: str
    user: str
    consumer_type: str | None = None
    # An int, None or UNCHECKED.
    generation: object = UNCHECKED


@dataclasses.dataclass
class Plan:
    """What requests replace, read once their providers were locked."""
    requests: Sequence[ConsumerRequest]
    # uuid: existing consumer (see consumer.get_many)
    consumers: dict[str, dict[str, Any]]
    # uuid: {'id', 'uuid', 'generation'}, locked
    providers: dict[str, dict[str, Any]]
    # consumer uuid: [its allocations] (see _held)
    held: dict[str, list[dict[str, Any]]]


# The reads of GET /allocations/{uuid} and of a provider's allocations,
# built once: building a statement (and its cache key) costs more than
# running one of these. In the order written on MariaDB and MySQL
# (STRAIGHT_JOIN): the allocations of the one consumer or provider
# first. MariaDB, whose index statistics lag behind a table that grew,
# otherwise may start from the resource classes and read every
# allocation of each (a provider's ten allocations took 13.5 ms at
# 1,000 nodes, 2.9 ms in another run of the same benchmark).
_OF_CONSUMER = (
    sa.select(_RP.c.uuid.label('provider_uuid'),
              _RP.c.generation.label('provider_generation'),
              _RC.c.name.label('resource_class'), _ALLOC.c.used,
              _ALLOC.c.created_at, _ALLOC.c.updated_at)
    .select_from(
        _ALLOC.join(_RP, _ALLOC.c.resource_provider_id == _RP.c.id)
        .join(_RC, _ALLOC.c.resource_class_id == _RC.c.id))
    .where(_ALLOC.c.consumer_id == sa.bindparam('consumer_uuid'))
    .order_by(_ALLOC.c.id)
    .prefix_with('STRAIGHT_JOIN', dialect='mysql'))
_CONSUMER_OF_ALLOCATIONS = (
    sa.select(_PROJECT.c.external_id.label('project_id'),
              _USER.c.external_id.label('user_id'),
              _CONSUMER.c.generation.label('consumer_generation'),
              sa.func.coalesce(_TYPE.c.name, consumer_db.UNKNOWN_TYPE)
              .label('consumer_type'))
    .select_from(
        _CONSUMER
        .join(_PROJECT, _CONSUMER.c.project_id == _PROJECT.c.id)
        .join(_USER, _CONSUMER.c.user_id == _USER.c.id)
        .outerjoin(_TYPE, _CONSUMER.c.consumer_type_id == _TYPE.c.id))
    .where(_CONSUMER.c.uuid == sa.bindparam('consumer_uuid')))
_OF_PROVIDER = (
    sa.select(_ALLOC.c.consumer_id.label('consumer_uuid'),
              _CONSUMER.c.generation.label('consumer_generation'),
              _RC.c.name.label('resource_class'), _ALLOC.c.used,
              _ALLOC.c.created_at, _ALLOC.c.updated_at)
    .select_from(
        _ALLOC.join(_RC, _ALLOC.c.resource_class_id == _RC.c.id)
        .outerjoin(_CONSUMER, _ALLOC.c.consumer_id == _CONSUMER.c.uuid))
    .where(_ALLOC.c.resource_provider_id == sa.bindparam('provider_id'))
    .order_by(_ALLOC.c.id)
    .prefix_with('STRAIGHT_JOIN', dialect='mysql'))


def for_consumer(conn: sa.Connection, consumer_uuid: str
                 ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(allocations, consumer) of GET /allocations/{uuid}.

    Allocations are dicts (provider_uuid, provider_generation,
    resource_class, used, timestamps) in creation order; the consumer
    (project_id, user_id, consumer_generation, consumer_type) is None
    without allocations.
    """
    params = {'consumer_uuid': consumer_uuid}
    allocations = rows.dicts(conn.execute(_OF_CONSUMER, params))
    if not allocations:
        return allocations, None
    consumer = conn.execute(
        _CONSUMER_OF_ALLOCATIONS, params).mappings().first()
    return allocations, None if consumer is None else dict(consumer)


def for_provider(conn: sa.Connection,
                 provider_id: int) -> list[dict[str, Any]]:
    """Allocations against a provider: dicts (consumer_uuid,
    consumer_generation, resource_class, used, timestamps) in creation
    order.
    """
    return rows.dicts(conn.execute(_OF_PROVIDER, {'provider_id': provider_id}))


def delete_for_consumer(conn: sa.Connection, consumer_uuid: str) -> None:
    """Remove a consumer and its allocations; NotFound if it has none.

    The consumer row goes first: its lock makes a concurrent rewrite of
    this consumer finish before we look for allocations to delete (or
    fail on the vanished row), so no allocation outlives its consumer.
    Provider generations stay as they are, as upstream leaves them:
    freeing capacity cannot break anyone's capacity check.
    """
    consumer_db.delete(conn, [consumer_uuid])
    deleted = conn.execute(
        _ALLOC.delete().where(_ALLOC.c.consumer_id == consumer_uuid))
    if not deleted.rowcount:
        raise exception.NotFound(
            "No allocations for consumer '%s'" % consumer_uuid)


def write(conn: sa.Connection, requests: Sequence[ConsumerRequest]) -> None:
    """Replace the allocations of the requests' consumers, all or none."""
    apply(conn, check(plan(conn, requests)))


def plan(conn: sa.Connection, requests: Sequence[ConsumerRequest],
         also_lock: Iterable[str] = ()) -> Plan:
    """Read what the requests replace and lock the providers they write,
    with those of ``also_lock`` (uuids) in the same go.

    A request allocates from the providers it names; one that asks for
    nothing releases what its consumer holds, bumping those providers.
    """
    uuids = [r.uuid for r in requests]
    # Consumers before their allocations: a consumer rewritten after this
    # read fails its generation bump later, so what is held stays true.
    consumers = consumer_db.get_many(conn, uuids)
    held = _held(conn, uuids)
    written = set(also_lock)
    for request in requests:
        written.update(request.resources or (
            row['uuid'] for row in held.get(request.uuid, ())))
    return Plan(requests, consumers, rp_db.lock(conn, written), held)


def check(plan: Plan) -> Plan:
    """Check consumer generations and providers consumer by consumer, as
    upstream does (GenerationConflict, UnknownProvider); return the plan.
    """
    for request in plan.requests:
        if request.generation is not UNCHECKED:
            consumer_db.check_generation(
                plan.consumers.get(request.uuid), request.generation)
        for provider_uuid in request.resources:
            if provider_uuid not in plan.providers:
                raise UnknownProvider(provider_uuid)
    return plan


def apply(conn: sa.Connection, plan: Plan,
          generations: Mapping[int, int] | None = None) -> dict[int, int]:
    """Write a checked plan's allocations in the caller's transaction;
    return the new generations of the providers allocated from ({id:
    generation}).

    ``generations`` ({provider id: generation}) overrides what the plan
    read, for a caller that bumped some providers since (the reshaper).
    """
    requests = plan.requests
    class_ids = rc_db.ids_by_name(conn, [
        name for r in requests for resources in r.resources.values()
        for name in resources])
    _save_consumers(conn, plan)

    wanted = _wanted(plan, class_ids)
    if not wanted:
        return {}
    generations = generations or {}
    bumped = rp_db.bump_generations(conn, {
        item.provider['id']: generations.get(
            item.provider['id'], item.provider['generation'])
        for item in wanted})
    uuids = [r.uuid for r in requests]
    conn.execute(_ALLOC.delete().where(_ALLOC.c.consumer_id.in_(uuids)))
    _check_capacity(conn, wanted, plan.held)
    rows = [{'consumer_id': item.consumer, 'resource_provider_id':
             item.provider['id'], 'resource_class_id': item.class_id,
             'used': item.amount} for item in wanted if item.amount]
    if rows:
        conn.execute(_ALLOC.insert(), rows)
    # A consumer whose allocations are all gone goes with them.
    consumer_db.delete(conn, [r.uuid for r in requests
                              if not r.resources and r.uuid in plan.held])
    return bumped


@dataclasses.dataclass
class _Item:
    """One allocation a request asks for (amount 0: one it removes)."""
    consumer: str
    provider: dict[str, Any]
    class_id: int
    class_name: str
    amount: int


def _held(conn: sa.Connection,
          consumer_uuids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """{consumer uuid: [its allocations]} with provider and class."""
    held = collections.defaultdict(list)
    for row in rows.dicts(conn.execute(
            sa.select(_ALLOC.c.consumer_id, _ALLOC.c.resource_class_id,
                      _ALLOC.c.used, _RC.c.name.label('class_name'),
                      _RP.c.id, _RP.c.uuid, _RP.c.generation)
            .select_from(
                _ALLOC.join(_RP, _ALLOC.c.resource_provider_id == _RP.c.id)
                .join(_RC, _ALLOC.c.resource_class_id == _RC.c.id))
            .where(_ALLOC.c.consumer_id.in_(consumer_uuids))
            .order_by(_ALLOC.c.id))):
        held[row['consumer_id']].append(row)
    return held


def _save_consumers(conn: sa.Connection, plan: Plan) -> None:
    """Create or update the consumer rows: owners and generations.

    In uuid order, so that concurrent writers lock consumers in the same
    order. A new consumer asking for nothing is still created (with
    generation 0), as upstream does.
    """
    owners = {}
    for request in sorted(plan.requests, key=lambda r: r.uuid):
        key = (request.project, request.user, request.consumer_type)
        if key not in owners:
            owners[key] = (
                consumer_db.ensure_project(conn, request.project),
                consumer_db.ensure_user(conn, request.user),
                None if request.consumer_type is None else
                consumer_db.ensure_type(conn, request.consumer_type))
        project_id, user_id, type_id = owners[key]
        consumer = plan.consumers.get(request.uuid)
        if consumer is None:
            consumer_db.create(conn, request.uuid, project_id, user_id,
                               type_id, 1 if request.resources else 0)
            continue
        if type_id is None:
            type_id = consumer['consumer_type_id']
        consumer_db.set_owner(conn, consumer, project_id, user_id, type_id)
        if request.resources or request.uuid in plan.held:
            consumer_db.increment_generation(conn, consumer)


def _wanted(plan: Plan, class_ids: Mapping[str, int]) -> list[_Item]:
    """The allocations to check and write, in upstream's order: each
    consumer's, provider by provider; a consumer asking for nothing
    contributes its current allocations with amount 0.
    """
    wanted: list[_Item] = []
    for request in plan.requests:
        if not request.resources:
            wanted.extend(
                _Item(request.uuid, plan.providers[row['uuid']],
                      row['resource_class_id'], row['class_name'], 0)
                for row in plan.held.get(request.uuid, ()))
            continue
        for provider_uuid, resources in request.resources.items():
            provider = plan.providers[provider_uuid]
            wanted.extend(
                _Item(request.uuid, provider, class_ids[name], name, amount)
                for name, amount in resources.items())
    return wanted


def _check_capacity(conn: sa.Connection, wanted: Sequence[_Item],
                    held: Mapping[str, list[dict[str, Any]]]) -> None:
    """Raise Invalid unless every wanted allocation fits its inventory.

    Run after the requests' consumers' old allocations are deleted, so a
    consumer's own old amounts are free for its new ones. As upstream, an
    amount that does not increase the usage of its (provider, class)
    beyond what it was before the request is accepted even when the
    inventory shrank below that usage.
    """
    provider_ids = {item.provider['id'] for item in wanted}
    # A set of ids, as upstream, fixes the order of the names in the
    # message below.
    class_ids = set()
    names = {}
    for item in wanted:
        class_ids.add(item.class_id)
        names[item.class_id] = item.class_name
    inventories = _inventories(conn, provider_ids, class_ids)
    used = _usage(conn, provider_ids, class_ids)
    freed: collections.Counter[tuple[int, int]] = collections.Counter()
    for consumer_rows in held.values():
        for row in consumer_rows:
            freed[row['id'], row['resource_class_id']] += row['used']

    stocked = {provider_id for provider_id, _ in inventories}
    missing = list(dict.fromkeys(
        item.provider['uuid'] for item in wanted
        if item.provider['id'] not in stocked))
    if missing:
        raise exception.Invalid(_INVALID_INVENTORY % (
            ', '.join(names[i] for i in class_ids), ', '.join(missing)))

    asked: collections.Counter[tuple[int, int]] = collections.Counter()
    for item in wanted:
        if not item.amount:
            continue
        key = (item.provider['id'], item.class_id)
        inventory = inventories.get(key)
        if inventory is None:
            raise exception.Invalid(_INVALID_INVENTORY % (
                item.class_name, item.provider['uuid']))
        if (item.amount < inventory['min_unit']
                or item.amount > inventory['max_unit']
                or item.amount % inventory['step_size']):
            raise exception.Invalid(_UNABLE % (
                item.class_name, item.provider['uuid'],
                'violate inventory constraints'))
        asked[key] += item.amount
        usage = used[key] + asked[key]
        if (usage > inventory_db.record_capacity(inventory)
                and usage > used[key] + freed[key]):
            raise exception.Invalid(_UNABLE % (
                item.class_name, item.provider['uuid'],
                'exceed the capacity'))


def _inventories(conn: sa.Connection, provider_ids: Iterable[int],
                 class_ids: Iterable[int]
                 ) -> dict[tuple[int, int], dict[str, Any]]:
    return {(row['resource_provider_id'], row['resource_class_id']):
            row for row in rows.dicts(conn.execute(
                sa.select(_INV.c.resource_provider_id,
                          _INV.c.resource_class_id,
                          *(_INV.c[f] for f in inventory_db.FIELDS))
                .where(_INV.c.resource_provider_id.in_(provider_ids))
                .where(_INV.c.resource_class_id.in_(class_ids))))}


def _usage(conn: sa.Connection, provider_ids: Iterable[int],
           class_ids: Iterable[int]) -> collections.Counter[tuple[int, int]]:
    return collections.Counter({
        (provider_id, class_id): int(total) for provider_id, class_id, total
        in conn.execute(
            sa.select(_ALLOC.c.resource_provider_id,
                      _ALLOC.c.resource_class_id, sa.func.sum(_ALLOC.c.used))
            .where(_ALLOC.c.resource_provider_id.in_(provider_ids))
            .where(_ALLOC.c.resource_class_id.in_(class_ids))
            .group_by(_ALLOC.c.resource_provider_id,
                      _ALLOC.c.resource_class_id))})
