"""The set-based queries behind allocation candidates.

Each function is one statement that returns plain rows; the engine does
the per-candidate reasoning in memory. Statements are built once per
shape and backend, which picks its variant where the kinds of database
differ; lists of ids travel as ``id_list`` sends them.
"""
import collections
import functools
import struct
from typing import Any
from typing import Collection
from typing import Iterable
from typing import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from placement.candidates import narrowing as planner
from placement.db import backends
from placement.db import id_list
from placement.db import packed
from placement.db import tables

_RP = tables.resource_providers
_INV = tables.inventories
_ALLOC = tables.allocations
_RPT = tables.resource_provider_traits
_RPA = tables.resource_provider_aggregates
_AGG = tables.placement_aggregates
_RC = tables.resource_classes
_TRAIT = tables.traits

Names = collections.namedtuple(
    'Names', 'classes traits aggregates providers')


def lookup(conn: sa.Connection, classes: set[str], traits: set[str],
           aggregates: set[str], providers: set[str]) -> Names:
    """Ids of the names a request mentions, in one round trip.

    Returns Names of dicts: class and trait names to ids, aggregate uuids
    to ids, provider uuids to (id, root id). Unknown names are absent.
    """
    wanted = {'class': classes, 'trait': traits, 'aggregate': aggregates,
              'provider': providers}
    kinds = tuple(kind for kind in _LOOKUPS if wanted[kind])
    found = Names({}, {}, {}, {})
    if not kinds:
        return found
    backend = backends.of(conn)
    stored_providers: dict[str, tuple[int, int]] = {}
    for kind, name, ident, root in conn.execute(
            _lookup_statement(kinds),
            {kind: sorted(wanted[kind]) for kind in kinds}):
        if kind == 'class':
            found.classes[name] = ident
        elif kind == 'trait':
            found.traits[name] = ident
        elif kind == 'aggregate':
            found.aggregates[name] = ident
        else:
            stored_providers[backend.collation_key(name)] = (ident, root)
    # Classes, traits and aggregates are matched by exact name, as
    # upstream matches them in Python; provider uuids by the database's
    # own comparison, as upstream's in_tree lookup does.
    for uuid in providers:
        if backend.collation_key(uuid) in stored_providers:
            found.providers[uuid] = stored_providers[
                backend.collation_key(uuid)]
    return found


# Kind of name: (table, column holding the name, root id column).
_LOOKUPS = {
    'class': (_RC, _RC.c.name, None),
    'trait': (_TRAIT, _TRAIT.c.name, None),
    'aggregate': (_AGG, _AGG.c.uuid, None),
    'provider': (_RP, _RP.c.uuid, _RP.c.root_provider_id),
}


@functools.lru_cache(maxsize=16)
def _lookup_statement(kinds):
    """(kind, name, id, root id) of the names bound as each of ``kinds``."""
    parts = []
    for kind in kinds:
        table, key, root = _LOOKUPS[kind]
        if root is None:
            root = sa.cast(sa.null(), sa.Integer)
        parts.append(sa.select(
            sa.literal(kind).label('kind'),
            sa.cast(key, sa.String(255)).label('name'),
            table.c.id, root.label('root'))
            .where(key.in_(sa.bindparam(kind, expanding=True))))
    return sa.union_all(*parts)


Inventory = collections.namedtuple(
    'Inventory', 'provider rc root parent total reserved ratio sql_ratio '
                 'min_unit max_unit step_size used')

# What sql.inventories reads of the requested classes' rows.
USABLE = 'usable'   # those the Narrowing keeps
FIT = 'fit'         # those some group could take its amount from
UNFIT = 'unfit'     # those no group could take its amount from
ALL = 'all'


def _used():
    """Allocated amount of the inventory row at hand: a correlated lookup
    on the (provider, class, used) index.
    """
    return (sa.select(sa.func.coalesce(sa.func.sum(_ALLOC.c.used), 0))
            .where(_ALLOC.c.resource_provider_id ==
                   _INV.c.resource_provider_id,
                   _ALLOC.c.resource_class_id == _INV.c.resource_class_id)
            .scalar_subquery())


