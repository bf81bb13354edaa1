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
from the Flask url map, version ranges from the handlers' gates, and
query and body schemas are the very objects of placement.schemas that the
handlers validate with. Only the summaries, success statuses and response
shapes below are written by hand (tests check them against the service).
"""
import dataclasses
import http
import json
import re
import urllib.parse

import webob

from placement.api import errors
from placement.api import microversion
from placement.schemas import aggregate as aggregate_schema
from placement.schemas import allocation as allocation_schema
from placement.schemas import allocation_candidate as candidate_schema
from placement.schemas import inventory as inventory_schema
from placement.schemas import resource_class as resource_class_schema
from placement.schemas import resource_provider as provider_schema
from placement.schemas import resource_provider_trait as provider_trait_schema
from placement.schemas import trait as trait_schema
from placement.schemas import usage as usage_schema

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


@dataclasses.dataclass(frozen=True)
class Operation:
    """What the url map and handlers do not tell about an operation.

    ``ok``, ``body`` and ``query`` map the first microversion of each
    variant to its value, as microversion.by_version does. ``ok`` values
    are {status: component schema name, or None for no body}.
    ``min_version`` narrows a handler whose gate is wider than the
    operation (it answers 405 below it).
    """
    summary: str
    ok: dict
    body: dict = None
    query: dict = None
    min_version: str = None


def _since(value):
    return {'1.0': value}


_NO_BODY_204 = _since({204: None})

# By Flask endpoint (blueprint.function); tests keep it complete.
OPERATIONS = {
    'root.home': Operation(
        'The version document', _since({200: 'Versions'})),
    'resource_classes.list_resource_classes': Operation(
        'List resource classes', _since({200: 'ResourceClasses'})),
    'resource_classes.create_resource_class': Operation(
        'Create a custom resource class', _since({201: None}),
        body=_since(resource_class_schema.POST)),
    'resource_classes.show_resource_class': Operation(
        'Show a resource class', _since({200: 'ResourceClass'})),
    'resource_classes.update_resource_class': Operation(
        'Rename a custom resource class (1.2-1.6); create it if missing '
        '(1.7+, no body)',
        {'1.0': {200: 'ResourceClass'}, '1.7': {201: None, 204: None}},
        body={'1.0': resource_class_schema.PUT, '1.7': None}),
    'resource_classes.delete_resource_class': Operation(
        'Delete a custom resource class', _NO_BODY_204),
    'traits.list_traits': Operation(
        'List traits', _since({200: 'Traits'}),
        query=_since(trait_schema.LIST_QUERY)),
    'traits.show_trait': Operation('Check that a trait exists', _NO_BODY_204),
    'traits.put_trait': Operation(
        'Create a custom trait if missing', _since({201: None, 204: None})),
    'traits.delete_trait': Operation('Delete a custom trait', _NO_BODY_204),
    'resource_providers.list_resource_providers': Operation(
        'List resource providers', _since({200: 'ResourceProviders'}),
        query={'1.0': provider_schema.LIST_QUERY,
               '1.3': provider_schema.LIST_QUERY_1_3,
               '1.4': provider_schema.LIST_QUERY_1_4,
               '1.14': provider_schema.LIST_QUERY_1_14,
               '1.18': provider_schema.LIST_QUERY_1_18}),
    'resource_providers.create_resource_provider': Operation(
        'Create a resource provider',
        {'1.0': {201: None}, '1.20': {200: 'ResourceProvider'}},
        body={'1.0': provider_schema.POST, '1.14': provider_schema.POST_1_14}),
    'resource_providers.show_resource_provider': Operation(
        'Show a resource provider', _since({200: 'ResourceProvider'})),
    'resource_providers.update_resource_provider': Operation(
        'Update a resource provider', _since({200: 'ResourceProvider'}),
        body={'1.0': provider_schema.PUT, '1.14': provider_schema.PUT_1_14}),
    'resource_providers.delete_resource_provider': Operation(
        'Delete a resource provider', _NO_BODY_204),
    'aggregates.list_aggregates': Operation(
        "List a provider's aggregates", _since({200: 'ProviderAggregates'})),
    'aggregates.update_aggregates': Operation(
        "Replace a provider's aggregates",
        _since({200: 'ProviderAggregates'}),
        body={'1.0': aggregate_schema.PUT, '1.19': aggregate_schema.PUT_1_19}),
    'resource_provider_traits.list_traits': Operation(
        "List a provider's traits", _since({200: 'ProviderTraits'})),
    'resource_provider_traits.update_traits': Operation(
        "Replace a provider's traits", _since({200: 'ProviderTraits'}),
        body=_since(provider_trait_schema.PUT)),
    'resource_provider_traits.delete_traits': Operation(
        "Remove all of a provider's traits", _NO_BODY_204),
    'inventories.list_inventories': Operation(
        "List a provider's inventories", _since({200: 'Inventories'})),
    'inventories.create_inventory': Operation(
        'Create one inventory', _since({201: 'Inventory'}),
        body=_since(inventory_schema.POST)),
    'inventories.replace_inventories': Operation(
        "Replace all of a provider's inventories",
        _since({200: 'Inventories'}), body=_since(inventory_schema.PUT_ALL)),
    'inventories.delete_inventories': Operation(
        "Delete all of a provider's inventories", _NO_BODY_204,
        min_version='1.5'),
    'inventories.show_inventory': Operation(
        'Show one inventory', _since({200: 'Inventory'})),
    'inventories.update_inventory': Operation(
        'Update one inventory', _since({200: 'Inventory'}),
        body=_since(inventory_schema.PUT_ONE)),
    'inventories.delete_inventory': Operation(
        'Delete one inventory', _NO_BODY_204),
    'usages.provider_usages': Operation(
        "A provider's usages", _since({200: 'ProviderUsages'})),
    'usages.total_usages': Operation(
        "Usages of a project's (and user's) consumers",
        _since({200: 'Usages'}),
        query={'1.0': usage_schema.QUERY, '1.38': usage_schema.QUERY_V1_38}),
    'allocation_candidates.list_allocation_candidates': Operation(
        'Allocation candidates for a request of resources',
        _since({200: 'AllocationCandidates'}), query=candidate_schema.GET),
    'allocations.show_allocations': Operation(
        "A consumer's allocations", _since({200: 'ConsumerAllocations'})),
    'allocations.set_allocations': Operation(
        "Replace a consumer's allocations", _NO_BODY_204,
        body=allocation_schema.PUT),
    'allocations.set_many_allocations': Operation(
        'Replace the allocations of several consumers', _NO_BODY_204,
        body=allocation_schema.POST),
    'allocations.delete_allocations': Operation(
        "Delete a consumer's allocations", _NO_BODY_204),
    'allocations.list_provider_allocations': Operation(
        'Allocations against a provider',
        _since({200: 'ProviderAllocations'})),
    'reshaper.reshape': Operation(
        'Move inventories and allocations between providers at once',
        _NO_BODY_204, body=allocation_schema.RESHAPE),
    # Extension (placement.api.explain).
    'x_explain.explain_allocation_candidates': Operation(
        'Explain which allocation candidates a query finds, and why not '
        'more (extension, admin only)', _since({200: 'Explanation'}),
        query=candidate_schema.GET),
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


def document(app, version=microversion.MAX_VERSION):
    """The OpenAPI document of Flask ``app`` at ``version`` (a tuple)."""
    version_text = '%d.%d' % version
    paths = {}
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods - {'HEAD', 'OPTIONS'}):
            operation = OPERATIONS[rule.endpoint]
            low, high = app.view_functions[rule.endpoint].versions
            if operation.min_version:
                low = max(low, microversion.parse(operation.min_version))
            if not low <= version <= high:
                continue
            path = _PATH_ARGUMENT.sub(r'{\1}', rule.rule)
            paths.setdefault(path, {})[method.lower()] = _operation(
                rule, method, operation, version, (low, high))
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


def _operation(rule, method, operation, version, versions):
    described = {
        'operationId': rule.endpoint,
        'summary': operation.summary,
        'x-microversions': {'min': '%d.%d' % versions[0],
                            'max': '%d.%d' % versions[1]},
        'parameters': _parameters(rule, version),
    }
    query = operation.query and microversion.by_version(
        operation.query, version)
    if query:
        described['parameters'].extend(_query_parameters(query))
        if query.get('patternProperties'):
            # Parameter names OpenAPI cannot list (granular groups).
            described['x-query-patterns'] = query['patternProperties']
    changes = sorted({key for choices in (operation.body, operation.query)
                      if choices for key in choices if key != '1.0'},
                     key=microversion.parse)
    if changes:
        described['x-request-schema-versions'] = changes
    body = operation.body and microversion.by_version(
        operation.body, version)
    if body is not None:
        described['requestBody'] = {
            'required': True,
            'content': {'application/json': {'schema': body}}}
    if rule.endpoint in _OPEN:
        described['security'] = []
    described['responses'] = _responses(
        rule.endpoint, method,
        microversion.by_version(operation.ok, version), body is not None)
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
        return microversion.MAX_VERSION
    return microversion.parse(text) if text in microversion.VERSIONS else None
