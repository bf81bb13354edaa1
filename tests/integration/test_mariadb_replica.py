"""Reads from a real MariaDB asynchronous replica (binlog replication with
GTID, tools/mariadb-replica.sh), under gunicorn.

Each test serves the API with ``connection`` on the primary and
``slave_connection`` on the replica, and tells where reads went from the
service's own metrics (``placement_database_reads_total{server}``), and
from each server's own row counts (``information_schema.TABLE_STATISTICS``)
as well. The service decides by ``SHOW REPLICA STATUS``: a NULL
``Seconds_Behind_Master`` (a replication thread stopped) or one above
``replica_max_lag`` (1 s) sends reads to the primary. Under load, no
request may answer 5xx, whatever happens to the replica.
"""
import math
import time

import pytest

from mariadb_replica import mariadb_replica  # noqa: F401 (fixtures)
from mariadb_replica import mariadb_replica_database  # noqa: F401
from replica_api import MOVE_WITHIN
from replica_api import Load
from replica_api import outage
from replica_api import reads_after
from replica_api import serving
from replica_api import until

pytestmark = pytest.mark.integration

# The service measures the lag against the primary's GTID position: it
# passes replica_max_lag (1.0) once the replica is 1 s behind.
SECONDS_BEHIND_PASSES_1S = 1.0
# Where reads go is watched in windows this long: under the load (tens of
# candidates requests a second) a window without replica reads but with
# primary reads means they have moved; short, so that the time a move is
# seen adds little to the time it took.
WINDOW = 0.3


def _left(api):
    primary, replica = reads_after(api, WINDOW)
    return replica == 0 and primary > 0


def _back(api):
    return reads_after(api, WINDOW)[1] > 0


@pytest.fixture
def mrep_api(tmp_path, mariadb_replica, mariadb_replica_database):
    with serving(tmp_path, mariadb_replica_database.primary_url,
                 mariadb_replica_database.replica_url,
                 caught_up=mariadb_replica.wait_for_replica) as api:
        yield api


def test_candidates_on_the_replica_claims_on_the_primary(
        mrep_api, mariadb_replica,
        mariadb_replica_database):
    name = mariadb_replica_database.name
    before = mrep_api.reads()
    # Nothing writes inventories under load: what the replica reads there
    # is the candidates' own reading, not replication.
    replica_before = mariadb_replica.rows_read('replica', name, 'inventories')
    with Load(mrep_api) as load:
        time.sleep(3)
    after = mrep_api.reads()
    replica_after = mariadb_replica.rows_read('replica', name, 'inventories')
    gets = [a for a in load.answers if a[1] == 'GET']
    claims = [a for a in load.answers if a[1] == 'PUT']
    assert not load.failures(), load.failures()[:5]
    assert gets and {status for _t, _m, status in claims} == {204}
    # Every candidates read went to the replica; what the primary read is
    # the claims' own (their provider and consumer checks).
    assert after['replica'] - before['replica'] >= len(gets)
    assert replica_after - replica_before >= len(gets)
    # The claims were written on the primary and replicated.
    mariadb_replica.wait_for_replica()
    assert mariadb_replica.replicating()
    print('%d candidates reads on the replica (%d inventory rows read '
          'there), %d claims on the primary'
          % (len(gets), replica_after - replica_before, len(claims)))


def test_sql_thread_stopped_under_load_then_restarted(
        mrep_api, mariadb_replica):
    def not_replicating():
        # The server says NULL, the service NaN.
        assert mariadb_replica.lag() is None
        lag, usable = mrep_api.replica_gauges()
        assert math.isnan(lag) and usable == 0

    seen = outage(mrep_api, mariadb_replica.stop_sql_thread,
                  mariadb_replica.start_sql_thread, _left, _back,
                  'STOP REPLICA SQL_THREAD', during=not_replicating)
    print('reads left the replica within %.2fs of STOP REPLICA SQL_THREAD '
          'and came back %.2fs after START; %d answers, none 5xx' % seen)


def test_delayed_replica_sends_reads_to_the_primary(
        mrep_api, mariadb_replica):
    with Load(mrep_api) as load:
        time.sleep(1)
        # The claims keep the primary writing: the lag grows to 3 s.
        mariadb_replica.delay(3)
        delayed = time.monotonic()
        # Left because of the lag the service measured, not because a check
        # saw the threads stopped for the change (a NULL lag, NaN here).
        moved = until(lambda: _left(mrep_api)
                      and mrep_api.replica_gauges()[0] > 1.0,
                      SECONDS_BEHIND_PASSES_1S + MOVE_WITHIN,
                      'reads stayed on a lagging replica')
        assert mariadb_replica.replicating()
        # Seconds_Behind_Master, in whole seconds rounded down.
        assert mariadb_replica.lag() >= 1
        lag, usable = mrep_api.replica_gauges()
        assert lag > 1.0 and usable == 0
        primary, replica = reads_after(mrep_api)
        assert replica == 0 and primary > 0
        mariadb_replica.delay(0)
        undelayed = time.monotonic()
        back = until(lambda: _back(mrep_api), 10,
                     'reads did not come back once the delay was removed')
    assert not load.failures(), load.failures()[:5]
    assert moved - delayed < SECONDS_BEHIND_PASSES_1S + MOVE_WITHIN
    print('reads left the replica %.2fs after MASTER_DELAY=3 (lag %.0fs) '
          'and came back %.2fs after MASTER_DELAY=0; %d answers, none 5xx'
          % (moved - delayed, lag, back - undelayed, len(load.answers)))


def test_replica_stopped_under_load_then_restarted(
        mrep_api, mariadb_replica):
    seen = outage(mrep_api, mariadb_replica.stop_replica,
                  mariadb_replica.start_replica, _left, _back,
                  'the replica stopped')
    print('reads left the stopped replica within %.2fs and came back %.2fs '
          'after it started; %d answers, none 5xx' % seen)