def _with_usage(backend, rows, rc_ids, listed):
    """``rows`` (inventories, possibly joined to more), joined where
    needed to what gives the amount used of each inventory, and that
    amount; only rows of the classes ``rc_ids`` are asked about.

    Each row's usage is looked up on the (provider, class, used) index,
    but for a scan that is not restricted to ``listed`` trees or
    providers where the backend has ``usage_by_join`` (PostgreSQL and
    MySQL): that sums the classes' allocations once, as PostgreSQL would
    JIT-compile the correlated form of a large scan and MariaDB takes a
    third longer over it.
    """
    if not backend.usage_by_join or listed:
        return rows, _used()
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
    return rows, sa.func.coalesce(usage.c.used, 0)


@functools.lru_cache(maxsize=256)
def _inventory_statement(backend, shape, selection, within, usage=True):
    """The rows of the classes ``rc_ids``, with usage (0 without
    ``usage``); ``selection`` of them by a Narrowing of ``shape``;
    ``within`` (a resource_providers column: root_provider_id or id)
    restricts them to the trees or providers ``ids``.
    """
    rc_ids: sa.BindParameter[list[int]] = sa.bindparam(
        'rc_ids', expanding=True)
    # In the order of Inventory's fields; MySQL's sql_ratio is worked out
    # in Python (every column read costs there).
    sql_ratio = ((_INV.c.allocation_ratio.label('sql_ratio'),)
                 if not backend.sql_ratio_in_python else ())
    columns = (_INV.c.resource_provider_id, _INV.c.resource_class_id,
               _RP.c.root_provider_id, _RP.c.parent_provider_id,
               _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio,
               *sql_ratio,
               _INV.c.min_unit, _INV.c.max_unit, _INV.c.step_size)
    rows: Any = _INV.join(_RP, _RP.c.id == _INV.c.resource_provider_id)
    used: Any = sa.literal(0)
    if usage:
        rows, used = _with_usage(backend, rows, rc_ids,
                                 listed=within is not None)
    rc = _INV.c.resource_class_id
    if within is not None and backend.avoid_class_index:
        # Without statistics SQLite would walk the class index (most of
        # the table) rather than look the few trees or providers up; an
        # expression of the class is not indexed.
        rc = rc + 0
    query = (sa.select(*columns, used).select_from(rows)
             .where(rc.in_(rc_ids)))
    if selection == USABLE:
        query = query.where(planner.usable(shape, _INV, _RP, rc))
    elif selection == FIT:
        query = query.where(planner.fits(_INV, range(shape.classes), rc))
    elif selection == UNFIT:
        query = query.where(
            sa.not_(planner.fits(_INV, range(shape.classes), rc)))
    if within == 'root_provider_id':
        query = query.where(_in_trees(_INV.c.resource_provider_id, backend))
    elif within is not None:
        query = query.where(id_list.among(_RP.c[within], backend))
    return query


def _in_trees(provider_id, backend):
    """``provider_id`` (of a table joined to resource_providers) is in
    one of the trees whose root ids are bound as ``ids``.

    PostgreSQL's planner, whose default costs assume a disk read per
    index probe, would rather read every inventory of the cloud (a
    parallel sequential scan into a hash join) than probe the index for
    the providers of a few thousand trees. Given the providers as an
    array worked out first (an InitPlan), it probes: at 100,000 nodes a
    batch of 1,000 trees' inventories took 29 ms that way and takes 8.5.
    """
    if not backend.prefers_arrays:
        return id_list.among(_RP.c.root_provider_id, backend)
    members = _RP.alias('member')
    return provider_id == sa.any_(sa.func.array(
        sa.select(members.c.id)
        .where(id_list.among(members.c.root_provider_id, backend))
        .scalar_subquery()))


@functools.lru_cache(maxsize=64)
def _roots_statement(shape):
    query = sa.select(_RP.c.id).where(_RP.c.parent_provider_id.is_(None),
                                      _RP.c.id > sa.bindparam('after'))
    if shape is not None:
        query = query.where(*planner.tree_usable(shape, _RP.c.id))
    return query.order_by(_RP.c.id).limit(sa.bindparam('count'))


def usable_roots(conn: sa.Connection, narrowing: planner.Narrowing | None,
                 after: int, count: int) -> Sequence[int]:
    """The first ``count`` roots, in order, above ``after``, of the trees
    whose rows ``narrowing`` may keep: a batch of trees. Looking at the
    trees only (not at their rows) keeps this cheap; a tree with no row
    of use merely takes a place in a batch.
    """
    # Beyond what a LIMIT takes everywhere means every root.
    params = {'after': after, 'count': min(count, 2 ** 31 - 1)}
    shape = None
    if narrowing is not None:
        shape = narrowing.roots_shape(count)
        params.update(narrowing.params())
    rows = packed.rows(conn, _roots_statement(shape), (packed.INT,), params,
                       ordered=True)
    return [root for root, in rows]


