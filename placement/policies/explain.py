"""Rules of the operator extensions (paths no upstream API uses)."""

from placement.policies import base

EXPLAIN = 'placement:x-explain'
CAPACITY = 'placement:x-capacity'

ADMIN = 'rule:admin_api'

rules = [
    # Admins only: the answer lists every provider with its usage.
    base.api_rule(EXPLAIN, ADMIN,
                  'Explain why allocation candidates were not found '
                  '(extension).',
                  [('GET', '/x-explain/allocation_candidates')]),
    # Admins only: the answer names hosts and their usage.
    base.api_rule(CAPACITY, ADMIN,
                  'Count how many more instances of flavours fit, and '
                  'where (extension).',
                  [('GET', '/x-capacity/allocation_candidates'),
                   ('POST', '/x-capacity/allocation_candidates'),
                   ('GET', '/x-capacity/flavours')]),
]


def list_rules():
    return rules
