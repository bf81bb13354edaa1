"""The handler modules that make up the API, one blueprint each."""
import importlib

_MODULES = (
    'root',
    'resource_classes',
    'traits',
)


def blueprints():
    for name in _MODULES:
        yield importlib.import_module('placement.api.' + name).blueprint
