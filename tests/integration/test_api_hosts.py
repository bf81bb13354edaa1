"""Several API hosts, each a network namespace of its own, behind HAProxy
configured from etc/haproxy-placement.cfg (tests/integration/api_hosts.py),
on a Galera cluster (host i writing through node i) and on PostgreSQL:

- a claim sent again after it was stored is refused (409
  placement.concurrent_update), never applied twice: why the sample does
  not resend a request that a host received (its ``retry-on`` has
  conn-failure only); what a client sees when it sends other writes
  again;
- claims racing through HAProxy for the last units of a few providers:
  nothing over-allocated, no 5xx, every 204 stored, several hosts serving;
- one host SIGKILLed under a steady load of claims and allocation
  candidates queries, while it has requests in progress: every
  acknowledged claim stored, no 5xx from any host, nothing
  over-allocated, no claim sent twice. The requests in progress on the
  dead host are not resent: their clients get 502 or their connection
  closed without an answer, at most one per client thread, each held
  whole or not at all; the client reads its claim back and sends it again
  only if it is not there. Requests refused by the dead host are resent
  to the others;
- a host cut off its database (its database listeners closed) fails its
  health check (GET /healthcheck answers 503) and is taken out while the
  others answer everything; back in once its database is back. Every host
  cut off: HAProxy answers 503 itself, in Placement's format.

What was measured (claims per host, resends, requests left unanswered)
is printed: run with ``-s`` to see it. The database is read directly.
The module takes about a minute on 2 cores, Galera and PostgreSQL.
"""
import collections
import concurrent.futures
import dataclasses
import json
import subprocess
import threading
import time
import uuid as uuidlib

import pytest
import requests
import sqlalchemy as sa

from placement.db import tables

import api_hosts
from conftest import selected_backends
from conftest import unavailable
from galera import galera  # noqa: F401 (fixtures)
import live_server

pytestmark = pytest.mark.integration

HOSTS = 3
VERSION = '1.39'
HEADERS = {'X-Auth-Token': 'admin', 'Accept': 'application/json'}
TIMEOUT = 60
CONCURRENT_UPDATE = 'placement.concurrent_update'

# Racing claims: RACE_PROVIDERS providers with RACE_LEFT units left each,
# RACE_CLAIMS_PER_PROVIDER clients per provider claiming 1 or 2 of them.
RACE_PROVIDERS = 4
RACE_CAPACITY = 40
RACE_LEFT = 8
RACE_CLAIMS_PER_PROVIDER = 12

# The kill: LOAD_CLAIMERS claiming threads and one candidates reader for
# LOAD_SECONDS; the victim is killed after KILL_AFTER seconds.
LOAD_CLAIMERS = 3
LOAD_SECONDS = 10
KILL_AFTER = 4
# A provider that fills up during the load, so that the over-allocation
# check has something to check.
SMALL_CAPACITY = 60
VICTIM = 1  # host2
# Seconds after the kill a request may still meet the victim's sockets.
DYING = 0.2
# Seconds the kill waits, after KILL_AFTER, for the victim to have a
# request in progress.
IN_FLIGHT_WAIT = 2.0


class Client:
    """Requests through HAProxy, one keep-alive session per thread."""

    def __init__(self, url):
        self.url = url
        self._local = threading.local()

    @property
    def session(self):
        if not hasattr(self._local, 'session'):
            self._local.session = requests.Session()
        return self._local.session

    def request(self, method, path, json=None, version=VERSION):
        headers = dict(HEADERS, **{
            'OpenStack-API-Version': 'placement %s' % version})
        return self.session.request(method, self.url + path, json=json,
                                    headers=headers, timeout=TIMEOUT)


