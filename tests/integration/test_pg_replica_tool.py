"""tools/pg-replica.sh and its fixtures (tests/integration/pg_replica.py):
the standby applies the primary's writes within a second and refuses its
own; a paused replay lets it fall behind and a resumed one catches up; a
stopped standby starts again and streams.
"""
import contextlib
import time

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine

from pg_replica import pg_replica  # noqa: F401 (fixtures)
from pg_replica import pg_replica_database  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

VISIBLE_WITHIN = 1.0


@contextlib.contextmanager
def _engine(url):
    engine = sa.create_engine(db_engine.normalize_url(url),
                              poolclass=sa.pool.NullPool,
                              connect_args={'connect_timeout': 5})
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
def engines(pg_replica_database):  # noqa: F811 (fixture)
    """(primary, standby) engines on a fresh database holding table t."""
    with _engine(pg_replica_database.primary_url) as primary, \
            _engine(pg_replica_database.standby_url) as standby:
        with primary.begin() as conn:
            conn.exec_driver_sql(
                'CREATE TABLE t (id serial PRIMARY KEY, value text)')
        yield primary, standby


def _insert(engine, value):
    with engine.begin() as conn:
        conn.execute(sa.text('INSERT INTO t (value) VALUES (:value)'),
                     {'value': value})


def _count(engine, value=None):
    with engine.connect() as conn:
        if value is None:
            return conn.execute(sa.text('SELECT count(*) FROM t')).scalar()
        return conn.execute(sa.text('SELECT count(*) FROM t '
                                    'WHERE value = :value'),
                            {'value': value}).scalar()


def _wait_until(predicate, timeout, interval=0.02):
    """The seconds ``predicate()`` took to hold, or None after timeout."""
    began = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - began
        if time.monotonic() - began > timeout:
            return None
        time.sleep(interval)


def test_database_urls_name_the_servers(pg_replica,  # noqa: F811
                                        pg_replica_database):  # noqa: F811
    database = pg_replica_database
    assert database.name.startswith('ptest_replica_')
    for url, server in ((database.primary_url, pg_replica.primary_url),
                        (database.standby_url, pg_replica.standby_url)):
        parsed = db_engine.normalize_url(url)
        assert parsed.database == database.name
        assert parsed.port == db_engine.normalize_url(server).port
    assert pg_replica.primary_url != pg_replica.standby_url


def test_primary_write_readable_on_standby_within_a_second(engines):
    primary, standby = engines
    # The table itself has to reach the standby first.
    assert _wait_until(lambda: _table_exists(standby), 10) is not None
    _insert(primary, 'hello')
    took = _wait_until(lambda: _count(standby, 'hello') == 1, VISIBLE_WITHIN)
    assert took is not None, (
        'a committed row was not visible on the standby within %ss'
        % VISIBLE_WITHIN)


def _table_exists(engine):
    with engine.connect() as conn:
        return conn.execute(
            sa.text("SELECT to_regclass('t') IS NOT NULL")).scalar()


def test_standby_refuses_writes(engines, pg_replica):  # noqa: F811
    primary, standby = engines
    pg_replica.wait_for_replay()
    with pytest.raises(sa.exc.DBAPIError) as caught:
        _insert(standby, 'nope')
    # read_only_sql_transaction
    assert caught.value.orig.pgcode == '25006', caught.value
    with standby.connect() as conn:
        assert conn.exec_driver_sql('SELECT pg_is_in_recovery()').scalar()
    assert _count(primary, 'nope') == 0


def test_paused_replay_falls_behind_and_catches_up(
        engines, pg_replica):  # noqa: F811
    primary, standby = engines
    pg_replica.wait_for_replay()
    _insert(primary, 'before')
    pg_replica.wait_for_replay()
    assert pg_replica.replay_lag() < 1.0
    applied = _count(standby)

    pg_replica.pause_replay()
    assert pg_replica.replay_paused()
    counter = iter(range(10 ** 6))

    def lag_with_a_commit():
        _insert(primary, 'during %d' % next(counter))
        return pg_replica.replay_lag()

    took = _wait_until(lambda: lag_with_a_commit() > 1.0, 10,
                       interval=0.1)
    assert took is not None, 'replay_lag() stayed under 1s while paused'
    # Nothing the primary committed meanwhile was applied.
    assert _count(standby) == applied
    assert _count(primary) > applied + 1

    pg_replica.resume_replay()
    took = _wait_until(lambda: lag_with_a_commit() < 1.0, 10,
                       interval=0.1)
    assert took is not None, 'replay_lag() stayed over 1s after resuming'
    assert not pg_replica.replay_paused()
    pg_replica.wait_for_replay()
    assert _count(standby) == _count(primary)


def test_stopped_standby_starts_and_streams_again(
        engines, pg_replica):  # noqa: F811
    primary, standby = engines
    pg_replica.stop_standby()
    assert not pg_replica.standby_running()
    assert not pg_replica.standby_streams()
    # The primary goes on without it; the slot keeps the WAL it misses.
    for value in range(20):
        _insert(primary, 'while stopped %d' % value)

    pg_replica.start_standby()
    assert pg_replica.standby_running()
    assert pg_replica.standby_streams()
    pg_replica.wait_for_replay()
    assert _count(standby) == _count(primary) == 20
    _insert(primary, 'after')
    assert _wait_until(lambda: _count(standby, 'after') == 1,
                       VISIBLE_WITHIN) is not None


def test_database_restores_a_stopped_paused_standby(
        pg_replica):  # noqa: F811
    with pg_replica.database():
        pg_replica.stop_standby()
    assert pg_replica.standby_running()
    with pg_replica.database() as database:
        pg_replica.pause_replay()
    assert not pg_replica.replay_paused()
    # Dropped on both servers.
    pg_replica.wait_for_replay()
    for server in ('primary', 'standby'):
        with pg_replica.admin_engine(server).connect() as conn:
            assert conn.execute(
                sa.text('SELECT count(*) FROM pg_database '
                        'WHERE datname = :name'),
                {'name': database.name}).scalar() == 0


def test_stats_count_each_servers_own_transactions(
        pg_replica, pg_replica_database):  # noqa: F811
    name = pg_replica_database.name
    for url, stats in ((pg_replica_database.standby_url,
                        pg_replica.standby_stats),
                       (pg_replica_database.primary_url,
                        pg_replica.primary_stats)):
        before = stats(name)
        with _engine(url) as engine:
            for _ in range(5):
                with engine.connect() as conn:
                    conn.exec_driver_sql('SELECT 1')
        # Backends report their counts when they end or go idle.
        assert _wait_until(lambda stats=stats, before=before:
                           stats(name) >= before + 5,
                           5, interval=0.2) is not None, stats
