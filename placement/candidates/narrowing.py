"""Which inventory rows can matter to a request, so that only those are
read: the planner (``Narrowing``), the survey it plans from, and the
conditions that put it in the statements of placement.candidates.sql.
"""
import collections
import dataclasses
import functools
from typing import TYPE_CHECKING
from typing import Any
from typing import Iterable

import sqlalchemy as sa

from placement.candidates import survey_cache
from placement.db import tables

if TYPE_CHECKING:
    from placement.candidates import sql

_RP = tables.resource_providers
_INV = tables.inventories
_RPT = tables.resource_provider_traits
_RPA = tables.resource_provider_aggregates

# Above any max_unit (an INT column): asks of more fit nowhere.
_BEYOND_MAX_UNIT = 0x7FFFFFFF + 1

# What providers are linked to: (link table, column of the linked id).
LINKS = {
    'trait': (_RPT, _RPT.c.trait_id),
    'aggregate': (_RPA, _RPA.c.aggregate_id),
}


@dataclasses.dataclass
class Narrowing:
    """Which inventory rows can matter to a request, so that only those
    are read.

    ``amounts`` holds the smallest amount any group asks of each class: a
    row that could not give that much even unused (capacity, max_unit) is
    of no use. Usage is left to the engine: looking it up for every row
    would cost more than reading the rows.
    A tree is of use only when its root is in one of ``member_of`` (if not
    None: every group with resources is restricted to these aggregates),
    has every trait of ``root_required`` and none of ``root_forbidden``;
    when, for every ``scarce`` class, it has a row able to give it or
    shares with a sharing provider (trait ``sharing_trait``) that has
    one; and when, for every any-of set of trait ids in ``required``
    (those the groups require), a provider of the tree or a sharing
    provider it shares with has one of them.
    Sharing providers are read whatever their tree, for the trees they
    serve.
    """
    amounts: dict[int, int]
    sharing_trait: int | None = None
    member_of: frozenset[int] | None = None
    root_required: frozenset[int] = frozenset()
    root_forbidden: frozenset[int] = frozenset()
    required: tuple[frozenset[int], ...] = ()
    # Checking a class most trees offer would cost more than it saves.
    scarce: frozenset[int] = frozenset()
    # From the survey: the trees, the rows able to give each class, the
    # providers having a trait of each set of ``required`` and the
    # members of the ``member_of`` aggregates.
    trees: int = 0
    able: dict[int, int] = dataclasses.field(default_factory=dict)
    holders: tuple[int, ...] = ()
    members: int = 0
    # The keys (as _Shape's order) of the conditions no sharing provider
    # meets, once that is known: a tree meets them by itself or not.
    unshared: frozenset[str] = frozenset()

    def learn_sharing(self, rows: Iterable['sql.Inventory'],
                      traits: Iterable[set[int]]) -> None:
        """Set ``unshared`` from the sharing providers' ``rows`` this
        narrowing keeps (FIT) and the requested ``traits`` of each."""
        classes = sorted(self.amounts)
        offered = {inv.rc for inv in rows}
        held = set().union(*traits)
        self.unshared = frozenset(
            ['rc_%d' % i for i, rc in enumerate(classes)
             if rc not in offered]
            + ['required_%d' % i for i, any_of in enumerate(self.required)
               if not any_of & held])

    def survey(self, conn: sa.Connection) -> bool:
        """Count the rows of each class able to give its amount, the
        trees, the holders of the required traits and the members of the
        member_of aggregates (or take the counts of a recent survey); set
        ``scarce`` to the classes at most half as many rows can give as
        there are trees, or as the most common class has rows. Return
        whether the narrowing leaves any row out.
        """
        classes = sorted(self.amounts)
        amounts = tuple(sorted(self.amounts.items()))

        def count_rows():
            counts = conn.execute(
                _survey_statement(len(classes)),
                dict(class_params(amounts), rc_ids=classes)).all()
            # Every row carries the number of trees.
            return ({rc: int(fitting) for rc, _count, fitting, _ in counts},
                    {rc: count for rc, count, _fitting, _trees in counts},
                    counts[0][3] if counts else 0)
        self.able, rows, self.trees = survey_cache.recently_counted(
            conn, amounts, count_rows)
        if self.required:
            held = _linked_counts(conn, 'trait', set().union(*self.required))
            # As for classes: checking a set most trees hold (Nova's
            # OWNER_NOVA) would cost more than it saves; the engine
            # checks the traits of the trees read.
            self.required = tuple(
                any_of for any_of in self.required
                if sum(held.get(trait, (0, 0))[1] for trait in any_of) * 2
                <= self.trees)
            self.holders = tuple(sum(held.get(trait, (0, 0))[0]
                                     for trait in any_of)
                                 for any_of in self.required)
        if self.member_of is not None:
            self.members = sum(providers for providers, _trees in
                               _linked_counts(conn, 'aggregate',
                                              self.member_of).values())
        able = self.able
        most = max(self.trees, *able.values()) if able else 0
        self.scarce = frozenset(rc for rc in classes
                                if able.get(rc, 0) * 2 <= most)
        return bool(able != rows or self.scarce or self.member_of is not None
                    or self.root_required or self.root_forbidden
                    or self.required)

    def shape(self, order: tuple[str, ...] = (),
              probed: tuple[str, ...] = ()) -> '_Shape':
        """What the statement's structure depends on (not its values);
        ``order`` and ``probed`` as _Shape's."""
        classes = sorted(self.amounts)
        return _Shape(
            classes=len(classes),
            scarce=tuple(i for i, rc in enumerate(classes)
                         if rc in self.scarce),
            sharing=self.sharing_trait is not None,
            member_of=self.member_of is not None,
            root_required=len(self.root_required),
            root_forbidden=bool(self.root_forbidden),
            required=len(self.required), order=order, probed=probed,
            unshared=tuple(sorted(self.unshared)))

    def roots_shape(self, roots: int) -> '_Shape':
        """The shape to find the first ``roots`` usable roots with, in id
        order, looking at the trees one by one: what few providers have
        (a scarce class's able rows, the holders of a set of required
        traits, the members of the member_of aggregates) is read first
        and checked first, and all else looked up for each tree that
        passed. So is even the rarest, if so common that the trees
        looked at (about ``roots`` / rows * trees) cost less than its
        rows would, a tree costing about twice a row.
        """
        classes = sorted(self.amounts)
        counts = {'rc_%d' % i: self.able.get(rc, 0)
                  for i, rc in enumerate(classes) if rc in self.scarce}
        counts.update(('required_%d' % i, held)
                      for i, held in enumerate(self.holders))
        if self.member_of is not None:
            counts['member_of'] = self.members
        order = tuple(sorted(counts, key=lambda key: (counts[key], key)))
        probed = order[1:]
        if order and counts[order[0]] ** 2 > 2 * roots * self.trees:
            probed = order
        return self.shape(order, probed)

    def params(self) -> dict[str, Any]:
        params = class_params(sorted(self.amounts.items()))
        params.update(sharing_trait=self.sharing_trait,
                      member_of=sorted(self.member_of or ()),
                      root_forbidden=sorted(self.root_forbidden))
        for i, trait in enumerate(sorted(self.root_required)):
            params['root_required_%d' % i] = trait
        for i, any_of in enumerate(self.required):
            params['required_%d' % i] = sorted(any_of)
        return params


