"""Input no backend can store, hostile JSON, and the Allow header's
method order.
"""
import uuid

import pytest

import error_text

RP = '/resource_providers/11111111-1111-1111-1111-111111111111'


@pytest.mark.parametrize('path', [
    '/resource_providers?name=%00',
    '/traits/CUSTOM_%00',
    '/resource_classes/CUSTOM_%00',
])
def test_nul_in_url_is_a_400(api, path):
    response = api.get(path)
    assert response.status_code == 400
    assert 'NUL characters are not allowed' in response.json[
        'errors'][0]['detail']


@pytest.mark.parametrize('path, query', [
    ('/traits', b'name=\xff'),
    ('/resource_providers', b'name=a\xfe'),
    ('/allocation_candidates', b'resources=VCPU:1&required=\xff'),
])
def test_query_string_that_is_not_utf8_is_a_400(api, path, query):
    response = api.get(path, environ_overrides={
        'QUERY_STRING': query.decode('latin-1')})
    assert response.status_code == 400
    assert error_text.reason(response) == (
        'Invalid query string: it is not UTF-8.')


@pytest.mark.sqlite_only
@pytest.mark.parametrize('query', [b'microversion=\xff', b'x=%C0%AF',
                                   b'x=%ED%A0%80'])
def test_openapi_query_string_that_is_not_utf8(api, query):
    response = api.get('/x-openapi.json', token=None, version=None,
                       environ_overrides={
                           'QUERY_STRING': query.decode('latin-1')})
    expected = 400 if query.startswith(b'microversion') else 200
    assert response.status_code == expected


def test_nul_in_body_is_a_400_and_writes_nothing(api):
    response = api.post('/resource_providers', json={'name': 'a\x00b'})
    assert response.status_code == 400
    assert api.get('/resource_providers').json['resource_providers'] == []


# POST /reshaper is for services.
ROLES = {'X-Roles': 'admin,service'}
HOSTILE_BODIES = [
    ('[' * 5000 + ']' * 5000, 'nested more than 32 levels deep'),
    ('{"a":' * 3000 + '1' + '}' * 3000, 'nested more than 32 levels deep'),
    ('[' * 40 + ']' * 40, 'nested more than 32 levels deep'),
    ('{"name": "\\ud800"}', 'unpaired UTF-16 surrogates are not allowed'),
    ('{"name": "x", "\\udfff": 1}',
     'unpaired UTF-16 surrogates are not allowed'),
    ('{"name": NaN}', 'NaN is not a JSON number'),
    ('{"name": -Infinity}', '-Infinity is not a JSON number'),
    ('{"name": 1e400}', 'number 1e400 is out of range'),
]


def _write_paths(api):
    """Every JSON write endpoint, as (method, path, version), on a provider
    that exists.
    """
    provider = str(uuid.uuid4())
    assert api.post('/resource_providers', json={
        'name': 'hostile', 'uuid': provider}).status_code == 200
    rp = '/resource_providers/' + provider
    return [
        ('POST', '/resource_providers', '1.39'),
        ('PUT', rp, '1.39'),
        ('POST', rp + '/inventories', '1.39'),
        ('PUT', rp + '/inventories', '1.39'),
        ('PUT', rp + '/inventories/VCPU', '1.39'),
        ('PUT', rp + '/aggregates', '1.39'),
        ('PUT', rp + '/aggregates', '1.1'),
        ('PUT', rp + '/traits', '1.39'),
        ('POST', '/resource_classes', '1.39'),
        ('PUT', '/resource_classes/CUSTOM_HOSTILE', '1.2'),
        ('PUT', '/allocations/' + str(uuid.uuid4()), '1.39'),
        ('PUT', '/allocations/' + str(uuid.uuid4()), '1.0'),
        ('POST', '/allocations', '1.39'),
        ('POST', '/reshaper', '1.39'),
    ]


@pytest.mark.parametrize('body, reason', HOSTILE_BODIES)
def test_hostile_json_is_a_400_on_every_write(api, body, reason):
    for method, path, version in _write_paths(api):
        response = api.request(method, path, data=body, version=version,
                               headers=dict(ROLES, **{
                                   'Content-Type': 'application/json'}))
        assert response.status_code == 400, (method, path, response.text)
        assert reason in error_text.reason(response), (method, path)