@pytest.fixture(scope='module', params=sorted(api_hosts.DATABASES))
def topology(request, tmp_path_factory):
    if (request.param == 'postgresql'
            and 'postgresql' not in selected_backends()):
        pytest.skip('PLACEMENT_TEST_BACKENDS leaves PostgreSQL out')
    if not api_hosts.HAPROXY.exists():
        unavailable('%s is missing (tools/integration-deps.sh): the API '
                    'hosts tests are NOT being run' % api_hosts.HAPROXY)
    with api_hosts.DATABASES[request.param](request) as database:
        workdir = tmp_path_factory.mktemp('api-hosts-' + request.param)
        with api_hosts.Topology(workdir, database, hosts=HOSTS) as built:
            print('\n' + built.describe())
            yield built
            _check_logs(built)
        assert api_hosts.leftovers(built.tag) == []


@pytest.fixture
def client(topology):
    return Client(topology.url)


@pytest.fixture
def engine(topology):
    engine = topology.database.engine()
    yield engine
    engine.dispose()


def _check_logs(topology):
    for host in topology.hosts:
        text = host.server.log_path.read_text(errors='replace')
        assert 'Unexpected error' not in text, host.server.log_tail(80)


# --- Helpers ----------------------------------------------------------------

def _provider(client, inventories):
    return live_server.new_provider(client, inventories, 'hosts-')


def _claim_body(resources, generation=None):
    return {'allocations': {uuid: {'resources': amounts}
                            for uuid, amounts in resources.items()},
            'project_id': 'hosts', 'user_id': 'hosts',
            'consumer_generation': generation, 'consumer_type': 'INSTANCE'}


@dataclasses.dataclass
class Outcome:
    """One request: its status (None: no answer), the host that served it
    (None: HAProxy answered itself, or nothing did)."""

    kind: str
    consumer: str | None
    resources: dict | None
    status: int | None
    served_by: str | None
    body: str = ''
    # When it was sent (time.time()) and how long it took.
    at: float = 0.0
    took: float = 0.0


def _claim(client, resources, consumer=None):
    consumer = consumer or str(uuidlib.uuid4())
    at = time.time()
    try:
        response = client.request('PUT', '/allocations/' + consumer,
                                  _claim_body(resources))
    except requests.RequestException as exc:
        return Outcome('claim', consumer, resources, None, None, repr(exc),
                       at, time.time() - at)
    return Outcome('claim', consumer, resources, response.status_code,
                   response.headers.get('X-Served-By'), response.text, at,
                   time.time() - at)


def _error(outcome):
    """The first error of a 4xx body, or {}."""
    try:
        return json.loads(outcome.body)['errors'][0]
    except (ValueError, KeyError, IndexError):
        return {}


def _stored(engine, providers):
    """{consumer: {provider uuid: {class: used}}} on ``providers``."""
    rp, rc, alloc = (tables.resource_providers, tables.resource_classes,
                     tables.allocations)
    query = (sa.select(alloc.c.consumer_id, rp.c.uuid, rc.c.name,
                       alloc.c.used)
             .join(rp, rp.c.id == alloc.c.resource_provider_id)
             .join(rc, rc.c.id == alloc.c.resource_class_id)
             .where(rp.c.uuid.in_(list(providers))))
    stored = collections.defaultdict(dict)
    with engine.connect() as conn:
        for consumer, provider, resource_class, used in conn.execute(query):
            stored[consumer].setdefault(provider, {})[resource_class] = used
    return dict(stored)


def _over_allocated(engine):
    """Every (provider, class) of the database using more than its
    capacity: [(uuid, class, used, capacity)]."""
    rp, rc = tables.resource_providers, tables.resource_classes
    inv, alloc = tables.inventories, tables.allocations
    used = (sa.select(alloc.c.resource_provider_id, alloc.c.resource_class_id,
                      sa.func.sum(alloc.c.used).label('used'))
            .group_by(alloc.c.resource_provider_id,
                      alloc.c.resource_class_id).subquery())
    query = (sa.select(rp.c.uuid, rc.c.name, used.c.used, inv.c.total,
                       inv.c.reserved, inv.c.allocation_ratio)
             .select_from(used)
             .join(rp, rp.c.id == used.c.resource_provider_id)
             .join(rc, rc.c.id == used.c.resource_class_id)
             .outerjoin(inv, sa.and_(
                 inv.c.resource_provider_id == used.c.resource_provider_id,
                 inv.c.resource_class_id == used.c.resource_class_id)))
    over = []
    with engine.connect() as conn:
        for uuid, name, used_units, total, reserved, ratio in conn.execute(
                query):
            capacity = (0 if total is None
                        else int((total - reserved) * ratio))
            if used_units > capacity:
                over.append((uuid, name, used_units, capacity))
    return over


