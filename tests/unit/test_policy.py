"""Tests of placement.policy and the default rules."""

import os
import time

from oslo_context import context
import pytest

from placement import conf
from placement import policies
from placement import policy

RP_LIST = policies.resource_provider.LIST
RESHAPE = policies.reshaper.RESHAPE
USAGES = policies.usage.TOTAL_USAGES


def _enforcer(tmp_path, new_defaults, extra=''):
    path = tmp_path / 'placement.conf'
    path.write_text('[oslo_policy]\nenforce_new_defaults = %s\n%s'
                    % (new_defaults, extra))
    return policy.get_enforcer(conf.load_config(config_files=[str(path)]))


def _ctx(*roles, project_id='p1', **kwargs):
    return context.RequestContext(roles=list(roles), project_id=project_id,
                                  user_id='u1', **kwargs)


def _allowed(enforcer, ctx, action, target=None):
    try:
        policy.authorize(enforcer, ctx, action, target)
    except policy.PolicyForbidden as exc:
        assert exc.action == action
        return False
    return True


def test_rule_names_unique():
    names = [rule.name for rule in policies.list_rules()]
    assert len(names) == len(set(names))
    assert RP_LIST in names and RESHAPE in names


def test_enforcer_cached_per_conf():
    c = conf.load_config(config_files=[])
    assert policy.get_enforcer(c) is policy.get_enforcer(c)
    other = conf.load_config(config_files=[])
    assert policy.get_enforcer(other) is not policy.get_enforcer(c)


def test_legacy_admin_allowed_member_denied(tmp_path):
    enforcer = _enforcer(tmp_path, False)
    assert _allowed(enforcer, _ctx('admin'), RP_LIST)
    assert not _allowed(enforcer, _ctx('member', 'reader'), RP_LIST)


def test_reshaper_admin_only_in_legacy_mode(tmp_path):
    legacy = _enforcer(tmp_path, False)
    assert _allowed(legacy, _ctx('admin'), RESHAPE)
    secure = _enforcer(tmp_path, True)
    assert not _allowed(secure, _ctx('admin'), RESHAPE)
    assert _allowed(secure, _ctx('service'), RESHAPE)


def test_usages_project_reader(tmp_path):
    enforcer = _enforcer(tmp_path, True)
    reader = _ctx('reader')
    # The default target is the caller's own project.
    assert _allowed(enforcer, reader, USAGES)
    assert not _allowed(enforcer, reader, USAGES, {'project_id': 'p2'})
    assert _allowed(enforcer, _ctx('admin'), USAGES, {'project_id': 'p2'})
    # Readers only have that extra right for usages.
    assert not _allowed(enforcer, reader, RP_LIST)


@pytest.mark.parametrize('new_defaults', [True, False])
def test_system_scope_denied(tmp_path, new_defaults):
    enforcer = _enforcer(tmp_path, new_defaults)
    system_admin = _ctx('admin', project_id=None, system_scope='all')
    assert not _allowed(enforcer, system_admin, RP_LIST)


def test_policy_file_override(tmp_path):
    (tmp_path / 'custom.yaml').write_text('"%s": "role:reader"\n' % RP_LIST)
    enforcer = _enforcer(tmp_path, True, 'policy_file = custom.yaml\n')
    assert _allowed(enforcer, _ctx('reader'), RP_LIST)
    assert not _allowed(enforcer, _ctx('admin'), RP_LIST)


def test_default_policy_file_next_to_config(tmp_path):
    (tmp_path / 'policy.yaml').write_text('"%s": "!"\n' % RP_LIST)
    enforcer = _enforcer(tmp_path, True)
    assert not _allowed(enforcer, _ctx('admin'), RP_LIST)


def test_generator_hook(monkeypatch):
    monkeypatch.delenv(conf.CONFIG_DIR_ENV, raising=False)
    enforcer = policy.get_enforcer_for_generator()
    assert RESHAPE in enforcer.registered_rules


def test_outcome_follows_a_changed_policy_file(tmp_path):
    custom = tmp_path / 'custom.yaml'
    custom.write_text('"%s": "role:reader"\n' % RP_LIST)
    enforcer = _enforcer(tmp_path, True, 'policy_file = custom.yaml\n')
    reader = _ctx('reader')
    assert _allowed(enforcer, reader, RP_LIST)
    assert _allowed(enforcer, reader, RP_LIST)  # the kept outcome
    custom.write_text('"%s": "!"\n' % RP_LIST)
    os.utime(custom, (time.time() + 5,) * 2)  # a new mtime, however fast
    assert not _allowed(enforcer, reader, RP_LIST)
    assert not _allowed(enforcer, reader, RP_LIST)


def test_outcomes_kept_per_caller_and_target(tmp_path):
    enforcer = _enforcer(tmp_path, True)
    assert _allowed(enforcer, _ctx('reader'), USAGES)
    assert not _allowed(enforcer, _ctx('reader'), USAGES, {'project_id': 'p2'})
    assert not _allowed(enforcer, _ctx('reader', project_id='p3'), USAGES,
                        {'project_id': 'p1'})
    assert _allowed(enforcer, _ctx('admin'), USAGES, {'project_id': 'p2'})


def test_policy_file_created_after_start_is_read(tmp_path, monkeypatch):
    enforcer = _enforcer(tmp_path, True)
    assert _allowed(enforcer, _ctx('admin'), RP_LIST)
    (tmp_path / 'policy.yaml').write_text('"%s": "!"\n' % RP_LIST)
    # Looked up again once LOOKUP_SECONDS have passed.
    monkeypatch.setattr(policy, 'LOOKUP_SECONDS', 0)
    assert not _allowed(enforcer, _ctx('admin'), RP_LIST)


def test_outcome_of_replaced_rules_is_not_kept(tmp_path):
    (tmp_path / 'custom.yaml').write_text('"%s": "role:reader"\n' % RP_LIST)
    enforcer = _enforcer(tmp_path, True, 'policy_file = custom.yaml\n')
    key = ('an action', 'a caller')
    assert enforcer.decided(key) == (False, None)
    old = enforcer.rules
    # Another request reloads the policy file while this one decides,
    # and starts the table of the new rules.
    enforcer.load_rules(force_reload=True)
    assert enforcer.rules is not old
    assert enforcer.decided(('another action', 'a caller')) == (False, None)
    enforcer.decide(key, 'refused', old)
    assert enforcer.decided(key) == (False, None)
    enforcer.decide(key, 'refused', enforcer.rules)
    assert enforcer.decided(key) == (True, 'refused')
