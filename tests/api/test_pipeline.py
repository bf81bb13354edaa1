"""The request pipeline around every handler: authentication, policy,
microversions, error rendering, mounting under a prefix, the database
connection and start-up configuration.
"""
import json
import re
import time

import pytest
import sqlalchemy as sa

from placement.api import app as placement_app
from placement.api import service
from placement.db import engine as db_engine
from placement.db import tables

from conftest import ApiClient
import error_text
import gunicorn_server

MAX_VERSION = '1.39'
REQUEST_ID = re.compile(r'^req-[a-f0-9-]{36}$')
RC_LIST_DENIED = ('Policy does not allow placement:resource_classes:list to '
                  'be performed.')


def _policy_file(tmp_path, rules):
    path = tmp_path / 'policy.yaml'
    path.write_text(json.dumps(rules))
    return str(path)


# -- authentication (noauth2) -------------------------------------------------

def test_root_needs_no_token(api):
    response = api.get('/', token=None)
    assert response.status_code == 200
    assert response.json['versions'][0]['max_version'] == MAX_VERSION


def test_token_required_elsewhere(api):
    response = api.get('/resource_classes', token=None)
    assert response.status_code == 401
    assert response.json['title'] == 'Unauthorized'


def test_empty_token_is_no_token(api):
    assert api.get('/traits', token='').status_code == 401


def test_unknown_path_needs_token_too(api):
    assert api.get('/barnabas', token=None).status_code == 401


def test_admin_token_has_admin_role(api):
    assert api.get('/resource_classes', token='admin').status_code == 200


@pytest.mark.parametrize('token', ['user', 'user:project', 'bob:admin'])
def test_other_users_have_no_role(api, token):
    response = api.get('/resource_classes', token=token)
    assert response.status_code == 403
    assert error_text.error(response)['title'] == 'Forbidden'
    assert error_text.error(response)['detail'].endswith(
        RC_LIST_DENIED + '  ')


def test_user_and_project_from_token(api):
    assert api.get('/resource_classes', token='admin:someproject'
                   ).status_code == 200


@pytest.mark.parametrize('token, roles, status', [
    ('user', 'admin', 200),
    ('user', 'service', 200),
    ('user', 'reader,member', 403),
    ('admin', 'reader', 403),
    ('admin', '', 403),
])
def test_x_roles_header_replaces_default_roles(api, token, roles, status):
    response = api.get('/resource_classes', token=token,
                       headers={'X-Roles': roles})
    assert response.status_code == status


def test_system_scope_is_refused_by_project_scoped_rules(api):
    response = api.get('/resource_classes', token='user', headers={
        'X-Roles': 'admin,member,reader', 'OpenStack-System-Scope': 'all'})
    assert response.status_code == 403
    # Upstream names only the action for a token of the wrong scope.
    assert error_text.error(response)['detail'].endswith(
        '\n\n placement:resource_classes:list  ')


def test_x_project_id_header_wins_over_token_project(api_factory, tmp_path):
    api = api_factory(oslo_policy={'policy_file': _policy_file(
        tmp_path, {'placement:resource_classes:list': 'project_id:p1'})})
    assert api.get('/resource_classes', token='user:p1').status_code == 200
    assert api.get('/resource_classes', token='user:p2').status_code == 403
    assert api.get('/resource_classes', token='user:p2',
                   headers={'X-Project-Id': 'p1'}).status_code == 200


# -- policy -------------------------------------------------------------------

@pytest.mark.parametrize('new_defaults', [False, True])
@pytest.mark.parametrize('roles, status', [
    ('admin', 200), ('service', 200), ('member,reader', 403), ('reader', 403),
])
def test_default_policy_legacy_and_secure(api_factory, new_defaults, roles,
                                          status):
    api = api_factory(oslo_policy={'enforce_new_defaults': new_defaults})
    response = api.get('/traits', token='user', headers={'X-Roles': roles})
    assert response.status_code == status


@pytest.mark.parametrize('new_defaults, admin_status', [
    (False, 200),  # the deprecated admin-only rule is still OR'ed in
    (True, 403),
])
def test_deprecated_rule_applies_only_in_legacy_mode(
        api_factory, tmp_path, new_defaults, admin_status):
    api = api_factory(oslo_policy={
        'enforce_new_defaults': new_defaults,
        'policy_file': _policy_file(
            tmp_path, {'placement:resource_classes:list': 'rule:service_api'}),
    })
    assert api.get('/resource_classes').status_code == admin_status
    assert api.get('/resource_classes', token='user',
                   headers={'X-Roles': 'service'}).status_code == 200


