"""The two Python environments under test: upstream placement and ours.

Upstream openstack-placement 16.0.0 lives in a venv cached under
~/.cache/placement-bench and reused on later runs. Ours is the current
interpreter when it already imports this checkout's ``placement`` (e.g. the
dev venv), else a cached venv with ``pip install -e`` of the checkout.
"""
import hashlib
import os
import subprocess
import sys

UPSTREAM_VERSION = '16.0.0'
UPSTREAM_REQUIREMENTS = [
    'openstack-placement==' + UPSTREAM_VERSION,
    'gunicorn', 'pymysql', 'psycopg2-binary',
]
CACHE_DIR = os.path.join(
    os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'),
    'placement-bench')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
READY_MARKER = '.bench-ready'


class Environment:
    """A venv (or interpreter) that can run one placement implementation."""

    def __init__(self, label, python):
        self.label = label
        self.python = python
        self.bin_dir = os.path.dirname(python)

    def script(self, name):
        path = os.path.join(self.bin_dir, name)
        if not os.path.exists(path):
            raise RuntimeError('%s has no %s script' % (self.bin_dir, name))
        return path

    def run_python(self, code, *args):
        """Run a snippet with this interpreter (it has the DB drivers)."""
        return subprocess.run(
            [self.python, '-c', code] + list(args),
            check=True, capture_output=True, text=True).stdout

    def __repr__(self):
        return '%s(%s)' % (self.label, self.python)


def _venv_python(venv):
    return os.path.join(venv, 'bin', 'python')


def _create_venv(venv, requirements, log):
    log('creating %s (pip install %s)' % (venv, ' '.join(requirements)))
    subprocess.run([sys.executable, '-m', 'venv', venv], check=True)
    subprocess.run(
        [_venv_python(venv), '-m', 'pip', 'install', '-q',
         '--disable-pip-version-check'] + requirements, check=True)
    open(os.path.join(venv, READY_MARKER), 'w').close()


def upstream(venv=None, log=print):
    """The upstream venv: ``venv`` as given, else the cached one."""
    if venv:
        return Environment('upstream', _venv_python(venv))
    venv = os.path.join(CACHE_DIR, 'upstream-' + UPSTREAM_VERSION)
    if not os.path.exists(os.path.join(venv, READY_MARKER)):
        _create_venv(venv, UPSTREAM_REQUIREMENTS, log)
    return Environment('upstream', _venv_python(venv))


def _imports_this_checkout(python):
    """Whether ``python`` imports this checkout's placement and gunicorn."""
    probe = ('import os, placement, gunicorn; '
             'print(os.path.dirname(os.path.dirname(placement.__file__)))')
    try:
        # From a neutral directory, as the servers run: ``-c`` would
        # otherwise find the checkout in the current directory.
        out = subprocess.run([python, '-c', probe], capture_output=True,
                             text=True, timeout=60, cwd=os.sep)
    except OSError:
        return False
    return (out.returncode == 0 and
            os.path.realpath(out.stdout.strip()) == os.path.realpath(REPO))


def ours(venv=None, log=print):
    """Our environment: ``venv`` as given, the current one, or a cached one."""
    if venv:
        return Environment('ours', _venv_python(venv))
    if _imports_this_checkout(sys.executable):
        return Environment('ours', sys.executable)
    digest = hashlib.sha1(os.path.realpath(REPO).encode()).hexdigest()[:10]
    venv = os.path.join(CACHE_DIR, 'ours-' + digest)
    if not (os.path.exists(os.path.join(venv, READY_MARKER))
            and _imports_this_checkout(_venv_python(venv))):
        _create_venv(venv, ['-e', REPO], log)
    return Environment('ours', _venv_python(venv))
