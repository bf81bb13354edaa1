"""Transient errors raised by real database servers are recognised
wherever they surface, and the unit of work is run again.
"""
import threading

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine
from placement.db import tables

import sql_rows

_RP = tables.resource_providers


def _rename(conn, provider, name):
    conn.execute(_RP.update().where(_RP.c.id == provider['id'])
                 .values(name=name))


@pytest.mark.backends('mysql', 'postgresql')
def test_a_deadlock_inside_a_savepoint_is_retried(backend):
    """A transaction that deadlocks inside a savepoint is re-run.

    MariaDB rolls the whole transaction back on a deadlock, so the
    ROLLBACK TO SAVEPOINT that follows fails with "SAVEPOINT does not
    exist" (1305): that error must count as transient too. The other
    transaction changes more rows, so that the server picks ours as the
    victim. (SQLite has no row locks to deadlock on.)
    """
    engine = backend.engine
    with engine.begin() as conn:
        ours, theirs = sql_rows.provider(conn), sql_rows.provider(conn)
        ballast = [sql_rows.provider(conn) for _ in range(20)]
    we_hold_ours, they_hold_theirs = threading.Event(), threading.Event()
    failures = []

    def other_writer():
        with engine.begin() as conn:
            for provider in ballast + [theirs]:
                _rename(conn, provider, 'other-' + provider['uuid'])
            they_hold_theirs.set()
            assert we_hold_ours.wait(timeout=30)
            try:
                _rename(conn, ours, 'other-' + ours['uuid'])
            except sa.exc.DBAPIError as exc:
                # Picked as the victim after all (PostgreSQL picks the
                # one whose wait closed the cycle): fine, ours goes on.
                assert db_engine.is_transient(exc)
                conn.rollback()

    def unit_of_work():
        with engine.begin() as conn:
            _rename(conn, ours, 'ours-' + ours['uuid'])
            if not failures:
                we_hold_ours.set()
                assert they_hold_theirs.wait(timeout=30)
            try:
                with conn.begin_nested():
                    _rename(conn, theirs, 'ours-' + theirs['uuid'])
            except sa.exc.DBAPIError as exc:
                failures.append(exc)
                raise

    thread = threading.Thread(target=other_writer)
    thread.start()
    try:
        db_engine.retry_on_transient(unit_of_work)
    finally:
        thread.join()
    with engine.connect() as conn:
        names = dict(conn.execute(
            sa.select(_RP.c.id, _RP.c.name)
            .where(_RP.c.id.in_([ours['id'], theirs['id']]))).all())
    assert names[ours['id']] == 'ours-' + ours['uuid']
    assert names[theirs['id']] == 'ours-' + theirs['uuid']
    if backend.name == 'mysql':
        assert failures, 'the server chose the other transaction as victim'
        assert all(db_engine.is_conflict(exc) for exc in failures)
        # What is raised is the failed savepoint rollback, not the deadlock.
        assert failures[0].orig.args[0] == 1305