def test_policy_file_overrides_defaults(api_factory, tmp_path):
    api = api_factory(oslo_policy={'policy_file': _policy_file(tmp_path, {
        'placement:resource_classes:list': '@',
        'placement:traits:list': '!',
    })})
    assert api.get('/resource_classes', token='nobody').status_code == 200
    response = api.get('/traits')
    assert response.status_code == 403
    assert error_text.error(response)['detail'].endswith(
        'Policy does not allow placement:traits:list to be performed.  ')
    # Rules the file does not mention keep their defaults.
    assert api.get('/resource_classes/VCPU', token='nobody'
                   ).status_code == 403


# -- microversions ------------------------------------------------------------

def test_no_version_header_means_minimum(api):
    response = api.get('/', version=None)
    assert response.headers['OpenStack-API-Version'] == 'placement 1.0'


@pytest.mark.parametrize('requested, answered', [
    ('1.7', '1.7'), ('latest', MAX_VERSION), ('1.0', '1.0'),
])
def test_version_echoed_with_vary(api, requested, answered):
    response = api.get('/', version=requested)
    assert response.status_code == 200
    assert response.headers['OpenStack-API-Version'] == 'placement ' + answered
    assert 'openstack-api-version' in response.headers['Vary'].lower()


def test_version_for_another_service_is_ignored(api):
    response = api.get('/', version=None,
                       headers={'OpenStack-API-Version': 'compute 2.1'})
    assert response.headers['OpenStack-API-Version'] == 'placement 1.0'


@pytest.mark.parametrize('version', ['0.5', '1.40', '2.0'])
def test_unsupported_version_is_406_with_range(api, version):
    response = api.get('/', version=version)
    assert response.status_code == 406
    error = error_text.error(response)
    assert error['title'] == 'Not Acceptable'
    assert ('Invalid microversion: Unacceptable version header: %s' % version
            in error['detail'])
    assert error['min_version'] == '1.0'
    assert error['max_version'] == MAX_VERSION
    assert 'code' not in error
    assert 'OpenStack-API-Version' not in response.headers


def test_unsupported_version_in_html(api):
    response = api.get('/', version='0.5', headers={'Accept': 'text/html'})
    assert response.status_code == 406
    assert response.headers['Content-Type'].startswith('text/html')
    assert 'Unacceptable version header: 0.5' in response.text


@pytest.mark.parametrize('version', ['pony.horse', '1.2.3', '1', '1.x'])
def test_malformed_version_is_400(api, version):
    response = api.get('/', version=version)
    assert response.status_code == 400
    error = error_text.error(response)
    assert error['title'] == 'Bad Request'
    assert 'invalid version string: %s' % version in error['detail']
    assert 'max_version' not in error and 'code' not in error


@pytest.mark.parametrize('path, minimum', [
    ('/resource_classes', '1.2'), ('/resource_classes/VCPU', '1.2'),
    ('/traits', '1.6'), ('/traits/HW_CPU_X86_SSE', '1.6'),
])
def test_routes_hidden_below_their_version(api, path, minimum):
    major, minor = minimum.split('.')
    below = '%s.%d' % (major, int(minor) - 1)
    response = api.get(path, version=below)
    assert response.status_code == 404
    assert error_text.error(response)['title'] == 'Not Found'
    assert api.get(path, version=minimum).status_code in (200, 204)


def test_version_gate_comes_before_accept_and_media_type(api):
    response = api.get('/resource_classes', version='1.1',
                       headers={'Accept': 'text/plain'})
    assert response.status_code == 404
    response = api.post('/resource_classes', version='1.1', data='x',
                        headers={'Content-Type': 'text/plain'})
    assert response.status_code == 404


def test_error_inside_app_still_echoes_version(api):
    response = api.post('/', version=None,
                        headers={'Content-Type': 'application/xml'})
    assert response.status_code == 405
    assert response.headers['OpenStack-API-Version'] == 'placement 1.0'


@pytest.mark.parametrize('version, cached', [('1.14', False), ('1.15', True)])
def test_root_cache_headers_from_1_15(api, version, cached):
    headers = api.get('/', version=version).headers
    assert ('Last-Modified' in headers) is cached
    assert ('Cache-Control' in headers) is cached
    if cached:
        assert headers['Cache-Control'] == 'no-cache'
        assert re.match(r'^\w+, \d+ \w+ \d{4} [\d:]+ GMT$',
                        headers['Last-Modified'])


def test_root_document(api):
    assert api.get('/').json == {'versions': [{
        'id': 'v1.0', 'max_version': MAX_VERSION, 'min_version': '1.0',
        'status': 'CURRENT', 'links': [{'rel': 'self', 'href': ''}]}]}


# -- errors -------------------------------------------------------------------

