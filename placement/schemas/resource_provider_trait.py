"""Request body of PUT /resource_providers/{uuid}/traits."""

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
