"""Requests whose body does not all arrive, and the check that a server
carries none of them out.

A request is sent over a raw socket (no client library sends a body
shorter than it announced) in one of these ways (``HOW``):

- ``short``: Content-Length announces more than is sent; what is sent
  is the whole JSON document padded with spaces, so that only the length
  tells it is incomplete; the client then closes its side and reads the
  answer;
- ``chunked``: the same document as one chunk, without the last
  (zero-size) chunk; the client closes its side and reads the answer;
- ``reset``: Content-Length announces more than is sent, and the client
  resets the connection while the server waits for the rest.

``ROUTES`` lists every route that takes a body, with a body it accepts
on the state ``set_up`` makes; ``check_every_route`` sends each
incompletely in every way, checks that the database did not change and
that the answer, where the client could read one, is the 400 that says
so, then sends it whole, as it must succeed.

Importable from any test module: tests/ is on sys.path.
"""
import dataclasses
import json
import re
import socket
import struct
import time
import uuid as uuidlib

import sqlalchemy as sa

from placement.api.pipeline import inputs

import sql_rows

HOW = ('short', 'chunked', 'reset')
# Spaces after the document, and bytes announced but never sent.
PADDING = b' ' * 40
MISSING = 1000
SERVICE_ROLES = 'admin,service'


@dataclasses.dataclass
class Ids:
    """The uuids and names of the state ``set_up`` makes."""

    provider: str
    consumer: str
    aggregate: str
    resource_class: str


@dataclasses.dataclass(frozen=True)
class Route:
    """A route that takes a body: ``body(ids, generation)`` is a body it
    accepts given the provider's generation."""

    method: str
    path: str
    version: str
    body: object
    roles: str | None = None

    def request(self, ids, generation):
        """(method, path, version, body bytes, roles) of a request."""
        path = self.path.format(ids=ids, new=uuidlib.uuid4())
        return (self.method, path, self.version,
                json.dumps(self.body(ids, generation)).encode(), self.roles)


def _allocation(ids):
    return {'allocations': {ids.provider: {'resources': {'VCPU': 1}}},
            'project_id': 'project', 'user_id': 'user',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def _custom(prefix):
    return prefix + uuidlib.uuid4().hex.upper()


def _inventories(total):
    return {'VCPU': {'total': total}, 'MEMORY_MB': {'total': 4096}}


ROUTES = [
    Route('POST', '/resource_providers', '1.39',
          lambda ids, gen: {'name': 'cut-' + str(uuidlib.uuid4())}),
    Route('PUT', '/resource_providers/{ids.provider}', '1.39',
          lambda ids, gen: {'name': 'renamed-' + str(uuidlib.uuid4())}),
    Route('POST', '/resource_providers/{ids.provider}/inventories', '1.39',
          lambda ids, gen: {'resource_provider_generation': gen,
                            'resource_class': 'DISK_GB', 'total': 100}),
    Route('PUT', '/resource_providers/{ids.provider}/inventories', '1.39',
          lambda ids, gen: {'resource_provider_generation': gen,
                            'inventories': _inventories(16 + gen)}),
    Route('PUT', '/resource_providers/{ids.provider}/inventories/VCPU',
          '1.39', lambda ids, gen: {'resource_provider_generation': gen,
                                    'total': 64 + gen}),
    Route('PUT', '/resource_providers/{ids.provider}/traits', '1.39',
          lambda ids, gen: {'resource_provider_generation': gen,
                            'traits': ['HW_CPU_X86_AVX2']}),
    Route('PUT', '/resource_providers/{ids.provider}/aggregates', '1.39',
          lambda ids, gen: {'resource_provider_generation': gen,
                            'aggregates': [ids.aggregate]}),
    Route('PUT', '/allocations/{new}', '1.39',
          lambda ids, gen: _allocation(ids)),
    Route('POST', '/allocations', '1.39',
          lambda ids, gen: {str(uuidlib.uuid4()): _allocation(ids)}),
    Route('POST', '/reshaper', '1.39',
          lambda ids, gen: {
              'inventories': {ids.provider: {
                  'resource_provider_generation': gen,
                  'inventories': _inventories(128 + gen)}},
              'allocations': {ids.consumer: dict(
                  _allocation(ids), consumer_generation=1)}},
          roles=SERVICE_ROLES),
    Route('POST', '/resource_classes', '1.39',
          lambda ids, gen: {'name': _custom('CUSTOM_CUT_')}),
    Route('PUT', '/resource_classes/{ids.resource_class}', '1.2',
          lambda ids, gen: {'name': _custom('CUSTOM_RENAMED_')}),
]


def head(method, path, version, roles=None, length=None):
    """A request's head, announcing ``length`` bytes of JSON, or a
    chunked body when ``length`` is None."""
    lines = ['%s %s HTTP/1.1' % (method, path), 'Host: placement',
             'X-Auth-Token: admin', 'Content-Type: application/json',
             'Accept: application/json',
             'OpenStack-API-Version: placement %s' % version]
    if roles:
        lines.append('X-Roles: ' + roles)
    lines.append('Transfer-Encoding: chunked' if length is None
                 else 'Content-Length: %d' % length)
    return ('\r\n'.join(lines) + '\r\n\r\n').encode()


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


def read_answer(sock):
    """The answer on ``sock``: its status line, headers and a body of its
    Content-Length (a server may keep the connection open)."""
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError('closed before an answer: %r' % data)
        data += chunk
    top, body = data.split(b'\r\n\r\n', 1)
    lines = top.decode('latin-1').split('\r\n')
    headers = {}
    for line in lines[1:]:
        name, _colon, value = line.partition(':')
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get('content-length', 0))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return Answer(int(lines[0].split()[1]), headers, body)


