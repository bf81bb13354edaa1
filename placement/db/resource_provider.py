"""Resource providers: lookup, listing with filters, create, update (rename,
re-parent), delete, and the generation guard every write uses.
"""
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import functools
from typing import Any

import sqlalchemy as sa

from placement import exception
from placement.db import backends
from placement.db import id_list
from placement.db import packed
from placement.db import rows
from placement.db import tables

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RPT = tables.resource_provider_traits
_RPA = tables.resource_provider_aggregates

# Largest value of the Integer columns (generation, amounts) on every
# backend: a request beyond it can match no row.
DB_MAX_INT = 0x7FFFFFFF

GENERATION_CONFLICT = (
    "Resource provider's generation already changed. Please update the "
    "generation and try again.")

# Client-facing reasons for refusing a create or an update; the API puts
# "Unable to create/save resource provider ...: " in front.
_CREATE_FAILED = 'Object action create failed because: '
_UPDATE_FAILED = 'Object action update failed because: '
NAME_REQUIRED = _CREATE_FAILED + 'name is required'
PARENT_IS_SELF = _CREATE_FAILED + (
    'parent provider UUID cannot be same as UUID. Please set parent '
    'provider UUID to None if there is no parent.')
# Upstream says "create" for this one on updates too.
PARENT_MISSING = _CREATE_FAILED + 'parent provider UUID does not exist.'
REPARENT_REFUSED = _UPDATE_FAILED + (
    're-parenting a provider is not currently allowed.')
UNPARENT_REFUSED = _UPDATE_FAILED + (
    'un-parenting a provider is not currently allowed.')
LOOP_REFUSED = _UPDATE_FAILED + (
    'creating loop in the provider tree is not allowed.')

# ``update``'s parent_uuid default: leave the parent alone.
KEEP_PARENT = object()


class HasAllocations(exception.InUse):
    """Delete refused: something is allocated against the provider."""


class HasChildren(exception.InUse):
    """Delete refused: the provider is the parent of others."""


@functools.cache
def _select() -> sa.Select:
    """Provider rows with their parent's and root's uuids (built once:
    statements are immutable, and building this one took a third of a
    small read's time)."""
    parent = _RP.alias('parent')
    root = _RP.alias('root')
    return (
        sa.select(_RP.c.id, _RP.c.uuid, _RP.c.name, _RP.c.generation,
                  _RP.c.parent_provider_id, _RP.c.root_provider_id,
                  _RP.c.created_at, _RP.c.updated_at,
                  parent.c.uuid.label('parent_provider_uuid'),
                  root.c.uuid.label('root_provider_uuid'))
        .select_from(
            _RP.outerjoin(parent, _RP.c.parent_provider_id == parent.c.id)
            .outerjoin(root, _RP.c.root_provider_id == root.c.id)))


# Statements of the small reads every provider request makes are built
# once, with bound parameters: building one (and its cache key) took
# longer than executing it.
_BY_UUID = _select().where(_RP.c.uuid == sa.bindparam('uuid'))


def _find(conn: sa.Connection, uuid: str) -> dict[str, Any] | None:
    row = conn.execute(_BY_UUID, {'uuid': uuid}).mappings().first()
    return None if row is None else dict(row)


NOT_FOUND = 'No resource provider with uuid %s found'


def get_by_uuid(conn: sa.Connection, uuid: str) -> dict[str, Any]:
    """The provider row (with parent/root uuids) or NotFound."""
    row = _find(conn, uuid)
    if row is None:
        raise exception.NotFound(NOT_FOUND % uuid)
    return row


def increment_generation(conn: sa.Connection, provider_id: int,
                         expected_generation: int) -> int:
    """Bump the generation iff it is still ``expected_generation``.

    A conditional UPDATE inside the caller's transaction: whichever writer
    commits first wins, across processes and hosts, and the loser's whole
    transaction is rolled back by raising ConcurrentUpdate.
    """
    if not 0 <= expected_generation < DB_MAX_INT:
        raise exception.ConcurrentUpdate(GENERATION_CONFLICT)
    result = conn.execute(
        _RP.update()
        .where(_RP.c.id == provider_id)
        .where(_RP.c.generation == expected_generation)
        .values(generation=expected_generation + 1))
    if result.rowcount != 1:
        raise exception.ConcurrentUpdate(GENERATION_CONFLICT)
    return expected_generation + 1


