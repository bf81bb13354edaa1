"""Shared fixtures: real databases on every backend and an API client.

Backends
    ``backend`` is parametrized over sqlite, mysql and postgresql: every test
    that uses it (directly or through ``app``/``api``/``conf_factory``) runs
    once per backend. The tests whose outcome depends on the driver
    (``DRIVER_TESTS``: the db layer, concurrent claims, 4-byte UTF-8) also
    run on the variant ``mysqldb``: the MariaDB server through mysqlclient
    (``mysql+mysqldb://``) instead of PyMySQL, as backend ``mysql``; where
    mysqlclient does not import, they skip (fail under ``CI=true``). Each
    test session creates its own databases, named
    ``ptest_<random>_<backend>``, migrates them once with
    ``placement.db.migration.upgrade`` and drops them at the end. Before each
    test all rows are deleted except the standard resource classes and
    traits (whose ids stay put), so tests are isolated but cheap.

    A MariaDB/PostgreSQL server that cannot be reached skips its tests with a
    loud warning; with ``CI=true`` in the environment those tests FAIL
    instead. Servers: ``PLACEMENT_TEST_MYSQL_URL`` (default
    ``mysql+pymysql://root@127.0.0.1:3306/``) and ``PLACEMENT_TEST_PG_URL``
    (default ``postgresql://postgres@127.0.0.1:5432/postgres``).
    ``PLACEMENT_TEST_BACKENDS=sqlite,postgresql`` limits the backends run
    (``mysql`` brings its variant ``mysqldb`` along; ``mysqldb`` alone
    runs just that, on the ``PLACEMENT_TEST_MYSQL_URL`` server).
    ``mysql_driver`` is parametrized over PyMySQL and mysqlclient, by
    their SQLAlchemy names (``pymysql``, ``mysqldb``), for tests of other
    MariaDB servers (tests/integration).

    ``backend`` itself is a ``Backend``: ``.name``, ``.url`` and ``.engine``
    (shared by every test of the session on that backend).

    ``scratch_database`` is the URL of an empty database of the test's own
    on the backend's server (a file for SQLite), dropped after the test:
    for tests of a schema that is missing, partial or not this code's.

    Tests that do not care about the database run on SQLite only when marked
    ``@pytest.mark.sqlite_only`` (or with ``pytestmark`` for a module);
    ``@pytest.mark.backends('mysql', 'postgresql')`` runs a test on those
    of the selected backends only (e.g. where SQLite has nothing to test).
    Data can be set up directly with ``backend.engine`` where no API exists.

Configuration and application
    ``conf_factory(**overrides)`` returns a fresh oslo.config ConfigOpts:
    noauth2, the backend's database, default policies, plus overrides given
    per group: ``conf_factory(oslo_policy={'enforce_new_defaults': True})``
    (use ``DEFAULT`` for ungrouped options).

    ``app`` is the full WSGI pipeline for ``conf_factory()`` on the shared
    engine.

Client
    ``api`` is an ``ApiClient`` on ``app``. ``api.get/put/post/delete/patch
    (path, json=None, version='1.39', token='admin', headers=None)`` return
    werkzeug test responses (``.status_code``, ``.headers``, ``.json``,
    ``.text``). ``version=None`` or ``token=None`` leave that header out;
    ``headers`` adds or replaces headers (a None value removes one). Other
    keywords go to werkzeug's ``Client.open`` (e.g. ``data='raw body'``);
    ``api.request('HEAD', path, ...)`` sends any other method. Tokens follow
    noauth2: ``admin`` has the admin role, ``user[:project]`` none unless
    an ``X-Roles`` header says otherwise.

    ``api_factory(prefix='', shared_engine=True, **overrides)`` builds a
    client on a new app with configuration overrides, optionally mounted
    under a prefix (SCRIPT_NAME), e.g. ``api_factory(prefix='/placement')``.
    ``shared_engine=False`` lets the app build its own engine from the
    configuration (e.g. to point it at another database).
"""
import dataclasses
import logging
import os
import uuid
import warnings

import pytest
import sqlalchemy as sa
from werkzeug import test as werkzeug_test

from placement import conf as placement_conf
from placement.api import app as placement_app
from placement.candidates import survey_cache
from placement.candidates import trees_needed
from placement.cmd import manage
from placement.db import backends
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import standard_sync
from placement.db import tables

import sql_rows

