"""Rules for /reshaper."""

from placement.policies import base

PREFIX = 'placement:reshaper:%s'
RESHAPE = PREFIX % 'reshape'

rules = [
    # Only services (e.g. nova-compute) move inventory and allocations
    # between providers of a tree.
    base.api_rule(RESHAPE, base.SERVICE,
                  'Move inventories and allocations between providers '
                  'in one request.',
                  [('POST', '/reshaper')]),
]


def list_rules():
    return rules
