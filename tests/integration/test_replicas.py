"""Reads from real replicas: a PostgreSQL hot standby (tools/pg-replica.sh)
and a second Galera node (tools/galera.sh), under gunicorn.

Each test serves the API with ``connection`` on the primary and
``slave_connection`` on the replica, and tells where reads went from the
service's own metrics (``placement_database_reads_total{server}``), and on
PostgreSQL from each server's own transaction counts as well. Under load,
no request may answer 5xx, whatever happens to the replica.
"""
import concurrent.futures
import dataclasses
import threading
import time
import uuid

from prometheus_client import parser
import pytest
import requests

from galera import galera  # noqa: F401 (fixtures)
from galera import galera_database  # noqa: F401 (fixtures)
import gunicorn_server
from pg_replica import pg_replica  # noqa: F401
from pg_replica import pg_replica_database  # noqa: F401

pytestmark = pytest.mark.integration

HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}
PROVIDERS = 10
CANDIDATES = '/allocation_candidates?resources=VCPU:1&limit=5'
# How soon reads must move once the replica fails or falls behind: the
# check interval (1 s) plus the time a check and a scrape take.
MOVE_WITHIN = 2.5


def _server(tmp_path, primary_url, replica_url, **database):
    sections = {
        'placement_database': dict(connection=primary_url,
                                   slave_connection=replica_url, **database),
        'metrics': {'enabled': 'true'},
    }
    return gunicorn_server.placement_server(tmp_path / 'server', sections,
                                            threads=8)


