"""An option or section of placement.conf that nothing reads is named at
start, with the closest known name; the service and the commands go on,
as upstream's do."""
import logging
import sys

import pytest

from placement import conf as placement_conf
from placement.api import service
from placement.cmd import manage
from placement.cmd import status

# A configuration as a deployment writes it: every section of a library
# the service loads, keystone_authtoken with its password plugin's
# options, and three mistakes.
CONFIG = '''
[DEFAULT]
debug = false
[api]
auth_strategy = keystone
[placement]
max_returned_allocation_candidate = 5
[placement_database]
connection = sqlite://
[metrics]
enable = true
[placment]
randomize_allocation_candidates = true
[keystone_authtoken]
www_authenticate_uri = http://keystone/v3
auth_url = http://keystone/v3
memcached_servers = localhost:11211
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = placement
password = secret
[oslo_policy]
enforce_new_defaults = true
policy_file = policy.yaml
[cors]
allowed_origin = https://dashboard
[oslo_middleware]
enable_proxy_headers_parsing = true
max_request_body_size = 1000000
[profiler]
enabled = false
'''

WARNINGS = [
    '[placement] max_returned_allocation_candidate is not an option of this '
    'service (did you mean max_returned_allocation_candidates?): it is '
    'ignored',
    '[metrics] enable is not an option of this service (did you mean '
    'enabled?): it is ignored',
    '[placment] is not a section this service reads (did you mean '
    '[placement]?): its options are ignored',
]


def _load(tmp_path, text=CONFIG, name='placement.conf'):
    path = tmp_path / name
    path.write_text(text)
    return placement_conf.load_config(['--config-file', str(path)])


def test_unknown_names_and_their_closest_known_ones(tmp_path):
    assert placement_conf.unknown_options(_load(tmp_path)) == WARNINGS


def test_a_clean_configuration_says_nothing(tmp_path):
    text = CONFIG.replace('max_returned_allocation_candidate =',
                          'max_returned_allocation_candidates =').replace(
        'enable =', 'enabled =').replace('[placment]', '[workarounds]')
    text = text.replace('randomize_allocation_candidates',
                        'optimize_for_wide_provider_trees')
    assert placement_conf.unknown_options(_load(tmp_path, text)) == []


def test_deprecated_names_are_known(tmp_path):
    """Upstream's old spellings still load: [DEFAULT] auth_strategy."""
    conf = _load(tmp_path, '[DEFAULT]\nauth_strategy = noauth2\n')
    assert placement_conf.unknown_options(conf) == []


def test_the_auth_plugin_options_follow_auth_type(tmp_path):
    """keystoneauth registers a plugin's options only once it loads it:
    those of the plugin auth_type names are known, in keystone_authtoken
    or the section auth_section names."""
    conf = _load(tmp_path, '[keystone_authtoken]\nauth_type = password\n'
                 'usrname = placement\n')
    assert placement_conf.unknown_options(conf) == [
        '[keystone_authtoken] usrname is not an option of this service '
        '(did you mean username?): it is ignored']
    conf = _load(tmp_path, '[keystone_authtoken]\nauth_section = auth\n'
                 '[auth]\nauth_type = v3applicationcredential\n'
                 'application_credential_id = x\n'
                 'application_credential_secret = y\n')
    assert placement_conf.unknown_options(conf) == []


def test_files_of_a_config_dir_are_checked(tmp_path):
    (tmp_path / 'placement.conf').write_text('[metrics]\nenabled = true\n')
    (tmp_path / 'extra.conf').write_text('[metrics]\nenable = true\n')
    conf = placement_conf.load_config(['--config-dir', str(tmp_path)])
    assert placement_conf.unknown_options(conf) == [WARNINGS[1]]


def test_the_service_warns_and_starts(tmp_path, caplog, monkeypatch):
    # build_application's oslo.log set-up would take the records away
    # from pytest's capture.
    monkeypatch.setattr(service.oslo_log, 'setup', lambda *args: None)
    conf = _load(tmp_path)
    conf.set_override('auth_strategy', 'noauth2', 'api')
    conf.set_override('sync_on_startup', True, 'placement_database')
    with caplog.at_level(logging.WARNING, 'placement.conf'):
        assert service.build_application(conf) is not None
    assert [record.getMessage() for record in caplog.records
            if record.name == 'placement.conf'] == WARNINGS


@pytest.mark.parametrize('main, argv, prog', [
    (manage.main, ['db', 'version'], 'placement-manage'),
    (status.main, ['upgrade', 'check'], 'placement-status'),
])
def test_the_commands_warn_and_go_on(tmp_path, capsys, main, argv, prog):
    path = tmp_path / 'placement.conf'
    path.write_text('[placement_database]\nconnection = sqlite:///%s\n'
                    '[metrics]\nenable = true\n' % (tmp_path / 'p.db'))
    assert manage.main(['--config-file', str(path), 'db', 'sync']) == 0
    capsys.readouterr()
    assert main(['--config-file', str(path), *argv]) == 0
    assert capsys.readouterr().err == '%s: warning: %s\n' % (
        prog, WARNINGS[1])


def test_without_osprofiler_its_section_is_not_unknown(tmp_path,
                                                        monkeypatch):
    """osprofiler is optional: without it, [profiler] is not reported."""
    monkeypatch.setitem(sys.modules, 'osprofiler.opts', None)
    conf = _load(tmp_path, '[profiler]\nenabled = false\n')
    assert placement_conf.unknown_options(conf) == []
