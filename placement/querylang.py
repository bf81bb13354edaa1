"""Placement's query-string language: GET /allocation_candidates and the
filters of GET /resource_providers.

``parse(pairs, version)`` turns the (key, value) pairs of an allocation
candidates query string into a ``candidates.request.Request``: it checks
them against the version's JSON schema, then parses request-wide
parameters, the groups in query-string order and the cross-group rules,
raising ``exception.BadInput`` with upstream's message (and error code)
for the first thing wrong, in upstream's order. ``provider_filter(pairs,
version)`` does the same for the filters of GET /resource_providers, with
the same value parsers. Nothing here touches the database: whether a
trait or resource class exists is the caller's business.

The syntax grew with microversions; the gates of placement.versions say
when. Versions are (major, minor) tuples.
"""
import re
from typing import Iterable

from oslo_utils import uuidutils

from placement import exception
from placement import validation
from placement import versions
from placement.candidates import request as model
from placement.schemas import allocation_candidate as schema

INVALID_QUERY = 'Invalid query string parameters: '

_BAD_RESOURCES = (
    'Badly formed resources parameter. Expected resources query string '
    'parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: %s.')
_BAD_AMOUNT = (
    'Requested resource %s expected positive integer amount. Got: %s.')
_SMALL_AMOUNT = 'Requested resource %s requires amount >= 1. Got: %d.'

_TRAITS_FORM = "Expected 'required' parameter value of the form: %s."
_PLAIN_TRAITS_EXAMPLE = 'HW_CPU_X86_VMX,CUSTOM_MAGIC'
_FORBIDDEN_TRAITS_EXAMPLE = 'HW_CPU_X86_VMX,!CUSTOM_MAGIC'
_ANY_TRAITS_EXAMPLE = 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC'
_EMPTY_TRAIT = ' Got an empty trait in: %s'
_ANY_TRAITS_TOO_EARLY = (
    "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since "
    "microversion 1.39. Got: %s")
_ANY_TRAITS_FORBIDDEN = (
    "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden "
    "traits. Got: %s")

_BAD_MEMBER_OF = (
    "Expected 'member_of' parameter to contain valid UUID(s). Got: %s")
_MEMBER_OF_NEEDS_IN = (
    "Multiple values for 'member_of' must be prefixed with the 'in:' or "
    "'!in:' keyword using the valid microversion. Got: %s")
_MULTIPLE_MEMBER_OF = 'Multiple member_of parameters are not supported'
_FORBIDDEN_MEMBER_OF = (
    'Forbidden member_of parameters are not supported in the specified '
    'microversion')

_IN = 'in:'
_NOT = '!'


def _key_pattern(suffix):
    return re.compile(r'^(%s)(%s)?$' % ('|'.join(schema.GROUP_KEYS), suffix))


_KEYS_NUMBERED = _key_pattern(schema.NUMBERED_SUFFIX)
_KEYS_WORDS = _key_pattern(schema.WORD_SUFFIX)


def parse(pairs: Iterable[tuple[str, str]],
          version: tuple[int, int]) -> model.Request:
    """The Request an allocation candidates query string asks for.

    ``pairs`` are its (key, value) pairs in order, repeated keys
    included; ``version`` the request's microversion.
    """
    pairs = list(pairs)
    if version < versions.ALLOCATION_CANDIDATES:
        raise exception.BadInput(
            'Allocation candidates exist from microversion %s.'
            % versions.to_text(versions.ALLOCATION_CANDIDATES))
    validation.check_query(pairs, versions.pick(schema.GET, version))
    return _request(pairs, version)


def values_of(pairs: Iterable[tuple[str, str]], key: str) -> list[str]:
    """Every value ``key`` has in ``pairs``, in order."""
    return [value for name, value in pairs if name == key]


