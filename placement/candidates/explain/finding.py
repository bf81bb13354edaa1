"""Finding why a request finds no candidates, or no more than it does, as
``causes`` (plain data; ``rendering`` words them).

``load`` reads what ``placement.candidates.find`` reads (same name
lookup, same universe, though not narrowed: a provider that does not fit
needs explaining too), into a ``Scene``; ``find`` then plans with the
candidate engine, so its verdict on a provider tree is the endpoint's
verdict. Every tree (a root provider, its descendants and the sharing
providers that reach it) that anchors no candidate is taken apart:

1. ``root_required`` on the root;
2. each slot of each request group with no option in the tree: every
   provider that could have served it says what it lacks (inventory,
   capacity, min_unit/max_unit/step_size, traits, aggregates, in_tree);
   when nothing in the tree has the class, the sharing providers that do
   say why they do not reach it;
3. the unsuffixed group's required traits, which the providers giving its
   resources must have between them;
4. otherwise the groups cannot be combined: the constraints that only
   exist between groups (group_policy=isolate, same_subtree, one provider
   per tree before 1.29) are lifted one at a time to find the culprit.

When candidates exist, the request-wide causes say whether ``limit`` or
``[placement] max_allocation_candidates`` cut them.
"""
import collections
import copy
import dataclasses
import functools
import itertools
import sys
from typing import Any
from typing import Callable
from typing import Iterable

import sqlalchemy as sa

from placement.candidates import engine
from placement.candidates import loading
from placement.candidates import names as naming
from placement.candidates import request as model
from placement.candidates import sql
from placement.candidates.explain import causes
from placement.candidates.settings import Settings
from placement.db import inventory as inventory_db
from placement.db import resource_provider as rp_db

# Candidates are counted up to here (or up to limit/max, if higher): enough
# to tell an operator "many", without generating an unbounded set.
COUNT_BOUND = 1000

_NONE: frozenset[int] = frozenset()


@dataclasses.dataclass
class Scene:
    """What ``find`` reasons over: the request with its names resolved
    (``needs``, one per group), the universe loaded for it, and every
    provider's row (as resource_provider.list_all reads them, in id
    order). ``memberships`` reads (provider, aggregate id) of every
    membership, when a sharing hint needs them; ``load_ancestry`` reads
    the parents same_subtree compares for a plan. ``unknown`` is an
    unknown name the endpoint gives up before reaching.
    """
    request: model.Request
    settings: Settings
    names: sql.Names
    needs: list[engine.Need]
    universe: engine.Universe
    providers: list[dict[str, Any]]
    memberships: Callable[[], Iterable[tuple[int, int]]]
    load_ancestry: Callable[[engine.Plan], None]
    unknown: naming.Unknown | None = None


def load(conn: sa.Connection, request: model.Request,
         settings: Settings) -> Scene:
    """The Scene of ``request``, read through ``conn``.

    Raises exception.Invalid exactly where ``candidates.find`` does (an
    unknown resource class or trait the endpoint reports).
    """
    names = sql.lookup(conn, *naming.names_mentioned(request))
    needs = [naming.group_need(group, names) for group in request.groups]
    unknown = None
    failure = naming.first_unknown_name(request, names)
    if failure is not None:
        position, unknown = failure
        if not loading.finds_nothing_before(conn, request, names, needs,
                                            position):
            raise naming.refusal(unknown)
    universe = loading.load_universe(conn, request, needs, names,
                                     narrow=False)
    return Scene(
        request=request, settings=settings, names=names, needs=needs,
        universe=universe, providers=rp_db.list_all(conn),
        memberships=functools.partial(sql.memberships, conn),
        load_ancestry=functools.partial(loading.load_ancestry, conn),
        unknown=unknown)


def find(scene: Scene) -> causes.Findings:
    """Why the request of ``scene`` finds no candidates, or no more."""
    return _Finder(scene).run()


