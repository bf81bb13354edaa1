"""The [placement_database] and start-up options upstream's operators set
do what upstream's do: the first connection is retried (max_retries,
retry_interval) and the service does not start without it; SQL is logged
(connection_debug) and traced to its call site (connection_trace); every
option's value is logged at start (log_options); the one workaround that
has no use here says so.
"""
import logging
import re
import time

import pytest
import sqlalchemy as sa

from placement.api import app as placement_app
from placement.api import service
from placement.db import engine as db_engine
from placement.db import session
from placement.db import watchdog

from conftest import ApiClient
import gunicorn_server


@pytest.fixture(autouse=True)
def _keep_pytest_logging(monkeypatch):
    """build_application sets oslo.log up, which would take the log
    records away from pytest's capture."""
    monkeypatch.setattr(service.oslo_log, 'setup', lambda *args: None)


def _unreachable(backend):
    """A URL of ``backend`` where no server listens."""
    port = gunicorn_server.free_port()
    return {
        'sqlite': 'sqlite:////nonexistent-directory/placement.db',
        'mysql': 'mysql+pymysql://root@127.0.0.1:%d/placement' % port,
        'postgresql': 'postgresql://postgres@127.0.0.1:%d/placement' % port,
    }[backend.name]


def test_an_unreachable_database_stops_the_start_after_the_retries(
        backend, conf_factory, caplog):
    conf = conf_factory(placement_database={
        'connection': _unreachable(backend), 'max_retries': 2,
        'retry_interval': 0})
    with caplog.at_level(logging.WARNING, 'placement.db.engine'):
        with pytest.raises(service.StartupError) as info:
            service.build_application(conf)
    text = str(info.value)
    assert text.startswith('placement: cannot ')
    assert text.endswith('(3 attempts: [placement_database] '
                         'max_retries = 2)')
    assert '\n' not in text
    retries = [record for record in caplog.records
               if 'database is unreachable' in record.getMessage()]
    assert len(retries) == 2


@pytest.mark.backends('mysql', 'postgresql')
@pytest.mark.parametrize('parts, said', [
    ({'database': 'ptest_no_such_database'},
     'placement: the database at %s does not exist ('),
    ({'username': 'ptest_nobody', 'password': 's3cret'},
     'placement: the database server refused the user of %s ('),
])
def test_a_wrong_database_or_user_stops_the_start_at_once(
        backend, conf_factory, caplog, parts, said):
    """Waiting does not mend them: no retry, one line, no password."""
    url = sa.engine.make_url(backend.url).set(**parts)
    conf = conf_factory(placement_database={
        'connection': url.render_as_string(hide_password=False),
        'max_retries': 5, 'retry_interval': 10})
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, 'placement.db.engine'):
        with pytest.raises(service.StartupError) as info:
            service.build_application(conf)
    assert time.monotonic() - started < 5
    text = str(info.value)
    shown = db_engine.normalize_url(
        url.render_as_string(hide_password=False)).render_as_string()
    assert text.startswith(said % shown), text
    assert 's3cret' not in text
    assert '\n' not in text
    assert not [record for record in caplog.records
                if 'database is unreachable' in record.getMessage()]


def test_a_reachable_database_starts_at_once(backend, conf_factory):
    conf = conf_factory(placement_database={'max_retries': 0})
    assert service.build_application(conf) is not None


@pytest.mark.parametrize('verbosity, level', [
    (0, None), (50, logging.INFO), (100, logging.DEBUG)])
def test_connection_debug_logs_sql(backend, conf_factory, verbosity, level,
                                   monkeypatch):
    logger = logging.getLogger('sqlalchemy.engine')
    monkeypatch.setattr(logger, 'level', logging.NOTSET)
    engine = db_engine.create_engine(conf_factory(
        placement_database={'connection_debug': verbosity}))
    engine.dispose()
    assert logger.level == (level or logging.NOTSET)


def test_connection_trace_names_the_call_site(backend, conf_factory):
    engine = db_engine.create_engine(conf_factory(
        placement_database={'connection_trace': True}))
    sent = []

    @db_engine.event.listens_for(engine, 'before_cursor_execute')
    def _seen(_conn, _cursor, statement, *_args):
        sent.append(statement)

    try:
        session.Database(engine).read(
            lambda conn: conn.execute(sa.text('SELECT 1')))
    finally:
        engine.dispose()
    assert any('-- db/session.py:' in statement and ' read' in statement
               for statement in sent), sent


def test_log_options_dumps_the_configuration_at_start(conf_factory, caplog):
    conf = conf_factory()
    with caplog.at_level(logging.DEBUG, 'placement.api.service'):
        service.build_application(conf)
    logged = '\n'.join(record.getMessage() for record in caplog.records)
    assert 'placement_database.transaction_timeout' in logged
    assert re.search(r'placement_database\.connection\s+= \*\*\*\*',
                     logged)


def test_the_wide_trees_workaround_says_it_does_nothing(conf_factory,
                                                        caplog):
    conf = conf_factory(workarounds={
        'optimize_for_wide_provider_trees': True})
    with caplog.at_level(logging.INFO, 'placement.api.service'):
        service.build_application(conf)
    assert any('optimize_for_wide_provider_trees is set: it has no effect'
               in record.getMessage() for record in caplog.records)


@pytest.mark.sqlite_only
def test_gunicorn_exits_when_the_database_stays_unreachable(tmp_path):
    """As upstream's: the worker fails to boot and gunicorn stops with a
    non-zero status, instead of serving 503s behind a health check that
    only asks for the version document."""
    server = gunicorn_server.placement_server(tmp_path, sections={
        'placement_database': {
            'connection': 'sqlite:////nonexistent-directory/placement.db',
            'sync_on_startup': 'false', 'max_retries': '1',
            'retry_interval': '0'}})
    with pytest.raises(RuntimeError) as info:
        server.start()
    assert 'exited with 3' in str(info.value)
    log = server.log_path.read_text()
    assert 'Worker failed to boot' in log
    assert ('(2 attempts: [placement_database] max_retries = 1)'
            in log)
    assert 'Traceback' not in log


@pytest.mark.backends('mysql', 'postgresql')
def test_no_free_pooled_connection_is_a_503(conf_factory):
    """Every pooled connection in use for pool_timeout: a 503 in
    Placement's format (it was a 500)."""
    conf = conf_factory(placement_database={
        'max_pool_size': 1, 'max_overflow': 0, 'pool_timeout': 1})
    engine = db_engine.create_engine(conf)
    api = ApiClient(placement_app.create_app(conf, engine=engine))
    try:
        with engine.connect():
            response = api.get('/resource_providers')
    finally:
        engine.dispose()
    assert response.status_code == 503
    assert 'no free connection' in response.json['errors'][0]['detail']


@pytest.mark.parametrize('timeout', [5.0, 0.0])
def test_migrations_at_start_are_not_bounded(backend, conf_factory, timeout):
    """sync_on_startup migrates on an engine without transaction_timeout:
    a new one where the service's is bounded, else the service's own (an
    in-memory SQLite database only its own engine reaches)."""
    conf = conf_factory(placement_database={'transaction_timeout': timeout})
    engine = db_engine.create_engine(conf)
    try:
        with db_engine.unbounded(conf, engine) as migrating:
            assert watchdog.timeout_of(migrating) == 0
            bounded = timeout > 0 and backend.name != 'sqlite'
            assert (migrating is not engine) == bounded
    finally:
        engine.dispose()