def _report(title, **numbers):
    print('\n%s: %s' % (title, ', '.join(
        '%s=%s' % item for item in numbers.items())))


# --- Tests -----------------------------------------------------------------

def _sample_lines():
    """The sample's lines that are not comments, stripped."""
    return [line.strip() for line in
            api_hosts.SAMPLE_CONFIG.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def test_sample_config_is_valid():
    if not api_hosts.HAPROXY.exists():
        unavailable('%s is missing: the sample HAProxy configuration is NOT '
                    'checked' % api_hosts.HAPROXY)
    checked = subprocess.run(
        [api_hosts.HAPROXY, '-c', '-f', api_hosts.SAMPLE_CONFIG],
        capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # Test settings only, never in the sample.
    assert 'X-Served-By' not in api_hosts.SAMPLE_CONFIG.read_text()


def test_sample_config_checks_health_and_resends_only_what_no_host_got():
    lines = _sample_lines()
    # The health check that asks the database, not the version document.
    checks = [line for line in lines if line.startswith('http-check send')]
    assert checks == ['http-check send meth GET uri /healthcheck ver '
                      'HTTP/1.1 hdr Host placement'], checks
    # Nothing a host may have carried out is sent again.
    assert [line for line in lines if line.startswith('retry-on')] == [
        'retry-on conn-failure']


def test_requests_spread_over_every_host(topology, client):
    served = collections.Counter(
        client.request('GET', '/resource_providers').headers['X-Served-By']
        for _ in range(6 * HOSTS))
    assert set(served) == {host.name for host in topology.hosts}


def test_resent_claim_is_refused(client, engine):
    """A claim sent again, after it was stored or racing the original, is
    refused (409 placement.concurrent_update) and the claim is held once:
    never applied twice, but the sender of the copy sees a 409 for a claim
    that is in place. Why etc/haproxy-placement.cfg does not resend a
    request that a host received (it may have stored it): Nova's scheduler
    fails the boot on that 409.
    """
    uuid = _provider(client, {'VCPU': {'total': 100}})
    resources = {uuid: {'VCPU': 3}}

    consumer = str(uuidlib.uuid4())
    first = _claim(client, resources, consumer)
    again = _claim(client, resources, consumer)
    assert first.status == 204, first.body
    assert again.status == 409, again.body
    assert _error(again)['code'] == CONCURRENT_UPDATE

    # Copies of one claim at once, as when a resend overtakes the original.
    copies = str(uuidlib.uuid4())
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(
            lambda _: _claim(client, resources, copies), range(8)))
    statuses = collections.Counter(outcome.status for outcome in outcomes)
    assert statuses == {204: 1, 409: 7}, [o.body for o in outcomes]
    assert all(_error(outcome)['code'] == CONCURRENT_UPDATE
               for outcome in outcomes if outcome.status == 409)

    # POST /allocations, several consumers in one request: as a whole.
    pair = [str(uuidlib.uuid4()) for _ in range(2)]
    body = {consumer: _claim_body(resources) for consumer in pair}
    assert client.request('POST', '/allocations', body).status_code == 204
    again = client.request('POST', '/allocations', body)
    assert again.status_code == 409, again.text
    assert again.json()['errors'][0]['code'] == CONCURRENT_UPDATE
    racing = [str(uuidlib.uuid4()) for _ in range(2)]
    body = {consumer: _claim_body(resources) for consumer in racing}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = collections.Counter(pool.map(
            lambda _: client.request('POST', '/allocations',
                                     body).status_code, range(8)))
    assert statuses == {204: 1, 409: 7}

    # Before 1.28 there is no consumer generation: a resend replaces the
    # allocations with the same ones, nothing is counted twice...
    old = str(uuidlib.uuid4())
    old_body = {'allocations': [{'resource_provider': {'uuid': uuid},
                                 'resources': {'VCPU': 3}}],
                'project_id': 'hosts', 'user_id': 'hosts'}
    for _ in range(2):
        response = client.request('PUT', '/allocations/' + old, old_body,
                                  version='1.8')
        assert response.status_code == 204, response.text

    stored = _stored(engine, [uuid])
    expected = {consumer: {uuid: {'VCPU': 3}}
                for consumer in [consumer, copies, old] + pair + racing}
    assert stored == expected
    assert _over_allocated(engine) == []

    # ... but one that comes late undoes a write made in between.
    generation = client.request(
        'GET', '/allocations/' + old).json()['consumer_generation']
    response = client.request('PUT', '/allocations/' + old, _claim_body(
        {uuid: {'VCPU': 5}}, generation))
    assert response.status_code == 204, response.text
    response = client.request('PUT', '/allocations/' + old, old_body,
                              version='1.8')
    assert response.status_code == 204, response.text
    assert _stored(engine, [uuid])[old] == {uuid: {'VCPU': 3}}


def test_resent_writes(client):
    """The other writes, sent again (as a client may after a 502 or no
    answer): refused as out of date or already there, or setting the same
    state again; none applied twice."""
    def twice(method, path, body=None):
        return [client.request(method, path, body).status_code
                for _ in range(2)]

    uuid = str(uuidlib.uuid4())
    provider = {'name': 'resent-' + uuid, 'uuid': uuid}
    assert twice('POST', '/resource_providers', provider) == [200, 409]
    rp = '/resource_providers/' + uuid
    assert twice('PUT', rp + '/inventories', {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}}}) == [200, 409]
    assert twice('PUT', rp + '/traits', {
        'resource_provider_generation': 1,
        'traits': ['HW_CPU_X86_AVX']}) == [200, 409]
    assert twice('PUT', rp + '/aggregates', {
        'resource_provider_generation': 2,
        'aggregates': [str(uuidlib.uuid4())]}) == [200, 409]
    name = 'CUSTOM_RESENT_' + uuidlib.uuid4().hex.upper()
    assert twice('POST', '/resource_classes', {'name': name}) == [201, 409]
    other = name + '_PUT'
    assert twice('PUT', '/resource_classes/' + other) == [201, 204]
    assert twice('PUT', '/traits/' + other) == [201, 204]
    consumer = str(uuidlib.uuid4())
    assert _claim(client, {uuid: {'VCPU': 1}}, consumer).status == 204
    assert twice('DELETE', '/allocations/' + consumer) == [204, 404]
    assert twice('DELETE', rp) == [204, 404]