def provider_filter(pairs: Iterable[tuple[str, str]],
                    version: tuple[int, int]) -> model.Group | None:
    """The group of GET /resource_providers' filters that
    ``candidates.matching_providers`` decides (``resources``,
    ``required``, ``member_of``, ``in_tree``), or None when the query
    string has none of them.

    ``pairs`` are its (key, value) pairs in order, already checked
    against the version's query schema. They are parsed in upstream's
    order, which decides the error reported first.
    """
    pairs = list(pairs)
    keys = {key for key, _value in pairs}
    if keys.isdisjoint(schema.GROUP_KEYS):
        return None
    in_tree = values_of(pairs, 'in_tree')
    group = model.Group(in_tree=in_tree[-1] if in_tree else None)
    if 'member_of' in keys:
        group.member_of, group.forbidden_aggs = member_of(
            values_of(pairs, 'member_of'), version)
    if 'required' in keys:
        group.required, group.forbidden = required_traits(
            values_of(pairs, 'required'), version)
    if 'resources' in keys:
        group.resources = resources(values_of(pairs, 'resources')[-1])
    return group


def _request(pairs, version):
    policy = values_of(pairs, 'group_policy')
    required, forbidden = _root_required(values_of(pairs, 'root_required'))
    request = model.Request(
        groups=[],
        limit=_limit(values_of(pairs, 'limit')),
        group_policy=policy[0] if policy else None,
        root_required=required,
        root_forbidden=forbidden,
        same_subtrees=_same_subtrees(values_of(pairs, 'same_subtree')),
        nested=version >= versions.NESTED_CANDIDATES,
        every_class=version >= versions.EVERY_CLASS_SUMMARIES)
    request.groups = _groups(pairs, version)
    # Groups without resources are legal with same_subtree.
    if version >= versions.SAME_SUBTREE:
        _check_resourceless(request)
    else:
        _check_orphans(request.groups)
    if version >= versions.FORBIDDEN_TRAITS:
        _check_conflicts(request.groups)
    if request.group_policy is None and request.suffixed_count() > 1:
        raise exception.BadInput(
            'The "group_policy" parameter is required when specifying '
            'more than one "resources{N}" parameter.')
    return request


def _limit(values):
    """The first limit counts, though the schema saw the last one (which
    upstream answers with a 500 when the first is not a number).
    """
    if not values:
        return None
    if not re.match(schema.LIMIT_PATTERN, values[0]):
        raise exception.BadInput(
            "Invalid query string parameters: %r does not match %r"
            % (values[0], schema.LIMIT_PATTERN))
    return int(values[0])


def _root_required(values):
    if not values:
        return set(), set()
    if len(values) > 1:
        raise exception.BadInput(
            "Query parameter 'root_required' may be specified only once.",
            code=exception.ILLEGAL_DUPLICATE_QUERYPARAM)
    groups, forbidden = traits(
        values[0], allow_forbidden=True, allow_any=False)
    required = set(model.trait_names(groups, ()))
    conflicts = required & forbidden
    if conflicts:
        raise exception.BadInput(
            'Conflicting required and forbidden traits found in '
            'root_required: %s' % ', '.join(sorted(conflicts)),
            code=exception.QUERYPARAM_BAD_VALUE)
    return required, forbidden


def _same_subtrees(values):
    subtrees = []
    for value in values:
        suffixes = set(item.strip() for item in value.split(','))
        if '' in suffixes:
            raise exception.BadInput(
                'Empty string (unsuffixed group) can not be specified in '
                '`same_subtree` ', code=exception.QUERYPARAM_BAD_VALUE)
        subtrees.append(suffixes)
    return subtrees


def _groups(pairs, version):
    """Groups in order of first appearance; every key occurrence is
    parsed where it stands so that the first bad one is reported.
    """
    pattern = _KEYS_WORDS if version >= versions.WORD_SUFFIXES else (
        _KEYS_NUMBERED)
    groups: dict[str, model.Group] = {}
    for key, value in pairs:
        match = pattern.match(key)
        if not match:
            continue
        kind, suffix = match.group(1), match.group(2) or ''
        group = groups.setdefault(suffix, model.Group(suffix=suffix))
        if kind == 'resources':
            group.resources = resources(value)
        elif kind == 'required':
            group.required, group.forbidden = required_traits(
                values_of(pairs, key), version)
        elif kind == 'member_of':
            group.member_of, group.forbidden_aggs = member_of(
                values_of(pairs, key), version)
        else:
            group.in_tree = _in_tree(value)
    return list(groups.values())


