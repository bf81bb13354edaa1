"""Why an allocation-candidates request found nothing, or no more than it
did: the "No valid host" explainer behind GET /x-explain/... and
``placement-manage candidates explain``.

``explain(conn, request, settings)`` answers a parsed ``request.Request``
with the very data and plan ``placement.candidates.find`` uses (same name
lookup, same loaded universe, same engine), so its verdict on a provider
tree is the endpoint's verdict. Every tree (a root provider, its
descendants and the sharing providers that reach it) that anchors no
candidate is then taken apart:

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

When candidates exist, the request-wide reasons say whether ``limit`` or
``[placement] max_allocation_candidates`` cut them.
"""
import collections
import copy
import dataclasses
import itertools
import sys
from typing import Any

import sqlalchemy as sa

from placement import candidates
from placement.candidates import engine
from placement.candidates import loading
from placement.candidates import names as naming
from placement.candidates import request as model
from placement.candidates import sql
from placement.db import inventory as inventory_db
from placement.db import resource_provider as rp_db

# Candidates are counted up to here (or up to limit/max, if higher): enough
# to tell an operator "many", without generating an unbounded set.
COUNT_BOUND = 1000
# Providers named in one sharing hint; the rest are counted.
NAMED_IN_HINT = 3
# Provider lines in the one-line (log) rendering.
LOG_PROVIDER_LINES = 20

_NONE: frozenset[int] = frozenset()


@dataclasses.dataclass
class Reason:
    """One cause. ``group`` is the request group's suffix ('' for the
    unsuffixed group), None for a cause not tied to one group; ``details``
    holds the numbers and names the message shows.
    """
    kind: str
    message: str
    group: str | None = None
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict({'reason': self.kind, 'group': self.group,
                     'message': self.message}, **self.details)


@dataclasses.dataclass
class ProviderVerdict:
    """``excluded``: the provider's tree anchors no candidate."""
    uuid: str
    name: str
    root_uuid: str
    excluded: bool
    reasons: list[Reason]

    def line(self) -> str:
        return '%s (%s): %s' % (self.name, self.uuid, '; '.join(
            reason.message for reason in self.reasons))

    def as_dict(self) -> dict[str, Any]:
        return {'uuid': self.uuid, 'name': self.name,
                'root_provider_uuid': self.root_uuid,
                'excluded': self.excluded,
                'reasons': [reason.as_dict() for reason in self.reasons]}


@dataclasses.dataclass
class Explanation:
    """``found`` counts the candidates generated (before ``limit``; with
    ``found_complete`` False it stopped counting there); ``returned`` is
    how many the endpoint answers with.
    """
    found: int
    found_complete: bool
    returned: int
    trees: int
    excluded_trees: int
    request_reasons: list[Reason]
    providers: list[ProviderVerdict]

    def summary(self) -> str:
        if not self.returned:
            return ('No allocation candidates: %d of %d provider tree(s) '
                    'excluded.' % (self.excluded_trees, self.trees))
        return ('%d allocation candidate(s) returned, %d%s found; %d of %d '
                'provider tree(s) excluded.' % (
                    self.returned, self.found,
                    '' if self.found_complete else '+',
                    self.excluded_trees, self.trees))

    def lines(self) -> list[str]:
        """The text rendering: the summary, one line per request-wide
        reason, then one line per provider that has reasons.
        """
        return ([self.summary()]
                + [reason.message for reason in self.request_reasons]
                + [p.line() for p in self.providers if p.reasons])

    def text(self) -> str:
        return '\n'.join(self.lines())

    def one_line(self) -> str:
        """The text rendering on one line, for a log."""
        lines = self.lines()
        head = len(self.request_reasons) + 1
        shown = lines[:head + LOG_PROVIDER_LINES]
        hidden = len(lines) - len(shown)
        if hidden:
            shown.append('... and %d more provider(s)' % hidden)
        return ' | '.join(shown)

    def as_dict(self) -> dict[str, Any]:
        return {
            'summary': self.summary(),
            'candidates': {'found': self.found,
                           'found_complete': self.found_complete,
                           'returned': self.returned},
            'request_reasons': [r.as_dict() for r in self.request_reasons],
            'providers': [p.as_dict() for p in self.providers],
            'text': self.text(),
        }


def explain(conn: sa.Connection, request: model.Request,
            settings: candidates.Settings) -> Explanation:
    """The Explanation of ``request`` (a candidates.request.Request)
    under ``settings`` (candidates.Settings).

    Raises exception.Invalid exactly where ``candidates.find`` does (an
    unknown resource class or trait the endpoint reports).
    """
    with candidates.gc_paused():
        return _Explainer(conn, request, settings).run()


