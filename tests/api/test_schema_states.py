"""No host looks healthy that cannot serve: against a database without this
code's schema (none, part of one, an older or a newer one) the service
does not start, and says in one line which placement-manage db command
to run; placement-manage's data commands and placement-status refuse
with the same line; and when the schema goes or changes under a running
service, /healthcheck answers 503 "schema ..." and requests 503 in
Placement's format, never 500."""
import logging

import pytest
import sqlalchemy as sa

from placement.api import app as placement_app
from placement.api import service
from placement.cmd import manage
from placement.cmd import status
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import tables

from conftest import ApiClient
from conftest import make_conf

# A revision before head (before consumer types), and one no release has.
OLDER = 'b5c396305c25'
UNKNOWN = 'ffffffffffff'


@pytest.fixture(autouse=True)
def _keep_pytest_logging(monkeypatch):
    """build_application sets oslo.log up, which would take the log
    records away from pytest's capture."""
    monkeypatch.setattr(service.oslo_log, 'setup', lambda *args: None)


def _migrated(url, revision='head'):
    engine = db_engine.create_engine(make_conf(url), bounded=False)
    migration.upgrade(engine, revision)
    return engine


def _drop(engine, *names):
    with engine.begin() as conn:
        for name in names:
            conn.exec_driver_sql('DROP TABLE %s' % name)


def _no_schema(url):
    """An empty database."""
    db_engine.create_engine(make_conf(url)).dispose()


def _partial_first_sync(url):
    """What a first sync that stopped half-way leaves: some tables and
    no revision."""
    engine = db_engine.create_engine(make_conf(url))
    with engine.begin() as conn:
        tables.metadata.create_all(conn, tables=[tables.traits,
                                                 tables.projects])
    engine.dispose()


def _partial_at_head(url):
    """The head revision, a table dropped by hand."""
    engine = _migrated(url)
    _drop(engine, 'resource_provider_traits')
    engine.dispose()


def _older(url):
    _migrated(url, OLDER).dispose()


def _stamped_ahead(url):
    """Recorded as head while its tables are an older revision's (a
    stamp given the wrong revision, or a migration that did not
    finish)."""
    engine = _migrated(url, OLDER)
    migration.stamp(engine, 'head')
    engine.dispose()


def _newer(url):
    """Migrated by a release that knows a later revision."""
    engine = _migrated(url)
    with engine.begin() as conn:
        conn.execute(sa.text('UPDATE alembic_version SET version_num = '
                             ':revision'), {'revision': UNKNOWN})
    engine.dispose()


STATES = {
    'missing': (_no_schema,
                'the database has no placement schema: run '
                '"placement-manage db sync"'),
    'partial': (_partial_first_sync,
                'the database has part of placement\'s schema and no schema '
                'revision (a first db sync that stopped half-way?): run '
                '"placement-manage db sync"'),
    'partial at head': (_partial_at_head,
                        'the database schema is at revision a082b8bb98d0 but '
                        'lacks resource_provider_traits: it was changed by '
                        'hand or a migration did not finish; restore it '
                        'from a backup, or stamp the revision it really has '
                        '("placement-manage db stamp REVISION") and run '
                        '"placement-manage db sync"'),
    'stamped ahead': (_stamped_ahead,
                      'the database schema is at revision a082b8bb98d0 but '
                      'lacks consumer_types, consumers.consumer_type_id: it '
                      'was changed by hand or a migration did not finish; '
                      'restore it from a backup, or stamp the revision it '
                      'really has ("placement-manage db stamp REVISION") '
                      'and run "placement-manage db sync"'),
    'older': (_older,
              'the database schema is at revision b5c396305c25, older than '
              'this release\'s a082b8bb98d0: run "placement-manage db '
              'sync"'),
    'newer': (_newer,
              'the database schema is at revision ffffffffffff, which this '
              'release (schema a082b8bb98d0) does not know: a newer release '
              'migrated it; run that release, or restore the database it '
              'had before'),
}


@pytest.mark.parametrize('state', STATES)
def test_the_service_does_not_start(backend, scratch_database, caplog,
                                    state):
    prepare, line = STATES[state]
    prepare(scratch_database)
    conf = make_conf(scratch_database)
    with pytest.raises(service.StartupError) as info:
        service.build_application(conf)
    assert str(info.value) == 'placement: ' + line
    critical = [record for record in caplog.records
                if record.levelno == logging.CRITICAL]
    assert [record.getMessage() for record in critical] == [
        'Cannot start placement: ' + line]
    assert critical[0].exc_info is None