def _in_tree(value):
    uuid = value.strip()
    if not uuidutils.is_uuid_like(uuid):
        raise exception.BadInput(
            "Invalid query string parameters: Expected 'in_tree' parameter "
            "to be a format of uuid. Got: %s" % value)
    return uuid


def _check_resourceless(request):
    """From 1.36 a group without resources is legal when same_subtree
    names it; it then only pins a provider with traits or aggregates.
    """
    groups = request.groups
    resourceless = [g.suffix for g in groups if not g.resources]
    if len(resourceless) == len(groups):
        raise exception.BadInput(
            'There must be at least one resources or resources[$S] '
            'parameter.', code=exception.QUERYPARAM_MISSING_VALUE)
    in_subtrees = set().union(*request.same_subtrees)
    unnamed = [s for s in resourceless if s not in in_subtrees]
    if unnamed:
        raise exception.BadInput(
            'Resourceless suffixed group request should be specified in '
            '`same_subtree` query param: bad group(s) - %s.' % unnamed,
            code=exception.QUERYPARAM_BAD_VALUE)
    suffixes = [g.suffix for g in groups]
    unknown = [s for subtree in request.same_subtrees for s in sorted(subtree)
               if s not in suffixes]
    if unknown:
        raise exception.BadInput(
            'Real suffixes should be specified in `same_subtree`: '
            '%s not found in %s.' % (_unique(unknown), suffixes),
            code=exception.QUERYPARAM_BAD_VALUE)


def _unique(items):
    return list(dict.fromkeys(items))


def _check_orphans(groups):
    orphans = ['required' + g.suffix for g in groups
               if g.required and not g.resources]
    if orphans:
        raise exception.BadInput(
            'All traits parameters must be associated with resources.  '
            'Found the following orphaned traits keys: %s'
            % ', '.join(orphans))
    orphans = ['member_of' + g.suffix for g in groups
               if not g.resources and (g.member_of or g.forbidden_aggs)]
    if orphans:
        raise exception.BadInput(
            'All member_of parameters must be associated with resources. '
            'Found the following orphaned member_of keys: %s'
            % ', '.join(orphans))
    if not all(g.resources for g in groups):
        raise exception.BadInput('All request groups must specify resources.')
    if not groups:
        raise exception.BadInput(
            'At least one request group (`resources` or `resources{$S}`) '
            'is required.')


def _check_conflicts(groups):
    conflicts = sorted(
        'required%s: (%s)' % (g.suffix, ', '.join(sorted(any_of)))
        for g in groups for any_of in g.required if any_of <= g.forbidden)
    if conflicts:
        raise exception.BadInput(
            'Conflicting required and forbidden traits found in the '
            'following traits keys: %s' % ', '.join(conflicts))


def _bad_query(detail):
    return exception.BadInput(INVALID_QUERY + detail)