def confirm_generation(conn: sa.Connection, provider_id: int,
                       expected_generation: int) -> None:
    """Raise ConcurrentUpdate unless the provider's generation is still
    ``expected_generation``, read under a row lock: a write that changes
    nothing succeeds only if nobody wrote the provider since its caller
    read it (a concurrent writer either committed, and is seen, or waits).
    """
    generation = conn.execute(
        sa.select(_RP.c.generation).where(_RP.c.id == provider_id)
        .with_for_update()).scalar()
    if generation != expected_generation:
        raise exception.ConcurrentUpdate(GENERATION_CONFLICT)


def lock(conn: sa.Connection,
         uuids: Collection[str]) -> dict[str, dict[str, Any]]:
    """{uuid: {'id', 'uuid', 'generation'}} of the providers among
    ``uuids``, their rows locked until the caller's transaction ends.

    Whoever else writes one of them has committed (and what it wrote is
    seen from here on) or waits for this transaction: writers queue
    instead of failing. Rows are locked in one order, uuid order, by
    every caller that locks several, so that they cannot deadlock.
    (SQLite has no row locks: its writers take the database's write lock
    first.)
    """
    if not uuids:
        return {}
    locked = rows.dicts(conn.execute(
        sa.select(_RP.c.id, _RP.c.uuid, _RP.c.generation)
        .where(_RP.c.uuid.in_(sorted(uuids)))
        .order_by(_RP.c.uuid)
        # PostgreSQL: FOR NO KEY UPDATE, which lets children be created.
        .with_for_update(key_share=True)))
    return {row['uuid']: row for row in locked}


def bump_generations(conn: sa.Connection,
                     generations: Mapping[int, int]) -> dict[int, int]:
    """Add one to the generation of the providers of ``generations`` ({id:
    current generation}), which the caller has locked (``lock``); return
    {id: new generation}.
    """
    if any(generation >= DB_MAX_INT for generation in generations.values()):
        raise exception.ConcurrentUpdate(GENERATION_CONFLICT)
    conn.execute(_RP.update().where(_RP.c.id.in_(sorted(generations)))
                 .values(generation=_RP.c.generation + 1))
    return {provider_id: generation + 1
            for provider_id, generation in generations.items()}


def linked_ids(conn: sa.Connection, table: sa.Table, column: sa.Column[Any],
               provider_id: int) -> set[int]:
    """The set of ``column`` values the provider has in link ``table``
    (resource_provider_traits, resource_provider_aggregates).
    """
    return set(conn.execute(
        sa.select(column).where(table.c.resource_provider_id == provider_id)
    ).scalars())


def relink(conn: sa.Connection, table: sa.Table, column: sa.Column[Any],
           provider_id: int, current: set[int], wanted: set[int]) -> None:
    """Turn the provider's links from the set ``current`` into ``wanted``."""
    removed = current - wanted
    if removed:
        conn.execute(table.delete()
                     .where(table.c.resource_provider_id == provider_id)
                     .where(column.in_(sorted(removed))))
    added = wanted - current
    if added:
        conn.execute(table.insert(), [
            {'resource_provider_id': provider_id, column.name: linked_id}
            for linked_id in sorted(added)])


