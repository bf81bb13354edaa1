"""Request and response bodies of /resource_providers/{uuid}/aggregates.
"""
from placement import versions
from placement.schemas import response

# 1.1-1.18: a bare list of aggregate uuids.
PUT = {
    'type': 'array',
    'items': {'type': 'string', 'format': 'uuid'},
    'uniqueItems': True,
}

# 1.19: the list plus the provider generation it was based on.
PUT_1_19 = {
    'type': 'object',
    'properties': {
        'aggregates': PUT,
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}

PROVIDER_AGGREGATES = response.Body('ProviderAggregates', {
    'type': 'object',
    'required': ['aggregates'],
    'properties': {
        'aggregates': {'type': 'array', 'items': response.UUID},
        'resource_provider_generation': {
            'type': 'integer',
            'description': response.since(versions.AGGREGATES_GENERATION)},
    },
})
