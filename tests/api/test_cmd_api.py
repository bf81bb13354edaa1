"""The ``placement-api`` development server command."""
import json
import subprocess
import sys
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
