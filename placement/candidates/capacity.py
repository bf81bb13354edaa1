"""How many more instances of a flavour fit right now, and where.

A flavour is a name and the query string of GET /allocation_candidates,
parsed into a ``request.Request``. ``count(conn, flavours)`` answers, for
each, how many instances fit in total, per root provider (host) and per
aggregate, and which resource class runs out first; and, over all of
them, the capacity stranded on hosts where none of them fits, the usage
per class and the fullest hosts. The count is that of a scheduler placing
instances one by one, each on the FIRST candidate GET
/allocation_candidates would return (no limit, not randomized: the one
``engine.Plan.most_room_first`` puts first), until none is left. Every
constraint is the engine's own: its options, walks and arithmetic over
the rows of a batch of trees at a time (those sharing providers serve
with those providers), read once for all the flavours and dropped
before the next batch's: the memory is a batch's, whatever the cloud.

How each count is obtained (``method``):

* ``exact``: a host whose candidates use no sharing provider is on its
  own. When every combination of its options is a candidate (nothing
  ties the slots together), each slot draws on its own rows, so the
  count is the least, over its slots, of what their options can give one
  after the other (``engine.times``), in whatever order. When its slots
  are tied (group isolation, same_subtree, classes several slots share)
  but all its candidates take the same amounts from the same rows (one
  candidate; alike groups on alike NUMA nodes), usage grows the same
  whichever is placed: the count is that of the candidate that fits the
  longest. The hosts that are one provider sharing nothing, for a
  flavour of the unsuffixed group alone, are counted so all at once,
  as columns of their rows' spare capacity, without engine options
  (the engine's checks of traits and aggregates select them). Sharing
  providers that one slot of every host of a group draws on alike (a
  disk shared through an aggregate) are a pool: the
  group's total is the least of its hosts' sum and the pool, and the
  hosts' counts are exact while the pool does not bind. None of this
  lists candidates; a host without any is found by one step of a walk.
* ``placed one by one``: anything else (a host whose candidates take
  differently; hosts competing for sharing providers otherwise) is
  placed in memory: the candidates of the hosts that compete are made
  once, and each step takes the first of those that still fit
  (``engine.Plan.fits``) as most_room_first orders them, in a scratch
  copy of their rows. A binding pool spreads its total over its hosts
  that way too, in the order of their own rows' room (the pool's share
  of the room being the same for all): that split, not the total, is
  then "placed one by one".

The answer as JSON (``Answer.as_dict``)::

    {"flavours": [{"name": str, "query": str,
                   "fit": int,                 # instances that fit in all
                   "method": "exact" | "placed one by one",
                   "limited_by": str | null,   # class binding the most
                   "hosts_with_room": int,     # hosts where >= 1 fits
                   "hosts": [{"uuid", "name", "fit", "limited_by",
                              "method"}],      # most fit first (cut)
                   "aggregates": [{"uuid", "fit"}]}],
     "stranded": [{"resource_class": str, "free": int, "hosts": int}],
     "usage": [{"resource_class": str, "capacity": int, "used": int,
                "aggregates": [{"uuid", "capacity", "used"}]}],
     "fullest_hosts": [{"uuid", "name", "resource_class", "capacity",
                        "used"}]}

``fit`` of a flavour is the sum of its hosts'; ``aggregates`` gives the
sum over the root providers that are members of each aggregate of which
some root is a member. ``limited_by`` of a host is the class of which it
runs out first; of a flavour, the class that bound the most of its
instances. ``stranded`` is, per class the flavours ask for, the free
capacity of the hosts (roots, sharing providers left out) where none of
them fits once, and how many hosts have some. ``usage`` covers the
classes the flavours ask for, over every provider (capacity as
(total - reserved) * allocation_ratio, rounded down, summed), and per
aggregate over the trees of the roots that are its members;
``fullest_hosts`` ranks the hosts by the largest share used of one of
those classes.
"""
import collections
import dataclasses
import heapq
from typing import Any
from typing import Iterable
from typing import Sequence
import urllib.parse

import numpy as np
import sqlalchemy as sa

from placement import candidates
from placement import exception
from placement import querylang
from placement.candidates import engine
from placement.candidates import loading
from placement.candidates import request as request_model
from placement.candidates import sql
from placement.db import inventory as inventory_db
from placement.db import watchdog

EXACT = 'exact'
PLACED = 'placed one by one'

# Hosts ``fullest_hosts`` ranks.
FULLEST = 10


@dataclasses.dataclass
class Flavour:
    name: str
    # The query string as given, and as parsed.
    query: str
    request: request_model.Request


# A host's (instances, id of the class binding them or None, method):
# a tuple, made for every host of every flavour.
Room = tuple[int, int | None, str]


@dataclasses.dataclass(slots=True)
class HostFit:
    root: int
    fit: int
    limited_by: str | None
    method: str
    uuid: str = ''
    name: str = ''


