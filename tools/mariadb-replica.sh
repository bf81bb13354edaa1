#!/usr/bin/env bash
# A private MariaDB primary with an asynchronous replica (the server's own
# binlog replication, GTID), for the integration tests
# (tests/integration/mariadb_replica.py). Everything lives under DIR and
# listens on 127.0.0.1 only; no system configuration (/etc/mysql) is read and
# the system MariaDB (3306) is left alone.
#   tools/mariadb-replica.sh start DIR    # on first use, initialize the
#       primary's data directory (DIR/primary) and copy it for the replica
#       (DIR/replica); start both; point the replica at the primary (CHANGE
#       MASTER TO ... MASTER_USE_GTID=slave_pos, START REPLICA); wait until
#       it replicates and has caught up; write DIR/env and print it
#   tools/mariadb-replica.sh status DIR   # state of both (exit 1 unless
#       both run and the replica's IO and SQL threads run)
#   tools/mariadb-replica.sh stop DIR     # stop the replica, then the
#       primary
#   tools/mariadb-replica.sh stop-replica DIR    # stop the replica's
#       mariadbd only
#   tools/mariadb-replica.sh start-replica DIR   # start the replica's
#       mariadbd only; wait until Slave_IO_Running and Slave_SQL_Running
#       are Yes
# DIR/env holds PLACEMENT_TEST_MARIADB_PRIMARY_URL,
# PLACEMENT_TEST_MARIADB_REPLICA_URL (SQLAlchemy server URLs, user root, no
# password, over TCP) and PLACEMENT_TEST_MARIADB_REPLICA_DIR (DIR).
# Ports (environment): MARIADB_REPLICA_PORT_BASE (default 14440) puts the
# primary on base+1 and the replica on base+2; each can be set alone:
# MARIADB_REPLICA_PRIMARY_PORT, MARIADB_REPLICA_REPLICA_PORT. They are fixed
# when DIR is first set up (the replica's master.info names the primary's
# port) and kept in DIR/ports; remove DIR to choose others.
# MARIADB_REPLICA_START_TIMEOUT (default 60 s) bounds `start` and
# `start-replica`, MARIADB_REPLICA_STOP_TIMEOUT (default 30 s; 15 s when a
# failed start cleans up) each server's clean shutdown before it is killed.
# A failed start prints the tail of the logs and stops what it started.
# Stopping keeps the data; the replica remembers its GTID position
# (gtid_slave_pos) and starts replicating by itself when its server starts.
# The replica is read_only (root may still write: do not) and logs in to
# the primary as user repl@127.0.0.1; both count rows read per table
# (userstat). Durability does not matter here. Packages:
# tools/integration-deps.sh (mariadb-server). Runs as root (mariadbd gets
# user=root).
set -euo pipefail

SERVERS=(primary replica)
MARIADBD=/usr/sbin/mariadbd
REPL_USER=repl
START_TIMEOUT=${MARIADB_REPLICA_START_TIMEOUT:-60}
STOP_TIMEOUT=${MARIADB_REPLICA_STOP_TIMEOUT:-30}
PROGRAM=mariadb-replica.sh
ENV_PREFIX=MARIADB_REPLICA
COMMANDS="start stop status start-replica stop-replica"
STOP_ORDER=(replica primary)
WAIT_INTERVAL=0.1
# shellcheck source-path=SCRIPTDIR source=lib/servers.sh
. "$(dirname "$0")/lib/servers.sh"

# --- Processes -------------------------------------------------------------

server_dir() { echo "$DIR/$1"; }
server_cnf() { echo "$DIR/$1/my.cnf"; }
server_sock() { echo "$DIR/$1/mysqld.sock"; }
server_pidfile() { echo "$DIR/$1/mariadbd.pid"; }
server_log() { echo "$DIR/$1/mariadbd.log"; }

server_pid() {
    live_pid "$(server_pidfile "$1")" "--defaults-file=$(server_cnf "$1")"
}

# Starts server $1's mariadbd (launch); returns once its pid file names it.
start_server() {
    local server=$1
    say "starting the $server (port ${PORT[$server]})"
    LAUNCHED+=("$server")
    launch "the $server" "$(server_pidfile "$server")" \
        "$(server_log "$server")" \
        "$MARIADBD" --defaults-file="$(server_cnf "$server")"
}

# SIGTERM (a clean shutdown: sessions are ended, the replica's threads
# stopped and its position saved), SIGKILL after $STOP_TIMEOUT seconds.
# Returns 1 if server $1 was not running.
stop_server() {
    local server=$1 pid
    pid=$(server_pid "$server") || return 1
    say "stopping the $server (pid $pid)"
    stop_pid "$pid" "the $server"
    rm -f "$(server_pidfile "$server")"
}

# --- MariaDB ---------------------------------------------------------------

sql() {
    local server=$1
    shift
    mariadb_sql "$(server_sock "$server")" "$@"
}

answers() {
    sql "$1" -e 'SELECT 1' >/dev/null 2>&1
}