BACKENDS = ('sqlite', 'mysql', 'postgresql')
# Backend variants: the server of a backend through another driver, run
# by the tests whose outcome depends on the driver (DRIVER_TESTS); they
# see the variant as that backend (``backend.name`` 'mysql').
DRIVER_VARIANTS = {'mysqldb': 'mysql'}
DRIVER_TESTS = (
    'tests/db/',
    'tests/api/test_allocation_race.py',
    'tests/api/test_pipeline.py::test_four_byte_utf8_round_trip',
    'tests/api/test_pipeline.py::test_four_byte_utf8_in_lookups',
    'tests/api/test_request_hygiene.py::'
    'test_text_an_adopted_utf8mb3_table_cannot_hold_is_a_400',
)
MYSQL_DRIVERS = ('pymysql', 'mysqldb')


def with_driver(url, driver):
    """``url`` (a string) through ``driver`` instead of its own."""
    url = sa.engine.make_url(url)
    return url.set(drivername='%s+%s' % (url.get_backend_name(), driver)
                   ).render_as_string(hide_password=False)


SERVERS = {
    'mysql': os.environ.get('PLACEMENT_TEST_MYSQL_URL',
                            'mysql+pymysql://root@127.0.0.1:3306/'),
    'postgresql': os.environ.get('PLACEMENT_TEST_PG_URL',
                                 'postgresql://postgres@127.0.0.1:5432/'
                                 'postgres'),
}
SERVERS['mysqldb'] = with_driver(SERVERS['mysql'], 'mysqldb')
DEFAULT_VERSION = '1.39'
ADMIN_TOKEN = 'admin'
# Backend name -> why its server could not be used, for the final summary.
_UNREACHABLE = {}


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'sqlite_only: run a backend-using test on SQLite only')
    config.addinivalue_line(
        'markers', 'backends(*names): run a backend-using test on those '
        'of the selected backends only')
    config.addinivalue_line(
        'markers', 'integration: runs real servers (Apache, gunicorn, '
        'Keystone); deselect with -m "not integration"')


def pytest_terminal_summary(terminalreporter):
    if not _UNREACHABLE:
        return
    terminalreporter.section('DATABASE BACKENDS NOT TESTED', sep='!',
                             red=True, bold=True)
    for reason in _UNREACHABLE.values():
        terminalreporter.line(reason, red=True, bold=True)


def _chosen():
    names = os.environ.get('PLACEMENT_TEST_BACKENDS', '').strip()
    known = BACKENDS + tuple(DRIVER_VARIANTS)
    if not names:
        return known
    chosen = tuple(n.strip() for n in names.split(',') if n.strip())
    unknown = set(chosen) - set(known)
    if unknown:
        raise pytest.UsageError(
            'PLACEMENT_TEST_BACKENDS: unknown backend(s) %s; choose from %s'
            % (', '.join(sorted(unknown)), ', '.join(known)))
    return chosen


def selected_backends():
    """The backends PLACEMENT_TEST_BACKENDS names (all by default)."""
    return tuple(name for name in _chosen() if name in BACKENDS)


def selected_variants():
    """The driver variants named, or whose backend is."""
    chosen = _chosen()
    return tuple(variant for variant, backend in DRIVER_VARIANTS.items()
                 if variant in chosen or backend in chosen)


def pytest_generate_tests(metafunc):
    if 'backend' not in metafunc.fixturenames:
        return
    backends = list(selected_backends())
    if metafunc.definition.nodeid.startswith(DRIVER_TESTS):
        backends += selected_variants()
    if metafunc.definition.get_closest_marker('sqlite_only'):
        backends = ['sqlite']
    only = metafunc.definition.get_closest_marker('backends')
    if only:
        backends = [name for name in backends
                    if DRIVER_VARIANTS.get(name, name) in only.args]
    metafunc.parametrize('backend', backends, indirect=True)


def in_ci():
    return os.environ.get('CI', '').lower() == 'true'


def unavailable(message):
    """Skip loudly, or fail under CI where every backend must be tested."""
    if in_ci():
        pytest.fail(message + ' (CI=true: failing instead of skipping)')
    warnings.warn(message, stacklevel=2)
    pytest.skip(message)


@dataclasses.dataclass
class Backend:
    name: str
    url: str
    engine: sa.engine.Engine


