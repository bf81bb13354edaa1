"""Rules for provider usages and per-project usages."""

from placement.policies import base

PROVIDER_USAGES = 'placement:resource_providers:usages'
TOTAL_USAGES = 'placement:usages'

rules = [
    base.api_rule(PROVIDER_USAGES, base.ADMIN_OR_SERVICE,
                  'Show the usages of a resource provider.',
                  [('GET', '/resource_providers/{uuid}/usages')]),
    # Readers may see the usages of their own project; admins and services
    # those of any project.
    base.api_rule(TOTAL_USAGES, base.ADMIN_OR_PROJECT_READER_OR_SERVICE,
                  'Show the total usages of a project (and user).',
                  [('GET', '/usages')]),
]


def list_rules():
    return rules
