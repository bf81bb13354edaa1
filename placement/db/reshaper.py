"""Reshaping: new inventories for many providers and new allocations for
many consumers, in one transaction, e.g. to move VCPU inventory and the
instances' allocations of it from a compute node to a new child provider.

Inventory of a class cannot go while allocated, and allocations cannot
land on inventory that does not exist yet, so the inventories change in
two steps around the allocations: first each provider gets its old and
new inventories together, then the allocations are replaced, then each
provider's inventory becomes exactly the new one (refused if something
is still allocated from a class that goes).
"""
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import allocation as alloc_db
from placement.db import inventory as inventory_db
from placement.db import resource_provider as rp_db


class ProviderNotFound(exception.NotFound):
    """A provider whose inventories the request replaces does not exist."""

    def __init__(self, uuid: str, reason: str) -> None:
        super().__init__('Resource provider %s in inventories not found: %s'
                         % (uuid, reason))


class ProviderGenerationConflict(exception.PlacementError):
    """The client's view of a provider is stale (not worth a retry)."""

    def __init__(self, uuid: str, actual: int, given: int) -> None:
        super().__init__('resource provider generation conflict for '
                         'provider %s: actual: %s, given: %s'
                         % (uuid, actual, given))


def reshape(conn: sa.Connection,
            inventories: Mapping[str, tuple[int, dict[str, dict[str, Any]]]],
            requests: Sequence[alloc_db.ConsumerRequest]) -> None:
    """Apply ``inventories`` ({provider uuid: (generation the client saw,
    {class name: complete record})}) and the allocation.ConsumerRequests
    ``requests``, all or nothing.
    """
    # Every provider the reshape writes is locked first, in one go.
    plan = alloc_db.plan(conn, requests, also_lock=inventories)
    providers = []
    for uuid, (generation, records) in inventories.items():
        provider = plan.providers.get(uuid)
        if provider is None:
            raise ProviderNotFound(uuid, rp_db.NOT_FOUND % uuid)
        if provider['generation'] != generation:
            raise ProviderGenerationConflict(
                uuid, provider['generation'], generation)
        providers.append((provider, records))
    alloc_db.check(plan)

    generations: dict[int, int] = {}
    for provider, records in providers:
        if records:
            interim = {name: inventory_db.with_defaults(record)
                       for name, record in inventory_db.get_all(
                           conn, provider['id']).items()}
            interim.update(records)
            generations[provider['id']] = inventory_db.replace_all(
                conn, provider, interim, provider['generation'])
    generations.update(alloc_db.apply(conn, plan, generations))
    for provider, records in providers:
        inventory_db.replace_all(
            conn, provider, records,
            generations.get(provider['id'], provider['generation']))
