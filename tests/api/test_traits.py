"""/traits (microversion 1.6+): list with filters, create, check, delete.

The order of GET /traits is unspecified (upstream's follows the database),
so lists are compared sorted.
"""
import re

import os_traits
import pytest

import error_text
import sql_rows

STANDARD = sorted(os_traits.get_traits())
INVALID = ('The trait is invalid. A valid trait must be no longer than 255 '
           'characters, start with the prefix "CUSTOM_" and use following '
           'characters: "A"-"Z", "0"-"9" and "_"')
BAD_NAME = ('Badly formatted name parameter. Expected name query string '
            'parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. '
            'Got: "%s"')
HTTP_DATE = r'^\w+, \d+ \w+ \d{4} [\d:]+ GMT$'


def _list(api, query=''):
    response = api.get('/traits' + query)
    assert response.status_code == 200, response.text
    assert set(response.json) == {'traits'}
    return sorted(response.json['traits'])


def _create(api, *names):
    for name in names:
        assert api.put('/traits/' + name).status_code == 201


def _associate(engine, name):
    """Give a provider the trait (no provider API yet)."""
    with engine.begin() as conn:
        rp = sql_rows.provider(
            conn, 'rp1', '0c4a2b6e-3f1d-4e8a-9b7c-5d6e7f8a9b0c')
        sql_rows.traits(conn, rp['id'], [name])


# -- version gates ------------------------------------------------------------

@pytest.mark.parametrize('method, path', [
    ('GET', '/traits'), ('GET', '/traits/HW_CPU_X86_SSE'),
    ('PUT', '/traits/CUSTOM_A'), ('DELETE', '/traits/CUSTOM_A'),
])
@pytest.mark.parametrize('version', ['1.0', '1.5'])
def test_hidden_before_1_6(api, method, path, version):
    response = api.request(method, path, version=version)
    assert response.status_code == 404
    assert response.json['errors'][0]['title'] == 'Not Found'


# -- create -------------------------------------------------------------------

@pytest.mark.parametrize('version', ['1.6', '1.39'])
def test_put_creates_then_confirms(api, version):
    location = 'http://localhost/traits/CUSTOM_TRAIT_1'
    response = api.put('/traits/CUSTOM_TRAIT_1', version=version)
    assert response.status_code == 201
    assert response.headers['Location'] == location
    assert 'Content-Type' not in response.headers
    assert response.data == b''
    response = api.put('/traits/CUSTOM_TRAIT_1', version=version)
    assert response.status_code == 204
    assert response.headers['Location'] == location
    assert 'Content-Type' not in response.headers
    assert _list(api) == sorted(STANDARD + ['CUSTOM_TRAIT_1'])


@pytest.mark.parametrize('name', [
    'TRAIT_X', 'HW_CPU_X86_SSE', 'CUSTOM_ABC:1', 'CUSTOM_abc', 'CUSTOM_',
    'CUSTOM_' + 'A' * 249,  # 256 characters
])
def test_put_invalid_name(api, name):
    response = api.put('/traits/' + name)
    assert response.status_code == 400
    assert error_text.raw_detail(response).endswith(INVALID + '  ')


def test_put_name_of_255_characters(api):
    name = 'CUSTOM_' + 'A' * 248
    _create(api, name)
    assert name in _list(api)


def test_put_ignores_body_and_accept(api):
    response = api.put('/traits/CUSTOM_A', data='x',
                       headers={'Content-Type': 'text/plain',
                                'Accept': 'text/plain'})
    assert response.status_code == 201


@pytest.mark.parametrize('version, cached', [('1.14', False), ('1.15', True)])
def test_put_cache_headers_from_1_15(api, version, cached):
    for status in (201, 204):
        response = api.put('/traits/CUSTOM_A', version=version)
        assert response.status_code == status
        assert ('Last-Modified' in response.headers) is cached
        assert ('Cache-Control' in response.headers) is cached
        if cached:
            assert response.headers['Cache-Control'] == 'no-cache'
            assert re.match(HTTP_DATE, response.headers['Last-Modified'])


# -- check --------------------------------------------------------------------