@pytest.mark.parametrize('state', STATES)
def test_the_commands_refuse_in_one_line(backend, scratch_database,
                                         tmp_path, capsys, state):
    prepare, line = STATES[state]
    prepare(scratch_database)
    conf = tmp_path / 'placement.conf'
    conf.write_text('[placement_database]\nconnection = %s\n'
                    % scratch_database)
    for argv, exit_status in (
            (['db', 'online_data_migrations'], 1), (['audit'], 2),
            (['candidates', 'explain', 'resources=VCPU:1'], 2)):
        assert manage.main(['--config-file', str(conf), *argv]) == \
            exit_status
        captured = capsys.readouterr()
        assert captured.err == 'placement-manage: %s\n' % line
    assert status.main(['--config-file', str(conf), 'upgrade',
                        'check']) == 2
    captured = capsys.readouterr()
    assert captured.err == 'placement-status: %s\n' % line
    assert captured.out == ''


@pytest.mark.sqlite_only
def test_db_sync_mends_what_it_says(backend, scratch_database, tmp_path,
                                    capsys):
    """The states whose line says "db sync": after it the service
    starts."""
    conf = tmp_path / 'placement.conf'
    conf.write_text('[placement_database]\nconnection = %s\n'
                    % scratch_database)
    _older(scratch_database)
    assert manage.main(['--config-file', str(conf), 'db', 'sync']) == 0
    assert status.main(['--config-file', str(conf), 'upgrade',
                        'check']) == 0
    service.build_application(make_conf(scratch_database))


@pytest.fixture
def running(backend, scratch_database):
    """(an ApiClient of a service started on its own healthy database,
    that database's engine)."""
    engine = _migrated(scratch_database)
    conf = make_conf(scratch_database)
    application = placement_app.create_app(conf)
    yield ApiClient(application), engine
    engine.dispose()


def _requests_answer_503(api):
    response = api.get('/resource_providers')
    assert response.status_code == 503, response.text
    error = response.json['errors'][0]
    assert error['title'] == 'Service Unavailable'
    assert ('The placement database does not have the schema this service '
            'needs.' in error['detail'])


def _health_says(api, database):
    response = api.get('/healthcheck')
    assert response.status_code == 503
    assert response.json == {'status': 'error', 'database': database}


def test_a_schema_removed_under_the_service(running, caplog):
    api, engine = running
    assert api.get('/resource_providers').status_code == 200
    assert api.get('/healthcheck').json == {'status': 'ok',
                                            'database': 'ok'}
    with engine.begin() as conn:
        tables.metadata.drop_all(conn)
        conn.exec_driver_sql('DROP TABLE alembic_version')
    _health_says(api, 'schema missing')
    _requests_answer_503(api)
    assert 'Traceback' not in caplog.text


def test_a_table_dropped_under_the_service(running):
    api, engine = running
    _drop(engine, 'resource_provider_traits')
    _health_says(api, 'schema partial')
    response = api.get('/resource_providers?required=HW_CPU_X86_AVX2')
    assert response.status_code == 503, response.text


def test_a_column_dropped_under_the_service(running):
    api, engine = running
    with engine.begin() as conn:
        conn.exec_driver_sql('ALTER TABLE resource_providers DROP COLUMN '
                             'updated_at')
    _health_says(api, 'schema partial')
    _requests_answer_503(api)


def test_a_newer_schema_under_the_service_still_serves(running, caplog):
    """The next release's db sync has run: this host, of the previous
    release, keeps serving until it is upgraded (it would not start
    again), and says so."""
    api, engine = running
    with engine.begin() as conn:
        conn.execute(sa.text('UPDATE alembic_version SET version_num = '
                             ':revision'), {'revision': UNKNOWN})
    for _ in range(2):
        response = api.get('/healthcheck')
        assert response.status_code == 200
        assert response.json == {'status': 'ok', 'database': 'ok',
                                 'schema': 'newer'}
    assert api.get('/resource_providers').status_code == 200
    # Logged once, not at every check.
    assert [record.getMessage() for record in caplog.records
            if record.name == 'placement.api.operations.health'] == [
        'Health check: ' + STATES['newer'][1]]


def test_a_schema_without_revision_under_the_service(running):
    api, engine = running
    _drop(engine, 'alembic_version')
    _health_says(api, 'schema partial')
