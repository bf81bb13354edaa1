"""placement.db.audit on every backend: each finding, and repairs that
delete exactly what was reported.
"""
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement.db import audit
from placement.db import tables

import api_cloud
import sql_rows


@pytest.fixture
def cloud(api, backend):
    """cn-1 over capacity after a ratio change; vm-gone's allocations on
    cn-2 (its consumer is not in ``existing``); a DISK_GB allocation of
    vm-1 on cn-1, which has no DISK_GB inventory; an empty consumer.
    """
    cloud = api_cloud.Cloud(api)
    cloud.provider('cn-1', inventory={
        'VCPU': {'total': 4, 'allocation_ratio': 4.0}, 'MEMORY_MB': 4096})
    cloud.provider('cn-2', inventory={'VCPU': 8, 'MEMORY_MB': 8192})
    cloud.allocate('vm-1', {'cn-1': {'VCPU': 10, 'MEMORY_MB': 1024}})
    cloud.allocate('vm-2', {'cn-2': {'VCPU': 2, 'MEMORY_MB': 2048}})
    cloud.allocate('vm-gone', {'cn-1': {'MEMORY_MB': 512},
                               'cn-2': {'VCPU': 1}})
    cloud.inventory('cn-1', {'VCPU': 4, 'MEMORY_MB': 4096})
    cloud.uuids['vm-empty'] = str(uuidlib.uuid4())
    response = api.put('/allocations/' + cloud.uuids['vm-empty'], json={
        'allocations': {}, 'project_id': 'project', 'user_id': 'user',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert response.status_code == 204
    provider_id = _provider_id(backend, cloud, 'cn-1')
    with backend.engine.begin() as conn:
        sql_rows.allocate(conn, provider_id, {'DISK_GB': 5},
                          consumer=cloud.uuids['vm-1'])
    cloud.existing = [cloud.uuids[n] for n in ('vm-1', 'vm-2', 'vm-empty')]
    return cloud


def _read(backend, fn, *args):
    with backend.engine.connect() as conn:
        return fn(conn, *args)


def _tables(backend):
    """Every row of every table, to compare before and after."""
    with backend.engine.connect() as conn:
        return {table.name: sorted(
            (tuple(row) for row in conn.execute(sa.select(table))), key=repr)
            for table in tables.metadata.sorted_tables}


def test_findings(backend, cloud):
    [over] = _read(backend, audit.over_capacity)
    assert (over.provider_uuid, over.resource_class, over.used,
            over.capacity) == (cloud.uuids['cn-1'], 'VCPU', 10, 4)
    [stray] = _read(backend, audit.allocations_without_inventory)
    assert (stray.consumer_uuid, stray.provider_uuid, stray.resource_class,
            stray.used) == (cloud.uuids['vm-1'], cloud.uuids['cn-1'],
                            'DISK_GB', 5)
    [empty] = _read(backend, audit.empty_consumers)
    assert (empty.uuid, empty.project, empty.generation) == (
        cloud.uuids['vm-empty'], 'project', 0)
    [orphan] = _read(backend, audit.orphaned_consumers, cloud.existing)
    assert orphan.uuid == cloud.uuids['vm-gone']
    assert sorted((a.provider_uuid, a.resource_class, a.used)
                  for a in orphan.allocations) == sorted([
                      (cloud.uuids['cn-1'], 'MEMORY_MB', 512),
                      (cloud.uuids['cn-2'], 'VCPU', 1)])


def test_uuids_compare_in_any_spelling(backend, cloud):
    spelled = [uuid.upper().replace('-', '') for uuid in cloud.existing]
    assert [o.uuid for o in _read(
        backend, audit.orphaned_consumers, spelled)] == [
            cloud.uuids['vm-gone']]


def test_nothing_to_find(backend, api):
    api_cloud.Cloud(api).provider('cn', inventory={'VCPU': 1})
    assert _read(backend, audit.over_capacity) == []
    assert _read(backend, audit.allocations_without_inventory) == []
    assert _read(backend, audit.empty_consumers) == []
    assert _read(backend, audit.orphaned_consumers, ['x']) == []


def test_repairs_delete_only_what_was_reported(backend, cloud, api):
    [orphan] = _read(backend, audit.orphaned_consumers, cloud.existing)
    [empty] = _read(backend, audit.empty_consumers)
    before = _tables(backend)
    with backend.engine.begin() as conn:
        audit.delete_orphaned_consumer(conn, orphan)
        audit.delete_empty_consumer(conn, empty)
    after = _tables(backend)
    gone = {cloud.uuids['vm-gone'], cloud.uuids['vm-empty']}
    assert after['allocations'] == [
        row for row in before['allocations'] if row[4] not in gone]
    assert after['consumers'] == [
        row for row in before['consumers'] if row[3] not in gone]
    for name in ('inventories', 'projects', 'users', 'traits',
                 'resource_provider_aggregates', 'resource_classes'):
        assert after[name] == before[name]
    # Both providers the orphan held allocations on moved on, so that a
    # writer that read them before sees the change.
    for name in ('cn-1', 'cn-2'):
        provider = api.get('/resource_providers/' + cloud.uuids[name]).json
        assert provider['generation'] == cloud.generations[name] + 1
    assert api.get('/allocations/' + cloud.uuids['vm-2']).json[
        'allocations'] == {cloud.uuids['cn-2']: {
            'generation': cloud.generations['cn-2'] + 1,
            'resources': {'VCPU': 2, 'MEMORY_MB': 2048}}}


def test_changed_consumers_are_left_alone(backend, cloud, api):
    [orphan] = _read(backend, audit.orphaned_consumers, cloud.existing)
    [empty] = _read(backend, audit.empty_consumers)
    # Meanwhile both get new allocations.
    consumer = api.get('/allocations/' + orphan.uuid).json
    response = api.put('/allocations/' + orphan.uuid, json={
        'allocations': {cloud.uuids['cn-2']: {'resources': {'VCPU': 1}}},
        'project_id': 'project', 'user_id': 'user',
        'consumer_generation': consumer['consumer_generation'],
        'consumer_type': 'INSTANCE'})
    assert response.status_code == 204
    cloud.generations['cn-2'] += 1
    provider_id = _provider_id(backend, cloud, 'cn-2')
    with backend.engine.begin() as conn:
        sql_rows.allocate(conn, provider_id, {'VCPU': 1},
                          consumer=empty.uuid)
    before = _tables(backend)
    for delete, consumer in ((audit.delete_orphaned_consumer, orphan),
                             (audit.delete_empty_consumer, empty)):
        with pytest.raises(audit.Changed):
            with backend.engine.begin() as conn:
                delete(conn, consumer)
    assert _tables(backend) == before


def test_orphan_without_consumer_record(backend, cloud):
    """Allocations written before consumers had records."""
    with backend.engine.begin() as conn:
        conn.execute(tables.consumers.delete().where(
            tables.consumers.c.uuid == cloud.uuids['vm-gone']))
    [orphan] = _read(backend, audit.orphaned_consumers, cloud.existing)
    assert (orphan.id, orphan.generation) == (None, None)
    with backend.engine.begin() as conn:
        audit.delete_orphaned_consumer(conn, orphan)
    assert _read(backend, audit.orphaned_consumers, cloud.existing) == []


def _provider_id(backend, cloud, name):
    rp = tables.resource_providers
    return _read(backend, lambda conn: conn.execute(
        sa.select(rp.c.id).where(rp.c.uuid == cloud.uuids[name])).scalar())