class _Finder:

    def __init__(self, scene):
        self.scene = scene
        self.request = scene.request
        self.names = scene.names
        self.needs = scene.needs
        self.universe = scene.universe
        self.request_causes = []
        # {provider id: {cause: None}}: a sharing provider reached from
        # many trees states each of its own causes once.
        self.causes: collections.defaultdict[
            int, dict[causes.Cause, None]] = collections.defaultdict(dict)
        self.explained = set()
        self._memberships = None
        self.class_name = {i: n for n, i in self.names.classes.items()}
        self.trait_name = {i: n for n, i in self.names.traits.items()}
        self.aggregate_uuid = {i: u for u, i in self.names.aggregates.items()}
        self.providers = {row['id']: row for row in scene.providers}
        self.tree = collections.defaultdict(list)
        for provider_id, row in sorted(self.providers.items()):
            self.tree[row['root_provider_id']].append(provider_id)
        self.roots = sorted(self.tree)
        # {root: sharing providers of other trees that reach it}
        self.reach = collections.defaultdict(set)
        universe = self.universe
        for provider in universe.sharing:
            for root in universe.share_anchors.get(provider, ()):
                if root != self._root(provider):
                    self.reach[root].add(provider)

    # -- setup -------------------------------------------------------------

    def run(self):
        request = self.request
        if self.scene.unknown is not None:
            self.request_causes.append(causes.UnknownName(
                error=str(self.scene.unknown)))
        self._lost_trees()
        anchor_ok = loading.anchor_filter(
            request, self.names, self.universe)
        plan = self._plan(anchor_ok)
        # Groups are explained without root_required, which is reported
        # on its own.
        self.open_plan = plan
        if request.root_required or request.root_forbidden:
            self.open_plan = self._plan(lambda root: True)
        if request.same_subtrees:
            self.scene.load_ancestry(self.open_plan)
        self.anchor_ok = anchor_ok
        blocked = bool(self.request_causes)
        if blocked:
            found, complete, returned, anchored = 0, True, 0, set()
        else:
            found, complete, returned = self._count(plan)
            anchored = {root for root in plan.anchors
                        if _has_candidate(plan, root)}
        excluded = [root for root in self.roots if root not in anchored]
        self._explain_trees(excluded, quiet=blocked)
        return causes.Findings(
            found=found, found_complete=complete, returned=returned,
            trees=len(self.roots), excluded_trees=len(excluded),
            request_causes=self.request_causes,
            providers=self._provider_findings(set(excluded)))

    def _lost_trees(self):
        for group, need in zip(self.request.groups, self.needs):
            if need.lost:
                self.request_causes.append(causes.LostTree(
                    group=group.suffix, in_tree=group.in_tree))

    def _root(self, provider):
        return self.providers[provider]['root_provider_id']

    def _plan(self, anchor_ok, **overrides):
        options = dict(isolate=self.request.isolate,
                       same_subtrees=self.request.same_subtrees,
                       nested=self.request.nested)
        options.update(overrides)
        return engine.Plan(self.universe, self.needs, anchor_ok, **options)

    def _count(self, plan):
        """(found, found_complete, returned), and the request-wide causes
        for what limit and max_allocation_candidates cut.
        """
        settings, limit = self.scene.settings, self.request.limit
        ceiling = (max(settings.max_candidates, 1)
                   if settings.max_candidates >= 0 else None)
        bound = min(max(n for n in (ceiling, limit, COUNT_BOUND) if n) + 1,
                    sys.maxsize)
        stream = plan.candidates(breadth_first=settings.breadth_first)
        counted = sum(1 for _ in itertools.islice(stream, bound))
        found = counted if ceiling is None else min(counted, ceiling)
        complete = ceiling is not None or counted < bound
        returned = found if limit is None else min(found, limit)
        if ceiling is not None and counted > ceiling:
            self.request_causes.append(causes.CandidateCeiling(
                max_candidates=settings.max_candidates, ceiling=ceiling))
        if limit is not None and found > limit:
            self.request_causes.append(causes.LimitCut(
                limit=limit, found=found, found_complete=complete))
        return found, complete, returned

    # -- trees -------------------------------------------------------------

    def _explain_trees(self, excluded, quiet):
        """Causes for each excluded tree. ``quiet``: a request-wide cause
        already excludes everything, so a tree with nothing else against
        it gets no cause of its own.
        """
        uncombined = []
        for root in excluded:
            if not self.anchor_ok(root):
                self._root_required(root)
            empty_slots = [level for level, options
                           in enumerate(self.open_plan.options)
                           if root not in options]
            for level in empty_slots:
                self._explain_slot(root, level)
            traits_missing = self._spread_traits(root)
            if not (empty_slots or traits_missing or quiet
                    or _has_candidate(self.open_plan, root)):
                uncombined.append(root)
        if uncombined:
            self._explain_combinations(uncombined)
        for root in excluded:
            if root not in self.explained and not quiet:
                self._add(root, root, causes.Unsatisfied())

    def _add(self, root, provider, cause):
        """Record ``cause`` against ``provider`` for the tree of ``root``
        (a sharing provider's causes explain other trees).
        """
        self.causes[provider].setdefault(cause, None)
        self.explained.add(root)

    def _root_required(self, root):
        traits = self.universe.traits.get(root, _NONE)
        known = self.names.traits
        for name in sorted(self.request.root_required):
            if known.get(name) not in traits:
                self._add(root, root, causes.RootTrait(trait=name))
        for name in sorted(self.request.root_forbidden):
            if known.get(name) in traits:
                self._add(root, root,
                          causes.RootTrait(trait=name, forbidden=True))

    def _explain_slot(self, root, level):
        slot = self.open_plan.slots[level]
        need, group = self.needs[slot.group], self.request.groups[slot.group]
        if need.lost:
            return
        if need.tree is not None and need.tree != root:
            self._add(root, root, causes.OtherTree(
                group=group.suffix, in_tree=group.in_tree))
            return
        spread = not need.single_provider
        if spread and self.universe.aggregates.get(
                root, _NONE) & need.forbidden_aggs:
            self._add(root, root,
                      self._forbidden_aggregates(root, need, group))
            return
        if spread:
            amounts = [(rc, a) for rc, a in need.resources if rc == slot.rc]
        else:
            amounts = list(need.resources)
        holders = self._holders(root, need, amounts)
        if not holders:
            self._nothing_in_tree(root, need, group, amounts)
            return
        for provider in holders:
            for cause in self._provider_causes(
                    provider, root, need, group, amounts):
                self._add(root, provider, cause)
        sharing = [p for p in holders if self._root(p) != root]
        if len(sharing) == len(holders):
            self._add(root, root, causes.SharingCannotSupply(
                group=group.suffix, classes=self._class_names(amounts),
                providers=self._named(sharing)))

    def _holders(self, root, need, amounts):
        """The providers that could have served the slot: those of the
        tree (and, without in_tree, the sharing providers reaching it)
        with inventory of one of its classes; for a resourceless group,
        those of the tree it would start from.
        """
        universe = self.universe
        if amounts:
            near = list(self.tree[root])
            if need.tree is None:
                near += sorted(self.reach[root])
            return [p for p in near if any(
                (p, rc) in universe.inventory for rc, _amount in amounts)]
        start = engine.selected(universe, need)
        return [p for p in self.tree[root] if p in start]

    def _nothing_in_tree(self, root, need, group, amounts):
        if not amounts:
            if need.required:
                selector = causes.NothingSelects(
                    group=group.suffix, by='trait',
                    names=tuple(sorted(self._trait_names(need.required[0]))))
            elif group.member_of:
                selector = causes.NothingSelects(
                    group=group.suffix, by='aggregate',
                    names=tuple(sorted(group.member_of[0])))
            else:
                selector = causes.NothingSelects(group=group.suffix, by=None)
            self._add(root, root, selector)
            return
        if root in self.universe.sharing:
            self._add(root, root, causes.SharingRoot())
            return
        from_sharing = need.tree is None
        unreached, pools = ((), ())
        if from_sharing:
            unreached, pools = self._unshared(root, [rc for rc, _ in amounts])
        self._add(root, root, causes.NoInventoryInTree(
            group=group.suffix, classes=self._class_names(amounts),
            from_sharing=from_sharing, unreached=unreached, pools=pools))

    # -- providers ---------------------------------------------------------

    def _provider_causes(self, provider, root, need, group, amounts):
        suffix = group.suffix
        universe = self.universe
        spread = not need.single_provider
        found: list[causes.Cause] = []
        for rc, amount in amounts:
            inv = universe.inventory.get((provider, rc))
            name = self.class_name[rc]
            if inv is None:
                found.append(causes.NoInventory(group=suffix,
                                                resource_class=name))
            else:
                found += _inventory_causes(inv, name, amount, suffix)
        traits = universe.traits.get(provider, _NONE)
        if not spread:
            # The unsuffixed group's traits count across its providers.
            for any_of in need.required:
                if not any_of & traits:
                    found.append(self._missing_trait(any_of, group))
        for trait in sorted(self._trait_names(traits & need.forbidden)):
            found.append(causes.ForbiddenTrait(group=suffix, trait=trait))
        aggregates = universe.aggregates.get(provider, _NONE)
        # An unsuffixed group's aggregates may be the root's instead.
        via_root = (spread and self._root(provider) == root and all(
            any_of & universe.aggregates.get(root, _NONE)
            for any_of in need.member_of))
        if not via_root:
            for uuids, any_of in zip(group.member_of, need.member_of):
                if not any_of & aggregates:
                    found.append(causes.NotMember(
                        group=suffix, member_of=tuple(sorted(uuids))))
        if aggregates & need.forbidden_aggs:
            found.append(self._forbidden_aggregates(provider, need, group))
        return found

    def _missing_trait(self, any_of, group, between_holders=False):
        return causes.MissingTrait(
            group=group.suffix,
            traits=tuple(sorted(self._trait_names(any_of))),
            between_holders=between_holders)

    def _forbidden_aggregates(self, provider, need, group):
        ids = self.universe.aggregates.get(provider, _NONE) & (
            need.forbidden_aggs)
        return causes.ForbiddenAggregates(
            group=group.suffix,
            aggregates=tuple(sorted(self.aggregate_uuid[i] for i in ids)))

    def _trait_names(self, ids):
        return {self.trait_name[i] for i in ids}

    def _class_names(self, amounts):
        return tuple(self.class_name[rc] for rc, _amount in amounts)

    def _named(self, providers):
        return tuple(causes.Provider(name=self.providers[p]['name'],
                                     uuid=self.providers[p]['uuid'])
                     for p in providers)

    # -- sharing providers -------------------------------------------------

    def _unshared(self, root, rc_ids):
        """Why the providers outside the tree that have the classes do not
        share them with it: (the sharing providers in no aggregate with
        the tree, the providers in an aggregate with the tree that lack
        the sharing trait and offer none of the request's other classes,
        so are pools rather than other hosts). A sharing provider's own
        tree gets none: it is not meant to anchor.
        """
        universe = self.universe
        outside = sorted({inv.provider for rc in rc_ids
                          for inv in universe.by_class.get(rc, ())
                          if self._root(inv.provider) != root})
        unreached = [p for p in outside if p in universe.sharing]
        tree_aggregates = set().union(*(
            self._membership(p) for p in self.tree[root]))
        requested = {rc for need in self.needs for rc, _ in need.resources}
        pools = [p for p in outside
                 if p not in universe.sharing
                 and self._membership(p) & tree_aggregates
                 and not any((p, rc) in universe.inventory
                             for rc in requested - set(rc_ids))]
        return self._named(unreached), self._named(pools)

    def _membership(self, provider):
        """All aggregate ids of a provider (the universe only holds the
        requested ones); read once, when a hint needs them.
        """
        if self._memberships is None:
            self._memberships = collections.defaultdict(set)
            for provider_id, aggregate_id in self.scene.memberships():
                self._memberships[provider_id].add(aggregate_id)
        return self._memberships.get(provider, _NONE)

    # -- whole groups ------------------------------------------------------

    def _spread_traits(self, root):
        """The unsuffixed group's required traits, which the providers that
        could give its resources lack between them. Returns whether some
        are missing.
        """
        missing = False
        for need, group in zip(self.needs, self.request.groups):
            if (need.single_provider or not need.required or need.lost
                    or need.tree not in (None, root)):
                continue
            holders = self._holders(root, need, need.resources)
            if not holders:
                continue
            traits = set().union(*(self.universe.traits.get(p, _NONE)
                                   for p in holders))
            for any_of in need.required:
                if not any_of & traits:
                    self._add(root, root, self._missing_trait(
                        any_of, group, between_holders=holders != [root]))
                    missing = True
        return missing

    def _explain_combinations(self, roots):
        """Every group has options in these trees, yet no candidate comes
        out: lift one cross-group constraint at a time.
        """
        request = self.request
        among = set(roots)

        def only_these(root):
            return root in among

        relaxations: list[tuple[dict[str, Any], causes.Cause]] = []
        if request.isolate:
            relaxations.append((dict(isolate=False),
                                causes.CrossGroup(constraint='group_policy')))
        if request.same_subtrees:
            relaxations.append((dict(same_subtrees=()), causes.CrossGroup(
                constraint='same_subtree', same_subtrees=tuple(
                    tuple(sorted(s)) for s in request.same_subtrees))))
        if not request.nested:
            relaxations.append((dict(nested=True), causes.CrossGroup(
                constraint='one_provider_per_tree')))
        explained = set()
        for overrides, cause in relaxations:
            plan = self._plan(only_these, **overrides)
            for root in roots:
                if _has_candidate(plan, root):
                    self._add(root, root, cause)
                    explained.add(root)
        for root in roots:
            if root not in explained:
                self._add(root, root, self._combined_shortfall(root))

    def _combined_shortfall(self, root):
        """The class the groups together want more of than the tree's
        eligible providers have free, if any; else Unsatisfied.
        """
        plan, universe = self.open_plan, self.universe
        wanted: collections.Counter[int] = collections.Counter()
        eligible = collections.defaultdict(set)
        for level, amounts in enumerate(plan.slot_amounts):
            for rc, amount in amounts:
                wanted[rc] += amount
                eligible[rc].update(plan.options[level].get(root, ()))
        for rc, amount in sorted(wanted.items()):
            free = sum(universe.room(p, rc) for p in eligible[rc]
                       if (p, rc) in universe.inventory)
            if amount > free:
                return causes.CombinedShortfall(
                    resource_class=self.class_name[rc], requested=amount,
                    free=free)
        return causes.Unsatisfied()

    # -- result ------------------------------------------------------------

    def _provider_findings(self, excluded):
        found = []
        for root in self.roots:
            for provider in self.tree[root]:
                row = self.providers[provider]
                found.append(causes.ProviderFindings(
                    uuid=row['uuid'], name=row['name'],
                    root_uuid=row['root_provider_uuid'],
                    excluded=root in excluded,
                    causes=list(self.causes.get(provider, {}))))
        return found


def _inventory_causes(inv, name, amount, suffix):
    """What in one inventory refuses ``amount`` (engine.refusals)."""
    found: list[causes.Cause] = []
    for refused in engine.refusals(inv, amount):
        if refused == 'capacity':
            free = inventory_db.capacity(
                inv.total, inv.reserved, inv.ratio) - inv.used
            found.append(causes.Capacity(
                group=suffix, resource_class=name, requested=amount,
                free=max(free, 0), total=inv.total, reserved=inv.reserved,
                ratio=inv.ratio, used=inv.used))
        else:
            found.append(causes.UnitLimit(
                group=suffix, resource_class=name, requested=amount,
                limit_kind=refused, limit=getattr(inv, refused)))
    return found


def _has_candidate(plan, root):
    """Whether ``root`` anchors at least one candidate of ``plan``; stops
    at the first.
    """
    if not all(root in options for options in plan.options):
        return False
    probe = copy.copy(plan)
    probe.anchors = [root]
    return next(probe.candidates(), None) is not None