def test_json_error_document(api):
    response = api.get('/barnabas', version='1.22')
    assert response.status_code == 404
    error = error_text.error(response)
    assert set(error) == {'status', 'title', 'detail', 'request_id'}
    assert error['status'] == 404
    assert error['title'] == 'Not Found'
    assert error['detail'] == 'The resource could not be found.\n\n   '
    assert REQUEST_ID.match(error['request_id'])
    assert error['request_id'] == response.headers['X-Openstack-Request-Id']


@pytest.mark.parametrize('version, code', [
    ('1.22', None), ('1.23', 'placement.undefined_code'),
    (MAX_VERSION, 'placement.undefined_code'),
])
def test_error_code_from_1_23(api, version, code):
    assert error_text.error(
        api.get('/barnabas', version=version)).get('code') == code


def test_specific_error_code(api):
    api.post('/resource_providers', json={'name': 'dup'})
    response = api.post('/resource_providers', json={'name': 'dup'})
    assert response.status_code == 409
    assert error_text.error(response)['code'] == 'placement.duplicate_name'


@pytest.mark.parametrize('method, path, allow', [
    ('DELETE', '/', 'GET'),
    ('POST', '/', 'GET'),
    ('DELETE', '/resource_classes', 'GET, POST'),
    ('PATCH', '/resource_classes/VCPU', 'GET, PUT, DELETE'),
    ('POST', '/traits', 'GET'),
    ('OPTIONS', '/traits/CUSTOM_A', 'GET, PUT, DELETE'),
    ('OPTIONS', '/resource_classes', 'GET, POST'),
])
def test_405_lists_allowed_methods(api, method, path, allow):
    response = api.request(method, path)
    assert response.status_code == 405
    assert response.headers['Allow'] == allow
    error = error_text.error(response)
    assert error['title'] == 'Method Not Allowed'
    assert error['detail'] == (
        'The method %s is not allowed for this resource. \n\n The method '
        'specified is not allowed for this resource.' % method)
    assert error['code'] == 'placement.undefined_code'


def test_head_is_not_allowed(api):
    response = api.request('HEAD', '/resource_classes')
    assert response.status_code == 405
    assert response.headers['Allow'] == 'GET, POST'
    assert response.data == b''


def test_405_even_below_route_version(api):
    response = api.delete('/resource_classes', version='1.0')
    assert response.status_code == 405


def test_error_as_html(api):
    response = api.delete('/traits', headers={'Accept': 'text/html'})
    assert response.status_code == 405
    assert response.headers['Content-Type'] == 'text/html; charset=UTF-8'
    assert '<title>405 Method Not Allowed</title>' in response.text
    assert 'The method DELETE is not allowed for this resource.' in (
        response.text)


def test_error_as_plain_text(api):
    response = api.get('/barnabas', headers={'Accept': 'text/plain'})
    assert response.status_code == 404
    assert response.headers['Content-Type'] == 'text/plain; charset=UTF-8'
    assert response.text.startswith('404 Not Found\n\n')
    assert 'The resource could not be found.' in response.text


@pytest.mark.parametrize('accept', [None, '', '*/*', 'application/json'])
def test_error_defaults_to_json(api, accept):
    response = api.get('/barnabas', headers={'Accept': accept})
    assert error_text.error(response)['status'] == 404


def test_browser_accept_header_gets_json(api):
    accept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
    response = api.get('/resource_classes', headers={'Accept': accept})
    assert response.status_code == 200
    assert response.headers['Content-Type'] == 'application/json'


@pytest.mark.parametrize('accept', [
    'text/plain', 'text/html,application/xhtml+xml,application/xml;q=0.9',
    'application/json;q=0, text/plain',
])
def test_get_without_acceptable_json_is_406(api, accept):
    response = api.get('/resource_classes', headers={'Accept': accept})
    assert response.status_code == 406
    assert 'Only application/json is provided' in response.text


def test_root_ignores_accept(api):
    response = api.get('/', headers={'Accept': 'text/plain'})
    assert response.status_code == 200
    assert response.headers['Content-Type'] == 'application/json'


def test_writes_ignore_accept(api):
    response = api.put('/traits/CUSTOM_PLAIN',
                       headers={'Accept': 'text/plain'})
    assert response.status_code == 201


def test_wrong_media_type_is_415(api):
    response = api.post('/resource_classes', data='a class please',
                        headers={'Content-Type': 'text/plain'})
    assert response.status_code == 415
    assert error_text.error(response)['detail'] == (
        'The request media type text/plain is not supported by this server. '
        '\n\n The media type text/plain is not supported, use '
        'application/json')


def test_body_without_media_type_is_400(api):
    response = api.post('/resource_classes', data='a class please')
    assert response.status_code == 400
    assert 'content-type header required when content-length > 0' in (
        error_text.error(response)['detail'])


