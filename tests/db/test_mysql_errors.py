"""What a real MariaDB server answers, classified the same through each
MySQL driver (the ``mysql`` backend through PyMySQL, its ``mysqldb``
variant through mysqlclient): each driver raises its own exception
classes, so constructed ones (tests/unit/test_db_engine.py) prove less.
"""
import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine
from placement.db import tables

from conftest import make_conf
import sql_rows

pytestmark = pytest.mark.backends('mysql')

_RP = tables.resource_providers


@pytest.fixture
def private_engine(backend):
    """An engine of its own on the backend's database: what its sessions
    set stays out of the shared pool."""
    engine = db_engine.create_engine(make_conf(backend.url))
    yield engine
    engine.dispose()


def _touch(conn, provider):
    conn.execute(_RP.update().where(_RP.c.id == provider['id'])
                 .values(generation=_RP.c.generation + 1))


@pytest.mark.parametrize('charset', [None, 'utf8', 'utf8mb3'])
def test_sessions_speak_four_byte_utf8_whatever_the_url_says(backend,
                                                             charset):
    url = sa.engine.make_url(backend.url).difference_update_query(
        ['charset'])
    if charset:
        url = url.update_query_dict({'charset': charset})
    engine = db_engine.create_engine(
        make_conf(url.render_as_string(hide_password=False)))
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT @@character_set_client, @@character_set_results'
            ).one() == ('utf8mb4', 'utf8mb4')
    finally:
        engine.dispose()


def test_a_lock_wait_timeout_is_a_conflict(private_engine, provider):
    with private_engine.connect() as holder, \
            private_engine.connect() as waiter:
        _touch(holder, provider)
        waiter.exec_driver_sql('SET SESSION innodb_lock_wait_timeout = 1')
        with pytest.raises(sa.exc.DBAPIError) as caught:
            _touch(waiter, provider)
    assert db_engine.is_transient(caught.value)
    assert db_engine.is_conflict(caught.value)
    assert not db_engine.is_unreachable(caught.value)


def test_a_killed_connection_is_transient_but_no_conflict(private_engine):
    with private_engine.connect() as victim, \
            private_engine.connect() as killer:
        session = victim.exec_driver_sql('SELECT CONNECTION_ID()').scalar()
        killer.exec_driver_sql('KILL %d' % session)
        with pytest.raises(sa.exc.DBAPIError) as caught:
            victim.exec_driver_sql('SELECT 1')
    assert db_engine.is_transient(caught.value)
    assert not db_engine.is_conflict(caught.value)


def test_a_name_too_long_for_its_column_is_unstorable(backend):
    with pytest.raises(sa.exc.DBAPIError) as caught:
        with backend.engine.begin() as conn:
            sql_rows.provider(conn, name='x' * (_RP.c.name.type.length + 1))
    assert db_engine.is_unstorable_value(caught.value)
    assert not db_engine.is_transient(caught.value)


def test_a_duplicate_is_neither_unstorable_nor_transient(backend, provider):
    with pytest.raises(sa.exc.IntegrityError) as caught:
        with backend.engine.begin() as conn:
            sql_rows.provider(conn, uuid=provider['uuid'])
    assert not db_engine.is_unstorable_value(caught.value)
    assert not db_engine.is_transient(caught.value)


def test_a_server_nothing_listens_for_is_unreachable(backend, api_factory):
    dead = sa.engine.make_url(backend.url).set(port=1).render_as_string(
        hide_password=False)
    engine = db_engine.create_engine(make_conf(dead))
    try:
        with pytest.raises(sa.exc.DBAPIError) as caught:
            engine.connect()
    finally:
        engine.dispose()
    assert db_engine.is_unreachable(caught.value)
    assert not db_engine.is_transient(caught.value)

    api = api_factory(shared_engine=False,
                      placement_database={'connection': dead})
    assert api.get('/resource_classes').status_code == 503
