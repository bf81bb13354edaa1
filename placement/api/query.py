"""Parsers for Placement's query-string language.

Each parser turns the raw value(s) of one parameter into plain data (dicts,
sets, lists) and raises ``errors.BadRequest`` with upstream's message for
malformed input. They never touch the database: checking that a trait or
resource class exists is the caller's job.

The syntax grew with microversions; the ``*_VERSION`` constants say when,
and the ``version`` arguments are ``microversion.current()`` tuples. The
lower-level parsers take explicit flags instead, for parameters whose
syntax does not follow the version (e.g. ``root_required`` never accepts
``in:``).
"""
from oslo_utils import uuidutils

from placement.api import errors

# `!TRAIT` in `required` (and `root_required`).
FORBIDDEN_TRAITS_VERSION = (1, 22)
# `required=in:A,B`, and `required` may be repeated (ANDed).
ANY_TRAITS_VERSION = (1, 39)
# `member_of` may be repeated (ANDed).
MULTIPLE_MEMBER_OF_VERSION = (1, 24)
# `member_of=!uuid` and `member_of=!in:uuid1,uuid2`.
FORBIDDEN_AGGREGATES_VERSION = (1, 32)

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


def _bad_query(detail):
    return errors.BadRequest(INVALID_QUERY + detail)


def resources(value):
    """``VCPU:2,MEMORY_MB:1024`` -> ``{'VCPU': 2, 'MEMORY_MB': 1024}``.

    A class named twice keeps its last amount. Class names are not checked.
    """
    if not value.strip():
        raise errors.BadRequest(_BAD_RESOURCES % 'empty string')
    amounts = {}
    for pair in value.split(','):
        name, sep, amount = pair.partition(':')
        if not sep or ':' in amount:
            raise errors.BadRequest(_BAD_RESOURCES % pair)
        try:
            number = int(amount)
        except ValueError:
            raise errors.BadRequest(_BAD_AMOUNT % (name, amount))
        if number < 1:
            raise errors.BadRequest(_SMALL_AMOUNT % (name, number))
        amounts[name] = number
    return amounts


def traits(value, allow_forbidden=False, allow_any=False):
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


def required_traits(values, version, allow_any=True):
    """All values of a ``required``-like parameter, as one
    ``(required_groups, forbidden)`` pair.

    Before 1.39 only the last occurrence counts (as upstream's query
    schema keeps one value per key); from 1.39 every occurrence is ANDed.
    ``allow_any=False`` rejects ``in:`` at any version (``root_required``).
    """
    many = version >= ANY_TRAITS_VERSION
    if not many:
        values = values[-1:]
    groups, forbidden = [], set()
    for value in values:
        value_groups, value_forbidden = traits(
            value,
            allow_forbidden=version >= FORBIDDEN_TRAITS_VERSION,
            allow_any=many and allow_any)
        groups.extend(value_groups)
        forbidden |= value_forbidden
    return groups, forbidden


def trait_names(groups, forbidden):
    """Every trait name a parsed ``required`` mentions (to look them up),
    in the order the client gave them.
    """
    names = {}
    for group in groups:
        names.update(dict.fromkeys(sorted(group)))
    names.update(dict.fromkeys(sorted(forbidden)))
    return list(names)


def aggregates(value, allow_forbidden=False):
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
        raise errors.BadRequest(_MEMBER_OF_NEEDS_IN % value)
    else:
        uuids = [rest]
    for uuid in uuids:
        if not uuidutils.is_uuid_like(uuid):
            raise _bad_query(_BAD_MEMBER_OF % uuid)
    if forbidden and not allow_forbidden:
        raise errors.BadRequest(_FORBIDDEN_MEMBER_OF)
    return set(uuids), forbidden


def member_of(values, version):
    """All values of a ``member_of``-like parameter ->
    ``(required_groups, forbidden)``.

    ``required_groups`` is a list of sets of aggregate uuids: a provider
    must be in at least one aggregate of every group. ``forbidden`` is a
    set of aggregate uuids the provider must be in none of.
    """
    if len(values) > 1 and version < MULTIPLE_MEMBER_OF_VERSION:
        raise errors.BadRequest(_MULTIPLE_MEMBER_OF)
    allow_forbidden = version >= FORBIDDEN_AGGREGATES_VERSION
    groups, forbidden = [], set()
    for value in values:
        uuids, negated = aggregates(value, allow_forbidden)
        if negated:
            forbidden |= uuids
        else:
            groups.append(uuids)
    return groups, forbidden
