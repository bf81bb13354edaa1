"""placement.db.session: reads on the replica with the primary as
fallback, writes in one transaction retried on transient errors, and the
standard classes and traits synced before first use. The primary is the
backend's real database; the replica a fake in front of a real engine.
"""
import logging
import sqlite3

import pytest
import sqlalchemy as sa

from placement import exception
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import session
from placement.db import tables
from placement.db import watchdog

from conftest import make_conf


class FakeReplica:
    """A placement.db.replica.Replica whose usability the test sets,
    recording what the session tells it."""

    def __init__(self, engine, usable=True):
        self.engine = engine
        self._usable = usable
        self.failures = []
        self.expired = 0

    def usable(self):
        return self._usable

    def failed(self, exc):
        self.failures.append(exc)

    def expire(self):
        self.expired += 1


@pytest.fixture
def replica_engine(tmp_path):
    """An empty SQLite database: a read answered there finds no table."""
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'replica.db'))
    yield engine
    engine.dispose()


@pytest.fixture
def unreachable_engine(tmp_path):
    engine = sa.create_engine(
        'sqlite:///%s' % (tmp_path / 'missing' / 'replica.db'))
    yield engine
    engine.dispose()


def _database(engine, replica=None, **kwargs):
    reads = []
    database = session.Database(engine, replica, on_read=reads.append,
                                **kwargs)
    return database, reads


def _tables(connection):
    return set(sa.inspect(connection).get_table_names())


def test_a_read_the_replica_may_serve_goes_to_the_replica(
        backend, replica_engine):
    replica = FakeReplica(replica_engine)
    database, reads = _database(backend.engine, replica)
    assert database.read(_tables, replica_ok=True) == set()
    assert reads == [session.REPLICA]
    assert 'resource_providers' in database.read(_tables)
    assert reads == [session.REPLICA, session.PRIMARY]


def test_an_unusable_replica_is_not_read(backend, replica_engine):
    database, reads = _database(
        backend.engine, FakeReplica(replica_engine, usable=False))
    assert 'resource_providers' in database.read(_tables, replica_ok=True)
    assert reads == [session.PRIMARY]


def test_a_read_the_replica_fails_is_answered_by_the_primary(
        backend, unreachable_engine):
    replica = FakeReplica(unreachable_engine)
    database, reads = _database(backend.engine, replica)
    assert 'resource_providers' in database.read(_tables, replica_ok=True)
    [failure] = replica.failures
    assert isinstance(failure, sa.exc.OperationalError)
    assert reads == [session.PRIMARY]


def test_a_domain_error_is_an_answer(backend, replica_engine):
    def missing(_connection, uuid):
        raise exception.NotFound(uuid)
    replica = FakeReplica(replica_engine)
    database, reads = _database(backend.engine, replica)
    with pytest.raises(exception.NotFound):
        database.read(missing, 'some-uuid', replica_ok=True)
    assert replica.failures == []
    assert reads == [session.REPLICA]


class Flaky:
    """A write of one trait that raises ``errors`` one by one, after its
    insert, before it succeeds; counting its runs."""

    def __init__(self, *errors):
        self.errors = list(errors)
        self.runs = 0

    def __call__(self, connection, name):
        self.runs += 1
        connection.execute(sa.insert(tables.traits).values(name=name))
        if self.errors:
            raise self.errors.pop(0)
        return name


def _busy():
    return sa.exc.OperationalError(
        'INSERT', {}, sqlite3.OperationalError('database is locked'))


def _traits(backend, name):
    with backend.engine.connect() as connection:
        return connection.execute(
            sa.select(sa.func.count()).select_from(tables.traits)
            .where(tables.traits.c.name == name)).scalar()


def test_a_transient_error_is_retried_from_the_start(backend):
    write = Flaky(_busy())
    retried = []
    database, _ = _database(backend.engine)
    assert database.write(write, 'CUSTOM_RETRIED',
                          on_retry=retried.append) == 'CUSTOM_RETRIED'
    assert write.runs == 2
    assert [type(exc) for exc in retried] == [sa.exc.OperationalError]
    assert _traits(backend, 'CUSTOM_RETRIED') == 1


def test_other_errors_are_raised_at_once(backend):
    write = Flaky(ValueError('no'))
    database, _ = _database(backend.engine)
    with pytest.raises(ValueError):
        database.write(write, 'CUSTOM_FAILED')
    assert write.runs == 1
    assert _traits(backend, 'CUSTOM_FAILED') == 0


