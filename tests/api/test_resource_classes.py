"""/resource_classes at every microversion that changes it."""
import re

import os_resource_classes
import pytest
import sqlalchemy as sa

from placement.db import standard_sync
from placement.db import tables

import error_text
import sql_rows

STANDARD = list(os_resource_classes.STANDARDS)
TOO_LONG = 'CUSTOM_' + 'S' * 249  # 256 characters
HTTP_DATE = r'^\w+, \d+ \w+ \d{4} [\d:]+ GMT$'


def _link(name, prefix=''):
    return [{'rel': 'self', 'href': '%s/resource_classes/%s' % (prefix, name)}]


def _names(api):
    return [c['name'] for c in api.get('/resource_classes').json[
        'resource_classes']]


def _create(api, name):
    response = api.post('/resource_classes', json={'name': name})
    assert response.status_code == 201, response.text
    return response


def _use_in_inventory(engine, name):
    """Give a provider inventory of class ``name`` (no provider API yet)."""
    with engine.begin() as conn:
        rp = sql_rows.provider(
            conn, 'rp1', '5d3c4a9e-7e35-4b5d-8f5e-2a7c9b1e0d11')
        sql_rows.inventory(conn, rp['id'], {name: 4})


# -- version gates ------------------------------------------------------------

@pytest.mark.parametrize('method, path', [
    ('GET', '/resource_classes'),
    ('POST', '/resource_classes'),
    ('GET', '/resource_classes/VCPU'),
    ('PUT', '/resource_classes/CUSTOM_A'),
    ('DELETE', '/resource_classes/CUSTOM_A'),
])
@pytest.mark.parametrize('version', ['1.0', '1.1'])
def test_hidden_before_1_2(api, method, path, version):
    response = api.request(method, path, version=version,
                           json={'name': 'CUSTOM_A'})
    assert response.status_code == 404
    assert response.json['errors'][0]['title'] == 'Not Found'


# -- list ---------------------------------------------------------------------

def test_list_standard_classes_in_id_order(api):
    response = api.get('/resource_classes', version='1.2')
    assert response.status_code == 200
    assert response.headers['Content-Type'] == 'application/json'
    assert response.json == {'resource_classes': [
        {'name': name, 'links': _link(name)} for name in STANDARD]}


def test_list_custom_classes_after_standard_ones(api):
    _create(api, 'CUSTOM_B')
    _create(api, 'CUSTOM_A')
    assert _names(api) == STANDARD + ['CUSTOM_B', 'CUSTOM_A']


def test_custom_ids_start_at_10000(api, backend):
    _create(api, 'CUSTOM_A')
    _create(api, 'CUSTOM_B')
    rc = tables.resource_classes
    with backend.engine.connect() as conn:
        ids = conn.execute(sa.select(rc.c.id).where(
            rc.c.name.like('CUSTOM_%')).order_by(rc.c.id)).scalars().all()
    first = standard_sync.CUSTOM_RC_START
    assert ids == [first, first + 1]


# -- create -----------------------------------------------------------------

def test_create(api):
    response = _create(api, 'CUSTOM_NFV_FOO')
    assert response.headers['Location'] == (
        'http://localhost/resource_classes/CUSTOM_NFV_FOO')
    assert 'Content-Type' not in response.headers
    assert response.data == b''
    assert api.get('/resource_classes/CUSTOM_NFV_FOO').json == {
        'name': 'CUSTOM_NFV_FOO', 'links': _link('CUSTOM_NFV_FOO')}


# Upstream gives a class that exists no code of its own (a provider's
# name has placement.duplicate_name).
@pytest.mark.parametrize('version, code', [
    ('1.22', None), ('1.23', 'placement.undefined_code')])
def test_create_duplicate(api, version, code):
    _create(api, 'CUSTOM_A')
    response = api.post('/resource_classes', json={'name': 'CUSTOM_A'},
                        version=version)
    assert response.status_code == 409
    error = response.json['errors'][0]
    assert error['title'] == 'Conflict'
    assert error['detail'].endswith(
        'Conflicting resource class already exists: CUSTOM_A  ')
    assert error.get('code') == code


def test_create_standard_name_is_invalid(api):
    response = api.post('/resource_classes', json={'name': 'VCPU'})
    assert response.status_code == 400


