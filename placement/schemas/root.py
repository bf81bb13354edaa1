"""The response of GET /: the version document."""
from placement.schemas import response

VERSIONS = response.Body('Versions', {
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
                'links': response.LINKS,
            },
        },
    }},
})
