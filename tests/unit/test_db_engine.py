"""URL normalisation, engine options and database error classification."""

import logging
import sqlite3
import types

import psycopg2
import pymysql
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement import exception
from placement.db import engine as db_engine
from placement.db import session
from placement.db.backends import mysql


def _conf(**options):
    return types.SimpleNamespace(
        placement_database=types.SimpleNamespace(**options))


@pytest.mark.parametrize('given, expected', [
    ('mysql://u:p@db/placement',
     'mysql+pymysql://u:p@db/placement?charset=utf8mb4'),
    ('mysql+pymysql://u:p@db/placement',
     'mysql+pymysql://u:p@db/placement?charset=utf8mb4'),
    ('mariadb://u@db/placement',
     'mariadb+pymysql://u@db/placement?charset=utf8mb4'),
    ('mysql+pymysql://u@db/placement?charset=utf8mb4',
     'mysql+pymysql://u@db/placement?charset=utf8mb4'),
    ('postgresql://u:p@db:5433/placement',
     'postgresql+psycopg2://u:p@db:5433/placement'),
    ('postgresql+psycopg2://u@db/placement',
     'postgresql+psycopg2://u@db/placement'),
    ('sqlite:////var/lib/placement/placement.sqlite',
     'sqlite:////var/lib/placement/placement.sqlite'),
    ('sqlite://', 'sqlite://'),
])
def test_normalize_url(given, expected):
    url = db_engine.normalize_url(given)
    assert url.render_as_string(hide_password=False) == expected


@pytest.mark.parametrize('charset', ['utf8', 'UTF8', 'utf8mb3'])
def test_three_byte_charset_upgraded_with_warning(charset, caplog):
    with caplog.at_level(logging.WARNING, logger=mysql.__name__):
        url = db_engine.normalize_url(
            f'mysql+pymysql://u@db/placement?charset={charset}')
    assert url.query['charset'] == 'utf8mb4'
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert charset in caplog.records[0].getMessage()


def test_utf8mb4_is_silent(caplog):
    with caplog.at_level(logging.WARNING, logger=mysql.__name__):
        db_engine.normalize_url('mysql://u@db/placement?charset=utf8mb4')
    assert caplog.records == []


@pytest.mark.parametrize('url', [
    None, '', '   ', 'not a url', 'nosuchdb://u@h/d',
    'postgresql+nosuchdriver://u@h/d', 'mysql://u@h:notaport/d',
])
def test_bad_url_is_config_error(url):
    with pytest.raises(db_engine.DatabaseConfigError) as info:
        db_engine.normalize_url(url)
    assert '[placement_database] connection' in str(info.value)
    assert '\n' not in str(info.value)


def test_create_engine_without_connection():
    with pytest.raises(db_engine.DatabaseConfigError):
        db_engine.create_engine(_conf())


def test_connection_parameters_are_normalised_too(caplog):
    engine = db_engine.create_engine(_conf(
        connection='mysql://u@db/placement',
        connection_parameters='charset=utf8&read_timeout=30'))
    assert engine.url.query == {'charset': 'utf8mb4', 'read_timeout': '30'}
    assert 'utf8' in caplog.text


def _engine_kwargs(monkeypatch, **options):
    """The keyword arguments create_engine() hands to SQLAlchemy."""
    seen = {}
    real = sa.create_engine

    def spy(url, **kwargs):
        seen.update(kwargs, url=url)
        return real(url, **kwargs)

    monkeypatch.setattr(sa, 'create_engine', spy)
    db_engine.create_engine(_conf(**options))
    return seen


def test_server_engine_options(monkeypatch):
    kwargs = _engine_kwargs(
        monkeypatch, connection='mysql://u@db/placement', max_pool_size=7,
        max_overflow=3, pool_timeout=11, connection_recycle_time=60)
    assert kwargs == {
        'url': db_engine.normalize_url('mysql://u@db/placement'),
        'isolation_level': 'READ COMMITTED',
        'pool_recycle': 60, 'pool_size': 7, 'max_overflow': 3,
        'pool_timeout': 11, 'connect_args': {'connect_timeout': 5}}


def test_unset_pool_options_keep_sqlalchemy_defaults(monkeypatch):
    kwargs = _engine_kwargs(monkeypatch, max_pool_size=None,
                            connection='postgresql://u@db/placement')
    assert 'pool_size' not in kwargs and 'max_overflow' not in kwargs
    assert kwargs['isolation_level'] == 'READ COMMITTED'
    assert kwargs['connect_args'] == {'connect_timeout': 5}


def test_a_free_connection_is_waited_for_until_the_deadline(monkeypatch):
    kwargs = _engine_kwargs(monkeypatch, transaction_timeout=10.0,
                            connection='postgresql://u@db/placement')
    assert kwargs['pool_timeout'] == 10.0


def test_connect_timeout_in_url_wins(monkeypatch):
    kwargs = _engine_kwargs(
        monkeypatch, connection='postgresql://u@db/p?connect_timeout=20')
    assert 'connect_args' not in kwargs