@dataclasses.dataclass
class FlavourFit:
    name: str
    query: str
    fit: int
    method: str
    limited_by: str | None
    hosts_with_room: int
    # Those with room, most fit first, cut to the number asked for.
    hosts: list[HostFit]
    aggregates: list[tuple[str, int]]

    def as_dict(self) -> dict[str, Any]:
        return {
            'name': self.name, 'query': self.query, 'fit': self.fit,
            'method': self.method, 'limited_by': self.limited_by,
            'hosts_with_room': self.hosts_with_room,
            'hosts': [{'uuid': host.uuid, 'name': host.name,
                       'fit': host.fit, 'limited_by': host.limited_by,
                       'method': host.method} for host in self.hosts],
            'aggregates': [{'uuid': uuid, 'fit': fit}
                           for uuid, fit in self.aggregates]}


@dataclasses.dataclass
class Answer:
    flavours: list[FlavourFit]
    # (class, free, hosts)
    stranded: list[tuple[str, int, int]]
    # (class, capacity, used, [(aggregate uuid, capacity, used)])
    usage: list[tuple[str, int, int, list[tuple[str, int, int]]]]
    # (uuid, name, class, capacity, used)
    fullest_hosts: list[tuple[str, str, str, int, int]]

    def as_dict(self) -> dict[str, Any]:
        return {
            'flavours': [flavour.as_dict() for flavour in self.flavours],
            'stranded': [{'resource_class': rc, 'free': free, 'hosts': hosts}
                         for rc, free, hosts in self.stranded],
            'usage': [{'resource_class': rc, 'capacity': capacity,
                       'used': used,
                       'aggregates': [{'uuid': uuid, 'capacity': agg_cap,
                                       'used': agg_used}
                                      for uuid, agg_cap, agg_used in aggs]}
                      for rc, capacity, used, aggs in self.usage],
            'fullest_hosts': [{'uuid': uuid, 'name': name,
                               'resource_class': rc, 'capacity': capacity,
                               'used': used}
                              for uuid, name, rc, capacity, used
                              in self.fullest_hosts]}


def count(conn: sa.Connection, flavours: Sequence[Flavour],
          hosts_listed: int | None = None) -> Answer:
    """The answer for ``flavours``; each lists at most ``hosts_listed``
    hosts (None: all with room).

    Raises exception.Invalid, with GET /allocation_candidates' message,
    for a flavour naming an unknown resource class or trait, as that
    endpoint would.
    """
    with candidates.gc_paused():
        return _count(conn, flavours, hosts_listed)


def _count(conn, flavours, hosts_listed):
    resolved = [_resolve(conn, flavour) for flavour in flavours]
    links, class_names = _load(conn, flavours, resolved)
    memberships = _Memberships(conn)
    tallies = [_Tally(flavour, hosts_listed, memberships, class_names)
               for flavour in flavours]
    summary = _Summary(memberships)
    # A batch of trees at a time, its rows dropped before the next's are
    # read: at 100,000 nodes the rows of all at once were the peak.
    for universe in _batches(conn, links):
        watchdog.check()
        apart = _Apart(universe, memberships)
        # The batch's hosts some flavour fits on: those apart as a column.
        roomy: set[int] = set()
        apart_roomy = np.zeros(len(apart.hosts), dtype=bool)
        for tally, flavour, (names, needs) in zip(tallies, flavours,
                                                  resolved):
            if needs is not None:
                hosts, apart_fit, placed = _hosts(
                    conn, universe, flavour.request, names, needs, apart)
                roomy.update(hosts)
                tally.add(hosts, placed)
                if apart_fit is not None:
                    apart_roomy |= apart_fit.fit > 0
                    tally.add_apart(apart_fit)
        roomy.update(apart.hosts[apart_roomy].tolist())
        summary.add(universe, roomy)
    answers = [tally.result() for tally in tallies]
    fullest = summary.fullest(class_names)
    names_of = sql.provider_names(conn, {
        host.root for answer in answers for host in answer.hosts} | {
        root for root, _rc, _capacity, _used in fullest})
    for answer in answers:
        for host in answer.hosts:
            host.uuid, host.name = names_of[host.root]
    return Answer(
        answers, summary.stranded(class_names), summary.usage(class_names),
        [(*names_of[root], rc, capacity, used)
         for root, rc, capacity, used in fullest])


class _Memberships:
    """The aggregates of every root in one. Roots in the same aggregates
    are of one kind (an index; 0: in none), by which counts are summed
    before they are spread over the aggregates."""

    def __init__(self, conn):
        held = collections.defaultdict(list)
        for root, aggregate in sql.root_aggregates(conn):
            held[root].append(aggregate)
        # The aggregate uuids of each kind, in uuid order.
        self.kinds: list[tuple[str, ...]] = [()]
        index: dict[tuple[str, ...], int] = {(): 0}
        # {root: kind} of the roots in some aggregate.
        self.of: dict[int, int] = {}
        for root, aggregates in held.items():
            key = tuple(sorted(aggregates))
            kind = index.get(key)
            if kind is None:
                kind = index[key] = len(self.kinds)
                self.kinds.append(key)
            self.of[root] = kind

    def aggregates(self) -> list[str]:
        """Every aggregate some root is a member of, in uuid order."""
        return sorted(set().union(*self.kinds))


