"""A database upstream's placement-manage created is adopted as it is: its
schema passes the start's check (placement.db.migration.check_schema),
placement-status, and the health check, without a db sync; the revisions
are upstream's."""
import subprocess

import pytest

from placement.api import app as placement_app
from placement.cmd import status
from placement.db import engine as db_engine
from placement.db import migration

from conftest import ApiClient
from conftest import make_conf
import wsgi_process

pytestmark = pytest.mark.integration


def test_an_upstream_database_is_adopted_as_it_is(backend, scratch_database,
                                                  tmp_path, capsys):
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = %s\n'
                      % scratch_database)
    synced = subprocess.run(
        [str(wsgi_process.upstream_bin('placement-manage')), '--config-file',
         str(config), 'db', 'sync'], capture_output=True, text=True,
        timeout=300, cwd=tmp_path)
    assert synced.returncode == 0, synced.stderr
    engine = db_engine.create_engine(make_conf(scratch_database))
    try:
        migration.check_schema(engine)
        assert migration.current_revision(engine) == migration.head()
        api = ApiClient(placement_app.create_app(make_conf(scratch_database)))
        assert api.get('/healthcheck').json == {'status': 'ok',
                                                'database': 'ok'}
    finally:
        engine.dispose()
    assert status.main(['--config-file', str(config), 'upgrade',
                        'check']) == 0
    assert capsys.readouterr().err == ''
