"""In-memory generation of allocation candidates.

Every candidate is anchored at a root provider: it may use providers of
that root's tree and sharing providers associated with the tree through an
aggregate. For each anchor the engine lists what every group could use
there (its *options*), then walks the product of those options depth
first, pruning a branch as soon as it over-consumes a provider, breaks
group isolation, misses traits or leaves a same_subtree set without a
common ancestor. Candidates are produced lazily, so callers that need only
a few stop the work early.

A candidate is a tuple holding one provider per *slot*: a suffixed group
is one slot (one provider supplies all of its resources); the unsuffixed
group has one slot per resource class.
"""
import collections
import dataclasses
import itertools
import math
import operator
from typing import Any
from typing import Callable
from typing import Collection
from typing import Iterable
from typing import Iterator
from typing import Sequence

from placement.candidates import narrowing as planner
from placement.candidates import sql
from placement.db import inventory as inventory_db
from placement.db import watchdog

# Steps of a walk between two looks at the request's deadline.
_DEADLINE_EVERY = 4096

_NONE: frozenset[int] = frozenset()


@dataclasses.dataclass(frozen=True)
class Need:
    """A request group with names resolved to ids.

    ``member_of`` holds any-of sets of aggregate ids; an empty set stands
    for aggregates that do not exist, which nothing can be a member of.
    ``lost`` is set when in_tree names an unknown provider.
    """
    suffix: str
    resources: tuple[tuple[int, int], ...] = ()
    required: tuple[frozenset[int], ...] = ()
    forbidden: frozenset[int] = frozenset()
    member_of: tuple[frozenset[int], ...] = ()
    forbidden_aggs: frozenset[int] = frozenset()
    tree: int | None = None
    lost: bool = False

    @property
    def single_provider(self) -> bool:
        return bool(self.suffix)


