"""Reading what a request can use into an engine.Universe, and the
Plans that generate its candidates from it.

``load_universe`` reads the requested classes' inventories (only the
rows that can matter, when a narrowing.Narrowing can tell), who holds the
requested traits and aggregates, and which trees the sharing providers
serve. With a limit that means not every candidate is needed,
``Planned.in_batches`` reads the trees a batch at a time instead, until
enough candidates came, with what their providers hold and are members
of.
"""
import bisect
import collections
from typing import Any
from typing import Callable
from typing import Iterator

import sqlalchemy as sa

from placement.candidates import engine
from placement.candidates import narrowing as planner
from placement.candidates import request as model
from placement.candidates import sql
from placement.candidates import trees_needed
from placement.candidates.names import SHARING_TRAIT
from placement.candidates.names import ids
from placement.candidates.settings import Settings


def finds_nothing_before(conn: sa.Connection, request: model.Request,
                         names: sql.Names, needs: list[engine.Need],
                         position: int) -> bool:
    """Whether upstream gives up with no candidates before it reaches the
    unknown name at ``position``: it vets the request-wide root traits,
    then each group in turn, each on its own.
    """
    if position < 0:
        return False
    if (request.root_required or request.root_forbidden) and not (
            sql.any_root_with_traits(
                conn, ids(request.root_required, names.traits),
                ids(request.root_forbidden, names.traits))):
        return True
    earlier = needs[:position]
    universe = load_universe(conn, request, earlier, names)
    plan = engine.Plan(universe, earlier,
                       anchor_filter(request, names, universe),
                       combined=False)
    if not all(plan.group_has_options(i) for i in range(len(earlier))):
        return True
    group = request.groups[position]
    if all(rc in names.classes for rc in group.resources):
        # A trait is unknown: the group's aggregates were vetted first.
        need = needs[position]
        if need.member_of and not _any_member(conn, need.member_of):
            return True
    return False


def _any_member(conn, member_of):
    aggregates = collections.defaultdict(set)
    for provider, aggregate, _root in sql.aggregate_members(
            conn, set().union(*member_of)):
        aggregates[provider].add(aggregate)
    return any(all(any_of & aggs for any_of in member_of)
               for aggs in aggregates.values())


def enough(request: model.Request, settings: Settings) -> int | None:
    """How many candidates will do, when they may be generated from a
    batch of trees at a time: depth first (anchors in id order), not
    sampled at random and nested (earlier versions summarise every
    candidate generated). None when all are needed.
    """
    if (not settings.batched or not request.nested or settings.randomize
            or settings.breadth_first):
        return None
    bounds = [request.limit] if request.limit is not None else []
    if settings.max_candidates >= 0:
        bounds.append(max(settings.max_candidates, 1))
    return min(bounds, default=None)


# Sharing providers whose usage a batched request reads up front, with
# their rows; more have it read for those each batch needs. On MariaDB
# the usage of 400 (at 100,000 nodes, 26,700 allocations) took 4.5 ms;
# reading it apart costs about 1.3 ms more (rows read twice, a round
# trip), which the usage of about a hundred outweighs.
SHARING_USAGE_UP_FRONT = 100


