"""Trait names, the GET /traits query string and response."""
import re

from placement.schemas import response

CUSTOM_NAME_PATTERN = '^CUSTOM_[A-Z0-9_]+$'
NAME_MAX_LENGTH = 255

LIST_QUERY = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'associated': {'type': 'string'},
    },
    'additionalProperties': False,
}

TRAITS = response.Body('Traits', {
    'type': 'object',
    'required': ['traits'],
    'properties': {'traits': {'type': 'array',
                              'items': {'type': 'string'}}},
})


def is_custom_name(name: str) -> bool:
    return (len(name) <= NAME_MAX_LENGTH
            and re.match(CUSTOM_NAME_PATTERN, name) is not None)
