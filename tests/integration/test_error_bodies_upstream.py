"""The record of upstream's error answers (tests/error_bodies.py) is
upstream 16.0.0's: every probe sent to upstream's service under gunicorn
(SQLite) gets the recorded status, Content-Type and body.

With ``PLACEMENT_RECORD_ERROR_BODIES=1`` the record is written from
upstream's answers first (then compared, so the test passes).
Without ``.venv-upstream`` (tools/integration-venvs.sh) it skips loudly;
under CI=true it fails.
"""
import os

import pytest
import requests

import error_bodies
import wsgi_process

pytestmark = [pytest.mark.integration, pytest.mark.sqlite_only]

RECORD_VARIABLE = 'PLACEMENT_RECORD_ERROR_BODIES'


def test_the_record_is_upstreams(backend, tmp_path):
    server = wsgi_process.placement_server(tmp_path,
                                           implementation='upstream')

    def send(method, path, headers, body):
        response = requests.request(method, server.url + path,
                                    headers=headers, data=body, timeout=60)
        return (response.status_code, response.headers.get('Content-Type'),
                response.content)

    with server:
        found = error_bodies.answers(send)
    if os.environ.get(RECORD_VARIABLE):
        error_bodies.write_record(found)
    assert found == error_bodies.load_record()
