"""GET /allocation_candidates through the WSGI app: the response shapes
per microversion and the [placement] options that shape generation.
"""
import gc

import pytest
import sqlalchemy as sa

from placement.candidates import narrowing as planner
from placement.db import inventory as inv_db
from placement.db import tables

import api_cloud
import error_text
import sql_rows


@pytest.fixture
def computes(backend):
    """Three providers with VCPU, the first with one VCPU in use."""
    providers = []
    with backend.engine.begin() as conn:
        for _ in range(3):
            rp = sql_rows.provider(conn)
            inv_db.replace_all(conn, rp, {
                'VCPU': inv_db.with_defaults({'total': 4})}, 0)
            providers.append(rp)
        sql_rows.allocate(conn, providers[0]['id'], {'VCPU': 1})
    return [rp['uuid'] for rp in providers]


def _get(api, query='resources=VCPU:1', version='1.39'):
    response = api.get('/allocation_candidates?' + query, version=version)
    assert response.status_code == 200, response.json
    return response


def test_not_before_1_10(api):
    assert api.get('/allocation_candidates?resources=VCPU:1',
                   version='1.9').status_code == 404


@pytest.mark.parametrize('version, request_keys, summary_keys', [
    ('1.10', {'allocations'}, {'resources'}),
    ('1.17', {'allocations'}, {'resources', 'traits'}),
    ('1.29', {'allocations'}, {'resources', 'traits',
                               'parent_provider_uuid', 'root_provider_uuid'}),
    ('1.34', {'allocations', 'mappings'}, {
        'resources', 'traits', 'parent_provider_uuid', 'root_provider_uuid'}),
])
def test_shapes(api, computes, version, request_keys, summary_keys):
    body = _get(api, version=version).json
    assert len(body['allocation_requests']) == 3
    for candidate in body['allocation_requests']:
        assert set(candidate) == request_keys
    for summary in body['provider_summaries'].values():
        assert set(summary) == summary_keys


def test_allocations_as_list_then_dict(api, computes):
    first = _get(api, version='1.11').json['allocation_requests'][0]
    assert first['allocations'] == [{
        'resource_provider': {'uuid': computes[1]},
        'resources': {'VCPU': 1}}]
    first = _get(api, version='1.12').json['allocation_requests'][0]
    assert first['allocations'] == {computes[1]: {'resources': {'VCPU': 1}}}


def test_most_room_first(api, computes):
    """Unless randomized, the candidates leaving the most room come
    first, ties in provider order, with or without a limit; a limit
    picks the same set as before.
    """
    def firsts(query):
        return [next(iter(request['allocations'])) for request in
                _get(api, query).json['allocation_requests']]

    assert firsts('resources=VCPU:1') == [computes[1], computes[2],
                                          computes[0]]
    assert firsts('resources=VCPU:1&limit=1') == [computes[0]]
    assert firsts('resources=VCPU:1&limit=2') == [computes[1], computes[0]]


def test_summary_usage(api, computes):
    summaries = _get(api).json['provider_summaries']
    assert summaries[computes[0]]['resources'] == {
        'VCPU': {'capacity': 4, 'used': 1}}


def test_cache_headers_from_1_15(api, computes):
    assert 'Last-Modified' not in _get(api, version='1.14').headers
    headers = _get(api, version='1.15').headers
    assert headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in headers


def test_max_allocation_candidates(api_factory, computes):
    api = api_factory(placement={'max_allocation_candidates': 2})
    body = _get(api).json
    assert len(body['allocation_requests']) == 2
    assert len(body['provider_summaries']) == 2


def test_randomize(api_factory, computes):
    api = api_factory(placement={'randomize_allocation_candidates': True})
    firsts = {next(iter(_get(api, 'resources=VCPU:1&limit=1').json[
        'allocation_requests'][0]['allocations'])) for _ in range(30)}
    assert firsts == set(computes)


def test_unknown_class(api, computes):
    response = api.get('/allocation_candidates?resources=VCPU:1,NOPE:1')
    assert response.status_code == 400
    assert ('Invalid resource class in resources parameter: No such resource '
            'class NOPE.') in error_text.raw_detail(response)


@pytest.fixture
def numa_cloud(api):
    """Twenty compute trees: VCPU and MEMORY_MB on two NUMA children, a
    PF with VFs under each, DISK_GB and OWNER_NOVA on the root."""
    cloud = api_cloud.Cloud(api)
    for node in range(20):
        root = 'node%d' % node
        cloud.provider(root, inventory={'DISK_GB': 100},
                       traits=['OWNER_NOVA', 'HW_CPU_X86_AVX2'])
        for numa in range(2):
            name = '%s-numa%d' % (root, numa)
            cloud.provider(name, parent=root,
                           inventory={'VCPU': 8, 'MEMORY_MB': 8192},
                           traits=['HW_NUMA_ROOT'])
            cloud.provider(name + '-pf', parent=name,
                           inventory={'SRIOV_NET_VF': 4},
                           traits=['CUSTOM_PHYSNET_A'])
    return cloud


@pytest.mark.parametrize('query', [
    'resources=VCPU:1,DISK_GB:10&required=OWNER_NOVA,!COMPUTE_STATUS_DISABLED',
    'resources=VCPU:1,DISK_GB:10&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42',
    'resources=DISK_GB:10&resources_NUMA=VCPU:2,MEMORY_MB:1024'
    '&resources_NIC=SRIOV_NET_VF:1&required_NIC=CUSTOM_PHYSNET_A'
    '&same_subtree=_NUMA,_NIC&group_policy=isolate',
])
def test_no_reference_cycle_keeps_the_data(api, numa_cloud, query):
    """The request's providers and rows are freed by reference counting
    as it ends: a cycle through them (a walk holding its own bound
    methods) left them all to the cyclic collector, whose pass over
    them cost more than the traits checks themselves."""
    def left_in_cycles(path):
        _get(api, path + '&limit=1000')  # caches filled
        gc.collect()
        gc.disable()
        try:
            _get(api, path + '&limit=1000')
            return gc.collect()
        finally:
            gc.enable()
    plain = left_in_cycles('resources=VCPU:1,DISK_GB:10')
    # The framework's own few (the same with or without traits).
    assert left_in_cycles(query) <= plain + 10


def test_a_trait_most_trees_hold_is_not_looked_up_per_tree(
        backend, numa_cloud):
    """The survey keeps, of the required traits, those that leave trees
    out: a trait most trees hold (OWNER_NOVA) is left to the engine."""
    numa_cloud.provider('rare', inventory={'DISK_GB': 100},
                        traits=['CUSTOM_RARE'])
    with backend.engine.connect() as conn:
        ids = dict(conn.execute(sa.select(tables.traits.c.name,
                                          tables.traits.c.id)).all())
        common = frozenset({ids['OWNER_NOVA']})
        rare = frozenset({ids['CUSTOM_RARE']})
        narrowing = planner.Narrowing({ids_of_class(conn, 'DISK_GB'): 1},
                                      required=(common, rare))
        assert narrowing.survey(conn)
    assert narrowing.required == (rare,)
    # And the answer is the same as with every trait looked up.
    answer = _get(numa_cloud.api, 'resources=DISK_GB:10&required=OWNER_NOVA')
    assert {provider for request in answer.json['allocation_requests']
            for provider in request['allocations']} == {
        numa_cloud.uuids['node%d' % n] for n in range(20)}


def ids_of_class(conn, name):
    return conn.execute(sa.select(tables.resource_classes.c.id).where(
        tables.resource_classes.c.name == name)).scalar_one()
