"""API microversions as the core sees them: (major, minor) tuples.

``MICROVERSIONS`` is the registry: every version the service speaks, in
order, with what it added. The feature gates below it name the version
each behaviour starts at; code compares the request's version with a
gate, or picks from tables keyed by gates (``pick``), and never spells a
version itself, so that "what did 1.N add, and where is it handled" is
one look here and one search for the gate's name.

The HTTP layer (placement.api.pipeline.microversion) reads the request's
version from its header.
"""
import dataclasses
from typing import Any

Version = tuple[int, int]


@dataclasses.dataclass(frozen=True)
class Microversion:
    """One version of the API and, in a line, what it added."""
    version: Version
    added: str


MICROVERSIONS = (
    Microversion((1, 0), 'providers with their inventories, usages and '
                 'allocations; allocations of a consumer'),
    Microversion((1, 1), 'the aggregates a provider belongs to'),
    Microversion((1, 2), 'custom resource classes under /resource_classes'),
    Microversion((1, 3), 'member_of to list providers in given aggregates'),
    Microversion((1, 4), 'resources to list providers with room for '
                 'given amounts'),
    Microversion((1, 5), 'DELETE of all of a provider\'s inventories'),
    Microversion((1, 6), 'traits, and the traits of a provider'),
    Microversion((1, 7), 'PUT of a resource class creates it when missing, '
                 'without a body, instead of renaming it'),
    Microversion((1, 8), 'PUT of allocations requires project_id and '
                 'user_id'),
    Microversion((1, 9), 'GET /usages: totals of a project (and user)'),
    Microversion((1, 10), 'GET /allocation_candidates'),
    Microversion((1, 11), 'an allocations link in provider bodies'),
    Microversion((1, 12), 'allocations keyed by provider uuid, in PUT and '
                 'in candidates; GET of allocations shows project and user'),
    Microversion((1, 13), 'POST /allocations for many consumers at once'),
    Microversion((1, 14), 'nested providers: parent and root in provider '
                 'bodies, in_tree to list a tree'),
    Microversion((1, 15), 'Last-Modified and Cache-Control headers'),
    Microversion((1, 16), 'limit on allocation candidates'),
    Microversion((1, 17), 'required traits in allocation candidates, and '
                 'traits in their provider summaries'),
    Microversion((1, 18), 'required traits to list providers'),
    Microversion((1, 19), 'provider aggregates carry the provider '
                 'generation, which PUT checks'),
    Microversion((1, 20), 'POST of a provider answers 200 with its body'),
    Microversion((1, 21), 'member_of in allocation candidates'),
    Microversion((1, 22), 'forbidden traits (!TRAIT) in required'),
    Microversion((1, 23), 'a code in error bodies'),
    Microversion((1, 24), 'member_of given several times, all applying'),
    Microversion((1, 25), 'numbered request groups and group_policy in '
                 'allocation candidates'),
    Microversion((1, 26), 'an inventory\'s reserved may equal its total'),
    Microversion((1, 27), 'provider summaries show every resource class '
                 'the provider has, not only those requested'),
    Microversion((1, 28), 'consumer generations in allocation reads and '
                 'writes; PUT of empty allocations removes them'),
    Microversion((1, 29), 'allocation candidates spanning a provider tree; '
                 'parent and root in provider summaries'),
    Microversion((1, 30), 'POST /reshaper: move inventories and '
                 'allocations in one transaction'),
    Microversion((1, 31), 'in_tree in allocation candidates'),
    Microversion((1, 32), 'forbidden aggregates (member_of=!...)'),
    Microversion((1, 33), 'request group suffixes may be words'),
    Microversion((1, 34), 'mappings of request groups to providers in '
                 'allocation requests'),
    Microversion((1, 35), 'root_required in allocation candidates'),
    Microversion((1, 36), 'same_subtree and request groups without '
                 'resources in allocation candidates'),
    Microversion((1, 37), 'PUT of a provider may change or remove its '
                 'parent'),
    Microversion((1, 38), 'consumer types on allocations, and usages by '
                 'consumer type'),
    Microversion((1, 39), 'any-of traits (required=in:A,B), required given '
                 'several times'),
)

