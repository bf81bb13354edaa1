"""placement.db.id_list: the rows for a list of ids, however long, on
every backend, and on MySQL servers with and without JSON_TABLE.
"""
import pytest
import sqlalchemy as sa

from placement.db import id_list
from placement.db import tables

import sql_rows

_RP = tables.resource_providers


def statement(dialect):
    return sa.select(_RP.c.id, _RP.c.uuid).where(
        id_list.among(_RP.c.id, dialect))


@pytest.fixture
def provider_ids(conn):
    return [sql_rows.provider(conn)['id'] for _ in range(5)]


def test_rows_of_a_long_list(conn, provider_ids):
    # Longer than a slice where ids are bound one by one; mostly absent.
    wanted = provider_ids[::2] + list(range(-id_list._SLICE - 10, 0))
    rows = id_list.rows_among(conn, statement(conn.dialect.name), wanted)
    assert sorted(row[0] for row in rows) == provider_ids[::2]


def test_no_ids(conn, provider_ids):
    assert id_list.rows_among(conn, statement(conn.dialect.name), []) == []


@pytest.mark.backends('mysql')
def test_servers_without_json_table_get_bound_values(backend, monkeypatch):
    # A fresh engine: compiled statements are cached per engine.
    engine = sa.create_engine(backend.engine.url)
    try:
        with engine.begin() as connection:
            ids = [sql_rows.provider(connection)['id'] for _ in range(3)]
            monkeypatch.setattr(id_list, '_json_table', lambda dialect: False)
            monkeypatch.setattr(id_list, '_SLICE', 2)
            query = statement(connection.dialect.name)
            assert 'JSON_TABLE' not in str(query.compile(engine))
            rows = id_list.rows_among(connection, query, ids + [-1])
            assert sorted(row[0] for row in rows) == ids
    finally:
        engine.dispose()


@pytest.mark.backends('mysql')
def test_json_table_where_the_server_has_it(conn):
    query = statement(conn.dialect.name)
    compiled = str(query.compile(conn.engine))
    assert ('JSON_TABLE' in compiled) == id_list._json_table(conn.dialect)
    # A predicate as it is: compared with 1, the server would scan for it.
    assert not compiled.rstrip().endswith('= 1')
