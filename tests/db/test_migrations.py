"""Migrations against real SQLite, MariaDB/MySQL and PostgreSQL databases.

Each test gets fresh, uniquely named databases that are dropped afterwards.
Server URLs come from PLACEMENT_TEST_MYSQL_URL / PLACEMENT_TEST_PG_URL. An
unreachable server skips its tests (with a warning), except under CI=true,
where it fails them. The adoption tests run upstream's own migrations from
the venv tools/integration-venvs.sh builds (.venv-upstream; see
integration_venvs.upstream): without it they skip, or fail under CI=true.
"""

import logging
import os
import subprocess
import threading
import time
import types
import uuid

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
import os_resource_classes
import os_traits
import pytest
import sqlalchemy as sa

from placement.db import backends
from placement.db import engine as db_engine
from placement.db import migration
from placement.db import standard_sync
from placement.db import tables

import conftest
import integration_venvs

HEAD = 'a082b8bb98d0'
UPSTREAM_REVISIONS = ('b4ed3a175331', '611cd6dffd7b', 'b5c396305c25',
                      '422ece571366', HEAD)
DB_PREFIX = os.environ.get('PLACEMENT_TEST_DB_PREFIX', 'placement_test_')

# Runs upstream's own migration code (a black box) up to a given revision.
_UPSTREAM_TO_REVISION = '''
import sys
from oslo_config import cfg
from placement import conf, db_api
from placement.db.sqlalchemy import migration
config = cfg.ConfigOpts()
conf.register_opts(config)
config(['--config-file', sys.argv[1]], project='placement')
db_api.configure(config)
migration.upgrade(sys.argv[2])
'''


# -- databases --------------------------------------------------------------

def _admin_engine(backend):
    try:
        return conftest.admin_engine(backend)
    except conftest._ServerUnreachable as exc:
        conftest.unavailable(str(exc))


@pytest.fixture(params=conftest.selected_backends())
def new_database(request, tmp_path):
    """Factory returning the URL of a new, empty database."""
    backend = request.param
    admin = None if backend == 'sqlite' else _admin_engine(backend)
    created = []

    def create():
        name = f'{DB_PREFIX}{uuid.uuid4().hex[:12]}'
        if admin is None:
            return f'sqlite:///{tmp_path / name}.sqlite'
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE {name}')
        created.append(name)
        return admin.url.set(database=name).render_as_string(
            hide_password=False)

    yield create
    if admin is not None:
        drop = ('DROP DATABASE {} WITH (FORCE)' if backend == 'postgresql'
                else 'DROP DATABASE {}')
        with admin.connect() as conn:
            for name in created:
                conn.exec_driver_sql(drop.format(name))
        admin.dispose()


def _engine(url):
    conf = types.SimpleNamespace(
        placement_database=types.SimpleNamespace(connection=url))
    return db_engine.create_engine(conf)


@pytest.fixture
def engine(new_database):
    engine = _engine(new_database())
    yield engine
    engine.dispose()


# -- schema comparison ------------------------------------------------------

def _reflected(engine):
    """What upstream compatibility depends on, read back from a database."""
    insp = sa.inspect(engine)
    schema = {}
    for table in insp.get_table_names():
        if table == 'alembic_version':
            continue
        schema[table] = {
            'columns': [(c['name'], c['nullable'])
                        for c in insp.get_columns(table)],
            'primary_key': tuple(
                insp.get_pk_constraint(table)['constrained_columns']),
            'unique': sorted((u['name'], tuple(u['column_names']))
                             for u in insp.get_unique_constraints(table)),
            'indexes': sorted((i['name'], tuple(i['column_names']))
                              for i in insp.get_indexes(table)
                              if not i['unique']),
            'foreign_keys': sorted(
                (fk['name'], tuple(fk['constrained_columns']),
                 fk['referred_table'], tuple(fk['referred_columns']))
                for fk in insp.get_foreign_keys(table)),
        }
    return schema


