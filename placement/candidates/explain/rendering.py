"""The words for ``causes``: each cause as a Reason (its kind, a message
and the figures behind it), and the whole as an Explanation, whose text
the operator reads and whose dict the HTTP extension answers with.
"""
import dataclasses
import functools
from typing import Any

from placement.candidates import names as naming
from placement.candidates.explain import causes

# Providers named in one sharing hint; the rest are counted.
NAMED_IN_HINT = 3
# Provider lines in the one-line (log) rendering.
LOG_PROVIDER_LINES = 20


@dataclasses.dataclass
class Reason:
    """One cause in words. ``group`` is the request group's suffix (''
    for the unsuffixed group), None for a cause not tied to one group;
    ``details`` holds the numbers and names the message shows.
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


def explanation(findings: causes.Findings) -> Explanation:
    """``findings`` in words."""
    return Explanation(
        found=findings.found, found_complete=findings.found_complete,
        returned=findings.returned, trees=findings.trees,
        excluded_trees=findings.excluded_trees,
        request_reasons=[reason(c) for c in findings.request_causes],
        providers=[ProviderVerdict(
            uuid=p.uuid, name=p.name, root_uuid=p.root_uuid,
            excluded=p.excluded, reasons=[reason(c) for c in p.causes])
            for p in findings.providers])


def display_ratio(value: float) -> float:
    # MySQL stores a single-precision FLOAT: show 1.1, not 1.100000023841858.
    return round(value, 6)


def _group_label(suffix):
    return "group '%s'" % suffix


def _any_of(names, keyword='in:'):
    names = sorted(names)
    if len(names) == 1:
        return names[0]
    return keyword + ','.join(names)


def _named(providers):
    shown = ', '.join('%s (%s)' % (p.name, p.uuid)
                      for p in providers[:NAMED_IN_HINT])
    if len(providers) > NAMED_IN_HINT:
        shown += ' and %d more provider(s)' % (
            len(providers) - NAMED_IN_HINT)
    return shown


def _in_group(cause, kind, message, **details):
    """A Reason of the cause's group, its message after the group label."""
    return Reason(kind, '%s: %s' % (_group_label(cause.group), message),
                  group=cause.group, details=details)


@functools.singledispatch
def reason(cause: causes.Cause) -> Reason:
    """``cause`` in words."""
    raise TypeError('no words for %r' % (cause,))


@reason.register
def _(cause: causes.UnknownName) -> Reason:
    return Reason(
        'unknown_name', 'The request names something that does not exist '
        '(%s); the groups before it already find nothing.'
        % cause.error.rstrip('.'))


@reason.register
def _(cause: causes.LostTree) -> Reason:
    return _in_group(cause, 'in_tree', 'in_tree provider %s does not exist.'
                     % cause.in_tree, in_tree=cause.in_tree)


@reason.register
def _(cause: causes.CandidateCeiling) -> Reason:
    return Reason(
        'max_allocation_candidates',
        '[placement] max_allocation_candidates=%d stopped the search after '
        '%d candidate(s); more exist.' % (cause.max_candidates, cause.ceiling),
        details={'max_allocation_candidates': cause.max_candidates})


@reason.register
def _(cause: causes.LimitCut) -> Reason:
    return Reason('limit', 'limit=%d returned %d of %d%s candidate(s).' % (
        cause.limit, cause.limit, cause.found,
        '' if cause.found_complete else '+'), details={'limit': cause.limit})


@reason.register
def _(cause: causes.RootTrait) -> Reason:
    if cause.forbidden:
        return Reason('root_forbidden', 'root_required: the root provider '
                      'has forbidden trait %s' % cause.trait,
                      details={'trait': cause.trait})
    return Reason('root_required', 'root_required: the root provider lacks '
                  'trait %s' % cause.trait, details={'trait': cause.trait})


@reason.register
def _(cause: causes.OtherTree) -> Reason:
    return _in_group(cause, 'in_tree', 'in_tree=%s is another tree'
                     % cause.in_tree, in_tree=cause.in_tree)


@reason.register
def _(cause: causes.ForbiddenAggregates) -> Reason:
    return _in_group(cause, 'forbidden_aggregate',
                     'in forbidden aggregate(s) %s'
                     % ','.join(cause.aggregates),
                     aggregates=list(cause.aggregates))


@reason.register
def _(cause: causes.SharingCannotSupply) -> Reason:
    return _in_group(cause, 'sharing', 'no %s inventory in the tree, and '
                     'sharing provider(s) %s cannot supply it' % (
                         ' or '.join(cause.classes),
                         _named(cause.providers)),
                     resource_classes=list(cause.classes))


