"""placement.db.id_list: the rows for a list of ids, however long, on
every backend, and on MySQL servers with and without JSON_TABLE.
"""
import pytest
import sqlalchemy as sa

from placement.db import backends
from placement.db import id_list
from placement.db import tables
from placement.db.backends import mysql

import sql_rows
import sql_trace

_RP = tables.resource_providers


def statement(conn):
    return sa.select(_RP.c.id, _RP.c.uuid).where(
        id_list.among(_RP.c.id, backends.of(conn)))


@pytest.fixture
def provider_ids(conn):
    return [sql_rows.provider(conn)['id'] for _ in range(5)]


def test_rows_of_a_long_list(conn, provider_ids):
    # Longer than a slice where ids are bound one by one; mostly absent.
    wanted = provider_ids[::2] + list(range(-mysql.SLICE - 10, 0))
    rows = id_list.rows_among(conn, statement(conn), wanted)
    assert sorted(row[0] for row in rows) == provider_ids[::2]


@pytest.mark.parametrize('spread', [1, mysql.SPAN_PER_ID * 4])
def test_rows_of_a_dense_or_spread_list(conn, provider_ids, spread):
    # Providers absent from the list lie between those in it.
    low = provider_ids[0]
    wanted = [provider_ids[1], provider_ids[3]] + [
        low - spread * n for n in range(1, 4)]
    with sql_trace.executed(conn) as texts:
        rows = id_list.rows_among(conn, statement(conn),
                                  wanted)
    assert sorted(row[0] for row in rows) == [provider_ids[1],
                                              provider_ids[3]]
    if conn.dialect.name == 'mysql':
        # A list spanning up to SPAN_PER_ID ids for each of its own
        # goes as a range and bitmap; one spread wider, as a list.
        assert ('SUBSTRING' in texts[-1]) == (spread == 1)


def test_no_ids(conn, provider_ids):
    assert id_list.rows_among(conn, statement(conn), []) == []


@pytest.mark.backends('mysql')
def test_servers_without_json_table_get_bound_values(backend, monkeypatch):
    # A fresh engine: compiled statements are cached per engine.
    engine = sa.create_engine(backend.engine.url)
    try:
        with engine.begin() as connection:
            ids = [sql_rows.provider(connection)['id'] for _ in range(3)]
            monkeypatch.setattr(mysql, 'json_table', lambda dialect: False)
            monkeypatch.setattr(mysql, 'SLICE', 2)
            query = statement(connection)
            assert 'JSON_TABLE' not in str(query.compile(engine))
            # Spread wide enough to go as a list, not as a range.
            rows = id_list.rows_among(connection, query, ids + [-1000])
            assert sorted(row[0] for row in rows) == ids
    finally:
        engine.dispose()


@pytest.mark.backends('mysql')
def test_json_table_where_the_server_has_it(conn):
    query = statement(conn)
    compiled = str(query.compile(conn.engine))
    assert ('JSON_TABLE' in compiled) == mysql.json_table(conn.dialect)
    # A predicate as it is: compared with 1, the server would scan for it.
    assert not compiled.rstrip().endswith('= 1')