def resources(value: str) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> ``{'VCPU': 2, 'MEMORY_MB': 1024}``.

    A class named twice keeps its last amount. Class names are not checked.
    """
    if not value.strip():
        raise exception.BadInput(_BAD_RESOURCES % 'empty string')
    amounts = {}
    for pair in value.split(','):
        name, sep, amount = pair.partition(':')
        if not sep or ':' in amount:
            raise exception.BadInput(_BAD_RESOURCES % pair)
        try:
            number = int(amount)
        except ValueError:
            raise exception.BadInput(_BAD_AMOUNT % (name, amount))
        if number < 1:
            raise exception.BadInput(_SMALL_AMOUNT % (name, number))
        amounts[name] = number
    return amounts


def traits(value: str, allow_forbidden: bool = False, allow_any: bool = False
           ) -> tuple[list[frozenset[str]], set[str]]:
    """One value of ``required`` -> ``(required_groups, forbidden)``.

    ``required_groups`` is a list of frozensets: a provider must have at
    least one trait of every group (a plain ``A,B`` is two singleton groups,
    ``in:A,B`` one group of two). ``forbidden`` is a set of names the
    provider must not have. ``allow_forbidden`` accepts ``!NAME``;
    ``allow_any`` accepts the ``in:`` form.
    """
    if value.startswith(_IN):
        if not allow_any:
            raise _bad_query(_ANY_TRAITS_TOO_EARLY % value)
        return _any_traits(value), set()
    example = (_FORBIDDEN_TRAITS_EXAMPLE if allow_forbidden
               else _PLAIN_TRAITS_EXAMPLE)
    # Request order (an ordered set): an unknown trait is reported as the
    # first one the client named, as upstream does.
    required: dict[str, None]
    required, forbidden = {}, set()
    for item in value.split(','):
        item = item.strip()
        if item.startswith(_NOT):
            name = item.lstrip(_NOT)
            forbidden.add(name)
        else:
            name = item
            required[name] = None
        if not name:
            raise _bad_query(_TRAITS_FORM % example + _EMPTY_TRAIT % value)
    if forbidden and not allow_forbidden:
        raise _bad_query(_TRAITS_FORM % example + ' Got: %s' % value)
    return [frozenset([name]) for name in required], forbidden


def _any_traits(value):
    names = [item.strip() for item in value[len(_IN):].split(',')]
    if not all(names):
        raise _bad_query(_TRAITS_FORM % _ANY_TRAITS_EXAMPLE
                         + _EMPTY_TRAIT % value)
    if any(name.startswith(_NOT) for name in names):
        raise _bad_query(_ANY_TRAITS_FORBIDDEN % value)
    return [frozenset(names)]


def required_traits(values: list[str], version: tuple[int, int],
                    allow_any: bool = True
                    ) -> tuple[list[frozenset[str]], set[str]]:
    """All values of a ``required``-like parameter, as one
    ``(required_groups, forbidden)`` pair.

    Before 1.39 only the last occurrence counts (as upstream's query
    schema keeps one value per key); from 1.39 every occurrence is ANDed.
    ``allow_any=False`` rejects ``in:`` at any version (``root_required``).
    """
    many = version >= versions.ANY_TRAITS
    if not many:
        values = values[-1:]
    groups, forbidden = [], set()
    for value in values:
        value_groups, value_forbidden = traits(
            value,
            allow_forbidden=version >= versions.FORBIDDEN_TRAITS,
            allow_any=many and allow_any)
        groups.extend(value_groups)
        forbidden |= value_forbidden
    return groups, forbidden


def aggregates(value: str,
               allow_forbidden: bool = False) -> tuple[set[str], bool]:
    """One ``member_of`` value -> ``(uuids, forbidden)``.

    ``uuid`` or ``in:uuid1,uuid2`` mean "in one of these aggregates";
    ``!uuid`` or ``!in:uuid1,uuid2`` (with ``allow_forbidden``) mean "in
    none of these". ``uuids`` is a set of the strings given.
    """
    forbidden = value.startswith(_NOT)
    rest = value[len(_NOT):] if forbidden else value
    if rest.startswith(_IN):
        uuids = rest[len(_IN):].split(',')
    elif ',' in rest:
        raise exception.BadInput(_MEMBER_OF_NEEDS_IN % value)
    else:
        uuids = [rest]
    for uuid in uuids:
        if not uuidutils.is_uuid_like(uuid):
            raise _bad_query(_BAD_MEMBER_OF % uuid)
    if forbidden and not allow_forbidden:
        raise exception.BadInput(_FORBIDDEN_MEMBER_OF)
    return set(uuids), forbidden


def member_of(values: list[str], version: tuple[int, int]
              ) -> tuple[list[set[str]], set[str]]:
    """All values of a ``member_of``-like parameter ->
    ``(required_groups, forbidden)``.

    ``required_groups`` is a list of sets of aggregate uuids: a provider
    must be in at least one aggregate of every group. ``forbidden`` is a
    set of aggregate uuids the provider must be in none of.
    """
    if len(values) > 1 and version < versions.MULTIPLE_MEMBER_OF:
        raise exception.BadInput(_MULTIPLE_MEMBER_OF)
    allow_forbidden = version >= versions.FORBIDDEN_AGGREGATES
    groups, forbidden = [], set()
    for value in values:
        uuids, negated = aggregates(value, allow_forbidden)
        if negated:
            forbidden |= uuids
        else:
            groups.append(uuids)
    return groups, forbidden