def providers_with_room(conn: sa.Connection,
                        resources: Sequence[tuple[int, int]],
                        tree: int | None = None) -> set[int]:
    """Ids of the providers that can take each (class, amount) of
    ``resources`` from one inventory of theirs, in the tree rooted at
    ``tree`` if given: upstream's capacity, unit and step checks, in the
    database's arithmetic as upstream does them.
    """
    params = dict(planner.class_params(resources), tree=tree,
                  rc_ids=sorted(rc for rc, _amount in resources))
    rows = packed.rows(conn, _room_statement(
        backends.of(conn), len(resources), tree is not None),
        (packed.INT,), params)
    return {provider for provider, in rows}


@functools.lru_cache(maxsize=32)
def _room_statement(backend, classes, in_tree):
    rc_ids: sa.BindParameter[list[int]] = sa.bindparam(
        'rc_ids', expanding=True)
    rows, used = _with_usage(backend, _INV, rc_ids, listed=False)
    room = []
    for i in range(classes):
        amount: sa.BindParameter[int] = sa.bindparam('amount_%d' % i)
        room.append(sa.and_(
            _INV.c.resource_class_id == sa.bindparam('rc_%d' % i),
            used + amount
            <= (_INV.c.total - _INV.c.reserved) * _INV.c.allocation_ratio,
            _INV.c.min_unit <= amount, _INV.c.max_unit >= amount,
            # A step of 0 (never written by the API) divides nothing.
            amount % sa.func.nullif(_INV.c.step_size, 0) == 0))
    query = (sa.select(_INV.c.resource_provider_id).select_from(rows)
             .where(_INV.c.resource_class_id.in_(rc_ids), sa.or_(*room))
             .group_by(_INV.c.resource_provider_id)
             .having(sa.func.count() == classes))
    if in_tree:
        query = query.where(_INV.c.resource_provider_id.in_(
            sa.select(_RP.c.id)
            .where(_RP.c.root_provider_id == sa.bindparam('tree'))))
    return query


def inventories(conn: sa.Connection, rc_ids: Iterable[int],
                narrowing: planner.Narrowing | None = None,
                selection: str = ALL,
                roots: Iterable[int] | None = None,
                provider_ids: Iterable[int] | None = None,
                usage: bool = True) -> list[Inventory]:
    """Inventories (with usage, else 0 for it) of the classes ``rc_ids``:
    all, or the ``selection`` of them by ``narrowing``; only in the trees
    rooted at ``roots`` or of ``provider_ids`` when given.
    """
    params = {'rc_ids': sorted(rc_ids)}
    shape = None
    if narrowing is not None:
        shape = narrowing.shape()
        params.update(narrowing.params())
    within, ids = None, None
    if roots is not None:
        within, ids = 'root_provider_id', roots
    elif provider_ids is not None:
        within, ids = 'id', provider_ids
    backend = backends.of(conn)
    query = _inventory_statement(
        backend, shape,
        selection if narrowing is not None else ALL, within, usage)
    if ids is None:
        rows = packed.rows(conn, query, _INVENTORY_KINDS, params)
    else:
        rows = id_list.rows_among(conn, query, ids, params, _INVENTORY_KINDS)
    if backend.sql_ratio_in_python:
        return [Inventory(rp, rc, root, parent, total, reserved, ratio,
                          _single_precision(ratio), min_unit, max_unit, step,
                          int(used))
                for rp, rc, root, parent, total, reserved, ratio, min_unit,
                max_unit, step, used in rows]
    return list(map(Inventory._make, rows))


# The columns of _inventory_statement on MySQL (no sql_ratio there).
_INVENTORY_KINDS = (
    packed.INT, packed.INT, packed.INT, packed.OPTIONAL_INT, packed.INT,
    packed.INT, packed.FLOAT, packed.INT, packed.INT, packed.INT, packed.INT)


@functools.lru_cache(maxsize=64)
def _single_precision(value):
    """allocation_ratio as MySQL computes with it: FLOAT columns are
    single precision there, which decides capacity edge cases the way
    upstream's SQL capacity filter does.
    """
    return struct.unpack('f', struct.pack('f', value))[0]


