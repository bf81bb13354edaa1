# shellcheck shell=bash
# Sourced by the tools/ scripts. Two environments, each installed in
# editable mode and again only when pyproject.toml or its extras changed:
#
#   ensure_venv      $VENV (default .venv): the project with its test and
#                    lint requirements, for tools/test.sh and tools/lint.sh;
#   ensure_run_venv  $RUN_VENV (default .venv-run): the project with its
#                    runtime requirements alone, for tools/run-dev.sh.
#
# Each gets mysqlclient (extra "mysqlclient") where its build finds the
# MariaDB or MySQL client headers (tools/integration-deps.sh installs
# them); without, its tests skip (fail under CI=true). With SQLITE_ONLY=1
# (callers that use no other database) the run venv goes without it and
# nothing is said of missing headers.

# The pkg-config names mysqlclient's build looks for.
mysql_client_headers() {
    local name
    command -v pkg-config >/dev/null || return 1
    for name in mysqlclient mariadb libmariadb perconaserverclient; do
        pkg-config --exists "$name" && return 0
    done
    return 1
}

# The extras $1 (comma-separated, may be empty) plus mysqlclient when its
# headers are there.
with_mysqlclient() {
    local extras=$1
    if mysql_client_headers; then
        extras+=${extras:+,}mysqlclient
    elif [ -z "${SQLITE_ONLY:-}" ]; then
        echo "No MariaDB/MySQL client headers (libmariadb-dev, pkg-config):" \
            "the venv goes without mysqlclient" >&2
    fi
    echo "$extras"
}

# install_project VENV EXTRAS: create VENV if needed, install the project
# with EXTRAS (none when empty) when they or pyproject.toml changed.
install_project() {
    local venv=$1 extras=$2
    local stamp="$venv/.placement-installed"
    local target=.
    local wanted
    [ -n "$extras" ] && target=".[$extras]"
    wanted="$(cksum < pyproject.toml) $extras"

    if [ ! -x "$venv/bin/python" ]; then
        echo "Creating $venv" >&2
        "${PYTHON:-python3}" -m venv "$venv"
    fi
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        echo "Installing the project into $venv" >&2
        "$venv/bin/python" -m pip install --quiet -e "$target"
        echo "$wanted" > "$stamp"
    fi
}

ensure_venv() {
    VENV=${VENV:-.venv}
    install_project "$VENV" "$(with_mysqlclient test,lint)"
}

ensure_run_venv() {
    RUN_VENV=${RUN_VENV:-.venv-run}
    local extras=
    if [ -z "${SQLITE_ONLY:-}" ]; then
        extras=$(with_mysqlclient "")
    fi
    install_project "$RUN_VENV" "$extras"
}
