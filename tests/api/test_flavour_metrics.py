"""[metrics] capacity_flavours and aggregate_names_file: the headroom of
named flavours under os-capacity's names and labels, per aggregate, and
the capacity stranded where none fits; what GET /x-capacity/flavours
answers, read once per scrape interval.
"""
import re
import time
import uuid

from prometheus_client import parser
import pytest
from test_capacity_metrics import _counting
from test_capacity_metrics import _selects
from test_metrics import _scrape
from test_metrics import _value

from placement.api.operations import aggregate_names

import api_cloud

FLAVOURS = {
    'm1.small': 'resources=VCPU:1,MEMORY_MB:2048',
    'm1.large': 'resources=VCPU:8,MEMORY_MB:16384',
    'g1.gpu': 'resources=VCPU:2,MEMORY_MB:4096&required=CUSTOM_GPU',
}
OS_CAPACITY_TOTAL = 'openstack_free_capacity_by_flavor_total'
OS_CAPACITY_HOST = 'openstack_free_capacity_hypervisor_by_flavor'
AGGREGATE_FIT = 'placement_capacity_aggregate_fit'
STRANDED = 'placement_capacity_stranded'
STRANDED_HOSTS = 'placement_capacity_stranded_hosts'
SERIES = (OS_CAPACITY_TOTAL, OS_CAPACITY_HOST, AGGREGATE_FIT, STRANDED,
          STRANDED_HOSTS)


@pytest.fixture
def statements(backend):
    counted, stop = _counting(backend.engine)
    yield counted
    stop()


@pytest.fixture
def flavours_file(tmp_path):
    path = tmp_path / 'flavours'
    path.write_text('# name query\n' + ''.join(
        '%s %s\n' % item for item in FLAVOURS.items()))
    return path


def _api(api_factory, flavours_file, names=('m1.small', 'm1.large'),
         names_file=None, cache_seconds=5.0):
    metrics = {'enabled': True, 'capacity_flavours': list(names),
               'capacity_cache_seconds': cache_seconds}
    if names_file is not None:
        metrics['aggregate_names_file'] = str(names_file)
    return api_factory(metrics=metrics,
                       capacity={'flavours_file': str(flavours_file)})


def _cloud(api):
    """Four hosts: two in az1 (one also in the gold project aggregate),
    one in az2 and gold, one in no aggregate; one full of VCPU with
    memory left (stranded)."""
    cloud = api_cloud.Cloud(api)
    host = {'VCPU': {'total': 8, 'allocation_ratio': 2.0},
            'MEMORY_MB': {'total': 32768, 'reserved': 512}}
    cloud.provider('cn1', inventory=host, aggregates=['az1'])
    cloud.provider('cn2', inventory=host, aggregates=['az1', 'gold'])
    cloud.provider('cn3', inventory=host, aggregates=['az2', 'gold'],
                   traits=['CUSTOM_GPU'])
    cloud.provider('cn4', inventory=host)
    cloud.allocate('vm1', {'cn1': {'VCPU': 16, 'MEMORY_MB': 4096}})
    cloud.allocate('vm2', {'cn2': {'VCPU': 3, 'MEMORY_MB': 20000}})
    return cloud


def _names_file(tmp_path, cloud):
    path = tmp_path / 'aggregates'
    path.write_text(
        '# uuid name metadata\n'
        '%s zone-one availability_zone=az1\n'
        '%s "gold hosts" filter_tenant_id=p1 filter_tenant_id2=p2\n'
        '%s zone-two availability_zone=az2  # comment\n'
        % (cloud.uuids['az1'], cloud.uuids['gold'], cloud.uuids['az2']))
    return path


def _answer(api, names):
    response = api.get('/x-capacity/flavours?hosts=1000&names='
                       + ','.join(names))
    assert response.status_code == 200, response.json
    return response.json


def _series(samples, name):
    return {labels: value for (metric, labels), value in samples.items()
            if metric == name}