def test_racing_claims(topology, client, engine):
    """RACE_PROVIDERS x RACE_CLAIMS_PER_PROVIDER clients at once through
    HAProxy claim 1 or 2 of the RACE_LEFT last units of their provider.
    """
    providers = [_provider(client, {'VCPU': {'total': RACE_CAPACITY}})
                 for _ in range(RACE_PROVIDERS)]
    for uuid in providers:
        earlier = _claim(client, {uuid: {'VCPU': RACE_CAPACITY - RACE_LEFT}})
        assert earlier.status == 204, earlier.body
    contenders = [(uuid, 1 + index % 2) for uuid in providers
                  for index in range(RACE_CLAIMS_PER_PROVIDER)]
    start = threading.Barrier(len(contenders), timeout=60)

    def contend(contender):
        uuid, vcpus = contender
        start.wait()
        return _claim(client, {uuid: {'VCPU': vcpus}})

    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(len(contenders)) as pool:
        outcomes = list(pool.map(contend, contenders))
    took = time.monotonic() - began

    statuses = collections.Counter(outcome.status for outcome in outcomes)
    served = collections.Counter(
        outcome.served_by for outcome in outcomes if outcome.status == 204)
    _report('racing claims (%s)' % topology.database.name,
            clients=len(outcomes), seconds='%.1f' % took,
            statuses=dict(statuses), claims_per_host=dict(served))
    assert set(statuses) <= {204, 409}, [
        (o.status, o.served_by, o.body) for o in outcomes
        if o.status not in (204, 409)]
    for outcome in outcomes:
        if outcome.status == 409:
            assert 'exceed the capacity' in _error(outcome)['detail']
    assert len(served) > 1, served

    stored = _stored(engine, providers)
    won = {o.consumer: o.resources for o in outcomes if o.status == 204}
    for consumer, resources in won.items():
        assert stored.get(consumer) == resources
    lost = {o.consumer for o in outcomes if o.status == 409}
    assert not lost & set(stored)
    assert _over_allocated(engine) == []
    # Claims queue: every one that fitted got in, so each provider is full.
    for uuid in providers:
        assert sum(resources[uuid]['VCPU'] for consumer, resources
                   in stored.items() if uuid in resources) == RACE_CAPACITY


