"""A MariaDB Galera cluster for the integration tests: three nodes behind
HAProxy, started by ``tools/galera.sh start DIR`` (``.ci/run`` does it and
exports what the script writes to ``DIR/env``).

``galera`` (session fixture) is a ``Galera``: ``.url`` is HAProxy's server
URL (``PLACEMENT_TEST_GALERA_URL``), ``.node_urls`` those of the three nodes
(``PLACEMENT_TEST_GALERA_NODES``, comma-separated), node 1 first. With the
variable unset or the cluster unreachable its tests skip loudly (fail under
CI=true); a cluster that answers with fewer than 3 Synced nodes fails them.

``galera.database()`` is a context manager: a fresh database
``ptest_galera_<random>``, created through node 1 and present on every node
before it is handed out, as a ``GaleraDatabase`` (``.name``; ``.url``
through HAProxy and ``.node_urls`` per node, SQLAlchemy URL strings as
``placement_database.connection`` takes them); dropped afterwards.
``galera_database`` is a fixture doing that for one test.

Test modules import the fixtures they use, as the other helpers here are
imported::

    from galera import galera, galera_database  # noqa: F401 (fixtures)
"""
import dataclasses
import os

import pytest
import sqlalchemy as sa

from conftest import unavailable
import private_servers

URL_VARIABLE = 'PLACEMENT_TEST_GALERA_URL'
NODES_VARIABLE = 'PLACEMENT_TEST_GALERA_NODES'
NODE_COUNT = 3
START_HINT = private_servers.start_hint('galera.sh')
TESTS = 'the Galera tests'


@dataclasses.dataclass
class GaleraDatabase:
    name: str
    url: str
    node_urls: list


class Galera(private_servers.Servers):
    """The cluster at ``url`` (HAProxy) with nodes ``node_urls``."""

    KIND = 'Galera node'
    TESTS = TESTS
    START_HINT = START_HINT
    POOLED = True
    PRIMARY = 0
    DATABASE_PREFIX = 'ptest_galera_'

    def __init__(self, url, node_urls):
        super().__init__(enumerate(node_urls))
        self.url = url
        self.node_urls = list(node_urls)

    def admin_engine(self, node=0):
        """An AUTOCOMMIT engine on node ``node`` (0-based), kept for the
        session."""
        return super().admin_engine(node)

    def _label(self, node):
        return '%s %s' % (self.KIND, self.node_urls[node])

    def node_status(self, node):
        """wsrep_* status variables of node ``node`` (0-based)."""
        with self.admin_engine(node).connect() as conn:
            rows = conn.execute(sa.text('SHOW GLOBAL STATUS LIKE :pattern'),
                                {'pattern': 'wsrep_%'})
            return {name: value for name, value in rows}

    def check(self):
        """unavailable() if a node does not answer; fail unless every node
        is Synced in a cluster of NODE_COUNT."""
        problems = []
        for node, url in enumerate(self.node_urls):
            with self.reachable(node):
                status = self.node_status(node)
            state = (status.get('wsrep_cluster_size'),
                     status.get('wsrep_local_state_comment'))
            if state != (str(NODE_COUNT), 'Synced'):
                problems.append('%s: wsrep_cluster_size=%s, '
                                'wsrep_local_state_comment=%s'
                                % ((url,) + state))
        if problems:
            pytest.fail('Galera cluster not healthy (see tools/galera.sh '
                        'status DIR): ' + '; '.join(problems))

    # --- Databases ---------------------------------------------------------

    def _database(self, name):
        return GaleraDatabase(
            name, private_servers.with_database(self.url, name),
            [private_servers.with_database(url, name)
             for url in self.node_urls])

    def _wait_for_database(self, name):
        # Causal reads: each node answers once it has applied everything
        # the cluster committed before, the CREATE DATABASE included.
        for node in range(len(self.node_urls)):
            with self.admin_engine(node).connect() as conn:
                conn.exec_driver_sql('SET SESSION wsrep_sync_wait = 1')
                found = conn.execute(
                    sa.text('SELECT COUNT(*) FROM information_schema.SCHEMATA'
                            ' WHERE SCHEMA_NAME = :name'),
                    {'name': name}).scalar()
                conn.exec_driver_sql('SET SESSION wsrep_sync_wait = 0')
            assert found == 1, 'database %s missing on %s' % (
                name, self.node_urls[node])

    def _drop_database(self, name):
        # Through node 1, or another node if a test stopped it.
        error = None
        for node in range(len(self.node_urls)):
            try:
                self._execute(node, 'DROP DATABASE IF EXISTS %s' % name)
                return
            except sa.exc.DBAPIError as exc:
                error = error or exc
        raise error


def from_environment():
    """The cluster the environment names; unavailable() without one."""
    url = private_servers.environment(
        [URL_VARIABLE], TESTS, START_HINT)[URL_VARIABLE]
    nodes = [node.strip()
             for node in os.environ.get(NODES_VARIABLE, '').split(',')
             if node.strip()]
    if len(nodes) != NODE_COUNT:
        unavailable(
            '%s must list the %d Galera nodes (got %r): %s are NOT being '
            'run (%s)' % (NODES_VARIABLE, NODE_COUNT, nodes, TESTS,
                          START_HINT))
    return Galera(url, nodes)


galera, galera_database = private_servers.fixtures('galera',
                                                   from_environment)
