"""The service under test: gunicorn API servers in the root namespace.

Each server runs in a session of its own, so that a SIGKILL of its process
group takes the master and every worker at once, as a crashed host would.
"""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import time

import requests

APP = 'placement.wsgi.api:application'
START_TIMEOUT = 120.0
# What gunicorn logs (at its default level) as each worker process starts.
WORKER_BOOTED = b'Booting worker'


class ApiServer:
    """``gunicorn`` of ``venv`` serving the service on 127.0.0.1:``port``
    with ``workers`` sync workers, configured by ``config_dir``."""

    def __init__(self, name: str, venv: pathlib.Path,
                 config_dir: pathlib.Path, port: int, workers: int,
                 workdir: pathlib.Path) -> None:
        self.name = name
        self.venv = venv
        self.config_dir = config_dir
        self.port = port
        self.workers = workers
        self.workdir = workdir
        self.log_path = workdir / ('%s.log' % name)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return 'http://127.0.0.1:%d' % self.port

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [
            str(self.venv / 'bin' / 'gunicorn'),
            '--bind', '127.0.0.1:%d' % self.port,
            '--workers', str(self.workers), '--timeout', '120',
            '--chdir', str(self.workdir), APP]
        env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(self.config_dir),
                   XDG_RUNTIME_DIR=str(self.workdir))
        log_start = (self.log_path.stat().st_size
                     if self.log_path.exists() else 0)
        with open(self.log_path, 'ab') as log:
            # Started from its own directory: gunicorn puts it on sys.path,
            # and a checkout there would shadow another venv's package.
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env,
                stdin=subprocess.DEVNULL, cwd=self.workdir,
                start_new_session=True)
        try:
            self._wait_until_serving(log_start)
        except BaseException:
            self.kill()
            raise

    def _wait_until_serving(self, log_start: int) -> None:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        answered = False
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('%s exited with %s:\n%s' % (
                    self.name, self.process.returncode, self.log_tail()))
            if not answered:
                try:
                    requests.get(self.url + '/', timeout=10)
                    answered = True
                except requests.RequestException:
                    pass
            if answered and self._booted(log_start) >= self.workers:
                return
            time.sleep(0.3)
        raise RuntimeError('%s did not serve with %d workers within %ss:\n%s'
                           % (self.name, self.workers, START_TIMEOUT,
                              self.log_tail()))

    def _booted(self, log_start: int) -> int:
        with open(self.log_path, 'rb') as log:
            log.seek(log_start)
            return log.read().count(WORKER_BOOTED)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM the master and its workers; SIGKILL after 30 s."""
        if not self.running():
            return
        assert self.process is not None
        _signal_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        _wait_group_gone(self.process.pid, 10)

    def kill(self) -> None:
        """SIGKILL the master and every worker at once; return when they
        are gone."""
        if self.process is None:
            return
        _signal_group(self.process.pid, signal.SIGKILL)
        self.process.wait()
        _wait_group_gone(self.process.pid, 10)

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors='replace')
        return '\n'.join(text.splitlines()[-lines:])


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def _group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` runs (neither gone nor a
    zombie)."""
    for stat in pathlib.Path('/proc').glob('[0-9]*/stat'):
        try:
            fields = stat.read_text().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ('Z', 'X'):
            return True
    return False


def _wait_group_gone(pgid: int, timeout: float) -> None:
    # Workers orphaned by a killed master die of the same SIGKILL; wait
    # until the kernel has closed their sockets.
    deadline = time.monotonic() + timeout
    while _group_running(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