def trait_holders(conn: sa.Connection, trait_ids: Collection[int],
                  **among: Any) -> Sequence[tuple[int, int, int]]:
    """(provider, trait, root) for every provider having one of
    ``trait_ids``; only some providers with ``among`` (see _linked).
    """
    return _linked(conn, 'trait', trait_ids, **among)


def aggregate_members(conn: sa.Connection, aggregate_ids: Collection[int],
                      **among: Any) -> Sequence[tuple[int, int, int]]:
    """(provider, aggregate, root) for every member of ``aggregate_ids``;
    only some providers with ``among`` (see _linked).
    """
    return _linked(conn, 'aggregate', aggregate_ids, **among)



def tree_traits(conn: sa.Connection, roots: Iterable[int]
                ) -> Sequence[tuple[int, int, int]]:
    """(provider, trait, root) for every trait of every provider of the
    trees rooted at ``roots``."""
    return _of_providers(conn, _tree_traits_statement, roots, (),
                         kinds=(packed.INT,) * 3)


@functools.lru_cache(maxsize=16)
def _tree_traits_statement(backend, key):
    return (sa.select(_RPT.c.resource_provider_id, _RPT.c.trait_id,
                      _RP.c.root_provider_id)
            .select_from(
                _RPT.join(_RP, _RP.c.id == _RPT.c.resource_provider_id))
            .where(id_list.among(_RP.c[key], backend)))


def sharing_traits(conn: sa.Connection, sharing_trait: int
                   ) -> Sequence[Sequence[int]]:
    """(provider, trait, root) for every trait of every provider having
    the trait ``sharing_trait``."""
    return packed.rows(conn, _SHARING_TRAITS, (packed.INT,) * 3,
                       {'sharing_trait': sharing_trait})


_SHARING_TRAITS = (
    sa.select(_RPT.c.resource_provider_id, _RPT.c.trait_id,
              _RP.c.root_provider_id)
    .select_from(_RPT.join(_RP, _RP.c.id == _RPT.c.resource_provider_id))
    .where(planner.sharing(_RPT.c.resource_provider_id)))


def _linked(conn, kind, ids, sharing_trait=None, between=None):
    """(provider, linked id, root) for the providers linked to one of
    ``ids`` of ``kind``: of all providers, only of those having the trait
    ``sharing_trait`` if given, or only of the trees whose root id is
    above ``after`` and at most ``upto`` (None: any) for ``between``
    (after, upto).
    """
    if not ids:
        return []
    params = {'ids': sorted(ids)}
    providers = 'all'
    if sharing_trait is not None:
        providers = 'sharing'
        params['sharing_trait'] = sharing_trait
    elif between is not None:
        providers, bounds = _root_range(*between)
        params.update(bounds)
    return packed.rows(conn, _linked_statement(kind, providers),
                       (packed.INT,) * 3, params)


@functools.lru_cache(maxsize=16)
def _linked_statement(kind, providers):
    link, column = planner.LINKS[kind]
    query = (sa.select(link.c.resource_provider_id, column,
                       _RP.c.root_provider_id)
             .select_from(
                 link.join(_RP, _RP.c.id == link.c.resource_provider_id))
             .where(column.in_(sa.bindparam('ids', expanding=True))))
    if providers == 'sharing':
        return query.where(planner.sharing(link.c.resource_provider_id))
    if providers == 'all':
        return query
    return _in_root_range(query, providers)


def _root_range(after, upto):
    """The kind of range ('above', or 'below' with an upper bound too) of
    the root ids above ``after`` and at most ``upto`` (None: any), and
    its parameters, for _in_root_range."""
    return ('above' if upto is None else 'below'), {'after': after,
                                                    'upto': upto}


def _in_root_range(query, bounds):
    """``query`` (joined to resource_providers) for the trees whose root
    id is above ``after``, and at most ``upto`` with ``bounds`` 'below'.
    """
    query = query.where(_RP.c.root_provider_id > sa.bindparam('after'))
    if bounds == 'below':
        query = query.where(_RP.c.root_provider_id <= sa.bindparam('upto'))
    return query


def any_root_with_traits(conn: sa.Connection, required: Iterable[int],
                         forbidden: Collection[int]) -> bool:
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


# On MariaDB, roots spanning fewer ids than this many times the sharing
# providers have their anchors read from the trees (_anchors_of_trees):
# fewer rows than the members of the sharing providers' aggregates,
# which typically hold tens of hosts each...
TREES_PER_SHARER = 16
# ... when they are also dense: spanning fewer ids than this many times
# their number (else the range holds many more trees than they are).
IDS_PER_ROOT = 4


