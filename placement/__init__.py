"""A drop-in, faster OpenStack Placement service.

Upstream's openstack-placement installs the same ``placement`` package:
installed into one environment, each overwrites some of the other's files
and both break (upstream's ``placement/conf/`` package hides this one's
``placement/conf.py``), and uninstalling either deletes files the other
needs. So importing this package in an environment that also holds
upstream's stops at once, with one line that says what to do.
"""
import importlib.metadata
import os
import sys

UPSTREAM = 'openstack-placement'
# Modules of upstream's package that this one does not have.
_UPSTREAM_MODULES = ('conf', 'deploy.py', 'handlers')
# The commands of this package: they stop with the line alone.
_COMMANDS = ('placement-manage', 'placement-status', 'placement-api')


def _upstream_beside() -> str | None:
    """What shows upstream's package in this environment, if anything."""
    try:
        found = importlib.metadata.distribution(UPSTREAM)
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        return '%s %s is installed' % (UPSTREAM, found.version)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _UPSTREAM_MODULES:
        if os.path.exists(os.path.join(here, name)):
            return 'upstream\'s placement/%s is in %s' % (name, here)
    return None


def _refuse_beside_upstream() -> None:
    found = _upstream_beside()
    if found is None:
        return
    message = (
        'placement-fast cannot run where %s is installed too (%s): both '
        'install the "placement" package. Use a virtualenv of its own, or '
        'run "pip uninstall openstack-placement" and then reinstall '
        'placement-fast.' % (UPSTREAM, found))
    if os.path.basename(sys.argv[0] if sys.argv else '') in _COMMANDS:
        raise SystemExit(message)
    raise ImportError(message)


_refuse_beside_upstream()
