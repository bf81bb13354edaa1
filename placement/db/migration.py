"""Schema migrations driven programmatically (no alembic.ini).

The alembic scripts live in ``<repo>/alembic`` in a source checkout and are
shipped as package data in ``placement/db/migrations`` by a regular install.

Migrations run through the unit of work's schema transactions
(placement.db.session.Database.migrate): concurrent upgraders queue for
the backend's migration lock rather than the write lock, whose table a
new database does not have yet.
"""

import functools
import pathlib

from alembic.runtime import migration as alembic_migration
from alembic.script import ScriptDirectory
import sqlalchemy as sa

from alembic import command
from alembic import config as alembic_config
from alembic import util as alembic_util
from placement.db import session
from placement.db import tables

_HERE = pathlib.Path(__file__).resolve().parent
_CANDIDATES = (_HERE / 'migrations', _HERE.parent.parent / 'alembic')


def upgrade(engine: sa.Engine, revision: str = 'head') -> None:
    """Migrate the schema to ``revision``.

    Existing upstream databases are adopted in place: the revision ids are
    upstream's, so only the steps they have not run yet are applied. Safe to
    call from several processes at once (e.g. API workers on startup).

    Standard resource classes and traits are not rows of the schema: the
    service inserts them when it first uses the database, as upstream does.
    A schema copied table by table (``INSERT ... SELECT`` on MySQL would
    renumber VCPU's id 0) therefore stays faithful.
    """
    session.Database(engine).migrate(_upgrade, revision)


def stamp(engine: sa.Engine, revision: str) -> None:
    """Record ``revision`` as current without running any migration."""
    session.Database(engine).migrate(_stamp, revision, attempts=1)


def current_revision(engine: sa.Engine) -> str | None:
    """The database's alembic revision, or None if it was never migrated."""
    return session.Database(engine).read(_revision)


def script_location() -> pathlib.Path:
    """Directory holding env.py and versions/ for this installation."""
    for path in _CANDIDATES:
        # The repo-relative candidate is site-packages/alembic in a regular
        # install, i.e. the alembic library itself: require our layout.
        if (path / 'env.py').is_file() and (path / 'versions').is_dir():
            return path
    raise RuntimeError('placement migration scripts not found in any of: '
                       + ', '.join(map(str, _CANDIDATES)))


def _revision(connection):
    context = alembic_migration.MigrationContext.configure(connection)
    return context.get_current_revision()


class SchemaMismatch(Exception):
    """The database's schema is not the one this code serves; the
    message says which placement-manage db command (or what else) puts
    it right. ``state`` is one of MISSING, PARTIAL, OLDER, NEWER."""

    def __init__(self, state: str, message: str) -> None:
        super().__init__(message)
        self.state = state


# The states of a schema that is not this code's.
MISSING, PARTIAL, OLDER, NEWER = 'missing', 'partial', 'older', 'newer'


@functools.cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory(str(script_location()))


def head() -> str:
    """The revision this code's schema is at."""
    return _scripts().get_current_head() or ''


def check_schema(engine: sa.Engine) -> None:
    """Raise SchemaMismatch unless the database has this code's schema:
    at the head revision with every table and column of
    placement.db.tables (an upstream database at the same revision has
    them: the revisions are upstream's). A revision that is not head
    is older (db sync applies what it lacks) or, unknown to these
    scripts, newer: a later release migrated it."""
    session.Database(engine).read(_check_schema)


def _check_schema(connection):
    revision = _revision(connection)
    missing = _missing(connection)
    if revision is None:
        if len(missing) == len(tables.metadata.tables):
            raise SchemaMismatch(MISSING, (
                'the database has no placement schema: run '
                '"placement-manage db sync"'))
        raise SchemaMismatch(PARTIAL, (
            'the database has part of placement\'s schema and no schema '
            'revision (a first db sync that stopped half-way?): run '
            '"placement-manage db sync"'))
    if revision != head():
        try:
            known = _scripts().get_revision(revision) is not None
        except alembic_util.CommandError:
            known = False
        if not known:
            raise SchemaMismatch(NEWER, (
                'the database schema is at revision %s, which this release '
                '(schema %s) does not know: a newer release migrated it; '
                'run that release, or restore the database it had before'
                % (revision, head())))
        raise SchemaMismatch(OLDER, (
            'the database schema is at revision %s, older than this '
            'release\'s %s: run "placement-manage db sync"'
            % (revision, head())))
    if missing:
        raise SchemaMismatch(PARTIAL, (
            'the database schema is at revision %s but lacks %s: it was '
            'changed by hand or a migration did not finish; restore it '
            'from a backup, or stamp the revision it really has '
            '("placement-manage db stamp REVISION") and run '
            '"placement-manage db sync"' % (revision, ', '.join(missing))))


