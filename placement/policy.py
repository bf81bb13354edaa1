"""Policy enforcement for the placement API.

oslo.policy's checks cost more than a small read of the database: every
check looked for the policy file and policy.d in every configuration
directory, then evaluated the rule by inspecting each check's signature.
Here the files' locations are looked up at most once a second (their
contents are still checked for changes at every check, as oslo.policy
does), and the outcome of a check is kept for as long as the rules read
from those files stay the same.
"""
import collections
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import MutableMapping
import logging
import threading
import time
from typing import Any

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_policy import policy as oslo_policy

from placement import conf as placement_conf
from placement import policies

# Attribute of a ConfigOpts holding its enforcer, so each configuration
# gets exactly one enforcer and it goes away with the configuration.
LOG = logging.getLogger(__name__)
_ENFORCER_ATTR = '_placement_policy_enforcer'
# How long a policy file's location (or its absence) is taken as known:
# a policy file or policy.d that appears later is read within this time.
LOOKUP_SECONDS = 1.0
# Outcomes kept: per action and caller (roles, project, user, scope).
DECISIONS_KEPT = 4096


class PolicyFileError(Exception):
    """The policy file cannot be read or parsed; the message says which
    file and why."""


class PolicyForbidden(Exception):
    """The policy denied an action; answered with 403 by the API."""

    def __init__(self, action: str, message: str | None = None) -> None:
        super().__init__(
            message or f'Policy does not allow {action} to be performed.')
        self.action = action


class Enforcer(oslo_policy.Enforcer):
    """oslo.policy's enforcer, with the policy files' locations looked up
    at most once every LOOKUP_SECONDS, and a table of the outcomes of
    ``authorize`` for the current rules."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        super().__init__(conf)
        self._located: dict[str, tuple[float, str | None]] = {}
        self._decisions_lock = threading.Lock()
        self._decisions: collections.OrderedDict[
            Hashable, str | None] = collections.OrderedDict()
        self._decided_rules: object = None

    def _get_policy_path(self, path: str) -> str:
        now = time.monotonic()
        known = self._located.get(path)
        if known is None or now - known[0] >= LOOKUP_SECONDS:
            try:
                found: str | None = super()._get_policy_path(path)
            except cfg.ConfigFilesNotFoundError:
                found = None
            known = self._located[path] = (now, found)
        if known[1] is None:
            raise cfg.ConfigFilesNotFoundError([path])
        return known[1]

    def decided(self, key: Hashable) -> tuple[bool, str | None]:
        """(known, the refusal's message or None) of the check ``key``,
        after reloading the rules if their files changed."""
        self.load_rules()
        with self._decisions_lock:
            if self._decided_rules is not self.rules:
                # A reload made a new rule set: earlier outcomes may no
                # longer hold.
                self._decisions.clear()
                self._decided_rules = self.rules
            if key not in self._decisions:
                return False, None
            self._decisions.move_to_end(key)
            return True, self._decisions[key]

    def decide(self, key: Hashable, refusal: str | None,
               rules: object) -> None:
        """Keep the outcome of the check ``key`` that was made with the
        rule set ``rules``, unless the rules were reloaded since: an
        outcome of the old rules is never kept for the new."""
        with self._decisions_lock:
            if rules is not self.rules or rules is not self._decided_rules:
                return
            self._decisions[key] = refusal
            if len(self._decisions) > DECISIONS_KEPT:
                self._decisions.popitem(last=False)


def get_enforcer(conf: cfg.ConfigOpts) -> Enforcer:
    """Return the enforcer bound to ``conf``, creating it on first use.

    [oslo_policy] options of ``conf`` (policy_file, enforce_new_defaults,
    ...) apply, and the policy file is re-read when it changes.
    """
    enforcer = vars(conf).get(_ENFORCER_ATTR)
    if enforcer is None:
        enforcer = Enforcer(conf)
        # Every base rule changed its default; warning about each one on
        # every start only floods the logs.
        enforcer.suppress_default_change_warnings = True
        enforcer.register_defaults(policies.list_rules())
        # Fail on a broken policy file now rather than on the first request.
        _load_rules(enforcer, conf)
        setattr(conf, _ENFORCER_ATTR, enforcer)
    return enforcer


def _load_rules(enforcer: Enforcer, conf: cfg.ConfigOpts) -> None:
    """Load the rules: a policy file that cannot be read or parsed is
    PolicyFileError; one named but not found leaves the default rules in
    force, as upstream's does, with a warning."""
    policy_file = conf.oslo_policy.policy_file
    try:
        enforcer.load_rules()
    except (OSError, ValueError) as exc:
        raise PolicyFileError(
            'cannot load the policy file %s ([oslo_policy] policy_file): '
            '%s: correct it, or remove it to use the default rules'
            % (enforcer.policy_path or policy_file,
               ' '.join(str(exc).split()))) from None
    if (enforcer.policy_path is None
            and policy_file != placement_conf.POLICY_FILE):
        LOG.warning('[oslo_policy] policy_file %s was not found: the '
                    'default rules apply', policy_file)


def get_enforcer_for_generator() -> Enforcer:
    """Entry point ``oslo.policy.enforcer`` used by oslopolicy-* tools."""
    return get_enforcer(placement_conf.load_config())


def authorize(enforcer: Enforcer,
              context: oslo_context.RequestContext, action: str,
              target: Mapping[str, Any] | None = None) -> None:
    """Raise PolicyForbidden unless ``context`` may perform ``action``.

    ``target`` defaults to the caller's own project and user. A token of
    the wrong scope is refused like any other denial.
    """
    if target is None:
        target = {'project_id': context.project_id,
                  'user_id': context.user_id}
    credentials = context.to_policy_values()
    key = (action, _frozen(target), _frozen(credentials))
    known, refusal = enforcer.decided(key)
    if not known:
        rules = enforcer.rules
        refusal = _refusal(enforcer, action, target, credentials)
        enforcer.decide(key, refusal, rules)
    if refusal is not None:
        raise PolicyForbidden(action, message=refusal)


def _refusal(enforcer: Enforcer, action: str, target: Mapping[str, Any],
             credentials: MutableMapping[str, Any]) -> str | None:
    """oslo.policy's answer: None if allowed, else the refusal's message."""
    try:
        enforcer.authorize(action, target, credentials,
                           do_raise=True, exc=PolicyForbidden, action=action)
    except PolicyForbidden as refusal:
        return str(refusal)
    except oslo_policy.InvalidScope:
        # Upstream reports a token of the wrong scope by the action alone.
        return action
    return None


def _frozen(values: Any) -> Hashable:
    """A hashable form of credentials or a target (dicts, lists)."""
    if isinstance(values, Mapping):
        return tuple(sorted((key, _frozen(value))
                            for key, value in values.items()))
    if isinstance(values, (list, tuple, set, frozenset)):
        return tuple(_frozen(value) for value in values)
    return values
