"""GET /x-openapi.json (an extension): an OpenAPI 3.1 description of the
Placement API, open to anyone (it holds nothing that is not in the public
API reference).

The document describes one microversion, the one its own query string
asks for with ``?microversion=1.N`` (default: the latest; the
``OpenStack-API-Version`` header of the request for the document is not
read): the operations that exist at that version, their query parameters
and request bodies as that version validates them, and the
``OpenStack-API-Version`` header an API request sends to get them. Every
operation also carries ``x-microversions`` (``{"min": ..., "max":
...}``, the range in which it exists) and, where they change,
``x-request-schema-versions`` (the versions from which its query or body
schema differs).

It is built at runtime from the application itself: paths and methods
from the Flask url map; summaries, version ranges, success statuses,
query and body schemas and response bodies from each route's declaration
(``declaration.handler``), the very one its requests are checked against.
The response bodies' schemas (placement.schemas.*, response.Body) become
the document's components; tests check them against the service.
"""
import http
import json
import re
from typing import Any
from typing import Callable
from typing import Iterable
import urllib.parse

import flask
import webob

from placement import versions as versions_module
from placement.api.pipeline import declaration as declaration_module
from placement.api.pipeline import errors
from placement.api.pipeline import microversion
from placement.schemas import response as response_schema

PATH = '/x-openapi.json'
OPENAPI_VERSION = '3.1.0'
VERSION_HEADER = 'OpenStack-API-Version'

# Open operations: no token needed.
_OPEN = {'root.home'}
_PATH_ARGUMENT = re.compile(r'<(?:[^:<>]+:)?([^<>]+)>')
_PATH_PARAMETERS = {
    'uuid': ('A resource provider uuid.', response_schema.UUID),
    'consumer_uuid': ('A consumer uuid.', response_schema.UUID),
    'resource_class': ('A resource class name.', {'type': 'string'}),
    'name': ('A resource class or trait name.', {'type': 'string'}),
}
_WRITES = ('PUT', 'POST', 'PATCH', 'DELETE')


def document(app: flask.Flask,
             version: versions_module.Version = versions_module.MAX_VERSION
             ) -> dict[str, Any]:
    """The OpenAPI document of Flask ``app`` at ``version`` (a tuple), from
    the routes' declarations (placement.api.pipeline.declaration).
    """
    version_text = versions_module.to_text(version)
    rules = list(app.url_map.iter_rules())
    declarations = [declaration_module.of(app.view_functions[rule.endpoint])
                    for rule in rules]
    paths: dict[str, dict[str, Any]] = {}
    for rule, declaration in zip(rules, declarations):
        low, high = declaration.documented_from, declaration.versions[1]
        if not low <= version <= high:
            continue
        # Flask's add_url_rule gives every rule its methods.
        assert rule.methods is not None
        for method in sorted(rule.methods - {'HEAD', 'OPTIONS'}):
            path = _PATH_ARGUMENT.sub(r'{\1}', rule.rule)
            paths.setdefault(path, {})[method.lower()] = _operation(
                rule, method, declaration, version, (low, high))
    return {
        'openapi': OPENAPI_VERSION,
        'info': {
            'title': 'OpenStack Placement API',
            'version': version_text,
            'description': (
                'The Placement API at microversion %s: what an API request '
                'sending "%s: placement %s" gets. This document describes '
                'the version its ?microversion=1.N query parameter asks '
                'for (default: the latest), whatever header the request '
                'for it sends.' % (version_text, VERSION_HEADER,
                                   version_text)),
        },
        'x-microversions': {'min': microversion.min_version_string(),
                            'max': microversion.max_version_string()},
        'security': [{'token': []}],
        'paths': paths,
        'components': {
            'schemas': _components(declarations),
            'securitySchemes': {'token': {
                'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token',
                'description': 'A Keystone token (with auth_strategy '
                               'noauth2: user[:project], "admin" being an '
                               'administrator).'}},
        },
    }


def _operation(rule, method, declaration, version, versions):
    described = {
        'operationId': rule.endpoint,
        'summary': declaration.summary,
        'x-microversions': {'min': versions_module.to_text(versions[0]),
                            'max': versions_module.to_text(versions[1])},
        'parameters': _parameters(rule, version),
    }
    query = declaration.query and versions_module.pick(
        declaration.query, version)
    if query:
        described['parameters'].extend(_query_parameters(query))
        if query.get('patternProperties'):
            # Parameter names OpenAPI cannot list (granular groups).
            described['x-query-patterns'] = query['patternProperties']
    changes = sorted({key for table in (declaration.body, declaration.query)
                      if table for key in table if key > versions[0]})
    if changes:
        described['x-request-schema-versions'] = [
            versions_module.to_text(key) for key in changes]
    body = declaration.body and versions_module.pick(
        declaration.body, version)
    if body is not None:
        described['requestBody'] = {
            'required': True,
            'content': {'application/json': {'schema': body}}}
    if rule.endpoint in _OPEN:
        described['security'] = []
    described['responses'] = _responses(
        rule.endpoint, method,
        versions_module.pick(declaration.ok, version), body is not None)
    return described


