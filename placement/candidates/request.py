"""The allocation-candidates request model, parsed from a query string.

A request is a list of request groups plus request-wide parameters. The
unsuffixed group may be satisfied by several providers of one tree and by
sharing providers; every suffixed group by a single provider. Parsing and
its 400s follow upstream's order: request-wide parameters first, then the
groups in query-string order, then the cross-group checks.
"""
import dataclasses
import re

from oslo_utils import uuidutils

from placement.api import errors
from placement.api import query

# Suffixes are numbers before 1.33, then short words.
NUMBERED_SUFFIX = r'[1-9][0-9]*'
WORD_SUFFIX = r'[a-zA-Z0-9_-]{1,64}'
WORD_SUFFIX_VERSION = (1, 33)
# Resourceless groups become legal, tied to same_subtree.
SAME_SUBTREE_VERSION = (1, 36)
NESTED_VERSION = (1, 29)
# Summaries show every inventory, not only the requested classes.
EVERY_CLASS_VERSION = (1, 27)

GROUP_KEYS = ('resources', 'required', 'member_of', 'in_tree')
LIMIT_PATTERN = '^[1-9][0-9]*$'
ISOLATE = 'isolate'


def _key_pattern(suffix):
    return re.compile(r'^(%s)(%s)?$' % ('|'.join(GROUP_KEYS), suffix))


_KEYS_NUMBERED = _key_pattern(NUMBERED_SUFFIX)
_KEYS_WORDS = _key_pattern(WORD_SUFFIX)


@dataclasses.dataclass
class Group:
    """One request group. Trait and aggregate terms are lists of any-of
    sets, ANDed; names and uuids are as the client wrote them.
    """
    suffix: str = ''
    resources: dict = dataclasses.field(default_factory=dict)
    required: list = dataclasses.field(default_factory=list)
    forbidden: set = dataclasses.field(default_factory=set)
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggs: set = dataclasses.field(default_factory=set)
    in_tree: str = None

    @property
    def single_provider(self):
        """Suffixed groups must be satisfied by one provider."""
        return bool(self.suffix)

    @property
    def trait_names(self):
        return set(query.trait_names(self.required, self.forbidden))


@dataclasses.dataclass
class Request:
    groups: list
    group_policy: str = None
    limit: int = None
    root_required: set = dataclasses.field(default_factory=set)
    root_forbidden: set = dataclasses.field(default_factory=set)
    # Sets of suffixes whose providers must hang under one of them.
    same_subtrees: list = dataclasses.field(default_factory=list)
    # Before 1.29 a candidate takes at most one provider per tree.
    nested: bool = True
    every_class: bool = True

    @property
    def isolate(self):
        return self.group_policy == ISOLATE

    def suffixed_count(self):
        return sum(1 for g in self.groups if g.suffix)


def from_query(args, version):
    """Build a Request from ``args`` (a werkzeug MultiDict already checked
    against the version's JSON schema) at ``version``.
    """
    policy = args.getlist('group_policy')
    required, forbidden = _root_required(args.getlist('root_required'))
    request = Request(
        groups=[],
        limit=_limit(args.getlist('limit')),
        group_policy=policy[0] if policy else None,
        root_required=required,
        root_forbidden=forbidden,
        same_subtrees=_same_subtrees(args.getlist('same_subtree')),
        nested=version >= NESTED_VERSION,
        every_class=version >= EVERY_CLASS_VERSION)
    request.groups = _groups(args, version)
    if version >= SAME_SUBTREE_VERSION:
        _check_resourceless(request)
    else:
        _check_orphans(request.groups)
    if version >= query.FORBIDDEN_TRAITS_VERSION:
        _check_conflicts(request.groups)
    if request.group_policy is None and request.suffixed_count() > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying '
            'more than one "resources{N}" parameter.')
    return request


def _limit(values):
    """The first limit counts, though the schema saw the last one (which
    upstream answers with a 500 when the first is not a number).
    """
    if not values:
        return None
    if not re.match(LIMIT_PATTERN, values[0]):
        raise errors.BadRequest(
            "Invalid query string parameters: %r does not match %r"
            % (values[0], LIMIT_PATTERN))
    return int(values[0])


