"""The explicit package list in pyproject.toml must cover every package."""
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