@dataclasses.dataclass
class Api:
    url: str

    def call(self, method, path, **kwargs):
        return requests.request(method, self.url + path, headers=HEADERS,
                                timeout=60, **kwargs)

    def reads(self):
        """{'primary': n, 'replica': n} reads so far."""
        text = requests.get(self.url + '/metrics', timeout=10).text
        found = {'primary': 0, 'replica': 0}
        for family in parser.text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == 'placement_database_reads_total':
                    found[sample.labels['server']] = sample.value
        return found

    def providers(self, count=PROVIDERS):
        created = []
        for _ in range(count):
            rp = str(uuid.uuid4())
            assert self.call('POST', '/resource_providers', json={
                'name': rp, 'uuid': rp}).status_code == 200
            assert self.call(
                'PUT', '/resource_providers/%s/inventories' % rp, json={
                    'resource_provider_generation': 0,
                    'inventories': {'VCPU': {'total': 100000}}}
            ).status_code == 200
            created.append(rp)
        return created

    def claim(self, rp):
        return self.call('PUT', '/allocations/' + str(uuid.uuid4()), json={
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})

    def until_replica_serves(self, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            before = self.reads()['replica']
            assert self.call('GET', CANDIDATES).status_code == 200
            if self.reads()['replica'] > before:
                return
            assert time.monotonic() < deadline, 'the replica never served'
            time.sleep(0.1)


class Load:
    """Client threads asking for candidates and claiming the first one,
    until stopped; every answer's status is kept, with its time."""

    def __init__(self, api, clients=4):
        self.api = api
        self.clients = clients
        self.answers = []
        self._stop = threading.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(clients)
        self._futures = []

    def __enter__(self):
        self._futures = [self._pool.submit(self._client)
                         for _ in range(self.clients)]
        return self

    def _client(self):
        while not self._stop.is_set():
            response = self.api.call('GET', CANDIDATES)
            self.answers.append(
                (time.monotonic(), 'GET', response.status_code))
            if response.status_code != 200:
                continue
            rp = next(iter(response.json()['provider_summaries']))
            status = self.api.claim(rp).status_code
            self.answers.append((time.monotonic(), 'PUT', status))

    def __exit__(self, *exc_info):
        self._stop.set()
        for future in self._futures:
            future.result()
        self._pool.shutdown()

    def failures(self):
        return [answer for answer in self.answers if answer[2] >= 500]


def _reads_after(api, seconds=1.0):
    """Reads in the ``seconds`` after now: (primary, replica) added."""
    before = api.reads()
    time.sleep(seconds)
    after = api.reads()
    return (after['primary'] - before['primary'],
            after['replica'] - before['replica'])


def _until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
    return time.monotonic()


# --- PostgreSQL standby ----------------------------------------------------


@pytest.fixture
def pg_api(tmp_path, pg_replica, pg_replica_database):
    with _server(tmp_path, pg_replica_database.primary_url,
                 pg_replica_database.standby_url) as server:
        api = Api(server.url)
        api.providers()
        pg_replica.wait_for_replay()
        api.until_replica_serves()
        yield api


def test_candidates_on_the_standby_claims_on_the_primary(
        pg_api, pg_replica, pg_replica_database):
    name = pg_replica_database.name
    before = pg_api.reads()
    standby_before = pg_replica.standby_stats(name)
    with Load(pg_api) as load:
        time.sleep(3)
    after = pg_api.reads()
    gets = [a for a in load.answers if a[1] == 'GET']
    claims = [a for a in load.answers if a[1] == 'PUT']
    assert not load.failures()
    assert {status for _t, _m, status in claims} == {204}
    # Every candidates read went to the standby; what the primary read is
    # the claims' own (their provider and consumer checks).
    assert after['replica'] - before['replica'] >= len(gets)
    # The standby's own counters saw those reads (reported within ~1 s).
    _until(lambda: pg_replica.standby_stats(name) - standby_before
           >= len(gets), 10, 'the standby did not count the reads')


def test_standby_stopped_under_load_then_restarted(pg_api, pg_replica):
    with Load(pg_api) as load:
        time.sleep(1)
        pg_replica.stop_standby()
        stopped = time.monotonic()
        moved = _until(lambda: _reads_after(pg_api, 0.5)[1] == 0,
                       MOVE_WITHIN, 'reads kept going to a stopped standby')
        primary, replica = _reads_after(pg_api)
        assert replica == 0 and primary > 0
        pg_replica.start_standby()
        started = time.monotonic()
        back = _until(lambda: _reads_after(pg_api, 0.5)[1] > 0,
                      10, 'reads did not move back to the standby')
    assert not load.failures(), load.failures()[:5]
    assert moved - stopped < MOVE_WITHIN
    print('reads left the stopped standby within %.2fs and came back %.2fs '
          'after it started; %d answers, none 5xx'
          % (moved - stopped, back - started, len(load.answers)))


def test_paused_replay_sends_reads_to_the_primary(pg_api, pg_replica):
    with Load(pg_api) as load:
        pg_replica.pause_replay()
        paused = time.monotonic()
        # The claims keep the primary writing: the lag passes 1 s.
        moved = _until(lambda: _reads_after(pg_api, 0.5)[1] == 0,
                       1.0 + MOVE_WITHIN, 'reads stayed on a lagging standby')
        assert pg_replica.replay_lag() > 1.0
        pg_replica.resume_replay()
        _until(lambda: _reads_after(pg_api, 0.5)[1] > 0, 10,
               'reads did not come back once replay resumed')
    assert not load.failures(), load.failures()[:5]
    assert moved - paused < 1.0 + MOVE_WITHIN


# --- Galera: a second node as the replica -----------------------------------


def test_reads_from_a_second_galera_node(tmp_path, galera, galera_database):
    node1, node2 = galera_database.node_urls[:2]
    with _server(tmp_path, node1, node2, mysql_wsrep_sync_wait='1') as server:
        api = Api(server.url)
        api.providers()
        api.until_replica_serves()
        with Load(api) as load:
            time.sleep(2)
            # A desynced node (as during a backup) is not read from.
            with galera.admin_engine(1).connect() as conn:
                conn.exec_driver_sql('SET GLOBAL wsrep_desync = ON')
            try:
                _until(lambda: _reads_after(api, 0.5)[1] == 0,
                       MOVE_WITHIN, 'reads stayed on a desynced node')
            finally:
                with galera.admin_engine(1).connect() as conn:
                    conn.exec_driver_sql('SET GLOBAL wsrep_desync = OFF')
            _until(lambda: _reads_after(api, 0.5)[1] > 0, 10,
                   'reads did not come back to the synced node')
    assert not load.failures(), load.failures()[:5]
    assert {status for _t, method, status in load.answers
            if method == 'PUT'} == {204}
