"""A MariaDB server whose binary log is written as STATEMENT cannot log
InnoDB writes made at READ COMMITTED (error 1665), the isolation level
placement works at. Its sessions switch to ROW where the database user
may; where it may not, `db sync` and the service stop with one line that
says what to change, before anything is written.

On the private primary of tools/mariadb-replica.sh (it logs a binlog),
with its binlog_format set to STATEMENT for the test.
"""
import uuid

import pytest
import sqlalchemy as sa

from placement.api import app as placement_app
from placement.api import service
from placement.cmd import manage

from conftest import ApiClient
from conftest import make_conf
import gunicorn_server
from mariadb_replica import mariadb_replica  # noqa: F401 (fixtures)
from mariadb_replica import mariadb_replica_database  # noqa: F401

pytestmark = pytest.mark.integration


@pytest.fixture
def statement_binlog(mariadb_replica):  # noqa: F811
    """New sessions of the primary log statements, for the test."""
    admin = mariadb_replica.admin_engine('primary')
    with admin.connect() as conn:
        conn.exec_driver_sql("SET GLOBAL binlog_format = 'STATEMENT'")
    try:
        yield admin
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql("SET GLOBAL binlog_format = 'ROW'")


def _db_sync(tmp_path, url):
    config = tmp_path / 'placement.conf'
    gunicorn_server.write_config(config, {
        'placement_database': {'connection': url}})
    return manage.main(['--config-file', str(config), 'db', 'sync'])


def test_sessions_switch_to_row_where_the_user_may(
        statement_binlog, mariadb_replica_database, tmp_path):  # noqa: F811
    url = mariadb_replica_database.primary_url
    assert _db_sync(tmp_path, url) == 0
    conf = make_conf(url)
    api = ApiClient(placement_app.create_app(conf))
    response = api.post('/resource_providers', json={'name': 'cn1'},
                        version='1.20')
    assert response.status_code == 200, response.json


def test_a_user_who_may_not_is_refused_before_anything_is_written(
        statement_binlog, mariadb_replica_database, tmp_path,  # noqa: F811
        capsys):
    name = mariadb_replica_database.name
    user = 'ptest_%s' % uuid.uuid4().hex[:8]
    with statement_binlog.connect() as conn:
        conn.exec_driver_sql("CREATE USER '%s'@'127.0.0.1'" % user)
        conn.exec_driver_sql("GRANT ALL ON `%s`.* TO '%s'@'127.0.0.1'"
                             % (name, user))
    try:
        url = sa.engine.make_url(mariadb_replica_database.primary_url).set(
            username=user).render_as_string(hide_password=False)
        assert _db_sync(tmp_path, url) == 1
        error = capsys.readouterr().err
        assert error.startswith('placement-manage: the MySQL server logs '
                                'its binary log as STATEMENT')
        assert 'set binlog_format = ROW or MIXED' in error
        assert len(error.strip().splitlines()) == 1
        with statement_binlog.connect() as conn:
            tables = conn.exec_driver_sql(
                'SELECT COUNT(*) FROM information_schema.tables '
                "WHERE table_schema = '%s'" % name).scalar()
        assert tables == 0
        with pytest.raises(service.StartupError) as info:
            service.build_application(make_conf(url))
        assert 'binlog_format' in str(info.value)
    finally:
        with statement_binlog.connect() as conn:
            conn.exec_driver_sql("DROP USER '%s'@'127.0.0.1'" % user)