MIN_VERSION = MICROVERSIONS[0].version
MAX_VERSION = MICROVERSIONS[-1].version
VERSIONS = ['%d.%d' % entry.version for entry in MICROVERSIONS]
LATEST = 'latest'
_LISTED = frozenset(entry.version for entry in MICROVERSIONS)


def _listed(version: Version) -> Version:
    """``version``, which a gate must take from the registry."""
    if version not in _LISTED:
        raise ValueError('%d.%d is not a listed microversion' % version)
    return version


# Feature gates: the version each behaviour starts at, in version order.
PROVIDER_AGGREGATES = _listed((1, 1))
RESOURCE_CLASSES = _listed((1, 2))
MEMBER_OF_FILTER = _listed((1, 3))
RESOURCES_FILTER = _listed((1, 4))
DELETE_ALL_INVENTORIES = _listed((1, 5))
TRAITS = _listed((1, 6))
ENSURE_RESOURCE_CLASS = _listed((1, 7))
CONSUMER_OWNER = _listed((1, 8))
TOTAL_USAGES = _listed((1, 9))
ALLOCATION_CANDIDATES = _listed((1, 10))
ALLOCATIONS_LINK = _listed((1, 11))
ALLOCATIONS_BY_PROVIDER = _listed((1, 12))
MANY_CONSUMERS = _listed((1, 13))
PROVIDER_TREES = _listed((1, 14))
CACHE_HEADERS = _listed((1, 15))
CANDIDATES_LIMIT = _listed((1, 16))
CANDIDATE_TRAITS = _listed((1, 17))
REQUIRED_FILTER = _listed((1, 18))
AGGREGATES_GENERATION = _listed((1, 19))
CREATE_RETURNS_PROVIDER = _listed((1, 20))
CANDIDATES_MEMBER_OF = _listed((1, 21))
FORBIDDEN_TRAITS = _listed((1, 22))
ERROR_CODES = _listed((1, 23))
MULTIPLE_MEMBER_OF = _listed((1, 24))
GRANULAR_GROUPS = _listed((1, 25))
RESERVED_EQUAL_TOTAL = _listed((1, 26))
EVERY_CLASS_SUMMARIES = _listed((1, 27))
CONSUMER_GENERATION = _listed((1, 28))
NESTED_CANDIDATES = _listed((1, 29))
RESHAPER = _listed((1, 30))
CANDIDATES_IN_TREE = _listed((1, 31))
FORBIDDEN_AGGREGATES = _listed((1, 32))
WORD_SUFFIXES = _listed((1, 33))
GROUP_MAPPINGS = _listed((1, 34))
ROOT_REQUIRED = _listed((1, 35))
SAME_SUBTREE = _listed((1, 36))
REPARENT = _listed((1, 37))
CONSUMER_TYPE = _listed((1, 38))
ANY_TRAITS = _listed((1, 39))


class UnknownVersion(ValueError):
    """Text that names none of the service's versions."""


def to_text(version: Version) -> str:
    """``(1, 10)`` -> ``'1.10'``, as clients write it."""
    return '%d.%d' % version


def parse(text: str | Version) -> Version:
    """``'1.10'`` -> ``(1, 10)``; a tuple is returned as it is."""
    if isinstance(text, tuple):
        return text
    major, minor = text.split('.')
    return int(major), int(minor)


def from_text(text: str) -> Version:
    """The version a client names: ``'1.N'`` within the service's range,
    or ``latest``; UnknownVersion otherwise.
    """
    text = text.strip()
    if text == LATEST:
        return MAX_VERSION
    if text not in VERSIONS:
        raise UnknownVersion('%s is not a version from %s to %s'
                             % (text, VERSIONS[0], VERSIONS[-1]))
    return parse(text)


def pick(table: dict[str, Any] | dict[Version, Any],
         version: Version) -> Any:
    """The value of ``table`` ({version it starts at: value}, keys as
    text or tuples) for ``version``: the one with the highest key not
    above it (None if every key is above it).
    """
    chosen, best = None, None
    for key, value in table.items():
        key = parse(key)
        if key <= version and (best is None or key > best):
            chosen, best = value, key
    return chosen