def _group_label(suffix):
    return "group '%s'" % suffix


def _any_of(names, keyword='in:'):
    names = sorted(names)
    if len(names) == 1:
        return names[0]
    return keyword + ','.join(names)


def display_ratio(value: float) -> float:
    # MySQL stores a single-precision FLOAT: show 1.1, not 1.100000023841858.
    return round(value, 6)


def _named(names, count_word):
    shown = ', '.join(names[:NAMED_IN_HINT])
    if len(names) > NAMED_IN_HINT:
        shown += ' and %d more %s' % (len(names) - NAMED_IN_HINT, count_word)
    return shown


class _Explainer:

    def __init__(self, conn, request, settings):
        self.conn = conn
        self.request = request
        self.settings = settings
        self.request_reasons = []
        # {provider id: {message: Reason}}: a sharing provider reached
        # from many trees states each of its own reasons once.
        self.reasons: collections.defaultdict[int, dict[str, Reason]] = (
            collections.defaultdict(dict))
        self.explained = set()
        self._memberships = None

    # -- setup -------------------------------------------------------------

    def run(self) -> Explanation:
        request = self.request
        self.names = sql.lookup(self.conn,
                                *naming.names_mentioned(request))
        self.needs = [naming.group_need(group, self.names)
                      for group in request.groups]
        blocked = self._unknown_names()
        self._lost_trees()
        # Explaining why a provider does not fit needs them all.
        self.universe = loading.load_universe(
            self.conn, request, self.needs, self.names, narrow=False)
        self.class_name = {i: n for n, i in self.names.classes.items()}
        self.trait_name = {i: n for n, i in self.names.traits.items()}
        self._load_providers()
        anchor_ok = loading.anchor_filter(
            request, self.names, self.universe)
        plan = self._plan(anchor_ok)
        # Groups are explained without root_required, which is reported
        # on its own.
        self.open_plan = plan
        if request.root_required or request.root_forbidden:
            self.open_plan = self._plan(lambda root: True)
        if request.same_subtrees:
            loading.load_ancestry(self.conn, self.open_plan)
        self.anchor_ok = anchor_ok
        blocked = blocked or bool(self.request_reasons)
        if blocked:
            found, complete, returned, anchored = 0, True, 0, set()
        else:
            found, complete, returned = self._count(plan)
            anchored = {root for root in plan.anchors
                        if _has_candidate(plan, root)}
        excluded = [root for root in self.roots if root not in anchored]
        self._explain_trees(excluded, quiet=blocked)
        return Explanation(
            found=found, found_complete=complete, returned=returned,
            trees=len(self.roots), excluded_trees=len(excluded),
            request_reasons=self.request_reasons,
            providers=self._verdicts(set(excluded)))

    def _unknown_names(self):
        """Raise as find does for an unknown name it reports; when the
        endpoint gives up before reaching it, note it and return True.
        """
        failure = naming.first_unknown_name(self.request, self.names)
        if failure is None:
            return False
        position, unknown = failure
        if not loading.finds_nothing_before(
                self.conn, self.request, self.names, self.needs, position):
            raise naming.refusal(unknown)
        self.request_reasons.append(Reason(
            'unknown_name', 'The request names something that does not '
            'exist (%s); the groups before it already find nothing.'
            % str(unknown).rstrip('.')))
        return True

    def _lost_trees(self):
        for group, need in zip(self.request.groups, self.needs):
            if need.lost:
                self.request_reasons.append(Reason(
                    'in_tree', '%s: in_tree provider %s does not exist.'
                    % (_group_label(group.suffix), group.in_tree),
                    group=group.suffix, details={'in_tree': group.in_tree}))

    def _load_providers(self):
        self.providers = {row['id']: row for row in rp_db.list_all(self.conn)}
        self.tree = collections.defaultdict(list)
        for provider_id, row in sorted(self.providers.items()):
            self.tree[row['root_provider_id']].append(provider_id)
        self.roots = sorted(self.tree)
        # {root: sharing providers of other trees that reach it}
        self.reach = collections.defaultdict(set)
        for provider in self.universe.sharing:
            for root in self.universe.share_anchors.get(provider, ()):
                if root != self._root(provider):
                    self.reach[root].add(provider)

    def _root(self, provider):
        return self.providers[provider]['root_provider_id']

    def _plan(self, anchor_ok, **overrides):
        options = dict(isolate=self.request.isolate,
                       same_subtrees=self.request.same_subtrees,
                       nested=self.request.nested)
        options.update(overrides)
        return engine.Plan(self.universe, self.needs, anchor_ok, **options)

    def _count(self, plan):
        """(found, found_complete, returned) and the request-wide reasons
        for what limit and max_allocation_candidates cut.
        """
        settings, limit = self.settings, self.request.limit
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
            self.request_reasons.append(Reason(
                'max_allocation_candidates',
                '[placement] max_allocation_candidates=%d stopped the '
                'search after %d candidate(s); more exist.'
                % (settings.max_candidates, ceiling),
                details={'max_allocation_candidates':
                         settings.max_candidates}))
        if limit is not None and found > limit:
            self.request_reasons.append(Reason(
                'limit', 'limit=%d returned %d of %d%s candidate(s).' % (
                    limit, limit, found, '' if complete else '+'),
                details={'limit': limit}))
        return found, complete, returned

    # -- trees -------------------------------------------------------------

    def _explain_trees(self, excluded, quiet):
        """Reasons for each excluded tree. ``quiet``: a request-wide
        reason already excludes everything, so a tree with nothing else
        against it gets no line of its own.
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
                self._add(root, root, Reason(
                    'unsatisfied', 'no combination of the providers '
                    'satisfies every group at once'))

    def _add(self, root, provider, reason):
        """Record ``reason`` against ``provider`` for the tree of
        ``root`` (a sharing provider's reasons explain other trees).
        """
        self.reasons[provider].setdefault(reason.message, reason)
        self.explained.add(root)

    def _root_required(self, root):
        traits = self.universe.traits.get(root, _NONE)
        known = self.names.traits
        for name in sorted(self.request.root_required):
            if known.get(name) not in traits:
                self._add(root, root, Reason(
                    'root_required', 'root_required: the root provider '
                    'lacks trait %s' % name, details={'trait': name}))
        for name in sorted(self.request.root_forbidden):
            if known.get(name) in traits:
                self._add(root, root, Reason(
                    'root_forbidden', 'root_required: the root provider '
                    'has forbidden trait %s' % name,
                    details={'trait': name}))

    def _explain_slot(self, root, level):
        slot = self.open_plan.slots[level]
        need, group = self.needs[slot.group], self.request.groups[slot.group]
        label = _group_label(group.suffix)
        if need.lost:
            return
        if need.tree is not None and need.tree != root:
            self._add(root, root, Reason(
                'in_tree', '%s: in_tree=%s is another tree'
                % (label, group.in_tree), group=group.suffix,
                details={'in_tree': group.in_tree}))
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
            for reason in self._provider_reasons(
                    provider, root, need, group, amounts):
                self._add(root, provider, reason)
        sharing = [p for p in holders if self._root(p) != root]
        if len(sharing) == len(holders):
            classes = [self.class_name[rc] for rc, _amount in amounts]
            self._add(root, root, Reason(
                'sharing', '%s: no %s inventory in the tree, and sharing '
                'provider(s) %s cannot supply it' % (
                    label, ' or '.join(classes), _named(
                        [self._provider_label(p) for p in sharing],
                        'provider(s)')),
                group=group.suffix, details={'resource_classes': classes}))

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
        if need.required:
            start = set().union(*(universe.trait_holders.get(t, ())
                                  for t in need.required[0]))
        elif need.member_of:
            start = {p for p, aggs in universe.aggregates.items()
                     if aggs & need.member_of[0]}
        else:
            start = set()
        return [p for p in self.tree[root] if p in start]

    def _nothing_in_tree(self, root, need, group, amounts):
        label = _group_label(group.suffix)
        if not amounts:
            wanted = (['trait ' + _any_of(self._trait_names(any_of))
                       for any_of in need.required[:1]]
                      or ['aggregate member_of=' + _any_of(any_of)
                          for any_of in group.member_of[:1]])
            self._add(root, root, Reason(
                'resourceless', '%s: no provider in the tree has %s' % (
                    label, wanted[0] if wanted else 'a required trait or '
                    'aggregate to select it by'), group=group.suffix))
            return
        if root in self.universe.sharing:
            self._add(root, root, Reason(
                'sharing_root', 'a sharing provider: it only completes the '
                'candidates of the trees it shares with'))
            return
        classes = [self.class_name[rc] for rc, _amount in amounts]
        message = '%s: no %s inventory in the tree' % (
            label, ' or '.join(classes))
        if need.tree is None:
            message += ' or from a sharing provider'
            hints = self._sharing_hints(root, [rc for rc, _ in amounts])
            if hints:
                message += ' (%s)' % '; '.join(hints)
        self._add(root, root, Reason(
            'no_inventory', message, group=group.suffix,
            details={'resource_classes': classes}))

    # -- providers ---------------------------------------------------------

    def _provider_reasons(self, provider, root, need, group, amounts):
        label = _group_label(group.suffix)
        universe = self.universe
        spread = not need.single_provider
        reasons = []
        for rc, amount in amounts:
            inv = universe.inventory.get((provider, rc))
            name = self.class_name[rc]
            if inv is None:
                reasons.append(Reason(
                    'no_inventory', '%s: no %s inventory' % (label, name),
                    group=group.suffix, details={'resource_class': name}))
            else:
                reasons += _inventory_reasons(inv, name, amount, group.suffix)
        traits = universe.traits.get(provider, _NONE)
        if not spread:
            # The unsuffixed group's traits count across its providers.
            for any_of in need.required:
                if not any_of & traits:
                    reasons.append(self._missing_trait(any_of, group))
        for trait in sorted(self._trait_names(traits & need.forbidden)):
            reasons.append(Reason(
                'forbidden_trait', '%s: has forbidden trait %s'
                % (label, trait), group=group.suffix,
                details={'trait': trait}))
        aggregates = universe.aggregates.get(provider, _NONE)
        # An unsuffixed group's aggregates may be the root's instead.
        via_root = (spread and self._root(provider) == root and all(
            any_of & universe.aggregates.get(root, _NONE)
            for any_of in need.member_of))
        if not via_root:
            for uuids, any_of in zip(group.member_of, need.member_of):
                if not any_of & aggregates:
                    reasons.append(Reason(
                        'member_of', '%s: not in aggregate(s) member_of=%s'
                        % (label, _any_of(uuids)), group=group.suffix,
                        details={'member_of': sorted(uuids)}))
        if aggregates & need.forbidden_aggs:
            reasons.append(self._forbidden_aggregates(provider, need, group))
        return reasons

    def _missing_trait(self, any_of, group, where=''):
        names = self._trait_names(any_of)
        return Reason(
            'missing_trait', '%s: missing required trait %s%s' % (
                _group_label(group.suffix), _any_of(names), where),
            group=group.suffix, details={'traits': sorted(names)})

    def _forbidden_aggregates(self, provider, need, group):
        uuids = self._aggregate_uuids(
            self.universe.aggregates.get(provider, _NONE)
            & need.forbidden_aggs)
        return Reason(
            'forbidden_aggregate', '%s: in forbidden aggregate(s) %s'
            % (_group_label(group.suffix), ','.join(uuids)),
            group=group.suffix, details={'aggregates': uuids})

    def _trait_names(self, ids):
        return {self.trait_name[i] for i in ids}

    def _aggregate_uuids(self, ids):
        by_id = {i: u for u, i in self.names.aggregates.items()}
        return sorted(by_id[i] for i in ids)

    def _provider_label(self, provider):
        row = self.providers[provider]
        return '%s (%s)' % (row['name'], row['uuid'])

    # -- sharing providers -------------------------------------------------

    def _sharing_hints(self, root, rc_ids):
        """Why the providers outside the tree that have the classes do not
        share them with it: a sharing provider in no aggregate with the
        tree, or a provider in an aggregate with the tree that lacks
        MISC_SHARES_VIA_AGGREGATE (and offers none of the request's other
        classes, so is a pool rather than another host). A sharing
        provider's own tree gets no hints: it is not meant to anchor.
        """
        universe = self.universe
        outside = sorted({inv.provider for rc in rc_ids
                          for inv in universe.by_class.get(rc, ())
                          if self._root(inv.provider) != root})
        unreached = [p for p in outside if p in universe.sharing]
        hints = []
        if unreached:
            hints.append('sharing provider(s) %s in no aggregate with it'
                         % _named([self._provider_label(p) for p in unreached],
                                  'provider(s)'))
        tree_aggregates = set().union(*(
            self._membership(p) for p in self.tree[root]))
        requested = {rc for need in self.needs for rc, _ in need.resources}
        pools = [p for p in outside
                 if p not in universe.sharing
                 and self._membership(p) & tree_aggregates
                 and not any((p, rc) in universe.inventory
                             for rc in requested - set(rc_ids))]
        if pools:
            hints.append('%s in an aggregate with it but without trait %s'
                         % (_named([self._provider_label(p) for p in pools],
                                   'provider(s)'), naming.SHARING_TRAIT))
        return hints

    def _membership(self, provider):
        """All aggregate ids of a provider (the universe only holds the
        requested ones); read once, when a hint needs them.
        """
        if self._memberships is None:
            self._memberships = collections.defaultdict(set)
            for provider_id, aggregate_id in sql.memberships(self.conn):
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
            where = ('' if holders == [root] else
                     ' (on the providers having its resources)')
            for any_of in need.required:
                if not any_of & traits:
                    self._add(root, root,
                              self._missing_trait(any_of, group, where))
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

        relaxations: list[tuple[dict[str, Any], Reason]] = []
        if request.isolate:
            relaxations.append((dict(isolate=False), Reason(
                'group_policy', 'group_policy=isolate: the suffixed groups '
                'can only be satisfied by sharing a provider')))
        if request.same_subtrees:
            relaxations.append((dict(same_subtrees=()), Reason(
                'same_subtree', 'same_subtree=%s: the providers that satisfy '
                'these groups are not all under one of them' % ' & '.join(
                    ','.join(sorted(s)) for s in request.same_subtrees))))
        if not request.nested:
            relaxations.append((dict(nested=True), Reason(
                'one_provider_per_tree', 'before microversion 1.29 a '
                'candidate may use only one provider of a tree')))
        explained = set()
        for overrides, reason in relaxations:
            plan = self._plan(only_these, **overrides)
            for root in roots:
                if _has_candidate(plan, root):
                    self._add(root, root, reason)
                    explained.add(root)
        for root in roots:
            if root not in explained:
                self._add(root, root, self._combined_shortfall(root))

    def _combined_shortfall(self, root):
        """The class the groups together want more of than the tree's
        eligible providers have free, if any; else a general reason.
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
                name = self.class_name[rc]
                return Reason(
                    'combined_capacity', 'the groups together request %d '
                    '%s; the eligible providers have %d free' % (
                        amount, name, free),
                    details={'resource_class': name, 'requested': amount,
                             'free': free})
        return Reason('unsatisfied', 'no combination of the providers '
                      'satisfies every group at once')

    # -- result ------------------------------------------------------------

    def _verdicts(self, excluded):
        verdicts = []
        for root in self.roots:
            for provider in self.tree[root]:
                row = self.providers[provider]
                verdicts.append(ProviderVerdict(
                    uuid=row['uuid'], name=row['name'],
                    root_uuid=row['root_provider_uuid'],
                    excluded=root in excluded,
                    reasons=list(self.reasons.get(provider, {}).values())))
        return verdicts


def _inventory_reasons(inv, name, amount, suffix):
    """What in one inventory refuses ``amount``: the checks of
    ``engine.Universe.fitting`` and of the engine's room, one by one.
    """
    label = _group_label(suffix)
    reasons = []
    free = inventory_db.capacity(inv.total, inv.reserved, inv.ratio) - inv.used
    if amount > free or (inv.used + amount
                         > (inv.total - inv.reserved) * inv.sql_ratio):
        details = {'resource_class': name, 'requested': amount,
                   'free': max(free, 0), 'total': inv.total,
                   'reserved': inv.reserved,
                   'allocation_ratio': display_ratio(inv.ratio),
                   'used': inv.used}
        reasons.append(Reason(
            'capacity', '%s: %s: requested %d, free %d (total %d, reserved '
            '%d, ratio %s, used %d)' % (
                label, name, amount, details['free'], inv.total,
                inv.reserved, details['allocation_ratio'], inv.used),
            group=suffix, details=details))
    for kind, limit, broken in (
            ('min_unit', inv.min_unit, amount < inv.min_unit),
            ('max_unit', inv.max_unit, amount > inv.max_unit),
            ('step_size', inv.step_size,
             inv.step_size <= 0 or amount % inv.step_size)):
        if broken:
            reasons.append(Reason(
                kind, '%s: %s: requested %d, %s %d' % (
                    label, name, amount, kind, limit),
                group=suffix, details={'resource_class': name,
                                       'requested': amount, kind: limit}))
    return reasons


def _has_candidate(plan, root):
    """Whether ``root`` anchors at least one candidate of ``plan``; stops
    at the first.
    """
    if not all(root in options for options in plan.options):
        return False
    probe = copy.copy(plan)
    probe.anchors = [root]
    return next(probe.candidates(), None) is not None
