"""The allocation-candidates request model (placement.querylang parses
query strings into it).

A request is a list of request groups plus request-wide parameters. The
unsuffixed group may be satisfied by several providers of one tree and by
sharing providers; every suffixed group by a single provider.
"""
import dataclasses
from typing import Iterable

ISOLATE = 'isolate'


@dataclasses.dataclass
class Group:
    """One request group. Trait and aggregate terms are lists of any-of
    sets, ANDed; names and uuids are as the client wrote them.
    """
    suffix: str = ''
    resources: dict[str, int] = dataclasses.field(default_factory=dict)
    required: list[frozenset[str]] = dataclasses.field(default_factory=list)
    forbidden: set[str] = dataclasses.field(default_factory=set)
    member_of: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_aggs: set[str] = dataclasses.field(default_factory=set)
    in_tree: str | None = None

    @property
    def single_provider(self) -> bool:
        """Suffixed groups must be satisfied by one provider."""
        return bool(self.suffix)

    @property
    def trait_names(self) -> set[str]:
        return set(trait_names(self.required, self.forbidden))


@dataclasses.dataclass
class Request:
    groups: list[Group]
    group_policy: str | None = None
    limit: int | None = None
    root_required: set[str] = dataclasses.field(default_factory=set)
    root_forbidden: set[str] = dataclasses.field(default_factory=set)
    # Sets of suffixes whose providers must hang under one of them.
    same_subtrees: list[set[str]] = dataclasses.field(default_factory=list)
    # Before 1.29 a candidate takes at most one provider per tree.
    nested: bool = True
    every_class: bool = True

    @property
    def isolate(self) -> bool:
        return self.group_policy == ISOLATE

    def suffixed_count(self) -> int:
        return sum(1 for g in self.groups if g.suffix)


def trait_names(groups: Iterable[Iterable[str]],
                forbidden: Iterable[str]) -> list[str]:
    """Every trait name a parsed ``required`` mentions (to look them up),
    in the order the client gave them.
    """
    names: dict[str, None] = {}
    for group in groups:
        names.update(dict.fromkeys(sorted(group)))
    names.update(dict.fromkeys(sorted(forbidden)))
    return list(names)
