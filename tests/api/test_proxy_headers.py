"""[oslo_middleware] enable_proxy_headers_parsing: behind a reverse proxy,
the scheme, host, path prefix and client address it forwards are the
request's (oslo.middleware's HTTPProxyToWSGI)."""
import json
import logging
import uuid

import pytest

from placement.api.pipeline import responses
from placement.api.resources import allocation_candidates

from api_cloud import Cloud

pytestmark = pytest.mark.sqlite_only

PROXIED = {'oslo_middleware': {'enable_proxy_headers_parsing': True}}


def _create(api, version='1.0', **kwargs):
    response = api.post('/resource_providers', version=version,
                        json={'name': str(uuid.uuid4())}, **kwargs)
    assert response.status_code in (200, 201), response.text
    return response


def test_forwarded_headers_ignored_by_default(api):
    response = _create(api, headers={'X-Forwarded-Proto': 'https',
                                     'X-Forwarded-Host': 'example.org',
                                     'X-Forwarded-Prefix': '/placement'})
    assert response.headers['Location'].startswith(
        'http://localhost/resource_providers/')


def test_forwarded_scheme_makes_location_https(api_factory):
    api = api_factory(**PROXIED)
    response = _create(api, headers={'X-Forwarded-Proto': 'https'})
    assert response.headers['Location'].startswith(
        'https://localhost/resource_providers/')
    # Without the header nothing changes.
    assert _create(api).headers['Location'].startswith(
        'http://localhost/resource_providers/')


def test_forwarded_host_and_prefix_in_links_and_location(api_factory):
    api = api_factory(**PROXIED)
    response = _create(api, version='1.20', headers={
        'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'example.org',
        'X-Forwarded-Prefix': '/placement'})
    path = '/placement/resource_providers/%s' % response.json['uuid']
    assert response.headers['Location'] == 'https://example.org' + path
    assert {'rel': 'self', 'href': path} in response.json['links']


def test_rfc7239_forwarded_header(api_factory):
    api = api_factory(**PROXIED)
    response = _create(api, headers={
        'Forwarded': 'for=192.0.2.60;proto=https;host=example.org'})
    assert response.headers['Location'].startswith(
        'https://example.org/resource_providers/')


def test_request_log_shows_the_forwarded_client(api_factory, caplog):
    caplog.set_level(logging.INFO, logger='placement.requestlog')
    api = api_factory(**PROXIED)
    api.get('/traits', headers={'X-Forwarded-For': '198.51.100.9'},
            environ_overrides={'REMOTE_ADDR': '10.0.0.2'})
    [record] = [r for r in caplog.records
                if r.name == 'placement.requestlog']
    assert record.getMessage().startswith('198.51.100.9 "GET /traits"')


def test_metrics_access_keeps_the_connection_address(api_factory):
    """A forwarded client address never opens the metrics endpoint: its
    access rule is about the connection."""
    api = api_factory(metrics={'enabled': True}, **PROXIED)
    for forwarded in ({'X-Forwarded-For': '127.0.0.1'},
                      {'Forwarded': 'for=127.0.0.1'}):
        assert api.get('/metrics', token=None, headers=forwarded,
                       environ_overrides={'REMOTE_ADDR': '192.0.2.7'}
                       ).status_code == 403
    assert api.get('/metrics', token=None,
                   headers={'X-Forwarded-For': '192.0.2.7'},
                   environ_overrides={'REMOTE_ADDR': '127.0.0.1'}
                   ).status_code == 200


def test_spooled_answers_pass_through_unchanged(api_factory, monkeypatch):
    """A large answer, streamed from its spool file with its length, goes
    through the middleware as it is."""
    plain, proxied = api_factory(), api_factory(**PROXIED)
    cloud = Cloud(plain)
    for _ in range(12):
        cloud.provider(str(uuid.uuid4()), inventory={'VCPU': 100})
    monkeypatch.setattr(allocation_candidates, 'SPOOLED_FROM', 10)
    monkeypatch.setattr(responses, '_SPOOL_IN_MEMORY', 1000)
    answers = []
    for api in (plain, proxied):
        response = api.get('/allocation_candidates?resources=VCPU:1',
                           headers={'X-Forwarded-Proto': 'https'})
        assert response.status_code == 200
        body = response.get_data()
        assert int(response.headers['Content-Length']) == len(body)
        answers.append(json.loads(body))
    assert len(answers[0]['allocation_requests']) == 12
    assert answers[0] == answers[1]
