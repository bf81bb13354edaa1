"""GET /x-openapi.json (an extension): an OpenAPI 3.1 description of the
Placement API, open to anyone (it holds nothing that is not in the public
API reference).

The document describes one microversion, ``?microversion=1.N`` (default:
the latest): the operations that exist at that version, their query
parameters and request bodies as that version validates them, and the
``OpenStack-API-Version`` header that selects it. Every operation also
carries ``x-microversions`` (``{"min": ..., "max": ...}``, the range in
which it exists) and, where they change, ``x-request-schema-versions``
(the versions from which its query or body schema differs).

It is built at runtime from the application itself: paths and methods
from the Flask url map; summaries, version ranges, success statuses and
query and body schemas from each route's declaration (``wsgi.handler``),
the very one its requests are checked against. Only the response shapes
below are written by hand (tests check them against the service).
"""
import http
import json
import re
import urllib.parse

import webob

from placement import versions as versions_module
from placement.api.pipeline import errors
from placement.api.pipeline import microversion

PATH = '/x-openapi.json'
OPENAPI_VERSION = '3.1.0'
VERSION_HEADER = 'OpenStack-API-Version'


def _ref(name):
    return {'$ref': '#/components/schemas/' + name}


_LINKS = {
    'type': 'array',
    'items': {
        'type': 'object',
        'required': ['rel', 'href'],
        'properties': {'rel': {'type': 'string'},
                       'href': {'type': 'string'}},
    },
}
_UUID = {'type': 'string', 'format': 'uuid'}
_AMOUNTS = {'type': 'object', 'additionalProperties': {'type': 'integer'}}

# Response shapes, as components/schemas. Fields that only some versions
# carry are described but not required.
_SCHEMAS = {
    'Error': {
        'type': 'object',
        'required': ['errors'],
        'properties': {'errors': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'required': ['status', 'title', 'detail', 'request_id'],
                'properties': {
                    'status': {'type': 'integer'},
                    'title': {'type': 'string'},
                    'detail': {'type': 'string'},
                    'request_id': {'type': ['string', 'null']},
                    'code': {'type': 'string',
                             'description': 'From microversion 1.23.'},
                    'min_version': {'type': 'string'},
                    'max_version': {'type': 'string'},
                },
            },
        }},
    },
    'Versions': {
        'type': 'object',
        'required': ['versions'],
        'properties': {'versions': {
            'type': 'array',
            'items': {
                'type': 'object',
                'required': ['id', 'min_version', 'max_version', 'status',
                             'links'],
                'properties': {
                    'id': {'type': 'string'},
                    'min_version': {'type': 'string'},
                    'max_version': {'type': 'string'},
                    'status': {'type': 'string'},
                    'links': _LINKS,
                },
            },
        }},
    },
    'ResourceClass': {
        'type': 'object',
        'required': ['name', 'links'],
        'properties': {'name': {'type': 'string'}, 'links': _LINKS},
    },
    'ResourceClasses': {
        'type': 'object',
        'required': ['resource_classes'],
        'properties': {'resource_classes': {
            'type': 'array', 'items': _ref('ResourceClass')}},
    },
    'Traits': {
        'type': 'object',
        'required': ['traits'],
        'properties': {'traits': {'type': 'array',
                                  'items': {'type': 'string'}}},
    },
    'ResourceProvider': {
        'type': 'object',
        'required': ['uuid', 'name', 'generation', 'links'],
        'properties': {
            'uuid': _UUID,
            'name': {'type': 'string'},
            'generation': {'type': 'integer'},
            'links': _LINKS,
            'parent_provider_uuid': {
                'type': ['string', 'null'],
                'description': 'From microversion 1.14.'},
            'root_provider_uuid': {
                'type': 'string', 'description': 'From microversion 1.14.'},
        },
    },
    'ResourceProviders': {
        'type': 'object',
        'required': ['resource_providers'],
        'properties': {'resource_providers': {
            'type': 'array', 'items': _ref('ResourceProvider')}},
    },
    'ProviderAggregates': {
        'type': 'object',
        'required': ['aggregates'],
        'properties': {
            'aggregates': {'type': 'array', 'items': _UUID},
            'resource_provider_generation': {
                'type': 'integer',
                'description': 'From microversion 1.19.'},
        },
    },
    'ProviderTraits': {
        'type': 'object',
        'required': ['traits', 'resource_provider_generation'],
        'properties': {
            'traits': {'type': 'array', 'items': {'type': 'string'}},
            'resource_provider_generation': {'type': 'integer'},
        },
    },
    'Inventory': {
        'type': 'object',
        'required': ['total', 'reserved', 'min_unit', 'max_unit',
                     'step_size', 'allocation_ratio'],
        'properties': {
            'total': {'type': 'integer'},
            'reserved': {'type': 'integer'},
            'min_unit': {'type': 'integer'},
            'max_unit': {'type': 'integer'},
            'step_size': {'type': 'integer'},
            'allocation_ratio': {'type': 'number'},
            'resource_provider_generation': {'type': 'integer'},
        },
    },
    'Inventories': {
        'type': 'object',
        'required': ['inventories', 'resource_provider_generation'],
        'properties': {
            'inventories': {'type': 'object',
                            'additionalProperties': _ref('Inventory')},
            'resource_provider_generation': {'type': 'integer'},
        },
    },
    'ProviderUsages': {
        'type': 'object',
        'required': ['usages', 'resource_provider_generation'],
        'properties': {
            'usages': _AMOUNTS,
            'resource_provider_generation': {'type': 'integer'},
        },
    },
    'Usages': {
        'type': 'object',
        'required': ['usages'],
        'properties': {'usages': {
            'type': 'object',
            'description': 'Amounts by resource class; from microversion '
                           '1.38 grouped by consumer type, each with a '
                           'consumer_count.'}},
    },
    'ConsumerAllocations': {
        'type': 'object',
        'required': ['allocations'],
        'properties': {
            'allocations': {
                'type': 'object',
                'additionalProperties': {
                    'type': 'object',
                    'required': ['resources'],
                    'properties': {'resources': _AMOUNTS,
                                   'generation': {'type': 'integer'}},
                },
            },
            'project_id': {'type': 'string'},
            'user_id': {'type': 'string'},
            'consumer_generation': {'type': ['integer', 'null']},
            'consumer_type': {'type': ['string', 'null']},
        },
    },
    'ProviderAllocations': {
        'type': 'object',
        'required': ['allocations', 'resource_provider_generation'],
        'properties': {
            'allocations': {
                'type': 'object',
                'additionalProperties': {
                    'type': 'object',
                    'required': ['resources'],
                    'properties': {
                        'resources': _AMOUNTS,
                        'consumer_generation': {'type': ['integer', 'null']},
                    },
                },
            },
            'resource_provider_generation': {'type': 'integer'},
        },
    },
    'Explanation': {
        'type': 'object',
        'description': 'See GET /x-explain/allocation_candidates in the '
                       'README.',
    },
    'AllocationCandidates': {
        'type': 'object',
        'required': ['allocation_requests', 'provider_summaries'],
        'properties': {
            'allocation_requests': {'type': 'array',
                                    'items': {'type': 'object'}},
            'provider_summaries': {'type': 'object'},
        },
    },
}


