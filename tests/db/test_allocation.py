"""placement.db.allocation's guards against concurrent writers, on every
backend.
"""
import dataclasses
import threading
import time
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement import exception
from placement.db import allocation as alloc_db
from placement.db import consumer as consumer_db
from placement.db import engine as db_engine
from placement.db import inventory as inv_db
from placement.db import resource_provider as rp_db
from placement.db import tables

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


def _racing_second_writer(engine, provider, second):
    """Write ``second`` while another transaction holds a claim on
    ``provider`` uncommitted; return (whether the second writer waited
    for it, what the second write raised or None).
    """
    first_written, first_done = threading.Event(), threading.Event()

    def first_writer():
        with engine.begin() as conn:
            db_engine.claim_write_lock(conn)
            alloc_db.write(conn, [_claim(provider)])
            first_written.set()
            time.sleep(0.5)
            first_done.set()

    thread = threading.Thread(target=first_writer)
    thread.start()
    try:
        assert first_written.wait(timeout=30)
        try:
            with engine.begin() as conn:
                db_engine.claim_write_lock(conn)
                alloc_db.write(conn, [second])
            raised = None
        except exception.PlacementError as exc:
            raised = exc
        waited = first_done.is_set()
    finally:
        thread.join()
    return waited, raised


def test_a_second_writer_queues_for_the_providers(engine):
    """Two transactions really overlapping on one provider with room for
    both: the second waits for the first to commit, then succeeds. It
    neither fails nor has to be retried.
    """
    with engine.begin() as conn:
        rp = sql_rows.provider(conn)
        inv_db.replace_all(
            conn, rp, {'VCPU': inv_db.with_defaults({'total': 2})}, 0)
        rp = rp_db.get_by_uuid(conn, rp['uuid'])
    waited, raised = _racing_second_writer(engine, rp, _claim(rp))
    assert waited and raised is None
    assert _used(engine, rp) == 2
    assert _generation(engine, rp) == rp['generation'] + 2


def test_a_second_writer_sees_what_the_first_took(engine, provider):
    """The same with room for one: the second writer, having waited, counts
    the first one's allocation and is refused, never allocating the VCPU
    a second time.
    """
    waited, raised = _racing_second_writer(engine, provider,
                                           _claim(provider))
    assert waited
    assert isinstance(raised, exception.Invalid)
    assert 'exceed the capacity' in str(raised)
    assert _used(engine, provider) == 1


def _generation(engine, provider):
    with engine.connect() as conn:
        return rp_db.get_by_uuid(conn, provider['uuid'])['generation']


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
