#!/usr/bin/env bash
# A private PostgreSQL primary with a streaming hot standby, for the
# integration tests (tests/integration/pg_replica.py). Everything lives under
# DIR and listens on 127.0.0.1 only; the system cluster (5432) and its
# configuration (/etc/postgresql) are left alone.
#   tools/pg-replica.sh start DIR          # initdb the primary (DIR/primary)
#                                          # on first use, start it, clone the
#                                          # standby (DIR/standby) with
#                                          # pg_basebackup -R, start it; wait
#                                          # until it streams; write DIR/env
#                                          # and print it
#   tools/pg-replica.sh status DIR         # state of both (exit 1 unless both
#                                          # run and the standby streams)
#   tools/pg-replica.sh stop DIR           # stop the standby, then the primary
#   tools/pg-replica.sh stop-standby DIR   # stop only the standby
#   tools/pg-replica.sh start-standby DIR  # start only the standby; wait
#                                          # until it streams again
# DIR/env holds PLACEMENT_TEST_PG_PRIMARY_URL, PLACEMENT_TEST_PG_STANDBY_URL
# (SQLAlchemy server URLs, user postgres, trust authentication) and
# PLACEMENT_TEST_PG_REPLICA_DIR (DIR).
# Ports (environment): PG_REPLICA_PORT_BASE (default 14400) puts the primary
# on base+1 and the standby on base+2; each can be set alone:
# PG_REPLICA_PRIMARY_PORT, PG_REPLICA_STANDBY_PORT. They are fixed when DIR is
# first set up (the standby's primary_conninfo names the primary's port) and
# kept in DIR/ports; remove DIR to choose others. PG_REPLICA_START_TIMEOUT
# (default 60 s) bounds `start` and `start-standby`, PG_REPLICA_STOP_TIMEOUT
# (default 30 s; 15 s when a failed start cleans up) each server's fast
# shutdown before it is shut down immediately, then killed. A failed start
# prints the tail of the logs and stops what it started.
# Stopping keeps the data; the standby streams from a physical replication
# slot, so the primary keeps the WAL it misses while it is stopped. Durability
# does not matter here: fsync=off. The servers run as the postgres system user
# (PostgreSQL refuses root); DIR is made traversable for it. Binaries: the
# newest /usr/lib/postgresql/*/bin (tools/integration-deps.sh installs them
# when there are none). Run as root.
set -euo pipefail

SERVERS=(primary standby)
SLOT=pgr_standby
PG_USER=postgres
START_TIMEOUT=${PG_REPLICA_START_TIMEOUT:-60}
STOP_TIMEOUT=${PG_REPLICA_STOP_TIMEOUT:-30}
PROGRAM=pg-replica.sh
ENV_PREFIX=PG_REPLICA
COMMANDS="start stop status start-standby stop-standby"
STOP_ORDER=(standby primary)
WAIT_INTERVAL=0.2
# Nothing from the caller's libpq environment may redirect our clients.
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE \
    PGSERVICE PGSERVICEFILE PGOPTIONS PGDATA PGSSLMODE PGTARGETSESSIONATTRS
# shellcheck source-path=SCRIPTDIR source=lib/servers.sh
. "$(dirname "$0")/lib/servers.sh"

# The newest version's bin directory, or nothing.
find_bin() {
    local dir
    dir=$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 \
        -path '*/bin/postgres' -printf '%h\n' 2>/dev/null | sort -V \
        | tail -n 1)
    echo "$dir"
}

# --- Processes -------------------------------------------------------------

data_dir() { echo "$DIR/$1"; }
sock_dir() { echo "$DIR/run/$1"; }
server_log() { echo "$DIR/log/$1.log"; }

# Runs "$@" as the postgres user, from a directory it may enter.
as_postgres() {
    (cd / && runuser -u "$PG_USER" -- "$@")
}

# The postmaster of server $1 (its pid file's first line, started by pg_ctl
# as "postgres -D DATADIR").
server_pid() {
    live_pid "$(data_dir "$1")/postmaster.pid" "/postgres -D $(data_dir "$1") "
}

