"""[oslo_middleware] max_request_body_size: a larger body is refused with
a 413 in Placement's format before it is read, whether its size is
announced (Content-Length) or not (a chunked body); the default leaves
room for the largest legitimate request.
"""
import io
import json
import uuid

import pytest

from placement import conf as placement_conf

from api_cloud import Cloud

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
