"""Query strings and responses of GET /usages and of a provider's
usages.
"""
import copy
from typing import Any

from placement import versions
from placement.schemas import response

_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

QUERY: dict[str, Any] = {
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

PROVIDER_USAGES = response.Body('ProviderUsages', {
    'type': 'object',
    'required': ['usages', 'resource_provider_generation'],
    'properties': {
        'usages': response.AMOUNTS,
        'resource_provider_generation': {'type': 'integer'},
    },
})
USAGES = response.Body('Usages', {
    'type': 'object',
    'required': ['usages'],
    'properties': {'usages': {
        'type': 'object',
        'description': 'Amounts by resource class; from microversion '
                       '%s grouped by consumer type, each with a '
                       'consumer_count.'
                       % versions.to_text(versions.CONSUMER_TYPE)}},
})
