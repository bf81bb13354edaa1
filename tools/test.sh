#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: make sure MariaDB and
# PostgreSQL accept connections, install what the integration tests need
# (tools/integration-deps.sh: Apache, mod_wsgi, the MariaDB client
# headers, HAProxy, Galera, Patroni, promtool, Chromium and its driver;
# tools/integration-venvs.sh: Keystone,
# the openstack CLI and upstream placement, each in a venv), start the
# private servers they use (a Galera cluster, the PostgreSQL and MariaDB
# replica pairs, a Galera cluster on network hosts and PostgreSQL under
# Patroni, all stopped on exit), run the lint and type checks, then every
# test in .venv (created on first use) on SQLite, MariaDB and PostgreSQL.
# Each step is idempotent: a second run reuses what the first installed.
#
#   tools/test.sh                       # everything (what CI runs)
#   tools/test.sh -x tests/api          # everything set up, these tests
#   tools/test.sh --quick [PYTEST ARGS] # no set-up: pytest in .venv only
#
# Arguments go to pytest. Unreachable database servers and missing
# integration dependencies are skipped with a warning, unless CI=true,
# where they fail the run; PLACEMENT_TEST_BACKENDS=sqlite limits the
# backends.
set -euo pipefail

cd "$(dirname "$0")/.."
. tools/venv.sh

if [ "${1:-}" = --quick ]; then
    shift
    ensure_venv
    exec "$VENV/bin/python" -m pytest "$@"
fi

WAIT_SECONDS=${WAIT_SECONDS:-60}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

mariadb_ready() {
    if command -v mysqladmin >/dev/null; then
        mysqladmin --host=127.0.0.1 --user=root ping >/dev/null 2>&1
    else
        port_open 3306
    fi
}

postgresql_ready() {
    if command -v pg_isready >/dev/null; then
        pg_isready --host=127.0.0.1 --port=5432 --quiet
    else
        port_open 5432
    fi
}

start_mariadb() {
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
}

start_postgresql() {
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
}

ensure_running() {
    local name=$1
    if "${name}_ready"; then
        return 0
    fi
    echo "$name is not running; starting it" >&2
    "start_$name" || true
    for _ in $(seq "$WAIT_SECONDS"); do
        if "${name}_ready"; then
            echo "$name is ready" >&2
            return 0
        fi
        sleep 1
    done
    echo "ERROR: $name did not accept connections within ${WAIT_SECONDS}s" >&2
    return 1
}

ensure_running mariadb
ensure_running postgresql
# Apache httpd and mod_wsgi for tests/integration, the MariaDB client
# headers for mysqlclient, then the venv.
tools/integration-deps.sh
# Keystone, the openstack CLI and upstream placement (the adoption and
# swap-back tests), each in its own venv (prints its timing).
tools/integration-venvs.sh
# A private 3-node MariaDB Galera cluster behind HAProxy for
# tests/integration/galera.py, a PostgreSQL primary with a streaming hot
# standby for tests/integration/pg_replica.py and a MariaDB primary with an
# asynchronous replica for tests/integration/mariadb_replica.py, all stopped
# on exit whatever the tests' outcome.
GALERA_DIR=$(mktemp -d)
PG_REPLICA_DIR=$(mktemp -d)
MARIADB_REPLICA_DIR=$(mktemp -d)
FAULT_GALERA_DIR=$(mktemp -d)
PATRONI_DIR=$(mktemp -d)
# The postgres user runs Patroni's servers: it must enter the directory.
chmod o+x "$PATRONI_DIR"
trap 'tools/galera.sh stop "$GALERA_DIR" || true; rm -rf "$GALERA_DIR"
      tools/pg-replica.sh stop "$PG_REPLICA_DIR" || true
      rm -rf "$PG_REPLICA_DIR"
      tools/mariadb-replica.sh stop "$MARIADB_REPLICA_DIR" || true
      rm -rf "$MARIADB_REPLICA_DIR"
      tools/galera.sh stop "$FAULT_GALERA_DIR" || true
      rm -rf "$FAULT_GALERA_DIR"
      tools/patroni.sh stop "$PATRONI_DIR" || true; rm -rf "$PATRONI_DIR"' \
    EXIT
tools/galera.sh start "$GALERA_DIR"
# shellcheck source=/dev/null  # written by tools/galera.sh start
. "$GALERA_DIR/env"
export PLACEMENT_TEST_GALERA_URL PLACEMENT_TEST_GALERA_NODES
tools/pg-replica.sh start "$PG_REPLICA_DIR"
# shellcheck source=/dev/null  # written by tools/pg-replica.sh start
. "$PG_REPLICA_DIR/env"
export PLACEMENT_TEST_PG_PRIMARY_URL PLACEMENT_TEST_PG_STANDBY_URL \
    PLACEMENT_TEST_PG_REPLICA_DIR
tools/mariadb-replica.sh start "$MARIADB_REPLICA_DIR"
# shellcheck source=/dev/null  # written by tools/mariadb-replica.sh start
. "$MARIADB_REPLICA_DIR/env"
export PLACEMENT_TEST_MARIADB_PRIMARY_URL PLACEMENT_TEST_MARIADB_REPLICA_URL \
    PLACEMENT_TEST_MARIADB_REPLICA_DIR
# The scripts the fault runs use, tried on their own: a Galera cluster whose
# nodes are network hosts of their own behind a single-writer HAProxy
# (tests/integration/test_galera_netns.py) and PostgreSQL under Patroni
# (tests/integration/test_patroni_tool.py). The fault runs themselves
# (tests/faults, PLACEMENT_TEST_FAULT_RUNS=1) start and stop their own.
GALERA_PORT_BASE=14800 GALERA_NETNS_PREFIX=cig GALERA_NETWORK=10.237.1 \
    GALERA_LAYOUT=single-writer GALERA_SUSPECT_TIMEOUT=PT3S \
    GALERA_INACTIVE_TIMEOUT=PT6S GALERA_INSTALL_TIMEOUT=PT6S \
    tools/galera.sh start "$FAULT_GALERA_DIR"
export PLACEMENT_TEST_FAULT_GALERA_DIR=$FAULT_GALERA_DIR
PATRONI_PORT_BASE=14900 PATRONI_NETNS_PREFIX=cip PATRONI_NETWORK=10.237.2 \
    tools/patroni.sh start "$PATRONI_DIR"
# shellcheck source=/dev/null  # written by tools/patroni.sh start
. "$PATRONI_DIR/env"
export PLACEMENT_TEST_PATRONI_URL PLACEMENT_TEST_PATRONI_MULTIHOST_URL \
    PLACEMENT_TEST_PATRONI_NETNS PLACEMENT_TEST_PATRONI_DIR
export PLACEMENT_TEST_FAULT_RUNS=1

# Lint and type checks first: a finding fails the run.
tools/lint.sh

status=0
ensure_venv
"$VENV/bin/python" -m pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "ERROR: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
