"""placement-manage and placement-status against a real database."""
from importlib import metadata
import shutil
import subprocess
import uuid

import prettytable
import pytest
import sqlalchemy as sa

from placement.cmd import manage
from placement.cmd import status
from placement.db import tables

import integration_venvs


def _write_conf(tmp_path, url):
    path = tmp_path / 'placement.conf'
    path.write_text('[placement_database]\nconnection = %s\n' % url)
    return str(path)


def test_version_option_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exited:
        manage.main(['--version'])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == metadata.version(
        'placement-fast')


@pytest.mark.parametrize('argv', [['--help'], ['db', '--help'],
                                  ['db', 'online_data_migrations', '--help']])
def test_usage_names_the_command(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        manage.main(argv)
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith(
        'usage: placement-manage ' + ' '.join(argv[:-1]))


def test_db_version_reports_head(backend, tmp_path, capsys):
    conf = _write_conf(tmp_path, backend.url)
    assert manage.main(['--config-file', conf, 'db', 'version']) == 0
    assert capsys.readouterr().out.strip() == 'a082b8bb98d0'


def test_db_sync_is_idempotent(backend, tmp_path):
    conf = _write_conf(tmp_path, backend.url)
    assert manage.main(['--config-file', conf, 'db', 'sync']) == 0


@pytest.mark.sqlite_only
def test_db_sync_creates_a_fresh_sqlite_database(tmp_path, capsys):
    db = tmp_path / 'fresh.db'
    conf = _write_conf(tmp_path, 'sqlite:///%s' % db)
    assert manage.main(['--config-file', conf, 'db', 'sync']) == 0
    assert manage.main(['--config-file', conf, 'db', 'version']) == 0
    assert capsys.readouterr().out.strip() == 'a082b8bb98d0'


@pytest.mark.sqlite_only
def test_bad_connection_is_one_clear_line(tmp_path, capsys):
    conf = _write_conf(tmp_path, 'nosuchdriver://x')
    assert manage.main(['--config-file', conf, 'db', 'sync']) == 1
    err = capsys.readouterr().err
    assert err.startswith('placement-manage: ')
    assert 'Traceback' not in err


def _old_rows(engine, providers=1, consumers=1):
    """Rows an old upstream release left behind: ``providers`` without a
    root, and allocations of ``consumers`` that have no consumer row (on
    two resource classes each). Returns the first provider's id."""
    rps = tables.resource_providers
    with engine.begin() as conn:
        ids = [conn.execute(rps.insert().values(
            uuid=str(uuid.uuid4()), name='old-%d' % i, generation=0)
        ).inserted_primary_key[0] for i in range(providers)]
        conn.execute(tables.allocations.insert(), [
            {'resource_provider_id': ids[0], 'consumer_id': consumer,
             'resource_class_id': rc, 'used': 1}
            for consumer in (str(uuid.uuid4()) for _ in range(consumers))
            for rc in (0, 1)])
    return ids[0]


def _migrate(conf, *args):
    return manage.main(['--config-file', conf, 'db',
                        'online_data_migrations', *args])


def _table(*rows):
    """The report's table of (name, found, completed) rows."""
    table = prettytable.PrettyTable(['Migration', 'Total Found', 'Completed'])
    for row in rows:
        table.add_row(list(row))
    return '%s\n' % table


def test_online_data_migrations_repair_old_data(backend, tmp_path, capsys):
    """Rows an old upstream release left behind get a root and a consumer,
    and placement-status stops complaining."""
    conf = _write_conf(tmp_path, backend.url)
    rp_id = _old_rows(backend.engine)
    assert status.main(['--config-file', conf, 'upgrade', 'check']) == 2
    capsys.readouterr()

    assert _migrate(conf) == 0
    assert capsys.readouterr().out == (
        'Running batches of 50 until complete\n'
        '1 rows matched query set_root_provider_ids, 1 migrated\n'
        '1 rows matched query create_incomplete_consumers, 1 migrated\n'
        + _table(('set_root_provider_ids', 1, 1),
                 ('create_incomplete_consumers', 1, 1)))
    with backend.engine.connect() as conn:
        root = conn.execute(sa.select(
            tables.resource_providers.c.root_provider_id)).scalar()
        owners = conn.execute(sa.select(tables.consumers.c.uuid)).all()
        consumer = conn.execute(sa.select(
            tables.allocations.c.consumer_id)).scalar()
    assert root == rp_id
    assert owners == [(consumer,)]
    assert status.main(['--config-file', conf, 'upgrade', 'check']) == 0


def test_online_data_migrations_run_in_batches(backend, tmp_path, capsys):
    """Without --max-count, batches of 50 until one migrates nothing; a
    batch stops once it has migrated 50 records."""
    conf = _write_conf(tmp_path, backend.url)
    _old_rows(backend.engine, providers=60, consumers=3)
    assert _migrate(conf) == 0
    assert capsys.readouterr().out == (
        'Running batches of 50 until complete\n'
        '50 rows matched query set_root_provider_ids, 50 migrated\n'
        '10 rows matched query set_root_provider_ids, 10 migrated\n'
        '3 rows matched query create_incomplete_consumers, 3 migrated\n'
        + _table(('set_root_provider_ids', 60, 60),
                 ('create_incomplete_consumers', 3, 3)))


def test_online_data_migrations_max_count(backend, tmp_path, capsys):
    """One batch of at most --max-count records; exit status 1 while
    it migrated some, 0 once there is nothing left."""
    conf = _write_conf(tmp_path, backend.url)
    _old_rows(backend.engine, providers=4, consumers=2)
    assert _migrate(conf, '--max-count', '3') == 1
    assert capsys.readouterr().out == (
        '3 rows matched query set_root_provider_ids, 3 migrated\n'
        + _table(('set_root_provider_ids', 3, 3)))
    assert _migrate(conf, '--max-count', '3') == 1
    assert capsys.readouterr().out == (
        '1 rows matched query set_root_provider_ids, 1 migrated\n'
        '2 rows matched query create_incomplete_consumers, 2 migrated\n'
        + _table(('set_root_provider_ids', 1, 1),
                 ('create_incomplete_consumers', 2, 2)))
    assert _migrate(conf, '--max-count', '3') == 0
    assert capsys.readouterr().out == _table(
        ('set_root_provider_ids', 0, 0), ('create_incomplete_consumers', 0, 0))


@pytest.mark.sqlite_only
@pytest.mark.parametrize('value', ['0', '-1', 'many'])
def test_online_data_migrations_refuse_a_bad_max_count(
        backend, tmp_path, capsys, value):
    conf = _write_conf(tmp_path, backend.url)
    assert _migrate(conf, '--max-count', value) == 127
    assert capsys.readouterr().out == (
        'Must supply a positive value for max_count\n')


def _failing(connection, conf, count):
    raise sa.exc.OperationalError('SELECT', {}, Exception('gone'))


@pytest.mark.sqlite_only
def test_online_data_migration_failure(backend, tmp_path, capsys,
                                       monkeypatch, caplog):
    """A failed migration is reported and the others still run; exit
    status 2, unless a limited run made progress (1: run it again)."""
    conf = _write_conf(tmp_path, backend.url)
    monkeypatch.setattr(manage, 'ONLINE_MIGRATIONS', (
        ('broken', _failing),) + manage.ONLINE_MIGRATIONS[1:])
    _old_rows(backend.engine, consumers=2)
    assert _migrate(conf, '--max-count', '1') == 1
    assert capsys.readouterr().out == (
        'Error attempting to run broken\n'
        '1 rows matched query create_incomplete_consumers, 1 migrated\n'
        + _table(('broken', 0, 0), ('create_incomplete_consumers', 1, 1)))
    assert 'Online data migration broken failed' in caplog.text
    assert _migrate(conf) == 2
    assert capsys.readouterr().out == (
        'Running batches of 50 until complete\n'
        'Error attempting to run broken\n'
        '1 rows matched query create_incomplete_consumers, 1 migrated\n'
        'Error attempting to run broken\n'
        + _table(('broken', 0, 0), ('create_incomplete_consumers', 1, 1))
        + 'Some migrations failed unexpectedly. Check log for details.\n')


def test_online_data_migrations_help(capsys):
    with pytest.raises(SystemExit):
        manage.main(['db', 'online_data_migrations', '--help'])
    out = ' '.join(capsys.readouterr().out.split())
    assert '[--max-count <number>]' in out
    assert '--max-count <number> Maximum number of records to migrate' in out


@pytest.mark.sqlite_only
def test_online_data_migrations_report_as_upstream(backend, tmp_path,
                                                   capsys):
    """The same report and exit status as upstream's placement-manage,
    run on a copy of the same database."""
    venv = integration_venvs.upstream()
    ours = tmp_path / 'ours.db'
    theirs = tmp_path / 'theirs.db'
    conf = _write_conf(tmp_path, 'sqlite:///%s' % ours)
    assert manage.main(['--config-file', conf, 'db', 'sync']) == 0
    engine = sa.create_engine('sqlite:///%s' % ours)
    _old_rows(engine, providers=60, consumers=3)
    # Closing the last connection leaves everything in the file itself.
    engine.dispose()
    shutil.copy(ours, theirs)
    upstream_conf = tmp_path / 'upstream.conf'
    upstream_conf.write_text(
        '[placement_database]\nconnection = sqlite:///%s\n' % theirs)
    capsys.readouterr()
    for args in ([], ['--max-count', '55'], ['--max-count', '55'], [],
                 ['--max-count', 'x']):
        status_code = _migrate(conf, *args)
        # -I: never import this checkout's "placement" instead of
        # upstream's.
        upstream = subprocess.run(
            [venv / 'bin' / 'python', '-I', venv / 'bin' / 'placement-manage',
             '--config-file', upstream_conf, 'db', 'online_data_migrations',
             *args], capture_output=True, text=True, timeout=120,
            cwd=tmp_path)
        assert capsys.readouterr().out == upstream.stdout, args
        assert status_code == upstream.returncode, args
