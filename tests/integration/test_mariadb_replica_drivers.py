"""The lag of a real MariaDB replica (tools/mariadb-replica.sh), measured
through each MySQL driver: what SHOW REPLICA STATUS and MASTER_GTID_WAIT
answer reads the same through PyMySQL and mysqlclient.
"""
import pytest

from placement.db import engine as db_engine
from placement.db import replica as replica_db

from conftest import make_conf
from conftest import with_driver
from mariadb_replica import mariadb_replica  # noqa: F401 (fixtures)
from mariadb_replica import mariadb_replica_database  # noqa: F401

pytestmark = pytest.mark.integration


def test_lag_through_each_driver(mysql_driver, mariadb_replica,
                                 mariadb_replica_database):
    primary, replica = (
        db_engine.create_engine(make_conf(with_driver(url, mysql_driver)))
        for url in (mariadb_replica_database.primary_url,
                    mariadb_replica_database.replica_url))
    try:
        with replica.connect() as conn:
            assert replica_db.measure_lag(conn, primary, bound=5) < 5
        # Undone by the database fixture's end.
        mariadb_replica.stop_sql_thread()
        with replica.connect() as conn, pytest.raises(
                replica_db.ReplicaUnusable, match='not replicating'):
            replica_db.measure_lag(conn, primary)
    finally:
        primary.dispose()
        replica.dispose()
