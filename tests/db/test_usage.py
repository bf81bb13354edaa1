"""placement.db.usage against every backend."""
import pytest

from placement.db import inventory as inv_db
from placement.db import usage as usage_db

import sql_rows


@pytest.fixture
def providers(conn):
    """Two providers with inventory and allocations of three consumers of
    project ``p``: an INSTANCE of user ``u1``, an untyped one of ``u2``
    and a MIGRATION of ``u1``; plus one of another project.
    """
    first, second = sql_rows.provider(conn), sql_rows.provider(conn)
    inv_db.replace_all(conn, first, {
        name: inv_db.with_defaults({'total': 1000})
        for name in ('VCPU', 'MEMORY_MB', 'DISK_GB')}, 0)
    inv_db.replace_all(conn, second, {
        'VCPU': inv_db.with_defaults({'total': 1000})}, 0)
    sql_rows.allocate(conn, first['id'], {'VCPU': 2, 'MEMORY_MB': 512},
                      project='p', user='u1', consumer_type='INSTANCE')
    sql_rows.allocate(conn, first['id'], {'VCPU': 1, 'DISK_GB': 10},
                      project='p', user='u2')
    consumer = sql_rows.allocate(conn, first['id'], {'VCPU': 4},
                                 project='p', user='u1',
                                 consumer_type='MIGRATION')
    # The same consumer on a second provider counts once.
    sql_rows.allocate(conn, second['id'], {'VCPU': 3}, consumer=consumer)
    sql_rows.allocate(conn, second['id'], {'VCPU': 100}, project='other')
    return first, second


def test_by_provider_lists_every_inventory_class(conn, providers):
    first, second = providers
    assert usage_db.by_provider(conn, first['id']) == {
        'VCPU': 7, 'MEMORY_MB': 512, 'DISK_GB': 10}
    assert usage_db.by_provider(conn, second['id']) == {'VCPU': 103}


def test_by_provider_zero_without_allocations(conn):
    provider = sql_rows.provider(conn)
    assert usage_db.by_provider(conn, provider['id']) == {}
    inv_db.add(conn, provider, 'VCPU', inv_db.with_defaults({'total': 1}))
    assert usage_db.by_provider(conn, provider['id']) == {'VCPU': 0}


def test_by_project(conn, providers):
    assert usage_db.by_project(conn, 'p') == {
        'VCPU': 10, 'MEMORY_MB': 512, 'DISK_GB': 10}
    assert usage_db.by_project(conn, 'p', 'u2') == {'VCPU': 1, 'DISK_GB': 10}
    assert usage_db.by_project(conn, 'p', 'nobody') == {}
    assert usage_db.by_project(conn, 'nobody') == {}


def test_by_consumer_type(conn, providers):
    assert usage_db.by_consumer_type(conn, 'p') == {
        'INSTANCE': {'VCPU': 2, 'MEMORY_MB': 512, 'consumer_count': 1},
        'MIGRATION': {'VCPU': 7, 'consumer_count': 1},
        'unknown': {'VCPU': 1, 'DISK_GB': 10, 'consumer_count': 1},
    }
    assert usage_db.by_consumer_type(conn, 'p', 'u1', 'MIGRATION') == {
        'MIGRATION': {'VCPU': 7, 'consumer_count': 1}}
    assert usage_db.by_consumer_type(conn, 'p', 'u2', 'MIGRATION') == {}
    assert usage_db.by_consumer_type(conn, 'p', consumer_type='NONE') == {}


def test_by_consumer_type_all_and_unknown(conn, providers):
    assert usage_db.by_consumer_type(conn, 'p', consumer_type='all') == {
        'all': {'VCPU': 10, 'MEMORY_MB': 512, 'DISK_GB': 10,
                'consumer_count': 3}}
    assert usage_db.by_consumer_type(conn, 'p', 'u1', 'all') == {
        'all': {'VCPU': 9, 'MEMORY_MB': 512, 'consumer_count': 2}}
    assert usage_db.by_consumer_type(conn, 'p', consumer_type='unknown') == {
        'unknown': {'VCPU': 1, 'DISK_GB': 10, 'consumer_count': 1}}
    assert usage_db.by_consumer_type(conn, 'other', None, 'unknown') == {
        'unknown': {'VCPU': 100, 'consumer_count': 1}}