def _declared():
    """The same shape as _reflected(), from tables.metadata."""
    def names(columns):
        return tuple(c.name for c in columns)

    schema = {}
    for table in tables.metadata.sorted_tables:
        schema[table.name] = {
            'columns': [(c.name, c.nullable) for c in table.columns],
            'primary_key': names(table.primary_key),
            'unique': sorted((u.name, names(u.columns))
                             for u in table.constraints
                             if isinstance(u, sa.UniqueConstraint)),
            'indexes': sorted((i.name, names(i.columns))
                              for i in table.indexes),
            'foreign_keys': sorted(
                (fk.name, names(fk.columns), fk.referred_table.name,
                 tuple(e.column.name for e in fk.elements))
                for fk in table.foreign_key_constraints),
        }
    return schema


def _without_generated_fk_names(schema):
    """Drop FK names: unnamed ones get dialect-specific generated names."""
    return {table: {**parts, 'foreign_keys': sorted(
                fk[1:] for fk in parts['foreign_keys'])}
            for table, parts in schema.items()}


def _assert_matches_tables(engine):
    assert (_without_generated_fk_names(_reflected(engine))
            == _without_generated_fk_names(_declared()))
    reflected_fks = {fk[0] for parts in _reflected(engine).values()
                     for fk in parts['foreign_keys']}
    if engine.dialect.name != 'sqlite':  # SQLite drops constraint names
        assert 'consumers_consumer_type_id_fkey' in reflected_fks
    with engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={'compare_type': True,
                        'compare_server_default': True})
        assert compare_metadata(context, tables.metadata) == []
    insp = sa.inspect(engine)
    generation = {c['name']: c for c in insp.get_columns('consumers')}[
        'generation']
    assert str(generation['default']).strip("'") == '0'
    if backends.of(engine) is backends.mysql.BACKEND:
        for table in tables.metadata.tables:
            options = insp.get_table_options(table)
            assert options['mysql_default charset'] == 'utf8mb4', table
            assert options['mysql_engine'] == 'InnoDB', table


# -- tests ------------------------------------------------------------------

def test_upgrade_empty_database_matches_tables(engine):
    assert migration.current_revision(engine) is None
    migration.upgrade(engine)
    assert migration.current_revision(engine) == HEAD
    _assert_matches_tables(engine)


def test_upgrade_is_repeatable(engine):
    migration.upgrade(engine)
    migration.upgrade(engine)
    assert migration.current_revision(engine) == HEAD


def test_stamp(engine):
    migration.stamp(engine, 'b4ed3a175331')
    assert migration.current_revision(engine) == 'b4ed3a175331'


def _standard_rows(engine):
    with engine.connect() as conn:
        classes = conn.execute(sa.select(
            tables.resource_classes.c.id, tables.resource_classes.c.name)
        ).all()
        traits = conn.execute(sa.select(tables.traits.c.name)).scalars()
        return sorted(classes), sorted(traits)


def test_schema_upgrade_leaves_standard_rows_to_the_service(engine):
    migration.upgrade(engine)
    assert _standard_rows(engine) == ([], [])


def test_sync_standard_is_idempotent(engine):
    migration.upgrade(engine)
    with engine.begin() as conn:
        standard_sync.sync_standard(conn)
    classes, traits = _standard_rows(engine)
    assert classes == list(enumerate(os_resource_classes.STANDARDS))
    assert classes[0] == (0, 'VCPU')  # MySQL must not turn 0 into an auto id
    assert traits == sorted(os_traits.get_traits())
    with engine.begin() as conn:
        standard_sync.sync_standard(conn)
    assert _standard_rows(engine) == (classes, traits)


def test_sync_standard_fills_gaps_and_keeps_custom_rows(engine):
    migration.upgrade(engine)
    rc, trait = tables.resource_classes, tables.traits
    with engine.begin() as conn:
        conn.execute(rc.delete().where(rc.c.name == 'DISK_GB'))
        conn.execute(trait.delete().where(trait.c.name == 'HW_CPU_X86_AVX'))
        conn.execute(rc.insert().values(id=standard_sync.CUSTOM_RC_START,
                                        name='CUSTOM_GOLD'))
        conn.execute(trait.insert().values(name='CUSTOM_FAST'))
        standard_sync.sync_standard(conn)
    classes, traits = _standard_rows(engine)
    assert (os_resource_classes.STANDARDS.index('DISK_GB'), 'DISK_GB') in (
        classes)
    assert (standard_sync.CUSTOM_RC_START, 'CUSTOM_GOLD') in classes
    assert {'HW_CPU_X86_AVX', 'CUSTOM_FAST'} <= set(traits)


