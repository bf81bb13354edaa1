"""Rules of the operator extensions (paths no upstream API uses)."""

from placement.policies import base

EXPLAIN = 'placement:x-explain'

ADMIN = 'rule:admin_api'

rules = [
    # Admins only: the answer lists every provider with its usage.
    base.api_rule(EXPLAIN, ADMIN,
                  'Explain why allocation candidates were not found '
                  '(extension).',
                  [('GET', '/x-explain/allocation_candidates')]),
]


def list_rules():
    return rules