class _Databases:
    """This session's databases, created on first use, dropped at the end."""

    def __init__(self, tmp_dir):
        self._tmp_dir = tmp_dir
        self._name = 'ptest_' + uuid.uuid4().hex[:12]
        self._backends = {}
        self._admin_engines = {}

    def get(self, name):
        if name in _UNREACHABLE:
            unavailable(_UNREACHABLE[name])
        if name not in self._backends:
            try:
                self._backends[name] = self._create(name)
            except _ServerUnreachable as exc:
                _UNREACHABLE[name] = str(exc)
                unavailable(str(exc))
        return self._backends[name]

    def _database_name(self, name):
        return '%s_%s' % (self._name, name)

    def _create(self, name):
        database = self._database_name(name)
        if name == 'sqlite':
            url = 'sqlite:///%s' % (self._tmp_dir / (database + '.db'))
        else:
            admin = self._admin_engine(name)
            with admin.connect() as conn:
                conn.exec_driver_sql('CREATE DATABASE %s' % database)
            url = db_engine.normalize_url(SERVERS[name]).set(
                database=database).render_as_string(hide_password=False)
        engine = db_engine.create_engine(make_conf(url))
        migration.upgrade(engine)
        return Backend(DRIVER_VARIANTS.get(name, name), url, engine)

    def _admin_engine(self, name):
        engine = admin_engine(name)
        self._admin_engines[name] = engine
        return engine

    def drop_all(self):
        for backend in self._backends.values():
            backend.engine.dispose()
        # Every database created, even one whose migration failed.
        for name, admin in self._admin_engines.items():
            database = self._database_name(name)
            with admin.connect() as conn:
                if name == 'postgresql':
                    conn.exec_driver_sql(
                        'DROP DATABASE IF EXISTS %s WITH (FORCE)' % database)
                else:
                    conn.exec_driver_sql(
                        'DROP DATABASE IF EXISTS %s' % database)
            admin.dispose()


class _ServerUnreachable(Exception):
    """A backend's server does not answer, or its driver does not import."""


def missing_driver(url):
    """Why the driver of ``url`` cannot be used, or None if it imports."""
    url = sa.engine.make_url(url)
    try:
        url.get_dialect().import_dbapi()
    except ImportError as exc:
        return ('the %s driver does not import (%s): its tests are NOT being '
                'run (README.md, "MariaDB drivers", says how to install it)'
                % (url.drivername, exc))
    return None


@pytest.fixture(params=MYSQL_DRIVERS)
def mysql_driver(request):
    """Each MySQL driver's name, unavailable() where it does not import."""
    missing = missing_driver('mysql+%s://' % request.param)
    if missing:
        unavailable(missing)
    return request.param


def admin_engine(name):
    """An AUTOCOMMIT engine on the ``name`` server (to create and drop
    databases); _ServerUnreachable if it does not answer, or its driver
    does not import.
    """
    url = db_engine.normalize_url(SERVERS[name])
    missing = missing_driver(url)
    if missing:
        raise _ServerUnreachable(missing)
    engine = sa.create_engine(url, isolation_level='AUTOCOMMIT',
                              connect_args={'connect_timeout': 5})
    try:
        engine.connect().close()
    except sa.exc.DBAPIError as exc:
        engine.dispose()
        raise _ServerUnreachable(
            '%s server %s is unreachable: its tests are NOT being run: %s'
            % (name, url.render_as_string(), exc.orig))
    return engine


def make_conf(url, **overrides):
    """A placement configuration: noauth2, database ``url``, overrides."""
    conf = placement_conf.load_config(config_files=[])
    conf.set_override('auth_strategy', 'noauth2', 'api')
    conf.set_override('connection', url, 'placement_database')
    for group, options in overrides.items():
        group = None if group == 'DEFAULT' else group
        for name, value in options.items():
            conf.set_override(name, value, group)
    return conf


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """The service's start, run in process, sets oslo.log up: its handler
    writes to the stream pytest captured for that test, closed once the
    test ends. Later tests would log into it ('I/O operation on closed
    file'), so the root logger's handlers and level are put back."""
    root = logging.getLogger()
    before, level = set(root.handlers), root.level
    yield
    for handler in root.handlers[:]:
        # pytest's own capture handlers come and go with each phase.
        if (handler not in before
                and not type(handler).__module__.startswith('_pytest')):
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope='session')
def _databases(tmp_path_factory):
    databases = _Databases(tmp_path_factory.mktemp('placement-db'))
    yield databases
    databases.drop_all()