def test_malformed_json_is_400(api):
    response = api.post('/resource_classes', data='{"name": }',
                        headers={'Content-Type': 'application/json'})
    assert response.status_code == 400
    assert 'Malformed JSON: ' in error_text.error(response)['detail']


# -- mounting under a prefix --------------------------------------------------

def test_links_and_locations_carry_the_prefix(api_factory):
    api = api_factory(prefix='/placement')
    response = api.get('/resource_classes/VCPU')
    assert response.json['links'] == [
        {'rel': 'self', 'href': '/placement/resource_classes/VCPU'}]
    listed = api.get('/resource_classes').json['resource_classes']
    assert all(c['links'][0]['href'].startswith('/placement/resource_classes/')
               for c in listed)
    response = api.post('/resource_classes', json={'name': 'CUSTOM_PFX'})
    assert response.headers['Location'] == (
        'http://localhost/placement/resource_classes/CUSTOM_PFX')
    response = api.put('/traits/CUSTOM_PFX')
    assert response.headers['Location'] == (
        'http://localhost/placement/traits/CUSTOM_PFX')


def test_links_without_prefix(api):
    assert api.get('/resource_classes/VCPU').json['links'] == [
        {'rel': 'self', 'href': '/resource_classes/VCPU'}]


def test_mount_point_itself(api_factory):
    api = api_factory(prefix='/placement')
    assert api.get('/', token=None).status_code == 200
    # As upstream's noauth2: the bare mount point (no trailing slash)
    # is not the open root.
    assert api.get('', token=None).status_code == 401
    assert api.get('', token='admin').status_code == 200


# -- database -----------------------------------------------------------------

FOUR_BYTE_NAME = 'rp-\N{PILE OF POO}-\N{GRINNING FACE}'


def test_four_byte_utf8_round_trip(backend, conf_factory):
    """A connection URL without a charset still stores 4-byte UTF-8."""
    url = sa.engine.make_url(backend.url)
    url = url.difference_update_query(['charset'])
    conf = conf_factory(placement_database={
        'connection': url.render_as_string(hide_password=False)})
    engine = db_engine.create_engine(conf)
    rp = tables.resource_providers
    try:
        with engine.begin() as conn:
            conn.execute(rp.insert().values(
                uuid='9f1d0e4c-1b0a-4a57-a0f3-8f3c2d7e6b51',
                name=FOUR_BYTE_NAME))
        with engine.connect() as conn:
            assert conn.execute(sa.select(rp.c.name)).scalar() == (
                FOUR_BYTE_NAME)
    finally:
        engine.dispose()


def test_four_byte_utf8_in_lookups(api):
    name = 'CUSTOM_\N{PILE OF POO}'
    response = api.get('/resource_classes/' + name)
    assert response.status_code == 404
    assert 'No such resource class %s.' % name in (
        error_text.error(response)['detail'])
    assert api.get('/traits/' + name).status_code == 404
    response = api.get('/traits?name=in:' + name)
    assert response.status_code == 200
    assert response.json == {'traits': []}


@pytest.mark.sqlite_only
@pytest.mark.parametrize('url', [
    'mysql+pymysql://root@127.0.0.1:{port}/placement',
    'postgresql://postgres@127.0.0.1:{port}/placement',
    'sqlite:////nonexistent-directory/placement.db',
])
def test_unreachable_database_is_503(conf_factory, url):
    """A database gone after the start (where it was reachable)."""
    conf = conf_factory(placement_database={
        'connection': url.format(port=gunicorn_server.free_port())})
    api = ApiClient(placement_app.create_app(
        conf, engine=db_engine.create_engine(conf)))
    started = time.monotonic()
    response = api.get('/resource_classes')
    assert time.monotonic() - started < 10
    assert response.status_code == 503
    error = error_text.error(response)
    assert error['title'] == 'Service Unavailable'
    assert 'The placement database is unavailable.' in error['detail']
    # The version document does not need the database.
    assert api.get('/').status_code == 200


@pytest.mark.sqlite_only
@pytest.mark.parametrize('connection, message', [
    (None, 'placement: [placement_database] connection is not set'),
    ('', 'placement: [placement_database] connection is not set'),
    ('nosuchdb://u@h/d',
     'placement: invalid [placement_database] connection URL: '),
    ('not a url', 'placement: invalid [placement_database] connection URL: '),
])
def test_bad_connection_fails_start_up_clearly(conf_factory, connection,
                                               message):
    conf = conf_factory(placement_database={'connection': connection})
    with pytest.raises(service.StartupError) as info:
        service.build_application(conf)
    text = str(info.value)
    assert text.startswith(message)
    assert '\n' not in text
