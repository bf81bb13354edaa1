"""GET and POST /x-capacity/allocation_candidates and GET
/x-capacity/flavours (an extension): the answer's numbers on a known
cloud and its refusals. How the counts compare with placing instances
through the API: test_capacity_oracle.
"""
import jsonschema
import pytest

from placement.candidates import capacity
from placement.schemas import capacity as schema

import api_cloud
import error_text

PATH = '/x-capacity/allocation_candidates'
FLAVOURS = '/x-capacity/flavours'
SMALL = 'resources=VCPU:1,MEMORY_MB:1024'


@pytest.fixture
def cloud(api):
    """Two flat hosts and a NUMA host in aggregate A; two diskless hosts
    in B served by a shared disk."""
    cloud = api_cloud.Cloud(api)
    cloud.provider('flat-1', inventory={
        'VCPU': 8, 'MEMORY_MB': {'total': 8192, 'reserved': 1024},
        'DISK_GB': 100}, aggregates=['A'])
    cloud.allocate('vm-1', {'flat-1': {'MEMORY_MB': 5120}})
    cloud.provider('flat-2', inventory={
        'VCPU': {'total': 2, 'allocation_ratio': 2.0}, 'MEMORY_MB': 16384,
        'DISK_GB': 100}, aggregates=['A'], traits=['HW_CPU_X86_AVX2'])
    cloud.provider('numa', inventory={'DISK_GB': 50}, aggregates=['A'])
    for node in ('numa-0', 'numa-1'):
        cloud.provider(node, parent='numa', inventory={
            'VCPU': 2, 'MEMORY_MB': 2048})
    for host in ('diskless-1', 'diskless-2'):
        cloud.provider(host, inventory={'VCPU': 4, 'MEMORY_MB': 4096},
                       aggregates=['B'])
    cloud.provider('shared-disk', inventory={'DISK_GB': 30},
                   traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=['B'])
    return cloud


def _answer(api, query, status=200, **kwargs):
    response = api.get(PATH + '?' + query, **kwargs)
    assert response.status_code == status, response.json
    return response.json


def _hosts(cloud, flavour):
    names = {uuid: name for name, uuid in cloud.uuids.items()}
    return {names[host['uuid']]: (host['fit'], host['limited_by'],
                                  host['method'])
            for host in flavour['hosts']}


def test_one_flavour(api, cloud):
    body = _answer(api, SMALL + ',DISK_GB:10', version=None)
    jsonschema.validate(body, schema.ANSWER.schema)
    assert body['microversion'] == '1.39'
    [flavour] = body['flavours']
    # flat-1: 2048 MB free; flat-2: 4 VCPU; numa: its disk (5 x 10 GB)
    # and 4 VCPU over two nodes; the diskless hosts: three of the shared
    # 30 GB, placed on the one with the most room first.
    assert _hosts(cloud, flavour) == {
        'flat-1': (2, 'MEMORY_MB', 'exact'),
        'flat-2': (4, 'VCPU', 'exact'),
        'numa': (4, 'VCPU', 'exact'),
        'diskless-1': (2, 'DISK_GB', 'placed one by one'),
        'diskless-2': (1, 'DISK_GB', 'placed one by one'),
    }
    assert flavour['fit'] == 13
    assert flavour['hosts_with_room'] == 5
    assert flavour['limited_by'] == 'VCPU'
    assert flavour['method'] == 'placed one by one'
    assert flavour['name'] == ''
    assert flavour['query'] == 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10'
    assert {agg['uuid']: agg['fit'] for agg in flavour['aggregates']} == {
        cloud.uuids['A']: 10, cloud.uuids['B']: 3}


def test_hosts_listed_most_room_first(api, cloud):
    [flavour] = _answer(api, SMALL + '&hosts=2')['flavours']
    assert [host['fit'] for host in flavour['hosts']] == [4, 4]
    assert flavour['hosts_with_room'] == 5
    [flavour] = _answer(api, SMALL + '&hosts=0')['flavours']
    assert flavour['hosts'] == [] and flavour['fit'] == 18


def test_traits_and_aggregates_as_candidates(api, cloud):
    [flavour] = _answer(api, SMALL + '&required=HW_CPU_X86_AVX2')['flavours']
    assert _hosts(cloud, flavour) == {'flat-2': (4, 'VCPU', 'exact')}
    [flavour] = _answer(api, SMALL + '&member_of=%s'
                        % cloud.uuids['B'])['flavours']
    assert flavour['fit'] == 8


def test_tied_groups(api, cloud):
    """Two groups of one VCPU each on separate NUMA nodes take the same
    whichever way round: counted exactly. One and two VCPUs do not:
    placed one by one (after the first, 1 and 0 are left)."""
    [flavour] = _answer(api, 'resources1=VCPU:1&resources2=VCPU:1'
                        '&group_policy=isolate')['flavours']
    assert _hosts(cloud, flavour) == {'numa': (2, 'VCPU', 'exact')}
    [flavour] = _answer(api, 'resources1=VCPU:1&resources2=VCPU:2'
                        '&group_policy=none&hosts=10')['flavours']
    assert _hosts(cloud, flavour)['numa'] == (1, 'VCPU', 'placed one by one')
    assert _hosts(cloud, flavour)['flat-1'] == (2, 'VCPU', 'exact')
    assert flavour['method'] == 'placed one by one'


