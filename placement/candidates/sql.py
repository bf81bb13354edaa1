"""The set-based queries behind allocation candidates.

Each function is one statement (chunked only where an id list could
outgrow a backend's bind-parameter limit) that returns plain rows; the
engine does the per-candidate reasoning in memory.
"""
import collections
import struct

import sqlalchemy as sa

from placement.db import engine as db_engine
from placement.db import tables

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RPT = tables.resource_provider_traits
_RPA = tables.resource_provider_aggregates
_AGG = tables.placement_aggregates
_RC = tables.resource_classes
_TRAIT = tables.traits

# Far below SQLite's 32766 bind parameters, and keeps statements small.
_CHUNK = 5000

Names = collections.namedtuple(
    'Names', 'classes traits aggregates providers')


def lookup(conn, classes, traits, aggregates, providers):
    """Ids of the names a request mentions, in one round trip.

    Returns Names of dicts: class and trait names to ids, aggregate uuids
    to ids, provider uuids to (id, root id). Unknown names are absent.
    """
    parts = []
    for kind, table, key, values in (
            ('class', _RC, _RC.c.name, classes),
            ('trait', _TRAIT, _TRAIT.c.name, traits),
            ('aggregate', _AGG, _AGG.c.uuid, aggregates)):
        if values:
            parts.append(sa.select(
                sa.literal(kind).label('kind'),
                sa.cast(key, sa.String(255)).label('name'),
                table.c.id, sa.cast(sa.null(), sa.Integer).label('root'))
                .where(key.in_(sorted(values))))
    if providers:
        parts.append(sa.select(
            sa.literal('provider').label('kind'),
            sa.cast(_RP.c.uuid, sa.String(255)).label('name'),
            _RP.c.id, _RP.c.root_provider_id.label('root'))
            .where(_RP.c.uuid.in_(sorted(providers))))
    found = Names({}, {}, {}, {})
    if not parts:
        return found
    stored_providers = {}
    for kind, name, ident, root in conn.execute(sa.union_all(*parts)):
        if kind == 'class':
            found.classes[name] = ident
        elif kind == 'trait':
            found.traits[name] = ident
        elif kind == 'aggregate':
            found.aggregates[name] = ident
        else:
            stored_providers[_uuid_key(conn, name)] = (ident, root)
    # Classes, traits and aggregates are matched by exact name, as
    # upstream matches them in Python; provider uuids by the database's
    # own comparison, as upstream's in_tree lookup does.
    for uuid in providers:
        if _uuid_key(conn, uuid) in stored_providers:
            found.providers[uuid] = stored_providers[_uuid_key(conn, uuid)]
    return found


def _uuid_key(conn, uuid):
    if conn.dialect.name in db_engine.MYSQL_BACKENDS:
        return uuid.lower().rstrip(' ')
    return uuid


Inventory = collections.namedtuple(
    'Inventory', 'provider rc root parent total reserved ratio sql_ratio '
                 'min_unit max_unit step_size used')


def _used():
    """Allocated amount of the inventory row at hand: a correlated lookup
    on the (provider, class, used) index.
    """
    return (sa.select(sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0))
            .where(_ALLOC.c.resource_provider_id ==
                   _INV.c.resource_provider_id,
                   _ALLOC.c.resource_class_id == _INV.c.resource_class_id)
            .scalar_subquery())


def inventories(conn, rc_ids, roots=None):
    """Inventories (with usage) of the classes ``rc_ids``, optionally only
    in the trees rooted at ``roots``.

    SQLite and MySQL look each row's usage up on the (provider, class,
    used) index; PostgreSQL sums the classes' allocations once, as it
    would JIT-compile the correlated form of a large scan.
    """
    rc_ids = sorted(rc_ids)
    columns = (_INV.c.resource_provider_id, _INV.c.resource_class_id,
               _RP.c.root_provider_id, _RP.c.parent_provider_id,
               _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
               _INV.c.min_unit, _INV.c.max_unit, _INV.c.step_size)
    rows = _INV.join(_RP, _RP.c.id == _INV.c.resource_provider_id)
    if conn.dialect.name == 'postgresql':
        usage = (sa.select(_ALLOC.c.resource_provider_id,
                           _ALLOC.c.resource_class_id,
                           sa.func.sum(_ALLOC.c.used).label('used'))
                 .where(_ALLOC.c.resource_class_id.in_(rc_ids))
                 .group_by(_ALLOC.c.resource_provider_id,
                           _ALLOC.c.resource_class_id)
                 .subquery('usage'))
        rows = rows.outerjoin(usage, sa.and_(
            usage.c.resource_provider_id == _INV.c.resource_provider_id,
            usage.c.resource_class_id == _INV.c.resource_class_id))
        used = sa.func.coalesce(usage.c.used, 0)
    else:
        used = _used()
    query = (sa.select(*columns, used).select_from(rows)
             .where(_INV.c.resource_class_id.in_(rc_ids)))
    if roots is not None:
        query = query.where(_RP.c.root_provider_id.in_(sorted(roots)))
    rows = conn.execute(query).all()
    if conn.dialect.name in db_engine.MYSQL_BACKENDS:
        return [Inventory(rp, rc, root, parent, total, reserved, ratio,
                          _single_precision(ratio), min_unit, max_unit, step,
                          int(used))
                for rp, rc, root, parent, total, reserved, ratio, min_unit,
                max_unit, step, used in rows]
    return [Inventory(rp, rc, root, parent, total, reserved, ratio, ratio,
                      min_unit, max_unit, step, int(used))
            for rp, rc, root, parent, total, reserved, ratio, min_unit,
            max_unit, step, used in rows]