# Lock files a crashed postmaster left; only called when server_pid says
# it is not running (a reused pid would make postgres refuse to start).
remove_stale_locks() {
    rm -f "$(data_dir "$1")/postmaster.pid" \
        "$(sock_dir "$1")/.s.PGSQL.${PORT[$1]}.lock"
}

start_server() {
    local server=$1 remaining=$((DEADLINE - SECONDS))
    [ "$remaining" -gt 0 ] || remaining=1
    remove_stale_locks "$server"
    say "starting the $server (port ${PORT[$server]})"
    LAUNCHED+=("$server")
    # pg_ctl puts the postmaster in a session of its own; -w waits until it
    # accepts connections (the standby: once it is consistent).
    as_postgres "$PG_BIN/pg_ctl" start -D "$(data_dir "$server")" \
        -l "$(server_log "$server")" -w -t "$remaining" -s >&2 \
        || die "the $server did not start"
}

# Fast shutdown (sessions are ended), then immediate, then SIGKILL.
# Returns 1 if the server was not running.
stop_server() {
    local server=$1 pid data
    data=$(data_dir "$server")
    if ! pid=$(server_pid "$server"); then
        return 1
    fi
    say "stopping the $server (pid $pid)"
    if ! as_postgres "$PG_BIN/pg_ctl" stop -D "$data" -m fast -w \
            -t "$STOP_TIMEOUT" -s >&2; then
        say "the $server did not stop in ${STOP_TIMEOUT}s; shutting it" \
            "down immediately"
        as_postgres "$PG_BIN/pg_ctl" stop -D "$data" -m immediate -w -t 10 \
            -s >&2 || true
    fi
    if process_alive "$pid"; then
        say "the $server (pid $pid) is still running; killing it"
        local children
        children=$(pgrep -P "$pid" 2>/dev/null || true)
        # shellcheck disable=SC2086  # one pid per word
        kill -KILL "$pid" $children 2>/dev/null || true
        local deadline=$((SECONDS + 5))
        while process_alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do
            sleep 0.1
        done
    fi
    # Not waiting for init to reap it: pg_ctl has seen it exit, and a
    # zombie never counts as running (live_pid).
    return 0
}

# --- PostgreSQL ------------------------------------------------------------

# Runs the SQL in $2 on server $1 over its unix socket and prints the
# unaligned, headerless result.
sql() {
    PGCONNECT_TIMEOUT=3 "$PG_BIN/psql" -X -q -A -t -w -v ON_ERROR_STOP=1 \
        -h "$(sock_dir "$1")" -p "${PORT[$1]}" -U "$PG_USER" -d postgres \
        -c "$2" 2>/dev/null
}

# What the standby's WAL receiver reports (streaming, waiting, ...), as
# seen on the primary: the walsender of the standby's slot.
replication_state() {
    sql primary "SELECT state FROM pg_stat_replication r
        JOIN pg_replication_slots s ON s.active_pid = r.pid
        WHERE s.slot_name = '$SLOT'" || true
}

primary_ready() {
    [ "$(sql primary 'SELECT pg_is_in_recovery()')" = f ]
}

standby_in_recovery() {
    [ "$(sql standby 'SELECT pg_is_in_recovery()')" = t ]
}

standby_streams() {
    standby_in_recovery && [ "$(replication_state)" = streaming ] \
        && [ "$(sql standby 'SELECT status FROM pg_stat_wal_receiver')" \
            = streaming ]
}

write_hba() {
    cat > "$(data_dir primary)/pg_hba.conf" <<EOF
# Written by tools/pg-replica.sh: trust on the socket and 127.0.0.1 only.
# TYPE  DATABASE     USER  ADDRESS       METHOD
local   all          all                 trust
local   replication  all                 trust
host    all          all   127.0.0.1/32  trust
host    replication  all   127.0.0.1/32  trust
EOF
}

# Settings both servers share (the standby gets them with the base backup).
write_common_conf() {
    cat >> "$(data_dir primary)/postgresql.conf" <<EOF

# --- Written by tools/pg-replica.sh for the test pair in $DIR ---
listen_addresses = '127.0.0.1'
max_connections = 200
# Small and fast on a small shared test machine; durability does not matter.
shared_buffers = 32MB
fsync = off
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
wal_keep_size = 64MB
hot_standby = on
hot_standby_feedback = on
# Queries on the standby that hold up replay are cancelled soon.
max_standby_streaming_delay = 5s
max_standby_archive_delay = 5s
wal_receiver_status_interval = 1s
log_line_prefix = '%m [%p] %q%u@%d '
# Per-server settings (port, socket, name), rewritten by each start.
include_if_exists = 'pg-replica.conf'
EOF
}