@pytest.mark.parametrize('name', ['CUSTOM_TRAIT_1', 'HW_CPU_X86_SSE',
                                  'MISC_SHARES_VIA_AGGREGATE'])
def test_get_existing(api, name):
    api.put('/traits/CUSTOM_TRAIT_1')
    response = api.get('/traits/' + name, version='1.6')
    assert response.status_code == 204
    assert response.data == b''
    assert 'Content-Type' not in response.headers


def test_get_missing(api):
    response = api.get('/traits/NON_EXISTED')
    assert response.status_code == 404
    assert error_text.raw_detail(response).endswith(
        'No such trait(s): NON_EXISTED.  ')


def test_get_ignores_accept(api):
    response = api.get('/traits/HW_CPU_X86_SSE',
                       headers={'Accept': 'text/plain'})
    assert response.status_code == 204


@pytest.mark.parametrize('version, cached', [
    ('1.6', False), ('1.14', False), ('1.15', True), ('1.39', True)])
def test_get_cache_headers_from_1_15(api, version, cached):
    api.put('/traits/CUSTOM_A')
    for path in ('/traits/CUSTOM_A', '/traits'):
        headers = api.get(path, version=version).headers
        assert ('Last-Modified' in headers) is cached
        assert ('Cache-Control' in headers) is cached
        if cached:
            assert headers['Cache-Control'] == 'no-cache'
            assert re.match(HTTP_DATE, headers['Last-Modified'])


# -- delete -------------------------------------------------------------------

def test_delete(api):
    _create(api, 'CUSTOM_TRAIT_1')
    response = api.delete('/traits/CUSTOM_TRAIT_1', version='1.15')
    assert response.status_code == 204
    assert response.data == b''
    for header in ('Content-Type', 'Last-Modified', 'Cache-Control'):
        assert header not in response.headers
    assert api.get('/traits/CUSTOM_TRAIT_1').status_code == 404
    response = api.delete('/traits/CUSTOM_TRAIT_1')
    assert response.status_code == 404
    assert error_text.raw_detail(response).endswith(
        'No such trait(s): CUSTOM_TRAIT_1.  ')


def test_delete_standard(api):
    response = api.delete('/traits/HW_CPU_X86_SSE')
    assert response.status_code == 400
    assert error_text.raw_detail(response).endswith(
        'Cannot delete standard trait HW_CPU_X86_SSE.  ')
    assert api.get('/traits/HW_CPU_X86_SSE').status_code == 204


def test_delete_unknown_non_custom(api):
    response = api.delete('/traits/NOPE')
    assert response.status_code == 404
    assert error_text.raw_detail(response).endswith(
        'No such trait(s): NOPE.  ')


def test_delete_in_use(api, backend):
    _create(api, 'CUSTOM_TRAIT_1')
    _associate(backend.engine, 'CUSTOM_TRAIT_1')
    response = api.delete('/traits/CUSTOM_TRAIT_1')
    assert response.status_code == 409
    assert error_text.raw_detail(response).endswith(
        'The trait CUSTOM_TRAIT_1 is in use by a resource provider.  ')
    assert api.get('/traits/CUSTOM_TRAIT_1').status_code == 204


# -- list ---------------------------------------------------------------------

def test_list_standard_and_custom(api):
    assert _list(api) == STANDARD
    _create(api, 'CUSTOM_TRAIT_2', 'CUSTOM_TRAIT_1')
    assert _list(api) == sorted(STANDARD + ['CUSTOM_TRAIT_1',
                                            'CUSTOM_TRAIT_2'])


def test_list_needs_acceptable_json(api):
    assert api.get('/traits', headers={'Accept': 'text/plain'}
                   ).status_code == 406


