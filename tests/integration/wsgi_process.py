"""Real servers for the integration tests: gunicorn in a child process.

``GunicornServer``, ``free_port`` and ``write_config`` are those of
tests/gunicorn_server.py (kept here for the modules that use them);
``placement_server`` serves this project's service, ours or upstream's,
with a ``placement.conf`` written from a dict. ``integration_venv`` finds
the separate virtualenvs that tools/integration-venvs.sh creates, and
``upstream_bin`` upstream placement's scripts.
"""
import os
import pathlib

from conftest import in_ci
import gunicorn_server
from gunicorn_server import GunicornServer  # noqa: F401
from gunicorn_server import free_port  # noqa: F401 (for other modules)
from gunicorn_server import write_config  # noqa: F401
import integration_venvs

UPSTREAM_VENV_VARIABLE = 'PLACEMENT_COMPARE_UPSTREAM_VENV'


def integration_venv(name, executable):
    """Path to ``executable`` in the integration venv ``name``.

    Skips loudly when the venv is missing (fails under CI=true).
    """
    return integration_venvs.venv(name) / 'bin' / executable


def _compare_setting():
    return os.environ.get(UPSTREAM_VENV_VARIABLE, '').strip()


def implementations():
    """The services to test: ours, and upstream's, to check the tests'
    expectations against it.

    Upstream takes part when ``PLACEMENT_COMPARE_UPSTREAM_VENV`` names a
    venv with upstream openstack-placement and gunicorn; when it is unset,
    whenever tools/integration-venvs.sh has built ``.venv-upstream`` (or
    ``PLACEMENT_UPSTREAM_VENV`` names one), and always under CI=true (a
    missing venv then fails its tests). ``PLACEMENT_COMPARE_UPSTREAM_VENV=off``
    tests ours alone.
    """
    setting = _compare_setting()
    if setting.lower() == 'off':
        return ['ours']
    if setting or in_ci() or integration_venvs.upstream_configured():
        return ['ours', 'upstream']
    return ['ours']


def upstream_bin(executable):
    """Path to upstream's ``executable`` (gunicorn, placement-manage,
    placement-status): in ``PLACEMENT_COMPARE_UPSTREAM_VENV`` when it names
    a venv, else in ``integration_venvs.upstream()`` (skips loudly when
    missing, fails under CI=true).
    """
    setting = _compare_setting()
    if setting and setting.lower() != 'off':
        venv = pathlib.Path(setting).resolve()
    else:
        venv = integration_venvs.upstream()
    return venv / 'bin' / executable


def placement_server(workdir, sections=None, implementation='ours',
                     **server):
    """A placement service under gunicorn (ours, or upstream's: see
    ``implementations``), on SQLite in ``workdir`` (synced at startup),
    configured by ``sections`` on top of noauth2; ``server`` goes to
    GunicornServer (``workers``, ``threads``).
    """
    gunicorn = None
    if implementation == 'upstream':
        gunicorn = upstream_bin('gunicorn')
    return gunicorn_server.placement_server(workdir, sections, gunicorn,
                                            **server)
