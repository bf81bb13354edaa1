"""Cloud-wide capacity per resource class, for the metrics endpoint.

One aggregate statement per scrape: inventories and allocations are each
summed by class (both tables have a resource class index) and joined to
the class names.
"""
import dataclasses

import sqlalchemy as sa

from placement.db import tables

_INV = tables.inventories
_ALLOC = tables.allocations
_RC = tables.resource_classes


@dataclasses.dataclass(frozen=True)
class ClassCapacity:
    resource_class: str
    total: int
    reserved: int
    # Sum over providers of (total - reserved) * allocation_ratio.
    capacity: float
    used: int


def by_resource_class(conn: sa.Connection) -> list[ClassCapacity]:
    """A ClassCapacity for every class some provider has inventory of."""
    inventory = (
        sa.select(
            _INV.c.resource_class_id,
            sa.func.sum(_INV.c.total).label('total'),
            sa.func.sum(_INV.c.reserved).label('reserved'),
            sa.func.sum((_INV.c.total - _INV.c.reserved)
                        * _INV.c.allocation_ratio).label('capacity'))
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
