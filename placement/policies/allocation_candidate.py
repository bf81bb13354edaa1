"""Rules for /allocation_candidates."""

from placement.policies import base

LIST = 'placement:allocation_candidates:list'

rules = [
    base.api_rule(LIST, base.ADMIN_OR_SERVICE,
                  'Find allocation candidates for a resource request.',
                  [('GET', '/allocation_candidates')]),
]


def list_rules():
    return rules
