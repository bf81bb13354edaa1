"""The capacity extension's request body and answer
(placement.api.resources.capacity; the fields are described in
placement.candidates.capacity)."""
from placement.schemas import response

_HOST = {
    'type': 'object',
    'required': ['uuid', 'name', 'fit', 'limited_by', 'method'],
    'properties': {
        'uuid': response.UUID, 'name': {'type': 'string'},
        'fit': {'type': 'integer', 'minimum': 0},
        'limited_by': {'type': ['string', 'null']},
        'method': {'type': 'string'},
    },
}
_AGGREGATE_FIT = {
    'type': 'object',
    'required': ['uuid', 'fit'],
    'properties': {'uuid': response.UUID,
                   'fit': {'type': 'integer', 'minimum': 0}},
}
_FLAVOUR = {
    'type': 'object',
    'required': ['name', 'query', 'fit', 'method', 'limited_by',
                 'hosts_with_room', 'hosts', 'aggregates'],
    'properties': {
        'name': {'type': 'string'},
        'query': {'type': 'string'},
        'fit': {'type': 'integer', 'minimum': 0},
        'method': {'type': 'string',
                   'enum': ['exact', 'placed one by one']},
        'limited_by': {'type': ['string', 'null']},
        'hosts_with_room': {'type': 'integer', 'minimum': 0},
        'hosts': {'type': 'array', 'items': _HOST},
        'aggregates': {'type': 'array', 'items': _AGGREGATE_FIT},
    },
}
_USAGE = {
    'type': 'object',
    'required': ['resource_class', 'capacity', 'used', 'aggregates'],
    'properties': {
        'resource_class': {'type': 'string'},
        'capacity': {'type': 'integer'},
        'used': {'type': 'integer'},
        'aggregates': {'type': 'array', 'items': {
            'type': 'object',
            'required': ['uuid', 'capacity', 'used'],
            'properties': {'uuid': response.UUID,
                           'capacity': {'type': 'integer'},
                           'used': {'type': 'integer'}},
        }},
    },
}
ANSWER = response.Body('Capacity', {
    'type': 'object',
    'description': 'How many more instances of each flavour fit, and '
                   'where (extension); see "How many more fit?" in the '
                   'README.',
    'required': ['flavours', 'stranded', 'usage', 'fullest_hosts',
                 'microversion'],
    'properties': {
        'flavours': {'type': 'array', 'items': _FLAVOUR},
        'stranded': {'type': 'array', 'items': {
            'type': 'object',
            'required': ['resource_class', 'free', 'hosts'],
            'properties': {'resource_class': {'type': 'string'},
                           'free': {'type': 'integer'},
                           'hosts': {'type': 'integer'}},
        }},
        'usage': {'type': 'array', 'items': _USAGE},
        'fullest_hosts': {'type': 'array', 'items': {
            'type': 'object',
            'required': ['uuid', 'name', 'resource_class', 'capacity',
                         'used'],
            'properties': {'uuid': response.UUID,
                           'name': {'type': 'string'},
                           'resource_class': {'type': 'string'},
                           'capacity': {'type': 'integer'},
                           'used': {'type': 'integer'}},
        }},
        'microversion': {'type': 'string'},
    },
})

# How many hosts to list per flavour, on every form of the request.
HOSTS = {'type': 'string', 'pattern': '^[0-9]+$'}

# GET /x-capacity/flavours: which of the configured flavours (all when
# not given), as a comma-separated list of names.
GET_FLAVOURS = {
    'type': 'object',
    'properties': {'names': {'type': 'string'}, 'hosts': HOSTS},
    'additionalProperties': False,
}

POST = {
    'type': 'object',
    'required': ['flavours'],
    'properties': {
        'flavours': {
            'type': 'object',
            'description': 'Names mapped to query strings of GET '
                           '/allocation_candidates.',
            'minProperties': 1,
            'additionalProperties': {'type': 'string'},
        },
        'hosts': {'type': 'integer', 'minimum': 0},
    },
    'additionalProperties': False,
}
