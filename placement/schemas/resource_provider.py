"""Request and response bodies and the query string of
/resource_providers.

The request dict layouts follow upstream's because validation errors
print them.
"""
import copy

from placement import versions
from placement.schemas import response

_NAME = {'type': 'string', 'maxLength': 200}
_UUID = {'type': 'string', 'format': 'uuid'}
_OPTIONAL_UUID = {'anyOf': [_UUID, {'type': 'null'}]}


def _object(properties, required=None):
    schema = {'type': 'object', 'properties': properties}
    if required:
        schema['required'] = required
    schema['additionalProperties'] = False
    return schema


POST = _object({'name': _NAME, 'uuid': _UUID}, required=['name'])
# 1.14: a provider may be created under a parent.
POST_1_14 = _object({'name': _NAME, 'uuid': _UUID,
                     'parent_provider_uuid': _OPTIONAL_UUID},
                    required=['name'])

PUT = _object({'name': _NAME}, required=['name'])
# 1.14: PUT may set (1.37: change or clear) the parent.
PUT_1_14 = _object({'name': _NAME, 'parent_provider_uuid': _OPTIONAL_UUID},
                   required=['name'])


def _query(*names):
    types = {'name': {'type': 'string'}, 'uuid': _UUID,
             'member_of': {'type': 'string'},
             'resources': {'type': 'string'}, 'in_tree': _UUID,
             'required': {'type': 'string'}}
    return _object({name: copy.deepcopy(types[name]) for name in names})


# GET /resource_providers filters, by the version that added them.
LIST_QUERY = _query('name', 'uuid')
LIST_QUERY_1_3 = _query('name', 'uuid', 'member_of')
LIST_QUERY_1_4 = _query('name', 'uuid', 'member_of', 'resources')
LIST_QUERY_1_14 = _query('name', 'uuid', 'member_of', 'resources',
                         'in_tree')
LIST_QUERY_1_18 = _query('name', 'uuid', 'member_of', 'resources',
                         'in_tree', 'required')

RESOURCE_PROVIDER = response.Body('ResourceProvider', {
    'type': 'object',
    'required': ['uuid', 'name', 'generation', 'links'],
    'properties': {
        'uuid': response.UUID,
        'name': {'type': 'string'},
        'generation': {'type': 'integer'},
        'links': response.LINKS,
        'parent_provider_uuid': {
            'type': ['string', 'null'],
            'description': response.since(versions.PROVIDER_TREES)},
        'root_provider_uuid': {
            'type': 'string',
            'description': response.since(versions.PROVIDER_TREES)},
    },
})
RESOURCE_PROVIDERS = response.Body('ResourceProviders', {
    'type': 'object',
    'required': ['resource_providers'],
    'properties': {'resource_providers': {
        'type': 'array', 'items': RESOURCE_PROVIDER}},
})
