"""Policy enforcement for the placement API."""
from collections.abc import Mapping
from typing import Any

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import policy as oslo_policy

from placement import conf as placement_conf
from placement import policies

# Attribute of a ConfigOpts holding its enforcer, so each configuration
# gets exactly one enforcer and it goes away with the configuration.
_ENFORCER_ATTR = '_placement_policy_enforcer'


class PolicyForbidden(Exception):
    """The policy denied an action; answered with 403 by the API."""

    def __init__(self, action: str, message: str | None = None) -> None:
        super().__init__(
            message or f'Policy does not allow {action} to be performed.')
        self.action = action


def get_enforcer(conf: cfg.ConfigOpts) -> oslo_policy.Enforcer:
    """Return the enforcer bound to ``conf``, creating it on first use.

    [oslo_policy] options of ``conf`` (policy_file, enforce_new_defaults,
    ...) apply, and the policy file is re-read when it changes.
    """
    enforcer = vars(conf).get(_ENFORCER_ATTR)
    if enforcer is None:
        enforcer = oslo_policy.Enforcer(conf)
        # Every base rule changed its default; warning about each one on
        # every start only floods the logs.
        enforcer.suppress_default_change_warnings = True
        enforcer.register_defaults(policies.list_rules())
        # Fail on a broken policy file now rather than on the first request.
        enforcer.load_rules()
        setattr(conf, _ENFORCER_ATTR, enforcer)
    return enforcer


def get_enforcer_for_generator() -> oslo_policy.Enforcer:
    """Entry point ``oslo.policy.enforcer`` used by oslopolicy-* tools."""
    return get_enforcer(placement_conf.load_config())


def authorize(enforcer: oslo_policy.Enforcer,
              context: oslo_context.RequestContext, action: str,
              target: Mapping[str, Any] | None = None) -> None:
    """Raise PolicyForbidden unless ``context`` may perform ``action``.

    ``target`` defaults to the caller's own project and user. A token of
    the wrong scope is refused like any other denial.
    """
    if target is None:
        target = {'project_id': context.project_id,
                  'user_id': context.user_id}
    try:
        enforcer.authorize(action, target, context.to_policy_values(),
                           do_raise=True, exc=PolicyForbidden, action=action)
    except oslo_policy.InvalidScope:
        # Upstream reports a token of the wrong scope by the action alone.
        raise PolicyForbidden(action, message=action) from None