def sharing_anchors(conn: sa.Connection, provider_ids: Iterable[int],
                    roots: Collection[int] | None = None
                    ) -> Sequence[Sequence[Any]]:
    """(sharing provider, root) for every tree having a provider in an
    aggregate with one of ``provider_ids``: the trees they share with;
    only the trees rooted at ``roots`` when given (a request confined to
    a few trees need not hear of the thousands of others).
    """
    kinds = (packed.INT, packed.INT)
    if roots is None:
        return id_list.rows_among(
            conn, _sharing_anchors_statement(backends.of(conn), 'all'),
            provider_ids, None, kinds)
    sharing = sorted(provider_ids)
    if not sharing or not roots:
        return []
    backend = backends.of(conn)
    form = 'listed'
    span = max(roots) - min(roots)
    if (backend.anchors_from_trees
            and span < TREES_PER_SHARER * len(sharing)
            and span < IDS_PER_ROOT * len(roots)):
        form = 'from_trees'
    return id_list.rows_among(
        conn, _sharing_anchors_statement(backend, form), roots,
        {'sharing': sharing}, kinds)


def sharing_anchors_between(conn: sa.Connection, provider_ids: Iterable[int],
                            after: int, upto: int | None
                            ) -> Sequence[Sequence[Any]]:
    """``sharing_anchors`` of the trees whose root id is above ``after``
    and at most ``upto`` (None: any): those a batch of trees anchors."""
    sharing = sorted(provider_ids)
    if not sharing:
        return []
    bounds, params = _root_range(after, upto)
    return packed.rows(
        conn, _sharing_anchors_statement(backends.of(conn), bounds),
        (packed.INT, packed.INT), dict(params, sharing=sharing))


@functools.lru_cache(maxsize=16)
def _sharing_anchors_statement(backend, roots):
    """Sharing providers and the roots they share with: the providers
    bound as ``ids`` and every root (``roots`` 'all'); else the providers
    bound as ``sharing`` and the roots bound as ``ids`` ('listed', or
    'from_trees' on MariaDB), above ``after`` ('above') or also at most
    ``upto`` ('below').
    """
    if roots == 'all':
        mine: Any = _RPA.alias('mine')
        query, _peer = _anchors_through(mine)
        return query.where(
            id_list.among(mine.c.resource_provider_id, backend))
    # Starting from the trees, the database would read every member of
    # each of their aggregates (an availability zone's thousands) before
    # finding few of them sharing: only the sharing providers' aggregates
    # lead on. At 100,000 nodes, a batch of 1,000 trees takes MariaDB 4 ms
    # rather than 490, PostgreSQL 16 rather than 52: given them as an
    # array worked out first (see _in_trees), which its planner, unlike
    # a subquery, does not misjudge.
    if roots == 'from_trees':
        return _anchors_of_trees(backend)
    if backend.prefers_arrays:
        # One array: hundreds of values, twice, took longer to plan than
        # the statement to run. The sharing providers' memberships are
        # read once, then matched by hash rather than looked up again for
        # each tree (1,540 trees, all served, at 100,000 nodes: 8.8 ms
        # rather than 15.5).
        mine = (sa.select(_RPA.c.resource_provider_id, _RPA.c.aggregate_id)
                .where(_RPA.c.resource_provider_id == sa.any_(sa.bindparam(
                    'sharing', type_=postgresql.ARRAY(sa.Integer))))
                .cte('mine').prefix_with('MATERIALIZED'))
        query, peer = _anchors_through(mine)
        query = query.where(peer.c.aggregate_id == sa.any_(sa.func.array(
            sa.select(mine.c.aggregate_id).scalar_subquery())))
    else:
        mine = _RPA.alias('mine')
        sharer = _RPA.alias('sharer')
        sharing: sa.BindParameter[list[int]] = sa.bindparam(
            'sharing', expanding=True)
        query, peer = _anchors_through(mine)
        query = query.where(
            mine.c.resource_provider_id.in_(sharing),
            peer.c.aggregate_id.in_(
                sa.select(sharer.c.aggregate_id)
                .where(sharer.c.resource_provider_id.in_(sharing))))
    if roots == 'listed':
        return query.where(id_list.among(_RP.c.root_provider_id, backend))
    return _in_root_range(query, roots)