def test_sync_standard_concurrent_insert_race(engine, caplog):
    """A second syncer racing the first must neither fail nor duplicate."""
    migration.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(tables.resource_classes.delete())
        conn.execute(tables.traits.delete())
    errors = []

    def sync():
        # As the service syncs: on SQLite it queues for the write lock.
        with engine.begin() as conn:
            db_engine.claim_write_lock(conn)
            standard_sync.sync_standard(conn)

    def second():
        try:
            db_engine.retry_on_transient(sync)
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    caplog.set_level(logging.DEBUG, logger='placement.db')
    with engine.begin() as conn:
        standard_sync.sync_standard(conn)
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)  # let it read, then block on our uncommitted rows
    thread.join(60)
    assert not thread.is_alive() and errors == []
    if engine.dialect.name != 'sqlite':
        # It lost the race (a duplicate key) and recovered.
        assert any('concurrently' in r.message or 'Transient' in r.message
                   for r in caplog.records)
    classes, traits = _standard_rows(engine)
    assert classes == list(enumerate(os_resource_classes.STANDARDS))
    assert traits == sorted(os_traits.get_traits())


def test_four_byte_utf8_round_trip(engine):
    migration.upgrade(engine)
    name = 'rp-\N{PILE OF POO}-\N{SNOWMAN}'
    rp = tables.resource_providers
    with engine.begin() as conn:
        conn.execute(rp.insert().values(uuid=str(uuid.uuid4()), name=name))
    with engine.connect() as conn:
        assert conn.execute(sa.select(rp.c.name)).scalar() == name


def test_isolation_level(engine):
    if engine.dialect.name == 'sqlite':
        pytest.skip('SQLite transactions are always serializable')
    with engine.connect() as conn:
        assert conn.get_isolation_level() == 'READ COMMITTED'


def test_blocking_migrations(engine):
    """Data that needs online migrations stops the upgrade, as upstream."""
    migration.upgrade(engine, 'b4ed3a175331')
    rp, alloc = tables.resource_providers, tables.allocations
    with engine.begin() as conn:
        conn.execute(rp.insert().values(id=1, uuid=str(uuid.uuid4())))
    with pytest.raises(RuntimeError, match='root_provider_id'):
        migration.upgrade(engine)
    assert migration.current_revision(engine) == 'b4ed3a175331'

    with engine.begin() as conn:
        conn.execute(rp.update().values(root_provider_id=1))
        conn.execute(alloc.insert().values(
            resource_provider_id=1, consumer_id=str(uuid.uuid4()),
            resource_class_id=0, used=1))
    with pytest.raises(RuntimeError, match='consumer'):
        migration.upgrade(engine)
    # One transaction: the step that did pass is not recorded either.
    assert migration.current_revision(engine) == 'b4ed3a175331'

    with engine.begin() as conn:
        conn.execute(alloc.delete())
    migration.upgrade(engine)
    assert migration.current_revision(engine) == HEAD


# -- adoption of databases created by upstream placement ----------------------