def _resolve(conn, flavour):
    """(names, needs) of a flavour's request; needs None when it finds
    nothing before looking at any capacity (as GET
    /allocation_candidates). A named flavour's refusal names it."""
    try:
        return candidates.resolve(conn, flavour.request)
    except exception.Invalid as exc:
        if not flavour.name:
            raise
        raise exception.Invalid(named(flavour.name, str(exc))) from None


def named(name: str, message: str) -> str:
    """A refusal's ``message`` about the flavour ``name``."""
    return 'Flavour %s: %s' % (name, message)


def _load(conn, flavours, resolved):
    """The links of every flavour (who holds the traits and is in the
    aggregates they name, which trees sharing providers serve) as a
    universe without rows, whose requested classes are all those they
    ask for; and {class id: name}.
    """
    merged = sql.Names({}, {}, {}, {})
    links: list[engine.Need] = []
    classes: set[int] = set()
    root_traits: set[str] = set()
    for flavour, (names, needs) in zip(flavours, resolved):
        for mine, all_of in zip(names, merged):
            all_of.update(mine)
        if needs is not None:
            classes.update(rc for need in needs for rc, _ in need.resources)
            # The rows are read below, of every tree.
            links += [dataclasses.replace(need, resources=(), tree=None)
                      for need in needs]
            root_traits |= (flavour.request.root_required
                            | flavour.request.root_forbidden)
    together = request_model.Request(groups=[], root_required=root_traits)
    universe = loading.load_universe(conn, together, links, merged)
    universe.share_trait_sets()
    universe.requested_classes = classes
    return universe, {ident: name for name, ident in merged.classes.items()}


# Trees whose rows are read at a time.
TREES_A_READ = 10000


def _batches(conn, links):
    """Universes with the links of ``links`` each holding every row of
    its classes of a batch of trees. The trees that sharing providers
    serve come in a batch with those providers' trees: hosts compete
    for those only."""
    for roots in _tree_batches(conn, links):
        universe = links.linked()
        # The sharing providers of the batch's trees, which serve only
        # those (the rest would be looked at in every batch).
        within = set(roots)
        universe.sharing = {provider for provider in links.sharing
                            if links.root[provider] in within}
        universe.share_anchors = collections.defaultdict(set, {
            provider: links.share_anchors[provider]
            for provider in universe.sharing
            if provider in links.share_anchors})
        if links.requested_classes:
            universe.add_inventories(sql.inventories(
                conn, links.requested_classes, roots=roots))
        yield universe


def _tree_batches(conn, links):
    """Lists of roots, every root in one of them: at most TREES_A_READ
    a list, but the trees sharing providers link are never apart."""
    leader: dict[int, int] = {}
    for provider in links.sharing:
        own = links.root[provider]
        leader.setdefault(own, own)
        for root in links.share_anchors.get(provider, ()):
            _union(leader, own, root)
    linked = collections.defaultdict(list)
    for root in leader:
        linked[_find(leader, root)].append(root)
    batch: list[int] = []
    for trees in sorted(sorted(trees) for trees in linked.values()):
        if batch and len(batch) + len(trees) > TREES_A_READ:
            yield batch
            batch = []
        batch += trees
    if not links.requested_classes:
        # No rows to read: one universe still has the links.
        yield batch
        return
    if batch:
        yield batch
    after = -1
    while True:
        roots = sql.usable_roots(conn, None, after, TREES_A_READ)
        if not roots:
            return
        after = roots[-1]
        alone = [root for root in roots if root not in leader]
        if alone:
            yield alone


def _hosts(conn, universe, request, names, needs, apart):
    """({root: Room} of one flavour's hosts with room, the _ApartFit of
    the hosts apart when counted so (else None), whether some host was
    placed one by one). Its engine options are dropped on return, before
    the next flavour's are made: two flavours' options at once would be
    the peak memory at 100,000 nodes."""
    counter = _Counter(conn, universe, request, names, needs, apart)
    hosts = counter.hosts()
    return hosts, counter.alone(), counter.placed


