"""Real servers for the integration tests: gunicorn in a child process.

``GunicornServer`` serves one WSGI application on 127.0.0.1 and waits until
it answers; ``placement_server`` does so for this project's service with a
``placement.conf`` written from a dict. ``integration_venv`` finds the
separate virtualenvs that tools/integration-venvs.sh creates.
"""
import configparser
import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import requests

from conftest import unavailable

REPO = pathlib.Path(__file__).resolve().parents[2]
# This project's own scripts (gunicorn, placement-manage) sit beside the
# interpreter running the tests.
OUR_BIN = pathlib.Path(sys.executable).parent
START_TIMEOUT = 180
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


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class GunicornServer:
    """``gunicorn APP`` on 127.0.0.1:``port`` with ``workers`` processes of
    ``threads`` threads, logging to ``log_path``.
    """

    def __init__(self, gunicorn, app, workdir, port=None, env=None,
                 ready_path='/', workers=1, threads=1):
        self.gunicorn = gunicorn
        self.workers = workers
        self.threads = threads
        self.app = app
        self.workdir = pathlib.Path(workdir)
        self.port = port or free_port()
        # gunicorn keeps runtime files (e.g. its control socket) there.
        self.env = dict(os.environ, XDG_RUNTIME_DIR=str(self.workdir),
                        **(env or {}))
        self.ready_path = ready_path
        self.log_path = self.workdir / ('gunicorn-%d.log' % self.port)
        self.process = None

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def start(self):
        command = [str(self.gunicorn), '--bind', '127.0.0.1:%d' % self.port,
                   '--workers', str(self.workers),
                   '--threads', str(self.threads), '--timeout', '120',
                   '--chdir', str(self.workdir), self.app]
        with open(self.log_path, 'ab') as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                # gunicorn puts its starting directory on sys.path: not the
                # checkout, where another venv would import our placement.
                cwd=self.workdir, start_new_session=True)
        try:
            self._wait_until_serving(command)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_serving(self, command):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('%s exited with %s:\n%s' % (
                    ' '.join(command), self.process.returncode,
                    self.log_tail()))
            try:
                # The kernel accepts connections before a worker has loaded
                # the application: a slow answer means not ready yet.
                requests.get(self.url + self.ready_path, timeout=10)
                return
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.3)
        raise RuntimeError('%s did not answer within %ss:\n%s' % (
            ' '.join(command), START_TIMEOUT, self.log_tail()))

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        # gunicorn was started in its own session: stop it and its workers.
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    @contextlib.contextmanager
    def stopped(self):
        """Stop the server for the block, then start it again."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def log_tail(self, lines=40):
        text = self.log_path.read_text(errors='replace')
        return '\n'.join(text.splitlines()[-lines:])

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()


def write_config(path, sections):
    """Write ``{section: {option: value}}`` as an INI file."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_dict(sections)
    with open(path, 'w') as config_file:
        parser.write(config_file)


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
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    config = {
        'api': {'auth_strategy': 'noauth2'},
        'placement_database': {
            'connection': 'sqlite:///%s' % (workdir / 'placement.db'),
            'sync_on_startup': 'true',
        },
    }
    for section, options in (sections or {}).items():
        config.setdefault(section, {}).update(options)
    write_config(workdir / 'placement.conf', config)
    gunicorn = OUR_BIN / 'gunicorn'
    if implementation == 'upstream':
        gunicorn = pathlib.Path(
            os.environ[UPSTREAM_VENV_VARIABLE]) / 'bin' / 'gunicorn'
    return GunicornServer(
        gunicorn, 'placement.wsgi.api:application',
        workdir, env={'OS_PLACEMENT_CONFIG_DIR': str(workdir)}, **server)
