"""placement.db.replica: when a replica may serve reads, and the lag each
backend reports. The decisions run against a real SQLite engine with the
lag measurement and the clock under the test's control; the measurement
itself runs on every backend (each is a primary here: lag 0). Standbys,
replicas and Galera nodes are in tests/integration.
"""
import threading
import time

import pytest
import sqlalchemy as sa

from placement.db import replica as replica_db


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Lag:
    """A measurement returning ``value`` (or raising it), counting calls;
    ``hold`` blocks it until released."""

    def __init__(self, value=0.0):
        self.value = value
        self.calls = 0
        self.hold = threading.Event()
        self.hold.set()

    def __call__(self, _connection, _primary, _bound):
        self.calls += 1
        self.hold.wait(10)
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


@pytest.fixture
def engine(tmp_path):
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'replica.db'))
    yield engine
    engine.dispose()


def _replica(engine, lag, clock, **kwargs):
    # The replica's own engine stands for the primary: the measurement is
    # the test's, or SQLite's (no lag).
    return replica_db.Replica(engine, engine, max_lag=1.0, interval=1.0,
                              measure=lag, clock=clock, **kwargs)


def _settle(replica):
    """Wait for the check ``usable()`` started in the background."""
    deadline = time.monotonic() + 10
    while replica._checking is not None and replica._checking.is_alive():
        assert time.monotonic() < deadline, 'the check did not finish'
        time.sleep(0.01)


def test_the_first_read_waits_briefly_for_the_first_check(engine):
    lag, clock = Lag(0.2), Clock()
    replica = _replica(engine, lag, clock)
    assert replica.usable() is True
    assert lag.calls == 1
    assert replica.last_check.lag == 0.2


def test_a_slow_first_check_is_not_waited_for(engine):
    lag, clock = Lag(0.2), Clock()
    lag.hold.clear()
    replica = _replica(engine, lag, clock)
    started = time.monotonic()
    assert replica.usable() is False
    assert time.monotonic() - started < replica_db.FRESH_CHECK_WAIT + 0.5
    lag.hold.set()
    _settle(replica)
    assert replica.usable() is True


def test_after_an_idle_spell_the_old_check_is_not_trusted(engine):
    lag, clock = Lag(0.0), Clock()
    replica = _replica(engine, lag, clock)
    replica.check_now()
    lag.value = 5.0  # fell behind while nobody asked
    clock.now += 60
    assert replica.usable() is False
    assert replica.last_check.lag == 5.0


def test_lag_beyond_the_bound_sends_reads_to_the_primary(engine):
    lag, clock = Lag(1.5), Clock()
    replica = _replica(engine, lag, clock)
    check = replica.check_now()
    assert not check.healthy and 'exceeds' in check.reason
    assert replica.usable() is False
    # Caught up again: usable after the next check, without a restart.
    lag.value = 0.3
    clock.now += 1.0
    replica.usable()
    _settle(replica)
    assert replica.usable() is True


def test_at_most_one_check_per_interval(engine):
    lag, clock = Lag(0.0), Clock()
    replica = _replica(engine, lag, clock)
    replica.check_now()
    for _ in range(50):
        replica.usable()
        clock.now += 0.01
    _settle(replica)
    assert lag.calls == 1
    clock.now += 0.6
    for _ in range(50):
        replica.usable()
    _settle(replica)
    assert lag.calls == 2


def test_a_check_stuck_in_flight_stops_reads_after_two_intervals(engine):
    lag, clock = Lag(0.0), Clock()
    replica = _replica(engine, lag, clock)
    replica.check_now()
    lag.hold.clear()  # the next check hangs, as a connect to a silent host
    clock.now += 1.2
    assert replica.usable() is True  # the last check is recent enough
    clock.now += 1.0
    assert replica.usable() is False
    assert lag.calls == 2  # and no second check piles up behind it
    lag.hold.set()
    _settle(replica)


def test_a_failed_read_sends_reads_to_the_primary_until_a_check(engine):
    lag, clock = Lag(0.0), Clock()
    replica = _replica(engine, lag, clock)
    replica.check_now()
    replica.failed(RuntimeError('connection reset'))
    assert replica.usable() is False
    assert replica.last_check.reason == 'a read failed'
    clock.now += 1.0
    replica.usable()
    _settle(replica)
    assert replica.usable() is True


def test_a_server_that_is_not_replicating_is_not_used(engine):
    lag = Lag(replica_db.ReplicaUnusable('replica is not replicating'))
    replica = _replica(engine, lag, Clock())
    check = replica.check_now()
    assert check.reason == 'replica is not replicating'
    assert replica.usable() is False


def test_an_unreachable_replica_is_not_used(tmp_path):
    engine = sa.create_engine(
        'sqlite:///%s' % (tmp_path / 'missing' / 'replica.db'))
    replica = _replica(engine, replica_db.measure_lag, Clock())
    check = replica.check_now()
    assert not check.healthy and check.reason.startswith('check failed')
    assert replica.usable() is False


def test_every_check_is_reported(engine):
    seen = []
    lag, clock = Lag(0.25), Clock()
    replica = _replica(engine, lag, clock, on_check=seen.append)
    replica.check_now()
    replica.failed(RuntimeError('gone'))
    assert [(check.lag, check.healthy) for check in seen] == [
        (0.25, True), (None, False)]


def test_a_slow_check_does_not_overrule_a_newer_failure(engine):
    lag, clock = Lag(0.0), Clock()
    replica = _replica(engine, lag, clock)
    lag.hold.clear()
    replica.usable()  # starts a check at t=1000 that hangs
    clock.now += 0.5
    replica.failed(RuntimeError('reset'))
    lag.hold.set()
    _settle(replica)
    assert replica.last_check.reason == 'a read failed'


def test_a_primary_reports_no_lag(backend):
    with backend.engine.connect() as connection:
        assert replica_db.measure_lag(connection, backend.engine) == 0.0
