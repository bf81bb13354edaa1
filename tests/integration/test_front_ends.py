"""The front ends the README recommends: slow clients cannot stop the
service behind them, and what they answer themselves is in Placement's
JSON error format.

200 clients hold connections open: half send a request's headers a line
every 2 s (slowloris), half send whole headers and then their body a few
bytes every 2 s; whenever one is cut off it connects again. Meanwhile a
normal client sends GET /resource_providers back to back.

- Behind HAProxy configured from etc/haproxy-placement.cfg, in front of
  gunicorn with the shipped etc/gunicorn/placement.conf.py, every normal
  request is answered 200 and the 99th percentile of their times is
  under a second: HAProxy reads a request's headers and body whole
  (``timeout http-request``, ``option http-buffer-request``) before it
  passes the request on.
- The same gunicorn alone is not protected (its threads wait on the slow
  senders): its 99th percentile is above a second. That shows the
  measurement can fail, and is what the README says.
- With no API host up, the HAProxy sample answers 503 in Placement's
  format (its http-error lines).
"""
import contextlib
import pathlib
import socket
import subprocess
import threading
import time

import pytest
import requests

from api_hosts import HAPROXY
from api_hosts import SAMPLE_CONFIG
from api_hosts import proxy_config
from conftest import unavailable
import gunicorn_server

GUNICORN_CONFIG = (pathlib.Path(__file__).resolve().parents[2] / 'etc'
                   / 'gunicorn' / 'placement.conf.py')
# The shipped configuration's worker processes.
WORKERS = 4
SLOW_CLIENTS = 200
# Seconds between two pieces a slow client sends.
DRIP = 2.0
# Seconds the normal client measures for: longer than the sample's
# "timeout http-request", so that slow clients are cut off and come back.
WINDOW = 14.0
NORMAL_TIMEOUT = 5.0
HEADERS = {'x-auth-token': 'admin',
           'openstack-api-version': 'placement 1.39'}


class SlowClients:
    """``count`` connections to ``port`` kept open and dripping, in one
    thread, until ``stop``."""

    def __init__(self, port, count):
        self.port = port
        self.count = count
        self.stopping = threading.Event()
        self.connects = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stopping.set()
        self.thread.join(30)

    def _open(self, index):
        """A new connection and the pieces it will drip."""
        sock = socket.create_connection(('127.0.0.1', self.port), timeout=5)
        sock.setblocking(False)
        self.connects += 1
        if index % 2:
            # Slowloris: the request line, then a header line at a time.
            pieces = [b'GET /resource_providers HTTP/1.1\r\n'] + [
                b'X-Slow-%d: %d\r\n' % (n, n) for n in range(1000)]
        else:
            # Whole headers, then the body a few bytes at a time.
            sock.send(b'PUT /resource_classes/CUSTOM_SLOW HTTP/1.1\r\n'
                      b'Host: placement\r\nX-Auth-Token: admin\r\n'
                      b'Content-Type: application/json\r\n'
                      b'Content-Length: 4000\r\n\r\n')
            pieces = [b' ' * 4] * 1000
        return [sock, iter(pieces)]

    def _run(self):
        clients = []
        try:
            for index in range(self.count):
                clients.append(self._open(index))
            while not self.stopping.wait(DRIP):
                for index, client in enumerate(clients):
                    sock, pieces = client
                    try:
                        if sock.recv(4096) == b'':
                            raise ConnectionResetError('closed')
                    except BlockingIOError:
                        pass  # nothing said: still held open
                    except OSError:
                        sock.close()
                        clients[index] = self._open(index)
                        continue
                    try:
                        sock.send(next(pieces))
                    except OSError:
                        sock.close()
                        clients[index] = self._open(index)
        finally:
            for sock, _pieces in clients:
                sock.close()


def _normal_requests(url):
    """Seconds each normal request took over WINDOW (a failed or timed
    out one counts as NORMAL_TIMEOUT) and their statuses."""
    times, statuses = [], []
    end = time.monotonic() + WINDOW
    while time.monotonic() < end:
        started = time.monotonic()
        try:
            response = requests.get(url + '/resource_providers',
                                    headers=HEADERS, timeout=NORMAL_TIMEOUT)
            statuses.append(response.status_code)
            times.append(time.monotonic() - started)
        except requests.RequestException as exc:
            statuses.append(type(exc).__name__)
            times.append(NORMAL_TIMEOUT)
        time.sleep(0.05)
    return times, statuses


def _p99(times):
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@pytest.fixture(scope='module')
def shipped_gunicorn(tmp_path_factory):
    """gunicorn with the shipped configuration, on SQLite."""
    workdir = tmp_path_factory.mktemp('slow-clients')
    server = gunicorn_server.placement_server(
        workdir, workers=WORKERS, config_file=GUNICORN_CONFIG)
    with server:
        yield server


@contextlib.contextmanager
def _haproxy(workdir, server_port):
    """HAProxy from the shipped sample in front of the API server on
    ``server_port``; yields its port."""
    if not HAPROXY.exists():
        unavailable('haproxy is not installed (tools/integration-deps.sh): '
                    'the front end tests are NOT run')
    port = gunicorn_server.free_port()
    config = workdir / 'haproxy.cfg'
    config.write_text(proxy_config(
        SAMPLE_CONFIG.read_text(), '127.0.0.1:%d' % port,
        [('api1', '127.0.0.1:%d' % server_port)]))
    log_path = workdir / 'haproxy.log'
    with open(log_path, 'wb') as log:
        process = subprocess.Popen(
            [str(HAPROXY), '-db', '-f', str(config)], stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError):
                socket.create_connection(('127.0.0.1', port), 1).close()
                break
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, 'haproxy never listened'
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope='module')
def haproxy(shipped_gunicorn, tmp_path_factory):
    with _haproxy(tmp_path_factory.mktemp('haproxy'),
                  shipped_gunicorn.port) as port:
        # Up once its health check has seen the server.
        deadline = time.monotonic() + 30
        while requests.get('http://127.0.0.1:%d' % port).status_code != 200:
            assert time.monotonic() < deadline, 'the server never came up'
            time.sleep(0.2)
        yield port


def test_behind_the_haproxy_sample_normal_requests_are_answered_at_once(
        haproxy):
    with SlowClients(haproxy, SLOW_CLIENTS) as slow:
        time.sleep(DRIP)
        times, statuses = _normal_requests('http://127.0.0.1:%d' % haproxy)
    assert set(statuses) == {200}, statuses
    assert _p99(times) < 1.0, sorted(times)[-10:]
    # The slow clients were cut off (timeout http-request) and came back.
    assert slow.connects > SLOW_CLIENTS


def test_gunicorn_alone_is_stopped_by_slow_clients(shipped_gunicorn):
    with SlowClients(shipped_gunicorn.port, SLOW_CLIENTS):
        time.sleep(DRIP)
        times, _statuses = _normal_requests(shipped_gunicorn.url)
    assert _p99(times) > 1.0, sorted(times)[-10:]


def test_the_haproxy_sample_answers_its_own_errors_in_placement_format(
        tmp_path):
    """With no API host up, HAProxy answers 503 itself: in Placement's
    JSON error format, as the sample's http-error lines say."""
    with _haproxy(tmp_path, gunicorn_server.free_port()) as port:
        response = requests.get('http://127.0.0.1:%d/resource_providers'
                                % port, headers=HEADERS, timeout=10)
    assert response.status_code == 503
    assert response.headers['Content-Type'] == 'application/json'
    error = response.json()['errors'][0]
    assert error['status'] == 503
    assert error['title'] == 'Service Unavailable'
