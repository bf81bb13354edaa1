"""[metrics] provider_metrics, aggregate_metrics, capacity_cache_seconds:
capacity per provider (openstack-exporter's names) and per aggregate,
read in a fixed number of statements and reused for a while.
"""
from concurrent import futures
import time
import uuid

import pytest
from sqlalchemy import event
from test_health import DEAD_DATABASES
from test_metrics import _allocate
from test_metrics import _scrape
from test_metrics import _value

from placement.db import capacity_metrics

EXPORTER = ('openstack_placement_resource_total',
            'openstack_placement_resource_reserved',
            'openstack_placement_resource_allocation_ratio',
            'openstack_placement_resource_generation',
            'openstack_placement_resource_usage',
            'openstack_placement_up')
AGGREGATE = ('placement_aggregate_resource_capacity',
             'placement_aggregate_resource_used')


def _api(api_factory, providers=True, aggregates=True, cache_seconds=5.0):
    return api_factory(metrics={
        'enabled': True, 'provider_metrics': providers,
        'aggregate_metrics': aggregates,
        'capacity_cache_seconds': cache_seconds})


def _provider(api, name, inventories, aggregates=()):
    provider = str(uuid.uuid4())
    assert api.post('/resource_providers', json={
        'name': name, 'uuid': provider}).status_code == 200
    assert api.put('/resource_providers/%s/inventories' % provider, json={
        'resource_provider_generation': 0,
        'inventories': inventories}).status_code == 200
    if aggregates:
        assert api.put('/resource_providers/%s/aggregates' % provider, json={
            'resource_provider_generation': 1,
            'aggregates': list(aggregates)}).status_code == 200
    return provider


def _cloud(api):
    """Three providers in two overlapping aggregates, some allocated:
    {name: uuid}, [aggregate uuids]."""
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    providers = {
        'cn1': _provider(api, 'cn1', {
            'VCPU': {'total': 8, 'reserved': 1, 'allocation_ratio': 4.0},
            'MEMORY_MB': {'total': 4096, 'reserved': 512,
                          'allocation_ratio': 1.5}}, [first]),
        'cn2': _provider(api, 'cn2', {
            'VCPU': {'total': 16},
            'DISK_GB': {'total': 100, 'reserved': 10}}, [first, second]),
        'cn3': _provider(api, 'cn3', {'VCPU': {'total': 4}}, [second]),
    }
    assert _allocate(api, providers['cn1'], {
        'VCPU': 3, 'MEMORY_MB': 1024}).status_code == 204
    assert _allocate(api, providers['cn1'], {'VCPU': 2}).status_code == 204
    assert _allocate(api, providers['cn2'], {
        'VCPU': 5, 'DISK_GB': 20}).status_code == 204
    return providers, [first, second]


def _names(samples, names):
    return {name for name, _labels in samples if name in names}


def _counting(engine):
    """A list that grows by one statement for each statement ``engine``
    runs (until the test ends)."""
    statements = []

    def count(_conn, _cursor, statement, *_args):
        statements.append(statement)
    event.listen(engine, 'before_cursor_execute', count)
    return statements, lambda: event.remove(
        engine, 'before_cursor_execute', count)


def _selects(statements):
    """Those that read (SQLite's BEGIN and the like left out)."""
    return [statement for statement in statements
            if statement.split(None, 1)[0].upper() == 'SELECT']


@pytest.fixture
def statements(backend):
    counted, stop = _counting(backend.engine)
    yield counted
    stop()


def test_provider_series_are_what_the_api_reports(api_factory):
    api = _api(api_factory)
    providers, _aggregates = _cloud(api)
    samples = _scrape(api)
    assert _value(samples, 'openstack_placement_up') == 1
    expected = set()
    for name, provider in providers.items():
        inventories = api.get(
            '/resource_providers/%s/inventories' % provider).json
        usages = api.get('/resource_providers/%s/usages' % provider).json
        generation = inventories['resource_provider_generation']
        for rc, inventory in inventories['inventories'].items():
            labels = {'hostname': name, 'resourcetype': rc}
            expected.add(tuple(sorted(labels.items())))
            for field in ('total', 'reserved', 'allocation_ratio'):
                assert _value(samples, 'openstack_placement_resource_'
                              + field, **labels) == inventory[field]
            assert _value(samples, 'openstack_placement_resource_usage',
                          **labels) == usages['usages'][rc]
            assert _value(samples, 'openstack_placement_resource_generation',
                          **labels) == generation
        # Every class with inventory has a usage, zero if unallocated.
        assert set(usages['usages']) == set(inventories['inventories'])
    for metric in EXPORTER[:-1]:
        assert {labels for name, labels in samples
                if name == metric} == expected


