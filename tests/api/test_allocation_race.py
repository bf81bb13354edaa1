"""Many clients racing for providers (their last units, their
generations) through several server processes sharing one database, on
every backend: the races of tests/claim_races.py.
"""
import os
import re
import subprocess
import sys
import time

import pytest

import claim_races

WORKERS = 4
THREADS = 4
# A loaded 2-core machine is slow to start even one server.
START_TIMEOUT = 60


@pytest.fixture
def server(backend, tmp_path):
    """The port of a gunicorn serving the app from WORKERS processes (the
    app is imported once, then the processes fork), all on the test's
    database.
    """
    (tmp_path / 'placement.conf').write_text(
        '[api]\nauth_strategy = noauth2\n'
        '[placement_database]\nconnection = %s\n' % backend.url)
    log = tmp_path / 'gunicorn.log'
    with open(log, 'w') as output:
        process = subprocess.Popen(
            [sys.executable, '-m', 'gunicorn', '--preload',
             '--workers', str(WORKERS), '--worker-class', 'gthread',
             '--threads', str(THREADS), '--no-control-socket',
             '--bind', '127.0.0.1:0', 'placement.wsgi.api:application'],
            stdout=output, stderr=subprocess.STDOUT,
            env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(tmp_path)))
    try:
        yield _wait_for_workers(process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_workers(process, log):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        text = log.read_text()
        listening = re.search(r'Listening at: http://127.0.0.1:(\d+)', text)
        if listening and text.count('Booting worker') >= WORKERS:
            return int(listening.group(1))
        time.sleep(0.2)
    pytest.fail('gunicorn did not start:\n' + log.read_text()[-2000:])


def test_races(server):
    # One test, so that the server starts once per backend.
    servers = claim_races.Servers(['http://127.0.0.1:%d' % server])
    for race in claim_races.ALL:
        race(servers)
