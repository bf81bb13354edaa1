"""Allocation candidates: which sets of providers can satisfy a request.

``find(conn, request, settings)`` answers a parsed ``request.Request`` in
three steps:

1. ``sql`` resolves the names the request uses and loads, in a handful of
   set-based queries, the inventories of the requested classes (with
   usage), who has the requested traits and aggregates, and which trees
   the sharing providers serve;
2. ``engine`` turns that into options per anchor (root provider) and
   walks their combinations lazily, in the configured order, so that
   ``limit`` and ``max_allocation_candidates`` stop the work early;
3. the providers of the chosen candidates' trees are summarised.
"""
import collections
import contextlib
import dataclasses
import gc
import itertools
import random
import sys

import os_traits

from placement.candidates import engine
from placement.candidates import request as candidate_request
from placement.candidates import sql
from placement import exception

SHARING_TRAIT = os_traits.MISC_SHARES_VIA_AGGREGATE
BREADTH_FIRST = 'breadth-first'


@dataclasses.dataclass
class Settings:
    """The [placement] options that shape generation."""
    randomize: bool = False
    max_candidates: int = -1
    strategy: str = 'depth-first'

    @classmethod
    def from_conf(cls, conf):
        group = conf.placement
        return cls(group.randomize_allocation_candidates,
                   group.max_allocation_candidates,
                   group.allocation_candidates_generation_strategy)


# Tuples, as there are as many as candidates and providers summarised.
Candidate = collections.namedtuple('Candidate', 'allocations mappings')
Candidate.__doc__ = (
    '{provider uuid: {class: amount}} and {suffix: [provider uuid]}.')

Summary = collections.namedtuple(
    'Summary', 'resources traits parent_uuid root_uuid')
Summary.__doc__ = ('A provider of a candidate\'s tree: {class: {"capacity": '
                   'c, "used": u}}, trait names, parent and root uuids.')


@dataclasses.dataclass
class Result:
    candidates: list
    summaries: dict


def find(conn, request, settings):
    """The candidates for ``request`` and the summaries of their providers.

    Raises exception.Invalid, with upstream's message, for an unknown
    resource class or trait, unless upstream would have found nothing
    before looking that name up.
    """
    with gc_paused():
        return _find(conn, request, settings)


