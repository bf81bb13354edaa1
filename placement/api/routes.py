"""The handler modules that make up the API, one blueprint each."""
import importlib

_MODULES = (
    'root',
    'resource_classes',
    'traits',
    'resource_providers',
    'aggregates',
    'resource_provider_traits',
    'inventories',
    'usages',
    'allocation_candidates',
    'allocations',
    'reshaper',
    'explain',
)


def blueprints():
    for name in _MODULES:
        yield importlib.import_module('placement.api.' + name).blueprint
