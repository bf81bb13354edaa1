#!/usr/bin/env bash
# A private 3-node MariaDB Galera cluster with HAProxy in front, for the
# integration tests. Everything lives under DIR and listens on 127.0.0.1
# only; no system configuration (/etc/mysql) is read and the system MariaDB
# (3306) is left alone.
#   tools/galera.sh start DIR    # bootstrap node 1, join 2 and 3, start
#                                # HAProxy; wait until all are Synced; write
#                                # DIR/env (PLACEMENT_TEST_GALERA_URL and
#                                # PLACEMENT_TEST_GALERA_NODES) and print it
#   tools/galera.sh status DIR   # cluster size and state per node (exit 1
#                                # unless all 3 are Synced and HAProxy is up)
#   tools/galera.sh stop DIR     # stop HAProxy, then nodes 3, 2, 1; wait
# Ports (environment): GALERA_PORT_BASE (default 14300) puts HAProxy on the
# base and node N's client port on base+N, its Galera ports on base+10+N
# (gcomm), base+20+N (IST) and base+30+N (rsync SST). Each can be set
# alone: GALERA_HAPROXY_PORT, GALERA_NODE<N>_PORT, GALERA_NODE<N>_GCOMM_PORT,
# GALERA_NODE<N>_IST_PORT, GALERA_NODE<N>_SST_PORT. GALERA_START_TIMEOUT
# (default 120 s) bounds `start`, GALERA_STOP_TIMEOUT (default 60 s; 15 s
# when a failed `start` cleans up) each process's clean stop before it is
# killed. A failed `start` prints the tail of the logs and stops what it
# started.
# Stopping keeps the data: nodes leave in the order 3, 2, 1, so node 1 is
# safe to bootstrap from at the next `start`. Remove DIR to start afresh.
# Packages: tools/integration-deps.sh (mariadb-server, galera-4, rsync,
# haproxy). Runs as root (mariadbd gets user=root).
set -euo pipefail

NODES=(1 2 3)
MARIADBD=/usr/sbin/mariadbd
HAPROXY=/usr/sbin/haproxy
PROVIDER=/usr/lib/galera/libgalera_smm.so
CHECK_USER=haproxy_check
START_TIMEOUT=${GALERA_START_TIMEOUT:-120}
STOP_TIMEOUT=${GALERA_STOP_TIMEOUT:-60}
PROGRAM=galera.sh
ENV_PREFIX=GALERA
COMMANDS="start stop status"
# Node 1 last: it is then the one safe to bootstrap from.
STOP_ORDER=(haproxy node3 node2 node1)
WAIT_INTERVAL=0.5
# shellcheck source-path=SCRIPTDIR source=lib/servers.sh
. "$(dirname "$0")/lib/servers.sh"

# --- Ports -----------------------------------------------------------------

choose_ports() {
    local base=${GALERA_PORT_BASE:-14300} n var
    HAPROXY_PORT=${GALERA_HAPROXY_PORT:-$base}
    for n in "${NODES[@]}"; do
        var=GALERA_NODE${n}_PORT
        NODE_PORT[n]=${!var:-$((base + n))}
        var=GALERA_NODE${n}_GCOMM_PORT
        GCOMM_PORT[n]=${!var:-$((base + 10 + n))}
        var=GALERA_NODE${n}_IST_PORT
        IST_PORT[n]=${!var:-$((base + 20 + n))}
        var=GALERA_NODE${n}_SST_PORT
        SST_PORT[n]=${!var:-$((base + 30 + n))}
    done
}

all_ports() {
    echo "$HAPROXY_PORT" "${NODE_PORT[@]}" "${GCOMM_PORT[@]}" \
        "${IST_PORT[@]}" "${SST_PORT[@]}"
}

# --- Processes -------------------------------------------------------------

node_dir() { echo "$DIR/node$1"; }
node_cnf() { echo "$DIR/node$1/my.cnf"; }
node_sock() { echo "$DIR/node$1/mysqld.sock"; }
node_pidfile() { echo "$DIR/node$1/mariadbd.pid"; }
node_log() { echo "$DIR/node$1/mariadbd.log"; }

node_pid() {
    live_pid "$(node_pidfile "$1")" "--defaults-file=$(node_cnf "$1")"
}
haproxy_pid() { live_pid "$DIR/haproxy.pid" "$DIR/haproxy.cfg"; }

# Servers are named node1, node2, node3 and haproxy.
server_pidfile() {
    case $1 in
        haproxy) echo "$DIR/haproxy.pid" ;;
        *) node_pidfile "${1#node}" ;;
    esac
}

server_pid() {
    case $1 in
        haproxy) haproxy_pid ;;
        *) node_pid "${1#node}" ;;
    esac
}

stop_server() {
    local name=$1 pid
    if pid=$(server_pid "$name"); then
        say "stopping $name (pid $pid)"
        stop_pid "$pid" "$name"
    fi
    rm -f "$(server_pidfile "$name")"
    [ -n "$pid" ]
}

# --- MariaDB ---------------------------------------------------------------

sql() {
    local n=$1
    shift
    mariadb_sql "$(node_sock "$n")" "$@"
}