def test_retry_also_is_retried_up_to_the_attempts(backend):
    database, _ = _database(backend.engine)
    write = Flaky(exception.ConcurrentUpdate('changed'))
    database.write(write, 'CUSTOM_CHANGED',
                   retry_also=exception.ConcurrentUpdate)
    assert write.runs == 2
    write = Flaky(*[exception.ConcurrentUpdate('changed')] * 2)
    with pytest.raises(exception.ConcurrentUpdate):
        database.write(write, 'CUSTOM_GAVE_UP', attempts=2,
                       retry_also=exception.ConcurrentUpdate)
    assert write.runs == 2
    assert _traits(backend, 'CUSTOM_GAVE_UP') == 0


@pytest.mark.backends('sqlite')
def test_a_sqlite_write_holds_the_write_lock_from_its_start(backend):
    path = sa.engine.make_url(backend.url).database

    def other_writer_waits(connection):
        # Nothing written yet: the lock was claimed all the same.
        probe = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match='locked'):
                probe.execute('BEGIN IMMEDIATE')
        finally:
            probe.close()
    session.Database(backend.engine).write(other_writer_waits)


@pytest.fixture
def new_engine(tmp_path):
    """A SQLite database just migrated: no standard class nor trait yet."""
    engine = db_engine.create_engine(
        make_conf('sqlite:///%s' % (tmp_path / 'new.db')))
    migration.upgrade(engine)
    yield engine
    engine.dispose()


def test_standard_classes_are_synced_once_before_first_use(new_engine):
    replica = FakeReplica(new_engine, usable=False)
    database, _ = _database(new_engine, replica, sync_standard=True)
    assert _count(new_engine, tables.traits) == 0
    database.read(_tables)
    assert _count(new_engine, tables.traits) > 0
    # The replica has yet to replicate them.
    assert replica.expired == 1
    database.write(_tables)
    assert replica.expired == 1
    # Another process finds them there, and so will the replica.
    again, _ = _database(new_engine, replica, sync_standard=True)
    again.write(_tables)
    assert replica.expired == 1


def test_no_sync_unless_asked(new_engine):
    session.Database(new_engine).read(_tables)
    assert _count(new_engine, tables.traits) == 0


def _count(engine, table):
    with engine.connect() as connection:
        return connection.execute(
            sa.select(sa.func.count()).select_from(table)).scalar()


# A pooled connection's server session, and how another session ends it.
_SESSION_ID = {'mysql': 'SELECT CONNECTION_ID()',
               'postgresql': 'SELECT pg_backend_pid()'}
_END_SESSION = {'mysql': 'KILL %d',
                'postgresql': 'SELECT pg_terminate_backend(%d)'}


@pytest.mark.backends('mysql', 'postgresql')
@pytest.mark.parametrize('idle', [False, True], ids=['recent', 'idle'])
def test_a_pooled_connection_whose_session_ended_is_replaced(
        backend, monkeypatch, caplog, idle):
    """The server ended the session of the one pooled connection (a
    restart, an idle timeout): a connection idle for PING_IF_IDLE_FOR
    fails its ping and is replaced; one used just now is not pinged, its
    first statement fails and the unit of work runs again on a new
    connection. Either way reads and writes succeed."""
    caplog.set_level(logging.INFO, watchdog.__name__)
    if idle:
        monkeypatch.setattr(watchdog, 'PING_IF_IDLE_FOR', 0)
    engine = db_engine.create_engine(make_conf(backend.url))
    try:
        database, _ = _database(engine)
        session_of = _SESSION_ID[backend.name]

        def end_pooled_session():
            first = database.read(
                lambda connection: connection.exec_driver_sql(
                    session_of).scalar())
            with backend.engine.connect() as connection:
                connection.exec_driver_sql(
                    _END_SESSION[backend.name] % first)
            return first

        first = end_pooled_session()
        assert database.read(
            lambda connection: connection.exec_driver_sql(
                session_of).scalar()) != first
        end_pooled_session()
        assert database.write(Flaky(), 'CUSTOM_AFTER_KILL') == (
            'CUSTOM_AFTER_KILL')
        assert _traits(backend, 'CUSTOM_AFTER_KILL') == 1
    finally:
        engine.dispose()
    assert ('failed its ping' in caplog.text) is idle
