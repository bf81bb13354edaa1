"""Provider usages and /usages through the WSGI app."""
import uuid as uuidlib

import pytest

from placement.db import inventory as inv_db

import error_text
import sql_rows


@pytest.fixture
def provider(backend):
    """A provider with VCPU and DISK_GB inventory used by an INSTANCE of
    user u1 and an untyped consumer of u2, both of project ``p``.
    """
    with backend.engine.begin() as conn:
        rp = sql_rows.provider(conn)
        inv_db.replace_all(conn, rp, {
            name: inv_db.with_defaults({'total': 100})
            for name in ('VCPU', 'DISK_GB', 'MEMORY_MB')}, 0)
        sql_rows.allocate(conn, rp['id'], {'VCPU': 2, 'DISK_GB': 10},
                          project='p', user='u1', consumer_type='INSTANCE')
        sql_rows.allocate(conn, rp['id'], {'VCPU': 1}, project='p',
                          user='u2')
    return rp


def test_provider_usages(api, provider):
    path = '/resource_providers/%s/usages' % provider['uuid']
    response = api.get(path, version='1.0')
    assert response.status_code == 200
    assert response.json == {
        'resource_provider_generation': 1,
        'usages': {'VCPU': 3, 'DISK_GB': 10, 'MEMORY_MB': 0}}
    assert 'Last-Modified' not in response.headers
    dated = api.get(path, version='1.15')
    assert dated.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in dated.headers


def test_provider_usages_missing_provider(api):
    missing = str(uuidlib.uuid4())
    response = api.get('/resource_providers/%s/usages' % missing)
    assert response.status_code == 404
    message = 'No resource provider with uuid %s found' % missing
    assert '%s: %s' % (message, message) in error_text.raw_detail(response)


def test_total_usages_before_1_38(api, provider):
    assert api.get('/usages?project_id=p', version='1.8').status_code == 404
    response = api.get('/usages?project_id=p', version='1.9')
    assert response.json == {'usages': {'VCPU': 3, 'DISK_GB': 10}}
    assert 'Last-Modified' not in response.headers
    response = api.get('/usages?project_id=p&user_id=u2', version='1.15')
    assert response.json == {'usages': {'VCPU': 1}}
    assert 'Last-Modified' in response.headers
    assert api.get('/usages?project_id=nobody',
                   version='1.9').json == {'usages': {}}
    # consumer_type is not known yet.
    response = api.get('/usages?project_id=p&consumer_type=all',
                       version='1.37')
    assert response.status_code == 400
    assert 'Additional properties are not allowed' in (
        error_text.raw_detail(response))


def test_total_usages_by_consumer_type(api, provider):
    assert api.get('/usages?project_id=p').json == {'usages': {
        'INSTANCE': {'VCPU': 2, 'DISK_GB': 10, 'consumer_count': 1},
        'unknown': {'VCPU': 1, 'consumer_count': 1}}}
    assert api.get('/usages?project_id=p&consumer_type=all').json == {
        'usages': {'all': {'VCPU': 3, 'DISK_GB': 10, 'consumer_count': 2}}}
    assert api.get('/usages?project_id=p&consumer_type=unknown').json == {
        'usages': {'unknown': {'VCPU': 1, 'consumer_count': 1}}}
    for other in ('ALL', 'UNKNOWN', 'PONY'):
        assert api.get('/usages?project_id=p&consumer_type=' + other
                       ).json == {'usages': {}}


@pytest.mark.parametrize('query, expected', [
    ('', "'project_id' is a required property"),
    ('?project_id=', "Failed validating 'minLength'"),
    ('?project_id=p&user_id=' + 'u' * 256, "Failed validating 'maxLength'"),
    ('?project_id=p&dummy=1', 'Additional properties are not allowed'),
    ('?project_id=p&consumer_type=instance', 'does not match'),
])
def test_total_usages_bad_query(api, query, expected):
    response = api.get('/usages' + query)
    assert response.status_code == 400
    assert 'Invalid query string parameters' in error_text.raw_detail(response)
    assert expected in error_text.raw_detail(response)


def test_total_usages_policy_target_is_the_queried_project(api, provider):
    reader = {'X-Roles': 'reader'}
    own = api.get('/usages?project_id=p', token='u:p', headers=reader)
    assert own.status_code == 200
    other = api.get('/usages?project_id=p', token='u:q', headers=reader)
    assert other.status_code == 403
    # Checked before the query string is.
    assert api.get('/usages', token='u:q',
                   headers=reader).status_code == 403
