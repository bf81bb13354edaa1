"""Settings every new MySQL connection gets from [placement_database]."""
import pytest

from placement.db import engine as db_engine

from conftest import make_conf

pytestmark = pytest.mark.backends('mysql')


def _session_value(backend, variable, **options):
    engine = db_engine.create_engine(
        make_conf(backend.url, placement_database=options))
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(
                'SELECT @@SESSION.%s' % variable).scalar()
    finally:
        engine.dispose()


def test_wsrep_sync_wait_is_set_when_configured(backend):
    assert _session_value(backend, 'wsrep_sync_wait',
                          mysql_wsrep_sync_wait=3) == 3


def test_wsrep_sync_wait_is_the_servers_by_default(backend):
    default = _session_value(backend, 'wsrep_sync_wait')
    assert _session_value(backend, 'wsrep_sync_wait',
                          mysql_wsrep_sync_wait=None) == default


def test_sql_mode_and_wsrep_sync_wait_together(backend):
    assert _session_value(backend, 'sql_mode', mysql_sql_mode='ANSI_QUOTES',
                          mysql_wsrep_sync_wait=1) == 'ANSI_QUOTES'
    assert _session_value(backend, 'wsrep_sync_wait',
                          mysql_sql_mode='ANSI_QUOTES',
                          mysql_wsrep_sync_wait=1) == 1