# One field of the replica's SHOW REPLICA STATUS (\G output), or nothing.
replica_field() {
    local out
    out=$(sql replica --column-names -e 'SHOW REPLICA STATUS\G' \
        2>/dev/null) || return 0
    awk -v name="$1" '$1 == name ":" {
        sub(/^[^:]*: ?/, ""); print; exit }' <<< "$out"
}

replica_configured() {
    [ -n "$(replica_field Master_Port)" ]
}

replicating() {
    [ "$(replica_field Slave_IO_Running)" = Yes ] \
        && [ "$(replica_field Slave_SQL_Running)" = Yes ]
}

# The replica has applied every transaction the primary has logged.
caught_up() {
    local primary_pos replica_pos
    primary_pos=$(sql primary -e 'SELECT @@gtid_binlog_pos' 2>/dev/null) \
        || return 1
    replica_pos=$(sql replica -e 'SELECT @@gtid_slave_pos' 2>/dev/null) \
        || return 1
    [ "$primary_pos" = "$replica_pos" ]
}

write_cnf() {
    local server=$1 dir id extra
    dir=$(server_dir "$server")
    if [ "$server" = primary ]; then
        id=1
        extra="log-bin = $dir/binlog/binlog
binlog_format = ROW
sync_binlog = 0"
    else
        id=2
        # Short timeouts: a replica whose primary went away notices soon,
        # and reconnects within a second once it is back.
        extra="read_only = ON
relay-log = $dir/relay/relay-bin
slave_net_timeout = 10"
    fi
    {
        echo "# Written by tools/mariadb-replica.sh: the $server of the test" \
            "pair in $DIR."
        mariadb_base_cnf "$dir" "${PORT[$server]}"
        cat <<EOF

max_connections = 300
server_id = $id
gtid_strict_mode = ON
# Rows read per table (information_schema.TABLE_STATISTICS): the tests tell
# by it which server served the reads.
userstat = ON
$extra
EOF
    } > "$(server_cnf "$server")"
}

make_dirs() {
    local server dir
    for server in "${SERVERS[@]}"; do
        dir=$(server_dir "$server")
        mkdir -p "$dir/tmp"
    done
    mkdir -p "$(server_dir primary)/binlog" "$(server_dir replica)/relay"
}

# A fresh data directory for the primary, copied for the replica before
# either starts (MariaDB keeps no server identity in it): both begin with
# the same system tables and the primary's binary log is empty.
init_data() {
    local log=$DIR/install.log primary_data replica_data
    primary_data="$(server_dir primary)/data"
    replica_data="$(server_dir replica)/data"
    say "initializing the data directories"
    # Binary and relay logs of an earlier pair would not match fresh data.
    rm -rf "$primary_data" "$replica_data" "$(server_dir primary)/binlog" \
        "$(server_dir replica)/relay"
    mkdir -p "$primary_data" "$(server_dir primary)/binlog" \
        "$(server_dir replica)/relay"
    run_logged "$log" mariadb-install-db \
        mariadb-install-db --defaults-file="$(server_cnf primary)" \
        --user=root --auth-root-authentication-method=normal --skip-test-db
    cp -a "$primary_data" "$replica_data"
}

# Users for TCP logins from 127.0.0.1 (skip-name-resolve: 'localhost' does
# not match them): root for the tests, $REPL_USER for the replica's IO
# thread. Binlogged: the replica gets them by replication.
create_users() {
    sql primary -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
        CREATE USER IF NOT EXISTS '$REPL_USER'@'127.0.0.1';
        GRANT REPLICATION SLAVE ON *.* TO '$REPL_USER'@'127.0.0.1';" \
        || die "could not create the users on the primary"
}

# Points the replica at the primary, from the start of its binlog (the
# replica's gtid_slave_pos is empty), and starts replicating.
configure_replica() {
    say "pointing the replica at the primary (port ${PORT[primary]})"
    sql replica -e "CHANGE MASTER TO MASTER_HOST = '127.0.0.1',
            MASTER_PORT = ${PORT[primary]}, MASTER_USER = '$REPL_USER',
            MASTER_PASSWORD = '', MASTER_CONNECT_RETRY = 1,
            MASTER_HEARTBEAT_PERIOD = 1, MASTER_USE_GTID = slave_pos;
        START REPLICA;" \
        || die "could not set up replication on the replica"
}

print_logs() {
    print_log_tails "$DIR"/install.log "$DIR"/primary/mariadbd.log \
        "$DIR"/replica/mariadbd.log
    if answers replica 2>/dev/null; then
        echo "==> SHOW REPLICA STATUS <==" >&2
        sql replica --column-names -e 'SHOW REPLICA STATUS\G' >&2 \
            2>/dev/null || true
    fi
}

# --- Commands --------------------------------------------------------------

urls() {
    local server=mysql+pymysql://root@127.0.0.1
    echo "PLACEMENT_TEST_MARIADB_PRIMARY_URL=$server:${PORT[primary]}/"
    echo "PLACEMENT_TEST_MARIADB_REPLICA_URL=$server:${PORT[replica]}/"
    echo "PLACEMENT_TEST_MARIADB_REPLICA_DIR=$DIR"
}

