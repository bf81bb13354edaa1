"""placement-manage and placement-status against a real database."""
from importlib import metadata
import uuid

import pytest
import sqlalchemy as sa

from placement.cmd import manage
from placement.cmd import status
from placement.db import tables


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


def test_online_data_migrations_repair_old_data(backend, tmp_path, capsys):
    """Rows an old upstream release left behind get a root and a consumer,
    and placement-status stops complaining."""
    conf = _write_conf(tmp_path, backend.url)
    consumer = str(uuid.uuid4())
    with backend.engine.begin() as conn:
        rp_id = conn.execute(tables.resource_providers.insert().values(
            uuid=str(uuid.uuid4()), name='old', generation=0)
        ).inserted_primary_key[0]
        conn.execute(tables.allocations.insert().values(
            resource_provider_id=rp_id, consumer_id=consumer,
            resource_class_id=0, used=1))
    assert status.main(['--config-file', conf, 'upgrade', 'check']) == 2
    capsys.readouterr()

    assert manage.main(['--config-file', conf, 'db',
                        'online_data_migrations']) == 0
    out = capsys.readouterr().out
    assert 'set_root_provider_ids: 1 row(s) migrated' in out
    assert 'create_incomplete_consumers: 1 row(s) migrated' in out
    with backend.engine.connect() as conn:
        root = conn.execute(sa.select(
            tables.resource_providers.c.root_provider_id)).scalar()
        owners = conn.execute(sa.select(tables.consumers.c.uuid)).all()
    assert root == rp_id
    assert owners == [(consumer,)]
    assert status.main(['--config-file', conf, 'upgrade', 'check']) == 0
