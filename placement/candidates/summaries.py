"""The candidates to return (the first ``limit``, or a random sample) and
the summaries of the providers of their trees, in the response's terms:
uuids and class names.
"""
import collections
import collections.abc
import dataclasses
import itertools
import random
import sys
from typing import Any
from typing import Callable
from typing import Iterable
from typing import Sequence

import sqlalchemy as sa

from placement.candidates import engine
from placement.candidates import request as model
from placement.candidates import sql
from placement.db import inventory as inventory_db

# Tuples, as there are as many as candidates and providers summarised.
Candidate = collections.namedtuple('Candidate', 'allocations mappings')
Candidate.__doc__ = (
    '{provider uuid: {class: amount}} and {suffix: [provider uuid]}.')

Summary = collections.namedtuple(
    'Summary', 'resources traits parent_uuid root_uuid')
Summary.__doc__ = ('A provider of a candidate\'s tree: {class: {"capacity": '
                   'c, "used": u}}, trait names, parent and root uuids.')


class Shaped(collections.abc.Sequence):
    """The chosen candidates, each shaped into a Candidate only when it
    is read: an answer of many candidates can then be shaped and encoded
    a chunk at a time, the shaped ones dropped as it goes."""

    def __init__(self, chosen: list[tuple[int, tuple[int, ...]]],
                 shape: Callable[[Sequence[int]], tuple[Any, Any]]) -> None:
        self._chosen = chosen
        self._shape = shape

    def __len__(self) -> int:
        return len(self._chosen)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [Candidate(*self._shape(providers))
                    for _anchor, providers in self._chosen[index]]
        return Candidate(*self._shape(self._chosen[index][1]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, collections.abc.Sequence):
            return list(self) == list(other)
        return NotImplemented


@dataclasses.dataclass
class Result:
    candidates: Sequence[Candidate]
    summaries: dict[str, Summary]


def select(stream: Iterable[tuple[int, tuple[int, ...]]], limit: int | None,
           randomize: bool) -> list[tuple[int, tuple[int, ...]]]:
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


def result(conn: sa.Connection, request: model.Request, plan: engine.Plan,
           names: sql.Names, chosen: list[tuple[int, tuple[int, ...]]],
           generated_used: set[int] | None = None) -> Result:
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
        # Not nested: generated_used is given.
        shown = {p for p in generated_used  # type: ignore[union-attr]
                 if universe.root[p] in roots}
        members = sql.tree_members(conn, (), mapped | shown)
        summarised = [row for row in members if row[0] in shown]
        trees = set()
    uuid = {row[0]: row[1] for row in members}
    class_name = {ident: name for name, ident in names.classes.items()}
    return Result(Shaped(chosen, plan.shaper(uuid, class_name)), _summaries(
        conn, request, universe, summarised, uuid, class_name, trees, shown))


def _summaries(conn, request, universe, members, uuid, class_name, trees,
               shown):
    """Summaries of ``members`` (the providers of ``trees`` and the
    providers ``shown``): the requested inventories are known already; the
    others are read when the version shows them.
    """
    inventory = _summarised_inventory(conn, universe, class_name, trees,
                                      shown)
    resources: collections.defaultdict[int, dict[str, dict[str, int]]] = (
        collections.defaultdict(dict))
    summarised = {row[0] for row in members}
    for (provider, rc), inv in inventory.items():
        if provider in summarised:
            resources[provider][class_name[rc]] = {
                'capacity': inventory_db.capacity(inv.total, inv.reserved,
                                            inv.ratio),
                'used': inv.used}
    if request.every_class:
        # By provider id, as they are known: by root id MySQL reads
        # every inventory of the roots' range.
        for provider, name, total, reserved, ratio, used in (
                sql.provider_inventories(conn, (), summarised,
                                         class_name)):
            resources[provider][name] = {
                'capacity': inventory_db.capacity(total, reserved, ratio),
                'used': int(used)}
    trait_ids: dict[int, list[int]] = collections.defaultdict(list)
    # Those the loading read already (a batch's trees when it had traits
    # to check, the sharing providers) are not read again.
    known = universe.every_trait
    read_trees, read_of = universe.traits_read_trees, universe.traits_read_of
    if read_trees:
        unread = set()
        for provider, _uuid, _parent, root in members:
            if root in read_trees or provider in read_of:
                if provider in known:
                    trait_ids[provider] = sorted(known[provider])
            else:
                unread.add(provider)
    else:
        unread = summarised - read_of
        for provider in summarised & read_of:
            trait_ids[provider] = sorted(known[provider])
    for provider, trait in sql.provider_traits(conn, (), unread):
        trait_ids[provider].append(trait)
    name = sql.trait_names(conn, set().union(*trait_ids.values()))
    traits = {provider: [name[trait] for trait in ids]
              for provider, ids in trait_ids.items()}
    return {
        provider_uuid: Summary(resources[provider], traits.get(provider, []),
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
    complete = universe.complete_trees
    unread = trees - complete
    shown = {provider for provider in shown
             if universe.root[provider] not in complete}
    if not unread and not shown:
        return universe.inventory
    inventory = dict(universe.inventory)
    passed = {inv.root for inv in inventory.values()
              if inv.provider not in universe.sharing} if unread else set()
    reads = [(sql.UNFIT, {'roots': unread & passed}),
             (sql.ALL, {'roots': unread - passed}),
             (sql.ALL, {'provider_ids': shown})]
    for selection, where in reads:
        if any(where.values()):
            for inv in sql.inventories(conn, rc_ids, universe.narrowing,
                                       selection, **where):
                inventory.setdefault((inv.provider, inv.rc), inv)
    return inventory