check_tools() {
    local tool
    for tool in "$MARIADBD" /usr/bin/mariadb /usr/bin/mariadb-install-db; do
        [ -x "$tool" ] || die "$tool is missing: run tools/integration-deps.sh"
    done
    [ "$(id -u)" -eq 0 ] || die "must run as root (mariadbd gets user=root)"
    check_socket_dir
}

wait_replicating() {
    wait_for "Slave_IO_Running and Slave_SQL_Running to be Yes" replicating
}

cmd_start() {
    local primary_pid='' replica_pid='' fresh=''
    check_tools
    primary_pid=$(server_pid primary) || true
    replica_pid=$(server_pid replica) || true
    if [ -d "$(server_dir replica)/data/mysql" ]; then
        use_saved_ports
    else
        if [ -n "$primary_pid" ] || [ -n "$replica_pid" ]; then
            die "a server runs in $DIR without its data; run: $0 stop $DIR"
        fi
        choose_server_ports 14440
        fresh=yes
    fi
    check_ports_valid "${PORT[@]}"
    rm -f "$DIR/env"

    begin_start
    if [ -n "$primary_pid" ] && [ -n "$replica_pid" ]; then
        say "already running in $DIR"
    else
        local to_start=() ports=() server
        [ -n "$primary_pid" ] || to_start+=(primary)
        [ -n "$replica_pid" ] || to_start+=(replica)
        for server in "${to_start[@]}"; do
            ports+=("${PORT[$server]}")
        done
        check_ports_free "${ports[@]}"
        make_dirs
        save_ports PORT
        write_cnf primary
        write_cnf replica
        if [ -n "$fresh" ]; then
            init_data
        fi
        # Both at once: the replica's IO thread retries every second until
        # the primary answers.
        for server in "${to_start[@]}"; do
            start_server "$server"
        done
    fi
    wait_for "the primary to accept connections" answers primary
    wait_for "the replica to accept connections" answers replica
    create_users
    if ! replica_configured; then
        configure_replica
    fi
    wait_replicating
    wait_for "the replica to catch up with the primary" caught_up
    end_start
    say "primary and replica ready in $((SECONDS - BEGAN))s"
    urls | tee "$DIR/env"
}

cmd_start_replica() {
    check_tools
    load_ports || die "no replica pair in $DIR (run: $0 start $DIR)"
    server_pid primary >/dev/null \
        || die "the primary in $DIR is not running (run: $0 start $DIR)"
    [ -d "$(server_dir replica)/data/mysql" ] \
        || die "no replica in $DIR (run: $0 start $DIR)"
    begin_start
    if server_pid replica >/dev/null; then
        say "the replica is already running"
    else
        check_ports_free "${PORT[replica]}"
        write_cnf replica
        start_server replica
    fi
    wait_for "the replica to accept connections" answers replica
    replica_configured || die "the replica in $DIR has no primary" \
        "configured (run: $0 stop $DIR, then $0 start $DIR)"
    wait_replicating
    end_start
    say "replica replicating in $((SECONDS - BEGAN))s"
}

cmd_stop_replica() {
    load_ports || die "no replica pair in $DIR"
    stop_server replica || say "the replica was not running in $DIR"
}

cmd_stop() {
    if ! load_ports; then
        say "nothing was running in $DIR"
        return 0
    fi
    stop_all
}

cmd_status() {
    local pid ok=yes io sqlt lag delay
    if ! load_ports; then
        echo "no replica pair in $DIR"
        return 1
    fi
    if pid=$(server_pid primary); then
        if answers primary; then
            echo "primary port ${PORT[primary]} pid $pid: answering," \
                "gtid_binlog_pos $(sql primary -e 'SELECT @@gtid_binlog_pos')"
        else
            echo "primary port ${PORT[primary]} pid $pid: NOT answering"
            ok=
        fi
    else
        echo "primary port ${PORT[primary]}: not running"
        ok=
    fi
    if pid=$(server_pid replica); then
        if answers replica; then
            io=$(replica_field Slave_IO_Running)
            sqlt=$(replica_field Slave_SQL_Running)
            lag=$(replica_field Seconds_Behind_Master)
            delay=$(replica_field SQL_Delay)
            echo "replica port ${PORT[replica]} pid $pid: answering," \
                "Slave_IO_Running ${io:-?} Slave_SQL_Running ${sqlt:-?}," \
                "Seconds_Behind_Master ${lag:-?}, SQL_Delay ${delay:-?}," \
                "gtid_slave_pos $(sql replica -e 'SELECT @@gtid_slave_pos')"
            [ "$io" = Yes ] && [ "$sqlt" = Yes ] || ok=
        else
            echo "replica port ${PORT[replica]} pid $pid: NOT answering"
            ok=
        fi
    else
        echo "replica port ${PORT[replica]}: not running"
        ok=
    fi
    [ -n "$ok" ]
}

parse_command_line "$@"
declare -A PORT=()
"cmd_${COMMAND//-/_}"
