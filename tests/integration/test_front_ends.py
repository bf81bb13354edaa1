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
- A request whose body did not all arrive is never passed on.
- With no API host up, the HAProxy sample answers 503 in Placement's
  format (its http-error lines).
- The HAProxy sample resends a request only when no host received it:
  one whose connection was refused goes to another host; one that a host
  read and then closed or reset its connection on without answering (it
  died meanwhile), or never answered in time, is not sent again (it may
  have been carried out) and the client gets 502 or 504, in Placement's
  format. Fake hosts here count what they received.
"""
import contextlib
import pathlib
import socket
import struct
import subprocess
import threading
import time
import uuid

import pytest
import requests

from api_hosts import HAPROXY
from api_hosts import SAMPLE_CONFIG
from api_hosts import parse_proxy_log
from api_hosts import proxy_config
from conftest import unavailable
import cut_requests
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
def _haproxy(workdir, server_port, servers=None, sample=None):
    """HAProxy from the shipped sample (or ``sample``, a text made from it)
    in front of the API server on ``server_port``, or of ``servers``
    [(name, address)]; yields its port. Its log, a LOG_FORMAT line per
    request, is workdir/haproxy.log."""
    if not HAPROXY.exists():
        unavailable('haproxy is not installed (tools/integration-deps.sh): '
                    'the front end tests are NOT run')
    port = gunicorn_server.free_port()
    config = workdir / 'haproxy.cfg'
    config.write_text(proxy_config(
        sample or SAMPLE_CONFIG.read_text(), '127.0.0.1:%d' % port,
        servers or [('api1', '127.0.0.1:%d' % server_port)],
        log_target='stdout'))
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
        wait_until_up('http://127.0.0.1:%d' % port)
        yield port


def wait_until_up(url):
    """Until HAProxy at ``url`` passes requests on: its health check has
    seen the server."""
    deadline = time.monotonic() + 30
    while requests.get(url, timeout=10).status_code != 200:
        assert time.monotonic() < deadline, 'the server never came up'
        time.sleep(0.2)


def test_behind_the_haproxy_sample_normal_requests_are_answered_at_once(
        haproxy):
    with SlowClients(haproxy, SLOW_CLIENTS) as slow:
        time.sleep(DRIP)
        times, statuses = _normal_requests('http://127.0.0.1:%d' % haproxy)
    assert set(statuses) == {200}, statuses
    assert _p99(times) < 1.0, sorted(times)[-10:]
    # The slow clients were cut off (timeout http-request) and came back.
    assert slow.connects > SLOW_CLIENTS


def test_the_haproxy_sample_passes_on_no_body_that_did_not_all_arrive(
        haproxy, shipped_gunicorn):
    """A body shorter than announced, or chunked without its last chunk,
    is never passed on: HAProxy closes the connection without an answer
    (tests/cut_requests.py sends them)."""
    request = cut_requests.ROUTES[0].request(None, 0)
    for how in cut_requests.HOW:
        if how == 'reset':
            cut_requests.send(haproxy, request, how)
        else:
            with pytest.raises(ConnectionError):
                cut_requests.send(haproxy, request, how)
    # Once a later request is through, nothing was passed on before it.
    assert requests.get('http://127.0.0.1:%d/resource_providers' % haproxy,
                        headers=HEADERS, timeout=10).json() == {
                            'resource_providers': []}
    assert not [entry for entry in cut_requests.logged(
        shipped_gunicorn.log_path) if entry[0] == 'POST']


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


class FakeHost:
    """An API host on 127.0.0.1 that answers its health check (GET
    /healthcheck) 200 and every other request as ``mode`` says:

    - 'answer': 204;
    - 'close': reads the request whole, then closes the connection
      without an answer, as a host whose API process died after it
      carried the request out;
    - 'reset': reads it, then resets the connection;
    - 'hang': reads it and never answers.

    ``received`` lists the request lines of the requests it read (health
    checks left out).
    """

    def __init__(self, mode):
        self.mode = mode
        self.received = []
        self.checks = 0
        self._lock = threading.Lock()
        self._held = []
        self._stopping = threading.Event()
        self._listener = socket.create_server(('127.0.0.1', 0), backlog=64)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stopping.set()
        self._thread.join(10)
        self._listener.close()
        for conn in self._held:
            conn.close()

    def _serve(self):
        while not self._stopping.is_set():
            try:
                conn, _address = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._handle, args=(conn,),
                             daemon=True).start()

    def _handle(self, conn):
        conn.settimeout(10)
        try:
            request_line = self._read_request(conn)
        except OSError:
            conn.close()
            return
        if request_line.startswith(b'GET /healthcheck '):
            with self._lock:
                self.checks += 1
            body = b'{"status": "ok", "database": "ok"}'
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/'
                         b'json\r\nContent-Length: %d\r\nConnection: '
                         b'close\r\n\r\n%s' % (len(body), body))
            conn.close()
            return
        with self._lock:
            self.received.append(request_line.decode())
        if self.mode == 'answer':
            conn.sendall(b'HTTP/1.1 204 No Content\r\nConnection: close'
                         b'\r\n\r\n')
            conn.close()
        elif self.mode == 'close':
            conn.close()
        elif self.mode == 'reset':
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack('ii', 1, 0))
            conn.close()
        else:
            with self._lock:
                self._held.append(conn)

    @staticmethod
    def _read_request(conn):
        """The request's line, once its headers and body are read."""
        data = b''
        while b'\r\n\r\n' not in data:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError('closed before the headers ended')
            data += chunk
        head, body = data.split(b'\r\n\r\n', 1)
        lines = head.split(b'\r\n')
        length = 0
        for line in lines[1:]:
            name, _colon, value = line.partition(b':')
            if name.strip().lower() == b'content-length':
                length = int(value)
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError('closed before the body ended')
            body += chunk
        return lines[0]