def test_host_killed_mid_load(topology, client, engine):
    """Claims (a new consumer each) and allocation candidates queries
    stream through HAProxy; one host's gunicorn is SIGKILLed half-way,
    once HAProxy sees it with requests in progress.
    """
    victim = topology.hosts[VICTIM]
    big = [_provider(client, {'VCPU': {'total': 100000},
                              'MEMORY_MB': {'total': 10 ** 7}})
           for _ in range(2)]
    small = _provider(client, {'VCPU': {'total': SMALL_CAPACITY}})
    stop = threading.Event()
    outcomes = []
    lock = threading.Lock()

    def claimer(number):
        count = 0
        while not stop.is_set():
            count += 1
            if count % 3 == 0:
                resources = {small: {'VCPU': 1}}
            else:
                resources = {big[(count + number) % 2]: {
                    'VCPU': 1, 'MEMORY_MB': 64}}
            outcome = _claim(client, resources)
            with lock:
                outcomes.append(outcome)

    def reader():
        while not stop.is_set():
            outcome = _candidates(client)
            with lock:
                outcomes.append(outcome)

    began = time.monotonic()
    log_start = len(topology.proxy_log())
    with concurrent.futures.ThreadPoolExecutor(LOAD_CLAIMERS + 1) as pool:
        workers = [pool.submit(claimer, number)
                   for number in range(LOAD_CLAIMERS)]
        workers.append(pool.submit(reader))
        try:
            time.sleep(KILL_AFTER)
            busy = _wait_in_progress(topology, victim)
            killed_at = time.time()
            victim.kill()
            dead_at = time.time()
            time.sleep(max(0, LOAD_SECONDS - (time.monotonic() - began)))
        finally:
            stop.set()
            for worker in workers:
                worker.result()
    took = time.monotonic() - began
    try:
        topology.wait_for_state(victim, 'DOWN', timeout=5)
        _check_after_kill(topology, client, engine, victim, big + [small],
                          outcomes, topology.proxy_log()[log_start:],
                          (killed_at, dead_at), took, busy)
    finally:
        victim.start()
        topology.wait_for_state(victim, 'UP')


def _wait_in_progress(topology, host):
    """Until HAProxy has requests in progress on ``host`` (at most
    IN_FLIGHT_WAIT seconds); how many it had last."""
    deadline = time.monotonic() + IN_FLIGHT_WAIT
    while True:
        in_progress = int(topology.server_stats()[host.name]['scur'] or 0)
        if in_progress or time.monotonic() > deadline:
            return in_progress
        time.sleep(0.005)