def _clean(engine):
    """Delete every row but the standard resource classes and traits."""
    with engine.begin() as conn:
        mysql = backends.of(conn) is backends.mysql.BACKEND
        if mysql:
            # Self-referencing provider rows are checked row by row.
            conn.exec_driver_sql('SET SESSION FOREIGN_KEY_CHECKS = 0')
        try:
            for table in reversed(tables.metadata.sorted_tables):
                delete = table.delete()
                if table is tables.resource_classes:
                    delete = delete.where(
                        table.c.id >= standard_sync.CUSTOM_RC_START)
                elif table is tables.traits:
                    delete = delete.where(table.c.name.startswith('CUSTOM_'))
                conn.execute(delete)
        finally:
            if mysql:
                conn.exec_driver_sql('SET SESSION FOREIGN_KEY_CHECKS = 1')
        standard_sync.sync_standard(conn)
    # Counts of the rows just deleted would steer the next test's reads.
    survey_cache.forget_surveys()
    trees_needed.forget()


@pytest.fixture
def backend(request, _databases):
    chosen = _databases.get(request.param)
    _clean(chosen.engine)
    return chosen


@pytest.fixture
def scratch_database(backend, tmp_path):
    if backend.name == 'sqlite':
        yield 'sqlite:///%s' % (tmp_path / 'scratch.db')
        return
    name = 'ptest_scratch_' + uuid.uuid4().hex[:12]
    admin = admin_engine(backend.name)
    with admin.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    try:
        yield sa.engine.make_url(backend.url).set(
            database=name).render_as_string(hide_password=False)
    finally:
        force = ' WITH (FORCE)' if backend.name == 'postgresql' else ''
        with admin.connect() as conn:
            conn.exec_driver_sql(
                'DROP DATABASE IF EXISTS %s%s' % (name, force))
        admin.dispose()


@pytest.fixture
def conn(backend):
    """A connection to the test's backend, in a transaction committed at
    the end."""
    with backend.engine.begin() as connection:
        yield connection


@pytest.fixture
def conf_factory(backend):
    def build(**overrides):
        return make_conf(backend.url, **overrides)
    return build


@pytest.fixture
def app(backend, conf_factory):
    return placement_app.create_app(conf_factory(), engine=backend.engine)


class ApiClient:
    """Placement requests with the usual headers filled in."""

    def __init__(self, app, prefix=''):
        self.client = werkzeug_test.Client(app)
        self.prefix = prefix

    def request(self, method, path, json=None, version=DEFAULT_VERSION,
                token=ADMIN_TOKEN, headers=None, **kwargs):
        sent = {}
        if version is not None:
            sent['OpenStack-API-Version'] = 'placement %s' % version
        if token is not None:
            sent['X-Auth-Token'] = token
        for name, value in (headers or {}).items():
            sent = {k: v for k, v in sent.items()
                    if k.lower() != name.lower()}
            if value is not None:
                sent[name] = value
        if self.prefix:
            kwargs.setdefault('environ_overrides', {})['SCRIPT_NAME'] = (
                self.prefix)
        return self.client.open(path, method=method, json=json,
                                headers=sent, **kwargs)

    def get(self, path, **kwargs):
        return self.request('GET', path, **kwargs)

    def put(self, path, json=None, **kwargs):
        return self.request('PUT', path, json=json, **kwargs)

    def post(self, path, json=None, **kwargs):
        return self.request('POST', path, json=json, **kwargs)

    def patch(self, path, json=None, **kwargs):
        return self.request('PATCH', path, json=json, **kwargs)

    def delete(self, path, **kwargs):
        return self.request('DELETE', path, **kwargs)


@pytest.fixture
def api(app):
    return ApiClient(app)


@pytest.fixture
def api_factory(backend, conf_factory):
    """``build(prefix, shared_engine, **overrides)``: an ApiClient of an app
    configured with ``overrides``, on the backend's engine, or with
    ``shared_engine=False`` one of its own made from the configuration
    (reachable or not: the start-up connection check is not made)."""
    def build(prefix='', shared_engine=True, **overrides):
        conf = conf_factory(**overrides)
        engine = (backend.engine if shared_engine
                  else db_engine.create_engine(conf))
        application = placement_app.create_app(conf, engine=engine)
        return ApiClient(application, prefix=prefix)
    return build


@pytest.fixture
def provider(backend):
    """A resource provider row inserted directly (see sql_rows.provider)."""
    with backend.engine.begin() as conn:
        return sql_rows.provider(conn)


@pytest.fixture
def manage_cli(backend, tmp_path, capsys):
    """``run(*args)``: placement-manage on the test's database ->
    (exit status, stdout lines, stderr)."""
    conf = tmp_path / 'placement.conf'
    conf.write_text('[placement_database]\nconnection = %s\n' % backend.url)

    def run(*args):
        status = manage.main(['--config-file', str(conf)] + list(args))
        out, err = capsys.readouterr()
        return status, out.splitlines(), err
    return run
