"""The service under gunicorn with the shipped etc/gunicorn/placement.conf.py
(4 workers x 4 threads): links, the claim race across workers, and the
request log on gunicorn's stderr.

Only the address and the configuration folder are given on the command
line, as a deployment overriding the sample would. SQLite only, to keep it
short: test_apache.py runs the same checks on every backend.
"""
import os
import pathlib
import sys

import pytest

import live_server
import wsgi_process

pytestmark = [pytest.mark.integration, pytest.mark.sqlite_only]

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_CONFIG = REPO / 'etc' / 'gunicorn' / 'placement.conf.py'


@pytest.fixture
def gunicorn(backend, tmp_path):
    wsgi_process.write_config(tmp_path / 'placement.conf', {
        'api': {'auth_strategy': 'noauth2'},
        'placement_database': {'connection': backend.url},
    })
    port = wsgi_process.free_port()
    client = live_server.Client('http://127.0.0.1:%d' % port)
    log = tmp_path / 'gunicorn.log'
    with live_server.running(
            [sys.executable, '-m', 'gunicorn', '--config', SAMPLE_CONFIG,
             '--bind', '127.0.0.1:%d' % port,
             '--env', 'OS_PLACEMENT_CONFIG_DIR=%s' % tmp_path],
            client, log,
            # gunicorn keeps its control socket there.
            env=dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))):
        yield client, log


def test_serves_under_gunicorn(gunicorn):
    client, log = gunicorn
    live_server.check_links_carry_prefix(client)
    live_server.claim_races_in_log(log, client)
