"""Why a request finds no candidate, or no more than it does, as plain
data: what ``finding`` finds and ``rendering`` words.

A cause names the request group it concerns (``group``: the suffix, ''
for the unsuffixed group; None for a cause tied to no group) and the
classes, traits, aggregates, providers and figures involved. Causes are
frozen and compare by value: a provider reached from many trees states
each of its causes once.
"""
import dataclasses


@dataclasses.dataclass(frozen=True, kw_only=True)
class Provider:
    """A provider a cause names."""
    name: str
    uuid: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Cause:
    group: str | None = None


# -- request-wide ----------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class UnknownName(Cause):
    """The request names something that does not exist, but the groups
    before it find nothing, so the endpoint answers with no candidates.
    ``error`` is the error the endpoint would report for it.
    """
    error: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class LostTree(Cause):
    """The group's in_tree provider does not exist."""
    in_tree: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class CandidateCeiling(Cause):
    """[placement] max_allocation_candidates stopped the search after
    ``ceiling`` candidates; more exist.
    """
    max_candidates: int
    ceiling: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class LimitCut(Cause):
    """``limit`` returned fewer than the ``found`` candidates (counted
    no further than the bound when ``found_complete`` is False).
    """
    limit: int
    found: int
    found_complete: bool


# -- a tree or provider ----------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class RootTrait(Cause):
    """root_required: the root lacks ``trait`` (or has it, ``forbidden``)."""
    trait: str
    forbidden: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class OtherTree(Cause):
    """The group's in_tree provider is in another tree."""
    in_tree: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ForbiddenAggregates(Cause):
    """The provider is in aggregates the group forbids (sorted uuids)."""
    aggregates: tuple[str, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SharingCannotSupply(Cause):
    """The tree has none of the classes, and the sharing providers that
    reach it (named in id order) cannot supply them.
    """
    classes: tuple[str, ...]
    providers: tuple[Provider, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class NothingSelects(Cause):
    """A resourceless group: no provider of the tree has what selects its
    providers. ``by`` is 'trait' (its first required any-of traits),
    'aggregate' (its first member_of any-of uuids) or None (neither);
    ``names`` are those traits or uuids, sorted.
    """
    by: str | None
    names: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class SharingRoot(Cause):
    """A sharing provider's own tree: it only completes the candidates of
    the trees it shares with.
    """


@dataclasses.dataclass(frozen=True, kw_only=True)
class NoInventoryInTree(Cause):
    """No provider of the tree has inventory of the classes. With
    ``from_sharing`` a sharing provider could have supplied it: then
    ``unreached`` are the sharing providers with the classes that share
    no aggregate with the tree, and ``pools`` the providers with them in
    an aggregate with the tree that lack the sharing trait.
    """
    classes: tuple[str, ...]
    from_sharing: bool
    unreached: tuple[Provider, ...] = ()
    pools: tuple[Provider, ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class NoInventory(Cause):
    """The provider has no inventory of the class."""
    resource_class: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Capacity(Cause):
    """The provider's inventory has too little free for the request."""
    resource_class: str
    requested: int
    free: int
    total: int
    reserved: int
    ratio: float
    used: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class UnitLimit(Cause):
    """The request breaks the inventory's ``limit_kind`` (min_unit,
    max_unit or step_size), whose value is ``limit``.
    """
    resource_class: str
    requested: int
    limit_kind: str
    limit: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class MissingTrait(Cause):
    """The provider lacks all of the required any-of ``traits``; with
    ``between_holders``, the providers having the group's resources lack
    them between them.
    """
    traits: tuple[str, ...]
    between_holders: bool = False


@dataclasses.dataclass(frozen=True, kw_only=True)
class ForbiddenTrait(Cause):
    trait: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class NotMember(Cause):
    """The provider is in none of the any-of aggregates (sorted uuids)."""
    member_of: tuple[str, ...]


@dataclasses.dataclass(frozen=True, kw_only=True)
class CrossGroup(Cause):
    """Lifting this constraint between groups ('group_policy',
    'same_subtree' or 'one_provider_per_tree') gives the tree a
    candidate. ``same_subtrees``: the request's, sorted, for
    'same_subtree'.
    """
    constraint: str
    same_subtrees: tuple[tuple[str, ...], ...] = ()


@dataclasses.dataclass(frozen=True, kw_only=True)
class CombinedShortfall(Cause):
    """The groups together request more of a class than the tree's
    eligible providers have free.
    """
    resource_class: str
    requested: int
    free: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class Unsatisfied(Cause):
    """No combination of the providers satisfies every group at once."""


# -- the whole ------------------------------------------------------------


@dataclasses.dataclass
class ProviderFindings:
    """``excluded``: the provider's tree anchors no candidate."""
    uuid: str
    name: str
    root_uuid: str
    excluded: bool
    causes: list[Cause]


@dataclasses.dataclass
class Findings:
    """``found`` counts the candidates generated (before ``limit``; with
    ``found_complete`` False it stopped counting there); ``returned`` is
    how many the endpoint answers with. ``providers``: every provider,
    tree by tree.
    """
    found: int
    found_complete: bool
    returned: int
    trees: int
    excluded_trees: int
    request_causes: list[Cause]
    providers: list[ProviderFindings]