class Universe:
    """What the database said about the providers that can matter.

    ``traits`` and ``aggregates`` only hold the requested ones (and the
    sharing trait), which is all the reasoning needs; a batch that had
    traits to check read all its trees' traits, and keeps them in
    ``every_trait`` for the answer's summaries.
    """

    def __init__(self,
                 requested_classes: set[int] | frozenset[int] = frozenset(),
                 roots: set[int] | None = None,
                 narrowing: planner.Narrowing | None = None) -> None:
        # What the inventories were chosen for: the requested classes, the
        # trees they were read from (None: all) and the Narrowing that
        # left rows out (None: none).
        self.requested_classes = requested_classes
        self.roots = roots
        self.narrowing = narrowing
        self.root: dict[int, int] = {}
        self.inventory: dict[tuple[int, int], sql.Inventory] = {}
        self.by_class: collections.defaultdict[int, list[sql.Inventory]] = (
            collections.defaultdict(list))
        self.traits: collections.defaultdict[int, set[int]] = (
            collections.defaultdict(set))
        self.trait_holders: collections.defaultdict[int, set[int]] = (
            collections.defaultdict(set))
        self.aggregates: collections.defaultdict[int, set[int]] = (
            collections.defaultdict(set))
        self.sharing: set[int] = set()
        self.share_anchors: collections.defaultdict[int, set[int]] = (
            collections.defaultdict(set))
        self.parent: dict[int, int | None] = {}
        # Rows of by_class the options are made of: the first ``_kept``
        # of each class (read before any batch) and those from
        # ``_fresh`` on.
        self._kept: dict[int, int] = {}
        self._fresh: dict[int, int] = {}
        # Roots of the trees whose rows of those classes were all read,
        # whatever the narrowing.
        self.complete_trees: set[int] = set()
        # Every trait of the providers of the trees rooted at
        # traits_read_trees, and of the providers traits_read_of.
        self.every_trait: collections.defaultdict[int, list[int]] = (
            collections.defaultdict(list))
        self.traits_read_trees: set[int] = set()
        self.traits_read_of: set[int] = set()
        # Whether the database computes with other ratios than Python.
        self.ratios_differ = False
        self._ancestry: dict[int, set[int]] = {}
        self._room: dict[tuple[int, int], int] = {}
        self._spare: dict[int, dict[int, int]] = {}
        self._unit_shapes: dict[int, dict[tuple[int, int, int],
                                          list[int]]] = {}

    def add_inventories(self, rows: Iterable[sql.Inventory]) -> None:
        root, parent = self.root, self.parent
        inventory, by_class = self.inventory, self.by_class
        for inv in rows:
            key = (inv.provider, inv.rc)
            if key in inventory:
                continue  # read again with a later batch of trees
            root[inv.provider] = inv.root
            parent[inv.provider] = inv.parent
            inventory[key] = inv
            by_class[inv.rc].append(inv)
            if inv.sql_ratio != inv.ratio:
                self.ratios_differ = True

    def set_usage(self, rows: Iterable[Sequence[int]]) -> None:
        """(provider, class, used) of rows read without their usage, all
        kept (keep_rows)."""
        inventory = self.inventory
        for provider, rc, used in rows:
            key = (provider, rc)
            if key in inventory:
                inventory[key] = inventory[key]._replace(used=used)
                self._room.pop(key, None)
        for rc, kept in self._kept.items():
            rows_of = self.by_class[rc]
            rows_of[:kept] = [inventory[inv.provider, rc]
                              for inv in rows_of[:kept]]

    def keep_rows(self) -> None:
        """Rows read so far stay in every later batch's options."""
        self._kept = {rc: len(rows) for rc, rows in self.by_class.items()}

    def new_batch(self) -> None:
        """Rows read from now on replace the previous batch's."""
        self._fresh = {rc: len(rows) for rc, rows in self.by_class.items()}

    def rows(self, rc: int) -> Sequence[sql.Inventory]:
        """The inventories of class ``rc`` options are made of."""
        # () or a list; only a list once a batch began (sliced below).
        rows: Any = self.by_class.get(rc, ())
        start = self._fresh.get(rc, 0)
        if not start:
            return rows
        kept = self._kept.get(rc, 0)
        return rows[:kept] + rows[start:]

    def scratch(self, providers: Iterable[int]) -> 'Universe':
        """A universe with the same links (traits, aggregates, sharing,
        tree shapes) holding copies of the rows of ``providers`` only,
        whose usage ``take`` changes: placements tried in memory.
        """
        copy = self.linked()
        inventory = self.inventory
        copy.add_inventories(
            inventory[provider, rc] for provider in sorted(set(providers))
            for rc in self.by_class if (provider, rc) in inventory)
        return copy

    def parted(self, roots: Collection[int], classes: Iterable[int]
               ) -> tuple['Universe', 'Universe']:
        """Two universes with the same links and rows, whose options are
        made of the rows of ``classes`` of the trees rooted at ``roots``
        and of the other trees: the hosts a caller reasons about apart
        cost the other's options nothing."""
        inside, outside = self.linked(), self.linked()
        for part in inside, outside:
            part.inventory = self.inventory
            part.ratios_differ = self.ratios_differ
        for rc in classes:
            held: list[sql.Inventory] = []
            rest: list[sql.Inventory] = []
            for inv in self.rows(rc):
                (held if inv.root in roots else rest).append(inv)
            inside.by_class[rc], outside.by_class[rc] = held, rest
        return inside, outside

    def linked(self) -> 'Universe':
        """A universe with the same links (traits, aggregates, sharing,
        tree shapes) and no rows yet: the rows of a part of the trees
        are reasoned about apart from the others'."""
        copy = Universe(self.requested_classes)
        copy.root, copy.parent = self.root, self.parent
        copy.traits, copy.trait_holders = self.traits, self.trait_holders
        copy.aggregates, copy.sharing = self.aggregates, self.sharing
        copy.share_anchors = self.share_anchors
        copy._ancestry = self._ancestry
        return copy

    def take(self, provider: int, rc: int, amount: int) -> None:
        """Allocate ``amount`` of the row (provider, rc), in memory."""
        key = (provider, rc)
        inv = self.inventory[key]
        taken = inv._replace(used=inv.used + amount)
        self.inventory[key] = taken
        rows = self.by_class[rc]
        rows[rows.index(inv)] = taken
        self._room.pop(key, None)
        self._spare.pop(rc, None)

    def add_traits(self, rows: Iterable[Sequence[int]]) -> None:
        """(provider, trait, root) rows: who holds which trait."""
        root, traits, holders = self.root, self.traits, self.trait_holders
        for provider, trait, provider_root in rows:
            root[provider] = provider_root
            traits[provider].add(trait)
            holders[trait].add(provider)

    def read_all_traits(self, rows: Iterable[Sequence[int]], wanted: set[int],
                        roots: Iterable[int] | None = None) -> None:
        """Every (provider, trait, root) of the trees rooted at ``roots``,
        or (None) of the providers the rows name: the ``wanted`` ones for
        the reasoning (as add_traits), all for the summaries.
        """
        every, root = self.every_trait, self.root
        traits, holders = self.traits, self.trait_holders
        known: Collection[int] = ()
        if roots is None:
            rows = list(rows)
            named = {row[0] for row in rows}
        else:
            # Read already: a sharing provider in one of the trees.
            known = self.traits_read_of
        for provider, trait, provider_root in rows:
            if provider in known:
                continue
            every[provider].append(trait)
            if trait in wanted:
                root[provider] = provider_root
                traits[provider].add(trait)
                holders[trait].add(provider)
        if roots is None:
            self.traits_read_of |= named
        else:
            self.traits_read_trees.update(roots)

    def share_trait_sets(self) -> None:
        """Providers holding the same traits share one frozen set of
        them, once every trait is read (none can be added after): a
        hundred thousand hosts hold a few dozen different sets, and a
        set each took 27 MB at 100,000 nodes."""
        shared: dict[frozenset[int], frozenset[int]] = {}
        traits = self.traits
        for provider, held in traits.items():
            frozen = frozenset(held)
            traits[provider] = shared.setdefault(  # type: ignore[assignment]
                frozen, frozen)

    def add_aggregate(self, provider: int, aggregate: int,
                      root: int) -> None:
        self.root[provider] = root
        self.aggregates[provider].add(aggregate)

    def mark_sharing(self, sharing_trait: int | None) -> None:
        """The holders of the sharing trait (added already) share."""
        # None (no such trait) has no holder.
        self.sharing = set(self.trait_holders.get(
            sharing_trait, ()))  # type: ignore[arg-type]

    def add_share_anchor(self, provider: int, root: int) -> None:
        """Sharing ``provider`` serves the tree rooted at ``root``."""
        self.share_anchors[provider].add(root)

    def add_parent(self, provider: int, parent: int | None) -> None:
        self.parent[provider] = parent

    def fitting(self, rc: int, amount: int,
                tree: int | None = None) -> list[sql.Inventory]:
        """The rows of class ``rc`` (of the tree rooted at ``tree``, if
        given) one request of ``amount`` fits, with upstream's SQL
        arithmetic (the database's view of the ratio). The checks are
        those of ``refusals``, inlined: they run for every row.
        """
        return [inv for inv in self.rows(rc)
                if inv.used + amount
                <= (inv.total - inv.reserved) * inv.sql_ratio
                and inv.min_unit <= amount <= inv.max_unit
                and inv.step_size > 0 and amount % inv.step_size == 0
                and (tree is None or inv.root == tree)]

    def room(self, provider: int, rc: int) -> int:
        """Most that all groups together may take from one inventory."""
        key = (provider, rc)
        room = self._room.get(key)
        if room is None:
            inv = self.inventory[key]
            room = self._room[key] = min(
                inventory_db.capacity(inv.total, inv.reserved, inv.ratio)
                - inv.used,
                inv.max_unit)
        return room

    def spare(self, rc: int) -> dict[int, int]:
        """{provider: units of class ``rc`` it still has the capacity
        for}, by the checks ``times`` makes (kept: usage does not change
        in a universe but in a scratch copy, whose ``take`` drops it)."""
        found = self._spare.get(rc)
        if found is None:
            found = self._spare[rc] = {inv.provider: times(inv, 1)
                                       for inv in self.by_class.get(rc, ())}
        return found

    def unit_refusing(self, rc: int, amount: int) -> set[int]:
        """Providers whose row of class ``rc`` refuses a request of
        ``amount`` by its units or step size (as ``fitting`` checks them;
        usage does not change them). Rows are told apart by their units,
        of which a cloud has few, once per class."""
        shapes = self._unit_shapes.get(rc)
        if shapes is None:
            shapes = self._unit_shapes[rc] = collections.defaultdict(list)
            for inv in self.by_class.get(rc, ()):
                shapes[inv.min_unit, inv.max_unit, inv.step_size].append(
                    inv.provider)
        return {provider
                for (least, most, step), providers in shapes.items()
                if not (least <= amount <= most and step > 0
                        and amount % step == 0)
                for provider in providers}

    def missing_links(self, providers: Iterable[int]) -> set[int]:
        """Providers on the way up from ``providers`` whose parent is not
        known yet.
        """
        missing = set()
        for provider in providers:
            root = self.root[provider]
            while provider != root:
                if provider not in self.parent:
                    missing.add(provider)
                    break
                # Below its root a provider has a parent.
                provider = self.parent[provider]  # type: ignore[assignment]
                self.root.setdefault(provider, root)
        return missing

    def ancestry(self, provider: int) -> set[int]:
        """The provider and all its ancestors."""
        found = self._ancestry.get(provider)
        if found is None:
            found = {provider}
            parent = self.parent.get(provider)
            while parent is not None:
                found.add(parent)
                parent = self.parent.get(parent)
            self._ancestry[provider] = found
        return found


