"""Gunicorn in a child process, for any test that needs a real server.

``GunicornServer`` serves one WSGI application (on 127.0.0.1 unless told
another address, its command behind a prefix such as ``ip netns exec NS``
if given one) and waits until it answers and every worker has booted;
``kill()`` SIGKILLs it with its workers. ``placement_server`` does so for
this project's service with a ``placement.conf`` written from a dict.
``free_port`` and ``write_config`` help set up other servers.

Importable from any test module: tests/ is on sys.path (it holds the
top-level conftest.py). tests/integration/wsgi_process.py adds the
integration venvs and upstream's service.
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

# This project's own scripts (gunicorn, placement-manage) sit beside the
# interpreter running the tests.
OUR_BIN = pathlib.Path(sys.executable).parent
START_TIMEOUT = 180
# What gunicorn logs (at its default level) as each worker process starts.
WORKER_BOOTED = b'Booting worker'


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class GunicornServer:
    """``gunicorn APP`` on ``host``:``port`` with ``workers`` processes of
    ``threads`` threads, logging to ``log_path``; ``command_prefix`` goes
    before the command (``ip netns exec NS``: the port is then free, or
    not, in that namespace).
    """

    def __init__(self, gunicorn, app, workdir, port=None, env=None,
                 ready_path='/', workers=1, threads=1, host='127.0.0.1',
                 command_prefix=(), config_file=None):
        self.gunicorn = gunicorn
        # A gunicorn configuration (the shipped one): it names the
        # application and sets the workers (``workers`` must say how many).
        self.config_file = config_file
        self.workers = workers
        self.threads = threads
        self.app = app
        self.workdir = pathlib.Path(workdir)
        self.host = host
        self.command_prefix = [str(part) for part in command_prefix]
        self.port = port or free_port()
        # gunicorn keeps runtime files (e.g. its control socket) there.
        self.env = dict(os.environ, XDG_RUNTIME_DIR=str(self.workdir),
                        **(env or {}))
        self.ready_path = ready_path
        self.log_path = self.workdir / ('gunicorn-%d.log' % self.port)
        self.process = None

    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    def start(self):
        command = self.command_prefix + [
            str(self.gunicorn), '--bind', '%s:%d' % (self.host, self.port),
            '--chdir', str(self.workdir)]
        if self.config_file:
            # It takes OS_PLACEMENT_CONFIG_DIR from the environment.
            command += ['--config', str(self.config_file)]
        else:
            command += ['--workers', str(self.workers), '--threads',
                        str(self.threads), '--timeout', '120', self.app]
        # The log is appended to across restarts: this start's lines follow.
        log_start = (self.log_path.stat().st_size
                     if self.log_path.exists() else 0)
        with open(self.log_path, 'ab') as log:
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                stdin=subprocess.DEVNULL,
                # gunicorn puts its starting directory on sys.path: not the
                # checkout, where another venv would import our placement.
                cwd=self.workdir, start_new_session=True)
        try:
            self._wait_until_serving(command, log_start)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_serving(self, command, log_start):
        deadline = time.monotonic() + START_TIMEOUT
        answered = False
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('%s exited with %s:\n%s' % (
                    ' '.join(command), self.process.returncode,
                    self.log_tail()))
            if not answered:
                try:
                    # The kernel accepts connections before a worker has
                    # loaded the application: a slow answer means not
                    # ready yet.
                    requests.get(self.url + self.ready_path, timeout=10)
                    answered = True
                except (requests.ConnectionError, requests.Timeout):
                    pass
            if answered and self._booted(log_start) >= self.workers:
                return
            time.sleep(0.3)
        raise RuntimeError('%s did not answer with %d workers within %ss:\n%s'
                           % (' '.join(command), self.workers, START_TIMEOUT,
                              self.log_tail()))

    def _booted(self, log_start):
        """How many workers this start has booted so far."""
        with open(self.log_path, 'rb') as log:
            log.seek(log_start)
            return log.read().count(WORKER_BOOTED)

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

    def kill(self):
        """SIGKILL the master and its workers (its process group) at once;
        return once they are all gone."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        # The workers die too, their sockets closed as each exits (as a
        # zombie until init reaps it).
        deadline = time.monotonic() + 10
        while _group_running(self.process.pid) and (
                time.monotonic() < deadline):
            time.sleep(0.01)

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


def _group_running(pgid):
    """Whether a process of group ``pgid`` runs (neither gone nor a
    zombie)."""
    for stat in pathlib.Path('/proc').glob('[0-9]*/stat'):
        try:
            fields = stat.read_text().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command: state, ppid, pgrp.
        if int(fields[2]) == pgid and fields[0] not in ('Z', 'X'):
            return True
    return False


def write_config(path, sections):
    """Write ``{section: {option: value}}`` as an INI file."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_dict(sections)
    with open(path, 'w') as config_file:
        parser.write(config_file)


def placement_server(workdir, sections=None, gunicorn=None, **server):
    """This project's service under ``gunicorn`` (ours by default), on
    SQLite in ``workdir`` (synced at startup), configured by ``sections``
    on top of noauth2; ``server`` goes to GunicornServer (``workers``,
    ``threads``).
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
    return GunicornServer(
        gunicorn or OUR_BIN / 'gunicorn', 'placement.wsgi.api:application',
        workdir, env={'OS_PLACEMENT_CONFIG_DIR': str(workdir)}, **server)
