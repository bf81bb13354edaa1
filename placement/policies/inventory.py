"""Rules for /resource_providers/{uuid}/inventories."""

from placement.policies import base

PREFIX = 'placement:resource_providers:inventories:%s'
LIST = PREFIX % 'list'
CREATE = PREFIX % 'create'
SHOW = PREFIX % 'show'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'

BASE_PATH = '/resource_providers/{uuid}/inventories'
_ITEM = BASE_PATH + '/{resource_class}'

rules = [
    base.api_rule(LIST, base.ADMIN_OR_SERVICE,
                  'List the inventories of a resource provider.',
                  [('GET', BASE_PATH)]),
    base.api_rule(CREATE, base.ADMIN_OR_SERVICE,
                  'Add one inventory to a resource provider.',
                  [('POST', BASE_PATH)]),
    base.api_rule(SHOW, base.ADMIN_OR_SERVICE,
                  'Show one inventory of a resource provider.',
                  [('GET', _ITEM)]),
    base.api_rule(UPDATE, base.ADMIN_OR_SERVICE,
                  'Replace all or one inventory of a resource provider.',
                  [('PUT', BASE_PATH), ('PUT', _ITEM)]),
    base.api_rule(DELETE, base.ADMIN_OR_SERVICE,
                  'Remove all or one inventory of a resource provider.',
                  [('DELETE', BASE_PATH), ('DELETE', _ITEM)]),
]


def list_rules():
    return rules
