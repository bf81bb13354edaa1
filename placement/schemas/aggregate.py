"""Request bodies of PUT /resource_providers/{uuid}/aggregates."""

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
