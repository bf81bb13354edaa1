"""The names a request uses, resolved to ids, and which unknown name
upstream reports first.

``names`` below is what ``sql.lookup`` found: ids by name of classes,
traits and aggregates, and (id, root id) of providers by uuid.
"""
from typing import Iterable

import os_traits

from placement import exception
from placement.candidates import engine
from placement.candidates import request as model
from placement.candidates import sql

SHARING_TRAIT = os_traits.MISC_SHARES_VIA_AGGREGATE


def names_mentioned(request: model.Request
                    ) -> tuple[set[str], set[str], set[str], set[str]]:
    """Resource classes, traits, aggregates and providers to look up."""
    classes: set[str]
    classes, aggregates, providers = set(), set(), set()
    traits = {SHARING_TRAIT} | request.root_required | request.root_forbidden
    for group in request.groups:
        classes.update(group.resources)
        traits.update(group.trait_names)
        for any_of in group.member_of:
            aggregates |= any_of
        aggregates |= group.forbidden_aggs
        if group.in_tree:
            providers.add(group.in_tree)
    return classes, traits, aggregates, providers


def group_need(group: model.Group, names: sql.Names) -> engine.Need:
    """The group with ids for names; unknown classes and traits are left
    out (they are reported before a need is used).
    """
    tree = names.providers.get(group.in_tree) if group.in_tree else None
    return engine.Need(
        suffix=group.suffix,
        resources=tuple((names.classes[rc], amount)
                        for rc, amount in group.resources.items()
                        if rc in names.classes),
        required=tuple(ids(any_of, names.traits)
                       for any_of in group.required),
        forbidden=ids(group.forbidden, names.traits),
        member_of=tuple(ids(any_of, names.aggregates)
                        for any_of in group.member_of),
        forbidden_aggs=ids(group.forbidden_aggs, names.aggregates),
        tree=tree[1] if tree else None,
        lost=bool(group.in_tree) and tree is None)


def ids(names: Iterable[str], known: dict[str, int]) -> frozenset[int]:
    """The ids ``known`` ({name: id}) has for ``names``."""
    return frozenset(known[name] for name in names if name in known)


# How a request with an unknown resource class is refused (a prefix).
UNKNOWN_CLASS_REFUSED = 'Invalid resource class in resources parameter: '


class Unknown(exception.NotFound):
    """A resource class or trait the request names does not exist."""


class UnknownResourceClass(Unknown):
    pass


class UnknownTrait(Unknown):
    pass


def first_unknown_name(request: model.Request, names: sql.Names
                       ) -> tuple[int, Unknown] | None:
    """(position, Unknown) for the first unknown name upstream reports:
    root_required (position -1), then per group its classes, then its
    traits.
    """
    for trait in sorted(request.root_required) + sorted(
            request.root_forbidden):
        if trait not in names.traits:
            return -1, _no_trait(trait)
    for position, group in enumerate(request.groups):
        unknown = unknown_in_group(group, names)
        if unknown is not None:
            return position, unknown
    return None


def unknown_in_group(group: model.Group,
                     names: sql.Names) -> Unknown | None:
    """The first unknown class or trait of ``group``, as upstream
    reports it (Unknown), or None."""
    unknown = _first_unknown_class(group, names)
    if unknown is not None:
        return unknown
    for any_of in group.required + [group.forbidden]:
        for trait in sorted(any_of):
            if trait not in names.traits:
                return _no_trait(trait)
    return None


def unknown_listed(group: model.Group, names: sql.Names) -> Unknown | None:
    """The unknown names of ``group`` as GET /resource_providers reports
    them (Unknown), or None: upstream checks the traits first and names
    every unknown one, then the classes and names the first.
    """
    missing = [trait for trait in model.trait_names(group.required,
                                                    group.forbidden)
               if trait not in names.traits]
    if missing:
        return _no_trait(', '.join(missing))
    return _first_unknown_class(group, names)


def _first_unknown_class(group, names):
    for rc in group.resources:
        if rc not in names.classes:
            return UnknownResourceClass('No such resource class %s.' % rc)
    return None


def _no_trait(name):
    return UnknownTrait('No such trait(s): %s.' % name)


def refusal(unknown: Unknown) -> exception.Invalid:
    """The 400 upstream answers for an Unknown name (exception.Invalid)."""
    if isinstance(unknown, UnknownResourceClass):
        return exception.Invalid(UNKNOWN_CLASS_REFUSED + str(unknown))
    return exception.Invalid(str(unknown))
