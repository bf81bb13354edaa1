"""Query strings of GET /usages."""
import copy

_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

QUERY = {
    'type': 'object',
    'properties': {
        'project_id': _ID,
        'user_id': _ID,
    },
    'required': ['project_id'],
    'additionalProperties': False,
}

# 1.38: usages can be narrowed to a consumer type, or to ``all`` /
# ``unknown`` (consumers without a type).
QUERY_V1_38 = copy.deepcopy(QUERY)
QUERY_V1_38['properties']['consumer_type'] = {
    'type': 'string',
    'pattern': '^[A-Z0-9_]+$|^all|^unknown$',
    'minLength': 1,
    'maxLength': 255,
}