def times(inv: sql.Inventory, amount: int, largest: int | None = None
          ) -> int:
    """How many requests of ``amount``, one after the other, an inventory
    still has the capacity for, by the checks options and walks make as
    usage grows by ``amount`` each time: ``Universe.fitting`` (the
    database's arithmetic) of each slot's own amount, the largest of
    which is ``largest`` when several slots draw ``amount`` between them
    (by default one slot draws it all), and ``Universe.room`` (the
    write's) of ``amount``. Units and steps do not change with usage.
    """
    if largest is None:
        largest = amount
    # Unpacked at once: it runs for every row of a capacity answer.
    (_provider, _rc, _root, _parent, total, reserved, ratio, sql_ratio,
     _min_unit, _max_unit, _step, used) = inv
    first = math.floor((total - reserved) * sql_ratio) - used - largest
    if first < 0:
        return 0
    usable = inventory_db.capacity(total, reserved, ratio)
    return min(first // amount + 1, max(0, usable - used) // amount)


def refusals(inv: sql.Inventory, amount: int) -> list[str]:
    """Which limits of an inventory refuse one request of ``amount``:
    'capacity' (by upstream's SQL arithmetic, as ``Universe.fitting``
    checks it, or by the capacity ``Universe.room`` leaves), 'min_unit',
    'max_unit', 'step_size'.
    """
    refused = []
    free = inventory_db.capacity(inv.total, inv.reserved, inv.ratio) - inv.used
    if amount > free or (inv.used + amount
                         > (inv.total - inv.reserved) * inv.sql_ratio):
        refused.append('capacity')
    if amount < inv.min_unit:
        refused.append('min_unit')
    if amount > inv.max_unit:
        refused.append('max_unit')
    if inv.step_size <= 0 or amount % inv.step_size:
        refused.append('step_size')
    return refused


def _member(universe, provider, member_of):
    aggs = universe.aggregates.get(provider, _NONE)
    return all(any_of & aggs for any_of in member_of)


def _has_traits(traits, required):
    return all(any_of & traits for any_of in required)


def single_options(universe: Universe, need: Need,
                   anchor_ok: Callable[[int], bool]
                   ) -> dict[int, list[int]]:
    """{anchor: [provider]} for a group one provider must satisfy."""
    options = collections.defaultdict(list)
    for provider in sorted(matching(universe, need)):
        root = universe.root[provider]
        if anchor_ok(root):
            options[root].append(provider)
        if provider in universe.sharing:
            for anchor in sorted(universe.share_anchors[provider]):
                if anchor != root and anchor_ok(anchor):
                    options[anchor].append(provider)
    return options


def matching(universe: Universe, need: Need,
             among: Iterable[int] | None = None) -> set[int]:
    """Providers that on their own satisfy ``need``: free capacity for
    each of its classes (in its tree, if any), its traits and aggregates.

    A need without resources starts from ``among``; by default, as for a
    resourceless allocation-candidates group, from the holders of its
    first required traits or the members of its first aggregates, and
    in_tree does not apply.
    """
    if need.lost:
        return set()
    if need.resources:
        # None until the first class (need.resources is not empty).
        found: Any = None
        for rc, amount in need.resources:
            fit = {inv.provider
                   for inv in universe.fitting(rc, amount, need.tree)}
            found = fit if found is None else found & fit
    elif among is not None:
        found = set(among)
    else:
        found = selected(universe, need)
    traits, aggregates = universe.traits, universe.aggregates
    if need.required:
        found = {p for p in found
                 if _has_traits(traits.get(p, _NONE), need.required)}
    if need.forbidden:
        found = {p for p in found if not traits.get(p, _NONE) & need.forbidden}
    if need.member_of:
        found = {p for p in found if _member(universe, p, need.member_of)}
    if need.forbidden_aggs:
        found = {p for p in found
                 if not aggregates.get(p, _NONE) & need.forbidden_aggs}
    return found


def selected(universe: Universe, need: Need) -> set[int]:
    """The providers a resourceless group starts from: the holders of its
    first required any-of traits, else the members of its first member_of
    aggregates, else none.
    """
    if need.required:
        return set().union(*(universe.trait_holders.get(trait, ())
                             for trait in need.required[0]))
    if need.member_of:
        return {p for p, aggs in universe.aggregates.items()
                if aggs & need.member_of[0]}
    return set()


def spread_options(universe: Universe, need: Need,
                   anchor_ok: Callable[[int], bool]
                   ) -> dict[int, dict[int, list[int]]]:
    """{rc: {anchor: [provider]}} for the unsuffixed group, where each
    class may come from any provider of the anchor's tree or from a
    sharing provider; aggregate filters pass when either the provider or
    the anchor qualifies.
    """
    if need.lost:
        return {}
    aggregates = universe.aggregates
    sharing, share_anchors = universe.sharing, universe.share_anchors
    member_of = need.member_of
    # Holders of a forbidden trait: one look-up a row.
    excluded = set().union(*(universe.trait_holders.get(trait, _NONE)
                             for trait in need.forbidden))
    forbidden_aggs = need.forbidden_aggs
    # Sharing providers also serve other trees, but not within in_tree.
    spreads = need.tree is None
    # Providers in an aggregate of every member_of set, when there are.
    members = set()
    if member_of:
        members = {provider for provider in universe.aggregates
                   if _member(universe, provider, member_of)}
    # Whether a root may anchor, worked out once per root: each tree has
    # a row of most classes.
    anchors_ok: dict[int, bool] = {}

    def anchor_usable(anchor):
        return anchor_ok(anchor) and not (
            forbidden_aggs and aggregates.get(anchor, _NONE) & forbidden_aggs)
    by_class = {}
    for rc, amount in need.resources:
        options: collections.defaultdict[int, list[int]] = (
            collections.defaultdict(list))
        for inv in universe.fitting(rc, amount, need.tree):
            provider = inv.provider
            if provider in excluded:
                continue
            if forbidden_aggs and aggregates.get(provider, _NONE) & (
                    forbidden_aggs):
                continue
            member = not member_of or provider in members
            root = inv.root
            if spreads and member and provider in sharing:
                # A row per provider and class: each anchor lists a
                # provider once, its own tree's among the served.
                anchors: Iterable[int] = (root, *(
                    anchor for anchor in sorted(share_anchors[provider])
                    if anchor != root))
            else:
                # Most rows: one anchor, their own tree's.
                ok = anchors_ok.get(root)
                if ok is None:
                    ok = anchors_ok[root] = anchor_usable(root)
                if ok and (member or root in members):
                    options[root].append(provider)
                continue
            for anchor in anchors:
                ok = anchors_ok.get(anchor)
                if ok is None:
                    ok = anchors_ok[anchor] = anchor_usable(anchor)
                if ok and (member or anchor in members):
                    options[anchor].append(provider)
        for providers in options.values():
            if len(providers) > 1:
                providers.sort()
        by_class[rc] = dict(options)
    return by_class


Slot = collections.namedtuple('Slot', 'group rc')


class Plan:
    """The slots of a request and, per anchor, the options of each slot.

    ``needs`` are the resolved groups in request order; ``isolate``,
    ``same_subtrees`` (sets of suffixes) and ``nested`` (whether a
    candidate may use several providers of one tree) come from the
    request.
    """

    def __init__(self, universe: Universe, needs: list[Need],
                 anchor_ok: Callable[[int], bool], isolate: bool = False,
                 same_subtrees: Sequence[set[str]] = (), nested: bool = True,
                 combined: bool = True) -> None:
        self.universe = universe
        self.needs = needs
        self.isolate = isolate
        self.same_subtrees = same_subtrees
        self.nested = nested
        self.slots: list[Slot] = []
        self.options: list[dict[int, list[int]]] = []
        # Groups alike but for their suffix (a NUMA node each) have the
        # same options, made once.
        alike: dict[Need, dict[int, list[int]]] = {}
        for index, need in enumerate(needs):
            if need.single_provider:
                self.slots.append(Slot(index, None))
                unsuffixed = dataclasses.replace(need, suffix='')
                if unsuffixed not in alike:
                    alike[unsuffixed] = single_options(
                        universe, need, anchor_ok)
                # Each slot's own: options are dropped per slot.
                self.options.append(dict(alike[unsuffixed]))
            else:
                by_class = spread_options(universe, need, anchor_ok)
                for rc, _amount in need.resources:
                    self.slots.append(Slot(index, rc))
                    self.options.append(by_class.get(rc, {}))
        self.slot_amounts = [self._amounts(slot) for slot in self.slots]
        self.slot_suffixes = [needs[slot.group].suffix for slot in self.slots]
        # Classes several slots draw on need running totals while
        # walking; the others are checked once, here.
        self.shared = {rc for rc, count in collections.Counter(
            rc for amounts in self.slot_amounts for rc, _ in amounts).items()
            if count > 1}
        if combined and universe.ratios_differ:
            self._drop_overdrawn()
        self.anchors = self._common_anchors(range(len(self.slots)))

    def _drop_overdrawn(self):
        """Remove options whose own request exceeds what is left of an
        inventory no other slot draws on: upstream's final capacity check
        on the combined candidate, done early. It can only disagree with
        the per-group check when the database computes with other ratios
        (MySQL's single precision).
        """
        room = self.universe.room
        for level, options in enumerate(self.options):
            alone = [(rc, amount) for rc, amount in self.slot_amounts[level]
                     if rc not in self.shared]
            if not alone:
                continue
            for anchor, providers in list(options.items()):
                kept = [p for p in providers
                        if all(amount <= room(p, rc) for rc, amount in alone)]
                if kept:
                    options[anchor] = kept
                else:
                    del options[anchor]

    def _common_anchors(self, levels):
        sets = [set(self.options[level]) for level in levels]
        return sorted(set.intersection(*sets)) if sets else []

    def walker(self) -> '_Walk':
        """A walk over every slot, for callers that look at the anchors
        one by one (``_Walk.every_combination``, ``_Walk.first``)."""
        return _Walk(self, range(len(self.slots)))

    def group_has_options(self, index: int) -> bool:
        """Whether group ``index`` alone finds something somewhere (its
        traits included), ignoring the other groups.
        """
        levels = [level for level, slot in enumerate(self.slots)
                  if slot.group == index]
        walk = _Walk(self, levels, combined=False)
        return any(next(walk.walk(anchor), None) is not None
                   for anchor in self._common_anchors(levels))

    def candidates(self, breadth_first: bool = False,
                   seen: set[tuple[int, ...]] | None = None,
                   anchors: Iterable[int] | None = None,
                   ) -> Iterator[tuple[int, tuple[int, ...]]]:
        """Every candidate as (anchor, providers per slot), lazily, or
        those of ``anchors`` (in order, among the plan's); a candidate
        reachable from several anchors (only possible with sharing
        providers alone) comes once, also across the plans that share the
        set ``seen``.
        """
        walk = _Walk(self, range(len(self.slots)))
        walks = (walk.walk(anchor)
                 for anchor in (self.anchors if anchors is None else anchors))
        if breadth_first:
            stream = _round_robin(walks)
        else:
            stream = itertools.chain.from_iterable(walks)
        if seen is None:
            seen = set()
        sharing = self.universe.sharing
        for anchor, chosen in stream:
            if sharing.issuperset(chosen):
                if chosen in seen:
                    continue
                seen.add(chosen)
            yield anchor, chosen

    def fits(self, chosen: Sequence[int],
             universe: Universe | None = None) -> bool:
        """Whether candidate ``chosen`` (providers per slot), made
        earlier, still fits the usage of ``universe`` (by default the
        plan's; else a ``Universe.scratch`` of it that placements
        changed): its capacity checked as options (``Universe.fitting``,
        ``_drop_overdrawn``) and walks (the room of classes several slots
        draw on) check it. Units, steps, traits, isolation and subtrees
        do not change with usage.
        """
        universe = universe or self.universe
        inventory = universe.inventory
        drawn: collections.Counter[tuple[int, int]] = collections.Counter()
        for provider, amounts in zip(chosen, self.slot_amounts):
            for rc, amount in amounts:
                inv = inventory[provider, rc]
                if (inv.used + amount
                        > (inv.total - inv.reserved) * inv.sql_ratio):
                    return False
                if rc in self.shared:
                    drawn[provider, rc] += amount
                elif universe.ratios_differ and amount > universe.room(
                        provider, rc):
                    return False
        return all(amount <= universe.room(*key)
                   for key, amount in drawn.items())

    def _amounts(self, slot):
        """(rc, amount) that the provider chosen for ``slot`` gives."""
        resources = self.needs[slot.group].resources
        if slot.rc is None:
            return tuple(resources)
        return tuple((rc, amount) for rc, amount in resources
                     if rc == slot.rc)

    def shaper(self, provider_key: dict[int, str] | None = None,
               class_key: dict[int, str] | None = None
               ) -> Callable[[Sequence[int]],
                             tuple[dict[Any, dict[Any, int]],
                                   dict[str, list[Any]]]]:
        """A function turning a candidate into ({provider: {rc: amount}}
        in slot order, {suffix: [provider]}), with providers and classes
        mapped by ``provider_key`` and ``class_key`` when given; what is
        the same for every candidate is worked out once.
        """
        slots = [(suffix, tuple((class_key[rc] if class_key else rc, amount)
                                for rc, amount in amounts))
                 for suffix, amounts in zip(self.slot_suffixes,
                                            self.slot_amounts)]

        def shape(chosen):
            allocations: dict[Any, dict[Any, int]] = {}
            mappings: dict[str, list[Any]] = {}
            for (suffix, amounts), provider in zip(slots, chosen):
                if provider_key is not None:
                    provider = provider_key[provider]
                if amounts:
                    mine = allocations.get(provider)
                    if mine is None:
                        mine = allocations[provider] = {}
                    for rc, amount in amounts:
                        mine[rc] = mine.get(rc, 0) + amount
                providers = mappings.get(suffix)
                if providers is None:
                    mappings[suffix] = [provider]
                elif provider not in providers:
                    providers.append(provider)
            return allocations, mappings
        return shape

    def most_room_first(self, chosen: list[tuple[int, tuple[int, ...]]],
                        universe: Universe | None = None
                        ) -> list[tuple[int, tuple[int, ...]]]:
        """``chosen`` (anchor, providers per slot) with the candidates
        that leave their providers the most room first; ties keep their
        order.

        A client that claims the first candidate, as many concurrent
        schedulers do, then spreads its claims instead of racing the
        others for the last units of the lowest tree: a full provider
        would answer all but one of them with a 409. Room is the share of
        each inventory's capacity a candidate leaves, summed over what it
        takes (a slot taking from a provider another slot takes from too
        is judged on its own amount). The usage is that of ``universe``
        (as for ``fits``).
        """
        inventory = (universe or self.universe).inventory
        keys = [0.0] * len(chosen)
        for level, amounts in enumerate(self.slot_amounts):
            for rc, amount in amounts:
                left: dict[int, float] = {}
                for provider in {c[level] for _anchor, c in chosen}:
                    inv = inventory[provider, rc]
                    usable = (inv.total - inv.reserved) * inv.ratio
                    left[provider] = ((usable - inv.used - amount) / usable
                                      if usable > 0 else 0.0)
                keys = list(map(operator.add, keys,
                                [left[c[level]] for _anchor, c in chosen]))
        order = sorted(range(len(chosen)), key=keys.__getitem__,
                       reverse=True)
        return [chosen[index] for index in order]

    def providers_used(self, candidates: Iterable[Sequence[int]]
                       ) -> set[int]:
        """The providers the candidates (providers per slot) take
        resources from.
        """
        giving = self.giving_levels()
        return {chosen[level] for chosen in candidates for level in giving}

    def giving_levels(self) -> list[int]:
        """The slots whose providers give resources (a resourceless
        group's do not)."""
        return [level for level, amounts in enumerate(self.slot_amounts)
                if amounts]


class _Walk:
    """Depth-first walk over one anchor's options for the slots at
    ``levels``.

    ``combined`` walks check what only matters once groups are put
    together: capacity summed over groups, isolation, same_subtree and,
    before 1.29, one provider per tree. Without it a walk only checks the
    unsuffixed group's traits, which is how upstream vets a single group.
    """

    def __init__(self, plan, levels, combined=True):
        self.plan = plan
        self.levels = list(levels)
        self.combined = combined
        slots = [plan.slots[level] for level in self.levels]
        needs = plan.needs
        self.consumes = [
            tuple((rc, amount) for rc, amount in plan.slot_amounts[level]
                  if rc in plan.shared) if combined else ()
            for level in self.levels]
        self.isolated = [combined and plan.isolate
                         and needs[slot.group].single_provider
                         for slot in slots]
        spread = [position for position, slot in enumerate(slots)
                  if not needs[slot.group].single_provider]
        self.spread = spread
        self.spread_required = (needs[slots[spread[0]].group].required
                                if spread else ())
        # Checks of a combination so far, at the slot that completes what
        # they look at. Functions of the universe, not methods: the walk
        # keeping its own methods would be a reference cycle holding the
        # universe until the cyclic collector's next pass.
        self.checks: list[list[Callable[..., bool]]] = [[] for _ in slots]
        spread_check = None
        if spread and self.spread_required:
            spread_check = _spread_traits_check(
                plan.universe, spread, self.spread_required)
            self.checks[spread[-1]].append(spread_check)
        if combined:
            position_of = {needs[slot.group].suffix: position
                           for position, slot in enumerate(slots)
                           if needs[slot.group].single_provider}
            for suffixes in plan.same_subtrees:
                positions = sorted(position_of[s] for s in suffixes)
                self.checks[positions[-1]].append(
                    _subtree_check(plan.universe, positions))
        self.steps = list(zip(self.consumes, self.isolated, self.checks))
        # Nothing ties the slots together: every combination is viable.
        self.independent = not any(
            consumes or isolated or checks
            for consumes, isolated, checks in self.steps)
        # Nothing but the unsuffixed group's traits: where every option
        # of one of its slots has each set of them (Nova 2026.2's
        # OWNER_NOVA on the root, which gives the disk or is the only
        # provider), every combination is viable too.
        self.traits_only = spread_check is not None and not any(
            consumes or isolated or checks not in ([], [spread_check])
            for consumes, isolated, checks in self.steps)
        # Holders of each any-of set of them, once asked.
        self._having: list[set[int]] | None = None

    def _holders(self):
        """The holders of each any-of set of the unsuffixed group's
        traits."""
        if self._having is None:
            # The plan is made once its batch's traits are read.
            holders = self.plan.universe.trait_holders
            self._having = [set().union(*(holders.get(trait, _NONE)
                                          for trait in any_of))
                            for any_of in self.spread_required]
        return self._having

    def each_has_traits(self, options):
        """Whether, for each any-of set of the unsuffixed group's traits,
        every option of one of its slots has one of them: then so has
        every combination."""
        spread = self.spread
        for having in self._holders():
            for position in spread:
                if having.issuperset(options[position]):
                    break
            else:
                return False
        return True

    def hopeless(self, options: list[list[int]]) -> bool:
        """Whether no combination of ``options`` (per slot) can be viable,
        as told without walking them: none of the unsuffixed group's
        options holds one of an any-of set of its traits, or isolated
        slots outnumber the providers among their options. Most hosts
        a walk finds nothing on are such (a flat host without a required
        trait, or with the one provider several isolated groups need).
        """
        if self.spread_required:
            offered = set().union(*(options[p] for p in self.spread))
            if any(having.isdisjoint(offered) for having in self._holders()):
                return True
        isolated = [options[p] for p, alone in enumerate(self.isolated)
                    if alone]
        return len(set().union(*isolated)) < len(isolated)

    def every_combination(self, anchor: int) -> bool:
        """Whether every combination of ``anchor``'s options is a
        candidate: nothing ties its slots together there (the shortcut
        ``walk`` takes)."""
        if self.combined and not self.plan.nested:
            return False
        return self.independent or self.traits_only and self.each_has_traits(
            self.options_at(anchor))

    def options_at(self, anchor: int) -> list[list[int]]:
        """``anchor``'s options for each slot walked."""
        return [self.plan.options[level][anchor] for level in self.levels]

    def first(self, anchor: int) -> tuple[int, ...] | None:
        """The first candidate anchored at ``anchor`` (providers per
        slot), if any."""
        found = next(self.walk(anchor), None)
        return None if found is None else found[1]

    def walk(self, anchor: int) -> Iterator[tuple[int, tuple[int, ...]]]:
        """Yield (anchor, chosen) for every viable combination; nothing
        is prepared before the first one is asked for. Iterative, so that
        an abandoned walk leaves no reference cycle behind.
        """
        plan = self.plan
        room = plan.universe.room
        options = self.options_at(anchor)
        if not options:
            return
        one_per_tree = self.combined and not plan.nested
        # Product tuples, or below the list of providers chosen so far.
        chosen: tuple[int, ...] | list[Any]
        if (self.independent or self.traits_only and self.each_has_traits(
                options)) and not one_per_tree:
            # The same order as the walk below: the last slot turns fastest.
            for chosen in itertools.product(*options):
                yield anchor, chosen
            return
        if self.hopeless(options):
            return
        steps = self.steps
        last = len(options) - 1
        consumed: collections.defaultdict[tuple[int, int], int] = (
            collections.defaultdict(int))
        taken = set()
        chosen = [None] * len(options)
        following = [0] * len(options)
        position = 0
        tried = 0
        while position >= 0:
            # A walk may try a great many dead ends between candidates.
            tried += 1
            if not tried % _DEADLINE_EVERY:
                watchdog.check()
            consumes, isolated, checks = steps[position]
            index = following[position]
            if index == len(options[position]):
                # Exhausted: back to the previous slot and release it.
                following[position] = 0
                position -= 1
                if position >= 0:
                    provider = chosen[position]
                    for rc, amount in steps[position][0]:
                        consumed[(provider, rc)] -= amount
                    if steps[position][1]:
                        taken.discard(provider)
                continue
            following[position] = index + 1
            provider = options[position][index]
            if isolated and provider in taken:
                continue
            if consumes and any(
                    consumed[(provider, rc)] + amount > room(provider, rc)
                    for rc, amount in consumes):
                continue
            chosen[position] = provider
            if checks and not all(check(chosen) for check in checks):
                continue
            if position == last:
                if not one_per_tree or self._one_per_tree(chosen):
                    yield anchor, tuple(chosen)
                continue
            for rc, amount in consumes:
                consumed[(provider, rc)] += amount
            if isolated:
                taken.add(provider)
            position += 1

    def _one_per_tree(self, chosen):
        """Before nested providers (1.29) a candidate could not combine
        providers of one tree.
        """
        providers = self.plan.providers_used((chosen,))
        roots = {self.plan.universe.root[p] for p in providers}
        return len(roots) == len(providers)


def _spread_traits_check(universe, spread, required):
    """Whether the providers a combination chose at the positions
    ``spread`` hold the ``required`` any-of traits between them."""
    traits = universe.traits

    def check(chosen):
        held = set()
        for position in spread:
            held |= traits.get(chosen[position], _NONE)
        return _has_traits(held, required)
    return check


def _subtree_check(universe, positions):
    """Whether the providers a combination chose at ``positions`` are
    in one subtree."""
    def check(chosen):
        return _same_subtree(universe, {chosen[p] for p in positions})
    return check


def _same_subtree(universe, providers):
    """Whether one of ``providers`` is an ancestor of (or is) them all.
    Only the shallowest can be.
    """
    if len(providers) == 1:
        return True
    top = min(providers, key=lambda p: len(universe.ancestry(p)))
    return all(top in universe.ancestry(p) for p in providers)


def _round_robin(iterators):
    """One item from each iterator in turn until all are exhausted."""
    active = collections.deque(iterators)
    while active:
        iterator = active.popleft()
        for item in iterator:
            yield item
            active.append(iterator)
            break
