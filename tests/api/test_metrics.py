"""[metrics]: the Prometheus endpoint, its access rule and what it counts.

prometheus_client keeps counters per process, for the whole test session:
tests compare values before and after what they do.
"""
import json
import os
import subprocess
import sys
import textwrap
import uuid

from prometheus_client import parser
import pytest
from test_health import DEAD_DATABASES

from placement import exception
from placement.api import app as placement_app
from placement.api.operations import multiprocess as processes
from placement.db import allocation as alloc_db

from api_cloud import Cloud
import error_text

LOCAL = {'REMOTE_ADDR': '127.0.0.1'}
ENABLED = {'metrics': {'enabled': True}}


@pytest.fixture
def api(api_factory):
    return api_factory(**ENABLED)


def _scrape(api, address='127.0.0.1'):
    response = api.get('/metrics', token=None, version=None,
                       environ_overrides={'REMOTE_ADDR': address})
    assert response.status_code == 200, response.text
    return _parse(response.text)


def _parse(text):
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def _value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0)


def _requests(samples, route, method, status, version='1.39'):
    return _value(samples, 'placement_http_requests_total', route=route,
                  method=method, status=status, microversion=version)


def _provider(api, inventories):
    return Cloud(api).provider(str(uuid.uuid4()), inventory=inventories)


