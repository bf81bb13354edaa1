#!/usr/bin/env bash
# Install what the integration tests (tests/integration, marker
# `integration`) need beyond the project's Python requirements: Debian's
# Apache httpd with its development files, mod_wsgi built for the test
# venv's Python, the MariaDB client headers mysqlclient builds against
# (its tests are not only integration ones), and what tools/galera.sh runs
# its MariaDB Galera cluster with (mariadb-server, galera-4, rsync for SST,
# haproxy), the PostgreSQL server tools/pg-replica.sh runs (postgresql,
# when no version is installed), Patroni and etcd for tools/patroni.sh, and
# promtool (prometheus) for the tests of etc/prometheus/'s rules, and
# Chromium with its WebDriver (chromium, chromium-driver) for the browser
# test of the capacity page (GET /x-capacity).
# Idempotent: each step runs only when its result is missing (apt is not
# called at all when every package is installed, so a running system MariaDB
# or PostgreSQL is never upgraded or restarted), and the package lists are
# refreshed only when apt cannot find or fetch a package.
#   tools/integration-deps.sh            # into $VENV (default .venv)
#   VENV=/path/to/venv tools/integration-deps.sh
# Needs root for apt-get (CI runs as root).
set -euo pipefail

cd "$(dirname "$0")/.."
. tools/venv.sh

APT_PACKAGES=(apache2 apache2-dev)
# The client headers mysqlclient (mysql+mysqldb://) builds against: with
# them, ensure_venv (tools/venv.sh) installs it into the venv.
APT_PACKAGES+=(libmariadb-dev pkg-config)
# tools/galera.sh: three mariadbd with the Galera provider, rsync for state
# transfers, HAProxy in front.
APT_PACKAGES+=(mariadb-server galera-4 rsync haproxy)
# tools/patroni.sh (the fault tests): PostgreSQL under Patroni, with etcd
# holding the leader key.
APT_PACKAGES+=(patroni etcd-server)
# promtool, for the tests of the Prometheus rules (etc/prometheus/). The
# package also brings a Prometheus server, which systemd starts where it
# runs; the tests use promtool alone.
APT_PACKAGES+=(prometheus)
# The capacity page's browser test: headless Chromium driven by Selenium
# (the test extra) through chromedriver.
APT_PACKAGES+=(chromium chromium-driver)
# tools/pg-replica.sh: any installed PostgreSQL server's binaries will do
# (/usr/lib/postgresql/*/bin: initdb, pg_ctl, postgres, pg_basebackup), so
# the package is only asked for when there are none; a system cluster that
# runs already is then left alone.
if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
    APT_PACKAGES+=(postgresql)
fi

missing_packages() {
    local package
    for package in "${APT_PACKAGES[@]}"; do
        if [ "$(dpkg-query -W -f='${db:Status-Status}' "$package" \
                2>/dev/null)" != installed ]; then
            echo "$package"
        fi
    done
}

apt_knows() {
    local package
    for package in "$@"; do
        apt-cache show "$package" >/dev/null 2>&1 || return 1
    done
}

apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y \
        --no-install-recommends "$@"
}

install_packages() {
    # shellcheck disable=SC2046  # one package name per word
    set -- $(missing_packages)
    [ "$#" -gt 0 ] || return 0
    local refreshed=
    if ! apt_knows "$@"; then
        echo "Refreshing the apt package lists" >&2
        apt-get update
        refreshed=yes
    fi
    echo "Installing $*" >&2
    if ! apt_install "$@"; then
        # Stale lists name package versions the mirror no longer has.
        [ -z "$refreshed" ] || return 1
        echo "Refreshing the apt package lists and retrying" >&2
        apt-get update
        apt_install "$@"
    fi
}

install_mod_wsgi() {
    if [ -x "$VENV/bin/mod_wsgi-express" ]; then
        return 0
    fi
    echo "Building mod_wsgi for $VENV" >&2
    # apxs from apache2-dev tells the build where Apache's headers are.
    "$VENV/bin/python" -m pip install --quiet mod_wsgi
}

install_packages
ensure_venv
install_mod_wsgi