def send(port, request, how, prefix=''):
    """Send ``request`` (method, path, version, body, roles) to
    127.0.0.1:``port`` ``how`` (HOW, or 'whole'); the answer, None for
    'reset'."""
    method, path, version, body, roles = request
    path = prefix + path
    with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
        if how == 'whole':
            sock.sendall(head(method, path, version, roles, len(body))
                         + body)
            return read_answer(sock)
        sent = body + PADDING
        if how == 'chunked':
            sock.sendall(head(method, path, version, roles)
                         + b'%x\r\n%s\r\n' % (len(sent), sent))
        else:
            sock.sendall(head(method, path, version, roles,
                              len(sent) + MISSING) + sent)
        if how == 'reset':
            # Once the server waits for the rest of the body.
            time.sleep(0.5)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack('ii', 1, 0))
            return None
        sock.shutdown(socket.SHUT_WR)
        return read_answer(sock)


def assert_incomplete(answer):
    """``answer`` is the 400 in Placement's format for an incomplete
    body."""
    assert answer.status == 400, (answer.status, answer.body)
    assert answer.headers['content-type'] == 'application/json'
    [error] = answer.json()['errors']
    assert error['title'] == 'Bad Request'
    assert inputs.INCOMPLETE_BODY in error['detail'], error


def set_up(client):
    """A provider with inventory, a consumer of it, an aggregate's uuid and
    a custom resource class, made through ``client`` (anything with
    ``request(method, path, json)``, e.g. live_server.Client)."""
    ids = Ids(str(uuidlib.uuid4()), str(uuidlib.uuid4()),
              str(uuidlib.uuid4()), 'CUSTOM_KEPT')
    for method, path, body, version in [
            ('POST', '/resource_providers',
             {'name': 'kept', 'uuid': ids.provider}, '1.39'),
            ('PUT', '/resource_providers/%s/inventories' % ids.provider,
             {'resource_provider_generation': 0,
              'inventories': _inventories(8)}, '1.39'),
            ('PUT', '/allocations/' + ids.consumer,
             _allocation(ids), '1.39'),
            ('POST', '/resource_classes', {'name': ids.resource_class},
             '1.2')]:
        response = client.request(method, path, body, version=version)
        assert response.status_code in (200, 201, 204), response.text
    return ids


def generation(client, ids):
    response = client.request('GET', '/resource_providers/' + ids.provider)
    return json.loads(response.text)['generation']


# A request log line (placement.requestlog): method, path and status.
_LOGGED = re.compile(r'placement\.requestlog \[[^]]*\] \S+ '
                     r'"(\w+) (\S+)" status: (\d+) ')


def logged(log_path):
    """(method, path, status) of each request in a server's log."""
    return [(method, path, int(status)) for method, path, status in
            _LOGGED.findall(log_path.read_text(errors='replace'))]


def _wait_logged(log_path, entry, count, timeout=30):
    """Until the log holds ``count`` requests ``entry``."""
    deadline = time.monotonic() + timeout
    while logged(log_path).count(entry) < count:
        assert time.monotonic() < deadline, (
            'not logged %d times: %s' % (count, entry))
        time.sleep(0.1)


def check_every_route(port, client, database_url, log_path, prefix='',
                      own_answers=None):
    """Every route of ROUTES, sent to the server on ``port`` (mounted at
    ``prefix``, serving the database at ``database_url``, logging
    requests to ``log_path``) in every way of HOW: none changes the
    database, each is logged as the service's 400 and answered with it
    (where the client hears it), and the service logs no error; each is
    then sent whole, and succeeds.

    ``own_answers``: {way: (check, passed on)} for the ways a server in
    front answers itself: ``check(answer)`` checks its answer, and the
    service sees the request only if it was ``passed on``."""
    own_answers = own_answers or {}
    engine = sa.create_engine(database_url)
    try:
        ids = set_up(client)
        for route in ROUTES:
            gen = generation(client, ids)
            before = sql_rows.every_row(engine)
            for how in HOW:
                check, passed_on = own_answers.get(
                    how, (assert_incomplete, True))
                request = route.request(ids, gen)
                entry = (request[0], prefix + request[1], 400)
                seen = logged(log_path).count(entry)
                answer = send(port, request, how, prefix)
                if answer is not None:
                    check(answer)
                if passed_on:
                    # Once the service is done with it.
                    _wait_logged(log_path, entry, seen + 1)
                assert sql_rows.every_row(engine) == before, (route, how)
            answer = send(port, route.request(ids, gen), 'whole', prefix)
            assert answer.status in (200, 201, 204), (route, answer)
    finally:
        engine.dispose()
    text = log_path.read_text(errors='replace')
    assert 'Traceback' not in text
    assert not [line for line in logged(log_path) if line[2] >= 500]
