"""Base rules that the per-resource placement rules refer to."""

from oslo_log import versionutils
from oslo_policy import policy

ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
SERVICE = 'rule:service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = (
    'rule:admin_or_project_reader_or_service_api')

# Before the secure RBAC defaults every API required the admin role; with
# [oslo_policy] enforce_new_defaults=False that check is OR'ed back in.
DEPRECATED_ADMIN_POLICY = policy.DeprecatedRule(
    name='rule:admin_api',
    check_str='role:admin',
    deprecated_reason='Placement now has role and scope aware defaults; '
                      'the admin-only default is kept for compatibility.',
    deprecated_since=versionutils.deprecated.WALLABY,
)

rules = [
    policy.RuleDefault(
        'admin_api',
        'role:admin',
        description='Admin only, the historical default for placement.',
        scope_types=['project'],
    ),
    policy.RuleDefault(
        'service_api',
        'role:service',
        description='Calls made by other services on behalf of users.',
        scope_types=['project'],
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
    policy.RuleDefault(
        'admin_or_service_api',
        'role:admin or role:service',
        description='Admins or other services; the default of most APIs.',
        scope_types=['project'],
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
    policy.RuleDefault(
        'project_reader_api',
        'role:reader and project_id:%(project_id)s',
        description='Readers of the project the request is about.',
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
    policy.RuleDefault(
        'admin_or_project_reader_or_service_api',
        'role:admin or rule:project_reader_api or role:service',
        description='Admins, services, or readers of the project concerned.',
        scope_types=['project'],
        deprecated_rule=DEPRECATED_ADMIN_POLICY,
    ),
]


def api_rule(name, check_str, description, operations):
    """Build a documented rule for API calls given as (method, path) pairs.

    Every placement API rule is project scoped.
    """
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=['project'],
    )


def list_rules():
    return rules
