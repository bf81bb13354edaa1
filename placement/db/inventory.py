"""Inventories: how much of each resource class a provider offers.

Every change bumps the provider's generation in the same transaction (a
conditional UPDATE, see ``resource_provider.increment_generation``), so a
writer working from a stale view of the provider fails as a whole and
writes nothing.

An inventory record is a dict with the fields of ``FIELDS``; the functions
here take records with every field present (see ``with_defaults``).
"""
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import logging
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import resource_class as rc_db
from placement.db import resource_provider as rp_db
from placement.db import rows
from placement.db import tables

LOG = logging.getLogger(__name__)

_INV = tables.inventories
_ALLOC = tables.allocations
_RC = tables.resource_classes

MAX_INT = 0x7FFFFFFF
# Largest single-precision float: MySQL stores allocation_ratio as FLOAT.
MAX_FLOAT = 3.40282e+38

FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')
DEFAULTS = {
    'reserved': 0,
    'min_unit': 1,
    'max_unit': MAX_INT,
    'step_size': 1,
    'allocation_ratio': 1.0,
}


class NoSuchInventory(exception.NotFound):
    """The provider has no inventory of a (known) resource class."""


class InvalidInventory(exception.Invalid):
    """An inventory record nothing could be allocated from; upstream's
    answer names the provider (``provider_uuid``) as stored.
    """

    def __init__(self, provider_uuid: str, message: str) -> None:
        super().__init__(message)
        self.provider_uuid = provider_uuid


