"""Settings every new connection gets: on MySQL from [placement_database],
on PostgreSQL no JIT."""
import pytest

from placement.db import engine as db_engine

from conftest import make_conf


def _session_value(backend, variable, **options):
    engine = db_engine.create_engine(
        make_conf(backend.url, placement_database=options))
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(
                'SELECT @@SESSION.%s' % variable).scalar()
    finally:
        engine.dispose()


@pytest.mark.backends('mysql')
def test_wsrep_sync_wait_is_set_when_configured(backend):
    assert _session_value(backend, 'wsrep_sync_wait',
                          mysql_wsrep_sync_wait=3) == 3


@pytest.mark.backends('mysql')
def test_wsrep_sync_wait_is_the_servers_by_default(backend):
    default = _session_value(backend, 'wsrep_sync_wait')
    assert _session_value(backend, 'wsrep_sync_wait',
                          mysql_wsrep_sync_wait=None) == default


@pytest.mark.backends('mysql')
def test_sql_mode_and_wsrep_sync_wait_together(backend):
    assert _session_value(backend, 'sql_mode', mysql_sql_mode='ANSI_QUOTES',
                          mysql_wsrep_sync_wait=1) == 'ANSI_QUOTES'
    assert _session_value(backend, 'wsrep_sync_wait',
                          mysql_sql_mode='ANSI_QUOTES',
                          mysql_wsrep_sync_wait=1) == 1


@pytest.mark.backends('postgresql')
def test_postgresql_sessions_compile_nothing_just_in_time(backend):
    """JIT compilation, started on cost estimates, would take longer
    than the statements it compiles: each connection turns it off."""
    engine = db_engine.create_engine(make_conf(backend.url))
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql('SHOW jit').scalar() == 'off'
    finally:
        engine.dispose()