@reason.register
def _(cause: causes.NothingSelects) -> Reason:
    if cause.by == 'trait':
        wanted = 'trait ' + _any_of(cause.names)
    elif cause.by == 'aggregate':
        wanted = 'aggregate member_of=' + _any_of(cause.names)
    else:
        wanted = 'a required trait or aggregate to select it by'
    return _in_group(cause, 'resourceless',
                     'no provider in the tree has %s' % wanted)


@reason.register
def _(cause: causes.SharingRoot) -> Reason:
    return Reason('sharing_root', 'a sharing provider: it only completes '
                  'the candidates of the trees it shares with')


@reason.register
def _(cause: causes.NoInventoryInTree) -> Reason:
    message = 'no %s inventory in the tree' % ' or '.join(cause.classes)
    if cause.from_sharing:
        message += ' or from a sharing provider'
        hints = []
        if cause.unreached:
            hints.append('sharing provider(s) %s in no aggregate with it'
                         % _named(cause.unreached))
        if cause.pools:
            hints.append('%s in an aggregate with it but without trait %s'
                         % (_named(cause.pools), naming.SHARING_TRAIT))
        if hints:
            message += ' (%s)' % '; '.join(hints)
    return _in_group(cause, 'no_inventory', message,
                     resource_classes=list(cause.classes))


@reason.register
def _(cause: causes.NoInventory) -> Reason:
    return _in_group(cause, 'no_inventory',
                     'no %s inventory' % cause.resource_class,
                     resource_class=cause.resource_class)


@reason.register
def _(cause: causes.Capacity) -> Reason:
    ratio = display_ratio(cause.ratio)
    return _in_group(
        cause, 'capacity', '%s: requested %d, free %d (total %d, reserved '
        '%d, ratio %s, used %d)' % (
            cause.resource_class, cause.requested, cause.free, cause.total,
            cause.reserved, ratio, cause.used),
        resource_class=cause.resource_class, requested=cause.requested,
        free=cause.free, total=cause.total, reserved=cause.reserved,
        allocation_ratio=ratio, used=cause.used)


@reason.register
def _(cause: causes.UnitLimit) -> Reason:
    return _in_group(cause, cause.limit_kind, '%s: requested %d, %s %d' % (
        cause.resource_class, cause.requested, cause.limit_kind,
        cause.limit), resource_class=cause.resource_class,
        requested=cause.requested, **{cause.limit_kind: cause.limit})


@reason.register
def _(cause: causes.MissingTrait) -> Reason:
    where = (' (on the providers having its resources)'
             if cause.between_holders else '')
    return _in_group(cause, 'missing_trait', 'missing required trait %s%s'
                     % (_any_of(cause.traits), where),
                     traits=list(cause.traits))


@reason.register
def _(cause: causes.ForbiddenTrait) -> Reason:
    return _in_group(cause, 'forbidden_trait', 'has forbidden trait %s'
                     % cause.trait, trait=cause.trait)


@reason.register
def _(cause: causes.NotMember) -> Reason:
    return _in_group(cause, 'member_of', 'not in aggregate(s) member_of=%s'
                     % _any_of(cause.member_of),
                     member_of=list(cause.member_of))


_CROSS_GROUP = {
    'group_policy': 'group_policy=isolate: the suffixed groups can only be '
                    'satisfied by sharing a provider',
    'same_subtree': 'same_subtree=%s: the providers that satisfy these '
                    'groups are not all under one of them',
    'one_provider_per_tree': 'before microversion 1.29 a candidate may use '
                             'only one provider of a tree',
}


@reason.register
def _(cause: causes.CrossGroup) -> Reason:
    message = _CROSS_GROUP[cause.constraint]
    if cause.constraint == 'same_subtree':
        message %= ' & '.join(','.join(s) for s in cause.same_subtrees)
    return Reason(cause.constraint, message)


@reason.register
def _(cause: causes.CombinedShortfall) -> Reason:
    return Reason(
        'combined_capacity', 'the groups together request %d %s; the '
        'eligible providers have %d free' % (
            cause.requested, cause.resource_class, cause.free),
        details={'resource_class': cause.resource_class,
                 'requested': cause.requested, 'free': cause.free})


@reason.register
def _(cause: causes.Unsatisfied) -> Reason:
    return Reason('unsatisfied', 'no combination of the providers '
                  'satisfies every group at once')