# "size state ready status" of node $1, or nothing when it does not answer.
node_state() {
    local out
    out=$(sql "$1" -e "SHOW GLOBAL STATUS WHERE Variable_name IN
        ('wsrep_cluster_size', 'wsrep_local_state_comment', 'wsrep_ready',
         'wsrep_cluster_status')" 2>/dev/null) || return 0
    awk '{ v[$1] = $2 } END {
        printf "%s %s %s %s\n", v["wsrep_cluster_size"],
            v["wsrep_local_state_comment"], v["wsrep_ready"],
            v["wsrep_cluster_status"] }' <<< "$out"
}

node_synced() {
    local want=$2
    [ "$(node_state "$1")" = "$want Synced ON Primary" ]
}

write_node_cnf() {
    local n=$1 dir peers="" m options
    dir=$(node_dir "$n")
    for m in "${NODES[@]}"; do
        peers+="${peers:+,}127.0.0.1:${GCOMM_PORT[m]}"
    done
    # Longer failure-detection timeouts than the defaults: a loaded 2-core
    # machine must not make the nodes suspect one another.
    options="gmcast.listen_addr=tcp://127.0.0.1:${GCOMM_PORT[n]}"
    options+=";ist.recv_addr=127.0.0.1:${IST_PORT[n]};gcache.size=32M"
    options+=";evs.suspect_timeout=PT10S;evs.inactive_timeout=PT30S"
    options+=";evs.install_timeout=PT30S"
    {
        echo "# Written by tools/galera.sh: node $n of the test cluster" \
            "in $DIR."
        mariadb_base_cnf "$dir" "${NODE_PORT[n]}"
        cat <<EOF

# Galera needs these (and InnoDB, above).
binlog_format = ROW
innodb_autoinc_lock_mode = 2

wsrep_on = ON
wsrep_provider = $PROVIDER
wsrep_cluster_name = placement-test-galera
wsrep_cluster_address = gcomm://$peers
wsrep_node_name = node$n
wsrep_node_address = 127.0.0.1:${GCOMM_PORT[n]}
wsrep_node_incoming_address = 127.0.0.1:${NODE_PORT[n]}
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:${SST_PORT[n]}
wsrep_provider_options = "$options"
EOF
    } > "$(node_cnf "$n")"
}

write_haproxy_cfg() {
    local n
    {
        cat <<EOF
# Written by tools/galera.sh: HAProxy in front of the test cluster in $DIR.
global
    maxconn 4096

defaults
    mode tcp
    timeout connect 5s
    # Long idle times: pooled connections must not be cut.
    timeout client 1h
    timeout server 1h
    timeout check 3s
    # A connection refused by a node that has just stopped goes to another.
    retries 3
    option redispatch 1

listen galera
    bind 127.0.0.1:$HAPROXY_PORT
    balance roundrobin
    # Logs in as $CHECK_USER (no privileges) and quits cleanly, so a node
    # that stopped or does not answer the protocol is skipped.
    option mysql-check user $CHECK_USER post-41
    default-server check inter 1s fall 2 rise 1
EOF
        for n in "${NODES[@]}"; do
            echo "    server node$n 127.0.0.1:${NODE_PORT[n]}"
        done
    } > "$DIR/haproxy.cfg"
}

print_logs() {
    print_log_tails "$DIR"/node1/install.log "$DIR"/node*/mariadbd.log \
        "$DIR"/haproxy.log
}

# --- Commands --------------------------------------------------------------

urls() {
    local n nodes="" server=mysql+pymysql://root@127.0.0.1
    for n in "${NODES[@]}"; do
        nodes+="${nodes:+,}$server:${NODE_PORT[n]}/"
    done
    echo "PLACEMENT_TEST_GALERA_URL=$server:$HAPROXY_PORT/"
    echo "PLACEMENT_TEST_GALERA_NODES=$nodes"
}

haproxy_answers() {
    mariadb --no-defaults --protocol=tcp --host=127.0.0.1 \
        --port="$HAPROXY_PORT" --user=root --connect-timeout=3 \
        --batch --skip-column-names -e 'SELECT @@wsrep_node_name' \
        >/dev/null 2>&1
}

all_synced() {
    local n
    for n in "${NODES[@]}"; do
        node_synced "$n" 3 || return 1
    done
}

running_count() {
    local name count=0
    for name in "${STOP_ORDER[@]}"; do
        if server_pid "$name" >/dev/null; then count=$((count + 1)); fi
    done
    echo "$count"
}

