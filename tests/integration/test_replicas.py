"""Reads from real replicas: a PostgreSQL hot standby (tools/pg-replica.sh)
and a second Galera node (tools/galera.sh), under gunicorn.

Each test serves the API with ``connection`` on the primary and
``slave_connection`` on the replica, and tells where reads went from the
service's own metrics (``placement_database_reads_total{server}``), and on
PostgreSQL from each server's own transaction counts as well. Under load,
no request may answer 5xx, whatever happens to the replica.
"""
import time

import pytest

from galera import galera  # noqa: F401 (fixtures)
from galera import galera_database  # noqa: F401 (fixtures)
from pg_replica import pg_replica  # noqa: F401
from pg_replica import pg_replica_database  # noqa: F401
from replica_api import MOVE_WITHIN
from replica_api import Api
from replica_api import Load
from replica_api import outage
from replica_api import reads_after
from replica_api import server
from replica_api import serving
from replica_api import until

pytestmark = pytest.mark.integration


# --- PostgreSQL standby ----------------------------------------------------


@pytest.fixture
def pg_api(tmp_path, pg_replica, pg_replica_database):
    with serving(tmp_path, pg_replica_database.primary_url,
                 pg_replica_database.standby_url,
                 caught_up=pg_replica.wait_for_replay) as api:
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
    until(lambda: pg_replica.standby_stats(name) - standby_before
          >= len(gets), 10, 'the standby did not count the reads')


def test_a_new_database_answers_from_its_first_request(
        tmp_path, pg_replica, pg_replica_database):
    # Nothing has touched the primary yet: its standard classes and traits
    # are written by the first request, and the standby has none of them
    # until it replays that write.
    with server(tmp_path, pg_replica_database.primary_url,
                pg_replica_database.standby_url) as running:
        api = Api(running.url)
        response = api.call('GET', '/allocation_candidates?resources=VCPU:1')
        assert response.status_code == 200, response.text
        assert response.json()['allocation_requests'] == []
        classes = api.call('GET', '/resource_classes').json()
        assert 'VCPU' in {rc['name'] for rc in classes['resource_classes']}
        assert api.call('GET', '/traits').json()['traits']


def test_standby_stopped_under_load_then_restarted(pg_api, pg_replica):
    seen = outage(pg_api, pg_replica.stop_standby, pg_replica.start_standby,
                  left=lambda api: reads_after(api, 0.5)[1] == 0,
                  back=lambda api: reads_after(api, 0.5)[1] > 0,
                  what='the standby stopped')
    print('reads left the stopped standby within %.2fs and came back %.2fs '
          'after it started; %d answers, none 5xx' % seen)


def test_paused_replay_sends_reads_to_the_primary(pg_api, pg_replica):
    with Load(pg_api) as load:
        pg_replica.pause_replay()
        paused = time.monotonic()
        # The claims keep the primary writing: the lag passes 1 s.
        moved = until(lambda: reads_after(pg_api, 0.5)[1] == 0,
                      1.0 + MOVE_WITHIN, 'reads stayed on a lagging standby')
        assert pg_replica.replay_lag() > 1.0
        pg_replica.resume_replay()
        until(lambda: reads_after(pg_api, 0.5)[1] > 0, 10,
              'reads did not come back once replay resumed')
    assert not load.failures(), load.failures()[:5]
    assert moved - paused < 1.0 + MOVE_WITHIN


# --- Galera: a second node as the replica -----------------------------------


def test_reads_from_a_second_galera_node(tmp_path, galera, galera_database):
    node1, node2 = galera_database.node_urls[:2]
    with serving(tmp_path, node1, node2, mysql_wsrep_sync_wait='1') as api:
        with Load(api) as load:
            time.sleep(2)
            # A desynced node (as during a backup) is not read from.
            with galera.admin_engine(1).connect() as conn:
                conn.exec_driver_sql('SET GLOBAL wsrep_desync = ON')
            try:
                until(lambda: reads_after(api, 0.5)[1] == 0,
                      MOVE_WITHIN, 'reads stayed on a desynced node')
            finally:
                with galera.admin_engine(1).connect() as conn:
                    conn.exec_driver_sql('SET GLOBAL wsrep_desync = OFF')
            until(lambda: reads_after(api, 0.5)[1] > 0, 10,
                  'reads did not come back to the synced node')
    assert not load.failures(), load.failures()[:5]
    assert {status for _t, method, status in load.answers
            if method == 'PUT'} == {204}