def _wait_checked(hosts):
    """Until HAProxy has checked each fake host (up)."""
    deadline = time.monotonic() + 10
    while any(host.checks == 0 for host in hosts):
        assert time.monotonic() < deadline, 'HAProxy never checked them'
        time.sleep(0.1)


def _put_claim(port):
    consumer = str(uuid.uuid4())
    body = {'allocations': {str(uuid.uuid4()): {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}
    # A new connection each: HAProxy's answer to the first request of a
    # connection.
    return requests.put(
        'http://127.0.0.1:%d/allocations/%s' % (port, consumer), json=body,
        headers={**HEADERS, 'Connection': 'close'}, timeout=30)


def test_the_haproxy_sample_resends_a_request_no_host_received(tmp_path):
    """A host whose connection is refused (its API server is down) never
    got the request: HAProxy sends it to another host. The refusing host
    stays up by its health check (on another port), so that requests keep
    meeting it."""
    refused = gunicorn_server.free_port()
    with FakeHost('answer') as checks, FakeHost('answer') as good:
        servers = [('api1', '127.0.0.1:%d port %d' % (refused, checks.port)),
                   ('api2', '127.0.0.1:%d' % good.port)]
        with _haproxy(tmp_path, None, servers) as port:
            _wait_checked([checks, good])
            statuses = [_put_claim(port).status_code for _ in range(10)]
        logged = parse_proxy_log((tmp_path / 'haproxy.log').read_text())
    assert statuses == [204] * 10
    assert len(good.received) == 10
    assert checks.received == []
    resent = [line for line in logged if line.retries]
    assert resent, logged
    assert all(line.redispatched and line.server == 'api2'
               for line in resent), resent


@pytest.mark.parametrize('mode,status', [
    ('close', 502), ('reset', 502), ('hang', 504)])
def test_the_haproxy_sample_never_resends_a_request_a_host_received(
        tmp_path, mode, status):
    """A host read the claim and then died (closed or reset the
    connection without answering) or never answered: it may have stored
    the claim, so HAProxy does not send it to the other host, whose copy
    would be refused with 409. The client gets 502 or 504 in Placement's
    format and reads the claim back itself."""
    sample = SAMPLE_CONFIG.read_text()
    # Not to wait a minute for the host that never answers.
    assert '    timeout server 60s\n' in sample
    sample = sample.replace('    timeout server 60s\n',
                            '    timeout server 1s\n')
    with FakeHost(mode) as first, FakeHost(mode) as second:
        servers = [('api1', '127.0.0.1:%d' % first.port),
                   ('api2', '127.0.0.1:%d' % second.port)]
        with _haproxy(tmp_path, None, servers, sample) as port:
            _wait_checked([first, second])
            responses = [_put_claim(port) for _ in range(4)]
        logged = parse_proxy_log((tmp_path / 'haproxy.log').read_text())
    assert [r.status_code for r in responses] == [status] * 4
    for response in responses:
        assert response.headers['Content-Type'] == 'application/json'
        assert response.json()['errors'][0]['status'] == status
    # Each claim reached one host, once.
    received = first.received + second.received
    assert len(received) == 4, received
    assert len(set(received)) == 4, received
    claims = [line for line in logged if line.method == 'PUT']
    assert len(claims) == 4 and not any(line.retries for line in claims), (
        claims)