def with_defaults(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The record of ``fields`` (a request body may carry other keys),
    those left out set to their defaults.
    """
    return {field: fields.get(field, DEFAULTS.get(field))
            for field in FIELDS}


def capacity(total: int, reserved: int, ratio: float) -> int:
    """Usable amount: what is not reserved, scaled by the ratio, as
    upstream reports and finally checks it (in Python, on the ratio as
    the database driver returns it).
    """
    return int((total - reserved) * ratio)


def record_capacity(record: Mapping[str, Any]) -> int:
    """``capacity`` of an inventory record."""
    return capacity(record['total'], record['reserved'],
                    record['allocation_ratio'])


def check_record(provider_uuid: str, resource_class: str,
                 record: Mapping[str, Any],
                 reserved_may_equal_total: bool) -> None:
    """Raise InvalidInventory unless the inventory leaves something to
    allocate.

    Before microversion 1.26 a capacity of zero is refused too, so
    ``reserved_may_equal_total`` is the request's version being >= 1.26.
    """
    check_units(provider_uuid, resource_class, record)
    usable = record_capacity(record)
    if reserved_may_equal_total:
        if usable >= 0:
            return
        problem = 'greater than total'
    else:
        if usable > 0:
            return
        problem = 'greater than or equal to total'
    raise InvalidInventory(provider_uuid, (
        "Invalid inventory for '%s' on resource provider '%s'. The reserved "
        "value is %s." % (resource_class, provider_uuid, problem)))


def check_units(provider_uuid: str, resource_class: str,
                record: Mapping[str, Any]) -> None:
    """Raise InvalidInventory if no amount meets min_unit, max_unit and
    step_size at once (upstream stores such an inventory; nothing can use
    it).
    """
    low, high, step = (record['min_unit'], record['max_unit'],
                       record['step_size'])
    if low > high:
        problem = 'min_unit (%d) is greater than max_unit (%d)' % (low, high)
    elif -(-low // step) * step > high:
        problem = ('no multiple of step_size (%d) lies between min_unit '
                   '(%d) and max_unit (%d)' % (step, low, high))
    else:
        return
    raise InvalidInventory(provider_uuid, (
        "Invalid inventory for '%s' on resource provider '%s': %s, so "
        "nothing could ever be allocated from it."
        % (resource_class, provider_uuid, problem)))


# Built once (see resource_provider._BY_UUID).
_OF_PROVIDER = (
    sa.select(_RC.c.name, *(_INV.c[f] for f in FIELDS),
              _INV.c.created_at, _INV.c.updated_at)
    .select_from(_INV.join(_RC, _INV.c.resource_class_id == _RC.c.id))
    .where(_INV.c.resource_provider_id == sa.bindparam('provider_id'))
    .order_by(_INV.c.resource_class_id))


def get_all(conn: sa.Connection,
            provider_id: int) -> dict[str, dict[str, Any]]:
    """The provider's inventory records (with timestamps) by class name."""
    records = rows.dicts(conn.execute(
        _OF_PROVIDER, {'provider_id': provider_id}))
    return {record.pop('name'): record for record in records}


def add(conn: sa.Connection, provider: Mapping[str, Any], resource_class: str,
        record: Mapping[str, Any]) -> int:
    """Add an inventory of a class the provider has none of yet.

    ``provider`` is a row of ``resource_provider.get_by_uuid``; its
    generation is the one expected. Returns the new generation.
    Raises NotFound (unknown class), Duplicate, ConcurrentUpdate.
    """
    class_id = _class_ids(conn, [resource_class])[resource_class]
    if class_id in _current_class_ids(conn, provider['id']):
        raise exception.Duplicate(_duplicate_message(provider, resource_class))
    generation = rp_db.increment_generation(
        conn, provider['id'], provider['generation'])
    try:
        conn.execute(_INV.insert(), [_row(provider, class_id, record)])
    except sa.exc.IntegrityError:
        # A concurrent request added it since we looked.
        raise exception.Duplicate(_duplicate_message(provider, resource_class))
    return generation


def update(conn: sa.Connection, provider: Mapping[str, Any],
           resource_class: str, record: Mapping[str, Any],
           expected_generation: int) -> int:
    """Replace the provider's inventory of one class.

    Shrinking below what is allocated is allowed (and logged), as upstream
    does. Returns the new generation. Raises NotFound (unknown class),
    NoSuchInventory, ConcurrentUpdate.
    """
    class_id = _class_ids(conn, [resource_class])[resource_class]
    if class_id not in _current_class_ids(conn, provider['id']):
        raise NoSuchInventory(
            'No inventory of class %s found.' % resource_class)
    generation = rp_db.increment_generation(
        conn, provider['id'], expected_generation)
    _update_rows(conn, provider, {class_id: (resource_class, record)})
    return generation


def delete(conn: sa.Connection, provider: Mapping[str, Any],
           resource_class: str) -> int:
    """Remove the provider's inventory of one class if nothing uses it.

    Returns the new generation. Raises NotFound (unknown class),
    NoSuchInventory, InUse, ConcurrentUpdate.
    """
    class_id = _class_ids(conn, [resource_class])[resource_class]
    if class_id not in _current_class_ids(conn, provider['id']):
        raise NoSuchInventory(
            'No inventory of class %s found for delete' % resource_class)
    _refuse_if_allocated(conn, provider, [class_id])
    generation = rp_db.increment_generation(
        conn, provider['id'], provider['generation'])
    _delete_rows(conn, provider['id'], [class_id])
    return generation


def replace_all(conn: sa.Connection, provider: Mapping[str, Any],
                inventories: Mapping[str, Mapping[str, Any]],
                expected_generation: int, check_in_use: bool = True) -> int:
    """Make ``inventories`` ({class name: record}) the provider's whole
    inventory, in the caller's transaction. Returns the new generation.

    Classes left out are removed. With ``check_in_use`` (the default),
    removing a class that has allocations on the provider raises InUse and
    nothing is written. A caller that rewrites allocations in the same
    transaction (POST /reshaper) passes ``check_in_use=False`` and calls
    ``ensure_allocations_covered(conn, provider)`` once the new allocations
    are written, so that the check sees what will be committed.

    Capacity below current usage is allowed (and logged), as upstream does.
    Raises NotFound (unknown class, the first one in ``inventories``'
    order), InUse, ConcurrentUpdate (``expected_generation`` is stale).
    """
    wanted = _class_ids(conn, list(inventories))
    current = _current_class_ids(conn, provider['id'])
    removed = sorted(current - set(wanted.values()))
    if removed and check_in_use:
        _refuse_if_allocated(conn, provider, removed)
    generation = rp_db.increment_generation(
        conn, provider['id'], expected_generation)
    if removed:
        _delete_rows(conn, provider['id'], removed)
    added = [_row(provider, wanted[name], record)
             for name, record in inventories.items()
             if wanted[name] not in current]
    if added:
        conn.execute(_INV.insert(), added)
    changed = {wanted[name]: (name, record)
               for name, record in inventories.items()
               if wanted[name] in current}
    if changed:
        _update_rows(conn, provider, changed)
    return generation


def ensure_allocations_covered(conn: sa.Connection,
                               provider: Mapping[str, Any]) -> None:
    """Raise InUse if the provider has allocations of a class it has no
    inventory of: the deferred form of ``replace_all``'s in-use check.
    """
    allocated = set(conn.execute(
        sa.select(_ALLOC.c.resource_class_id).distinct()
        .where(_ALLOC.c.resource_provider_id == provider['id'])).scalars())
    uncovered = allocated - _current_class_ids(conn, provider['id'])
    if uncovered:
        _refuse_if_allocated(conn, provider, sorted(uncovered))


def _refuse_if_allocated(conn: sa.Connection, provider: Mapping[str, Any],
                         class_ids: Iterable[int]) -> None:
    names = conn.execute(
        sa.select(_RC.c.name)
        .select_from(_ALLOC.join(_RC, _ALLOC.c.resource_class_id == _RC.c.id))
        .where(_ALLOC.c.resource_provider_id == provider['id'])
        .where(_ALLOC.c.resource_class_id.in_(class_ids))
        .group_by(_RC.c.id, _RC.c.name)
        .order_by(_RC.c.id)).scalars().all()
    if names:
        raise exception.InUse(
            "Inventory for '%s' on resource provider '%s' in use."
            % (', '.join(names), provider['uuid']))


def _duplicate_message(provider: Mapping[str, Any],
                       resource_class: str) -> str:
    return ("Inventory for '%s' on resource provider '%s' already exists."
            % (resource_class, provider['uuid']))


def _class_ids(conn: sa.Connection, names: Sequence[str]) -> dict[str, int]:
    """Map class names to ids; an unknown one is reported in ``names``'
    order (upstream looks them up one by one).
    """
    try:
        return rc_db.ids_by_name(conn, names)
    except exception.NotFound:
        for name in names:
            rc_db.ids_by_name(conn, [name])
        raise


def _current_class_ids(conn: sa.Connection, provider_id: int) -> set[int]:
    return set(conn.execute(
        sa.select(_INV.c.resource_class_id)
        .where(_INV.c.resource_provider_id == provider_id)).scalars())


def _row(provider: Mapping[str, Any], class_id: int,
         record: Mapping[str, Any]) -> dict[str, Any]:
    return {'resource_provider_id': provider['id'],
            'resource_class_id': class_id,
            **{field: record[field] for field in FIELDS}}


def _update_rows(conn: sa.Connection, provider: Mapping[str, Any],
                 changed: Mapping[int, tuple[str, Mapping[str, Any]]]
                 ) -> None:
    """Rewrite the given {class id: (name, record)} inventories."""
    conn.execute(
        _INV.update()
        .where(_INV.c.resource_provider_id == sa.bindparam('rp_id'))
        .where(_INV.c.resource_class_id == sa.bindparam('rc_id'))
        .values({field: sa.bindparam('new_' + field) for field in FIELDS}),
        [{'rp_id': provider['id'], 'rc_id': class_id,
          **{'new_' + field: record[field] for field in FIELDS}}
         for class_id, (_name, record) in changed.items()])
    _warn_over_capacity(conn, provider, changed)


def _warn_over_capacity(conn: sa.Connection, provider: Mapping[str, Any],
                        changed: Mapping[int, tuple[str, Mapping[str, Any]]]
                        ) -> None:
    usages = conn.execute(
        sa.select(_ALLOC.c.resource_class_id, sa.func.sum(_ALLOC.c.used))
        .where(_ALLOC.c.resource_provider_id == provider['id'])
        .where(_ALLOC.c.resource_class_id.in_(list(changed)))
        .group_by(_ALLOC.c.resource_class_id)).all()
    for class_id, used in usages:
        name, record = changed[class_id]
        if used is not None and used > record_capacity(record):
            LOG.warning('Resource provider %s is now over-capacity for %s',
                        provider['uuid'], name)


def _delete_rows(conn: sa.Connection, provider_id: int,
                 class_ids: Iterable[int]) -> None:
    conn.execute(_INV.delete()
                 .where(_INV.c.resource_provider_id == provider_id)
                 .where(_INV.c.resource_class_id.in_(class_ids)))
