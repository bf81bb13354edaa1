"""placement.db.bulk_load against every backend: rows written in bulk
read back through the data layer as the API would have stored them,
and the ids the database generates afterwards follow the ones written.
"""
import datetime
import uuid

import pytest

from placement.db import aggregate as aggregate_db
from placement.db import allocation as allocation_db
from placement.db import bulk_load
from placement.db import consumer as consumer_db
from placement.db import inventory as inv_db
from placement.db import resource_class as rc_db
from placement.db import resource_provider as rp_db
from placement.db import resource_provider_trait as rpt_db
from placement.db import trait as trait_db
from placement.db import usage as usage_db

NOW = datetime.datetime(2024, 1, 2, 3, 4, 5)
# Ids handed out but left unused, so that the last provider id is above
# any the database's own sequence reached in earlier tests.
SKIPPED_IDS = 100000


def _uuid():
    return str(uuid.uuid4())


@pytest.fixture
def loaded(backend):
    """A root and its child with inventories, a trait and an aggregate,
    and two consumers allocating from them; written two rows a batch."""
    root, child, agg = _uuid(), _uuid(), _uuid()
    first, second = _uuid(), _uuid()
    with backend.engine.connect() as conn:
        classes = rc_db.ids_by_name(conn, ['VCPU', 'MEMORY_MB'])
        traits = trait_db.ids_by_name(conn, ['HW_CPU_X86_AVX2'])
        project = consumer_db.ensure_project(conn, 'proj')
        user = consumer_db.ensure_user(conn, 'user')
        kind = consumer_db.ensure_type(conn, 'INSTANCE')
        conn.commit()
        writer = bulk_load.Writer(conn, batch_rows=2)
        for _ in range(SKIPPED_IDS):
            writer.new_id('resource_providers')
        root_id = writer.new_id('resource_providers')
        child_id = writer.new_id('resource_providers')
        agg_id = writer.new_id('placement_aggregates')
        add = writer.add
        add('placement_aggregates', (agg_id, agg, NOW))
        add('resource_providers', (root_id, root, 'root', 3, root_id, None,
                                   NOW, NOW))
        add('resource_providers', (child_id, child, 'child', 1, root_id,
                                   root_id, NOW, NOW))
        add('inventories', (writer.new_id('inventories'), root_id,
                            classes['VCPU'], 16, 0, 1, 16, 1, 4.0, NOW))
        add('inventories', (writer.new_id('inventories'), child_id,
                            classes['MEMORY_MB'], 4096, 512, 1, 4096, 1,
                            1.0, NOW))
        add('resource_provider_traits',
            (traits['HW_CPU_X86_AVX2'], root_id, NOW))
        add('resource_provider_aggregates', (root_id, agg_id, NOW))
        writer.flush_if_full()
        for consumer, vcpu, memory in ((first, 2, 1024), (second, 4, 256)):
            add('consumers', (writer.new_id('consumers'), consumer, project,
                              user, 1, kind, NOW))
            add('allocations', (writer.new_id('allocations'), root_id,
                                consumer, classes['VCPU'], vcpu, NOW))
            add('allocations', (writer.new_id('allocations'), child_id,
                                consumer, classes['MEMORY_MB'], memory, NOW))
            writer.flush_if_full()
        writer.flush()
        bulk_load.add_to_generations(conn, {child_id: 1}, NOW)
        writer.finish()
    assert writer.written == {
        'placement_aggregates': 1, 'resource_providers': 2,
        'inventories': 2, 'resource_provider_traits': 1,
        'resource_provider_aggregates': 1, 'consumers': 2, 'allocations': 4}
    return {'root': root, 'child': child, 'aggregate': agg,
            'consumers': (first, second), 'last_ids': writer.last_ids}


def test_written_rows_read_back(backend, loaded):
    with backend.engine.connect() as conn:
        root = rp_db.get_by_uuid(conn, loaded['root'])
        child = rp_db.get_by_uuid(conn, loaded['child'])
        assert (root['name'], root['generation'],
                root['parent_provider_uuid'], root['root_provider_uuid']) == (
            'root', 3, None, loaded['root'])
        assert (child['name'], child['generation'],
                child['parent_provider_uuid'],
                child['root_provider_uuid']) == (
            'child', 2, loaded['root'], loaded['root'])
        inventories = inv_db.get_all(conn, root['id'])
        assert list(inventories) == ['VCPU']
        assert {k: inventories['VCPU'][k] for k in (
            'total', 'reserved', 'min_unit', 'max_unit', 'step_size',
            'allocation_ratio')} == {
            'total': 16, 'reserved': 0, 'min_unit': 1, 'max_unit': 16,
            'step_size': 1, 'allocation_ratio': 4.0}
        assert inv_db.get_all(conn, child['id'])['MEMORY_MB']['reserved'] == (
            512)
        assert [t['name'] for t in rpt_db.of_provider(conn, root['id'])] == [
            'HW_CPU_X86_AVX2']
        assert [a['uuid'] for a in aggregate_db.of_provider(
            conn, root['id'])] == [loaded['aggregate']]
        assert usage_db.by_provider(conn, root['id']) == {'VCPU': 6}
        assert usage_db.by_provider(conn, child['id']) == {'MEMORY_MB': 1280}
        assert usage_db.by_project(conn, 'proj') == {
            'VCPU': 6, 'MEMORY_MB': 1280}
        allocations, consumer = allocation_db.for_consumer(
            conn, loaded['consumers'][0])
        assert [(a['provider_uuid'], a['resource_class'], a['used'])
                for a in allocations] == [
            (loaded['root'], 'VCPU', 2), (loaded['child'], 'MEMORY_MB', 1024)]
        assert consumer == {'project_id': 'proj', 'user_id': 'user',
                            'consumer_generation': 1,
                            'consumer_type': 'INSTANCE'}


def test_generated_ids_follow_the_written_ones(backend, loaded):
    with backend.engine.begin() as conn:
        created = rp_db.create(conn, _uuid(), 'after the load')
    assert created['id'] == loaded['last_ids']['resource_providers'] + 1
    assert created['id'] == SKIPPED_IDS + 3


def test_analyze_and_size(backend, loaded):
    with backend.engine.connect().execution_options(
            isolation_level='AUTOCOMMIT') as conn:
        bulk_load.analyze(conn)
        if backend.engine.url.database not in (None, '', ':memory:'):
            assert bulk_load.database_bytes(conn) > 0
