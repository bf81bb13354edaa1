"""pyproject.toml must ship every package and the data files inside them."""
import fnmatch
import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_placement_package_is_listed():
    config = tomllib.loads((ROOT / 'pyproject.toml').read_text())
    listed = set(config['tool']['setuptools']['packages'])
    on_disk = {
        '.'.join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / 'placement').rglob('__init__.py')
    }
    assert on_disk <= listed, sorted(on_disk - listed)


def test_migrations_ship_as_package_data():
    config = tomllib.loads((ROOT / 'pyproject.toml').read_text())
    package_dir = config['tool']['setuptools']['package-dir']
    assert package_dir['placement.db.migrations'] == 'alembic'
    assert (ROOT / 'alembic' / 'env.py').is_file()
    assert list((ROOT / 'alembic' / 'versions').glob('*.py'))


def test_data_files_inside_packages_ship():
    config = tomllib.loads((ROOT / 'pyproject.toml').read_text())
    package_data = config['tool']['setuptools']['package-data']
    for path in (ROOT / 'placement').rglob('*'):
        if (not path.is_file() or path.suffix in ('.py', '.pyc')
                or '__pycache__' in path.parts):
            continue
        package = '.'.join(path.parent.relative_to(ROOT).parts)
        assert any(fnmatch.fnmatch(path.name, pattern)
                   for pattern in package_data.get(package, ())), path