def test_aggregate_series_are_sums_over_members(api_factory):
    api = _api(api_factory)
    _providers, aggregates = _cloud(api)
    samples = _scrape(api)
    seen = set()
    for aggregate in aggregates:
        members = api.get('/resource_providers?member_of=' + aggregate).json
        capacity, used = {}, {}
        for member in members['resource_providers']:
            inventories = api.get('/resource_providers/%s/inventories'
                                  % member['uuid']).json['inventories']
            usages = api.get('/resource_providers/%s/usages'
                             % member['uuid']).json['usages']
            for rc, inventory in inventories.items():
                capacity[rc] = capacity.get(rc, 0) + (
                    inventory['total'] - inventory['reserved']
                ) * inventory['allocation_ratio']
                used[rc] = used.get(rc, 0) + usages[rc]
        for rc in capacity:
            labels = {'aggregate': aggregate, 'resource_class': rc}
            seen.add(tuple(sorted(labels.items())))
            assert _value(samples, 'placement_aggregate_resource_capacity',
                          **labels) == pytest.approx(capacity[rc])
            assert _value(samples, 'placement_aggregate_resource_used',
                          **labels) == used[rc]
    for metric in AGGREGATE:
        assert {labels for name, labels in samples
                if name == metric} == seen
    # cn2 is in both aggregates: counted in each.
    vcpu = {'resource_class': 'VCPU'}
    assert _value(samples, 'placement_aggregate_resource_capacity',
                  aggregate=aggregates[0], **vcpu) == 7 * 4.0 + 16
    assert _value(samples, 'placement_aggregate_resource_capacity',
                  aggregate=aggregates[1], **vcpu) == 16 + 4


def test_off_by_default(api_factory):
    api = api_factory(metrics={'enabled': True})
    _cloud(api)
    samples = _scrape(api)
    assert not _names(samples, EXPORTER + AGGREGATE)
    assert _value(samples, 'placement_resource_total',
                  resource_class='VCPU') == 28


@pytest.mark.sqlite_only
@pytest.mark.parametrize('providers, aggregates', [(True, False),
                                                   (False, True)])
def test_each_option_alone(api_factory, providers, aggregates):
    api = _api(api_factory, providers=providers, aggregates=aggregates)
    _cloud(api)
    samples = _scrape(api)
    assert bool(_names(samples, EXPORTER)) is providers
    assert bool(_names(samples, AGGREGATE)) is aggregates


@pytest.mark.sqlite_only
def test_scrapes_within_the_cache_time_do_not_read(api_factory, statements):
    api = _api(api_factory, cache_seconds=1.0)
    providers, _aggregates = _cloud(api)
    before = len(statements)
    first = _scrape(api)
    assert len(statements) > before
    assert _allocate(api, providers['cn3'], {'VCPU': 1}).status_code == 204
    before = len(statements)
    second = _scrape(api)
    assert len(statements) == before
    # What the first scrape read, also the per resource class series.
    for name in ('openstack_placement_resource_usage',
                 'placement_resource_used'):
        assert ({k: v for k, v in second.items() if k[0] == name}
                == {k: v for k, v in first.items() if k[0] == name})
    time.sleep(1.1)
    third = _scrape(api)
    assert len(statements) > before
    assert _value(third, 'openstack_placement_resource_usage',
                  hostname='cn3', resourcetype='VCPU') == 1


@pytest.mark.sqlite_only
def test_concurrent_scrapes_share_one_read(api_factory, statements,
                                           monkeypatch):
    api = _api(api_factory)
    _cloud(api)
    by_class = capacity_metrics.by_resource_class

    def slow(conn):
        time.sleep(0.3)
        return by_class(conn)
    monkeypatch.setattr(capacity_metrics, 'by_resource_class', slow)
    before = len(statements)
    with futures.ThreadPoolExecutor(4) as pool:
        scrapes = list(pool.map(lambda _: _scrape(api), range(4)))
    assert len(_selects(statements[before:])) == 3
    capacity = [{key: value for key, value in scrape.items()
                 if key[0] in EXPORTER + AGGREGATE} for scrape in scrapes]
    assert capacity[0] and all(c == capacity[0] for c in capacity)


@pytest.mark.sqlite_only
def test_zero_cache_seconds_reads_every_scrape(api_factory, statements):
    api = _api(api_factory, cache_seconds=0)
    _scrape(api)
    before = len(statements)
    _scrape(api)
    assert len(statements) > before


def test_statements_per_scrape_whatever_the_providers(api_factory,
                                                      statements):
    api = _api(api_factory, cache_seconds=0)

    def cost():
        before = len(statements)
        _scrape(api)
        return len(_selects(statements[before:]))
    _cloud(api)
    few = cost()
    aggregate = str(uuid.uuid4())
    for number in range(10):
        provider = _provider(api, 'more%d' % number, {
            'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024}}, [aggregate])
        assert _allocate(api, provider, {'VCPU': 1}).status_code == 204
    # Per class, per provider, per aggregate: one SELECT each (SQLite
    # also has its BEGIN).
    assert few == cost() == 3


def test_database_down_reports_not_up(backend, api_factory):
    api = api_factory(
        shared_engine=False,
        placement_database={'connection': DEAD_DATABASES[backend.name]},
        metrics={'enabled': True, 'provider_metrics': True,
                 'aggregate_metrics': True})
    samples = _scrape(api)
    assert _value(samples, 'openstack_placement_up') == 0
    assert _value(samples, 'placement_database_up') == 0
    assert _names(samples, EXPORTER) == {'openstack_placement_up'}
    assert not _names(samples, AGGREGATE)