def _anchors_of_trees(backend):
    """_sharing_anchors_statement's 'from_trees' form, for MariaDB and
    roots in a narrow, dense id range (TREES_PER_SHARER, IDS_PER_ROOT):
    from the trees' providers, read by that range, through their
    memberships, to the sharing providers' aggregates read once (a
    derived table probed by key). Left to choose, MariaDB looked each
    membership up among the members of its aggregate (an availability
    zone's thousands): 5 trees at 100,000 nodes took 5.2 ms rather than
    0.4. Wider or sparser ranges are left to it: from the trees, a
    batch of 1,000 at 1,000 nodes took 1.3 ms rather than 0.5, and 25
    sparse trees at 100,000 nodes 21 ms rather than 1.6 (every tree of
    their range).
    """
    peer, mine, sharer = (_RPA.alias(name)
                          for name in ('peer', 'mine', 'sharer'))
    sharing: sa.BindParameter[list[int]] = sa.bindparam(
        'sharing', expanding=True)
    shared = (sa.select(sharer.c.aggregate_id).distinct()
              .where(sharer.c.resource_provider_id.in_(sharing))
              .subquery('shared'))
    return (sa.select(mine.c.resource_provider_id, _RP.c.root_provider_id)
            .distinct().prefix_with('STRAIGHT_JOIN')
            .select_from(
                _RP.join(peer, peer.c.resource_provider_id == _RP.c.id)
                .join(shared, shared.c.aggregate_id == peer.c.aggregate_id)
                .join(mine, mine.c.aggregate_id == peer.c.aggregate_id))
            .where(mine.c.resource_provider_id.in_(sharing),
                   id_list.among(_RP.c.root_provider_id, backend)))


def _anchors_through(mine):
    """The distinct (provider, root) of the trees having a provider (of
    ``peer``, returned too) in an aggregate of a membership of ``mine``.
    """
    peer = _RPA.alias('peer')
    query = (sa.select(mine.c.resource_provider_id, _RP.c.root_provider_id)
             .distinct()
             .select_from(
                 mine.join(peer, peer.c.aggregate_id == mine.c.aggregate_id)
                 .join(_RP, _RP.c.id == peer.c.resource_provider_id)))
    return query, peer


def parents(conn: sa.Connection, provider_ids: Iterable[int]
            ) -> Sequence[tuple[int, int | None]]:
    """(id, parent id) of ``provider_ids``."""
    return id_list.rows_among(conn, _providers_statement(
        backends.of(conn), 'id', (_RP.c.id, _RP.c.parent_provider_id)),
        provider_ids, kinds=(packed.INT, packed.OPTIONAL_INT))


@functools.lru_cache(maxsize=32)
def _providers_statement(backend, key, columns):
    """``columns`` of the providers whose ``key`` column is among ids."""
    return sa.select(*columns).where(id_list.among(_RP.c[key], backend))


def provider_ids(conn: sa.Connection,
                 root: int | None = None) -> Sequence[int]:
    """Ids of all providers, or of those in the tree rooted at ``root``."""
    query = sa.select(_RP.c.id)
    if root is not None:
        query = query.where(_RP.c.root_provider_id == root)
    return conn.execute(query).scalars().all()


def tree_members(conn: sa.Connection, roots: Iterable[int],
                 extra_ids: Iterable[int] = ()
                 ) -> list[tuple[int, str, int | None, int]]:
    """(id, uuid, parent id, root id) of the providers in the trees rooted
    at ``roots`` and of the providers ``extra_ids``.
    """
    columns = (_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
               _RP.c.root_provider_id)
    rows = list(id_list.rows_among(conn, _providers_statement(
        backends.of(conn), 'root_provider_id', columns), roots,
        kinds=_MEMBER_KINDS))
    seen = {row[0] for row in rows}
    rows += id_list.rows_among(conn, _providers_statement(
        backends.of(conn), 'id', columns), set(extra_ids) - seen,
        kinds=_MEMBER_KINDS)
    return rows


_MEMBER_KINDS = (packed.INT, packed.TEXT, packed.OPTIONAL_INT, packed.INT)


