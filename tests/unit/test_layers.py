"""Imports run one way: the HTTP and command-line adapters (placement.api,
placement.cmd, placement.wsgi) over the core (query language, candidate
engine, schemas, policies, configuration), over the data layer
(placement.db). Only the adapters know about HTTP.
"""
import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'placement'
ADAPTERS = {'api', 'cmd', 'wsgi'}
HTTP = {'flask', 'werkzeug', 'webob'}


def _layer(module):
    """'adapter', 'db', 'exception' or 'core' for a placement module."""
    part = module.split('.')[1] if '.' in module else ''
    if part in ADAPTERS:
        return 'adapter'
    if part in ('db', 'exception'):
        return part
    return 'core'


# What each layer may import from placement.
ALLOWED = {
    'adapter': {'adapter', 'core', 'db', 'exception'},
    'core': {'core', 'db', 'exception'},
    'db': {'db', 'exception'},
    'exception': set(),
}


def _modules():
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        yield '.'.join(parts), path


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == 'placement':
                for alias in node.names:
                    yield 'placement.' + alias.name
            else:
                yield node.module


@pytest.mark.parametrize('module, path', list(_modules()),
                         ids=[module for module, _ in _modules()])
def test_imports_follow_the_layers(module, path):
    layer = _layer(module)
    wrong = []
    for imported in _imports(path):
        top = imported.split('.')[0]
        if top == 'placement' and imported != 'placement':
            if _layer(imported) not in ALLOWED[layer]:
                wrong.append(imported)
        elif top in HTTP and layer != 'adapter':
            wrong.append(imported)
    assert not wrong, '%s (%s) imports %s' % (module, layer, wrong)


def test_the_core_and_the_cli_load_no_http_framework():
    loaded = subprocess.run(
        [sys.executable, '-c',
         'import sys; import placement.candidates, placement.querylang, '
         'placement.candidates.explain, placement.cmd.operator_commands; '
         'print(sorted(m for m in %r if m in sys.modules))' % sorted(HTTP)],
        capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == '[]'


def _handler_modules():
    """placement.api modules that serve routes (define a blueprint)."""
    return {module for module, path in _modules()
            if module.startswith('placement.api.')
            and 'flask.Blueprint(' in path.read_text()}


def test_handler_modules_do_not_import_each_other():
    """What handlers share lives in helper modules (pipeline, claims)."""
    handlers = _handler_modules()
    assert len(handlers) > 10
    crossing = {module: sorted(set(_imports(path)) & handlers)
                for module, path in _modules() if module in handlers}
    assert not {m: i for m, i in crossing.items() if i}


def test_every_handler_module_is_a_resource_module():
    """Routes of the API live in placement/api/resources, one module per
    resource; the operator endpoints beside the API are not blueprints."""
    assert all(module.startswith('placement.api.resources.')
               for module in _handler_modules())


# The rooms of placement.api and which of them each may import: the
# pipeline every request goes through knows no resource or endpoint; the
# handlers use the pipeline, their shared helpers and the counters of
# operations.metrics; the operator endpoints and the middleware use the
# pipeline's errors and versions. The package's top modules (app,
# routes, service, replica_routes) assemble them all.
API_ROOMS = {
    'pipeline': {'pipeline'},
    'resources': {'pipeline', 'resources', 'operations.metrics'},
    'operations': {'pipeline', 'operations', 'operations.metrics'},
    'middleware': {'pipeline'},
}


def _room(module):
    """The room of a placement.api module ('operations.metrics' counts as
    its own), or None for the package's top modules."""
    parts = module.split('.')[2:]
    if parts[:2] == ['operations', 'metrics']:
        return 'operations.metrics'
    return parts[0] if parts and parts[0] in API_ROOMS else None


def _api_imports(path):
    """The placement.api modules ``path`` imports, by full name
    (``from placement.api.pipeline import errors``: ...pipeline.errors)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module.startswith('placement.api.')):
            for alias in node.names:
                yield node.module + '.' + alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith('placement.api.'):
                    yield alias.name


@pytest.mark.parametrize(
    'module, path',
    [(m, p) for m, p in _modules() if _room(m) in API_ROOMS],
    ids=[m for m, _ in _modules() if _room(m) in API_ROOMS])
def test_api_rooms_import_only_what_they_may(module, path):
    allowed = API_ROOMS[_room(module)]
    wrong = [imported for imported in _api_imports(path)
             if _room(imported) not in allowed | {_room(module)}]
    assert not wrong, '%s imports %s' % (module, wrong)