def _root_required(values):
    if not values:
        return set(), set()
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter 'root_required' may be specified only once.",
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    groups, forbidden = query.traits(
        values[0], allow_forbidden=True, allow_any=False)
    required = set(query.trait_names(groups, ()))
    conflicts = required & forbidden
    if conflicts:
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in '
            'root_required: %s' % ', '.join(sorted(conflicts)),
            code=errors.QUERYPARAM_BAD_VALUE)
    return required, forbidden


def _same_subtrees(values):
    subtrees = []
    for value in values:
        suffixes = set(item.strip() for item in value.split(','))
        if '' in suffixes:
            raise errors.BadRequest(
                'Empty string (unsuffixed group) can not be specified in '
                '`same_subtree` ', code=errors.QUERYPARAM_BAD_VALUE)
        subtrees.append(suffixes)
    return subtrees


def _groups(args, version):
    """Groups in order of first appearance; every key occurrence is
    parsed where it stands so that the first bad one is reported.
    """
    pattern = _KEYS_WORDS if version >= WORD_SUFFIX_VERSION else (
        _KEYS_NUMBERED)
    groups = {}
    for key, value in args.items(multi=True):
        match = pattern.match(key)
        if not match:
            continue
        kind, suffix = match.group(1), match.group(2) or ''
        group = groups.setdefault(suffix, Group(suffix=suffix))
        if kind == 'resources':
            group.resources = query.resources(value)
        elif kind == 'required':
            group.required, group.forbidden = query.required_traits(
                args.getlist(key), version)
        elif kind == 'member_of':
            group.member_of, group.forbidden_aggs = query.member_of(
                args.getlist(key), version)
        else:
            group.in_tree = _in_tree(value)
    return list(groups.values())


def _in_tree(value):
    uuid = value.strip()
    if not uuidutils.is_uuid_like(uuid):
        raise errors.BadRequest(
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
        raise errors.BadRequest(
            'There must be at least one resources or resources[$S] '
            'parameter.', code=errors.QUERYPARAM_MISSING_VALUE)
    in_subtrees = set().union(*request.same_subtrees)
    unnamed = [s for s in resourceless if s not in in_subtrees]
    if unnamed:
        raise errors.BadRequest(
            'Resourceless suffixed group request should be specified in '
            '`same_subtree` query param: bad group(s) - %s.' % unnamed,
            code=errors.QUERYPARAM_BAD_VALUE)
    suffixes = [g.suffix for g in groups]
    unknown = [s for subtree in request.same_subtrees for s in sorted(subtree)
               if s not in suffixes]
    if unknown:
        raise errors.BadRequest(
            'Real suffixes should be specified in `same_subtree`: '
            '%s not found in %s.' % (_unique(unknown), suffixes),
            code=errors.QUERYPARAM_BAD_VALUE)


def _unique(items):
    return list(dict.fromkeys(items))


def _check_orphans(groups):
    orphans = ['required' + g.suffix for g in groups
               if g.required and not g.resources]
    if orphans:
        raise errors.BadRequest(
            'All traits parameters must be associated with resources.  '
            'Found the following orphaned traits keys: %s'
            % ', '.join(orphans))
    orphans = ['member_of' + g.suffix for g in groups
               if not g.resources and (g.member_of or g.forbidden_aggs)]
    if orphans:
        raise errors.BadRequest(
            'All member_of parameters must be associated with resources. '
            'Found the following orphaned member_of keys: %s'
            % ', '.join(orphans))
    if not all(g.resources for g in groups):
        raise errors.BadRequest('All request groups must specify resources.')
    if not groups:
        raise errors.BadRequest(
            'At least one request group (`resources` or `resources{$S}`) '
            'is required.')


def _check_conflicts(groups):
    conflicts = sorted(
        'required%s: (%s)' % (g.suffix, ', '.join(sorted(any_of)))
        for g in groups for any_of in g.required if any_of <= g.forbidden)
    if conflicts:
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in the '
            'following traits keys: %s' % ', '.join(conflicts))
