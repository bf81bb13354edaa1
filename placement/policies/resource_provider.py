"""Rules for /resource_providers."""

from placement.policies import base

PREFIX = 'placement:resource_providers:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

_COLLECTION = '/resource_providers'
_ITEM = '/resource_providers/{uuid}'

rules = [
    base.api_rule(LIST, base.ADMIN_OR_SERVICE, 'List resource providers.',
                  [('GET', _COLLECTION)]),
    base.api_rule(CREATE, base.ADMIN_OR_SERVICE,
                  'Create a resource provider.', [('POST', _COLLECTION)]),
    base.api_rule(SHOW, base.ADMIN_OR_SERVICE,
                  'Show one resource provider.', [('GET', _ITEM)]),
    base.api_rule(UPDATE, base.ADMIN_OR_SERVICE,
                  'Update a resource provider.', [('PUT', _ITEM)]),
    base.api_rule(DELETE, base.ADMIN_OR_SERVICE,
                  'Delete a resource provider.', [('DELETE', _ITEM)]),
]


def list_rules():
    return rules
