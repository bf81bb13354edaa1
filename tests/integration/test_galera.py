"""Placement on a 3-node Galera cluster with writes on every node: two API
servers (gunicorn, 4 workers each) whose pooled connections HAProxy
spreads over the nodes round-robin (tests/integration/galera.py).

The races of tests/claim_races.py must hold there as on one database:
no over-allocation, no 5xx, every claim that fits acknowledged and
stored, one winner per provider generation. With
``[placement_database] mysql_wsrep_sync_wait = 1``, what one server
acknowledged is what the other reads next.
"""
import concurrent.futures
import contextlib
import threading
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine
from placement.db import migration

import claim_races
from conftest import make_conf
from galera import galera  # noqa: F401 (fixtures)
from galera import galera_database  # noqa: F401 (fixtures)
import wsgi_process

pytestmark = pytest.mark.integration

SERVERS = 2
WORKERS = 4
THREADS = 4
READ_AFTER_WRITE_PROBES = 60


@pytest.fixture(scope='module')
def cluster_database(galera):  # noqa: F811 (fixture)
    """A fresh, migrated database on the cluster."""
    with galera.database() as database:
        engine = db_engine.create_engine(make_conf(database.url))
        try:
            migration.upgrade(engine)
        finally:
            engine.dispose()
        yield database


@contextlib.contextmanager
def _serving(workdirs, urls, workers):
    """A placement server per database URL, as claim_races.Servers."""
    servers = [
        wsgi_process.placement_server(workdir, {'placement_database': {
            'connection': url, 'sync_on_startup': 'false',
            'mysql_wsrep_sync_wait': '1'}}, workers=workers, threads=THREADS)
        for workdir, url in zip(workdirs, urls)]
    started = []
    try:
        for server in servers:
            started.append(server.start())
        yield claim_races.Servers([server.url for server in servers])
    finally:
        for server in started:
            server.stop()
    _check_logs(started)


@pytest.fixture(scope='module')
def cluster_servers(cluster_database, tmp_path_factory):
    """Two servers whose pooled connections HAProxy spreads over the
    nodes; requests take turns between the servers.
    """
    with _serving([tmp_path_factory.mktemp('galera-api')
                   for _ in range(SERVERS)],
                  [cluster_database.url] * SERVERS, WORKERS) as servers:
        yield servers


@pytest.fixture
def pinned_servers(cluster_database, tmp_path):
    """One server on node 1, one on node 2: a write through the first is
    read back through another node for sure.
    """
    with _serving([tmp_path / 'node1', tmp_path / 'node2'],
                  cluster_database.node_urls[:2], 2) as servers:
        yield servers


def _check_logs(servers):
    """No server logged an unexpected error (a 500's traceback)."""
    for server in servers:
        text = server.log_path.read_text(errors='replace')
        assert 'Unexpected error' not in text, server.log_tail(80)


def test_requests_land_on_every_node(cluster_servers, galera):
    """The topology is what the races need: the servers' pooled
    connections reach all three nodes.
    """
    for _ in range(3 * SERVERS * WORKERS):
        claim_races.provider(cluster_servers, {})
    seen = set()
    for node in range(len(galera.node_urls)):
        status = galera.node_status(node)
        if int(status['wsrep_local_commits']) > 0:
            seen.add(node)
    assert seen == {0, 1, 2}


@pytest.mark.parametrize('race', claim_races.ALL,
                         ids=[race.__name__ for race in claim_races.ALL])
def test_race(cluster_servers, race):
    race(cluster_servers)


def test_read_after_write_through_the_other_server(pinned_servers,
                                                   cluster_servers):
    """A client writes through one server and reads back through the
    other, on another node, at once, while others write in the
    background: every read sees the write (mysql_wsrep_sync_wait = 1),
    and a generation just read is good for the next write.
    """
    stop = threading.Event()
    load = claim_races.provider(cluster_servers, {'VCPU': {'total': 10000}})

    def background():
        while not stop.is_set():
            claim_races.claim(cluster_servers, {load: {'VCPU': 1}})

    stale = []
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        writers = [pool.submit(background) for _ in range(3)]
        try:
            for probe in range(READ_AFTER_WRITE_PROBES // 3):
                stale.extend(_probe(pinned_servers, probe))
        finally:
            stop.set()
            for writer in writers:
                writer.result()
    assert not stale, stale


def _probe(servers, probe):
    """Three read-after-write checks, writes on server 0, reads on 1; the
    ones that read stale data.
    """
    def write(method, path, body=None, expected=(200, 201, 204)):
        status, answer = servers.request(method, path, body, server=0)
        assert status in expected, (method, path, status, answer)
        return answer

    def read(path):
        return servers.request('GET', path, server=1)

    stale = []
    uuid = str(uuidlib.uuid4())
    write('POST', '/resource_providers', {'name': 'raw-' + uuid,
                                           'uuid': uuid})
    status, body = read('/resource_providers/' + uuid)
    if status != 200:
        stale.append((probe, 'provider', status))
        return stale
    inventories = write(
        'PUT', '/resource_providers/%s/inventories' % uuid,
        {'resource_provider_generation': body['generation'],
         'inventories': {'VCPU': {'total': 8 + probe}}})
    status, body = read('/resource_providers/%s/inventories' % uuid)
    if body != inventories:
        stale.append((probe, 'inventories', body))
    consumer = str(uuidlib.uuid4())
    write('PUT', '/allocations/' + consumer, {
        'allocations': {uuid: {'resources': {'VCPU': 2}}},
        'project_id': 'raw', 'user_id': 'raw', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    status, body = read('/allocations/' + consumer)
    if body.get('consumer_generation') != 1:
        stale.append((probe, 'allocations', body))
    # The generation the other server reads is good for the next write.
    status, body = read('/resource_providers/%s/traits' % uuid)
    status, answer = servers.request(
        'PUT', '/resource_providers/%s/traits' % uuid,
        {'resource_provider_generation': body['resource_provider_generation'],
         'traits': ['HW_CPU_X86_AVX']}, server=0)
    if status != 200:
        stale.append((probe, 'generation', answer))
    return stale


def test_every_node_holds_the_same_data(cluster_servers, galera):
    """After all the races the nodes agree, row for row."""
    counts = []
    for node in range(len(galera.node_urls)):
        with galera.admin_engine(node).connect() as conn:
            conn.exec_driver_sql('SET SESSION wsrep_sync_wait = 1')
            database = conn.exec_driver_sql(
                "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA "
                "WHERE SCHEMA_NAME LIKE 'ptest_galera_%%'").scalars().all()
            counts.append({name: tuple(
                conn.execute(sa.text(
                    'SELECT COUNT(*), COALESCE(SUM(used), 0) FROM '
                    '%s.allocations' % name)).one())
                for name in database})
            conn.exec_driver_sql('SET SESSION wsrep_sync_wait = 0')
    assert counts[0] == counts[1] == counts[2]
