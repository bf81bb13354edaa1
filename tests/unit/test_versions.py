"""The microversion registry (placement.versions): every version is
listed and described, every feature gate names a listed version, and no
other module spells a version itself.
"""
import ast
import pathlib

import pytest

from placement import versions

PACKAGE = pathlib.Path(versions.__file__).resolve().parent
# Where version tuples may be written out: the registry, and the request
# schemas' {version: schema} tables.
MAY_SPELL_VERSIONS = (PACKAGE / 'versions.py', PACKAGE / 'schemas')


def _gates():
    """The module's version constants: its gates, MIN_ and MAX_VERSION."""
    return {name: value for name, value in vars(versions).items()
            if name.isupper() and isinstance(value, tuple)
            and len(value) == 2
            and all(type(part) is int for part in value)}


def test_every_version_is_listed_once_in_order():
    listed = [entry.version for entry in versions.MICROVERSIONS]
    assert listed == [(1, minor) for minor in range(0, 40)]
    assert versions.VERSIONS == ['1.%d' % minor for minor in range(0, 40)]
    assert (versions.MIN_VERSION, versions.MAX_VERSION) == ((1, 0), (1, 39))


def test_every_version_says_what_it_added():
    undescribed = [entry.version for entry in versions.MICROVERSIONS
                   if not entry.added.strip()]
    assert not undescribed


def test_every_gate_is_a_listed_version():
    listed = {entry.version for entry in versions.MICROVERSIONS}
    unlisted = {name: value for name, value in _gates().items()
                if value not in listed}
    assert not unlisted
    assert {'SAME_SUBTREE', 'CONSUMER_TYPE', 'ERROR_CODES', 'CACHE_HEADERS',
            'RESERVED_EQUAL_TOTAL'} <= set(_gates())


def test_a_gate_must_be_listed():
    with pytest.raises(ValueError):
        versions._listed((1, 40))


def _version_literals(path):
    """Line numbers of (1, N) tuples of int constants in ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Tuple) and len(node.elts) == 2
                and all(isinstance(elt, ast.Constant)
                        and type(elt.value) is int for elt in node.elts)
                and node.elts[0].value == 1):
            yield node.lineno


def test_no_version_literal_outside_the_registry():
    """Code names the gate (placement.versions) it depends on."""
    found = []
    for path in sorted(PACKAGE.rglob('*.py')):
        if any(path == allowed or allowed in path.parents
               for allowed in MAY_SPELL_VERSIONS):
            continue
        found += ['%s:%d' % (path.relative_to(PACKAGE.parent), line)
                  for line in _version_literals(path)]
    assert not found


def test_versions_read_and_write_as_clients_write_them():
    assert versions.to_text(versions.SAME_SUBTREE) == '1.36'
    assert versions.from_text('1.36') == versions.SAME_SUBTREE
    assert versions.from_text('latest') == versions.MAX_VERSION
    with pytest.raises(versions.UnknownVersion):
        versions.from_text('1.40')
