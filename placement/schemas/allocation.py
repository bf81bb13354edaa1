"""Request bodies for /allocations and /reshaper, per microversion, and
the allocations of a consumer and of a provider.

Request property order and nesting follow upstream: validation messages
print the schema.
"""
import copy
from typing import Any

from placement import versions
from placement.schemas import inventory as inventory_schema
from placement.schemas import response

UUID_KEY = '^[0-9a-fA-F-]{36}$'

_RESOURCES = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        inventory_schema.RESOURCE_CLASS_PATTERN: {
            'type': 'integer', 'minimum': 1},
    },
    'additionalProperties': False,
}

_OWNER_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

# PUT /allocations/{consumer_uuid} 1.0-1.7: a list of providers.
PUT_V1_0: dict[str, Any] = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {
                            'uuid': {'type': 'string', 'format': 'uuid'},
                        },
                        'additionalProperties': False,
                        'required': ['uuid'],
                    },
                    'resources': _RESOURCES,
                },
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['allocations'],
    'additionalProperties': False,
}

# 1.8: project and user are required.
PUT_V1_8 = copy.deepcopy(PUT_V1_0)
PUT_V1_8['properties']['project_id'] = _OWNER_ID
PUT_V1_8['properties']['user_id'] = _OWNER_ID
PUT_V1_8['required'] = ['allocations', 'project_id', 'user_id']

# 1.12: allocations keyed by provider uuid (a GET's body can be sent back,
# provider generations included, which are ignored).
PUT_V1_12: dict[str, Any] = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'minProperties': 1,
            'patternProperties': {
                UUID_KEY: {
                    'type': 'object',
                    'properties': {
                        'generation': {'type': 'integer'},
                        'resources': _RESOURCES,
                    },
                    'required': ['resources'],
                    'additionalProperties': False,
                },
            },
            'additionalProperties': False,
        },
        'project_id': _OWNER_ID,
        'user_id': _OWNER_ID,
    },
    'additionalProperties': False,
    'required': ['allocations', 'project_id', 'user_id'],
}

# 1.28: the consumer generation is required, and an empty allocations
# object removes the consumer's allocations.
PUT_V1_28 = copy.deepcopy(PUT_V1_12)
PUT_V1_28['properties']['allocations']['minProperties'] = 0
PUT_V1_28['properties']['consumer_generation'] = {
    'type': ['integer', 'null'], 'additionalProperties': False}
PUT_V1_28['required'].append('consumer_generation')

# 1.34: the mappings of an allocation candidate are accepted (not stored).
PUT_V1_34 = copy.deepcopy(PUT_V1_28)
PUT_V1_34['properties']['mappings'] = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        '[a-zA-Z0-9_-]{1,64}': {
            'type': 'array',
            'minItems': 1,
            'items': {'type': 'string', 'format': 'uuid'},
        },
    },
}

# 1.38: the consumer type is required.
PUT_V1_38 = copy.deepcopy(PUT_V1_34)
PUT_V1_38['properties']['consumer_type'] = {
    'type': 'string', 'pattern': inventory_schema.RESOURCE_CLASS_PATTERN,
    'minLength': 1, 'maxLength': 255}
PUT_V1_38['required'].append('consumer_type')

PUT = {versions.MIN_VERSION: PUT_V1_0,
       versions.CONSUMER_OWNER: PUT_V1_8,
       versions.ALLOCATIONS_BY_PROVIDER: PUT_V1_12,
       versions.CONSUMER_GENERATION: PUT_V1_28,
       versions.GROUP_MAPPINGS: PUT_V1_34,
       versions.CONSUMER_TYPE: PUT_V1_38}


def _by_consumer(consumer, min_consumers):
    """Consumers keyed by uuid, each with a PUT (1.12+) body."""
    consumer = copy.deepcopy(consumer)
    consumer['properties']['allocations']['minProperties'] = 0
    return {
        'type': 'object',
        'minProperties': min_consumers,
        'additionalProperties': False,
        'patternProperties': {UUID_KEY: consumer},
    }


# POST /allocations (1.13+): many consumers at once; an empty allocations
# object removes that consumer's allocations.
POST = {versions.MANY_CONSUMERS: _by_consumer(PUT_V1_12, 1),
        versions.CONSUMER_GENERATION: _by_consumer(PUT_V1_28, 1),
        versions.GROUP_MAPPINGS: _by_consumer(PUT_V1_34, 1),
        versions.CONSUMER_TYPE: _by_consumer(PUT_V1_38, 1)}


def _reshape(consumer):
    return {
        'type': 'object',
        'properties': {
            'inventories': {
                'type': 'object',
                'patternProperties': {UUID_KEY: inventory_schema.PUT_ALL},
                'minProperties': 1,
                'additionalProperties': False,
            },
            'allocations': _by_consumer(consumer, 0),
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


# POST /reshaper (1.30+): inventories of many providers, allocations of
# many consumers.
RESHAPE = {versions.RESHAPER: _reshape(PUT_V1_28),
           versions.GROUP_MAPPINGS: _reshape(PUT_V1_34),
           versions.CONSUMER_TYPE: _reshape(PUT_V1_38)}


def _allocations(**fields):
    """GET's allocations: {uuid: resources and ``fields``}."""
    return {
        'type': 'object',
        'additionalProperties': {
            'type': 'object',
            'required': ['resources'],
            'properties': dict(resources=response.AMOUNTS, **fields),
        },
    }


CONSUMER_ALLOCATIONS = response.Body('ConsumerAllocations', {
    'type': 'object',
    'required': ['allocations'],
    'properties': {
        'allocations': _allocations(generation={'type': 'integer'}),
        'project_id': {'type': 'string'},
        'user_id': {'type': 'string'},
        'consumer_generation': {'type': ['integer', 'null']},
        'consumer_type': {'type': ['string', 'null']},
    },
})
PROVIDER_ALLOCATIONS = response.Body('ProviderAllocations', {
    'type': 'object',
    'required': ['allocations', 'resource_provider_generation'],
    'properties': {
        'allocations': _allocations(
            consumer_generation={'type': ['integer', 'null']}),
        'resource_provider_generation': {'type': 'integer'},
    },
})
