"""Request bodies for /resource_providers/{uuid}/inventories.

Property order and nesting follow upstream: validation messages print the
schema.
"""
import copy

from placement.db import inventory

RESOURCE_CLASS_PATTERN = '^[A-Z0-9_]+$'


def _amount(minimum):
    return {'type': 'integer', 'maximum': inventory.MAX_INT,
            'minimum': minimum}


# PUT .../inventories/{resource_class}
PUT_ONE = {
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