def _candidates(client):
    at = time.time()
    try:
        response = client.request(
            'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:64'
            '&limit=10')
    except requests.RequestException as exc:
        return Outcome('candidates', None, None, None, None, repr(exc), at,
                       time.time() - at)
    return Outcome('candidates', None, None, response.status_code,
                   response.headers.get('X-Served-By'),
                   response.text if response.status_code >= 400 else '',
                   at, time.time() - at)


def _read_back(client, consumer):
    """What GET /allocations/{consumer} says is held:
    {provider: {class: used}}, or None for nothing."""
    response = client.request('GET', '/allocations/' + consumer)
    assert response.status_code == 200, response.text
    held = {provider: entry['resources'] for provider, entry
            in response.json()['allocations'].items()}
    return held or None


def _check_after_kill(topology, client, engine, victim, providers,
                      outcomes, logged, kill, took, busy):
    claims = [o for o in outcomes if o.kind == 'claim']
    # Answered 5xx by a host (X-Served-By): never, the victim included.
    host_errors = [o for o in outcomes if o.status is not None
                   and o.status >= 500 and o.served_by is not None]
    # No answer, or HAProxy's own error: the requests in progress on the
    # victim when it died, which HAProxy does not resend (the sample's
    # retry-on): 502, or (not the first request of its connection) the
    # connection closed without an answer.
    dropped = [o for o in outcomes if o.served_by is None
               and (o.status is None or o.status >= 500)]
    stored = _stored(engine, providers)
    acknowledged = {o.consumer: o.resources for o in claims
                    if o.status == 204}
    # A claim refused as already there: only a copy sent twice would be.
    sent_twice = [o for o in claims if o.status == 409
                  and _error(o).get('code') == CONCURRENT_UPDATE]
    dropped_claims = [o for o in dropped if o.kind == 'claim']
    # What a client does with a dropped claim: read it back, and send it
    # again only if it is not there.
    read_back = {o.consumer: _read_back(client, o.consumer)
                 for o in dropped_claims}
    again = {o.consumer: _claim(client, o.resources, o.consumer)
             for o in dropped_claims if read_back[o.consumer] is None}
    resent = [line for line in logged if line.retries]
    _report(
        'host killed (%s)' % topology.database.name,
        seconds='%.1f' % took, kill_took='%.3f' % (kill[1] - kill[0]),
        in_progress_at_kill=busy, requests=len(outcomes),
        statuses=dict(collections.Counter(
            (o.kind, o.status) for o in outcomes)),
        claims_per_host=dict(collections.Counter(
            o.served_by for o in claims if o.status == 204)),
        host_5xx=len(host_errors), dropped=len(dropped),
        dropped_by_kind=dict(collections.Counter(
            (o.kind, o.status) for o in dropped)),
        dropped_claims_stored=sum(
            1 for o in dropped_claims if o.consumer in stored),
        resent_by_proxy=len(resent),
        proxy_logged_5xx=dict(collections.Counter(
            (line.status, line.server, line.termination) for line in logged
            if line.status >= 500)))

    assert not host_errors, [(o.status, o.served_by, o.body[:300])
                             for o in host_errors]
    # Only requests in flight while the victim died (its processes take a
    # moment to exit; their sockets close last), one per client thread at
    # most.
    assert len(dropped) <= LOAD_CLAIMERS + 1, dropped
    for o in dropped:
        assert kill[0] <= o.at + o.took and o.at <= kill[1] + DYING, (
            o, kill)
        assert o.status in (None, 502), o
    # HAProxy resent only requests the victim refused (conn-failure), to
    # the hosts left, never one it failed to answer.
    for line in resent:
        assert line.redispatched and line.server != victim.name, line
        assert line.status < 500, line
    for line in logged:
        if line.status >= 500:
            assert line.status == 502 and line.server == victim.name, line
            assert not line.retries, line
    # No claim was sent twice: no 409 says it is there already.
    assert not sent_twice, [(o.served_by, o.body[:300]) for o in sent_twice]
    for consumer, resources in acknowledged.items():
        assert stored.get(consumer) == resources, consumer
    # A 409 is the small provider's capacity.
    for o in claims:
        if o.status == 409:
            assert 'exceed the capacity' in _error(o)['detail'], o.body
        elif o not in dropped:
            assert o.status == 204, (o.status, o.body[:300])
    # A dropped claim is held whole or not at all, as read back; sent
    # again if not there, it gets in (or finds the small provider full).
    for o in dropped_claims:
        assert stored.get(o.consumer) in (None, o.resources), o
        assert read_back[o.consumer] == stored.get(o.consumer), o
        if o.consumer in again:
            answer = again[o.consumer]
            assert answer.status in (204, 409), answer.body
            if answer.status == 409:
                assert 'exceed the capacity' in _error(answer)['detail']
    # Nothing else got in.
    stored = _stored(engine, providers)
    assert set(stored) <= set(acknowledged) | {
        o.consumer for o in dropped_claims}
    assert _over_allocated(engine) == []
    assert sum(1 for o in outcomes if o.kind == 'candidates'
               and o.status == 200) > 0
    served = {o.served_by for o in claims if o.status == 204}
    assert len(served) == HOSTS, served


