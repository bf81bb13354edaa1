"""Serving the API on a primary and a replica, and loading it, for the
replica tests.

``server(tmp_path, primary_url, replica_url, **placement_database)`` is a
gunicorn serving the service with metrics on; ``Api(url)`` sends it
requests and reads its counters of reads per database server (``reads()``)
and what its last replica check found (``replica_gauges()``);
``serving()`` is both, with providers made and the replica serving reads.
``Load(api)`` runs client threads asking for candidates and claiming one
until the block ends, keeping every answer's status; ``reads_after`` and
``until`` watch where reads go, and ``outage()`` watches them leave the
replica and come back when something stops it under load.
"""
import concurrent.futures
import contextlib
import dataclasses
import math
import threading
import time
import uuid

from prometheus_client import parser
import requests

import gunicorn_server

HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}
PROVIDERS = 10
CANDIDATES = '/allocation_candidates?resources=VCPU:1&limit=5'
# How soon reads must move once the replica fails or falls behind: the
# check interval (1 s) plus the time a check and a scrape take.
MOVE_WITHIN = 2.5


def server(tmp_path, primary_url, replica_url, **database):
    sections = {
        'placement_database': dict(connection=primary_url,
                                   slave_connection=replica_url, **database),
        'metrics': {'enabled': 'true'},
    }
    return gunicorn_server.placement_server(tmp_path / 'server', sections,
                                            threads=8)


@contextlib.contextmanager
def serving(tmp_path, primary_url, replica_url, caught_up=None, **database):
    """``server()`` as an ``Api``, once it has PROVIDERS providers (made on
    the primary), ``caught_up()`` has returned (the replica has them) and
    the replica serves reads."""
    with server(tmp_path, primary_url, replica_url, **database) as running:
        api = Api(running.url)
        api.providers()
        if caught_up is not None:
            caught_up()
        api.until_replica_serves()
        yield api


@dataclasses.dataclass
class Api:
    url: str

    def call(self, method, path, **kwargs):
        return requests.request(method, self.url + path, headers=HEADERS,
                                timeout=60, **kwargs)

    def reads(self):
        """{'primary': n, 'replica': n} reads so far."""
        found = {'primary': 0, 'replica': 0}
        for sample in self._samples('placement_database_reads_total'):
            found[sample.labels['server']] = sample.value
        return found

    def replica_gauges(self):
        """(lag, usable) of the service's last replica check, read in one
        scrape (NaN lag: it could not be read)."""
        found = {sample.name: sample.value for sample in self._samples(
            'placement_replica_lag_seconds', 'placement_replica_usable')}
        return (found.get('placement_replica_lag_seconds', math.nan),
                found.get('placement_replica_usable'))

    def _samples(self, *names):
        """The samples of /metrics named one of ``names``."""
        text = requests.get(self.url + '/metrics', timeout=10).text
        for family in parser.text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in names:
                    yield sample

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

    def until_replica_serves(self, timeout=30):
        """Until a read goes to the replica. The standby may hold its
        replay back for a query of its own up to max_standby_streaming_delay
        (5 s in tools/pg-replica.sh), so this waits longer than that."""
        deadline = time.monotonic() + timeout
        while True:
            before = self.reads()['replica']
            assert self.call('GET', CANDIDATES).status_code == 200
            if self.reads()['replica'] > before:
                return
            assert time.monotonic() < deadline, (
                'the replica never served within %ss; last check (lag, '
                'usable): %s' % (timeout, self.replica_gauges()))
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


def reads_after(api, seconds=1.0):
    """Reads in the ``seconds`` after now: (primary, replica) added."""
    before = api.reads()
    time.sleep(seconds)
    after = api.reads()
    return (after['primary'] - before['primary'],
            after['replica'] - before['replica'])


def until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
    return time.monotonic()


def outage(api, stop, start, left, back, what, during=None):
    """Under Load, a second in: ``stop()`` (the replica, or what it needs to
    serve), then wait until ``left(api)`` (reads have left it: within
    MOVE_WITHIN), call ``during()``, check that for a second no read goes
    to the replica; ``start()``, then wait until ``back(api)`` (within 10
    s). No answer may be 5xx. ``what`` names the stop in failures.

    Returns (seconds from the stop until reads had left, seconds from the
    start until they were back, answers).
    """
    with Load(api) as load:
        time.sleep(1)
        stop()
        stopped = time.monotonic()
        moved = until(lambda: left(api), MOVE_WITHIN,
                      'reads kept going to the replica after ' + what)
        if during is not None:
            during()
        primary, replica = reads_after(api)
        assert replica == 0 and primary > 0
        start()
        started = time.monotonic()
        came_back = until(lambda: back(api), 10, 'reads did not move back '
                          'to the replica after ' + what)
    assert not load.failures(), load.failures()[:5]
    assert moved - stopped < MOVE_WITHIN
    return moved - stopped, came_back - started, len(load.answers)