# Open operations: no token needed.
_OPEN = {'root.home'}
_PATH_ARGUMENT = re.compile(r'<(?:[^:<>]+:)?([^<>]+)>')
_PATH_PARAMETERS = {
    'uuid': ('A resource provider uuid.', _UUID),
    'consumer_uuid': ('A consumer uuid.', _UUID),
    'resource_class': ('A resource class name.', {'type': 'string'}),
    'name': ('A resource class or trait name.', {'type': 'string'}),
}
_WRITES = ('PUT', 'POST', 'PATCH', 'DELETE')


def document(app, version=versions_module.MAX_VERSION):
    """The OpenAPI document of Flask ``app`` at ``version`` (a tuple), from
    the routes' declarations (placement.api.wsgi.Declaration).
    """
    version_text = '%d.%d' % version
    paths = {}
    for rule in app.url_map.iter_rules():
        declaration = app.view_functions[rule.endpoint].declaration
        low, high = declaration.documented_from, declaration.versions[1]
        if not low <= version <= high:
            continue
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
                'The Placement API at microversion %s, as selected by the '
                '%s header. Other versions: ?microversion=1.N on this '
                'document.' % (version_text, VERSION_HEADER)),
        },
        'x-microversions': {'min': microversion.min_version_string(),
                            'max': microversion.max_version_string()},
        'security': [{'token': []}],
        'paths': paths,
        'components': {
            'schemas': _SCHEMAS,
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
        'x-microversions': {'min': '%d.%d' % versions[0],
                            'max': '%d.%d' % versions[1]},
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
            '%d.%d' % key for key in changes]
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
        'description': 'Selects the microversion this document describes.',
        'schema': {'type': 'string',
                   'const': 'placement %d.%d' % version},
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
            status, None if status == 401 else 'Error')
    return responses


def _response(status, schema):
    response = {'description': http.HTTPStatus(status).phrase}
    if schema is not None:
        response['content'] = {'application/json': {'schema': _ref(schema)}}
    return response


class Endpoint:
    """Serves the document; each version's is built once per mount point
    (its ``servers`` entry is the URL prefix the API is mounted under).
    """

    def __init__(self, app):
        self._app = app
        self._encoded = {}

    def __call__(self, environ, start_response):
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
