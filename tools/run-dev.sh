#!/usr/bin/env bash
# Start placement on http://127.0.0.1:8778 with SQLite and noauth2, for local
# development. Creates .venv-run (the runtime requirements alone) and .dev/
# (config and database) on first use. Extra arguments go to placement-api,
# e.g. tools/run-dev.sh --port 9000
set -euo pipefail

cd "$(dirname "$0")/.."
. tools/venv.sh
DEV_DIR=$PWD/.dev

mkdir -p "$DEV_DIR"
if [ ! -f "$DEV_DIR/placement.conf" ]; then
    cat > "$DEV_DIR/placement.conf" <<CONF
[api]
auth_strategy = noauth2

[placement_database]
connection = sqlite:///$DEV_DIR/placement.sqlite
CONF
fi

# mysqlclient (and the note on its headers) only matters for another
# database.
if grep -Eq '^[[:space:]]*connection[[:space:]]*=[[:space:]]*sqlite' \
        "$DEV_DIR/placement.conf"; then
    SQLITE_ONLY=1 ensure_run_venv
else
    ensure_run_venv
fi

# The port placement-api will listen on: the last --port/-p before "--".
PORT=8778
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --) break ;;
        --port|-p) PORT=${args[i + 1]:-$PORT}; i=$((i + 1)) ;;
        --port=*) PORT=${args[i]#--port=} ;;
        -p?*) PORT=${args[i]#-p} ;;
    esac
done

"$RUN_VENV/bin/placement-manage" --config-file "$DEV_DIR/placement.conf" \
    db sync

cat >&2 <<WARN
################################################################################
#  WARNING: auth_strategy = noauth2 -- this server TRUSTS ANYONE.
#  Any client can claim any identity; the token "admin" is an administrator.
#  Local development only: never expose it beyond this machine.
#  Try: curl -H 'x-auth-token: admin' -H 'openstack-api-version: placement latest' \\
#            localhost:$PORT/resource_classes
################################################################################
WARN

exec "$RUN_VENV/bin/placement-api" --host 127.0.0.1 --port 8778 "$@" \
    -- --config-file "$DEV_DIR/placement.conf"
