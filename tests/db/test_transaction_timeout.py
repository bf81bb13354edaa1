"""[placement_database] transaction_timeout: a request whose database does
not answer ends in a 503 within the bound, the pool recovers without a
restart, and a write whose COMMIT went unanswered is not retried but
answered with its own error code.

The database "does not answer" here because a row lock is held by
another session, or because a deferred trigger makes COMMIT slow: the
same silence a frozen or cut-off server gives (tests/faults does that to
real clusters).
"""
import threading
import time
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement import exception
from placement.db import tables

from api_cloud import Cloud

TIMEOUT = 1.5
# What a loaded machine may add to the bound.
SLACK = 2.5


def _claim(api, provider_uuid, consumer):
    return api.put('/allocations/' + consumer, json={
        'allocations': {provider_uuid: {'resources': {'VCPU': 1}}},
        'project_id': 'project', 'user_id': 'user',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})


@pytest.fixture
def slow_api(api_factory):
    """The API with its own engine, watched with a short timeout."""
    return api_factory(shared_engine=False,
                       placement_database={'transaction_timeout': TIMEOUT})


@pytest.mark.backends('mysql', 'postgresql')
def test_a_write_that_waits_too_long_answers_503_and_the_pool_recovers(
        backend, api, slow_api):
    cloud = Cloud(api)
    cloud.provider('cn1', inventory={'VCPU': 8})
    provider_uuid = cloud.uuids['cn1']
    rp = tables.resource_providers
    locked, release = threading.Event(), threading.Event()

    def hold_the_provider_row():
        with backend.engine.begin() as conn:
            conn.execute(sa.select(rp.c.id).where(rp.c.uuid == provider_uuid)
                         .with_for_update())
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold_the_provider_row)
    holder.start()
    try:
        assert locked.wait(10)
        consumer = str(uuidlib.uuid4())
        started = time.monotonic()
        response = _claim(slow_api, provider_uuid, consumer)
        elapsed = time.monotonic() - started
    finally:
        release.set()
        holder.join()
    assert response.status_code == 503, response.json
    assert response.json['errors'][0]['title'] == 'Service Unavailable'
    assert TIMEOUT * 0.9 < elapsed < TIMEOUT + SLACK
    # Nothing was stored, and the next requests are served at once.
    assert api.get('/allocations/' + consumer).json['allocations'] == {}
    started = time.monotonic()
    assert _claim(slow_api, provider_uuid, consumer).status_code == 204
    assert slow_api.get('/allocations/' + consumer).status_code == 200
    assert time.monotonic() - started < TIMEOUT


_SLOW_COMMIT = """
CREATE FUNCTION placement_test_slow_commit() RETURNS trigger AS $$
BEGIN
    PERFORM pg_sleep(%(seconds)s);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE CONSTRAINT TRIGGER placement_test_slow_commit
    AFTER INSERT ON allocations DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION placement_test_slow_commit();
"""
_FAST_COMMIT = """
DROP TRIGGER IF EXISTS placement_test_slow_commit ON allocations;
DROP FUNCTION IF EXISTS placement_test_slow_commit();
"""


@pytest.fixture
def slow_commits(backend):
    """COMMITs of new allocations take 2 x TIMEOUT on the server."""
    with backend.engine.begin() as conn:
        conn.exec_driver_sql(_SLOW_COMMIT % {'seconds': 2 * TIMEOUT})
    yield 2 * TIMEOUT
    with backend.engine.begin() as conn:
        conn.exec_driver_sql(_FAST_COMMIT)


@pytest.mark.backends('postgresql')
def test_a_commit_cut_short_is_not_retried_and_says_so(
        backend, api, slow_api, slow_commits):
    cloud = Cloud(api)
    cloud.provider('cn1', inventory={'VCPU': 8})
    provider_uuid = cloud.uuids['cn1']
    consumer = str(uuidlib.uuid4())
    started = time.monotonic()
    response = _claim(slow_api, provider_uuid, consumer)
    elapsed = time.monotonic() - started
    assert response.status_code == 503, response.json
    error = response.json['errors'][0]
    assert error['code'] == exception.COMMIT_OUTCOME_UNKNOWN
    assert 'may or may not have been stored' in error['detail']
    # Cut once at the deadline, not re-run: a second attempt would have
    # waited for a second slow COMMIT.
    assert TIMEOUT * 0.9 < elapsed < TIMEOUT + SLACK
    # The server went on and committed: the claim is stored, once.
    time.sleep(slow_commits)
    allocations = api.get('/allocations/' + consumer).json
    assert allocations['allocations'] == {
        provider_uuid: {'generation': 2, 'resources': {'VCPU': 1}}}
    assert allocations['consumer_generation'] == 1
    usages = api.get('/resource_providers/%s/usages' % provider_uuid).json
    assert usages['usages'] == {'VCPU': 1}
