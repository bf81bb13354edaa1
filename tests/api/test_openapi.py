"""GET /x-openapi.json: the document, its agreement with the handlers, and
schemathesis runs against the live application on every backend.
"""
import importlib
import pkgutil
import uuid

import flask
import hypothesis
from hypothesis import strategies
import pytest
import schemathesis
from schemathesis import checks as schemathesis_checks
from schemathesis.core import failures as schemathesis_failures
from schemathesis.specs.openapi import checks as openapi_checks

from placement import schemas
from placement.api import routes
from placement.api.pipeline import declaration
from placement.api.pipeline import microversion
from placement.schemas import response as response_schema

import error_text

ROLES = {'X-Roles': 'admin,service'}
SCHEMATHESIS_VERSIONS = ('1.0', '1.20', '1.39')
EXAMPLES_PER_OPERATION = 6
CHECKS = [schemathesis_checks.not_a_server_error,
          openapi_checks.status_code_conformance,
          openapi_checks.content_type_conformance,
          openapi_checks.response_schema_conformance]


def _document(api, version=None, **kwargs):
    path = '/x-openapi.json'
    if version:
        path += '?microversion=' + version
    response = api.get(path, token=None, version=None, **kwargs)
    assert response.status_code == 200, response.text
    assert response.headers['Content-Type'] == 'application/json'
    return response.json


def _operations(document):
    for path, methods in document['paths'].items():
        for method, operation in methods.items():
            yield path, method.upper(), operation


@pytest.mark.sqlite_only
def test_served_without_token_latest_by_default(api):
    document = _document(api)
    assert document['openapi'] == '3.1.0'
    assert document['info']['version'] == microversion.max_version_string()
    assert document['x-microversions'] == {'min': '1.0', 'max': '1.39'}
    assert document['servers'] == [{'url': '/'}]
    assert document == _document(api, '1.39')



@pytest.mark.sqlite_only
def test_version_is_chosen_by_the_query_string_alone(api):
    """The document says what chooses its version, and does as it says:
    ?microversion= does, the request's version header does not."""
    header = {'OpenStack-API-Version': 'placement 1.20'}
    latest = _document(api, headers=header)
    assert latest['info']['version'] == '1.39'
    assert '?microversion=1.N' in latest['info']['description']
    assert 'whatever header' in latest['info']['description']
    older = _document(api, '1.20', headers={
        'OpenStack-API-Version': 'placement 1.39'})
    assert older['info']['version'] == '1.20'
    assert older['info']['description'].startswith(
        'The Placement API at microversion 1.20: what an API request '
        'sending "OpenStack-API-Version: placement 1.20" gets.')

@pytest.mark.sqlite_only
def test_servers_follow_the_mount_point(api_factory):
    api = api_factory(prefix='/placement')
    assert _document(api)['servers'] == [{'url': '/placement'}]


@pytest.mark.sqlite_only
@pytest.mark.parametrize('asked', ['2.0', '1.40', 'latest', '1', ''])
def test_unknown_microversion_is_400(api, asked):
    response = api.get('/x-openapi.json?microversion=' + asked, token=None)
    assert response.status_code == 400
    assert 'microversion must be one of 1.0 to 1.39' in (
        error_text.raw_detail(response))


def test_every_route_is_declared():
    """The document and the checks of every request come from one
    declaration per route (declaration.handler).
    """
    app = _routes()
    undeclared = [rule.endpoint for rule in app.url_map.iter_rules()
                  if not isinstance(getattr(app.view_functions[rule.endpoint],
                                            'declaration', None),
                                    declaration.Declaration)]
    assert not undeclared


def _response_bodies():
    """Every response body the schema modules define."""
    for module in pkgutil.iter_modules(schemas.__path__):
        loaded = importlib.import_module('placement.schemas.' + module.name)
        for value in vars(loaded).values():
            if isinstance(value, response_schema.Body):
                yield value


