"""[oslo_middleware] max_request_body_size: a larger body is refused with
a 413 in Placement's format before it is read, whether its size is
announced (Content-Length) or not (a chunked body); the default leaves
room for the largest legitimate request. A body that did not all arrive
is refused with a 400 however the server says so, on every route, and
nothing is written (tests/cut_requests.py sends them to real servers).
"""
import io
import json
import uuid

import pytest

from placement import conf as placement_conf
from placement.api.pipeline import inputs

from api_cloud import Cloud
import cut_requests
import sql_rows

RP = '/resource_providers/' + str(uuid.uuid4())


class Unread(io.BytesIO):
    """A body that counts how much of it was read."""

    def read(self, size=-1):
        data = super().read(size)
        self.taken = getattr(self, 'taken', 0) + len(data)
        return data


def _too_large(response, limit):
    assert response.status_code == 413, response.data
    error = response.json['errors'][0]
    assert error['title'] == 'Request Entity Too Large'
    assert ('The request body is larger than [oslo_middleware] '
            'max_request_body_size (%d bytes).' % limit) in error['detail']


@pytest.mark.sqlite_only
def test_an_announced_body_over_the_limit_is_refused_unread(api_factory):
    api = api_factory(oslo_middleware={'max_request_body_size': 1000})
    body = Unread(b'{"name": "' + b'x' * 5000 + b'"}')
    # A route that would answer 404 before reading a body refuses it too.
    response = api.request('PUT', RP + '/traits', input_stream=body,
                           headers={'Content-Type': 'application/json',
                                    'Content-Length': '5012'})
    _too_large(response, 1000)
    assert getattr(body, 'taken', 0) == 0


@pytest.mark.sqlite_only
# Werkzeug cannot tell a chunked body that ends at the limit from one that
# goes on: one of unannounced length must stay below it.
@pytest.mark.parametrize('size, status', [(5000, 413), (1000, 413),
                                          (999, 400)])
def test_a_chunked_body_over_the_limit_is_refused(api_factory, size,
                                                  status):
    api = api_factory(oslo_middleware={'max_request_body_size': 1000})
    # A body of ``size`` bytes (one the limit takes is a 400: too long a
    # name).
    body = json.dumps({'name': 'x'}).encode()
    body = io.BytesIO(body.replace(b'x', b'x' * (size - len(body) + 1)))
    assert len(body.getvalue()) == size
    response = api.request(
        'POST', '/resource_providers', input_stream=body,
        headers={'Content-Type': 'application/json',
                 'Transfer-Encoding': 'chunked'},
        environ_overrides={'wsgi.input_terminated': True})
    if status == 413:
        _too_large(response, 1000)
    else:
        assert response.status_code == status, response.data


def test_the_default_takes_a_move_of_a_thousand_consumers(api):
    assert placement_conf.MAX_REQUEST_BODY_SIZE == 2 * 1024 * 1024
    cloud = Cloud(api)
    cloud.provider('source', inventory={'VCPU': 4000, 'MEMORY_MB': 10 ** 6})
    cloud.provider('target', inventory={'VCPU': 4000, 'MEMORY_MB': 10 ** 6})
    resources = {'VCPU': 2, 'MEMORY_MB': 512}
    body = {}
    for _ in range(1000):
        # Half on each side, as a move's instance and migration consumers.
        for side in ('source', 'target'):
            body[str(uuid.uuid4())] = {
                'allocations': {cloud.uuids[side]: {'resources': resources}},
                'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
                'consumer_generation': None,
                'consumer_type': 'INSTANCE' if side == 'target'
                else 'MIGRATION'}
    size = len(json.dumps(body))
    assert size < placement_conf.MAX_REQUEST_BODY_SIZE / 2
    assert api.post('/allocations', json=body).status_code == 204


def test_an_error_quotes_no_more_than_a_prefix_of_a_long_value(api):
    name = 'x' * 1_000_000
    response = api.post('/resource_providers', json={'name': name})
    assert response.status_code == 400
    detail = response.json['errors'][0]['detail']
    assert detail.startswith('The server could not comply')
    assert "'xxxxxxxx" in detail and '... is too long' in detail
    assert len(response.data) < 1000


class _ServerError(Exception):
    """An exception of a server's own (gunicorn's ParseException)."""


class _Cut(io.BytesIO):
    """A body that stops after its bytes as a server's input stream does
    when the client stopped sending: reads return nothing, or raise
    ``ending``."""

    def __init__(self, data, ending=None):
        super().__init__(data)
        self.ending = ending

    def read(self, size=-1):
        data = super().read(size)
        if not data and self.ending is not None:
            raise self.ending
        return data

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


# How each server's input stream ends a body that stopped short: environ
# and the stream's ending, and whether Content-Length announces it.
SERVERS = {
    # gunicorn: what arrived, then nothing.
    'gunicorn': ({'wsgi.input_terminated': True}, None, True),
    # gunicorn, a chunked body: NoMoreData, or ChunkMissingTerminator.
    'gunicorn-chunked-eof': ({'wsgi.input_terminated': True},
                             ConnectionError('no more data'), False),
    'gunicorn-chunked-parse': ({'wsgi.input_terminated': True},
                               _ServerError('missing terminator'), False),
    # mod_wsgi: OSError.
    'mod_wsgi': ({'wsgi.input_terminated': True},
                 OSError('request data read error'), True),
    # werkzeug's server: Content-Length is left to the application.
    'werkzeug': ({}, None, True),
}


@pytest.mark.parametrize('server', SERVERS)
@pytest.mark.parametrize('route', cut_requests.ROUTES,
                         ids=lambda route: route.method + route.path)
def test_a_body_that_did_not_all_arrive_is_refused(api, backend, route,
                                                   server):
    environ, ending, announced = SERVERS[server]
    ids = cut_requests.set_up(api)
    method, path, version, body, roles = route.request(
        ids, cut_requests.generation(api, ids))
    before = sql_rows.every_row(backend.engine)
    sent = body + cut_requests.PADDING
    headers = {'Content-Type': 'application/json', 'X-Roles': roles}
    if announced:
        # The test client would announce the length of the stream.
        environ = dict(environ, CONTENT_LENGTH=str(
            len(sent) + cut_requests.MISSING))
    else:
        headers['Transfer-Encoding'] = 'chunked'
    response = api.request(method, path, version=version, headers=headers,
                           input_stream=_Cut(sent, ending),
                           environ_overrides=environ)
    assert response.status_code == 400, response.text
    assert inputs.INCOMPLETE_BODY in response.json['errors'][0]['detail']
    assert sql_rows.every_row(backend.engine) == before


@pytest.mark.sqlite_only
def test_a_route_without_a_body_is_not_run_on_a_cut_one(api):
    """PUT /traits/{name} reads no body; one that did not all arrive
    still stops it."""
    response = api.put('/traits/CUSTOM_CUT', input_stream=_Cut(b'{}'),
                       environ_overrides={'wsgi.input_terminated': True,
                                          'CONTENT_LENGTH': '100'})
    assert response.status_code == 400
    assert api.get('/traits/CUSTOM_CUT').status_code == 404