@pytest.mark.parametrize('query, expected', [
    ('?name=in:CUSTOM_TRAIT_1,CUSTOM_TRAIT_2',
     ['CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2']),
    ('?name=in:CUSTOM_TRAIT_1,,NOT_A_TRAIT,HW_CPU_X86_SSE',
     ['CUSTOM_TRAIT_1', 'HW_CPU_X86_SSE']),
    ('?name=in:', []),
    ('?name=startswith:CUSTOM_TRAIT', ['CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2']),
    ('?name=startswith:CUSTOM_', ['CUSTOM_ANOTHER_TRAIT', 'CUSTOM_TRAIT_1',
                                  'CUSTOM_TRAIT_2']),
    # As upstream, the prefix is a LIKE pattern: "_" matches any character.
    ('?name=startswith:CUSTOM_TRAIT__', ['CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2']),
    ('?name=startswith:CUSTOM_A%25TRAIT', ['CUSTOM_ANOTHER_TRAIT']),
    ('?name=startswith:NOPE', []),
    # The last of repeated parameters counts.
    ('?name=in:CUSTOM_TRAIT_1&name=in:CUSTOM_TRAIT_2', ['CUSTOM_TRAIT_2']),
])
def test_list_name_filter(api, query, expected):
    _create(api, 'CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2', 'CUSTOM_ANOTHER_TRAIT')
    assert _list(api, query) == expected


def test_list_empty_prefix_is_everything(api):
    assert _list(api, '?name=startswith:') == STANDARD


@pytest.mark.parametrize('value', ['in_abc', 'foo:bar', 'IN:CUSTOM_A', ''])
def test_list_bad_name_filter(api, value):
    response = api.get('/traits?name=' + value)
    assert response.status_code == 400
    assert error_text.raw_detail(response).endswith(BAD_NAME % value + '  ')


def test_list_associated_filter(api, backend):
    _create(api, 'CUSTOM_TRAIT_1', 'CUSTOM_TRAIT_2')
    _associate(backend.engine, 'CUSTOM_TRAIT_1')
    assert _list(api, '?associated=true') == ['CUSTOM_TRAIT_1']
    assert _list(api, '?associated=false') == sorted(
        STANDARD + ['CUSTOM_TRAIT_2'])
    assert _list(api, '?associated=false&name=startswith:CUSTOM_') == [
        'CUSTOM_TRAIT_2']
    assert _list(api, '?associated=true&name=in:CUSTOM_TRAIT_2') == []


def test_list_associated_none(api):
    assert _list(api, '?associated=true') == []


def test_list_associated_is_case_insensitive(api, backend):
    _create(api, 'CUSTOM_TRAIT_1')
    _associate(backend.engine, 'CUSTOM_TRAIT_1')
    assert _list(api, '?associated=True') == ['CUSTOM_TRAIT_1']
    assert 'CUSTOM_TRAIT_1' not in _list(api, '?associated=FALSE')


@pytest.mark.parametrize('value', ['xyz', 'yes', '1', ''])
def test_list_associated_invalid(api, value):
    response = api.get('/traits?associated=' + value)
    assert response.status_code == 400
    assert error_text.raw_detail(response).endswith(
        'The query parameter "associated" only accepts "true" or "false"  ')


def test_list_unknown_parameter(api):
    response = api.get('/traits?invalid=abc')
    assert response.status_code == 400
    assert ('Invalid query string parameters: Additional properties are not '
            "allowed ('invalid' was unexpected)") in (
        error_text.raw_detail(response))


# -- policy -------------------------------------------------------------------

@pytest.mark.parametrize('method, path, action', [
    ('GET', '/traits', 'list'),
    ('GET', '/traits/HW_CPU_X86_SSE', 'show'),
    ('PUT', '/traits/CUSTOM_A', 'update'),
    ('PUT', '/traits/not-valid', 'update'),
    ('DELETE', '/traits/CUSTOM_A', 'delete'),
])
def test_policy_checked_first(api, method, path, action):
    response = api.request(method, path, token='user')
    assert response.status_code == 403
    assert error_text.raw_detail(response).endswith(
        'Policy does not allow placement:traits:%s to be performed.  '
        % action)


def test_service_role_allowed(api):
    service = {'token': 'nova', 'headers': {'X-Roles': 'service'}}
    assert api.put('/traits/CUSTOM_A', **service).status_code == 201
    assert api.get('/traits/CUSTOM_A', **service).status_code == 204
    assert 'CUSTOM_A' in api.get('/traits', **service).json['traits']
    assert api.delete('/traits/CUSTOM_A', **service).status_code == 204
