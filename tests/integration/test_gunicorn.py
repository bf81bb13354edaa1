"""The service under gunicorn with the shipped etc/gunicorn/placement.conf.py
(4 workers x 4 threads): links, the claim race across workers, the
request log on gunicorn's stderr, and its child_exit hook forgetting the
metrics of a worker that died; with those and with sync workers, no
request whose body did not all arrive is carried out (tests/cut_requests.py).

Only the address (and the worker class) is given on the command line,
as a deployment overriding the sample would; the configuration folder
comes from OS_PLACEMENT_CONFIG_DIR in gunicorn's environment, which the
sample honours. SQLite only but for the cut requests, to keep it short:
test_apache.py runs the same checks on every backend.
"""
import os
import pathlib
import runpy
import signal
import sys
import time
import urllib.parse

import pytest

import cut_requests
import live_server
import wsgi_process

pytestmark = pytest.mark.integration

REPO = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_CONFIG = REPO / 'etc' / 'gunicorn' / 'placement.conf.py'


def _sample_server(backend, tmp_path, sections=None, env=None, args=()):
    """gunicorn with the sample configuration (and ``args``), as a context
    manager of the server process: (process, client, log path)."""
    wsgi_process.write_config(tmp_path / 'placement.conf', {
        'api': {'auth_strategy': 'noauth2'},
        'placement_database': {'connection': backend.url},
        **(sections or {}),
    })
    port = wsgi_process.free_port()
    client = live_server.Client('http://127.0.0.1:%d' % port)
    log = tmp_path / 'gunicorn.log'
    return live_server.running(
        [sys.executable, '-m', 'gunicorn', '--config', SAMPLE_CONFIG,
         '--bind', '127.0.0.1:%d' % port, *args],
        client, log,
        # gunicorn keeps its control socket there.
        env=dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path),
                 OS_PLACEMENT_CONFIG_DIR=str(tmp_path), **(env or {}))
    ), client, log


def test_sample_takes_the_config_dir_from_the_environment(monkeypatch):
    """raw_env passes $OS_PLACEMENT_CONFIG_DIR on, /etc/placement without."""
    monkeypatch.delenv('OS_PLACEMENT_CONFIG_DIR', raising=False)
    assert runpy.run_path(str(SAMPLE_CONFIG))['raw_env'] == [
        'OS_PLACEMENT_CONFIG_DIR=/etc/placement']
    monkeypatch.setenv('OS_PLACEMENT_CONFIG_DIR', '/srv/placement')
    assert runpy.run_path(str(SAMPLE_CONFIG))['raw_env'] == [
        'OS_PLACEMENT_CONFIG_DIR=/srv/placement']


@pytest.fixture
def gunicorn(backend, tmp_path):
    server, client, log = _sample_server(backend, tmp_path)
    with server:
        yield client, log


@pytest.mark.sqlite_only
def test_serves_under_gunicorn(gunicorn):
    client, log = gunicorn
    live_server.check_links_carry_prefix(client)
    live_server.claim_races_in_log(log, client)


def _worker_pids(process):
    with open('/proc/%d/task/%d/children' % (process.pid, process.pid)) as f:
        return {int(pid) for pid in f.read().split()}


def _gauge_file_pids(directory):
    """The processes whose live gauges the multiprocess directory holds."""
    return {int(path.stem.rsplit('_', 1)[1])
            for path in directory.glob('gauge_live*_*.db')}


def _wait_for(condition, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail('not within %ss: %s' % (timeout, what))
        time.sleep(0.2)


@pytest.mark.sqlite_only
def test_child_exit_forgets_a_dead_workers_gauges(backend, tmp_path):
    metrics_dir = tmp_path / 'metrics'
    metrics_dir.mkdir()
    server, client, log = _sample_server(
        backend, tmp_path, {'metrics': {'enabled': True}},
        env={'PROMETHEUS_MULTIPROC_DIR': str(metrics_dir)})
    with server as process:
        _wait_for(lambda: len(_worker_pids(process)) == 4, '4 workers')
        workers = _worker_pids(process)
        _wait_for(lambda: _gauge_file_pids(metrics_dir) == workers,
                  'gauge files of every worker: %s' % workers)
        dead = min(workers)
        os.kill(dead, signal.SIGKILL)
        _wait_for(lambda: len(_worker_pids(process) - workers) == 1,
                  'a worker in place of %d' % dead)
        _wait_for(lambda: _gauge_file_pids(metrics_dir)
                  == _worker_pids(process),
                  'the gauges of the live workers only, not of %d: %s %s' % (
                      dead, _gauge_file_pids(metrics_dir),
                      _worker_pids(process)))
        assert client.request('GET', '/metrics').status_code == 200


@pytest.mark.parametrize('worker_class', ['gthread', 'sync'])
def test_no_request_is_carried_out_before_its_body_arrived(
        backend, tmp_path, worker_class):
    server, client, log = _sample_server(
        backend, tmp_path, args=['--worker-class', worker_class])
    with server:
        cut_requests.check_every_route(
            urllib.parse.urlsplit(client.url).port, client, backend.url, log)