def _parameters(rule, version):
    parameters = [{
        'name': VERSION_HEADER, 'in': 'header', 'required': True,
        'description': 'The microversion an API request asks for; this '
                       'document describes the one given here.',
        'schema': {'type': 'string',
                   'const': 'placement ' + versions_module.to_text(version)},
    }]
    for name in _PATH_ARGUMENT.findall(rule.rule):
        description, schema = _PATH_PARAMETERS[name]
        parameters.append({'name': name, 'in': 'path', 'required': True,
                           'description': description, 'schema': schema})
    return parameters


def _query_parameters(query):
    """The named properties of a query string schema; as the service
    reads them, a parameter given twice counts once (the last).
    """
    required = query.get('required', ())
    return [{'name': name, 'in': 'query', 'required': name in required,
             'schema': schema}
            for name, schema in query.get('properties', {}).items()]


def _responses(endpoint, method, ok, has_body):
    responses = {}
    for status, schema in ok.items():
        responses[str(status)] = _response(status, schema)
    failures = [400, 404, 406]
    if endpoint not in _OPEN:
        failures += [401, 403, 503]
    if method in _WRITES:
        failures.append(409)
    if has_body:
        failures.append(415)
    for status in sorted(failures):
        # keystonemiddleware and noauth2 word 401 their own way.
        responses[str(status)] = _response(
            status, None if status == 401 else response_schema.ERROR)
    return responses


def _response(status, body):
    response: dict[str, Any] = {
        'description': http.HTTPStatus(status).phrase}
    if body is not None:
        response['content'] = {'application/json': {'schema': _ref(body)}}
    return response


def _ref(body):
    return {'$ref': '#/components/schemas/' + body.name}


def _components(declarations):
    """components/schemas: the response bodies the routes declare at any
    version (so every version's document has the same), those their
    schemas refer to, and the error body; a schema's reference to another
    body is a $ref to its component.
    """
    components: dict[str, Any] = {}
    bodies: dict[str, response_schema.Body] = {}

    def component(value):
        if isinstance(value, response_schema.Body):
            if bodies.setdefault(value.name, value) is not value:
                raise ValueError('Two response bodies are named ' + value.name)
            if value.name not in components:
                components[value.name] = component(value.schema)
            return _ref(value)
        if isinstance(value, dict):
            return {key: component(item) for key, item in value.items()}
        if isinstance(value, list):
            return [component(item) for item in value]
        return value

    component(response_schema.ERROR)
    for declaration in declarations:
        for by_status in declaration.ok.values():
            for body in by_status.values():
                component(body)
    return components


class Endpoint:
    """Serves the document; each version's is built once per mount point
    (its ``servers`` entry is the URL prefix the API is mounted under).
    """

    def __init__(self, app: flask.Flask) -> None:
        self._app = app
        self._encoded: dict[tuple[versions_module.Version, str], bytes] = {}

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = webob.Request(environ)
        # Not request.GET: webob refuses a query string that is not UTF-8.
        asked = urllib.parse.parse_qs(
            environ.get('QUERY_STRING', ''), keep_blank_values=True,
            errors='replace').get('microversion')
        version = _asked_version(asked[-1] if asked else None)
        if version is None:
            return errors.BadRequest(
                'microversion must be one of %s to %s.' % (
                    microversion.min_version_string(),
                    microversion.max_version_string())).to_wsgi(environ)(
                        environ, start_response)
        key = (version, request.script_name)
        if key not in self._encoded:
            described = document(self._app, version)
            described['servers'] = [{'url': request.script_name or '/'}]
            self._encoded[key] = json.dumps(described).encode()
        response = webob.Response(body=self._encoded[key],
                                  content_type='application/json',
                                  charset=None)
        return response(environ, start_response)


def _asked_version(text):
    """The version tuple of ``?microversion=``, the latest when absent,
    None when it is not one of the service's versions.
    """
    if text is None:
        return versions_module.MAX_VERSION
    if text not in versions_module.VERSIONS:
        return None
    return versions_module.parse(text)