def test_inventory_that_can_never_be_allocated_is_a_400(api):
    provider = str(uuid.uuid4())
    api.post('/resource_providers', json={'name': 'units', 'uuid': provider})
    path = '/resource_providers/%s/inventories' % provider
    record = {'total': 8, 'min_unit': 4, 'max_unit': 2}
    problem = ("Invalid inventory for 'VCPU' on resource provider '%s': "
               "min_unit (4) is greater than max_unit (2), so nothing could "
               "ever be allocated from it." % provider)
    response = api.put(path, json={'resource_provider_generation': 0,
                                   'inventories': {'VCPU': record}})
    assert response.status_code == 400
    assert error_text.reason(response) == (
        'Unable to update inventory for resource provider %s: %s'
        % (provider, problem))
    response = api.post(path, json=dict(record, resource_class='VCPU'))
    assert response.status_code == 400
    assert error_text.reason(response) == (
        'Unable to create inventory for resource provider %s: %s'
        % (provider, problem))
    response = api.put(path + '/VCPU', json=dict(
        record, resource_provider_generation=0))
    assert response.status_code == 400
    response = api.post('/reshaper', headers=ROLES, json={
        'inventories': {provider: {'resource_provider_generation': 0,
                                   'inventories': {'VCPU': record}}},
        'allocations': {}})
    assert response.status_code == 400
    assert error_text.reason(response) == 'malformed reshaper data: ' + problem
    shown = api.get(path).json
    assert shown == {'resource_provider_generation': 0, 'inventories': {}}


# Upstream's route table order, which clients see in Allow.
@pytest.mark.sqlite_only
@pytest.mark.parametrize('path, allow', [
    ('/', 'GET'),
    ('/resource_classes', 'GET, POST'),
    ('/resource_classes/CUSTOM_X', 'GET, PUT, DELETE'),
    ('/resource_providers', 'GET, POST'),
    (RP, 'GET, DELETE, PUT'),
    (RP + '/inventories', 'GET, POST, PUT, DELETE'),
    (RP + '/inventories/VCPU', 'GET, PUT, DELETE'),
    (RP + '/usages', 'GET'),
    (RP + '/aggregates', 'GET, PUT'),
    (RP + '/traits', 'GET, PUT, DELETE'),
    (RP + '/allocations', 'GET'),
    ('/traits', 'GET'),
    ('/traits/CUSTOM_X', 'GET, PUT, DELETE'),
    ('/allocations', 'POST'),
    ('/allocations/11111111-1111-1111-1111-111111111111', 'GET, PUT, DELETE'),
    ('/allocation_candidates', 'GET'),
    ('/usages', 'GET'),
    ('/reshaper', 'POST'),
])
def test_allow_lists_methods_in_route_table_order(api, path, allow):
    response = api.patch(path)
    assert response.status_code == 405
    assert response.headers['Allow'] == allow


def test_415_names_a_missing_media_type_none(api):
    response = api.put('/resource_providers/'
                       'd3a64825-8228-4ccb-8a6c-1c6d3eb6a3e8')
    assert response.status_code == 415
    assert ('The request media type None is not supported by this server.'
            in error_text.raw_detail(response))


def test_text_an_adopted_utf8mb3_table_cannot_hold_is_a_400(api, backend):
    """An upstream database created with 3-byte utf8 refuses emoji: a
    clear 400, not a 500."""
    if backend.name != 'mysql':
        pytest.skip('only MySQL tables have a 3-byte character set')
    convert = ('ALTER TABLE resource_providers CONVERT TO CHARACTER SET %s '
               'COLLATE %s')
    with backend.engine.begin() as conn:
        collation = conn.exec_driver_sql(
            "SELECT table_collation FROM information_schema.tables WHERE "
            "table_schema = DATABASE() AND table_name = 'resource_providers'"
        ).scalar()
        conn.exec_driver_sql(convert % ('utf8mb3', 'utf8mb3_general_ci'))
    try:
        response = api.post('/resource_providers',
                            json={'name': 'rack \U0001F680'})
    finally:
        with backend.engine.begin() as conn:
            conn.exec_driver_sql(convert % ('utf8mb4', collation))
    assert response.status_code == 400, response.text
    assert api.get('/resource_providers').json['resource_providers'] == []