@pytest.mark.parametrize('body, message', [
    ({'name': 'IRON_NFV'}, "Failed validating 'pattern'"),
    ({'name': 'CUSTOM_Illegal&@!Name?'}, "Failed validating 'pattern'"),
    ({'name': 'CUSTOM_lower'}, "Failed validating 'pattern'"),
    ({'name': 'CUSTOM_'}, "Failed validating 'pattern'"),
    ({'name': TOO_LONG}, "Failed validating 'maxLength'"),
    ({'name': 'CUSTOM_A', 'additional': 1},
     'Additional properties are not allowed'),
    ({}, "'name' is a required property"),
    ({'name': 7}, "7 is not of type 'string'"),
    ([], "[] is not of type 'object'"),
])
def test_create_invalid_body(api, body, message):
    response = api.post('/resource_classes', json=body)
    assert response.status_code == 400
    detail = error_text.raw_detail(response)
    assert 'JSON does not validate: ' in detail
    assert message in detail


def test_create_schema_is_shown_to_clients(api):
    detail = error_text.raw_detail(
        api.post('/resource_classes', json={'name': 'x'}))
    assert ("Failed validating 'pattern' in schema['properties']['name']:"
            "     {'type': 'string', 'pattern': '^CUSTOM_[A-Z0-9_]+$', "
            "'maxLength': 255}") in detail


def test_create_name_of_255_characters(api):
    _create(api, TOO_LONG[:255])
    assert TOO_LONG[:255] in _names(api)


def test_create_needs_json_media_type(api):
    response = api.post('/resource_classes', data='{"name": "CUSTOM_A"}',
                        headers={'Content-Type': 'text/plain'})
    assert response.status_code == 415


def test_create_malformed_json(api):
    response = api.post('/resource_classes', data='{"foo": }',
                        headers={'Content-Type': 'application/json'})
    assert response.status_code == 400
    assert 'Malformed JSON: ' in error_text.raw_detail(response)


def test_create_validation_errors_in_plain_text(api):
    response = api.post('/resource_classes', json={'name': 'FOO'},
                        headers={'Accept': 'text/plain'})
    assert response.status_code == 400
    assert 'JSON does not validate' in response.text


# -- show ---------------------------------------------------------------------

@pytest.mark.parametrize('name', ['VCPU', 'MEMORY_MB', STANDARD[-1]])
def test_show_standard(api, name):
    response = api.get('/resource_classes/' + name, version='1.2')
    assert response.status_code == 200
    assert response.json == {'name': name, 'links': _link(name)}


def test_show_missing(api):
    response = api.get('/resource_classes/CUSTOM_NOPE')
    assert response.status_code == 404
    assert error_text.raw_detail(response).endswith(
        'No such resource class CUSTOM_NOPE.  ')


def test_show_needs_acceptable_json(api):
    response = api.get('/resource_classes/VCPU',
                       headers={'Accept': 'text/plain'})
    assert response.status_code == 406


# -- PUT before 1.7: rename ---------------------------------------------------

@pytest.mark.parametrize('version', ['1.2', '1.6'])
def test_rename(api, version):
    _create(api, 'CUSTOM_OLD')
    response = api.put('/resource_classes/CUSTOM_OLD', version=version,
                       json={'name': 'CUSTOM_NEW'})
    assert response.status_code == 200
    assert response.json == {'name': 'CUSTOM_NEW',
                             'links': _link('CUSTOM_NEW')}
    assert 'Location' not in response.headers
    assert _names(api)[-1] == 'CUSTOM_NEW'
    assert api.get('/resource_classes/CUSTOM_OLD').status_code == 404


def test_rename_keeps_id(api, backend):
    _create(api, 'CUSTOM_OLD')
    api.put('/resource_classes/CUSTOM_OLD', version='1.6',
            json={'name': 'CUSTOM_NEW'})
    rc = tables.resource_classes
    with backend.engine.connect() as conn:
        assert conn.execute(sa.select(rc.c.id).where(
            rc.c.name == 'CUSTOM_NEW')).scalar() == (
                standard_sync.CUSTOM_RC_START)


def test_rename_to_own_name(api):
    _create(api, 'CUSTOM_SAME')
    response = api.put('/resource_classes/CUSTOM_SAME', version='1.6',
                       json={'name': 'CUSTOM_SAME'})
    assert response.status_code == 200
    assert response.json['name'] == 'CUSTOM_SAME'


