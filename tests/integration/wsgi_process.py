"""Real servers for the integration tests: gunicorn in a child process.

``GunicornServer``, ``free_port`` and ``write_config`` are those of
tests/gunicorn_server.py (kept here for the modules that use them);
``placement_server`` serves this project's service, ours or upstream's,
with a ``placement.conf`` written from a dict. ``integration_venv`` finds
the separate virtualenvs that tools/integration-venvs.sh creates.
"""
import os
import pathlib

from conftest import unavailable
import gunicorn_server
from gunicorn_server import free_port  # noqa: F401 (for other modules)
from gunicorn_server import GunicornServer  # noqa: F401
from gunicorn_server import write_config  # noqa: F401

REPO = pathlib.Path(__file__).resolve().parents[2]
UPSTREAM_VENV_VARIABLE = 'PLACEMENT_COMPARE_UPSTREAM_VENV'


def integration_venv(name, executable):
    """Path to ``executable`` in the integration venv ``name``.

    Skips loudly when the venv is missing (fails under CI=true).
    """
    root = pathlib.Path(os.environ.get('PLACEMENT_INTEGRATION_VENVS') or REPO)
    venv = root / name
    # The script writes the stamp once the venv's install has succeeded.
    if not (venv / '.integration-installed').exists():
        unavailable('%s is missing or incomplete: run '
                    'tools/integration-venvs.sh; these tests are NOT being '
                    'run' % venv)
    return venv / 'bin' / executable


def implementations():
    """The services to test: ours, and upstream's when
    ``PLACEMENT_COMPARE_UPSTREAM_VENV`` names a venv with upstream
    openstack-placement and gunicorn (to check the tests' expectations).
    """
    if os.environ.get(UPSTREAM_VENV_VARIABLE):
        return ['ours', 'upstream']
    return ['ours']


def placement_server(workdir, sections=None, implementation='ours',
                     **server):
    """A placement service under gunicorn (ours, or upstream's: see
    ``implementations``), on SQLite in ``workdir`` (synced at startup),
    configured by ``sections`` on top of noauth2; ``server`` goes to
    GunicornServer (``workers``, ``threads``).
    """
    gunicorn = None
    if implementation == 'upstream':
        gunicorn = pathlib.Path(
            os.environ[UPSTREAM_VENV_VARIABLE]) / 'bin' / 'gunicorn'
    return gunicorn_server.placement_server(workdir, sections, gunicorn,
                                            **server)