@contextlib.contextmanager
def gc_paused():
    """Hold the cyclic garbage collector while many small acyclic objects
    (freed by reference counting) are made and dropped; it would rescan
    them again and again. Callers that keep a big result should drop it
    inside the block, or the first collection after it pays for it all.
    The switch is process-wide: a concurrent request's block may end the
    pause early, which only costs speed.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _find(conn, request, settings):
    names = sql.lookup(conn, *names_mentioned(request))
    needs = [group_need(group, names) for group in request.groups]
    failure = first_unknown_name(request, names)
    if failure is not None:
        position, unknown = failure
        if finds_nothing_before(conn, request, names, needs, position):
            return Result([], {})
        if unknown.resource_class:
            raise exception.Invalid(
                'Invalid resource class in resources parameter: %s' % unknown)
        raise exception.Invalid(str(unknown))
    if any(need.lost for need in needs):
        # A group confined to a tree that does not exist is never met.
        return Result([], {})
    wanted = _enough(request, settings)
    universe = load_universe(conn, request, needs, names,
                             inventories=wanted is None)
    planned = _Planned(conn, request, needs, names, universe)
    if (wanted is None or universe.roots is not None
            or not universe.requested_classes):
        stream = planned.all(breadth_first=settings.strategy == BREADTH_FIRST)
    else:
        stream = planned.in_batches(wanted)
    if settings.max_candidates >= 0:
        # Upstream stops after adding a candidate, so 0 still gives one.
        stream = itertools.islice(stream, max(settings.max_candidates, 1))
    if request.nested:
        chosen = _select(stream, request.limit, settings.randomize)
        return _result(conn, request, planned.plan, names, chosen)
    # Before 1.29 upstream summarises the providers of every candidate
    # it generated, in the trees of those it returns.
    generated = list(stream)
    plan = planned.plan
    chosen = _select(iter(generated), request.limit, settings.randomize)
    used = plan.providers_used(c for _anchor, c in generated)
    return _result(conn, request, plan, names, chosen, used)


def names_mentioned(request):
    """Resource classes, traits, aggregates and providers to look up."""
    classes, aggregates, providers = set(), set(), set()
    traits = {SHARING_TRAIT} | request.root_required | request.root_forbidden
    for group in request.groups:
        classes.update(group.resources)
        traits.update(group.trait_names)
        for any_of in group.member_of:
            aggregates |= any_of
        aggregates |= group.forbidden_aggs
        if group.in_tree:
            providers.add(group.in_tree)
    return classes, traits, aggregates, providers


def group_need(group, names):
    """The group with ids for names; unknown classes and traits are left
    out (they are reported before a need is used).
    """
    tree = names.providers.get(group.in_tree) if group.in_tree else None
    return engine.Need(
        suffix=group.suffix,
        resources=tuple((names.classes[rc], amount)
                        for rc, amount in group.resources.items()
                        if rc in names.classes),
        required=tuple(_ids(any_of, names.traits)
                       for any_of in group.required),
        forbidden=_ids(group.forbidden, names.traits),
        member_of=tuple(_ids(any_of, names.aggregates)
                        for any_of in group.member_of),
        forbidden_aggs=_ids(group.forbidden_aggs, names.aggregates),
        tree=tree[1] if tree else None,
        lost=bool(group.in_tree) and tree is None)


def _ids(names, known):
    return frozenset(known[name] for name in names if name in known)


class Unknown(exception.NotFound):
    """A resource class or trait the request names does not exist."""

    def __init__(self, message, resource_class=False):
        super().__init__(message)
        self.resource_class = resource_class


def first_unknown_name(request, names):
    """(position, Unknown) for the first unknown name upstream reports:
    root_required (position -1), then per group its classes, then its
    traits.
    """
    for trait in sorted(request.root_required) + sorted(
            request.root_forbidden):
        if trait not in names.traits:
            return -1, _no_trait(trait)
    for position, group in enumerate(request.groups):
        unknown = _unknown_in_group(group, names)
        if unknown is not None:
            return position, unknown
    return None


def _unknown_in_group(group, names):
    for rc in group.resources:
        if rc not in names.classes:
            return Unknown('No such resource class %s.' % rc,
                           resource_class=True)
    for any_of in group.required + [group.forbidden]:
        for trait in sorted(any_of):
            if trait not in names.traits:
                return _no_trait(trait)
    return None


def _no_trait(name):
    return Unknown('No such trait(s): %s.' % name)


def matching_providers(conn, group):
    """Ids of the providers that on their own satisfy ``group`` (a
    request.Group), as GET /resource_providers filters: room for each
    class of ``resources``, every ``required`` any-of set and no
    ``forbidden`` trait, an aggregate of every ``member_of`` set and none
    of ``forbidden_aggs``, in the tree of ``in_tree``. Without filters,
    every provider.

    Raises Unknown (``resource_class`` tells which kind) for a class or
    trait that does not exist.
    """
    request = candidate_request.Request(groups=[group])
    names = sql.lookup(conn, *names_mentioned(request))
    unknown = _unknown_in_group(group, names)
    if unknown is not None:
        raise unknown
    need = group_need(group, names)
    if need.lost:
        return set()
    # Room is decided in SQL, traits and aggregates as for candidates.
    if need.resources:
        among = sql.providers_with_room(conn, need.resources, need.tree)
    else:
        among = sql.provider_ids(conn, need.tree)
    need = dataclasses.replace(need, resources=())
    universe = load_universe(conn, request, [need], names)
    return engine.matching(universe, need, among)


def finds_nothing_before(conn, request, names, needs, position):
    """Whether upstream gives up with no candidates before it reaches the
    unknown name at ``position``: it vets the request-wide root traits,
    then each group in turn, each on its own.
    """
    if position < 0:
        return False
    if (request.root_required or request.root_forbidden) and not (
            sql.any_root_with_traits(
                conn, _ids(request.root_required, names.traits),
                _ids(request.root_forbidden, names.traits))):
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


def _enough(request, settings):
    """How many candidates will do, when they may be generated from a
    batch of trees at a time: depth first (anchors in id order), not
    sampled at random and nested (earlier versions summarise every
    candidate generated). None when all are needed.
    """
    if (not request.nested or settings.randomize
            or settings.strategy == BREADTH_FIRST):
        return None
    bounds = [request.limit] if request.limit is not None else []
    if settings.max_candidates >= 0:
        bounds.append(max(settings.max_candidates, 1))
    return min(bounds, default=None)


def _first_batch(wanted):
    """Trees to read first: most give a candidate or more; each further
    batch is twice as large.
    """
    return max(wanted, 100)


class _Planned:
    """The Plans that generate a request's candidates, over one universe;
    ``plan`` is the latest, good for shaping any candidate they made.
    """

    def __init__(self, conn, request, needs, names, universe):
        self.conn = conn
        self.request = request
        self.needs = needs
        self.universe = universe
        self.anchor_ok = anchor_filter(request, names, universe)
        self.plan = None

    def _make(self, anchor_ok):
        request = self.request
        self.plan = engine.Plan(
            self.universe, self.needs, anchor_ok, isolate=request.isolate,
            same_subtrees=request.same_subtrees, nested=request.nested)
        if request.same_subtrees:
            load_ancestry(self.conn, self.plan)
        return self.plan

    def all(self, breadth_first):
        """Every candidate, from the universe as loaded."""
        return self._make(self.anchor_ok).candidates(breadth_first)

    def in_batches(self, wanted):
        """Candidates in depth-first order, reading the trees a batch at a
        time (by root id, as anchors are walked) until ``wanted`` came or
        no tree is left: the first batch has room for ``wanted`` trees.
        """
        universe, conn = self.universe, self.conn
        rc_ids = universe.requested_classes
        # The trees (and the sharing providers) are of use already: of
        # the sharing providers' rows only those able to give an amount
        # are; the trees' rows are read whole, the summaries show them.
        roots = sql.usable_roots(conn, universe.narrowing)
        # Sharing providers serve trees of every batch.
        universe.add_inventories(sql.inventories(
            conn, rc_ids, universe.narrowing, sql.FIT,
            provider_ids=universe.sharing))
        universe.keep_rows()
        seen = set()
        start, size, after = 0, _first_batch(wanted), -1
        while True:
            end = start + size
            # A remainder smaller than half a batch comes along now.
            if len(roots) - end <= size // 2:
                end = len(roots)
            batch = roots[start:end]
            # Anchors go by root id range: the last batch takes them all.
            upto = batch[-1] if end < len(roots) else None
            universe.new_batch()
            universe.add_inventories(sql.inventories(
                conn, rc_ids, universe.narrowing, sql.ALL, roots=batch))
            universe.complete_trees.update(batch)
            plan = self._make(self._batch_filter(after, upto))
            yield from plan.candidates(seen=seen)
            if upto is None:
                return
            start, size, after = end, size * 2, upto

    def _batch_filter(self, after, upto):
        anchor_ok = self.anchor_ok

        def in_batch(root):
            return (after < root and (upto is None or root <= upto)
                    and anchor_ok(root))
        return in_batch


def load_universe(conn, request, needs, names, narrow=True,
                  inventories=True):
    """A Universe with what ``needs`` can use; with ``narrow``, only the
    inventories that can matter to them (``universe.narrowing`` says
    which), else all of the requested classes. Without ``inventories``
    the caller reads them.
    """
    universe = engine.Universe()
    rc_ids = {rc for need in needs for rc, _amount in need.resources}
    universe.requested_classes = rc_ids
    if rc_ids:
        trees = {need.tree for need in needs if need.resources}
        universe.roots = None if None in trees else trees
        if narrow:
            narrowing = _narrowing(request, needs, names)
            if narrowing.survey(conn):
                universe.narrowing = narrowing
    trait_ids = _ids(request.root_required | request.root_forbidden,
                     names.traits)
    for need in needs:
        trait_ids |= need.forbidden.union(*need.required)
    sharing_trait = names.traits.get(SHARING_TRAIT)
    if sharing_trait is not None:
        trait_ids |= {sharing_trait}
    for provider, trait, root in sql.trait_holders(conn, trait_ids):
        universe.add_trait(provider, trait, root)
    universe.sharing = set(universe.trait_holders.get(sharing_trait, ()))
    aggregate_ids = set()
    for need in needs:
        aggregate_ids |= need.forbidden_aggs.union(*need.member_of)
    for provider, aggregate, root in sql.aggregate_members(
            conn, aggregate_ids):
        universe.add_aggregate(provider, aggregate, root)
    for provider, root in sql.sharing_anchors(conn, universe.sharing):
        universe.share_anchors[provider].add(root)
    if rc_ids and (inventories or universe.roots is not None):
        universe.add_inventories(sql.inventories(
            conn, rc_ids, universe.narrowing, sql.USABLE,
            roots=universe.roots))
    return universe


def _narrowing(request, needs, names):
    """What sql.Narrowing can tell from ``needs`` alone."""
    amounts = {}
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
    return sql.Narrowing(
        amounts, sharing_trait=names.traits.get(SHARING_TRAIT),
        member_of=member_of,
        root_required=_ids(request.root_required, names.traits),
        root_forbidden=_ids(request.root_forbidden, names.traits),
        required=tuple(required))


def anchor_filter(request, names, universe):
    """root_required: which roots may anchor a candidate."""
    required = _ids(request.root_required, names.traits)
    forbidden = _ids(request.root_forbidden, names.traits)
    if not (required or forbidden):
        return lambda root: True

    def anchor_ok(root):
        traits = universe.traits.get(root, set())
        return required <= traits and not forbidden & traits
    return anchor_ok


def load_ancestry(conn, plan):
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
            universe.parent[provider] = parent
        missing = universe.missing_links(missing)


def _select(stream, limit, randomize):
    """The candidates to return: the first ``limit`` ones, or with
    ``randomize`` a uniform sample of them all, in random order.
    """
    if limit is not None:
        # Any limit beyond what can be generated means no limit.
        limit = min(limit, sys.maxsize)
    if not randomize:
        return list(itertools.islice(stream, limit))
    if limit is None:
        chosen = list(stream)
    else:
        chosen = _reservoir(stream, limit)
    random.shuffle(chosen)
    return chosen


def _reservoir(stream, size):
    sample = []
    for seen, item in enumerate(stream):
        if seen < size:
            sample.append(item)
        else:
            slot = random.randint(0, seen)
            if slot < size:
                sample[slot] = item
    return sample


def _result(conn, request, plan, names, chosen, generated_used=None):
    """Candidates and summaries by uuid and class name. Summarised are
    the trees of the providers used; before 1.29, only the providers
    ``generated_used`` (those of any generated candidate) in those trees.
    """
    if not chosen:
        return Result([], {})
    universe = plan.universe
    used = plan.providers_used(c for _anchor, c in chosen)
    mapped = {p for _anchor, providers in chosen for p in providers}
    roots = {universe.root[p] for p in used}
    if request.nested:
        members = sql.tree_members(conn, roots, mapped)
        summarised = [row for row in members if row[3] in roots]
        trees, shown = roots, set()
    else:
        shown = {p for p in generated_used if universe.root[p] in roots}
        members = sql.tree_members(conn, (), mapped | shown)
        summarised = [row for row in members if row[0] in shown]
        trees = set()
    uuid = {row[0]: row[1] for row in members}
    class_name = {ident: name for name, ident in names.classes.items()}
    shape = plan.shaper(uuid, class_name)
    candidates = [Candidate(*shape(providers))
                  for _anchor, providers in chosen]
    return Result(candidates, _summaries(
        conn, request, universe, summarised, uuid, class_name, trees, shown))


def _summaries(conn, request, universe, members, uuid, class_name, trees,
               shown):
    """Summaries of ``members`` (the providers of ``trees`` and the
    providers ``shown``): the requested inventories are known already; the
    others are read when the version shows them.
    """
    inventory = _summarised_inventory(conn, universe, class_name, trees,
                                      shown)
    resources = collections.defaultdict(dict)
    summarised = {row[0] for row in members}
    for (provider, rc), inv in inventory.items():
        if provider in summarised:
            resources[provider][class_name[rc]] = {
                'capacity': engine.capacity(inv.total, inv.reserved,
                                            inv.ratio),
                'used': inv.used}
    if request.every_class:
        for provider, name, total, reserved, ratio, used in (
                sql.provider_inventories(conn, trees, shown, class_name)):
            resources[provider][name] = {
                'capacity': engine.capacity(total, reserved, ratio),
                'used': int(used)}
    traits = collections.defaultdict(list)
    held = sql.provider_traits(conn, trees, shown)
    name = sql.trait_names(conn, {trait for _provider, trait in held})
    for provider, trait in held:
        traits[provider].append(name[trait])
    return {
        provider_uuid: Summary(resources[provider], traits[provider],
                               uuid.get(parent), uuid.get(root))
        for provider, provider_uuid, parent, root in members}


def _summarised_inventory(conn, universe, rc_ids, trees, shown):
    """The requested classes' inventories of ``trees`` and ``shown``,
    with the rows the narrowing left out read now: in trees known to have
    passed it (a row of a provider not sharing came in), the unfit ones;
    elsewhere all; nothing in trees read whole.
    """
    if universe.narrowing is None:
        return universe.inventory
    inventory = dict(universe.inventory)
    passed = {inv.root for inv in inventory.values()
              if inv.provider not in universe.sharing}
    unread = trees - universe.complete_trees
    reads = [(sql.UNFIT, {'roots': unread & passed}),
             (sql.ALL, {'roots': unread - passed}),
             (sql.ALL, {'provider_ids': shown})]
    for selection, where in reads:
        if any(where.values()):
            for inv in sql.inventories(conn, rc_ids, universe.narrowing,
                                       selection, **where):
                inventory.setdefault((inv.provider, inv.rc), inv)
    return inventory