def test_rename_standard(api):
    response = api.put('/resource_classes/VCPU', version='1.6',
                       json={'name': 'CUSTOM_VCPU'})
    assert response.status_code == 400
    assert error_text.raw_detail(response).endswith(
        'Cannot update standard resource class VCPU  ')


def test_rename_to_standard_name(api):
    _create(api, 'CUSTOM_A')
    response = api.put('/resource_classes/CUSTOM_A', version='1.6',
                       json={'name': 'VCPU'})
    assert response.status_code == 400
    assert 'JSON does not validate' in error_text.raw_detail(response)


def test_rename_to_existing(api):
    _create(api, 'CUSTOM_A')
    _create(api, 'CUSTOM_B')
    response = api.put('/resource_classes/CUSTOM_B', version='1.6',
                       json={'name': 'CUSTOM_A'})
    assert response.status_code == 409
    assert error_text.raw_detail(response).endswith(
        'Resource class already exists: CUSTOM_A  ')


def test_rename_missing(api):
    response = api.put('/resource_classes/CUSTOM_NOPE', version='1.6',
                       json={'name': 'CUSTOM_A'})
    assert response.status_code == 404
    assert error_text.raw_detail(response).endswith(
        'No such resource class CUSTOM_NOPE.  ')


@pytest.mark.parametrize('body, message', [
    ({'name': TOO_LONG}, "Failed validating 'maxLength'"),
    ({'name': 'CUSTOM_B', 'additional': 'x'},
     'Additional properties are not allowed'),
])
def test_rename_invalid_body(api, body, message):
    _create(api, 'CUSTOM_A')
    response = api.put('/resource_classes/CUSTOM_A', version='1.6', json=body)
    assert response.status_code == 400
    assert message in error_text.raw_detail(response)


def test_rename_needs_a_body(api):
    response = api.put('/resource_classes/CUSTOM_COW', version='1.6',
                       headers={'Content-Type': 'application/json'})
    assert response.status_code == 400
    assert 'Malformed JSON: ' in error_text.raw_detail(response)


def test_rename_needs_json_media_type(api):
    response = api.put('/resource_classes/CUSTOM_COW', version='1.6')
    assert response.status_code == 415
    assert 'The media type None is not supported, use application/json' in (
        error_text.raw_detail(response))


# -- PUT from 1.7: create if missing ------------------------------------------

@pytest.mark.parametrize('version', ['1.7', '1.39'])
def test_put_creates_then_confirms(api, version):
    path = '/resource_classes/CUSTOM_COW'
    location = 'http://localhost' + path
    response = api.put(path, version=version)
    assert response.status_code == 201
    assert response.headers['Location'] == location
    assert response.data == b''
    assert 'Content-Type' not in response.headers
    response = api.put(path, version=version)
    assert response.status_code == 204
    assert response.headers['Location'] == location
    assert _names(api) == STANDARD + ['CUSTOM_COW']


def test_put_ignores_body_and_media_type(api):
    response = api.put('/resource_classes/CUSTOM_COW', version='1.7',
                       json={'name': 'CUSTOM_OTHER'})
    assert response.status_code == 201
    assert _names(api)[-1] == 'CUSTOM_COW'
    response = api.put('/resource_classes/CUSTOM_PIG', version='1.7',
                       data='x', headers={'Content-Type': 'text/plain'})
    assert response.status_code == 201


@pytest.mark.parametrize('name, message', [
    ('COW', "Failed validating 'pattern'"),
    ('VCPU', "Failed validating 'pattern'"),
    ('CUSTOM_cow', "Failed validating 'pattern'"),
    (TOO_LONG, "Failed validating 'maxLength'"),
])
def test_put_invalid_name(api, name, message):
    response = api.put('/resource_classes/' + name, version='1.7')
    assert response.status_code == 400
    assert 'JSON does not validate' in error_text.raw_detail(response)
    assert message in error_text.raw_detail(response)


# -- delete -----------------------------------------------------------------

def test_delete(api):
    _create(api, 'CUSTOM_GONE')
    response = api.delete('/resource_classes/CUSTOM_GONE', version='1.2')
    assert response.status_code == 204
    assert response.data == b''
    assert 'Content-Type' not in response.headers
    assert _names(api) == STANDARD
    response = api.delete('/resource_classes/CUSTOM_GONE')
    assert response.status_code == 404
    assert error_text.raw_detail(response).endswith(
        'No such resource class CUSTOM_GONE.  ')


