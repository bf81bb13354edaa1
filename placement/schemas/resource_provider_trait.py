"""Request and response bodies of /resource_providers/{uuid}/traits."""
from placement.schemas import response

PUT = {
    'type': 'object',
    'properties': {
        'traits': {
            'type': 'array',
            'items': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        },
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}

PROVIDER_TRAITS = response.Body('ProviderTraits', {
    'type': 'object',
    'required': ['traits', 'resource_provider_generation'],
    'properties': {
        'traits': {'type': 'array', 'items': {'type': 'string'}},
        'resource_provider_generation': {'type': 'integer'},
    },
})