@pytest.mark.sqlite_only
@pytest.mark.parametrize('version', ['1.0', '1.39'])
def test_components_are_the_declared_response_bodies(api, version):
    """Each response body the schemas define is a component under its own
    name, and none is unused by every handler.
    """
    components = _document(api, version)['components']['schemas']
    bodies = {body.name: body for body in _response_bodies()}
    assert set(components) == set(bodies)
    for name, body in bodies.items():
        assert components[name].keys() == body.schema.keys()


@pytest.mark.sqlite_only
def test_operations_follow_microversions(api):
    operations = {'1.0': {}, '1.39': {}}
    for version in operations:
        operations[version] = {
            (path, method): operation
            for path, method, operation in _operations(
                _document(api, version))}
    assert ('/reshaper', 'POST') not in operations['1.0']
    assert ('/resource_providers/{uuid}/inventories', 'DELETE') not in (
        operations['1.0'])
    reshaper = operations['1.39'][('/reshaper', 'POST')]
    assert reshaper['x-microversions'] == {'min': '1.30', 'max': '1.39'}
    allocations = operations['1.39'][('/allocations/{consumer_uuid}', 'PUT')]
    assert allocations['x-request-schema-versions'] == [
        '1.8', '1.12', '1.28', '1.34', '1.38']
    header = allocations['parameters'][0]
    assert header['in'] == 'header' and header['required']
    assert header['schema']['const'] == 'placement 1.39'
    assert operations['1.39'][('/', 'GET')]['security'] == []


def _routes():
    """A Flask app with the service's url map and view functions."""
    app = flask.Flask('routes', static_folder=None)
    for blueprint in routes.BLUEPRINTS:
        app.register_blueprint(blueprint)
    return app


def _seed(api):
    """A provider with inventory, a custom class and a custom trait; the
    values to put in path parameters to reach them.
    """
    provider = str(uuid.uuid4())
    assert api.post('/resource_providers', json={
        'name': 'openapi-' + provider, 'uuid': provider}).status_code == 200
    assert api.put('/resource_providers/%s/inventories' % provider, json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}}).status_code == 200
    assert api.put('/resource_classes/CUSTOM_OPENAPI').status_code in (
        201, 204)
    assert api.put('/traits/CUSTOM_OPENAPI').status_code in (201, 204)
    return {'uuid': provider, 'consumer_uuid': str(uuid.uuid4()),
            'resource_class': 'VCPU', 'name': 'CUSTOM_OPENAPI'}


def _schemathesis_strategy(operation, values):
    """Random path parameters (mostly 404s) or ones naming seeded data."""
    names = {parameter.name for parameter in operation.path_parameters}
    if not names:
        return operation.as_strategy()
    return strategies.one_of(
        operation.as_strategy(),
        operation.as_strategy(path_parameters={
            name: values[name] for name in names}))


@pytest.mark.parametrize('version', SCHEMATHESIS_VERSIONS)
def test_schemathesis(api_factory, version):
    """Generated requests get no 5xx and only documented statuses,
    content types and response bodies (with the request metrics on, which
    must not change that).
    """
    api = api_factory(metrics={'enabled': True})
    schema = schemathesis.openapi.from_wsgi(
        '/x-openapi.json?microversion=' + version, api.client.application)
    values = _seed(api)
    headers = dict(ROLES, **{'X-Auth-Token': 'admin'})
    found = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if api.get('/resource_providers/' + values['uuid']).status_code != 200:
            values = _seed(api)

        @hypothesis.settings(
            max_examples=EXAMPLES_PER_OPERATION, deadline=None,
            derandomize=True, database=None,
            suppress_health_check=list(hypothesis.HealthCheck))
        @hypothesis.given(case=_schemathesis_strategy(operation, values))
        def run(case):
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            run()
        except (AssertionError, schemathesis_failures.FailureGroup) as exc:
            found.append('%s: %s' % (operation.label, exc))
    assert not found, '\n\n'.join(found)
