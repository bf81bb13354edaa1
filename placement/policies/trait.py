"""Rules for /traits and /resource_providers/{uuid}/traits."""

from placement.policies import base

RP_TRAIT_PREFIX = 'placement:resource_providers:traits:%s'
RP_TRAIT_LIST = RP_TRAIT_PREFIX % 'list'
RP_TRAIT_UPDATE = RP_TRAIT_PREFIX % 'update'
RP_TRAIT_DELETE = RP_TRAIT_PREFIX % 'delete'

TRAITS_PREFIX = 'placement:traits:%s'
TRAITS_LIST = TRAITS_PREFIX % 'list'
TRAITS_SHOW = TRAITS_PREFIX % 'show'
TRAITS_UPDATE = TRAITS_PREFIX % 'update'
TRAITS_DELETE = TRAITS_PREFIX % 'delete'

_TRAIT = '/traits/{name}'
_RP_TRAITS = '/resource_providers/{uuid}/traits'

rules = [
    base.api_rule(TRAITS_LIST, base.ADMIN_OR_SERVICE, 'List traits.',
                  [('GET', '/traits')]),
    base.api_rule(TRAITS_SHOW, base.ADMIN_OR_SERVICE,
                  'Check that a trait exists.', [('GET', _TRAIT)]),
    base.api_rule(TRAITS_UPDATE, base.ADMIN_OR_SERVICE,
                  'Create a custom trait.', [('PUT', _TRAIT)]),
    base.api_rule(TRAITS_DELETE, base.ADMIN_OR_SERVICE,
                  'Delete a custom trait.', [('DELETE', _TRAIT)]),
    base.api_rule(RP_TRAIT_LIST, base.ADMIN_OR_SERVICE,
                  'List the traits of a resource provider.',
                  [('GET', _RP_TRAITS)]),
    base.api_rule(RP_TRAIT_UPDATE, base.ADMIN_OR_SERVICE,
                  'Replace the traits of a resource provider.',
                  [('PUT', _RP_TRAITS)]),
    base.api_rule(RP_TRAIT_DELETE, base.ADMIN_OR_SERVICE,
                  'Remove all traits from a resource provider.',
                  [('DELETE', _RP_TRAITS)]),
]


def list_rules():
    return rules
