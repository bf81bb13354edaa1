"""Allocation candidates: which sets of providers can satisfy a request.

``find(conn, request, settings)`` answers a parsed ``request.Request``
(placement.querylang makes one from a query string) in three steps:

1. ``names`` resolves the names the request uses (``sql.lookup``) and
   tells which unknown one upstream would report first;
2. ``loading`` reads, in a handful of set-based queries (``sql``), the
   inventories of the requested classes with their usage, who holds the
   requested traits and aggregates, and which trees the sharing
   providers serve, into an ``engine.Universe``; ``engine`` turns it into
   options per anchor (root provider) and walks their combinations
   lazily, in the configured order, so that ``limit`` and
   ``max_allocation_candidates`` stop the work early;
3. ``summaries`` picks the candidates to return and summarises the
   providers of their trees.

``resolve`` is step 1 alone (``capacity`` counts from there).
``explain`` says why a request finds nothing, with the same data and
engine. ``matching_providers`` serves GET /resource_providers' filters.
"""
import collections
import contextlib
import dataclasses
import gc
import itertools
from typing import Iterable
from typing import Iterator

import sqlalchemy as sa

from placement import exception
from placement.candidates import engine
from placement.candidates import loading
from placement.candidates import names as naming
from placement.candidates import request as request_model
from placement.candidates import sql
from placement.candidates import summaries
from placement.candidates.settings import Settings  # noqa: F401
from placement.candidates.summaries import Result  # noqa: F401
from placement.db import watchdog


def find(conn: sa.Connection, request: request_model.Request,
         settings: Settings) -> Result:
    """The candidates for ``request`` and the summaries of their providers.

    Raises exception.Invalid, with upstream's message, for an unknown
    resource class or trait, unless upstream would have found nothing
    before looking that name up.
    """
    with gc_paused():
        return _find(conn, request, settings)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
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


def resolve(conn: sa.Connection, request: request_model.Request
            ) -> tuple[sql.Names, list[engine.Need] | None]:
    """The names ``request`` uses and its groups as engine.Needs; None
    for the needs when it finds nothing before looking at capacity.

    Raises exception.Invalid as ``find`` does.
    """
    names = sql.lookup(conn, *naming.names_mentioned(request))
    needs = [naming.group_need(group, names) for group in request.groups]
    failure = naming.first_unknown_name(request, names)
    if failure is not None:
        position, unknown = failure
        if loading.finds_nothing_before(conn, request, names, needs,
                                        position):
            return names, None
        raise naming.refusal(unknown)
    if any(need.lost for need in needs):
        # A group confined to a tree that does not exist is never met.
        return names, None
    return names, needs


def _find(conn, request, settings):
    names, needs = resolve(conn, request)
    if needs is None:
        return summaries.Result([], {})
    wanted = loading.enough(request, settings)
    universe = loading.load_universe(conn, request, needs, names,
                                     narrow=settings.narrow,
                                     inventories=wanted is None)
    planned = loading.Planned(conn, request, needs, names, universe,
                              settings.first_batch)
    if (wanted is None or universe.roots is not None
            or not universe.requested_classes):
        stream = planned.all(breadth_first=settings.breadth_first)
    else:
        stream = planned.in_batches(wanted)
    if settings.max_candidates >= 0:
        # Upstream stops after adding a candidate, so 0 still gives one.
        stream = itertools.islice(stream, max(settings.max_candidates, 1))
    stream = _bounded(stream, request, settings)
    if request.nested:
        chosen = _select(stream, request, settings, planned)
        return summaries.result(conn, request, planned.plan, names, chosen)
    # Before 1.29 upstream summarises the providers of every candidate
    # it generated, in the trees of those it returns: they are noted as
    # they pass, and those not chosen are generated too.
    used: set[int] = set()
    stream = _noting_used(stream, planned, used)
    chosen = _select(stream, request, settings, planned)
    collections.deque(stream, maxlen=0)
    return summaries.result(conn, request, planned.plan, names, chosen,
                            used)


# Candidates generated between two looks at the request's deadline.
_DEADLINE_EVERY = 1024


def _bounded(stream, request, settings):
    """``stream``, stopped by the request's deadline; and refused
    (exception.TooManyCandidates) at the first candidate beyond
    ``settings.max_returned`` when the answer could hold them all: no
    limit, or a larger one."""
    most = settings.max_returned
    if most <= 0 or (request.limit is not None and request.limit <= most):
        most = None
    for count, item in enumerate(stream, 1):
        if not count % _DEADLINE_EVERY:
            watchdog.check()
        if most is not None and count > most:
            raise exception.TooManyCandidates(most)
        yield item


def _noting_used(stream, planned, used):
    """``stream``, adding the providers each candidate takes resources
    from to ``used``."""
    giving = None
    for item in stream:
        if giving is None:
            # The plan exists once the stream made a candidate.
            giving = planned.plan.giving_levels()
        candidate = item[1]
        used.update(candidate[level] for level in giving)
        yield item


def _select(stream, request, settings, planned):
    """The candidates to return (summaries.select); unless randomized,
    those that leave the most room first (engine.Plan.most_room_first).
    """
    chosen = summaries.select(stream, request.limit, settings.randomize)
    if chosen and not settings.randomize:
        # The plan exists once the stream made a candidate.
        chosen = planned.plan.most_room_first(chosen)
    return chosen


def matching_providers(conn: sa.Connection,
                       group: request_model.Group) -> set[int]:
    """Ids of the providers that on their own satisfy ``group`` (a
    request.Group), as GET /resource_providers filters: room for each
    class of ``resources``, every ``required`` any-of set and no
    ``forbidden`` trait, an aggregate of every ``member_of`` set and none
    of ``forbidden_aggs``, in the tree of ``in_tree``. Without filters,
    every provider.

    Raises names.UnknownTrait or names.UnknownResourceClass for the
    traits or classes that do not exist, as upstream reports them.
    """
    request = request_model.Request(groups=[group])
    names = sql.lookup(conn, *naming.names_mentioned(request))
    unknown = naming.unknown_listed(group, names)
    if unknown is not None:
        raise unknown
    need = naming.group_need(group, names)
    if need.lost:
        return set()
    # Room is decided in SQL, traits and aggregates as for candidates.
    among: Iterable[int] | None
    if need.resources:
        among = sql.providers_with_room(conn, need.resources, need.tree)
    elif need.tree is None and (need.required or need.member_of):
        # The holders of the required traits or the members of the
        # aggregates (engine.selected), not every provider of the cloud.
        among = None
    else:
        among = sql.provider_ids(conn, need.tree)
    need = dataclasses.replace(need, resources=())
    universe = loading.load_links(conn, request, [need], names)
    return engine.matching(universe, need, among)
