"""The ``placement-api`` development server command."""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from placement.cmd import api as api_cmd


def test_defaults():
    args = api_cmd._parse([])
    assert (args.host, args.port, args.config_args) == ('127.0.0.1', 8778, [])


def test_options_after_separator_go_to_config():
    args = api_cmd._parse(['-b', '0.0.0.0', '-p', '9000', '--',
                           '--config-file', 'p.conf'])
    assert (args.host, args.port) == ('0.0.0.0', 9000)
    assert args.config_args == ['--config-file', 'p.conf']


def test_unknown_option_is_refused(capsys):
    with pytest.raises(SystemExit):
        api_cmd._parse(['--config-file', 'p.conf'])
    assert 'unrecognized arguments' in capsys.readouterr().err


@pytest.mark.sqlite_only
def test_serves_the_api(backend, tmp_path):
    config = tmp_path / 'placement.conf'
    config.write_text('[api]\nauth_strategy = noauth2\n'
                      '[placement_database]\nconnection = %s\n' % backend.url)
    server = subprocess.Popen(
        [sys.executable, '-m', 'placement.cmd.api', '--port', '0', '--',
         '--config-file', str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        # Log lines (the noauth2 warning) come first on stdout.
        for banner in server.stdout:
            if 'listening on http://127.0.0.1:' in banner:
                break
        else:
            pytest.fail('placement-api exited without serving')
        url = banner.rsplit(' ', 1)[1].strip() + 'resource_classes/VCPU'
        request = urllib.request.Request(url, headers={
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement 1.2'})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)['name'] == 'VCPU'
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.mark.sqlite_only
def test_logs_each_request_once_without_colour(backend, tmp_path):
    # log_color asks for colour, but the log goes to a file.
    config = tmp_path / 'placement.conf'
    config.write_text('[DEFAULT]\nlog_color = true\n'
                      '[api]\nauth_strategy = noauth2\n'
                      '[placement_database]\nconnection = %s\n' % backend.url)
    log_path = tmp_path / 'server.log'
    with open(log_path, 'wb') as log:
        server = subprocess.Popen(
            [sys.executable, '-m', 'placement.cmd.api', '--port', '0', '--',
             '--config-file', str(config)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        url = _wait_for_banner(server, log_path)
        headers = {'X-Auth-Token': 'admin',
                   'OpenStack-API-Version': 'placement 1.2'}
        with urllib.request.urlopen(urllib.request.Request(
                url + 'resource_classes/VCPU', headers=headers),
                timeout=10) as response:
            assert response.status == 200
        # werkzeug colours the access line of a 4xx.
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(urllib.request.Request(
                url + 'resource_classes/CUSTOM_MISSING', headers=headers),
                timeout=10)
        assert missing.value.code == 404
    finally:
        server.terminate()
        server.wait(timeout=10)
    output = log_path.read_text()
    assert '\x1b[' not in output
    found = [line for line in output.splitlines()
             if 'GET /resource_classes/' in line]
    assert len(found) == 2, output
    assert ' INFO placement.requestlog ' in found[0]
    assert '"GET /resource_classes/VCPU" status: 200 ' in found[0]
    assert ' INFO placement.requestlog ' in found[1]
    assert '"GET /resource_classes/CUSTOM_MISSING" status: 404 ' in found[1]


def _wait_for_banner(server, log_path, timeout=60):
    """The URL the server announces in its log once it listens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log_path.read_text().splitlines():
            if 'listening on http://127.0.0.1:' in line:
                return line.rsplit(' ', 1)[1]
        if server.poll() is not None:
            pytest.fail('placement-api exited: %s' % log_path.read_text())
        time.sleep(0.1)
    pytest.fail('placement-api did not start: %s' % log_path.read_text())


def _start(args, env=None, timeout=60):
    """Run placement-api or import the WSGI module, as a process that
    cannot start; its (exit status, output)."""
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True,
        timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.sqlite_only
def test_a_missing_configuration_file_is_one_line(tmp_path):
    missing = tmp_path / 'nowhere.conf'
    code, output = _start(['-m', 'placement.cmd.api', '--port', '0', '--',
                           '--config-file', str(missing)])
    assert code == 1
    assert output == ('placement-api: configuration file not found: %s: '
                      'check --config-file, --config-dir or '
                      '$OS_PLACEMENT_CONFIG_DIR\n' % missing)


def _critical_line(output):
    assert 'Traceback' not in output
    lines = [line for line in output.splitlines() if 'CRITICAL' in line]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.sqlite_only
def test_a_database_without_schema_stops_the_start_in_one_line(tmp_path):
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = sqlite:///%s\n'
                      % (tmp_path / 'empty.db'))
    code, output = _start(['-m', 'placement.cmd.api', '--port', '0', '--',
                           '--config-file', str(config)])
    assert code == 1
    assert _critical_line(output).endswith(
        'CRITICAL placement.api.service [-] Cannot start placement: the '
        'database has no placement schema: run "placement-manage db sync"')


@pytest.mark.sqlite_only
@pytest.mark.parametrize('policy, said', [
    ('"placement:resource_providers:list": [\n',
     'cannot load the policy file %s ([oslo_policy] policy_file): '),
    (b'\xff\xfe not text',
     'cannot load the policy file %s ([oslo_policy] policy_file): '),
])
def test_a_broken_policy_file_stops_the_wsgi_start(tmp_path, policy, said):
    """The WSGI module (gunicorn's and mod_wsgi's) ends the process with
    gunicorn's worker boot error and one line."""
    policy_path = tmp_path / 'policy.yaml'
    if isinstance(policy, bytes):
        policy_path.write_bytes(policy)
    else:
        policy_path.write_text(policy)
    (tmp_path / 'placement.conf').write_text(
        '[placement_database]\nconnection = sqlite://\nsync_on_startup = '
        'true\n[oslo_policy]\npolicy_file = %s\n' % policy_path)
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(tmp_path))
    code, output = _start(['-c', 'import placement.wsgi.api'], env=env)
    assert code == 3
    line = _critical_line(output)
    assert ('CRITICAL placement.api.service [-] Cannot start placement: '
            + said % policy_path) in line
    assert line.endswith('correct it, or remove it to use the default '
                         'rules')


@pytest.mark.sqlite_only
def test_a_missing_configuration_stops_the_wsgi_start(tmp_path):
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(tmp_path))
    (tmp_path / 'placement.conf').write_text('[placement_database\n')
    code, output = _start(['-c', 'import placement.wsgi.api'], env=env)
    assert code == 3
    assert output.startswith('placement: cannot parse the configuration '
                             'file %s: ' % (tmp_path / 'placement.conf'))
    assert len(output.splitlines()) == 1, output


@pytest.mark.sqlite_only
def test_a_policy_file_named_but_missing_is_a_warning(tmp_path):
    """Upstream starts with the default rules: so does this service,
    saying so."""
    config = tmp_path / 'placement.conf'
    config.write_text(
        '[placement_database]\nconnection = sqlite://\nsync_on_startup = '
        'true\n[oslo_policy]\npolicy_file = /nonexistent/policy.yaml\n')
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(tmp_path))
    code, output = _start(['-c', 'import placement.wsgi.api'], env=env)
    assert code == 0, output
    assert ('WARNING placement.policy [-] [oslo_policy] policy_file '
            '/nonexistent/policy.yaml was not found: the default rules '
            'apply') in output
