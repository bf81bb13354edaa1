"""Request and response bodies of /resource_providers/{uuid}/inventories.

Request property order and nesting follow upstream: validation messages
print the schema.
"""
import copy
from typing import Any

from placement.db import inventory
from placement.schemas import response

RESOURCE_CLASS_PATTERN = '^[A-Z0-9_]+$'


def _amount(minimum):
    return {'type': 'integer', 'maximum': inventory.MAX_INT,
            'minimum': minimum}


# PUT .../inventories/{resource_class}
PUT_ONE: dict[str, Any] = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'total': _amount(1),
        'reserved': _amount(0),
        'min_unit': _amount(1),
        'max_unit': _amount(1),
        'step_size': _amount(1),
        'allocation_ratio': {'type': 'number',
                             'maximum': inventory.MAX_FLOAT},
    },
    'required': ['total', 'resource_provider_generation'],
    'additionalProperties': False,
}

# POST .../inventories: the class is in the body, no generation.
POST = copy.deepcopy(PUT_ONE)
POST['properties']['resource_class'] = {
    'type': 'string', 'pattern': RESOURCE_CLASS_PATTERN}
POST['required'] = ['total', 'resource_class']

# One record of PUT .../inventories.
_RECORD = copy.deepcopy(PUT_ONE)
_RECORD['required'] = ['total']

# PUT .../inventories: names not matching the pattern are not validated
# here; they fail later as unknown classes.
PUT_ALL = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {RESOURCE_CLASS_PATTERN: _RECORD},
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}

INVENTORY = response.Body('Inventory', {
    'type': 'object',
    'required': ['total', 'reserved', 'min_unit', 'max_unit',
                 'step_size', 'allocation_ratio'],
    'properties': {
        'total': {'type': 'integer'},
        'reserved': {'type': 'integer'},
        'min_unit': {'type': 'integer'},
        'max_unit': {'type': 'integer'},
        'step_size': {'type': 'integer'},
        'allocation_ratio': {'type': 'number'},
        'resource_provider_generation': {'type': 'integer'},
    },
})
INVENTORIES = response.Body('Inventories', {
    'type': 'object',
    'required': ['inventories', 'resource_provider_generation'],
    'properties': {
        'inventories': {'type': 'object',
                        'additionalProperties': INVENTORY},
        'resource_provider_generation': {'type': 'integer'},
    },
})
