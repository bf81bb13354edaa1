"""The allocation-candidates request model (placement.querylang parses
query strings into it).

A request is a list of request groups plus request-wide parameters. The
unsuffixed group may be satisfied by several providers of one tree and by
sharing providers; every suffixed group by a single provider.
"""
import dataclasses

ISOLATE = 'isolate'


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
        return set(trait_names(self.required, self.forbidden))


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


def trait_names(groups, forbidden):
    """Every trait name a parsed ``required`` mentions (to look them up),
    in the order the client gave them.
    """
    names = {}
    for group in groups:
        names.update(dict.fromkeys(sorted(group)))
    names.update(dict.fromkeys(sorted(forbidden)))
    return list(names)