class Planned:
    """The Plans that generate a request's candidates, over one universe;
    ``plan`` is the latest, good for shaping any candidate they made.
    """

    def __init__(self, conn: sa.Connection, request: model.Request,
                 needs: list[engine.Need], names: sql.Names,
                 universe: engine.Universe, first_batch: int) -> None:
        self.conn = conn
        self.first_batch = first_batch
        self.request = request
        self.needs = needs
        self.universe = universe
        self.anchor_ok = anchor_filter(request, names, universe)
        self.trait_ids, self.aggregate_ids = linked_ids(request, needs,
                                                        names)
        # The latest engine.Plan (None until the first is made).
        self.plan: Any = None

    def _make(self, anchor_ok):
        request = self.request
        self.plan = engine.Plan(
            self.universe, self.needs, anchor_ok, isolate=request.isolate,
            same_subtrees=request.same_subtrees, nested=request.nested)
        if request.same_subtrees:
            load_ancestry(self.conn, self.plan)
        return self.plan

    def all(self, breadth_first: bool
            ) -> Iterator[tuple[int, tuple[int, ...]]]:
        """Every candidate, from the universe as loaded."""
        return self._make(self.anchor_ok).candidates(breadth_first)

    def in_batches(self, wanted: int
                   ) -> Iterator[tuple[int, tuple[int, ...]]]:
        """Candidates in depth-first order, reading the trees a batch at a
        time (by root id, as anchors are walked) until ``wanted`` came or
        no tree is left: the first batch has room for ``wanted`` trees, or
        for a tenth more than the same request needed last time
        (trees_needed), fewer or more.
        """
        universe, conn = self.universe, self.conn
        rc_ids = universe.requested_classes
        # Sharing providers serve trees of every batch: of their rows only
        # those able to give an amount are of use; the trees' rows are
        # read whole, the summaries show them. Their usage sums all they
        # serve: when they are many, it is read for those a batch needs
        # (serving its trees or in them), as it needs them.
        deferred = len(universe.sharing) > SHARING_USAGE_UP_FRONT
        shared = sql.inventories(conn, rc_ids, universe.narrowing, sql.FIT,
                                 provider_ids=universe.sharing,
                                 usage=not deferred)
        universe.add_inventories(shared)
        universe.keep_rows()
        # Sharing providers whose usage is still to be read, by root.
        usage_unread = {inv.provider: inv.root
                        for inv in shared} if deferred else {}
        if universe.narrowing is not None:
            universe.narrowing.learn_sharing(shared, (
                universe.traits.get(provider, set())
                for provider in universe.sharing))
        seen: set[tuple[int, ...]] = set()
        # Most trees give a candidate or more.
        size, after = max(wanted, self.first_batch), -1
        # A remainder smaller than half a batch comes along now, but for
        # a batch sized by what the request needed last time: that one
        # most likely ends it.
        look_ahead = True
        remembered = trees_needed.recall(conn, self.request)
        if remembered is not None:
            size = min(-(-remembered * 11 // 10),
                       size * trees_needed.MOST_TIMES_WANTED)
            look_ahead = False
        trees = made = 0
        anchor = -1
        # A tree the narrowing leaves out anchors no candidate but one of
        # sharing providers alone, and that only when they, not the tree,
        # are in the member_of aggregates: a batch needs the trees those
        # serve in its range of root ids, and of the trees the others
        # serve only its own (fewer where usable trees are sparse).
        narrowing = universe.narrowing
        far_reaching = set()
        if narrowing is not None and narrowing.member_of is not None:
            far_reaching = {
                provider for provider in universe.sharing
                if universe.aggregates.get(provider, set())
                & narrowing.member_of}
        while True:
            room = size + size // 2 if look_ahead else size
            look_ahead = True
            batch = sql.usable_roots(conn, universe.narrowing, after,
                                     room + 1)
            last = len(batch) <= room
            if not last:
                batch = batch[:size]
            # Anchors go by root id range: the last batch takes them all.
            upto = None if last else batch[-1]
            universe.new_batch()
            _add_links(conn, universe, (), self.aggregate_ids,
                       between=(after, upto))
            anchors = [*sql.sharing_anchors(
                conn, universe.sharing - far_reaching, batch),
                *sql.sharing_anchors_between(conn, far_reaching, after, upto)]
            for provider, root in anchors:
                universe.add_share_anchor(provider, root)
            if self.trait_ids:
                # Traits to check: all of the batch's trees and of those
                # its sharing providers anchor in, which the answer's
                # summaries show, rather than these and then those again.
                read = set(batch) | {root for _provider, root in anchors}
                universe.read_all_traits(sql.tree_traits(conn, read),
                                         self.trait_ids, read)
            if usage_unread:
                listed = set(batch)
                _read_usage(conn, universe, usage_unread, {
                    provider for provider, _root in anchors} | {
                    provider for provider, root in usage_unread.items()
                    if root in listed})
            universe.add_inventories(sql.inventories(
                conn, rc_ids, universe.narrowing, sql.ALL, roots=batch))
            universe.complete_trees.update(batch)
            plan = self._make(self._batch_filter(after, upto))
            try:
                for candidate in plan.candidates(seen=seen):
                    made += 1
                    anchor = candidate[0]
                    yield candidate
            finally:
                if made >= wanted:
                    # Enough came (the caller stops here): so many trees
                    # up to the last candidate's anchor were needed.
                    trees_needed.remember(conn, self.request, trees + (
                        bisect.bisect_right(batch, anchor)))
            if upto is None:
                return
            trees += len(batch)
            size = self._next_size(size, wanted - made, trees, made)
            after = upto

    def _next_size(self, size, missing, trees, made):
        """Trees for the next batch: as many as the candidates per tree
        so far say the ``missing`` ones need, a quarter more, at most
        twice the last batch (at least ``first_batch``)."""
        if not made:
            return size * 2
        needed = -(-missing * trees * 5 // (made * 4))
        return max(self.first_batch, min(size * 2, needed))

    def _batch_filter(self, after, upto):
        anchor_ok = self.anchor_ok

        def in_batch(root):
            return (after < root and (upto is None or root <= upto)
                    and anchor_ok(root))
        return in_batch


def _read_usage(conn, universe, unread, needed):
    """The usage of the providers ``needed`` among ``unread`` (provider:
    root), into ``universe``; they leave ``unread``."""
    needed = needed & unread.keys()
    if needed:
        universe.set_usage(
            (inv.provider, inv.rc, inv.used) for inv in sql.inventories(
                conn, universe.requested_classes, universe.narrowing,
                sql.FIT, provider_ids=needed))
        for provider in needed:
            del unread[provider]


def load_universe(conn: sa.Connection, request: model.Request,
                  needs: list[engine.Need], names: sql.Names,
                  narrow: bool = True,
                  inventories: bool = True) -> engine.Universe:
    """A Universe with what ``needs`` can use; with ``narrow``, only the
    inventories that can matter to them (``universe.narrowing`` says
    which), else all of the requested classes. Without ``inventories``
    (and with classes requested in no tree in particular) the caller
    reads them a batch of trees at a time (Planned.in_batches), with the
    traits and aggregates of those trees: the universe then holds only
    the sharing providers' traits and aggregates.
    """
    rc_ids = {rc for need in needs for rc, _amount in need.resources}
    roots = narrowing = None
    if rc_ids:
        # Root ids, and None for a need in no tree in particular.
        trees: set[Any] = {need.tree for need in needs if need.resources}
        roots = None if None in trees else trees
        if narrow:
            narrowing = _narrowing(request, needs, names)
            if not narrowing.survey(conn):
                narrowing = None
    universe = engine.Universe(rc_ids, roots, narrowing)
    trait_ids, aggregate_ids = linked_ids(request, needs, names)
    sharing_trait = names.traits.get(SHARING_TRAIT)
    # Candidates anchor only in the trees the request is confined to.
    # Otherwise, without ``inventories``, the caller reads the trees a
    # batch at a time: their providers' traits and aggregates with them,
    # and the trees each batch's sharing providers serve.
    batched = bool(rc_ids) and not inventories and universe.roots is None
    if batched:
        if sharing_trait is not None:
            # All their traits: the answer's summaries show them.
            universe.read_all_traits(sql.sharing_traits(conn, sharing_trait),
                                     trait_ids | {sharing_trait})
            universe.mark_sharing(sharing_trait)
        if universe.sharing:
            _add_links(conn, universe, (), aggregate_ids,
                       sharing_trait=sharing_trait)
        return universe
    if sharing_trait is not None:
        trait_ids = trait_ids | {sharing_trait}
    _add_links(conn, universe, trait_ids, aggregate_ids)
    universe.mark_sharing(sharing_trait)
    for provider, root in sql.sharing_anchors(conn, universe.sharing,
                                              universe.roots):
        universe.add_share_anchor(provider, root)
    if rc_ids:
        universe.add_inventories(sql.inventories(
            conn, rc_ids, universe.narrowing, sql.USABLE,
            roots=universe.roots))
    return universe


def load_links(conn: sa.Connection, request: model.Request,
               needs: list[engine.Need], names: sql.Names) -> engine.Universe:
    """A Universe with only who holds the traits and who is a member of
    the aggregates the request names: enough to decide providers on
    their own (engine.matching), which sharing never concerns.
    """
    universe = engine.Universe()
    _add_links(conn, universe, *linked_ids(request, needs, names))
    return universe


def linked_ids(request: model.Request, needs: list[engine.Need],
               names: sql.Names) -> tuple[set[int], set[int]]:
    """The ids of the traits and of the aggregates the request names
    (those it requires or forbids, or wants to be a member of or not).
    """
    trait_ids = set(ids(request.root_required | request.root_forbidden,
                        names.traits))
    aggregate_ids: set[int] = set()
    for need in needs:
        trait_ids |= need.forbidden.union(*need.required)
        aggregate_ids |= need.forbidden_aggs.union(*need.member_of)
    return trait_ids, aggregate_ids


def _add_links(conn, universe, trait_ids, aggregate_ids, **among):
    """Who holds ``trait_ids`` and who is a member of ``aggregate_ids``,
    into ``universe``; ``among`` as for sql.trait_holders.
    """
    universe.add_traits(sql.trait_holders(conn, trait_ids, **among))
    for provider, aggregate, root in sql.aggregate_members(
            conn, aggregate_ids, **among):
        universe.add_aggregate(provider, aggregate, root)


def _narrowing(request, needs, names):
    """What a narrowing.Narrowing can tell from ``needs`` alone."""
    amounts: dict[int, int] = {}
    for need in needs:
        for rc, amount in need.resources:
            amounts[rc] = min(amount, amounts.get(rc, amount))
    with_resources = [need for need in needs if need.resources]
    member_of = None
    if all(need.member_of for need in with_resources):
        member_of = frozenset().union(
            *(need.member_of[0] for need in with_resources))
    # Every group is satisfied in the tree of a candidate's anchor.
    required = sorted({any_of for need in needs for any_of in need.required},
                      key=sorted)
    return planner.Narrowing(
        amounts, sharing_trait=names.traits.get(SHARING_TRAIT),
        member_of=member_of,
        root_required=ids(request.root_required, names.traits),
        root_forbidden=ids(request.root_forbidden, names.traits),
        required=tuple(required))


def anchor_filter(request: model.Request, names: sql.Names,
                  universe: engine.Universe) -> Callable[[int], bool]:
    """root_required: which roots may anchor a candidate."""
    required = ids(request.root_required, names.traits)
    forbidden = ids(request.root_forbidden, names.traits)
    if not (required or forbidden):
        return lambda root: True

    def anchor_ok(root):
        traits = universe.traits.get(root, set())
        return required <= traits and not forbidden & traits
    return anchor_ok


def load_ancestry(conn: sa.Connection, plan: engine.Plan) -> None:
    """Parents of the providers same_subtree has to compare, up to their
    roots: those with requested inventory came with their parent; the
    others are read a level at a time.
    """
    universe = plan.universe
    pending = set()
    for level, slot in enumerate(plan.slots):
        if plan.needs[slot.group].single_provider:
            for providers in plan.options[level].values():
                pending.update(providers)
    missing = universe.missing_links(pending)
    while missing:
        for provider, parent in sql.parents(conn, missing):
            universe.add_parent(provider, parent)
        missing = universe.missing_links(missing)
