"""Domain errors are translated to HTTP in one place: the app's error
handler, with the route's declared wording (declaration.handler's
``errors``) or the default table (placement.api.pipeline.errors). A
handler module that catches a domain error to raise an HTTP error of its
own would word it a second way.
"""
import ast
import importlib
import pathlib

import pytest

from placement import exception

RESOURCES = (pathlib.Path(__file__).resolve().parents[2]
             / 'placement' / 'api' / 'resources')


def _catches_domain_errors(handler, namespace):
    """Whether the ``except`` clause ``handler`` catches a
    placement.exception class (``except Exception`` and a bare ``except``
    do too).
    """
    if handler.type is None:
        return True
    nodes = (handler.type.elts if isinstance(handler.type, ast.Tuple)
             else [handler.type])
    for node in nodes:
        caught = eval(compile(ast.Expression(node), '<except>', 'eval'),
                      namespace)
        if (issubclass(caught, exception.PlacementError)
                or issubclass(exception.PlacementError, caught)):
            return True
    return False


def _translations(source, namespace):
    """Lines of ``raise errors.…`` inside an ``except`` clause of
    ``source`` that catches domain errors.
    """
    lines = []
    for handler in ast.walk(ast.parse(source)):
        if not (isinstance(handler, ast.ExceptHandler)
                and _catches_domain_errors(handler, namespace)):
            continue
        for statement in handler.body:
            for node in ast.walk(statement):
                if (isinstance(node, ast.Raise) and node.exc is not None
                        and ast.unparse(node.exc).startswith('errors.')):
                    lines.append(node.lineno)
    return lines


@pytest.mark.parametrize('path', sorted(RESOURCES.glob('*.py')),
                         ids=lambda path: path.name)
def test_handlers_leave_domain_errors_to_the_error_handler(path):
    module = importlib.import_module(
        'placement.api.resources.' + path.stem if path.stem != '__init__'
        else 'placement.api.resources')
    lines = _translations(path.read_text(), vars(module))
    assert not lines, '%s translates domain errors at lines %s' % (
        path.name, lines)


def test_a_translation_is_found():
    source = '''
try:
    pass
except ValueError:
    raise errors.BadRequest('not a domain error')
try:
    pass
except (KeyError, exception.NotFound) as exc:
    if exc:
        raise errors.BadRequest(str(exc))
'''
    assert _translations(source, {'exception': exception}) == [10]
