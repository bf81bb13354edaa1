"""Rules for /resource_classes."""

from placement.policies import base

PREFIX = 'placement:resource_classes:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

_COLLECTION = '/resource_classes'
_ITEM = '/resource_classes/{name}'

rules = [
    base.api_rule(LIST, base.ADMIN_OR_SERVICE, 'List resource classes.',
                  [('GET', _COLLECTION)]),
    base.api_rule(CREATE, base.ADMIN_OR_SERVICE,
                  'Create a custom resource class.', [('POST', _COLLECTION)]),
    base.api_rule(SHOW, base.ADMIN_OR_SERVICE,
                  'Show one resource class.', [('GET', _ITEM)]),
    base.api_rule(UPDATE, base.ADMIN_OR_SERVICE,
                  'Create or validate a custom resource class.',
                  [('PUT', _ITEM)]),
    base.api_rule(DELETE, base.ADMIN_OR_SERVICE,
                  'Delete a custom resource class.', [('DELETE', _ITEM)]),
]


def list_rules():
    return rules
