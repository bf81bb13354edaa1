"""[placement_database] transaction_timeout: a request whose database does
not answer ends in a 503 within the bound, the pool recovers without a
restart, and a write whose COMMIT went unanswered is not retried but
answered with its own error code.

The database "does not answer" here because a row lock is held by
another session, or because a proxy holds the answer to a COMMIT back:
the same silence a frozen or cut-off server gives (tests/faults does
that to real clusters). On SQLite, another process holds the file's lock.
"""
import contextlib
import subprocess
import sys
import threading
import time
import uuid as uuidlib

import commit_faults
import pytest
import sqlalchemy as sa

from placement import exception
from placement.db import engine as db_engine
from placement.db import tables
from placement.db import watchdog

from api_cloud import Cloud

TIMEOUT = 1.5
# What a loaded machine may add to the bound.
SLACK = 2.5


@contextlib.contextmanager
def _row_locks(engine, where):
    """The resource provider rows ``where`` selects locked by another
    session for the block."""
    rp = tables.resource_providers
    locked, release = threading.Event(), threading.Event()

    def hold():
        with engine.begin() as conn:
            conn.execute(sa.select(rp.c.id).where(where).with_for_update())
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(10)
        yield
    finally:
        release.set()
        holder.join()


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
    with _row_locks(backend.engine, rp.c.uuid == provider_uuid):
        consumer = str(uuidlib.uuid4())
        started = time.monotonic()
        response = _claim(slow_api, provider_uuid, consumer)
        elapsed = time.monotonic() - started
    assert response.status_code == 503, response.json
    assert response.json['errors'][0]['title'] == 'Service Unavailable'
    assert TIMEOUT * 0.9 < elapsed < TIMEOUT + SLACK
    # Nothing was stored, and the next requests are served at once.
    assert api.get('/allocations/' + consumer).json['allocations'] == {}
    started = time.monotonic()
    assert _claim(slow_api, provider_uuid, consumer).status_code == 204
    assert slow_api.get('/allocations/' + consumer).status_code == 200
    assert time.monotonic() - started < TIMEOUT


@pytest.fixture
def commit_faults_api(backend, api_factory):
    """The API reaching the database through a CommitFaultProxy."""
    url = sa.engine.make_url(backend.url)
    proxy = commit_faults.CommitFaultProxy(url.host, url.port)
    proxied = url.set(host='127.0.0.1', port=proxy.port)
    api = api_factory(shared_engine=False, placement_database={
        'connection': proxied.render_as_string(hide_password=False),
        'transaction_timeout': TIMEOUT})
    yield api, proxy
    proxy.close()


@pytest.mark.backends('mysql', 'postgresql')
@pytest.mark.parametrize('fault', ['stall', 'drop'])
def test_a_commit_left_unanswered_is_not_retried_and_says_so(
        api, commit_faults_api, fault):
    """The server commits, its answer is held back past the deadline (the
    watchdog cuts the connection) or the connection drops at once: either
    way the claim is stored once, and the answer says the outcome is
    unknown. A retry would have found the consumer created (a 409)."""
    faulty_api, proxy = commit_faults_api
    cloud = Cloud(api)
    cloud.provider('cn1', inventory={'VCPU': 8})
    provider_uuid = cloud.uuids['cn1']
    consumer = str(uuidlib.uuid4())
    # Connected (sessions set up, standard classes synced) before the
    # fault, so that the only COMMIT it meets is the claim's.
    assert faulty_api.get('/resource_providers/' + provider_uuid
                          ).status_code == 200
    if fault == 'stall':
        proxy.stall_commits(2 * TIMEOUT)
    else:
        proxy.drop_commits()
    started = time.monotonic()
    response = _claim(faulty_api, provider_uuid, consumer)
    elapsed = time.monotonic() - started
    assert response.status_code == 503, response.json
    error = response.json['errors'][0]
    assert error['code'] == exception.COMMIT_OUTCOME_UNKNOWN
    assert 'may or may not have been stored' in error['detail']
    if fault == 'stall':
        # Cut once at the deadline.
        assert TIMEOUT * 0.9 < elapsed < TIMEOUT + SLACK
    else:
        assert elapsed < TIMEOUT
    # The server committed: the claim is stored, once.
    allocations = api.get('/allocations/' + consumer).json
    assert allocations['allocations'] == {
        provider_uuid: {'generation': 2, 'resources': {'VCPU': 1}}}
    assert allocations['consumer_generation'] == 1
    usages = api.get('/resource_providers/%s/usages' % provider_uuid).json
    assert usages['usages'] == {'VCPU': 1}


