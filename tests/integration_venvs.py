"""Where the virtualenvs built by tools/integration-venvs.sh are.

They sit in the checkout (or in ``PLACEMENT_INTEGRATION_VENVS``, read by the
script too) and count as built once the script has written their stamp file.
A missing one skips its tests loudly, and fails them under ``CI=true``
(``conftest.unavailable``).

``upstream()`` is the venv with upstream openstack-placement 16.0.0
(``.venv-upstream``); ``PLACEMENT_UPSTREAM_VENV=/path`` uses another one
instead, e.g. one that tools/bench built, which needs no stamp, only
upstream's ``placement-manage``.
"""
import os
import pathlib

from conftest import unavailable

REPO = pathlib.Path(__file__).resolve().parents[1]
# Written by tools/integration-venvs.sh once a venv's install has succeeded.
STAMP = '.integration-installed'
UPSTREAM = '.venv-upstream'
UPSTREAM_VARIABLE = 'PLACEMENT_UPSTREAM_VENV'


def root():
    return pathlib.Path(os.environ.get('PLACEMENT_INTEGRATION_VENVS') or REPO)


def built(name):
    """Whether the script has finished building the venv ``name``."""
    return (root() / name / STAMP).exists()


def venv(name):
    """The venv ``name``; unavailable() when it is missing or incomplete."""
    path = root() / name
    if not built(name):
        unavailable('%s is missing or incomplete: run '
                    'tools/integration-venvs.sh; these tests are NOT being '
                    'run' % path)
    return path


def upstream_configured():
    """Whether an upstream venv is at hand (given, or built by the script)."""
    return bool(os.environ.get(UPSTREAM_VARIABLE)) or built(UPSTREAM)


def upstream():
    """The venv with upstream openstack-placement (absolute path)."""
    given = os.environ.get(UPSTREAM_VARIABLE)
    if not given:
        return venv(UPSTREAM)
    path = pathlib.Path(given).resolve()
    if not (path / 'bin' / 'placement-manage').exists():
        unavailable('%s=%s has no bin/placement-manage (upstream '
                    'openstack-placement); these tests are NOT being run'
                    % (UPSTREAM_VARIABLE, given))
    return path
