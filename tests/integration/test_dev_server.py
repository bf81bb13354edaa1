"""``placement-api``, the development server tools/run-dev.sh runs
(werkzeug's), as a real server: no request whose body did not all arrive
is carried out (tests/cut_requests.py), on every backend.
"""
import sys

import pytest

import cut_requests
import live_server
import wsgi_process

pytestmark = pytest.mark.integration


def test_no_request_is_carried_out_before_its_body_arrived(backend,
                                                           tmp_path):
    wsgi_process.write_config(tmp_path / 'placement.conf', {
        'api': {'auth_strategy': 'noauth2'},
        'placement_database': {'connection': backend.url},
    })
    port = wsgi_process.free_port()
    client = live_server.Client('http://127.0.0.1:%d' % port)
    log_path = tmp_path / 'server.log'
    with live_server.running(
            [sys.executable, '-m', 'placement.cmd.api', '--port', port, '--',
             '--config-file', tmp_path / 'placement.conf'],
            client, log_path):
        cut_requests.check_every_route(port, client, backend.url, log_path)
