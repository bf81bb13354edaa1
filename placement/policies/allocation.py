"""Rules for /allocations and /resource_providers/{uuid}/allocations."""

from placement.policies import base

RP_ALLOC_LIST = 'placement:resource_providers:allocations:list'

ALLOC_PREFIX = 'placement:allocations:%s'
ALLOC_LIST = ALLOC_PREFIX % 'list'
ALLOC_MANAGE = ALLOC_PREFIX % 'manage'
ALLOC_UPDATE = ALLOC_PREFIX % 'update'
ALLOC_DELETE = ALLOC_PREFIX % 'delete'

_CONSUMER = '/allocations/{consumer_uuid}'

rules = [
    base.api_rule(ALLOC_MANAGE, base.ADMIN_OR_SERVICE,
                  'Write allocations of several consumers at once.',
                  [('POST', '/allocations')]),
    base.api_rule(ALLOC_LIST, base.ADMIN_OR_SERVICE,
                  'Show the allocations of a consumer.',
                  [('GET', _CONSUMER)]),
    base.api_rule(ALLOC_UPDATE, base.ADMIN_OR_SERVICE,
                  'Replace the allocations of a consumer.',
                  [('PUT', _CONSUMER)]),
    base.api_rule(ALLOC_DELETE, base.ADMIN_OR_SERVICE,
                  'Remove the allocations of a consumer.',
                  [('DELETE', _CONSUMER)]),
    base.api_rule(RP_ALLOC_LIST, base.ADMIN_OR_SERVICE,
                  'List the allocations against a resource provider.',
                  [('GET', '/resource_providers/{uuid}/allocations')]),
]


def list_rules():
    return rules