def class_params(resources: Iterable[tuple[int, int]]) -> dict[str, Any]:
    """``rc_i`` and ``amount_i`` for the (class, amount) pairs in order,
    as the statements that check amounts bind them.
    """
    params = {}
    for i, (rc, amount) in enumerate(resources):
        params['rc_%d' % i] = rc
        params['amount_%d' % i] = min(amount, _BEYOND_MAX_UNIT)
    return params


# ``order``: the keys ('rc_<i>' for scarce class i, 'required_<i>' for
# required set i, 'member_of') of the conditions on a tree in the order
# they are checked (none: that order); ``probed``: those looked up for
# each tree (a correlated subquery), checked after all others, rather
# than among all the providers meeting them (Narrowing.roots_shape);
# ``unshared``: those no sharing provider meets (Narrowing.unshared).
_Shape = collections.namedtuple(
    '_Shape', 'classes scarce sharing member_of root_required '
              'root_forbidden required order probed unshared')


def fits(inv: Any, classes: Iterable[int],
         rc: Any = None) -> sa.ColumnElement[bool]:
    """The row could give class ``i``'s amount, for one of ``classes``;
    ``rc`` stands for the row's class column if given.
    """
    rc = inv.c.resource_class_id if rc is None else rc
    return sa.or_(*(
        sa.and_(rc == sa.bindparam('rc_%d' % i),
                inv.c.max_unit >= sa.bindparam('amount_%d' % i),
                (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio
                >= sa.bindparam('amount_%d' % i))
        for i in classes))


def _linked_counts(conn, kind, ids):
    """{id: (providers, trees) linked to it} of ``ids`` of ``kind`` (as
    LINKS), from a recent survey if there was one."""
    ids = sorted(ids)
    return survey_cache.recently_counted(
        conn, (kind, tuple(ids)),
        lambda: {linked: (providers, trees) for linked, providers, trees
                 in conn.execute(_linked_count_statement(kind),
                                 {'ids': ids})})


@functools.lru_cache(maxsize=2)
def _linked_count_statement(kind):
    link, column = LINKS[kind]
    return (sa.select(column, sa.func.count(),
                      sa.func.count(sa.distinct(_RP.c.root_provider_id)))
            .select_from(
                link.join(_RP, _RP.c.id == link.c.resource_provider_id))
            .where(column.in_(sa.bindparam('ids', expanding=True)))
            .group_by(column))


@functools.lru_cache(maxsize=16)
def _survey_statement(classes):
    fitting = sa.func.sum(sa.case((fits(_INV, range(classes)), 1), else_=0))
    trees = (sa.select(sa.func.count()).select_from(_RP)
             .where(_RP.c.parent_provider_id.is_(None)).scalar_subquery())
    return (sa.select(_INV.c.resource_class_id, sa.func.count(), fitting,
                      trees)
            .where(_INV.c.resource_class_id.in_(
                sa.bindparam('rc_ids', expanding=True)))
            .group_by(_INV.c.resource_class_id))


def sharing(provider: Any) -> sa.ColumnElement[bool]:
    """``provider`` has the sharing trait (bound as ``sharing_trait``)."""
    return provider.in_(sa.select(_RPT.c.resource_provider_id).where(
        _RPT.c.trait_id == sa.bindparam('sharing_trait')))


def usable(shape: '_Shape', inv: Any, rp: Any,
           rc: Any) -> sa.ColumnElement[bool]:
    """Whether the row of ``inv`` (joined to ``rp``) can matter."""
    fit = fits(inv, range(shape.classes), rc)
    tree = tree_usable(shape, rp.c.root_provider_id)
    if not tree:
        return fit
    of_use = sa.and_(*tree)
    if shape.sharing:
        of_use = sa.or_(of_use, sharing(inv.c.resource_provider_id))
    return sa.and_(fit, of_use)


def tree_usable(shape: '_Shape', root: Any) -> list[Any]:
    """The conditions on the tree of ``root`` (a column) for its rows to
    be of use, in the order to check them.
    """
    keyed = {'rc_%d' % i: _offers(shape, root, i) for i in shape.scarce}
    if shape.member_of:
        member = _RP.alias('member')
        keyed['member_of'] = _tree_has(
            root, member, _RPA, _RPA.c.resource_provider_id,
            _RPA.c.aggregate_id.in_(
                sa.bindparam('member_of', expanding=True)),
            'member_of' in shape.probed)
    keyed.update(('required_%d' % i, _holds(shape, root, i))
                 for i in range(shape.required))
    order = shape.order or tuple(keyed)
    tree = [keyed[key] for key in order if key not in shape.probed]
    for i in range(shape.root_required):
        tree.append(root.in_(
            sa.select(_RPT.c.resource_provider_id)
            .where(_RPT.c.trait_id == sa.bindparam('root_required_%d' % i))))
    if shape.root_forbidden:
        tree.append(root.not_in(
            sa.select(_RPT.c.resource_provider_id)
            .where(_RPT.c.trait_id.in_(
                sa.bindparam('root_forbidden', expanding=True)))))
    probes = [keyed[key] for key in order if key in shape.probed]
    if not (tree and probes):
        return tree + probes
    # Only a tree that passed the others is looked up: in a CASE, which
    # the database evaluates in order, where MariaDB would look up every
    # tree before it joins the others' providers.
    return [sa.case((sa.and_(*tree), sa.and_(*probes)), else_=sa.false())]


def _offers(shape, root, i):
    """The tree of ``root`` has a row able to give class ``i``, or shares
    with a sharing provider that has one.
    """
    inv = _INV.alias('offer')
    rp = _RP.alias('offer_rp')
    offers = _tree_has(
        root, rp, inv, inv.c.resource_provider_id, fits(inv, [i]),
        'rc_%d' % i in shape.probed)
    if not shape.sharing or 'rc_%d' % i in shape.unshared:
        return offers
    sharer = (sa.select(inv.c.resource_provider_id)
              .where(fits(inv, [i]), sharing(inv.c.resource_provider_id)))
    # MariaDB may look the tree's rows up root by root even so: after the
    # (read once) trees served, which spares it the lookups of those.
    return sa.or_(_served(root, sharer), offers)


def _holds(shape, root, i):
    """A provider of the tree of ``root`` has one of the traits of
    required set ``i``, or a sharing provider the tree shares with has.
    """
    link = _RPT.alias('holder_trait')
    rp = _RP.alias('holder_rp')
    traits: sa.BindParameter[list[int]] = sa.bindparam(
        'required_%d' % i, expanding=True)
    holds = _tree_has(
        root, rp, link, link.c.resource_provider_id,
        link.c.trait_id.in_(traits), 'required_%d' % i in shape.probed)
    if not shape.sharing or 'required_%d' % i in shape.unshared:
        return holds
    sharer = (sa.select(link.c.resource_provider_id)
              .where(link.c.trait_id.in_(traits),
                     sharing(link.c.resource_provider_id)))
    return sa.or_(holds, _served(root, sharer))


def _tree_has(root, rp, rows, provider, condition, probe):
    """The tree of ``root`` has a provider (``rp``, a resource_providers
    alias) with one of the ``rows`` (of its ``provider`` column) meeting
    ``condition``: looked up for this root alone if ``probe``, else among
    the roots of all such providers, read first.
    """
    if probe:
        # A scalar subquery, which neither MariaDB nor PostgreSQL turns
        # into a read of every such provider, as they would an EXISTS;
        # from the tree's providers, then each one's rows: without
        # statistics (SQLite) a join of both could start from the rows
        # meeting ``condition``, all of them for a trait every provider
        # has, for each tree.
        held = sa.exists().where(provider == rp.c.id, condition)
        return (sa.select(rp.c.id)
                .where(rp.c.root_provider_id == root, held)
                .limit(1).scalar_subquery().is_not(None))
    return root.in_(
        sa.select(rp.c.root_provider_id)
        .select_from(rows.join(rp, rp.c.id == provider)).where(condition))


def _served(root, sharers):
    """The tree of ``root`` has a provider in an aggregate of one of the
    providers ``sharers`` selects.
    """
    mine = _RPA.alias('sharer_agg')
    peer = _RPA.alias('peer_agg')
    peer_rp = _RP.alias('peer_rp')
    return root.in_(
        sa.select(peer_rp.c.root_provider_id).select_from(
            peer.join(peer_rp, peer_rp.c.id == peer.c.resource_provider_id))
        .where(peer.c.aggregate_id.in_(
            sa.select(mine.c.aggregate_id)
            .where(mine.c.resource_provider_id.in_(sharers)))))