def test_sqlite_memory_engine_is_shared_and_enforces_foreign_keys():
    engine = db_engine.create_engine(_conf(connection='sqlite://'))
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (x INTEGER)')
    with engine.connect() as conn:
        assert conn.exec_driver_sql('SELECT count(*) FROM t').scalar() == 0
        assert conn.exec_driver_sql('PRAGMA foreign_keys').scalar() == 1


def test_sqlite_file_engine_pragmas(tmp_path):
    engine = db_engine.create_engine(_conf(
        connection=f'sqlite:///{tmp_path}/p.db', sqlite_synchronous=False))
    with engine.connect() as conn:
        pragma = conn.exec_driver_sql
        assert pragma('PRAGMA journal_mode').scalar() == 'wal'
        assert pragma('PRAGMA foreign_keys').scalar() == 1
        assert pragma('PRAGMA busy_timeout').scalar() >= 5000
        assert pragma('PRAGMA synchronous').scalar() == 0
    engine.dispose()


def test_sqlite_savepoint_rolls_back_inside_transaction(tmp_path):
    """The sqlite3 module's own transaction handling would break this."""
    engine = db_engine.create_engine(
        _conf(connection=f'sqlite:///{tmp_path}/p.db'))
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE t (x INTEGER UNIQUE)')
    with engine.begin() as conn:
        conn.exec_driver_sql('INSERT INTO t VALUES (1)')
        with pytest.raises(sa_exc.IntegrityError):
            with conn.begin_nested():
                conn.exec_driver_sql('INSERT INTO t VALUES (2)')
                conn.exec_driver_sql('INSERT INTO t VALUES (1)')
    with engine.connect() as conn:
        assert conn.exec_driver_sql('SELECT x FROM t').scalars().all() == [1]
    engine.dispose()


def _wrap(orig, cls=sa_exc.OperationalError, statement='SELECT 1'):
    return cls.instance(statement, {}, orig, Exception)


def _pg_error(pgcode, cls=psycopg2.OperationalError):
    """psycopg2 errors expose pgcode read-only; fake one per code."""
    return type('PgError', (cls,), {'pgcode': pgcode})('boom')


@pytest.mark.parametrize('orig', [
    pymysql.err.OperationalError(1213, 'Deadlock found when trying to get '
                                       'lock; try restarting transaction'),
    pymysql.err.OperationalError(1213, 'WSREP detected deadlock/conflict '
                                       'and aborted the transaction.'),
    pymysql.err.OperationalError(1205, 'Lock wait timeout exceeded'),
    pymysql.err.OperationalError(2006, 'MySQL server has gone away'),
    pymysql.err.OperationalError(2013, 'Lost connection to MySQL server'),
    _pg_error('40001'),
    _pg_error('40P01'),
    sqlite3.OperationalError('database is locked'),
], ids=str)
def test_transient(orig):
    assert db_engine.is_transient(_wrap(orig))


@pytest.mark.parametrize('exc', [
    _wrap(pymysql.err.IntegrityError(1062, 'Duplicate entry'),
          sa_exc.IntegrityError),
    _wrap(pymysql.err.ProgrammingError(1146, "Table doesn't exist"),
          sa_exc.ProgrammingError),
    _wrap(_pg_error('23505', psycopg2.IntegrityError), sa_exc.IntegrityError),
    _wrap(sqlite3.OperationalError('no such table: x')),
    ValueError('not a database error'),
], ids=str)
def test_not_transient(exc):
    assert not db_engine.is_transient(exc)


class _FailingCommit:
    def __init__(self, exc):
        self.exc = exc

    def commit(self):
        raise self.exc


@pytest.mark.parametrize('orig', [
    pymysql.err.OperationalError(1213, 'WSREP detected deadlock/conflict '
                                       'and aborted the transaction.'),
    _pg_error('40001'),
    sqlite3.OperationalError('database is locked'),
], ids=str)
def test_a_commit_refused_for_a_collision_may_be_run_again(orig):
    exc = _wrap(orig, statement='COMMIT')
    with pytest.raises(sa_exc.OperationalError):
        session._commit(_FailingCommit(exc))


@pytest.mark.parametrize('orig', [
    pymysql.err.OperationalError(2013, 'Lost connection to MySQL server'),
    # A Galera node that left the primary component as it replicated.
    pymysql.err.OperationalError(
        1180, 'Error while appending streaming replication fragment'
              '(provider status: Not connected to Primary Component)'),
    _pg_error('57P01'),
], ids=str)
def test_any_other_failed_commit_has_an_unknown_outcome(orig):
    exc = _wrap(orig, statement='COMMIT')
    with pytest.raises(exception.CommitOutcomeUnknown):
        session._commit(_FailingCommit(exc))