def test_series_are_the_capacity_answer(api_factory, flavours_file,
                                        tmp_path):
    api = _api(api_factory, flavours_file)
    cloud = _cloud(api)
    api = _api(api_factory, flavours_file,
               names_file=_names_file(tmp_path, cloud))
    samples = _scrape(api)
    answer = _answer(api, ['m1.small', 'm1.large'])

    assert _series(samples, OS_CAPACITY_TOTAL) == {
        (('flavor_name', flavour['name']),): flavour['fit']
        for flavour in answer['flavours']}
    # As os-capacity labels hosts from Nova's aggregates; hosts where
    # none fits have no series.
    labels = {'cn1': ('az1', ''), 'cn2': ('az1', 'gold hosts'),
              'cn3': ('az2', 'gold hosts'), 'cn4': ('', '')}
    expected = {}
    for flavour in answer['flavours']:
        for host in flavour['hosts']:
            zone, project = labels[host['name']]
            expected[tuple(sorted({
                'hypervisor': host['name'], 'flavor_name': flavour['name'],
                'az_aggregate': zone, 'project_aggregate': project,
            }.items()))] = host['fit']
    assert _series(samples, OS_CAPACITY_HOST) == expected
    assert ('cn1', 'm1.large') not in {
        (dict(k)['hypervisor'], dict(k)['flavor_name']) for k in expected}

    named = {cloud.uuids['az1']: 'zone-one', cloud.uuids['az2']: 'zone-two',
             cloud.uuids['gold']: 'gold hosts'}
    assert _series(samples, AGGREGATE_FIT) == {
        tuple(sorted({'aggregate': aggregate['uuid'],
                      'aggregate_name': named[aggregate['uuid']],
                      'flavor_name': flavour['name']}.items())):
        aggregate['fit']
        for flavour in answer['flavours']
        for aggregate in flavour['aggregates']}

    assert _series(samples, STRANDED) == {
        (('resource_class', row['resource_class']),): row['free']
        for row in answer['stranded']}
    assert _series(samples, STRANDED_HOSTS) == {
        (('resource_class', row['resource_class']),): row['hosts']
        for row in answer['stranded']}
    # cn1's VCPU is all used: its memory is stranded.
    assert _value(samples, STRANDED, resource_class='MEMORY_MB') == (
        32768 - 512 - 4096)
    assert _value(samples, STRANDED_HOSTS, resource_class='MEMORY_MB') == 1


def test_os_capacity_names_types_and_help(api_factory, flavours_file):
    api = _api(api_factory, flavours_file)
    _cloud(api)
    response = api.get('/metrics', token=None, version=None,
                       environ_overrides={'REMOTE_ADDR': '127.0.0.1'})
    families = {family.name: family for family in
                parser.text_string_to_metric_families(response.text)}
    total = families[OS_CAPACITY_TOTAL]
    assert total.type == 'gauge'
    assert total.documentation == (
        'Free capacity if you fill the cloud full of each flavor')
    assert {tuple(sample.labels) for sample in total.samples} == {
        ('flavor_name',)}
    host = families[OS_CAPACITY_HOST]
    assert host.type == 'gauge'
    assert host.documentation == (
        'Free capacity for each hypervisor if you fill remaining space '
        'full of each flavor')
    assert {tuple(sorted(sample.labels)) for sample in host.samples} == {
        ('az_aggregate', 'flavor_name', 'hypervisor', 'project_aggregate')}
    # Without a names file: aggregates by uuid, hosts without zone or
    # project aggregate.
    assert {sample.labels['az_aggregate'] for sample in host.samples} == {''}
    fits = families[AGGREGATE_FIT].samples
    assert fits and all(sample.labels['aggregate_name']
                        == sample.labels['aggregate'] for sample in fits)


def test_only_the_flavours_named(api_factory, flavours_file):
    api = _api(api_factory, flavours_file, names=['g1.gpu'])
    _cloud(api)
    samples = _scrape(api)
    assert _series(samples, OS_CAPACITY_TOTAL) == {
        (('flavor_name', 'g1.gpu'),): _answer(
            api, ['g1.gpu'])['flavours'][0]['fit']}
    assert {dict(labels)['hypervisor'] for labels in
            _series(samples, OS_CAPACITY_HOST)} == {'cn3'}


def test_off_by_default(api_factory, flavours_file):
    api = api_factory(metrics={'enabled': True},
                      capacity={'flavours_file': str(flavours_file)})
    _cloud(api)
    samples = _scrape(api)
    assert not {name for name, _labels in samples if name in SERIES}


@pytest.mark.sqlite_only
@pytest.mark.parametrize('capacity, message', [
    ({}, 'needs [capacity] flavours_file'),
    ({'flavours_file': '/nonexistent-placement-dir/f'},
     'No such file or directory'),
    (None, 'no flavour m1.tiny in'),
])
def test_a_bad_flavour_stops_the_start(api_factory, flavours_file,
                                       capacity, message):
    if capacity is None:
        capacity = {'flavours_file': str(flavours_file)}
    with pytest.raises(ValueError, match=re.escape(message)):
        api_factory(metrics={'enabled': True,
                             'capacity_flavours': ['m1.small', 'm1.tiny']},
                    capacity=capacity)


@pytest.mark.sqlite_only
def test_a_refused_query_stops_the_start(api_factory, tmp_path):
    path = tmp_path / 'flavours'
    path.write_text('bad resources=VCPU:x\n')
    with pytest.raises(ValueError,
                       match=re.escape('capacity_flavours: Flavour bad: ')):
        _api(api_factory, path, names=['bad'])