cmd_start() {
    local n running
    running=$(running_count)
    if [ "$running" -eq 4 ]; then
        load_ports || die "$DIR/ports is missing but the cluster runs"
        say "already running in $DIR"
        begin_start
        wait_for "the running cluster to be Synced" all_synced
        end_start
        urls | tee "$DIR/env"
        return 0
    elif [ "$running" -gt 0 ]; then
        die "the cluster in $DIR is partly running; run: $0 stop $DIR"
    fi

    local tool
    for tool in "$MARIADBD" "$HAPROXY" "$PROVIDER" /usr/bin/mariadb \
            /usr/bin/mariadb-install-db /usr/bin/rsync \
            /usr/bin/wsrep_sst_rsync; do
        [ -e "$tool" ] || die "$tool is missing: run tools/integration-deps.sh"
    done
    [ "$(id -u)" -eq 0 ] || die "must run as root (mariadbd gets user=root)"
    check_socket_dir

    choose_ports
    # shellcheck disable=SC2046  # one port per word
    check_ports_valid $(all_ports)
    # shellcheck disable=SC2046
    check_ports_free $(all_ports)
    rm -f "$DIR/env"
    save_ports HAPROXY_PORT NODE_PORT GCOMM_PORT IST_PORT SST_PORT
    for n in "${NODES[@]}"; do
        mkdir -p "$(node_dir "$n")/data" "$(node_dir "$n")/tmp"
        write_node_cnf "$n"
    done
    write_haproxy_cfg
    "$HAPROXY" -c -q -f "$DIR/haproxy.cfg" || die "bad $DIR/haproxy.cfg"

    begin_start

    # Node 1: a fresh data directory, or the one a clean stop left (node 1
    # stops last, so it may bootstrap). Nodes 2 and 3 get theirs by SST/IST.
    local data1 grastate
    data1="$(node_dir 1)/data"
    grastate="$data1/grastate.dat"
    if [ ! -d "$data1/mysql" ]; then
        say "initializing node 1's data directory"
        run_logged "$(node_dir 1)/install.log" mariadb-install-db \
            mariadb-install-db --defaults-file="$(node_cnf 1)" --user=root \
            --auth-root-authentication-method=normal --skip-test-db
    elif [ -f "$grastate" ] \
            && grep -q '^safe_to_bootstrap: *0' "$grastate"; then
        die "node 1 did not stop last or cleanly ($grastate says it is not" \
            "safe to bootstrap from); remove $DIR to start afresh"
    fi

    say "bootstrapping node 1 (port ${NODE_PORT[1]})"
    LAUNCHED+=(node1)
    launch "node 1" "$(node_pidfile 1)" "$(node_log 1)" \
        "$MARIADBD" --defaults-file="$(node_cnf 1)" --wsrep-new-cluster
    wait_for "node 1 to be Synced" node_synced 1 1
    # TCP logins from 127.0.0.1 (skip-name-resolve: 'localhost' does not
    # match them) and the HAProxy health check's user; replicated to all.
    sql 1 -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
        CREATE USER IF NOT EXISTS '$CHECK_USER'@'127.0.0.1';"

    for n in "${NODES[@]:1}"; do
        say "starting node $n (port ${NODE_PORT[n]})"
        LAUNCHED+=("node$n")
        # The joiner's rsync daemon (wsrep_sst_rsync), started by root,
        # runs as user nobody: it must be able to write the data directory
        # (mariadbd, as root, reads whatever it wrote).
        chown -R nobody: "$(node_dir "$n")/data"
        launch "node $n" "$(node_pidfile "$n")" "$(node_log "$n")" \
            "$MARIADBD" --defaults-file="$(node_cnf "$n")"
        # One joiner at a time: node 1 serves one state transfer at once.
        wait_for "node $n to join and be Synced" node_synced "$n" "$n"
    done
    wait_for "all three nodes to be Synced" all_synced

    say "starting haproxy (port $HAPROXY_PORT)"
    LAUNCHED+=(haproxy)
    launch haproxy "$DIR/haproxy.pid" "$DIR/haproxy.log" \
        "$HAPROXY" -db -f "$DIR/haproxy.cfg"
    wait_for "haproxy to pass a query to the cluster" haproxy_answers

    end_start
    say "cluster ready in $((SECONDS - BEGAN))s"
    urls | tee "$DIR/env"
}

cmd_stop() {
    stop_all
}

cmd_status() {
    local n pid state ok=yes
    if ! load_ports; then
        echo "no cluster in $DIR"
        return 1
    fi
    for n in "${NODES[@]}"; do
        if pid=$(node_pid "$n"); then
            state=$(node_state "$n")
            # shellcheck disable=SC2086  # the words of the state
            set -- ${state:-? not-answering ? ?}
            printf 'node%s port %s pid %s: wsrep_cluster_size=%s' \
                "$n" "${NODE_PORT[n]}" "$pid" "$1"
            printf ' wsrep_local_state_comment=%s wsrep_ready=%s %s\n' \
                "$2" "$3" "$4"
            [ "$state" = "3 Synced ON Primary" ] || ok=
        else
            echo "node$n port ${NODE_PORT[n]}: not running"
            ok=
        fi
    done
    if pid=$(haproxy_pid); then
        if haproxy_answers; then
            echo "haproxy port $HAPROXY_PORT pid $pid: answering"
        else
            echo "haproxy port $HAPROXY_PORT pid $pid: NOT answering"
            ok=
        fi
    else
        echo "haproxy port $HAPROXY_PORT: not running"
        ok=
    fi
    [ -n "$ok" ]
}

parse_command_line "$@"
declare -a NODE_PORT GCOMM_PORT IST_PORT SST_PORT
HAPROXY_PORT=
"cmd_$COMMAND"