def test_delete_standard(api):
    response = api.delete('/resource_classes/VCPU')
    assert response.status_code == 400
    assert error_text.raw_detail(response).endswith(
        'Error in delete resource class: Cannot delete standard resource '
        'class VCPU.  ')


def test_delete_in_use(api, backend):
    api.put('/resource_classes/CUSTOM_GOLD')
    _use_in_inventory(backend.engine, 'CUSTOM_GOLD')
    response = api.delete('/resource_classes/CUSTOM_GOLD')
    assert response.status_code == 409
    assert error_text.raw_detail(response).endswith(
        'Error in delete resource class: Cannot delete resource class '
        'CUSTOM_GOLD. Class is in use in inventory.  ')
    assert 'CUSTOM_GOLD' in _names(api)


def test_ids_are_reused_after_deleting_the_newest(api, backend):
    _create(api, 'CUSTOM_A')
    api.delete('/resource_classes/CUSTOM_A')
    _create(api, 'CUSTOM_B')
    rc = tables.resource_classes
    with backend.engine.connect() as conn:
        assert conn.execute(sa.select(rc.c.id).where(
            rc.c.name == 'CUSTOM_B')).scalar() == standard_sync.CUSTOM_RC_START


# -- cache headers ------------------------------------------------------------

@pytest.mark.parametrize('path', ['/resource_classes',
                                  '/resource_classes/VCPU',
                                  '/resource_classes/CUSTOM_MOO'])
def test_gets_have_cache_headers_from_1_15(api, path):
    api.put('/resource_classes/CUSTOM_MOO')
    old = api.get(path, version='1.14').headers
    assert 'Last-Modified' not in old and 'Cache-Control' not in old
    new = api.get(path, version='1.15').headers
    assert new['Cache-Control'] == 'no-cache'
    assert re.match(HTTP_DATE, new['Last-Modified'])


def test_writes_have_no_cache_headers(api):
    responses = [
        api.put('/resource_classes/CUSTOM_MOO', version='1.15'),
        api.post('/resource_classes', version='1.15',
                 json={'name': 'CUSTOM_ALPHA'}),
        api.put('/resource_classes/CUSTOM_MOO', version='1.6',
                json={'name': 'CUSTOM_BETA'}),
        api.delete('/resource_classes/CUSTOM_BETA', version='1.15'),
    ]
    for response in responses:
        assert response.status_code in (200, 201, 204), response.text
        assert 'Last-Modified' not in response.headers
        assert 'Cache-Control' not in response.headers


# -- policy -------------------------------------------------------------------

@pytest.mark.parametrize('method, path, version, action', [
    ('GET', '/resource_classes', '1.39', 'list'),
    ('POST', '/resource_classes', '1.39', 'create'),
    ('GET', '/resource_classes/VCPU', '1.39', 'show'),
    ('PUT', '/resource_classes/CUSTOM_A', '1.6', 'update'),
    ('PUT', '/resource_classes/CUSTOM_A', '1.7', 'update'),
    ('DELETE', '/resource_classes/CUSTOM_A', '1.39', 'delete'),
])
def test_policy_checked_first(api, method, path, version, action):
    response = api.request(method, path, version=version, token='user',
                           json={'name': 'not valid'})
    assert response.status_code == 403
    assert error_text.raw_detail(response).endswith(
        'Policy does not allow placement:resource_classes:%s to be '
        'performed.  ' % action)


def test_open_policy(api_factory, tmp_path):
    path = tmp_path / 'policy.yaml'
    path.write_text('\n'.join(
        '"placement:resource_classes:%s": "@"' % action
        for action in ('list', 'create', 'show', 'update', 'delete')))
    api = api_factory(oslo_policy={'policy_file': str(path)})
    user = {'token': 'user'}
    assert api.get('/resource_classes', **user).status_code == 200
    assert api.post('/resource_classes', json={'name': 'CUSTOM_P'},
                    **user).status_code == 201
    assert api.get('/resource_classes/CUSTOM_P', **user).status_code == 200
    assert api.put('/resource_classes/CUSTOM_Q', **user).status_code == 201
    assert api.delete('/resource_classes/CUSTOM_Q', **user).status_code == 204
