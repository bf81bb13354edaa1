"""A minimal placement REST client on the standard library.

The harness must run on any Python 3 without extra packages, and gunicorn's
sync workers close the connection after every response anyway, so each
request opens its own loopback connection.
"""
import http.client
import json
import threading
import time

MICROVERSION = '1.39'
HEADERS = {
    'x-auth-token': 'admin',
    'openstack-api-version': 'placement ' + MICROVERSION,
    'accept': 'application/json',
}


class Response:
    __slots__ = ('status', 'body', 'seconds')

    def __init__(self, status, body, seconds):
        self.status = status
        self.body = body
        self.seconds = seconds

    def json(self):
        return json.loads(self.body) if self.body else None

    def __repr__(self):
        return 'Response(%s, %.3fs, %r)' % (
            self.status, self.seconds, self.body[:300])


class ConnectionFailed(Exception):
    """The server dropped or refused the connection (e.g. a killed worker)."""


class Client:
    def __init__(self, port, host='127.0.0.1', timeout=600):
        self.host = host
        self.port = port
        self.timeout = timeout

    def request(self, method, path, body=None, timeout=None, version=None):
        """Send one request; ``seconds`` covers sending until the last byte."""
        headers = dict(HEADERS)
        if version:
            headers['openstack-api-version'] = 'placement ' + version
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers['content-type'] = 'application/json'
        conn = http.client.HTTPConnection(
            self.host, self.port, timeout=timeout or self.timeout)
        try:
            start = time.perf_counter()
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            elapsed = time.perf_counter() - start
        except (OSError, http.client.HTTPException) as exc:
            raise ConnectionFailed('%s failed: %s' % (method, exc)) from exc
        finally:
            conn.close()
        return Response(resp.status, data, elapsed)

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def put(self, path, body, **kw):
        return self.request('PUT', path, body, **kw)

    def post(self, path, body, **kw):
        return self.request('POST', path, body, **kw)

    def expect(self, method, path, body=None, ok=(200, 201, 204)):
        """Request and fail loudly unless the status is one of ``ok``."""
        resp = self.request(method, path, body)
        if resp.status not in ok:
            raise RuntimeError('%s %s -> %s %s' % (
                method, path, resp.status, resp.body[:500]))
        return resp

    def wait_ready(self, deadline_seconds=60, proc=None):
        """Poll the root document until the server answers."""
        deadline = time.monotonic() + deadline_seconds
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError('server on port %d exited with %s' % (
                    self.port, proc.returncode))
            try:
                if self.get('/', timeout=5).status == 200:
                    return
            except ConnectionFailed:
                pass
            time.sleep(0.2)
        raise RuntimeError('server on port %d not ready' % self.port)


def run_bounded(func, items, concurrency):
    """Call ``func(item)`` for each item, at most ``concurrency`` at once.

    Worker threads pull from one shared iterator, so memory stays flat however
    many items there are. The first exception stops every worker and is
    re-raised.
    """
    iterator = iter(items)
    lock = threading.Lock()
    errors = []

    def worker():
        while not errors:
            with lock:
                try:
                    item = next(iterator)
                except StopIteration:
                    return
            try:
                func(item)
            except BaseException as exc:  # noqa: B902 - re-raised below
                errors.append(exc)
                return

    threads = [threading.Thread(target=worker, daemon=True)
               for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