@pytest.mark.backends('mysql', 'postgresql')
def test_the_session_set_up_of_a_new_connection_is_bounded_too(
        backend, commit_faults_api):
    """What a new connection runs before its first use (the backend's
    session settings) is watched with the request's deadline."""
    faulty_api, proxy = commit_faults_api
    proxy.stall_statements(b'SET', 4 * TIMEOUT)
    started = time.monotonic()
    response = faulty_api.get('/resource_providers')
    assert response.status_code == 503, response.json
    assert time.monotonic() - started < TIMEOUT + SLACK


def _statement_timeout(conn):
    """The session's statement timeout in seconds (0: none)."""
    if conn.dialect.name == 'postgresql':
        return conn.execute(sa.text(
            "SELECT current_setting('statement_timeout')::interval"
        )).scalar().total_seconds()
    if conn.dialect.is_mariadb:
        return float(conn.execute(sa.text(
            'SELECT @@SESSION.max_statement_time')).scalar())
    return conn.execute(sa.text(
        'SELECT @@SESSION.max_execution_time')).scalar() / 1000


@pytest.mark.backends('mysql', 'postgresql')
@pytest.mark.parametrize('bounded', [True, False], ids=['service', 'tools'])
def test_the_server_stops_statements_at_the_timeout_but_not_the_tools(
        conf_factory, bounded):
    """The service's sessions carry the timeout as their statement
    timeout; placement-manage's (migrations) carry none."""
    conf = conf_factory(placement_database={'transaction_timeout': TIMEOUT})
    engine = db_engine.create_engine(conf, bounded=bounded)
    try:
        with engine.connect() as conn:
            assert _statement_timeout(conn) == (TIMEOUT if bounded else 0)
        assert watchdog.timeout_of(engine) == (TIMEOUT if bounded else 0)
    finally:
        engine.dispose()


@pytest.mark.backends('mysql', 'postgresql')
def test_a_statement_the_server_stopped_is_told_as_such(
        backend, api, conf_factory):
    """A statement waiting on a lock past the statement timeout is
    stopped by the server itself (with a later deadline, the watchdog
    does not cut it first), and told from other errors."""
    Cloud(api).provider('cn1', inventory={'VCPU': 8})
    conf = conf_factory(placement_database={'transaction_timeout': TIMEOUT})
    engine = db_engine.create_engine(conf)
    rp = tables.resource_providers
    try:
        with _row_locks(backend.engine, sa.true()), \
                watchdog.deadline(30), engine.begin() as conn:
            with pytest.raises(sa.exc.DBAPIError) as caught:
                conn.execute(sa.select(rp.c.id).with_for_update())
    finally:
        engine.dispose()
    assert db_engine.is_statement_timeout(caught.value), caught.value


@contextlib.contextmanager
def _sqlite_locked_by_another_process(path):
    """The SQLite file ``path`` held by another process's exclusive
    lock for the block."""
    holder = subprocess.Popen(
        [sys.executable, '-c',
         'import sqlite3, sys\n'
         'c = sqlite3.connect(sys.argv[1], isolation_level=None)\n'
         'c.execute("BEGIN EXCLUSIVE")\n'
         'print("locked", flush=True)\n'
         'sys.stdin.read()\n', path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'locked'
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


@pytest.mark.sqlite_only
def test_a_write_waiting_on_another_process_s_sqlite_lock_answers_503(
        backend, api, slow_api):
    """SQLite waits for its lock no longer than the request's deadline:
    the write ends with the deadline's 503 instead of waiting on."""
    cloud = Cloud(api)
    cloud.provider('cn1', inventory={'VCPU': 8})
    provider_uuid = cloud.uuids['cn1']
    consumer = str(uuidlib.uuid4())
    with _sqlite_locked_by_another_process(
            sa.engine.make_url(backend.url).database):
        started = time.monotonic()
        response = _claim(slow_api, provider_uuid, consumer)
        elapsed = time.monotonic() - started
    assert response.status_code == 503, response.json
    error = response.json['errors'][0]
    assert error['title'] == 'Service Unavailable'
    assert error['code'] == exception.DEADLINE_EXCEEDED
    assert TIMEOUT * 0.9 < elapsed < TIMEOUT + SLACK
    # Once the lock is released, the same write goes through.
    assert _claim(slow_api, provider_uuid, consumer).status_code == 204