def test_stranded_usage_and_fullest(api, cloud):
    body = _answer(api, 'resources=VCPU:1,MEMORY_MB:1024&required='
                   'HW_CPU_X86_AVX2')
    stranded = {item['resource_class']: (item['free'], item['hosts'])
                for item in body['stranded']}
    # Every host but flat-2: flat-1 2048 MB and 8 VCPU, numa 4096 and 4,
    # the diskless ones 4096 and 4 each.
    assert stranded == {'MEMORY_MB': (14336, 4), 'VCPU': (20, 4)}
    usage = {item['resource_class']: item for item in body['usage']}
    assert (usage['MEMORY_MB']['capacity'], usage['MEMORY_MB']['used']) == (
        7168 + 16384 + 4096 + 4096 + 4096, 5120)
    assert {agg['uuid']: agg['used']
            for agg in usage['MEMORY_MB']['aggregates']} == {
        cloud.uuids['A']: 5120, cloud.uuids['B']: 0}
    assert body['fullest_hosts'][0] == {
        'uuid': cloud.uuids['flat-1'], 'name': 'flat-1',
        'resource_class': 'MEMORY_MB', 'capacity': 7168, 'used': 5120}


def test_several_named_flavours(api, cloud):
    body = api.post(PATH, json={'flavours': {
        'small': SMALL, 'big': 'resources=VCPU:4,MEMORY_MB:4096'},
        'hosts': 1}).json
    assert [(f['name'], f['fit'], len(f['hosts']))
            for f in body['flavours']] == [('small', 18, 1), ('big', 3, 1)]


@pytest.mark.parametrize('trees', [1, 2, 3])
def test_the_same_answer_a_few_trees_a_batch(api, cloud, monkeypatch, trees):
    """Hosts are counted a batch of trees at a time, those the shared
    disk serves with it: every number is the same whatever the batch."""
    body = {'flavours': {
        'small': SMALL + ',DISK_GB:10', 'avx2': SMALL + '&required='
        'HW_CPU_X86_AVX2', 'numa': 'resources1=VCPU:1&resources2=VCPU:1'
        '&group_policy=isolate', 'not_b': SMALL + '&member_of=!'
        + cloud.uuids['B']}, 'hosts': 2}
    whole = api.post(PATH, json=body).json
    monkeypatch.setattr(capacity, 'TREES_A_READ', trees)
    assert api.post(PATH, json=body).json == whole


def test_configured_flavours(api_factory, cloud, tmp_path):
    flavours = tmp_path / 'flavours'
    flavours.write_text('# name and query string\n'
                        'small  %s\n\nbig resources=VCPU:4\n' % SMALL)
    api = api_factory(capacity={'flavours_file': str(flavours)})
    body = api.get(FLAVOURS).json
    assert [(f['name'], f['fit']) for f in body['flavours']] == [
        ('small', 18), ('big', 5)]
    body = api.get(FLAVOURS + '?names=big').json
    assert [f['name'] for f in body['flavours']] == ['big']
    response = api.get(FLAVOURS + '?names=big,huge')
    assert response.status_code == 404
    assert error_text.reason(response) == (
        'No flavour named huge in [capacity] flavours_file.')


def test_no_flavours_file(api):
    assert api.get(FLAVOURS).json['flavours'] == []
    assert api.get(FLAVOURS + '?names=small').status_code == 404


@pytest.mark.parametrize('query', [
    'resources=VCPU:x',
    'resources=VCPU:1&bogus=1',
    'resources=CUSTOM_NOPE:1',
    'resources=VCPU:1&required=CUSTOM_NOPE',
    'resources1=VCPU:1&resources2=VCPU:1',
    'limit=1',
])
def test_bad_query_strings_as_the_endpoint(api, query):
    real = api.get('/allocation_candidates?' + query)
    assert real.status_code == 400
    response = api.get(PATH + '?' + query)
    assert response.status_code == 400
    assert error_text.raw_detail(response) == error_text.raw_detail(real)


def test_named_flavour_refusals_name_it(api, cloud):
    for query in ('resources=VCPU:x', 'resources=CUSTOM_NOPE:1'):
        real = api.get('/allocation_candidates?' + query)
        response = api.post(PATH, json={'flavours': {'odd': query}})
        assert response.status_code == 400
        assert error_text.reason(response) == (
            'Flavour odd: ' + error_text.reason(real))


@pytest.mark.parametrize('request_args, message', [
    (('GET', PATH + '?' + SMALL + '&hosts=1001', None),
     'hosts=1001: an answer lists at most 1000 hosts per flavour '
     '([capacity] max_hosts_listed).'),
    (('POST', PATH, {'flavours': {str(n): SMALL for n in range(51)}}),
     '51 flavours asked for: at most 50 may be asked in one request '
     '([capacity] max_flavours).'),
    (('GET', PATH + '?' + SMALL + '&hosts=many', None),
     "Invalid query string parameters: 'hosts' must be a whole number, "
     "not 'many'."),
])
def test_limits(api, request_args, message):
    method, path, body = request_args
    response = api.request(method, path, json=body)
    assert response.status_code == 400
    assert error_text.reason(response) == message


@pytest.mark.parametrize('body', [
    {}, {'flavours': {}}, {'flavours': {'a': 1}}, {'flavours': 'x'},
    {'flavours': {'a': SMALL}, 'hosts': -1},
    {'flavours': {'a': SMALL}, 'other': 1},
])
def test_bad_bodies(api, body):
    response = api.post(PATH, json=body)
    assert response.status_code == 400
    error_text.error(response)


@pytest.mark.parametrize('method, path', [
    ('GET', PATH + '?' + SMALL), ('POST', PATH), ('GET', FLAVOURS)])
def test_admin_only(api, method, path):
    response = api.request(method, path, json={'flavours': {'a': SMALL}},
                           token='user:project')
    assert response.status_code == 403
    assert error_text.reason(response) == (
        'Policy does not allow placement:x-capacity to be performed.')