write_server_conf() {
    local server=$1
    cat > "$(data_dir "$server")/pg-replica.conf" <<EOF
# Written by tools/pg-replica.sh: the $server of the test pair in $DIR.
port = ${PORT[$server]}
unix_socket_directories = '$(sock_dir "$server")'
cluster_name = 'pgr_$server'
EOF
    chown "$PG_USER": "$(data_dir "$server")/pg-replica.conf"
}

make_dirs() {
    local server
    # mktemp -d makes DIR 0700: the postgres user must be able to enter it.
    chmod o+x "$DIR"
    as_postgres test -x "$DIR" \
        || die "the $PG_USER user cannot enter $DIR (check its parents)"
    mkdir -p "$DIR/run" "$DIR/log"
    chown "$PG_USER": "$DIR/log"
    chmod 0700 "$DIR/log"
    for server in "${SERVERS[@]}"; do
        mkdir -p "$(sock_dir "$server")"
        chown "$PG_USER": "$(sock_dir "$server")"
        chmod 0700 "$(sock_dir "$server")"
    done
}

# An empty data directory for server $1, the postgres user's alone.
make_data_dir() {
    local data
    data=$(data_dir "$1")
    mkdir -p "$data"
    chown "$PG_USER": "$data"
    chmod 0700 "$data"
}

init_primary() {
    say "initializing the primary's data directory"
    make_data_dir primary
    run_logged "$DIR/log/initdb.log" initdb \
        as_postgres "$PG_BIN/initdb" -D "$(data_dir primary)" -U "$PG_USER" \
        --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync --no-instructions
    write_hba
    write_common_conf
}

clone_standby() {
    say "cloning the standby from the primary"
    rm -rf "$(data_dir standby)"
    make_data_dir standby
    # A slot left by a standby whose data directory was removed.
    sql primary "SELECT pg_drop_replication_slot(slot_name)
        FROM pg_replication_slots WHERE slot_name = '$SLOT'" >/dev/null \
        || true
    # -R: standby.signal and primary_conninfo; -C -S: a physical slot, so
    # WAL the standby misses while it is stopped is kept for it.
    run_logged "$DIR/log/basebackup.log" pg_basebackup \
        as_postgres "$PG_BIN/pg_basebackup" -h 127.0.0.1 \
        -p "${PORT[primary]}" -U "$PG_USER" -D "$(data_dir standby)" -R -C \
        -S "$SLOT" -X stream -c fast --no-sync
}

print_logs() {
    print_log_tails "$DIR"/log/initdb.log "$DIR"/log/basebackup.log \
        "$DIR"/log/primary.log "$DIR"/log/standby.log
}

# --- Commands --------------------------------------------------------------

urls() {
    local server=postgresql+psycopg2://$PG_USER@127.0.0.1
    echo "PLACEMENT_TEST_PG_PRIMARY_URL=$server:${PORT[primary]}/"
    echo "PLACEMENT_TEST_PG_STANDBY_URL=$server:${PORT[standby]}/"
    echo "PLACEMENT_TEST_PG_REPLICA_DIR=$DIR"
}

check_tools() {
    [ -n "$PG_BIN" ] || die "no /usr/lib/postgresql/*/bin/postgres: run" \
        "tools/integration-deps.sh"
    local tool
    for tool in postgres initdb pg_ctl pg_basebackup psql; do
        [ -x "$PG_BIN/$tool" ] || die "$PG_BIN/$tool is missing"
    done
    [ "$(id -u)" -eq 0 ] || die "must run as root (servers run as $PG_USER)"
    id "$PG_USER" >/dev/null 2>&1 || die "no $PG_USER system user"
    check_socket_dir
}