def _single_precision(value):
    """allocation_ratio as MySQL computes with it: FLOAT columns are
    single precision there, which decides capacity edge cases the way
    upstream's SQL capacity filter does.
    """
    return struct.unpack('f', struct.pack('f', value))[0]


def trait_holders(conn, trait_ids):
    """(provider, trait, root) for every provider having one of
    ``trait_ids``.
    """
    return _linked(conn, _RPT, _RPT.c.trait_id, trait_ids)


def aggregate_members(conn, aggregate_ids):
    """(provider, aggregate, root) for every member of ``aggregate_ids``."""
    return _linked(conn, _RPA, _RPA.c.aggregate_id, aggregate_ids)


def _linked(conn, link, column, ids):
    """(provider, linked id, root) for the providers ``link`` ties to one
    of ``ids``.
    """
    if not ids:
        return []
    return conn.execute(
        sa.select(link.c.resource_provider_id, column,
                  _RP.c.root_provider_id)
        .select_from(link.join(_RP, _RP.c.id == link.c.resource_provider_id))
        .where(column.in_(sorted(ids)))).all()


def any_root_with_traits(conn, required, forbidden):
    """Whether some root provider has all ``required`` trait ids and none
    of ``forbidden``.
    """
    def having(trait_ids):
        return sa.exists().where(
            _RPT.c.resource_provider_id == _RP.c.id,
            _RPT.c.trait_id.in_(sorted(trait_ids)))
    query = sa.select(_RP.c.id).where(_RP.c.parent_provider_id.is_(None))
    for trait in required:
        query = query.where(having([trait]))
    if forbidden:
        query = query.where(~having(forbidden))
    return conn.execute(query.limit(1)).first() is not None


def sharing_anchors(conn, provider_ids):
    """(sharing provider, root) for every tree having a provider in an
    aggregate with one of ``provider_ids``: the trees they share with.
    """
    mine = _RPA.alias('mine')
    peer = _RPA.alias('peer')
    rows = []
    for chunk in _chunks(provider_ids):
        rows += conn.execute(
            sa.select(mine.c.resource_provider_id, _RP.c.root_provider_id)
            .distinct()
            .select_from(
                mine.join(peer, peer.c.aggregate_id == mine.c.aggregate_id)
                .join(_RP, _RP.c.id == peer.c.resource_provider_id))
            .where(mine.c.resource_provider_id.in_(chunk))).all()
    return rows


def parents(conn, provider_ids):
    """(id, parent id) of ``provider_ids``."""
    rows = []
    for chunk in _chunks(provider_ids):
        rows += conn.execute(
            sa.select(_RP.c.id, _RP.c.parent_provider_id)
            .where(_RP.c.id.in_(chunk))).all()
    return rows


def provider_ids(conn, root=None):
    """Ids of all providers, or of those in the tree rooted at ``root``."""
    query = sa.select(_RP.c.id)
    if root is not None:
        query = query.where(_RP.c.root_provider_id == root)
    return conn.execute(query).scalars().all()


def tree_members(conn, roots, extra_ids=()):
    """(id, uuid, parent id, root id) of the providers in the trees rooted
    at ``roots`` and of the providers ``extra_ids``.
    """
    columns = (_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
               _RP.c.root_provider_id)
    rows = []
    for chunk in _chunks(roots):
        rows += conn.execute(sa.select(*columns).where(
            _RP.c.root_provider_id.in_(chunk))).all()
    seen = {row[0] for row in rows}
    for chunk in _chunks(set(extra_ids) - seen):
        rows += conn.execute(sa.select(*columns).where(
            _RP.c.id.in_(chunk))).all()
    return rows


def provider_inventories(conn, roots=(), provider_ids=(), skip_rc_ids=()):
    """(provider, class name, total, reserved, ratio, used) of the
    inventories in the trees rooted at ``roots`` and of ``provider_ids``,
    but those of the classes ``skip_rc_ids``.
    """
    query = (sa.select(
        _INV.c.resource_provider_id, _RC.c.name, _INV.c.total,
        _INV.c.reserved, _INV.c.allocation_ratio, _used())
        .select_from(
            _INV.join(_RC, _RC.c.id == _INV.c.resource_class_id)
            .join(_RP, _RP.c.id == _INV.c.resource_provider_id)))
    if skip_rc_ids:
        query = query.where(
            _INV.c.resource_class_id.not_in(sorted(skip_rc_ids)))
    return _of_providers(conn, query, roots, provider_ids)


def provider_traits(conn, roots=(), provider_ids=()):
    """(provider, trait name) in the trees rooted at ``roots`` and of
    ``provider_ids``, in trait id order.
    """
    query = (sa.select(_RPT.c.resource_provider_id, _TRAIT.c.name)
             .select_from(
                 _RPT.join(_TRAIT, _TRAIT.c.id == _RPT.c.trait_id)
                 .join(_RP, _RP.c.id == _RPT.c.resource_provider_id))
             .order_by(_RPT.c.resource_provider_id, _RPT.c.trait_id))
    return _of_providers(conn, query, roots, provider_ids)


def _of_providers(conn, query, roots, provider_ids):
    """Rows of ``query`` (which joins resource_providers) for the trees
    rooted at ``roots`` and for ``provider_ids``.
    """
    rows = []
    for column, ids in ((_RP.c.root_provider_id, roots),
                        (_RP.c.id, provider_ids)):
        for chunk in _chunks(ids):
            rows += conn.execute(query.where(column.in_(chunk))).all()
    return rows


def _chunks(ids):
    ids = sorted(ids)
    for start in range(0, len(ids), _CHUNK):
        yield ids[start:start + _CHUNK]
