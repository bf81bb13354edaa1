"""Rules for /resource_providers/{uuid}/aggregates."""

from placement.policies import base

PREFIX = 'placement:resource_providers:aggregates:%s'
LIST = PREFIX % 'list'
UPDATE = PREFIX % 'update'

BASE_PATH = '/resource_providers/{uuid}/aggregates'

rules = [
    base.api_rule(LIST, base.ADMIN_OR_SERVICE,
                  'List the aggregates a resource provider belongs to.',
                  [('GET', BASE_PATH)]),
    base.api_rule(UPDATE, base.ADMIN_OR_SERVICE,
                  'Replace the aggregates of a resource provider.',
                  [('PUT', BASE_PATH)]),
]


def list_rules():
    return rules