def test_host_without_database_is_taken_out(topology, client):
    """A host cut off its database (its listeners close its connections
    and every new one) answers its health check 503: HAProxy takes it out,
    and the others answer every request meanwhile. Back in once its
    database is back. With every host cut off, HAProxy answers 503 itself,
    in Placement's format."""
    cut = topology.hosts[VICTIM]
    others = {host.name for host in topology.hosts} - {cut.name}
    uuid = _provider(client, {'VCPU': {'total': 1000}})
    began = time.monotonic()
    topology.cut_database(cut)
    try:
        topology.wait_for_state(cut, 'DOWN', timeout=10)
        out_after = time.monotonic() - began
        row = topology.server_stats()[cut.name]
        # By its health check's answer: the service's 503, not a timeout.
        assert (row['check_status'], row['check_code']) == ('L7STS', '503'), (
            row)
        outcomes = [_claim(client, {uuid: {'VCPU': 1}}) for _ in range(20)]
        reads = [client.request('GET', '/resource_providers/' + uuid)
                 for _ in range(20)]
    finally:
        topology.restore_database(cut)
    topology.wait_for_state(cut, 'UP', timeout=10)
    _report('host without database (%s)' % topology.database.name,
            out_after='%.1fs' % out_after, check=row['check_status'],
            code=row['check_code'])
    assert [o.status for o in outcomes] == [204] * 20, [
        (o.status, o.served_by, o.body[:200]) for o in outcomes]
    assert [r.status_code for r in reads] == [200] * 20
    served = ({o.served_by for o in outcomes}
              | {r.headers['X-Served-By'] for r in reads})
    assert served == others, served

    # Back in: it serves again.
    served = {client.request('GET', '/resource_providers/' + uuid)
              .headers.get('X-Served-By') for _ in range(6 * HOSTS)}
    assert cut.name in served, served

    # Every host cut off: no host to send to.
    for host in topology.hosts:
        topology.cut_database(host)
    try:
        for host in topology.hosts:
            topology.wait_for_state(host, 'DOWN', timeout=10)
        response = client.request('GET', '/resource_providers/' + uuid)
    finally:
        for host in topology.hosts:
            topology.restore_database(host)
    for host in topology.hosts:
        topology.wait_for_state(host, 'UP', timeout=10)
    assert response.status_code == 503, response.text
    assert 'X-Served-By' not in response.headers
    assert response.json()['errors'][0]['detail'] == (
        'No placement API host is available.')