def _upstream_migrate(url, revision, tmp_path):
    # .venv-upstream from tools/integration-venvs.sh, or
    # PLACEMENT_UPSTREAM_VENV; skipped without (failed under CI=true).
    venv = integration_venvs.upstream()
    manage = venv / 'bin' / 'placement-manage'
    conf = tmp_path / 'upstream-placement.conf'
    conf.write_text(f'[placement_database]\nconnection = {url}\n')
    # -I: never import this checkout's "placement" instead of upstream's.
    python = [venv / 'bin' / 'python', '-I']
    if revision == HEAD:
        command = python + [manage, '--config-file', conf, 'db', 'sync']
    else:
        command = python + ['-c', _UPSTREAM_TO_REVISION, conf, revision]
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def _insert_sample_data(conn):
    rp = tables.resource_providers
    conn.execute(rp.insert().values(id=1, uuid=str(uuid.uuid4()),
                                    name='compute-\N{SNOWMAN}', generation=3))
    conn.execute(rp.update().values(root_provider_id=1))
    conn.execute(tables.projects.insert().values(id=1, external_id='p'))
    conn.execute(tables.users.insert().values(id=1, external_id='u'))
    consumer = str(uuid.uuid4())
    conn.execute(tables.consumers.insert().values(
        uuid=consumer, project_id=1, user_id=1, generation=2))
    conn.execute(tables.inventories.insert().values(
        resource_provider_id=1, resource_class_id=0, total=8, reserved=0,
        min_unit=1, max_unit=8, step_size=1, allocation_ratio=16.0))
    conn.execute(tables.allocations.insert().values(
        resource_provider_id=1, consumer_id=consumer, resource_class_id=0,
        used=2))
    conn.execute(tables.traits.insert().values(name='CUSTOM_OLD'))
    conn.execute(tables.resource_classes.insert().values(
        id=standard_sync.CUSTOM_RC_START, name='CUSTOM_OLD'))


def _dump(engine):
    """Every data row of every table, as dicts."""
    meta = sa.MetaData()
    meta.reflect(engine)
    meta.remove(meta.tables['alembic_version'])
    with engine.connect() as conn:
        return {name: [dict(row._mapping)
                       for row in conn.execute(sa.select(table))]
                for name, table in meta.tables.items()}


def _contains(rows, wanted):
    return any(all(row[k] == v for k, v in wanted.items()) for row in rows)


@pytest.mark.parametrize('revision', UPSTREAM_REVISIONS)
def test_adopts_upstream_database(new_database, revision, tmp_path):
    upstream_url, fresh_url = new_database(), new_database()
    _upstream_migrate(db_engine.normalize_url(upstream_url).render_as_string(
        hide_password=False), revision, tmp_path)
    adopted, fresh = _engine(upstream_url), _engine(fresh_url)
    try:
        assert migration.current_revision(adopted) == revision
        with adopted.begin() as conn:
            _insert_sample_data(conn)
        before = _dump(adopted)

        migration.upgrade(adopted)

        assert migration.current_revision(adopted) == HEAD
        after = _dump(adopted)
        for table, rows in before.items():
            # Same values; later revisions may only add columns and, for the
            # standard resource classes and traits, rows.
            assert all(_contains(after[table], row) for row in rows), table
            if table not in ('resource_classes', 'traits'):
                assert len(after[table]) == len(rows), table
        _assert_matches_tables(adopted)
        migration.upgrade(fresh)
        # Upstream and fresh databases agree, generated FK names included.
        assert _reflected(adopted) == _reflected(fresh)
    finally:
        adopted.dispose()
        fresh.dispose()


def _leave_tables_of_a_failed_first_sync(engine):
    """What MySQL keeps of a first sync that failed half-way: some tables,
    committed one by one, and no revision."""
    with engine.begin() as conn:
        tables.resource_classes.create(conn)
        tables.resource_providers.create(conn)


def test_a_failed_first_sync_can_be_run_again(engine):
    _leave_tables_of_a_failed_first_sync(engine)
    migration.upgrade(engine)
    assert migration.current_revision(engine) == HEAD
    _assert_matches_tables(engine)


def test_tables_with_rows_and_no_revision_are_never_dropped(engine):
    _leave_tables_of_a_failed_first_sync(engine)
    with engine.begin() as conn:
        conn.execute(tables.resource_classes.insert().values(
            id=10000, name='CUSTOM_KEPT'))
    with pytest.raises(migration.LeftoverTables) as info:
        migration.upgrade(engine)
    assert 'resource_classes' in str(info.value)
    assert 'db stamp' in str(info.value)
    with engine.connect() as conn:
        assert conn.execute(sa.select(tables.resource_classes.c.name)
                            ).scalars().all() == ['CUSTOM_KEPT']
