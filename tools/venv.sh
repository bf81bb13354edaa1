# shellcheck shell=bash
# Sourced by the tools/ scripts: make sure $VENV (default .venv) has the
# project and its test and lint requirements installed, in editable mode,
# and mysqlclient (extra "mysqlclient") where its build finds the MariaDB
# or MySQL client headers (tools/integration-deps.sh installs them);
# without, its tests skip (fail under CI=true). Installs again only when
# pyproject.toml or the extras changed. With SQLITE_ONLY=1 (callers that
# use no other database) it says nothing of missing headers.

# The pkg-config names mysqlclient's build looks for.
mysql_client_headers() {
    local name
    command -v pkg-config >/dev/null || return 1
    for name in mysqlclient mariadb libmariadb perconaserverclient; do
        pkg-config --exists "$name" && return 0
    done
    return 1
}

ensure_venv() {
    PYTHON=${PYTHON:-python3}
    VENV=${VENV:-.venv}
    local stamp="$VENV/.placement-installed"
    local extras=test,lint
    local wanted
    if mysql_client_headers; then
        extras+=,mysqlclient
    elif [ -z "${SQLITE_ONLY:-}" ]; then
        echo "No MariaDB/MySQL client headers (libmariadb-dev, pkg-config):" \
            "$VENV goes without mysqlclient" >&2
    fi
    wanted="$(cksum < pyproject.toml) $extras"

    if [ ! -x "$VENV/bin/python" ]; then
        echo "Creating $VENV" >&2
        "$PYTHON" -m venv "$VENV"
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        echo "Installing the project into $VENV" >&2
        "$VENV/bin/python" -m pip install --quiet -e ".[$extras]"
        echo "$wanted" > "$stamp"
    fi
}