def _raised_while_handling(first, second):
    """``second`` as Python raises it in an ``except`` block for ``first``
    (a failed ROLLBACK TO SAVEPOINT after a deadlock, say).
    """
    try:
        try:
            raise first
        except type(first):
            raise second
    except type(second) as exc:
        return exc


def test_a_deadlock_behind_a_lost_savepoint_is_transient():
    """MariaDB rolls the whole transaction back on a deadlock or Galera
    certification failure, so the savepoint rollback that follows fails
    with 1305: the deadlock in its context decides.
    """
    exc = _raised_while_handling(
        _wrap(pymysql.err.OperationalError(1213, 'Deadlock found')),
        _wrap(pymysql.err.OperationalError(
            1305, 'SAVEPOINT sa_savepoint_1 does not exist'),
            statement='ROLLBACK TO SAVEPOINT sa_savepoint_1'))
    assert db_engine.is_transient(exc)
    assert db_engine.is_conflict(exc)
    lone = _wrap(pymysql.err.OperationalError(1305, 'SAVEPOINT x does not '
                                                    'exist'))
    assert not db_engine.is_transient(lone)


def test_a_lost_connection_is_transient_but_no_conflict():
    exc = _wrap(pymysql.err.OperationalError(2013, 'Lost connection'))
    assert db_engine.is_transient(exc)
    assert not db_engine.is_conflict(exc)
    assert db_engine.is_conflict(_wrap(_pg_error('40001')))


def test_retry_on_transient_also_retries_what_it_is_told(monkeypatch):
    monkeypatch.setattr(db_engine.time, 'sleep', lambda _: None)
    failures = [KeyError('changed')] * 2
    retried = []

    def unit_of_work():
        if failures:
            raise failures.pop()
        return 'done'

    assert db_engine.retry_on_transient(
        unit_of_work, retry_also=KeyError, on_retry=retried.append) == 'done'
    assert len(retried) == 2


def test_disconnect_is_transient():
    exc = _wrap(psycopg2.OperationalError('server closed the connection'))
    exc.connection_invalidated = True
    assert db_engine.is_transient(exc)


@pytest.mark.parametrize('exc', [
    _wrap(pymysql.err.OperationalError(
        2003, "Can't connect to MySQL server on 'db' ([Errno 111] "
              "Connection refused)"), statement=None),
    _wrap(pymysql.err.OperationalError(2005, "Unknown MySQL server host"),
          statement=None),
    _wrap(psycopg2.OperationalError('could not translate host name'),
          statement=None),
    _wrap(_pg_error('08006'), statement=None),
], ids=str)
def test_unreachable(exc):
    assert db_engine.is_unreachable(exc)


@pytest.mark.parametrize('exc', [
    # Galera certification failures surface on COMMIT, with no statement.
    _wrap(pymysql.err.OperationalError(1213, 'Deadlock'), statement=None),
    _wrap(pymysql.err.ProgrammingError(1146, "Table doesn't exist"),
          sa_exc.ProgrammingError),
    _wrap(_pg_error('40001'), statement=None),
    RuntimeError('boom'),
], ids=str)
def test_not_unreachable(exc):
    assert not db_engine.is_unreachable(exc)


def test_unreachable_server_fails_fast():
    """A closed port must give an error classified as unreachable."""
    engine = db_engine.create_engine(
        _conf(connection='mysql://u@127.0.0.1:1/placement'))
    with pytest.raises(sa_exc.OperationalError) as info:
        with engine.connect():
            pass
    assert db_engine.is_unreachable(info.value)


def test_retry_on_transient_reruns_until_success(monkeypatch):
    monkeypatch.setattr(db_engine.time, 'sleep', lambda _: None)
    failures = [_wrap(pymysql.err.OperationalError(1213, 'Deadlock'))] * 2
    calls = []

    def unit_of_work():
        calls.append(1)
        if failures:
            raise failures.pop()
        return 'done'

    assert db_engine.retry_on_transient(unit_of_work) == 'done'
    assert len(calls) == 3


def test_retry_on_transient_gives_up(monkeypatch):
    monkeypatch.setattr(db_engine.time, 'sleep', lambda _: None)
    calls = []

    def unit_of_work():
        calls.append(1)
        raise _wrap(pymysql.err.OperationalError(1213, 'Deadlock'))

    with pytest.raises(sa_exc.OperationalError):
        db_engine.retry_on_transient(unit_of_work, attempts=3)
    assert len(calls) == 3


def test_retry_on_transient_does_not_retry_other_errors():
    calls = []

    def unit_of_work():
        calls.append(1)
        raise _wrap(pymysql.err.IntegrityError(1062, 'Duplicate entry'),
                    sa_exc.IntegrityError)

    with pytest.raises(sa_exc.IntegrityError):
        db_engine.retry_on_transient(unit_of_work)
    assert calls == [1]


def test_engine_is_a_real_sqlalchemy_engine():
    assert isinstance(db_engine.create_engine(_conf(connection='sqlite://')),
                      sa.engine.Engine)