def list_all(conn: sa.Connection, name: str | None = None,
             uuid: str | None = None,
             ids: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """Providers (rows as ``get_by_uuid``) with the ``name``, ``uuid`` and
    among the ``ids`` given, in id order.
    """
    params = {'name': name, 'uuid': uuid}
    query = _list_statement(backends.of(conn), name is not None,
                            uuid is not None, ids is not None)
    if ids is None:
        found = packed.rows(conn, query, _ROW_KINDS, params, ordered=True)
    else:
        found = id_list.rows_among(conn, query, ids, params,
                                   kinds=_ROW_KINDS, ordered=True)
    keys = [column.key for column in query.selected_columns]
    return [dict(zip(keys, row)) for row in found]


@functools.lru_cache(maxsize=16)
def _list_statement(backend, by_name, by_uuid, by_ids):
    """list_all's statement, built once per shape: a packed read caches
    its form by the statement's identity."""
    query = _select()
    if by_name:
        query = query.where(_RP.c.name == sa.bindparam('name'))
    if by_uuid:
        query = query.where(_RP.c.uuid == sa.bindparam('uuid'))
    if by_ids:
        query = query.where(id_list.among(_RP.c.id, backend))
    return query.order_by(_RP.c.id)


# The columns of _select(), for a packed read of many rows.
_ROW_KINDS = (packed.INT, packed.TEXT, packed.ANY_TEXT, packed.INT,
              packed.OPTIONAL_INT, packed.OPTIONAL_INT,
              packed.OPTIONAL_DATETIME,
              packed.OPTIONAL_DATETIME, packed.OPTIONAL_TEXT,
              packed.OPTIONAL_TEXT)


def create(conn: sa.Connection, uuid: str, name: str,
           parent_uuid: str | None = None) -> dict[str, Any]:
    """Insert a provider (a root, or under ``parent_uuid``); return its row.

    ``uuid`` is expected in canonical form. Raises Duplicate (uuid or name
    taken) or Invalid (no name, unusable parent).
    """
    if not name:
        raise exception.Invalid(NAME_REQUIRED)
    parent = None
    if parent_uuid is not None:
        if parent_uuid == uuid:
            raise exception.Invalid(PARENT_IS_SELF)
        parent = _find(conn, parent_uuid)
        if parent is None:
            raise exception.Invalid(PARENT_MISSING)
    _check_unique(conn, uuid, name)
    try:
        with conn.begin_nested():
            # SQLAlchemy's stubs make inserted_primary_key Optional; a
            # single-row insert() always has it.
            provider_id = conn.execute(_RP.insert().values(
                uuid=uuid, name=name, generation=0,
                parent_provider_id=parent and parent['id'],
            )).inserted_primary_key[0]  # type: ignore[index]
    except sa.exc.IntegrityError:
        # Created by a concurrent request since the check above.
        _check_unique(conn, uuid, name)
        raise exception.Duplicate(_DUPLICATE_NAME % name)
    root_id = parent['root_provider_id'] if parent else provider_id
    conn.execute(_RP.update().where(_RP.c.id == provider_id)
                 .values(root_provider_id=root_id))
    return get_by_uuid(conn, uuid)


_DUPLICATE_UUID = 'Conflicting resource provider uuid: %s already exists.'
_DUPLICATE_NAME = 'Conflicting resource provider name: %s already exists.'


def _check_unique(conn: sa.Connection, uuid: str, name: str) -> None:
    if _find(conn, uuid) is not None:
        raise exception.Duplicate(_DUPLICATE_UUID % uuid)
    if _name_taken(conn, name):
        raise exception.Duplicate(_DUPLICATE_NAME % name)


def _name_taken(conn: sa.Connection, name: str,
                except_id: int | None = None) -> bool:
    query = sa.select(_RP.c.id).where(_RP.c.name == name)
    if except_id is not None:
        query = query.where(_RP.c.id != except_id)
    return conn.execute(query.limit(1)).first() is not None


# parent_uuid: a uuid, None or KEEP_PARENT.
def update(conn: sa.Connection, uuid: str, name: str,
           parent_uuid: object = KEEP_PARENT,
           reparent: bool = False) -> dict[str, Any]:
    """Rename the provider and, unless ``parent_uuid`` is KEEP_PARENT, set
    its parent (None: make it a root). Return the updated row.

    Without ``reparent`` (before microversion 1.37) only a root may get a
    parent. Raises NotFound, Invalid (parent unusable, change refused, a
    loop) or Duplicate (name taken). The generation is not changed.
    """
    row = get_by_uuid(conn, uuid)
    if (parent_uuid is not KEEP_PARENT
            and parent_uuid != row['parent_provider_uuid']):
        _set_parent(conn, row, parent_uuid, reparent)
    if name != row['name']:
        duplicate = exception.Duplicate(
            'Conflicting resource provider %s already exists.' % name)
        if _name_taken(conn, name, except_id=row['id']):
            raise duplicate
        try:
            with conn.begin_nested():
                conn.execute(_RP.update().where(_RP.c.id == row['id'])
                             .values(name=name))
        except sa.exc.IntegrityError:
            raise duplicate
    return get_by_uuid(conn, uuid)


def _set_parent(conn, row, parent_uuid, reparent):
    if parent_uuid is None:
        if not reparent:
            raise exception.Invalid(UNPARENT_REFUSED)
        parent_id, root_id = None, row['id']
    else:
        parent = _find(conn, parent_uuid)
        if parent is None:
            raise exception.Invalid(PARENT_MISSING)
        if row['parent_provider_id'] is not None and not reparent:
            raise exception.Invalid(REPARENT_REFUSED)
        subtree = _subtree_ids(conn, row)
        if parent['id'] in subtree:
            raise exception.Invalid(LOOP_REFUSED)
        parent_id, root_id = parent['id'], parent['root_provider_id']
    conn.execute(_RP.update().where(_RP.c.id == row['id'])
                 .values(parent_provider_id=parent_id))
    if root_id != row['root_provider_id']:
        conn.execute(_RP.update()
                     .where(_RP.c.id.in_(sorted(_subtree_ids(conn, row))))
                     .values(root_provider_id=root_id))


def _subtree_ids(conn: sa.Connection, row: Mapping[str, Any]) -> set[int]:
    """Ids of the provider and all its descendants."""
    children: dict[int | None, list[int]] = {}
    for provider_id, parent_id in conn.execute(
            sa.select(_RP.c.id, _RP.c.parent_provider_id)
            .where(_RP.c.root_provider_id == row['root_provider_id'])):
        children.setdefault(parent_id, []).append(provider_id)
    found, pending = set(), [row['id']]
    while pending:
        provider_id = pending.pop()
        found.add(provider_id)
        pending.extend(children.get(provider_id, ()))
    return found


def delete(conn: sa.Connection, uuid: str) -> None:
    """Delete the provider with its inventories, traits and aggregate
    links. Raises NotFound, HasChildren or HasAllocations.
    """
    row = _find(conn, uuid)
    if row is None:
        raise exception.NotFound(
            'No resource provider with uuid %s found for delete' % uuid)
    provider_id = row['id']
    # Clearing the root first both unblocks MySQL, which checks a row's
    # foreign key to itself (a root is its own root) on delete, and locks
    # the row before the checks below: an allocation writer bumps this
    # row's generation before it commits, so it has either committed (and
    # its allocations are seen) or waits and then finds the provider gone.
    conn.execute(_RP.update().where(_RP.c.id == provider_id)
                 .values(root_provider_id=None))
    if _exists(conn, _RP, _RP.c.parent_provider_id == provider_id):
        raise _has_children(uuid)
    if _exists(conn, _ALLOC, _ALLOC.c.resource_provider_id == provider_id):
        raise HasAllocations(
            'Unable to delete resource provider %s: Resource provider has '
            'allocations.' % uuid)
    for table in (_INV, _RPT, _RPA):
        conn.execute(table.delete()
                     .where(table.c.resource_provider_id == provider_id))
    try:
        conn.execute(_RP.delete().where(_RP.c.id == provider_id))
    except sa.exc.IntegrityError:
        # A child created concurrently (PostgreSQL lets its foreign key
        # check share the row lock taken above).
        raise _has_children(uuid) from None


def _has_children(uuid: str) -> HasChildren:
    return HasChildren('Unable to delete parent resource provider %s: It '
                       'has child resource providers.' % uuid)


def _exists(conn: sa.Connection, table: sa.Table,
            condition: sa.ColumnElement[bool]) -> bool:
    return conn.execute(
        sa.select(sa.literal(1)).select_from(table).where(condition)
        .limit(1)).first() is not None