cmd_start() {
    local primary_pid='' standby_pid=''
    check_tools
    primary_pid=$(server_pid primary) || true
    standby_pid=$(server_pid standby) || true
    if [ -n "$standby_pid" ] && [ -z "$primary_pid" ]; then
        die "the standby in $DIR runs without its primary; run: $0 stop $DIR"
    fi

    if [ -f "$(data_dir primary)/PG_VERSION" ]; then
        use_saved_ports
    else
        [ -z "$primary_pid" ] \
            || die "a primary runs in $DIR without its PG_VERSION"
        choose_server_ports 14400
    fi
    check_ports_valid "${PORT[@]}"
    rm -f "$DIR/env"

    begin_start
    if [ -n "$primary_pid" ] && [ -n "$standby_pid" ]; then
        say "already running in $DIR"
    else
        make_dirs
        if [ -z "$primary_pid" ]; then
            # The standby's port too: it starts right after.
            check_ports_free "${PORT[primary]}" "${PORT[standby]}"
            if [ ! -f "$(data_dir primary)/PG_VERSION" ]; then
                save_ports PORT
                init_primary
            fi
            write_server_conf primary
            start_server primary
        else
            check_ports_free "${PORT[standby]}"
        fi
        wait_for "the primary to accept connections" primary_ready
        if [ ! -f "$(data_dir standby)/standby.signal" ]; then
            clone_standby
        fi
        write_server_conf standby
        start_server standby
    fi
    wait_for "the standby to be in recovery" standby_in_recovery
    wait_for "the standby to stream from the primary" standby_streams
    end_start
    say "primary and standby ready in $((SECONDS - BEGAN))s"
    urls | tee "$DIR/env"
}

cmd_start_standby() {
    check_tools
    load_ports || die "no replica pair in $DIR (run: $0 start $DIR)"
    server_pid primary >/dev/null \
        || die "the primary in $DIR is not running (run: $0 start $DIR)"
    [ -f "$(data_dir standby)/standby.signal" ] \
        || die "no standby in $DIR (run: $0 start $DIR)"
    begin_start
    if server_pid standby >/dev/null; then
        say "the standby is already running"
    else
        check_ports_free "${PORT[standby]}"
        write_server_conf standby
        start_server standby
    fi
    wait_for "the standby to be in recovery" standby_in_recovery
    wait_for "the standby to stream from the primary" standby_streams
    end_start
    say "standby streaming in $((SECONDS - BEGAN))s"
}

cmd_stop_standby() {
    check_tools
    load_ports || die "no replica pair in $DIR"
    stop_server standby || say "the standby was not running in $DIR"
}

cmd_stop() {
    if [ -z "$PG_BIN" ] || ! load_ports; then
        say "nothing was running in $DIR"
        return 0
    fi
    stop_all
}

cmd_status() {
    local pid ok=yes state lag
    if [ -z "$PG_BIN" ] || ! load_ports; then
        echo "no replica pair in $DIR"
        return 1
    fi
    if pid=$(server_pid primary); then
        if primary_ready; then
            echo "primary port ${PORT[primary]} pid $pid: answering"
        else
            echo "primary port ${PORT[primary]} pid $pid: NOT answering" \
                "as a primary"
            ok=
        fi
    else
        echo "primary port ${PORT[primary]}: not running"
        ok=
    fi
    if pid=$(server_pid standby); then
        if standby_in_recovery; then
            state=$(sql standby 'SELECT status FROM pg_stat_wal_receiver') \
                || true
            lag=$(sql standby "SELECT CASE
                WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                THEN 0 ELSE round(extract(epoch FROM now()
                    - pg_last_xact_replay_timestamp())::numeric, 3) END,
                pg_get_wal_replay_pause_state()") || true
            echo "standby port ${PORT[standby]} pid $pid: in recovery," \
                "wal receiver ${state:-not running}," \
                "replay lag ${lag%%|*}s, replay ${lag#*|}"
        else
            echo "standby port ${PORT[standby]} pid $pid: NOT answering" \
                "as a standby"
            ok=
        fi
    else
        echo "standby port ${PORT[standby]}: not running"
        ok=
    fi
    state=$(replication_state)
    echo "replication (primary's view of slot $SLOT): ${state:-none}"
    [ "$state" = streaming ] || ok=
    [ -n "$ok" ]
}

parse_command_line "$@"
declare -A PORT=()
PG_BIN=$(find_bin)
"cmd_${COMMAND//-/_}"