def _allocate(api, provider, resources, **kwargs):
    return api.put('/allocations/' + str(uuid.uuid4()), json={
        'allocations': {provider: {'resources': resources}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}, **kwargs)


@pytest.mark.sqlite_only
def test_disabled_by_default(api_factory):
    api = api_factory()
    # As any unknown path, and as upstream.
    assert api.get('/metrics', environ_overrides=LOCAL).status_code == 404
    assert api.get('/metrics', token=None,
                   environ_overrides=LOCAL).status_code == 401


@pytest.mark.sqlite_only
def test_disabled_counts_nothing(api_factory):
    before = _scrape(api_factory(**ENABLED))
    api_factory().get('/resource_providers')
    after = _scrape(api_factory(**ENABLED))
    assert (_requests(after, '/resource_providers', 'GET', '200')
            == _requests(before, '/resource_providers', 'GET', '200'))


@pytest.mark.sqlite_only
@pytest.mark.parametrize('address', ['127.0.0.1', '::1', '::ffff:127.0.0.1'])
def test_loopback_allowed_without_token(api, address):
    response = api.get('/metrics', token=None, version=None,
                       environ_overrides={'REMOTE_ADDR': address})
    assert response.status_code == 200
    assert response.headers['Content-Type'].startswith('text/plain')
    assert 'placement_http_requests_total' in response.text
    assert 'placement_database_up 1.0' in response.text


@pytest.mark.sqlite_only
@pytest.mark.parametrize('address', ['192.0.2.7', '', 'unix-socket'])
def test_other_addresses_refused(api, address):
    response = api.get('/metrics', token='admin',
                       environ_overrides={'REMOTE_ADDR': address})
    assert response.status_code == 403
    assert 'Metrics are not available to this address.' in (
        error_text.raw_detail(response))


@pytest.mark.sqlite_only
def test_configured_networks_and_path(api_factory):
    api = api_factory(metrics={'enabled': True, 'path': '/x-metrics',
                               'allowed_networks': ['192.0.2.0/24']})
    assert api.get('/x-metrics', token=None, environ_overrides={
        'REMOTE_ADDR': '192.0.2.7'}).status_code == 200
    assert api.get('/x-metrics', token=None,
                   environ_overrides=LOCAL).status_code == 403
    assert api.get('/metrics', environ_overrides=LOCAL).status_code == 404
    assert api.post('/x-metrics', environ_overrides=LOCAL).status_code == 405


@pytest.mark.sqlite_only
@pytest.mark.parametrize('options, message', [
    ({'path': '/traits'}, '/traits is a Placement API path'),
    ({'path': '/resource_providers/x/usages'}, 'is a Placement API path'),
    ({'path': '/'}, '/ is a Placement API path'),
    ({'path': '/healthcheck'}, 'taken by another endpoint'),
    ({'allowed_networks': ['10.0.0.0/33']}, 'allowed_networks'),
])
def test_bad_configuration_stops_startup(backend, conf_factory, options,
                                         message):
    conf = conf_factory(metrics=dict(options, enabled=True))
    with pytest.raises(ValueError, match=message):
        placement_app.create_app(conf, engine=backend.engine)


def test_requests_by_route_method_status_and_version(api):
    provider = str(uuid.uuid4())
    before = _scrape(api)
    api.get('/resource_providers')
    api.get('/resource_providers/' + provider)
    api.get('/resource_providers/' + provider, version='1.14')
    api.delete('/resource_providers')
    api.get('/no/such/path')
    api.get('/traits', token=None)
    api.request('BREW', '/traits')
    after = _scrape(api)

    def moved(route, method, status, version='1.39'):
        return (_requests(after, route, method, status, version)
                - _requests(before, route, method, status, version))

    assert moved('/resource_providers', 'GET', '200') == 1
    assert moved('/resource_providers/<uuid>', 'GET', '404') == 1
    assert moved('/resource_providers/<uuid>', 'GET', '404', '1.14') == 1
    assert moved('/resource_providers', 'DELETE', '405') == 1
    assert moved('-', 'GET', '404') == 1
    # Refused before the version was read.
    assert moved('/traits', 'GET', '401', '-') == 1
    assert moved('/traits', 'OTHER', '405') == 1
    histogram = 'placement_http_request_duration_seconds_count'
    labels = dict(route='/resource_providers', method='GET', status='200',
                  microversion='1.39')
    assert (_value(after, histogram, **labels)
            - _value(before, histogram, **labels)) == 1
    # Scrapes are not API requests.
    assert moved('-', 'GET', '200', '-') == 0


def test_capacity_by_resource_class(api):
    node = _provider(api, {
        'VCPU': {'total': 8, 'reserved': 1, 'allocation_ratio': 2.0},
        'MEMORY_MB': {'total': 1024}})
    _provider(api, {'VCPU': {'total': 4}})
    assert _allocate(api, node, {'VCPU': 3}).status_code == 204
    samples = _scrape(api)
    vcpu = {'resource_class': 'VCPU'}
    assert _value(samples, 'placement_resource_total', **vcpu) == 12
    assert _value(samples, 'placement_resource_reserved', **vcpu) == 1
    assert _value(samples, 'placement_resource_capacity', **vcpu) == 18
    assert _value(samples, 'placement_resource_used', **vcpu) == 3
    memory = {'resource_class': 'MEMORY_MB'}
    assert _value(samples, 'placement_resource_capacity', **memory) == 1024
    assert ('placement_resource_used', (('resource_class', 'MEMORY_MB'),)) \
        in samples
    assert ('placement_resource_total', (('resource_class', 'DISK_GB'),)) \
        not in samples
    assert _value(samples, 'placement_database_up') == 1


def test_scrape_with_database_down(backend, api_factory):
    api = api_factory(
        shared_engine=False,
        placement_database={'connection': DEAD_DATABASES[backend.name]},
        **ENABLED)
    samples = _scrape(api)
    assert _value(samples, 'placement_database_up') == 0
    assert not [key for key in samples
                if key[0] == 'placement_resource_total']


def test_pool_gauges(backend, api):
    before = _scrape(api)
    assert _value(before, 'placement_db_pool_size') > 0
    with backend.engine.connect():
        during = _scrape(api)
    assert (_value(during, 'placement_db_pool_checked_out')
            == _value(before, 'placement_db_pool_checked_out') + 1)
    assert (_value(_scrape(api), 'placement_db_pool_checked_out')
            == _value(before, 'placement_db_pool_checked_out'))


@pytest.mark.sqlite_only
@pytest.mark.parametrize('retries, lost, status', [(10, 2, 204), (2, 2, 409)])
def test_allocation_conflicts_and_retries(api_factory, monkeypatch, retries,
                                          lost, status):
    api = api_factory(placement={'allocation_conflict_retry_count': retries},
                      **ENABLED)
    node = _provider(api, {'VCPU': {'total': 8}})
    write = alloc_db.write
    races = iter(range(lost))

    def losing_write(*args):
        if next(races, None) is not None:
            raise exception.ConcurrentUpdate('lost a race')
        return write(*args)
    monkeypatch.setattr(alloc_db, 'write', losing_write)
    before = _scrape(api)
    assert _allocate(api, node, {'VCPU': 1}).status_code == status
    after = _scrape(api)

    def moved(name):
        return _value(after, name) - _value(before, name)
    assert moved('placement_allocation_write_conflicts_total') == lost
    # Retries stop at the configured count of attempts.
    assert moved('placement_allocation_write_retries_total') == min(
        lost, retries - 1)


def test_allocation_candidates_measured(api):
    _provider(api, {'VCPU': {'total': 8}})
    _provider(api, {'VCPU': {'total': 8}})
    before = _scrape(api)
    response = api.get('/allocation_candidates?resources=VCPU:1')
    assert len(response.json['allocation_requests']) == 2
    after = _scrape(api)

    def moved(name):
        return _value(after, name) - _value(before, name)
    assert moved('placement_allocation_candidates_returned_count') == 1
    assert moved('placement_allocation_candidates_returned_sum') == 2
    assert moved('placement_allocation_candidates_duration_seconds_count') \
        == 1


# One process of a multi-process server: serve ``requests`` requests, then
# print its pid and, if asked, a scrape.
_WORKER = textwrap.dedent('''
    import json, os, sys
    from placement import conf as placement_conf
    from placement.api import app
    from werkzeug import test
    url, requests, scrape = sys.argv[1], int(sys.argv[2]), sys.argv[3] == '1'
    conf = placement_conf.load_config(config_files=[])
    conf.set_override('auth_strategy', 'noauth2', 'api')
    conf.set_override('connection', url, 'placement_database')
    conf.set_override('enabled', True, 'metrics')
    client = test.Client(app.create_app(conf))
    for _ in range(requests):
        client.get('/resource_providers', headers={
            'X-Auth-Token': 'admin',
            'OpenStack-API-Version': 'placement 1.39'})
    text = client.get('/metrics', environ_overrides={
        'REMOTE_ADDR': '127.0.0.1'}).get_data(as_text=True) if scrape else ''
    print(json.dumps({'pid': os.getpid(), 'metrics': text}))
''')


def _worker(url, directory, requests, scrape=False):
    env = dict(os.environ, **{processes.DIRECTORY_ENV: str(directory)})
    done = subprocess.run(
        [sys.executable, '-c', _WORKER, url, str(requests),
         '1' if scrape else '0'],
        env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.sqlite_only
def test_multiprocess_directory_sums_processes(backend, tmp_path):
    first = _worker(backend.url, tmp_path, 2)
    second = _worker(backend.url, tmp_path, 3, scrape=True)
    samples = _parse(second['metrics'])
    assert _requests(samples, '/resource_providers', 'GET', '200') == 5
    # Each process's pool, summed.
    pool_size = _value(samples, 'placement_db_pool_size')
    assert pool_size > 0 and pool_size % 2 == 0
    # Gauges of processes the server reports dead (gunicorn: the
    # child_exit hook) are dropped; counters stay.
    os.environ[processes.DIRECTORY_ENV] = str(tmp_path)
    try:
        for process in (first, second):
            processes.child_exit(None, type('Worker', (), process))
    finally:
        del os.environ[processes.DIRECTORY_ENV]
    samples = _parse(_worker(backend.url, tmp_path, 0, scrape=True)[
        'metrics'])
    assert _requests(samples, '/resource_providers', 'GET', '200') == 5
    assert _value(samples, 'placement_db_pool_size') == pool_size / 2


@pytest.mark.sqlite_only
def test_no_replica_gauges_without_a_replica(backend, tmp_path):
    # In a fresh process (this one may have checked a replica already):
    # a gauge would say 0, "replica not usable", where there is none.
    samples = _parse(_worker(backend.url, tmp_path, 1, scrape=True)[
        'metrics'])
    assert _value(samples, 'placement_database_up') == 1
    assert not [name for name, _labels in samples
                if name.startswith('placement_replica_')]
