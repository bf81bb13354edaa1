"""This package refuses to run in an environment that also holds
upstream's openstack-placement (both install the ``placement`` package),
with one line that says what to do: as an import error for a WSGI server,
as the whole output of its own commands.

The environment is a folder on PYTHONPATH holding a copy of this package
and what an installation of upstream leaves there: its distribution's
metadata, or its modules inside the package.
"""
import pathlib
import shutil
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'placement'


def _environment(tmp_path, upstream):
    site = tmp_path / 'site'
    shutil.copytree(PACKAGE, site / 'placement',
                    ignore=shutil.ignore_patterns('__pycache__'))
    if upstream == 'metadata':
        info = site / 'openstack_placement-16.0.0.dist-info'
        info.mkdir()
        (info / 'METADATA').write_text(
            'Metadata-Version: 2.1\nName: openstack-placement\n'
            'Version: 16.0.0\n')
    elif upstream == 'modules':
        (site / 'placement' / 'conf').mkdir()
        (site / 'placement' / 'conf' / '__init__.py').write_text('')
    return site


def _run(site, argv0, code):
    return subprocess.run(
        [sys.executable, '-c', 'import sys; sys.argv[0] = %r; %s'
         % (argv0, code)],
        env={'PYTHONPATH': str(site), 'PATH': '/usr/bin:/bin'},
        capture_output=True, text=True, cwd=site, check=False)


@pytest.mark.parametrize('upstream', ['metadata', 'modules'])
def test_a_wsgi_server_gets_an_import_error_saying_what_to_do(tmp_path,
                                                                upstream):
    site = _environment(tmp_path, upstream)
    result = _run(site, 'gunicorn', 'import placement')
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('ImportError: placement-fast cannot run where '
                           'openstack-placement is installed too')
    assert 'pip uninstall openstack-placement' in last


@pytest.mark.parametrize('command', ['placement-manage', 'placement-status'])
def test_the_commands_stop_with_the_line_alone(tmp_path, command):
    site = _environment(tmp_path, 'metadata')
    result = _run(site, '/usr/local/bin/' + command, 'import placement')
    assert result.returncode == 1
    assert result.stderr.startswith(
        'placement-fast cannot run where openstack-placement is installed '
        'too (openstack-placement 16.0.0 is installed)')
    assert len(result.stderr.strip().splitlines()) == 1


def test_alone_it_imports(tmp_path):
    site = _environment(tmp_path, None)
    result = _run(site, 'gunicorn', 'import placement; print("ok")')
    assert result.stdout.strip() == 'ok', result.stderr
