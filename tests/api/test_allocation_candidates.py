"""GET /allocation_candidates through the WSGI app: the response shapes
per microversion and the [placement] options that shape generation.
"""
import pytest

from placement.db import inventory as inv_db

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
