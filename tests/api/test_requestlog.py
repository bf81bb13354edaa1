"""The request log: one line per request on ``placement.requestlog``, in
upstream's format, under the request's own id.
"""
import json
import logging

from oslo_log import formatters
import pytest

pytestmark = pytest.mark.sqlite_only

GLOBAL_ID = 'req-11111111-2222-3333-4444-555555555555'


@pytest.fixture
def request_log(caplog, conf_factory):
    """Request log lines as oslo.log formats them (with the context)."""
    caplog.set_level(logging.INFO, logger='placement.requestlog')
    caplog.handler.setFormatter(formatters.ContextFormatter(
        config=conf_factory()))

    def lines():
        return [line for line in caplog.text.splitlines()
                if ' placement.requestlog ' in line]
    return lines


def _request_id(response):
    return response.headers['x-openstack-request-id']


def test_line_per_request(api, request_log):
    response = api.get('/resource_classes?name=VCPU',
                       environ_overrides={'REMOTE_ADDR': '192.0.2.7'})
    assert response.status_code == 200
    [line] = request_log()
    assert line.endswith(
        '192.0.2.7 "GET /resource_classes?name=VCPU" status: 200 len: %d '
        'microversion: 1.39' % len(response.data))
    assert ' INFO placement.requestlog ' in line


def test_line_carries_request_id_and_identity(api, request_log):
    response = api.get('/traits', token='admin:someproject',
                       headers={'X-OpenStack-Request-ID': GLOBAL_ID})
    [line] = request_log()
    assert '[%s %s admin someproject ' % (
        GLOBAL_ID, _request_id(response)) in line


def test_refused_request_is_logged_under_its_own_id(api, request_log):
    accepted = api.get('/resource_classes')
    refused = api.get('/resource_classes', token=None)
    assert refused.status_code == 401
    first, second = request_log()
    assert _request_id(accepted) in first
    assert _request_id(refused) in second
    assert _request_id(accepted) not in second
    assert second.endswith('"GET /resource_classes" status: 401 len: %d '
                           'microversion: -' % len(refused.data))


def test_microversion_as_negotiated(api, request_log):
    api.get('/', version=None)
    api.get('/resource_providers', version='latest')
    assert [line.rsplit(' ', 1)[1] for line in request_log()] == [
        '1.0', '1.39']


def test_no_content_has_length_zero(api, request_log):
    assert api.put('/traits/CUSTOM_LOGGED').status_code == 201
    assert api.put('/traits/CUSTOM_LOGGED').status_code == 204
    assert [line.split('"PUT /traits/CUSTOM_LOGGED" ', 1)[1]
            for line in request_log()] == [
        'status: 201 len: 0 microversion: 1.39',
        'status: 204 len: 0 microversion: 1.39']


def test_mount_prefix_is_part_of_the_path(api_factory, request_log):
    api_factory(prefix='/placement').get('/traits?name=in:HW_CPU_X86_AVX')
    [line] = request_log()
    assert '"GET /placement/traits?name=in:HW_CPU_X86_AVX" status: 200' in line


@pytest.fixture
def json_records(caplog):
    """Request log records as oslo.log's JSON formatter (use_json) makes
    them."""
    caplog.set_level(logging.INFO, logger='placement.requestlog')
    caplog.handler.setFormatter(formatters.JSONFormatter())

    def records():
        return [record for record in map(json.loads, caplog.text.splitlines())
                if record['name'] == 'placement.requestlog']
    return records


def test_json_record_has_upstream_args_and_extra(api, json_records):
    response = api.get('/resource_classes?name=VCPU',
                       token='admin:someproject',
                       environ_overrides={'REMOTE_ADDR': '192.0.2.7'})
    [record] = json_records()
    assert record['args'] == {
        'REMOTE_ADDR': '192.0.2.7',
        'REQUEST_METHOD': 'GET',
        'REQUEST_URI': '/resource_classes?name=VCPU',
        'status': '200',
        'bytes': str(len(response.data)),
        'microversion': [1, 39],
    }
    assert record['extra'] == {'project': 'someproject', 'version': 'unknown'}
    assert record['message'] == (
        '192.0.2.7 "GET /resource_classes?name=VCPU" status: 200 len: %d '
        'microversion: 1.39' % len(response.data))
    assert record['context']['request_id'] == _request_id(response)


def test_json_record_of_refused_request(api, json_records):
    api.get('/traits', token='admin:someproject')
    refused = api.get('/traits', token=None)
    first, second = json_records()
    assert second['args']['status'] == '401'
    assert second['args']['microversion'] == '-'
    # Its own context, without the previous request's project.
    assert second['extra'] == {'project': None, 'version': 'unknown'}
    assert second['context']['request_id'] == _request_id(refused)