def provider_inventories(
        conn: sa.Connection, roots: Iterable[int] = (),
        provider_ids: Iterable[int] = (), skip_rc_ids: Iterable[int] = ()
) -> list[tuple[Any, ...]]:
    """(provider, class name, total, reserved, ratio, used) of the
    inventories in the trees rooted at ``roots`` and of ``provider_ids``,
    but those of the classes ``skip_rc_ids``.
    """
    return _of_providers(conn, _provider_inventories_statement,
                         roots, provider_ids, skip=sorted(skip_rc_ids),
                         kinds=(packed.INT, packed.TEXT, packed.INT,
                                packed.INT, packed.FLOAT, packed.INT))


@functools.lru_cache(maxsize=16)
def _provider_inventories_statement(backend, key):
    return (sa.select(
        _INV.c.resource_provider_id, _RC.c.name, _INV.c.total,
        _INV.c.reserved, _INV.c.allocation_ratio, _used())
        .select_from(
            _INV.join(_RC, _RC.c.id == _INV.c.resource_class_id)
            .join(_RP, _RP.c.id == _INV.c.resource_provider_id))
        .where(_INV.c.resource_class_id.not_in(
            sa.bindparam('skip', expanding=True)),
            _in_trees(_INV.c.resource_provider_id, backend)
            if key == 'root_provider_id'
            else id_list.among(_RP.c[key], backend)))


def provider_traits(conn: sa.Connection, roots: Iterable[int] = (),
                    provider_ids: Iterable[int] = ()
                    ) -> list[tuple[int, int]]:
    """(provider, trait id) in the trees rooted at ``roots`` and of
    ``provider_ids``, in trait id order for each provider.
    """
    return _of_providers(conn, _provider_traits_statement, roots,
                         provider_ids, kinds=(packed.INT, packed.INT),
                         ordered=True)


@functools.lru_cache(maxsize=16)
def _provider_traits_statement(backend, key):
    # Ids, not names: a few traits recur on thousands of rows.
    return (sa.select(_RPT.c.resource_provider_id, _RPT.c.trait_id)
            .select_from(
                _RPT.join(_RP, _RP.c.id == _RPT.c.resource_provider_id))
            .where(id_list.among(_RP.c[key], backend))
            .order_by(_RPT.c.resource_provider_id, _RPT.c.trait_id))


def memberships(conn: sa.Connection) -> Sequence[tuple[int, int]]:
    """(provider, aggregate id) of every provider in an aggregate."""
    return conn.execute(sa.select(_RPA.c.resource_provider_id,
                                  _RPA.c.aggregate_id)).all()


def provider_names(conn: sa.Connection, provider_ids: Iterable[int]
                   ) -> dict[int, tuple[str, str]]:
    """{id: (uuid, name)} of ``provider_ids``."""
    rows = id_list.rows_among(conn, _providers_statement(
        backends.of(conn), 'id', (_RP.c.id, _RP.c.uuid, _RP.c.name)),
        provider_ids, kinds=(packed.INT, packed.TEXT, packed.OPTIONAL_TEXT))
    return {ident: (uuid, name or '') for ident, uuid, name in rows}


def root_aggregates(conn: sa.Connection) -> Sequence[tuple[int, str]]:
    """(root provider id, aggregate uuid) of every root provider in an
    aggregate."""
    return conn.execute(
        sa.select(_RPA.c.resource_provider_id, _AGG.c.uuid)
        .join(_AGG, _AGG.c.id == _RPA.c.aggregate_id)
        .join(_RP, _RP.c.id == _RPA.c.resource_provider_id)
        .where(_RP.c.parent_provider_id.is_(None))).all()


def trait_names(conn: sa.Connection,
                trait_ids: Collection[int]) -> dict[int, str]:
    """{id: name} of ``trait_ids``."""
    if not trait_ids:
        return {}
    return dict(conn.execute(_TRAIT_NAMES, {'ids': sorted(trait_ids)}).all())


_TRAIT_NAMES = sa.select(_TRAIT.c.id, _TRAIT.c.name).where(
    _TRAIT.c.id.in_(sa.bindparam('ids', expanding=True)))


def _of_providers(conn, statement, roots, provider_ids, kinds,
                  ordered=False, **params):
    """Rows of ``statement(backend, key)`` (which joins resource_providers)
    for the trees rooted at ``roots`` and for ``provider_ids``; ``kinds``
    of its columns and ``ordered`` as for id_list.rows_among.
    """
    backend = backends.of(conn)
    rows: list[Any] = []
    for key, ids in (('root_provider_id', roots), ('id', provider_ids)):
        rows += id_list.rows_among(conn, statement(backend, key), ids,
                                   params, kinds, ordered)
    return rows
