"""[placement_database] slave_connection: which requests read from the
replica, and that a replica never fails a request.

The "replica" here is a second database of the same backend that does
not replicate at all: a read that answers from it shows as missing what
was written to the primary, which is what makes routing visible. Real
standbys, replicas and Galera nodes are in tests/integration.
"""
import logging
import time
import uuid

import pytest
from test_health import DEAD_DATABASES
from test_metrics import ENABLED
from test_metrics import _provider
from test_metrics import _scrape
from test_metrics import _value

from placement.api import app as placement_app
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import standard_sync

import conftest

VCPU = {'VCPU': {'total': 8}}


@pytest.fixture
def replica_url(backend, tmp_path):
    """A migrated, empty database beside the backend's own."""
    if backend.name == 'sqlite':
        url = 'sqlite:///%s' % (tmp_path / 'replica.db')
        admin = None
    else:
        name = 'ptest_replica_' + uuid.uuid4().hex[:12]
        admin = conftest.admin_engine(backend.name)
        with admin.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
        url = db_engine.normalize_url(conftest.SERVERS[backend.name]).set(
            database=name).render_as_string(hide_password=False)
    engine = db_engine.create_engine(conftest.make_conf(url))
    migration.upgrade(engine)
    with engine.begin() as conn:
        standard_sync.sync_standard(conn)
    engine.dispose()
    yield url
    if admin is not None:
        with admin.connect() as conn:
            if backend.name == 'postgresql':
                conn.exec_driver_sql(
                    'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
            else:
                conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        admin.dispose()


def _with_replica(api_factory, url, **database):
    return api_factory(**ENABLED, placement_database=dict(
        slave_connection=url, replica_check_interval=0.1, **database))


def _until_replica_read(api, path='/resource_providers'):
    """GET ``path`` until the replica serves it (its first check runs in
    the background); its answer."""
    deadline = time.monotonic() + 10
    while True:
        before = _reads(api)
        response = api.get(path)
        if _reads(api)['replica'] > before['replica']:
            return response
        assert time.monotonic() < deadline, 'the replica was never read'
        time.sleep(0.05)


def _reads(api):
    samples = _scrape(api)
    return {server: _value(samples, 'placement_database_reads_total',
                           server=server)
            for server in ('primary', 'replica')}


def test_advice_from_the_replica_ledger_from_the_primary(
        api_factory, replica_url):
    api = _with_replica(api_factory, replica_url)
    rp = _provider(api, VCPU)
    # The replica knows nothing of rp: these answers came from it.
    assert _until_replica_read(api).json['resource_providers'] == []
    response = api.get('/allocation_candidates?resources=VCPU:1')
    assert response.status_code == 200
    assert response.json['allocation_requests'] == []
    assert api.get('/resource_classes').status_code == 200
    assert api.get('/traits').status_code == 200
    # What a client builds its next write on comes from the primary.
    before = _reads(api)
    assert api.get('/resource_providers/' + rp).status_code == 200
    inventories = api.get('/resource_providers/%s/inventories' % rp)
    assert inventories.json['inventories']['VCPU']['total'] == 8
    consumer = str(uuid.uuid4())
    assert api.put('/allocations/' + consumer, json={
        'allocations': {rp: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}).status_code == 204
    assert api.get('/allocations/' + consumer).json['allocations']
    usages = api.get('/resource_providers/%s/usages' % rp)
    assert usages.json['usages'] == {'VCPU': 2}
    assert api.get('/usages?project_id=p', version='1.9'
                   ).json['usages'] == {'VCPU': 2}
    for path in ('traits', 'aggregates', 'allocations'):
        assert api.get('/resource_providers/%s/%s' % (rp, path)
                       ).status_code == 200
    after = _reads(api)
    assert after['replica'] == before['replica']
    assert after['primary'] > before['primary']


def test_routes_can_be_widened_and_narrowed(api_factory, replica_url):
    api = _with_replica(api_factory, replica_url, replica_routes=[
        'GET /resource_providers/{uuid}/usages'])
    rp = _provider(api, VCPU)
    path = '/resource_providers/%s/usages' % rp
    # The replica has no such provider.
    assert _until_replica_read(api, path).status_code == 404
    listed = api.get('/resource_providers').json['resource_providers']
    assert [provider['uuid'] for provider in listed] == [rp]

    api = _with_replica(api_factory, replica_url, replica_routes=[])
    before = _reads(api)
    time.sleep(0.3)
    listed = api.get('/resource_providers').json['resource_providers']
    assert [provider['uuid'] for provider in listed] == [rp]
    assert _reads(api)['replica'] == before['replica']


@pytest.mark.sqlite_only
@pytest.mark.parametrize('route, problem', [
    ('PUT /traits/{name}', 'only GET requests'),
    ('GET /resource_providers/{uuid}/nothing', 'is not a request'),
    ('allocation_candidates', 'only GET requests'),
])
def test_unknown_or_writing_routes_stop_the_service(
        backend, conf_factory, route, problem):
    conf = conf_factory(placement_database={'replica_routes': [route]})
    with pytest.raises(ValueError, match=problem):
        placement_app.create_app(conf, engine=backend.engine)


def test_an_unreachable_replica_is_never_noticed(backend, api_factory):
    api = _with_replica(api_factory, DEAD_DATABASES[backend.name])
    rp = _provider(api, VCPU)
    for _ in range(5):
        listed = api.get('/resource_providers').json['resource_providers']
        assert [provider['uuid'] for provider in listed] == [rp]
        response = api.get('/allocation_candidates?resources=VCPU:1')
        assert len(response.json['allocation_requests']) == 1
        time.sleep(0.1)
    samples = _scrape(api)
    assert samples[('placement_replica_usable', ())] == 0


def test_the_health_check_tells_whether_reads_go_to_the_replica(
        backend, api_factory, replica_url):
    def checked(api):
        """The health answer once the replica's first check is in."""
        deadline = time.monotonic() + 10
        while True:
            response = api.get('/healthcheck', token=None, version=None)
            if response.json['replica'] != 'not checked yet':
                return response
            assert time.monotonic() < deadline
            time.sleep(0.05)

    response = checked(_with_replica(api_factory, replica_url))
    assert response.status_code == 200
    assert response.json == {'status': 'ok', 'database': 'ok',
                             'replica': 'ok'}
    response = checked(_with_replica(api_factory,
                                     DEAD_DATABASES[backend.name]))
    # The primary serves every read meanwhile: the service is healthy.
    assert response.status_code == 200
    assert response.json['status'] == 'ok'
    assert response.json['replica'].startswith('check failed')


def test_a_read_the_replica_fails_is_read_from_the_primary(
        backend, api_factory, tmp_path, caplog):
    # A server that answers the lag check but has no placement tables.
    if backend.name == 'sqlite':
        url = 'sqlite:///%s' % (tmp_path / 'bare.db')
    else:
        url = db_engine.normalize_url(conftest.SERVERS[backend.name]).set(
            database='mysql' if backend.name == 'mysql' else 'postgres'
        ).render_as_string(hide_password=False)
    api = _with_replica(api_factory, url)
    rp = _provider(api, VCPU)
    caplog.set_level(logging.WARNING, logger='placement.db.replica')
    deadline = time.monotonic() + 10
    while not any('Read from the replica failed' in record.message
                  for record in caplog.records):
        assert time.monotonic() < deadline, 'the replica was never tried'
        listed = api.get('/resource_providers')
        assert listed.status_code == 200
        assert [p['uuid'] for p in listed.json['resource_providers']] == [rp]
        time.sleep(0.05)
