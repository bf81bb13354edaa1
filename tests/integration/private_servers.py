"""What the fixtures of the private database servers share: galera.py,
pg_replica.py and mariadb_replica.py, each for servers a tools/ script
(tools/lib/servers.sh) runs under a directory DIR and describes in
``DIR/env``.

``environment(variables, tests, hint, directory=None)`` reads the
variables, loudly unavailable() (skip, or fail under CI=true) when one is
unset or ``directory`` (one of them) names no directory. ``Servers`` is the
base of the classes the fixtures hand out: AUTOCOMMIT admin engines per
server, ``reachable()`` (unavailable() when a server does not answer),
``_script()`` (run the tools/ script, pytest.fail when it fails) and
``database()`` (a fresh database, waited for on every server and dropped
afterwards, the servers restored before and after). ``fixtures(name,
connect)`` makes the session fixture ``name`` (``connect()``, checked,
disposed of at the end) and the per-test fixture ``name + '_database'``.
``poll()`` waits for a condition or fails the test.
"""
import contextlib
import os
import pathlib
import subprocess
import time
import uuid

import pytest
import sqlalchemy as sa

from placement.db import engine as db_engine

from conftest import unavailable

# The scripts' folder.
TOOLS = pathlib.Path(__file__).resolve().parents[2] / 'tools'
SCRIPT_TIMEOUT = 120


def start_hint(script):
    """How to get the servers ``tools/<script>`` runs."""
    return ('start one with: tools/%s start DIR, then '
            '"set -a; . DIR/env; set +a"' % script)


def environment(variables, tests, hint, directory=None):
    """{variable: value} of ``variables``, stripped; unavailable() (``tests``
    are NOT being run) when one is unset, or when the ``directory`` one does
    not name a directory."""
    values = {}
    for variable in variables:
        values[variable] = os.environ.get(variable, '').strip()
        if not values[variable]:
            unavailable('%s is not set: %s are NOT being run (%s)'
                        % (variable, tests, hint))
    if directory is not None and not os.path.isdir(values[directory]):
        unavailable('%s=%s is not a directory: %s are NOT being run (%s)'
                    % (directory, values[directory], tests, hint))
    return values


def with_database(url, name):
    """Server URL ``url`` with database ``name``, as a string."""
    return db_engine.normalize_url(url).set(database=name).render_as_string(
        hide_password=False)


def poll(done, timeout, failure, interval=0.05):
    """Return once ``done()`` is true; after ``timeout`` seconds without,
    pytest.fail(``failure()``)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(failure())
        time.sleep(interval)


class Servers:
    """Servers at ``urls`` ({server: URL}), run by ``tools/SCRIPT`` in
    ``directory`` (``.dir``).

    A subclass sets KIND ('PostgreSQL'), TESTS (for messages: 'the
    PostgreSQL replica tests'), START_HINT, PRIMARY (the server databases
    are created on), DATABASE_PREFIX, and for ``_script`` SCRIPT (its
    path); and defines ``_wait_for_database(name)`` and
    ``_database(name)`` (what ``database()`` yields).
    """

    SCRIPT = None
    # Whether admin engines keep connections: not where a test restarts a
    # server, so that it leaves no stale one behind.
    POOLED = False
    PRIMARY = 'primary'
    DATABASE_PREFIX = 'ptest_'

    def __init__(self, urls, directory=None):
        self._urls = dict(urls)
        self.dir = directory
        self._admins = {}

    def _admin_url(self, server):
        return db_engine.normalize_url(self._urls[server])

    def admin_engine(self, server):
        """An AUTOCOMMIT engine on ``server``, kept for the session."""
        if server not in self._admins:
            pool = {} if self.POOLED else {'poolclass': sa.pool.NullPool}
            self._admins[server] = sa.create_engine(
                self._admin_url(server), isolation_level='AUTOCOMMIT',
                connect_args={'connect_timeout': 5}, **pool)
        return self._admins[server]

    def _execute(self, server, *statements):
        with self.admin_engine(server).connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)

    def _scalar(self, server, statement, **params):
        with self.admin_engine(server).connect() as conn:
            if isinstance(statement, str):
                statement = sa.text(statement)
            return conn.execute(statement, params).scalar()

    def _label(self, server):
        return '%s %s %s' % (self.KIND, server, self._urls[server])

    @contextlib.contextmanager
    def reachable(self, server):
        """unavailable() if what the block asks ``server`` fails for want of
        an answer."""
        try:
            yield
        except sa.exc.DBAPIError as exc:
            unavailable('%s is unreachable: %s are NOT being run (%s): %s'
                        % (self._label(server), self.TESTS, self.START_HINT,
                           exc.orig))

    def answers(self, server):
        """Whether ``server`` answers queries."""
        try:
            self._scalar(server, 'SELECT 1')
        except sa.exc.DBAPIError:
            return False
        return True

    def _script(self, command):
        script = 'tools/%s' % self.SCRIPT.name
        try:
            subprocess.run([str(self.SCRIPT), command, self.dir], check=True,
                           capture_output=True, text=True,
                           timeout=SCRIPT_TIMEOUT)
        except subprocess.CalledProcessError as exc:
            pytest.fail('%s %s %s failed (exit %s): %s'
                        % (script, command, self.dir, exc.returncode,
                           exc.stderr.strip()))
        except subprocess.TimeoutExpired:
            pytest.fail('%s %s %s took over %ss'
                        % (script, command, self.dir, SCRIPT_TIMEOUT))

    def restore(self):
        """Undo what a test did to the servers (here: nothing)."""

    @contextlib.contextmanager
    def database(self):
        """A fresh database on PRIMARY, present on every server before it
        is handed out; dropped afterwards. The servers are restored before
        and after."""
        self.restore()
        name = self.DATABASE_PREFIX + uuid.uuid4().hex[:12]
        self._execute(self.PRIMARY, 'CREATE DATABASE %s' % name)
        try:
            self._wait_for_database(name)
            yield self._database(name)
        finally:
            try:
                self.restore()
            finally:
                self._drop_database(name)

    def _drop_database(self, name):
        self._execute(self.PRIMARY, 'DROP DATABASE IF EXISTS %s' % name)

    def dispose(self):
        for engine in self._admins.values():
            engine.dispose()
        self._admins.clear()


def fixtures(name, connect):
    """The session fixture ``name``: ``connect()`` (a ``Servers``), checked
    (``check()``) and disposed of at the end; and the fixture ``name +
    '_database'``: its ``database()`` for one test."""

    @pytest.fixture(scope='session', name=name)
    def servers():
        found = connect()
        try:
            found.check()
            yield found
        finally:
            found.dispose()

    @pytest.fixture(name=name + '_database')
    def database(request):
        with request.getfixturevalue(name).database() as found:
            yield found

    return servers, database
