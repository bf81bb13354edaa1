"""placement.db.allocation's guards against concurrent writers, on every
backend.
"""
import dataclasses
import threading
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement.db import allocation as alloc_db
from placement.db import consumer as consumer_db
from placement.db import engine as db_engine
from placement.db import inventory as inv_db
from placement.db import resource_provider as rp_db
from placement.db import tables
from placement import exception

import sql_rows


@pytest.fixture
def engine(backend):
    return backend.engine


@pytest.fixture
def provider(engine):
    """One VCPU to fight over."""
    with engine.begin() as conn:
        rp = sql_rows.provider(conn)
        inv_db.replace_all(
            conn, rp, {'VCPU': inv_db.with_defaults({'total': 1})}, 0)
        return rp_db.get_by_uuid(conn, rp['uuid'])


def _claim(provider, generation=None):
    return alloc_db.ConsumerRequest(
        uuid=str(uuidlib.uuid4()), resources={provider['uuid']: {'VCPU': 1}},
        project='p', user='u', generation=generation)


def _used(engine, provider):
    with engine.connect() as conn:
        return conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(tables.allocations.c.used),
                                       0))
            .where(tables.allocations.c.resource_provider_id
                   == provider['id'])).scalar()


def test_a_plan_on_a_stale_provider_is_not_applied(engine, provider):
    with pytest.raises(exception.ConcurrentUpdate):
        with engine.begin() as conn:
            plan = alloc_db.plan(conn, [_claim(provider)])
            # Another writer's change, as if committed since the plan.
            rp_db.increment_generation(conn, provider['id'], 1)
            alloc_db.apply(conn, plan)
    assert _used(engine, provider) == 0


def test_a_consumer_created_meanwhile_is_not_overwritten(engine, provider):
    claim = _claim(provider)
    with pytest.raises(consumer_db.ConcurrentUpdate):
        with engine.begin() as conn:
            plan = alloc_db.plan(conn, [claim])
            consumer_db.create(conn, claim.uuid, consumer_db.ensure_project(
                conn, 'p'), consumer_db.ensure_user(conn, 'u'), None, 0)
            alloc_db.apply(conn, plan)


def test_a_consumer_changed_meanwhile_is_not_overwritten(engine, provider):
    claim = _claim(provider)
    with engine.begin() as conn:
        alloc_db.write(conn, [claim])
    release = dataclasses.replace(claim, resources={}, generation=1)
    with pytest.raises(consumer_db.ConcurrentUpdate):
        with engine.begin() as conn:
            plan = alloc_db.plan(conn, [release])
            consumer_db.increment_generation(
                conn, plan.consumers[claim.uuid])
            alloc_db.apply(conn, plan)
    assert _used(engine, provider) == 1


def test_second_writer_cannot_commit_on_a_stale_read(engine, provider):
    """Two transactions really overlapping: the second reads usage before
    the first commits. It must fail (and, retried, be refused), never
    allocate the VCPU a second time.
    """
    first, second = _claim(provider), _claim(provider)
    first_written, second_planned = threading.Event(), threading.Event()

    def first_writer():
        with engine.begin() as conn:
            alloc_db.write(conn, [first])
            first_written.set()
            # On SQLite the second writer waits for our lock instead.
            second_planned.wait(timeout=2)

    thread = threading.Thread(target=first_writer)
    thread.start()
    try:
        assert first_written.wait(timeout=30)
        with pytest.raises((exception.ConcurrentUpdate,
                            exception.Invalid)) as lost:
            with engine.begin() as conn:
                db_engine.claim_write_lock(conn)
                plan = alloc_db.plan(conn, [second])
                second_planned.set()
                alloc_db.apply(conn, plan)
    finally:
        thread.join()
    if engine.dialect.name != 'sqlite':
        # It read before the first committed, then found the provider
        # changed (its UPDATE waited for the first one's row lock).
        assert isinstance(lost.value, exception.ConcurrentUpdate)
    with pytest.raises(exception.Invalid, match='exceed the capacity'):
        with engine.begin() as conn:
            alloc_db.write(conn, [second])
    assert _used(engine, provider) == 1


def test_projects_and_users_are_shared(engine):
    with engine.begin() as conn:
        rp = sql_rows.provider(conn)
        inv_db.replace_all(
            conn, rp, {'VCPU': inv_db.with_defaults({'total': 5})}, 0)
        rp = rp_db.get_by_uuid(conn, rp['uuid'])
        alloc_db.write(conn, [_claim(rp), _claim(rp)])
        for table in (tables.projects, tables.users):
            assert conn.execute(sa.select(sa.func.count())
                                .select_from(table)).scalar() == 1
        assert consumer_db.ensure_project(conn, 'p') == (
            consumer_db.ensure_project(conn, 'p'))
