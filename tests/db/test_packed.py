"""placement.db.packed: the same rows as an ordinary read, on every
backend, in one pack or many, and whatever cuts a pack short.
"""
import contextlib

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine
from placement.db import packed
from placement.db import tables
from placement.db.backends import mysql

from conftest import make_conf
import sql_rows

_RP = tables.resource_providers
_INV = tables.inventories

# Ratios whose printed forms are not their doubles' shortest forms.
RATIOS = (1.0, 1.1, 0.3, 16.0, 3.3333333, 1.5e-05, 123456.7)

STATEMENT = (
    sa.select(_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
              _INV.c.total, _INV.c.allocation_ratio)
    .select_from(_RP.join(_INV, _INV.c.resource_provider_id == _RP.c.id)))
KINDS = (packed.INT, packed.TEXT, packed.OPTIONAL_INT, packed.INT,
         packed.FLOAT)


@pytest.fixture
def conn(conn):
    """The backend's connection, with a tree of inventories to read."""
    root = sql_rows.provider(conn)
    for ratio in RATIOS:
        child = sql_rows.provider(conn, parent_id=root['id'])
        sql_rows.inventory(conn, child['id'], {
            'VCPU': {'total': 8, 'allocation_ratio': ratio},
            'DISK_GB': {'total': 2 ** 31 - 1}})
    return conn


def plain(conn):
    return sorted(tuple(row) for row in conn.execute(STATEMENT))


def test_rows_are_those_of_a_plain_read(conn):
    rows = packed.rows(conn, STATEMENT, KINDS)
    assert sorted(tuple(row) for row in rows) == plain(conn)
    assert len(rows) == 2 * len(RATIOS)
    assert {row[2] for row in rows} != {None}


@contextlib.contextmanager
def session_pack_limit(conn, limit):
    """The session's group_concat_max_len set to ``limit`` for a while:
    the connection goes back to the pool for other tests."""
    before = conn.exec_driver_sql(
        'SELECT @@SESSION.group_concat_max_len').scalar()
    conn.exec_driver_sql('SET SESSION group_concat_max_len = %d' % limit)
    try:
        yield
    finally:
        conn.exec_driver_sql(
            'SET SESSION group_concat_max_len = %d' % before)


@pytest.fixture
def small_packs(conn, monkeypatch):
    """Packs of 3 rows, and on a packing session a limit that cuts one
    pack of every row of the fixture short but not a pack of 3."""
    monkeypatch.setattr(packed, 'ROWS_PER_PACK', 3)
    packed._packed.cache_clear()
    packing = packed.packing(conn.dialect)
    limit = (session_pack_limit(conn, 400) if packing
             else contextlib.nullcontext())
    try:
        with limit:
            yield packing
    finally:
        packed._packed.cache_clear()


def test_rows_over_several_packs(conn, small_packs, caplog):
    statement = STATEMENT.where(_RP.c.id > 0)
    rows = packed.rows(conn, statement, KINDS)
    assert sorted(rows) == plain(conn)
    assert (statement in packed._TOO_LARGE) == small_packs
    # Read in packs from then on, and never unpacked.
    assert sorted(packed.rows(conn, statement, KINDS)) == plain(conn)
    assert 'cut short' not in caplog.text


@pytest.mark.backends('mysql')
def test_sessions_pack_as_much_as_a_row_holds(conn):
    limit = conn.exec_driver_sql('SELECT @@group_concat_max_len').scalar()
    packing = packed.packing(conn.dialect)
    assert (limit == mysql.GROUP_CONCAT_MAX_LEN) == packing


# Numbers alone: read as one JSON array through PyMySQL.
PARENTS = sa.select(_RP.c.id, _RP.c.parent_provider_id)
RATIOS_READ = (
    sa.select(_INV.c.resource_provider_id, _INV.c.total,
              _INV.c.allocation_ratio))


def test_rows_of_numbers_alone(conn):
    parents = packed.rows(conn, PARENTS, (packed.INT, packed.OPTIONAL_INT))
    assert sorted(parents, key=str) == sorted(
        (tuple(row) for row in conn.execute(PARENTS)), key=str)
    assert None in {parent for _id, parent in parents}
    ratios = packed.rows(conn, RATIOS_READ,
                         (packed.INT, packed.INT, packed.FLOAT))
    assert sorted(ratios) == sorted(
        tuple(row) for row in conn.execute(RATIOS_READ))
    # Whole ratios (1.0, 16.0) too come back as floats.
    assert all(isinstance(ratio, float) for _rp, _total, ratio in ratios)


@pytest.mark.backends('mysql')
def test_a_session_that_keeps_its_limit_still_packs(backend, monkeypatch,
                                                      caplog):
    # A value the server refuses, as one behind a proxy might refuse the
    # statement: the session starts all the same.
    monkeypatch.setattr(mysql, 'GROUP_CONCAT_MAX_LEN', -1)
    engine = db_engine.create_engine(make_conf(backend.url))
    try:
        with engine.connect() as connection:
            limit, server_limit = connection.exec_driver_sql(
                'SELECT @@SESSION.group_concat_max_len, '
                '@@GLOBAL.group_concat_max_len').one()
            plain = sorted(tuple(row) for row in connection.execute(PARENTS))
            rows = packed.rows(connection, PARENTS,
                               (packed.INT, packed.OPTIONAL_INT))
    finally:
        engine.dispose()
    assert sorted(rows, key=str) == sorted(plain, key=str)
    assert limit == server_limit
    packing = packed.packing(engine.dialect)
    assert ('Could not raise group_concat_max_len' in caplog.text) == packing


def test_no_rows(conn):
    assert list(packed.rows(conn, STATEMENT.where(_RP.c.id < 0), KINDS)) \
        == []


@pytest.mark.backends('mysql')
def test_a_pack_cut_short_is_read_again_unpacked(conn, caplog):
    with session_pack_limit(conn, 20):
        rows = packed.rows(conn, STATEMENT, KINDS)
    assert sorted(tuple(row) for row in rows) == plain(conn)
    # mysqlclient decodes in C: its rows are never packed.
    packing = packed.packing(conn.dialect)
    assert ('cut short' in caplog.text) == packing


def test_ordered_rows_keep_the_order_by(conn, small_packs):
    ordered = STATEMENT.order_by(_RP.c.id, _INV.c.total)
    rows = packed.rows(conn, ordered, KINDS, ordered=True)
    assert [tuple(row) for row in rows] == [
        tuple(row) for row in conn.execute(ordered)]