def _missing(connection):
    """The tables and columns (as table.column) of placement's schema
    that the database does not have."""
    inspector = sa.inspect(connection)
    present = set(inspector.get_table_names())
    missing = []
    for name, table in tables.metadata.tables.items():
        if name not in present:
            missing.append(name)
            continue
        columns = {column['name'] for column in inspector.get_columns(name)}
        missing.extend('%s.%s' % (name, column.name)
                       for column in table.columns
                       if column.name not in columns)
    return missing


def probe_schema(database: session.Database) -> SchemaMismatch | None:
    """What the health check reads instead of SELECT 1: one cheap
    statement, which fails unless every table and column of placement's
    schema is there, and gives the schema's revision. Only when that
    is not all well is the schema read in full (check_schema).

    SchemaMismatch is raised for a schema that cannot serve: tables or
    columns missing, or no revision. A schema that has them all at
    another revision serves (a rolling upgrade runs the previous
    release on the next one's schema for a while): its SchemaMismatch
    (state OLDER or NEWER) is returned as a note. Other errors (an
    unreachable database) are raised."""
    try:
        revision = database.read(_probe)
    except sa.exc.DBAPIError:
        database.read(_check_schema)
        raise
    if revision == head():
        return None
    try:
        database.read(_check_schema)
    except SchemaMismatch as exc:
        if exc.state not in (OLDER, NEWER):
            raise
        return exc
    return None


def _probe(connection):
    return connection.execute(_PROBE).scalar()


# Names every table and column (which the database checks as it plans
# the statement) and reads no row of them.
_PROBE = sa.select(sa.table(
    'alembic_version', sa.column('version_num')).c.version_num).where(
    *(~sa.exists(sa.select(*table.columns).where(sa.false()))
      for table in tables.metadata.sorted_tables))


class LeftoverTables(Exception):
    """The database has tables of placement's schema but no schema
    revision, and some hold rows: not what an interrupted first sync
    leaves behind."""


def _upgrade(connection, revision):
    # Concurrent upgraders of one database queue for the migration lock.
    # SQLite has none: its single writer lock makes a concurrent upgrader
    # fail with a transient "database is locked" error, and the retry then
    # finds the schema already migrated.
    if _revision(connection) is None:
        _drop_what_a_failed_first_sync_left(connection)
    command.upgrade(_config(connection), revision)


def _drop_what_a_failed_first_sync_left(connection):
    """MySQL commits each CREATE TABLE on its own: a first sync that
    failed half-way leaves some tables and no revision, and a second one
    would stop on "table already exists". Such tables are empty: they are
    dropped, and the sync starts again. Tables with rows are refused
    (LeftoverTables), never dropped."""
    present = set(sa.inspect(connection).get_table_names())
    leftovers = [table for name, table in tables.metadata.tables.items()
                 if name in present]
    if not leftovers:
        return
    holding = sorted(
        table.name for table in leftovers
        if connection.execute(sa.select(sa.literal(1)).select_from(table)
                              .limit(1)).first() is not None)
    if holding:
        raise LeftoverTables(
            'the database has placement tables with rows (%s) but no schema '
            'revision: if it is a placement database, record its revision '
            'with "placement-manage db stamp REVISION" first'
            % ', '.join(holding))
    tables.metadata.drop_all(connection, tables=leftovers)


def _stamp(connection, revision):
    command.stamp(_config(connection), revision)


def _config(connection):
    config = alembic_config.Config()
    # The value goes through ConfigParser interpolation.
    config.set_main_option('script_location',
                           str(script_location()).replace('%', '%%'))
    config.attributes['connection'] = connection
    return config
