"""GET /healthcheck: database reachability, without a token."""
import logging
import threading
import time

import pytest

from placement.api.operations import health

# Each backend at an address nothing listens on.
DEAD_DATABASES = {
    'sqlite': 'sqlite:////nonexistent-placement-dir/placement.db',
    'mysql': 'mysql+pymysql://root@127.0.0.1:1/placement',
    'postgresql': 'postgresql://postgres@127.0.0.1:1/placement',
}


def test_ok_without_token_or_version(api, caplog):
    caplog.set_level(logging.INFO, logger='placement.requestlog')
    response = api.get('/healthcheck', token=None, version=None)
    assert response.status_code == 200
    assert response.json == {'status': 'ok', 'database': 'ok'}
    assert response.headers['Content-Type'] == 'application/json'
    assert response.headers['Cache-Control'] == 'no-store'
    # Load balancers poll it: it stays out of the request log.
    assert not [r for r in caplog.records
                if r.name == 'placement.requestlog']


def test_database_down_is_503(backend, api_factory):
    api = api_factory(
        shared_engine=False,
        placement_database={'connection': DEAD_DATABASES[backend.name]})
    started = time.monotonic()
    response = api.get('/healthcheck', token=None)
    assert time.monotonic() - started < health.TIMEOUT + 1
    assert response.status_code == 503
    assert response.json == {'status': 'error', 'database': 'unreachable'}


@pytest.mark.sqlite_only
def test_open_under_keystone_and_a_mount_point(api_factory):
    api = api_factory(prefix='/placement', api={'auth_strategy': 'keystone'})
    response = api.get('/healthcheck', token=None, version=None)
    assert response.status_code == 200
    assert response.json['database'] == 'ok'


@pytest.mark.sqlite_only
def test_head_and_other_methods(api):
    response = api.request('HEAD', '/healthcheck', token=None)
    assert response.status_code == 200
    assert response.data == b''
    response = api.post('/healthcheck', token=None)
    assert response.status_code == 405
    assert response.headers['Allow'] == 'GET, HEAD'
    assert response.json['errors'][0]['status'] == 405


class _StuckEngine:
    """An engine whose connections never come (a pool at its limit, a
    database that does not answer).
    """

    def __init__(self):
        self.release = threading.Event()
        self.attempts = 0

    def connect(self):
        self.attempts += 1
        self.release.wait(10)
        raise RuntimeError('not reached in the test')


def test_unanswered_check_times_out_and_is_shared():
    engine = _StuckEngine()
    check = health.HealthCheck(engine, timeout=0.1)
    try:
        started = time.monotonic()
        assert check.database_status() == 'timeout'
        assert check.database_status() == 'timeout'
        assert time.monotonic() - started < 1
        # The second request waited on the check still in flight.
        assert engine.attempts == 1
    finally:
        engine.release.set()


@pytest.mark.sqlite_only
def test_disable_by_file_drains_the_host(api_factory, tmp_path, caplog):
    """While the file exists the check answers 503 (the database still
    reported) and the API goes on answering; removing it restores 200."""
    drain = tmp_path / 'drain'
    api = api_factory(healthcheck={'disable_by_file_path': str(drain)})
    assert api.get('/healthcheck', token=None).status_code == 200

    drain.touch()
    for _ in range(2):
        response = api.get('/healthcheck', token=None, version=None)
        assert response.status_code == 503
        assert response.json == {'status': 'disabled', 'database': 'ok'}
        assert response.headers['Content-Type'] == 'application/json'
        assert response.headers['Cache-Control'] == 'no-store'
    assert api.request('HEAD', '/healthcheck', token=None).status_code == 503
    assert api.get('/traits').status_code == 200
    # Said once, when it changed.
    assert caplog.text.count('Health check disabled: %s exists' % drain) == 1

    drain.unlink()
    response = api.get('/healthcheck', token=None)
    assert response.status_code == 200
    assert response.json == {'status': 'ok', 'database': 'ok'}
    assert 'Health check enabled again' in caplog.text


@pytest.mark.sqlite_only
def test_disabled_with_database_down(backend, api_factory, tmp_path):
    drain = tmp_path / 'drain'
    drain.touch()
    api = api_factory(
        shared_engine=False,
        placement_database={'connection': DEAD_DATABASES[backend.name]},
        healthcheck={'disable_by_file_path': str(drain)})
    response = api.get('/healthcheck', token=None)
    assert response.status_code == 503
    assert response.json == {'status': 'disabled', 'database': 'unreachable'}