class _Apart:
    """The hosts of a universe that are one provider sharing nothing: a
    root holding every row of the requested classes in its tree, neither
    a sharing provider nor served by one. Such a host has one candidate
    at most, every slot on its one provider. A flavour of the unsuffixed
    group alone counts them all at once, from columns of their spare
    capacity (_Counter.alone), without engine options; the options of
    any other are made of the other trees' rows and of those of the
    hosts whose provider satisfies each of its groups on its own
    (``engine.matching``), the others having no candidate.
    """

    def __init__(self, universe, memberships):
        below: set[int] = set()
        shared = set(universe.sharing).union(
            *universe.share_anchors.values())
        roots = universe.root
        for provider, _rc in universe.inventory:
            if provider != roots[provider]:
                below.add(roots[provider])
        self.roots = {roots[provider] for provider, _rc
                      in universe.inventory} - below - shared
        self.universe = universe
        self.alone, self.rest = universe.parted(
            self.roots, universe.requested_classes)
        # The columns: root ids, their aggregates' kind, and (made when
        # first asked for) the spare units of a class, -1 without a row.
        self.host_ids = sorted(self.roots)
        self.hosts = np.array(self.host_ids, dtype=np.int64)
        of = memberships.of
        self.kinds = np.fromiter((of.get(root, 0) for root in self.host_ids),
                                 dtype=np.int64, count=len(self.host_ids))
        self._spare: dict[int, Any] = {}

    def spare(self, rc):
        """The column of spare units of class ``rc`` (Universe.spare)."""
        column = self._spare.get(rc)
        if column is None:
            spare = self.universe.spare(rc)
            column = self._spare[rc] = np.fromiter(
                (spare.get(root, -1) for root in self.host_ids),
                dtype=np.int64, count=len(self.host_ids))
        return column

    def split(self, request, needs):
        """(whether a flavour counts the hosts apart in closed form; the
        universe its options are made of)."""
        if (request.nested and len(needs) == 1
                and not needs[0].single_provider and needs[0].resources):
            # The walk's shortcut: every combination a candidate.
            return True, self.rest
        giving = [need for need in needs if need.resources]
        if not giving:
            return False, self.universe
        suffixed = [need for need in giving if need.single_provider]
        if request.isolate and len(suffixed) > 1:
            # Isolated groups need a provider each.
            return False, self.rest
        hopeful = set(self.roots)
        for need in giving:
            hopeful &= engine.matching(self.alone, need)
        if not hopeful:
            return False, self.rest
        return False, self.universe.parted(
            self.roots - hopeful, self.universe.requested_classes)[1]


@dataclasses.dataclass
class _ApartFit:
    """A flavour's count of the hosts apart, as columns beside theirs."""
    apart: _Apart
    # Instances per host (0: none), and the slot binding them.
    fit: Any
    binding: Any
    # The class of each slot.
    classes: list[int]


