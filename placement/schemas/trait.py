"""Trait names and the GET /traits query string."""
import re

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


def is_custom_name(name):
    return (len(name) <= NAME_MAX_LENGTH
            and re.match(CUSTOM_NAME_PATTERN, name) is not None)
