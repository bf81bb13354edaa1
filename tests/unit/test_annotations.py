"""Every public function and method of the HTTP adapter (placement.api)
and the data layer (placement.db) annotates its parameters and its
return, so that mypy (pyproject.toml's [tool.mypy]) checks its callers.

Public: a name without a leading underscore, and ``__init__`` and
``__call__``; defined at module level or in a class body (functions
nested in functions are excluded). ``self`` and ``cls`` need no
annotation, nor ``__init__``'s return.
"""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'placement'
CHECKED = ('api', 'db')
DUNDERS = {'__init__', '__call__'}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _paths():
    for part in CHECKED:
        yield from sorted((PACKAGE / part).rglob('*.py'))


def _public(name):
    return not name.startswith('_') or name in DUNDERS


def _functions(body, prefix=''):
    """(qualified name, node) of the functions directly in body and in
    the bodies of the classes there, not those nested in functions."""
    for node in body:
        if isinstance(node, FUNCTIONS):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, prefix + node.name + '.')


def _missing(node):
    """What the function leaves unannotated."""
    args = node.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    params += [arg for arg in (args.vararg, args.kwarg) if arg]
    missing = [
        arg.arg for arg in params
        if arg.annotation is None and arg.arg not in ('self', 'cls')
    ]
    if node.returns is None and node.name != '__init__':
        missing.append('return')
    return missing


def _cases():
    for path in _paths():
        tree = ast.parse(path.read_text(), filename=str(path))
        module = path.relative_to(PACKAGE.parent).as_posix()
        for name, node in _functions(tree.body):
            if _public(node.name):
                yield f'{module}:{node.lineno}:{name}', node


def test_the_checked_packages_have_functions():
    assert sum(1 for _ in _cases()) > 100


def test_every_public_function_is_annotated():
    missing = {
        where: absent
        for where, node in _cases()
        if (absent := _missing(node))
    }
    assert not missing, '\n'.join(
        f'{where}: {", ".join(absent)}' for where, absent in missing.items()
    )


@pytest.mark.parametrize('source, expected', [
    ('def f(a: int) -> int: ...', []),
    ('def f(a, *b, c, **d): ...', ['a', 'c', 'b', 'd', 'return']),
    ('class C:\n def __init__(self, a: int): ...', []),
    ('class C:\n def m(cls, a: int): ...', ['return']),
])
def test_missing_annotations_are_found(source, expected):
    (_, node), = _functions(ast.parse(source).body)
    assert _missing(node) == expected


def test_nested_and_private_functions_are_exempt():
    source = (
        'def f() -> None:\n'
        '    def g(a): ...\n'
        'def _h(a): ...\n'
        'class C:\n'
        '    def _m(self, a): ...\n'
    )
    found = [
        name for name, node in _functions(ast.parse(source).body)
        if _public(node.name)
    ]
    assert found == ['f']