class _Counter:
    """The hosts of one flavour with their counts."""

    def __init__(self, conn, universe, request, names, needs, apart):
        self.universe = universe
        self.anchor_ok = loading.anchor_filter(request, names, universe)
        # The hosts apart are counted without engine options (alone),
        # or only those that can have a candidate have options.
        closed_form, rest = apart.split(request, needs)
        self.apart = apart if closed_form else None
        self.root_filtered = bool(request.root_required
                                  or request.root_forbidden)
        self.needs = needs
        self.plan = engine.Plan(
            rest, needs, self.anchor_ok,
            isolate=request.isolate, same_subtrees=request.same_subtrees,
            nested=request.nested)
        if request.same_subtrees:
            loading.load_ancestry(conn, self.plan)
        self.walk = self.plan.walker()
        self.found: dict[int, Room] = {}
        # Whether some host was placed one by one.
        self.placed = False

    def hosts(self) -> dict[int, Room]:
        """{root id: Room} of the hosts where an instance fits."""
        plan, sharing, walk = self.plan, self.universe.sharing, self.walk
        # Union-find over the anchors whose options hold sharing
        # providers, and those providers.
        leader: dict[tuple[str, int], tuple[str, int]] = {}
        anchor_set = set(plan.anchors)
        for provider in sharing:
            # A sharing provider is an option of its own tree's anchor
            # and of those it serves, if of any.
            served = self.universe.share_anchors.get(provider, set()) | {
                self.universe.root[provider]}
            for anchor in served & anchor_set:
                if any(provider in options[anchor]
                       for options in plan.options):
                    leader.setdefault(('anchor', anchor), ('anchor', anchor))
                    _union(leader, ('anchor', anchor), ('sharing', provider))
        linked = {anchor for kind, anchor in leader if kind == 'anchor'}
        free: list[int] = []
        tied: list[int] = []
        every_combination = walk.every_combination
        for anchor in plan.anchors:
            if anchor not in linked:
                (free if every_combination(anchor) else tied).append(anchor)
        for anchor, room in self._rooms(free).items():
            self._note(anchor, room, EXACT)
        for number, anchor in enumerate(tied, 1):
            if not number % 1024:
                watchdog.check()
            self._tied(anchor)
        groups = collections.defaultdict(list)
        for node in leader:
            if node[0] == 'anchor':
                groups[_find(leader, node)].append(node[1])
        for anchors in groups.values():
            self._competing(sorted(anchors))
        return self.found

    def alone(self) -> _ApartFit | None:
        """The count of the hosts apart (_Apart) that the flavour's group
        matches, when it counts them so: a single provider is its one
        candidate, which fits as many times as the least of its rows'
        spare capacity allows (``Universe.spare``: the checks
        ``engine.times`` makes; and the units and step sizes
        ``Universe.fitting`` checks), as the free hosts are counted
        (_rooms). Of those with room, the engine's own checks of traits
        and aggregates (``engine.matching``) and the root filter keep the
        matching ones."""
        apart = self.apart
        if apart is None:
            return None
        need, universe = self.needs[0], self.universe
        classes, columns = [], []
        for amounts in self.plan.slot_amounts:
            # The unsuffixed group: a slot a class.
            (rc, amount), = amounts
            classes.append(rc)
            spare = apart.spare(rc)
            column = np.where(spare >= amount, spare // amount, 0)
            refused = universe.unit_refusing(rc, amount)
            if refused:
                column[np.isin(apart.hosts, list(refused))] = 0
            columns.append(column)
        fit, binding = columns[0], np.zeros_like(columns[0])
        for level, column in enumerate(columns[1:], 1):
            # The first slot of the least binds.
            lower = column < fit
            fit = np.where(lower, column, fit)
            binding[lower] = level
        if need.tree is not None:
            # in_tree: the tree's root is the one provider.
            fit[apart.hosts != need.tree] = 0
        if (need.required or need.forbidden or need.member_of
                or need.forbidden_aggs or need.lost or self.root_filtered):
            with_room = apart.hosts[fit > 0].tolist()
            matched = engine.matching(
                apart.alone, dataclasses.replace(need, resources=()),
                among=with_room)
            anchor_ok = self.anchor_ok
            fit[~np.isin(apart.hosts, [root for root in with_room
                                       if root in matched
                                       and anchor_ok(root)])] = 0
        return _ApartFit(apart, fit, binding, classes)

    def _note(self, anchor, room, method):
        """Host ``anchor`` takes room[0] instances, limited by the class
        of id room[1] (None: nothing). Only hosts with room are kept."""
        fit, limited_by = room
        if method == PLACED:
            self.placed = True
        if not fit:
            return
        self.found[anchor] = (fit, limited_by, method)

    def _tied(self, anchor):
        """A host no other host competes with, whose slots are tied
        together. When all its candidates take the same amounts from the
        same rows (one candidate; groups alike on alike providers), usage
        grows alike whichever is placed: the count is that of the one
        that fits the longest. Else placed one by one.
        """
        if self.walk.hopeless(self.walk.options_at(anchor)):
            return
        found = list(self.walk.walk(anchor))
        takings = {frozenset(self._taking(chosen).items())
                   for _anchor, chosen in found}
        if len(takings) > 1:
            self._place([anchor], found)
        else:
            self._note(anchor, max(
                (self._candidate_room(chosen) for _anchor, chosen in found),
                default=(0, None)), EXACT)

    def _rooms(self, anchors, levels=None):
        """{anchor: (instances, binding class)} of anchors every
        combination of whose options is a candidate: the least over
        their slots (or those of ``levels``) of what the slot's options
        can give one after the other, in any order; (None, None) where
        the slots take nothing."""
        plan = self.plan
        rooms: dict[int, tuple[Any, Any]] = dict.fromkeys(
            anchors, (None, None))
        for level in range(len(plan.slots)) if levels is None else levels:
            amounts = plan.slot_amounts[level]
            options = plan.options[level]
            if len(amounts) == 1:
                (rc, amount), = amounts
                spare = self.universe.spare(rc)
                for anchor in anchors:
                    providers = options[anchor]
                    fit = (spare[providers[0]] // amount
                           if len(providers) == 1 else
                           sum([spare[provider] // amount
                                for provider in providers]))
                    least = rooms[anchor][0]
                    if least is None or fit < least:
                        rooms[anchor] = (fit, rc)
                continue
            for anchor in anchors:
                room = self._level_room(amounts, options[anchor])
                least = rooms[anchor][0]
                if room is not None and (least is None or room[0] < least):
                    rooms[anchor] = room
        return rooms

    def _level_room(self, amounts, providers):
        """(instances, binding class) that a slot of several ``amounts``
        (none: None) can still take from ``providers``, one after the
        other, in any order."""
        if not amounts:
            return None
        inventory = self.universe.inventory
        total = 0
        by_class: collections.Counter = collections.Counter()
        for provider in providers:
            each = {rc: engine.times(inventory[provider, rc], amount)
                    for rc, amount in amounts}
            total += min(each.values())
            by_class.update(each)
        return total, min(by_class, key=lambda rc: (by_class[rc], rc))

    def _taking(self, chosen):
        """{(provider, class): (amount, largest slot's amount)} that
        candidate ``chosen`` takes."""
        taking: dict[tuple[int, int], tuple[int, int]] = {}
        for provider, amounts in zip(chosen, self.plan.slot_amounts):
            for rc, amount in amounts:
                total, largest = taking.get((provider, rc), (0, 0))
                taking[provider, rc] = (total + amount, max(largest, amount))
        return taking

    def _candidate_room(self, chosen, universe=None):
        """(instances, binding class) of one candidate taken again and
        again (from the rows of ``universe``, by default the counter's).
        """
        inventory = (universe or self.universe).inventory
        return min((engine.times(inventory[key], amount, largest), key[1])
                   for key, (amount, largest)
                   in self._taking(chosen).items())

    def _competing(self, anchors):
        """Hosts that share providers: a pool when they can, else placed
        one by one."""
        walk = self.walk
        kept = []
        for anchor in anchors:
            if walk.every_combination(anchor) or walk.first(anchor):
                kept.append(anchor)
            else:
                # Never a candidate here: options only shrink.
                self._note(anchor, (0, None), EXACT)
        if len(kept) == 1:
            # Sharing providers no other host uses.
            if walk.every_combination(kept[0]):
                self._note(kept[0], self._rooms(kept)[kept[0]], EXACT)
            else:
                self._tied(kept[0])
        elif kept and not self._pooled(kept):
            self._place(kept)

    def _pooled(self, anchors):
        """Count ``anchors`` whose every combination of options is a
        candidate and whose slots either draw on the same options for all
        (the pool) or on options no other of them has; whether they do.
        """
        plan = self.plan
        if not all(self.walk.every_combination(a) for a in anchors):
            return False
        common, private = [], []
        users: collections.Counter = collections.Counter()
        for anchor in anchors:
            users.update({provider for level in range(len(plan.slots))
                          for provider in plan.options[level][anchor]})
        for level in range(len(plan.slots)):
            options = [plan.options[level][anchor] for anchor in anchors]
            if all(option == options[0] for option in options):
                common.append(level)
            elif all(users[provider] == 1 for option in options
                     for provider in option):
                private.append(level)
            else:
                return False
        pool = self._rooms([anchors[0]], common)[anchors[0]]
        if not private:
            # Sharing providers only: the same candidates for every anchor,
            # which GET /allocation_candidates gives once, at the first.
            self._note(anchors[0], pool, EXACT)
            for anchor in anchors[1:]:
                self._note(anchor, (0, None), EXACT)
            return True
        own = self._rooms(anchors, private)
        if any(fit is None for fit, _rc in own.values()):
            return False
        hosts_sum = sum(fit for fit, _rc in own.values())
        if pool[0] is None or hosts_sum <= pool[0]:
            for anchor, room in own.items():
                self._note(anchor, room, EXACT)
            return True
        for anchor, fit in self._spread(anchors, private, pool[0]).items():
            self._note(anchor, (fit, pool[1] if fit < own[anchor][0]
                                 else own[anchor][1]), PLACED)
        return True

    def _spread(self, anchors, private, instances):
        """How the pool's ``instances`` fall on ``anchors``, placed one by
        one on the anchor whose own rows are left the most room (as
        most_room_first would, the pool's share being the same for all).
        """
        scratch = self.universe.scratch(
            provider for anchor in anchors for level in private
            for provider in self.plan.options[level][anchor])
        inventory = scratch.inventory
        amounts = self.plan.slot_amounts

        def left(provider, level):
            share = 0.0
            for rc, amount in amounts[level]:
                inv = inventory[provider, rc]
                usable = (inv.total - inv.reserved) * inv.ratio
                share += ((usable - inv.used - amount) / usable
                          if usable > 0 else 0.0)
            return share

        def best(anchor):
            """(key, providers per private level) or None when full."""
            key, chosen = 0.0, []
            for level in private:
                usable = [p for p in self.plan.options[level][anchor]
                          if all(engine.times(inventory[p, rc], amount)
                                 for rc, amount in amounts[level])]
                if not usable:
                    return None
                provider = max(usable, key=lambda p: left(p, level))
                key += left(provider, level)
                chosen.append(provider)
            return key, chosen

        placed = dict.fromkeys(anchors, 0)
        heap = []
        for order, anchor in enumerate(anchors):
            found = best(anchor)
            if found is not None:
                heap.append((-found[0], order, anchor, found[1]))
        heapq.heapify(heap)
        while heap and instances:
            _key, order, anchor, chosen = heapq.heappop(heap)
            for level, provider in zip(private, chosen):
                for rc, amount in amounts[level]:
                    scratch.take(provider, rc, amount)
            placed[anchor] += 1
            instances -= 1
            found = best(anchor)
            if found is not None:
                heapq.heappush(heap, (-found[0], order, anchor, found[1]))
        return placed

    def _place(self, anchors, candidates=None):
        """Place instances one by one on the hosts ``anchors`` (and the
        sharing providers they use), each on the first candidate as
        GET /allocation_candidates orders them, until none is left.

        Their candidates (``candidates`` when made already) are made
        once, and their usage changed in a scratch copy of their rows:
        the candidates of a later state are those that still fit it
        (Plan.fits).
        """
        plan = self.plan
        scratch = self.universe.scratch(
            provider for anchor in anchors
            for level in range(len(plan.slots))
            for provider in plan.options[level][anchor])
        left = (list(plan.candidates(anchors=anchors)) if candidates is None
                else candidates)
        placed = dict.fromkeys(anchors, 0)
        last: dict[int, tuple[int, ...]] = {}
        while True:
            watchdog.check()
            left = [item for item in left if plan.fits(item[1], scratch)]
            if not left:
                break
            anchor, first = plan.most_room_first(left, scratch)[0]
            for provider, amounts in zip(first, plan.slot_amounts):
                for rc, amount in amounts:
                    scratch.take(provider, rc, amount)
            placed[anchor] += 1
            last[anchor] = first
        for anchor in anchors:
            limited_by = None
            if anchor in last:
                limited_by = self._candidate_room(last[anchor], scratch)[1]
            self._note(anchor, (placed[anchor], limited_by), PLACED)

def _union(leader, first, second):
    leader.setdefault(second, second)
    leader[_find(leader, first)] = _find(leader, second)


def _find(leader, node):
    while leader[node] != node:
        leader[node] = leader[leader[node]]
        node = leader[node]
    return node


class _Tally:
    """A flavour's FlavourFit, summed up a batch of hosts at a time: only
    the ``hosts_listed`` with the most room are kept (None: all)."""

    def __init__(self, flavour, hosts_listed, memberships, class_names):
        self.flavour = flavour
        self.hosts_listed = hosts_listed
        self.memberships = memberships
        self.class_names = class_names
        self.fit = 0
        self.placed = False
        # Instances by binding class id, and by the kind of a host's
        # aggregates (_Memberships).
        self.binding: collections.Counter = collections.Counter()
        self.by_kind: collections.Counter = collections.Counter()
        self.with_room = 0
        # (root, Room) of the hosts listed so far.
        self.shown: list[tuple[int, Room]] = []

    def add(self, hosts: dict[int, Room], placed: bool) -> None:
        """``hosts`` with room; some host ``placed`` one by one or not."""
        kind_of, binding = self.memberships.of, self.binding
        by_kind = self.by_kind
        self.placed = self.placed or placed
        self.with_room += len(hosts)
        total = 0
        for root, (fit, limited_by, _method) in hosts.items():
            total += fit
            if limited_by is not None:
                binding[limited_by] += fit
            kind = kind_of.get(root)
            if kind:
                by_kind[kind] += fit
        self.fit += total
        self._list(hosts.items())

    def add_apart(self, counted: _ApartFit) -> None:
        """The hosts apart, counted as columns."""
        fit, apart = counted.fit, counted.apart
        roomy = np.flatnonzero(fit)
        if not len(roomy):
            return
        self.fit += int(fit.sum())
        self.with_room += len(roomy)
        for level, rc in enumerate(counted.classes):
            bound = int(fit[counted.binding == level].sum())
            if bound:
                self.binding[rc] += bound
        sums = np.zeros(len(self.memberships.kinds), dtype=np.int64)
        np.add.at(sums, apart.kinds, fit)
        for kind in np.flatnonzero(sums[1:]) + 1:
            self.by_kind[int(kind)] += int(sums[kind])
        listed = self.hosts_listed
        if listed is not None and len(roomy) > listed:
            # Most room first, then in id order.
            roomy = roomy[np.lexsort((apart.hosts[roomy], -fit[roomy]))
                          [:listed]]
        classes = counted.classes
        self._list(
            (root, (fit_, classes[level], EXACT))
            for root, fit_, level in zip(apart.hosts[roomy].tolist(),
                                         fit[roomy].tolist(),
                                         counted.binding[roomy].tolist()))

    def _list(self, hosts: Iterable[tuple[int, Room]]) -> None:
        """Keep the hosts with the most room among those listed and
        (root, Room) ``hosts``."""
        listed, shown = self.hosts_listed, self.shown
        if listed is None:
            shown += hosts
        elif listed:
            # Only a host with as much room as the last listed can be.
            least = shown[-1][1][0] if len(shown) >= listed else 0
            self.shown = heapq.nsmallest(listed, [
                *shown, *(host for host in hosts if host[1][0] >= least)],
                key=_most_room)

    def result(self) -> FlavourFit:
        class_names = self.class_names
        binding = {class_names[rc]: fit for rc, fit in self.binding.items()}
        by_aggregate: collections.Counter = collections.Counter()
        for kind, fit in self.by_kind.items():
            for aggregate in self.memberships.kinds[kind]:
                by_aggregate[aggregate] += fit
        return FlavourFit(
            self.flavour.name, self.flavour.query, self.fit,
            PLACED if self.placed else EXACT,
            min(binding, key=lambda rc: (-binding[rc], rc))
            if binding else None,
            self.with_room,
            [HostFit(root, fit, None if limited_by is None
                     else class_names[limited_by], method)
             for root, (fit, limited_by, method)
             in sorted(self.shown, key=_most_room)],
            [(aggregate, by_aggregate[aggregate])
             for aggregate in self.memberships.aggregates()])


def _most_room(host):
    """(root, Room) of hosts with the most room first, then in id
    order."""
    return -host[1][0], host[0]


class _Summary:
    """Stranded capacity, usage and the fullest hosts, summed up a batch
    of trees at a time."""

    def __init__(self, memberships):
        self.memberships = memberships
        # Per class: over all providers, capacity and used; over the hosts
        # where no flavour fits, free units and the hosts holding some.
        self.capacity: collections.Counter = collections.Counter()
        self.used: collections.Counter = collections.Counter()
        self.free: collections.Counter = collections.Counter()
        self.holders: collections.Counter = collections.Counter()
        # {(class, kind of a root's aggregates): [capacity, used]}
        self.by_kind: collections.defaultdict = (
            collections.defaultdict(lambda: [0, 0]))
        # (-share, root, class, capacity, used) of the FULLEST so far.
        self.ranked: list[tuple[float, int, int, int, int]] = []

    def add(self, universe, roomy):
        """The rows of a batch's ``universe``; ``roomy``: its hosts where
        some flavour fits."""
        kind_of, by_kind = self.memberships.of, self.by_kind
        capacity, used, free = self.capacity, self.used, self.free
        sharing = universe.sharing
        # {host: {class: [capacity, used]}}, summed over its tree.
        hosts: dict[int, dict[int, list[int]]] = {}
        # (host, class) of the free units stranded.
        stranded = set()
        for (_provider, rc, root, _parent, total, reserved, ratio,
             _sql_ratio, _min_unit, _max_unit, _step, taken
             ) in universe.inventory.values():
            usable = inventory_db.capacity(total, reserved, ratio)
            capacity[rc] += usable
            used[rc] += taken
            kind = kind_of.get(root)
            if kind:
                sums = by_kind[rc, kind]
                sums[0] += usable
                sums[1] += taken
            if root in sharing:
                continue
            if root not in roomy and usable > taken:
                free[rc] += usable - taken
                stranded.add((root, rc))
            tree = hosts.get(root)
            if tree is None:
                hosts[root] = {rc: [usable, taken]}
            elif rc in tree:
                tree[rc][0] += usable
                tree[rc][1] += taken
            else:
                tree[rc] = [usable, taken]
        self.holders.update(rc for _root, rc in stranded)
        ranked = self.ranked
        for root, tree in hosts.items():
            share, rc = max(((taken / usable if usable > 0 else 1.0), rc)
                            for rc, (usable, taken) in tree.items())
            usable, taken = tree[rc]
            ranked.append((-share, root, rc, usable, taken))
        self.ranked = heapq.nsmallest(FULLEST, ranked)

    def stranded(self, class_names):
        """(class, free, hosts) over the hosts where no flavour fits."""
        return sorted((class_names[rc], free, self.holders[rc])
                      for rc, free in self.free.items())

    def usage(self, class_names):
        """(class, capacity, used, [(aggregate, capacity, used)]) of the
        classes the rows hold; an aggregate's, over the trees of its
        member roots."""
        by_aggregate: collections.defaultdict = collections.defaultdict(
            lambda: [0, 0])
        for (rc, kind), (usable, taken) in self.by_kind.items():
            for aggregate in self.memberships.kinds[kind]:
                sums = by_aggregate[rc, aggregate]
                sums[0] += usable
                sums[1] += taken
        aggregates = collections.defaultdict(list)
        for (rc, aggregate), (usable, taken) in sorted(by_aggregate.items()):
            aggregates[rc].append((aggregate, usable, taken))
        return sorted((class_names[rc], usable, self.used[rc],
                       aggregates[rc])
                      for rc, usable in self.capacity.items())

    def fullest(self, class_names):
        """(root, class, capacity, used) of the FULLEST hosts with the
        largest share used of a class, that class summed over the tree."""
        return [(root, class_names[rc], capacity, used)
                for _share, root, rc, capacity, used in self.ranked]


def flavours_from_lines(lines: Iterable[str]) -> list[tuple[str, str]]:
    """(name, query string) of a flavours file: one a line, the name,
    blanks, the query string; blank lines and '#' comments skipped.

    Raises ValueError naming the line of one without a query string or
    of a name given twice.
    """
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise ValueError('line %d: expected a name and a query string'
                             % number)
        name, query = parts
        if name in found:
            raise ValueError('line %d: flavour %s given twice'
                             % (number, name))
        found[name] = query.strip()
    return list(found.items())


def parse_flavours(named_queries: Iterable[tuple[str, str]],
                   version: Any) -> list[Flavour]:
    """Flavours of (name, query string) pairs, each query read as GET
    /allocation_candidates reads it at ``version``.

    Raises BadInput with the endpoint's message, naming the flavour when
    it has a name.
    """
    flavours = []
    for name, query in named_queries:
        try:
            request = querylang.parse(urllib.parse.parse_qsl(
                query, keep_blank_values=True), version)
        except exception.BadInput as exc:
            raise exception.BadInput(
                named(name, str(exc)) if name else str(exc),
                code=exc.code) from None
        flavours.append(Flavour(name, query, request))
    return flavours