@pytest.mark.sqlite_only
def test_an_unknown_trait_leaves_the_other_series(api_factory, tmp_path):
    path = tmp_path / 'flavours'
    path.write_text('odd resources=VCPU:1&required=CUSTOM_NOT_YET\n')
    api = _api(api_factory, path, names=['odd'])
    _cloud(api)
    samples = _scrape(api)
    assert not {name for name, _labels in samples if name in SERIES}
    assert _value(samples, 'placement_database_up') == 1
    assert _value(samples, 'placement_resource_total',
                  resource_class='VCPU') == 32


@pytest.mark.sqlite_only
def test_names_file_read_again_when_changed(api_factory, flavours_file,
                                            tmp_path):
    api = _api(api_factory, flavours_file)
    cloud = _cloud(api)
    names = _names_file(tmp_path, cloud)
    api = _api(api_factory, flavours_file, names_file=names,
               cache_seconds=0)

    def zones():
        return {dict(labels)['az_aggregate'] for labels in
                _series(_scrape(api), OS_CAPACITY_HOST)}
    assert zones() == {'az1', 'az2', ''}
    names.write_text(names.read_text().replace('=az2', '=az-two'))
    assert zones() == {'az1', 'az-two', ''}
    # A bad change: the names read before stay.
    names.write_text('not-a-uuid name\n')
    assert zones() == {'az1', 'az-two', ''}


@pytest.mark.sqlite_only
def test_bad_names_file_stops_the_start(api_factory, flavours_file,
                                        tmp_path):
    names = tmp_path / 'aggregates'
    names.write_text('%s\n' % uuid.uuid4())
    with pytest.raises(ValueError, match='line 1: expected "uuid name'):
        _api(api_factory, flavours_file, names_file=names)


@pytest.mark.sqlite_only
def test_one_read_per_cache_time(api_factory, flavours_file, statements):
    api = _api(api_factory, flavours_file, cache_seconds=1.0)
    cloud = _cloud(api)
    before = len(statements)
    first = _scrape(api)
    assert len(statements) > before
    cloud.allocate('vm3', {'cn4': {'VCPU': 16}})
    before = len(statements)
    second = _scrape(api)
    assert len(statements) == before
    for name in SERIES:
        assert _series(second, name) == _series(first, name)
    time.sleep(1.1)
    third = _scrape(api)
    assert len(statements) > before
    assert _value(third, OS_CAPACITY_TOTAL, flavor_name='m1.small') < (
        _value(first, OS_CAPACITY_TOTAL, flavor_name='m1.small'))


def test_statements_per_scrape_whatever_the_hosts(api_factory,
                                                  flavours_file, statements,
                                                  tmp_path):
    api = _api(api_factory, flavours_file)
    cloud = _cloud(api)
    api = _api(api_factory, flavours_file, cache_seconds=0,
               names_file=_names_file(tmp_path, cloud))

    def cost():
        before = len(statements)
        _scrape(api)
        return len(_selects(statements[before:]))
    few = cost()
    for number in range(20):
        cloud.provider('more%d' % number, inventory={
            'VCPU': 8, 'MEMORY_MB': 8192}, aggregates=['az1'])
        cloud.allocate('more-vm%d' % number,
                       {'more%d' % number: {'VCPU': 1}})
    assert cost() == few


@pytest.mark.parametrize('text, message', [
    ('%s' % uuid.UUID(int=1), 'line 1: expected "uuid name'),
    ('x name', "line 1: 'x' is not a uuid"),
    ('%s name zone' % uuid.UUID(int=1), "line 1: 'zone' is not key=value"),
    ('%s "name' % uuid.UUID(int=1), 'line 1: No closing quotation'),
    ('%s a\n%s b' % (uuid.UUID(int=1), uuid.UUID(int=1)),
     'line 2: aggregate 00000000-0000-0000-0000-000000000001 named twice'),
])
@pytest.mark.sqlite_only
def test_names_file_refusals(text, message):
    with pytest.raises(ValueError, match='^' + re.escape('names ' + message)):
        aggregate_names.parse(text, 'names')


@pytest.mark.sqlite_only
def test_names_file_lines():
    first, second = uuid.UUID(int=1), uuid.UUID(int=2)
    assert aggregate_names.parse(
        '\n# comment\n%s rack1 availability_zone=az1 other=x\n'
        '%s "gold hosts" filter_tenant_id3=p  # isolation\n'
        % (str(first).upper(), second), 'names') == {
            str(first): aggregate_names.Aggregate('rack1', 'az1', False),
            str(second): aggregate_names.Aggregate('gold hosts', '', True)}
