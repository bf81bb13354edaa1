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

usage() {
    echo "usage: $0 start|stop|status DIR" >&2
    exit 2
}

die() {
    echo "galera.sh: ERROR: $*" >&2
    exit 1
}

say() {
    echo "galera.sh: $*" >&2
}

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

save_ports() {
    local n
    {
        echo "HAPROXY_PORT=$HAPROXY_PORT"
        for n in "${NODES[@]}"; do
            echo "NODE_PORT[$n]=${NODE_PORT[n]}"
            echo "GCOMM_PORT[$n]=${GCOMM_PORT[n]}"
            echo "IST_PORT[$n]=${IST_PORT[n]}"
            echo "SST_PORT[$n]=${SST_PORT[n]}"
        done
    } > "$DIR/ports"
}

load_ports() {
    [ -f "$DIR/ports" ] || return 1
    # shellcheck source=/dev/null
    . "$DIR/ports"
}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

check_ports_free() {
    local port taken=() seen=" "
    for port in $(all_ports); do
        if ! [[ $port =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] \
                || [ "$port" -gt 65535 ]; then
            die "invalid port '$port'"
        fi
        case $seen in
            *" $port "*) die "port $port is configured twice" ;;
        esac
        seen+="$port "
        if port_open "$port"; then
            taken+=("$port")
        fi
    done
    if [ "${#taken[@]}" -gt 0 ]; then
        die "port(s) ${taken[*]} on 127.0.0.1 already in use; not starting" \
            "(set GALERA_PORT_BASE or GALERA_*_PORT to choose others)"
    fi
}

# --- Processes -------------------------------------------------------------

node_dir() { echo "$DIR/node$1"; }
node_cnf() { echo "$DIR/node$1/my.cnf"; }
node_sock() { echo "$DIR/node$1/mysqld.sock"; }
node_pidfile() { echo "$DIR/node$1/mariadbd.pid"; }
node_log() { echo "$DIR/node$1/mariadbd.log"; }

# The pid in $1 if it is alive and its command line contains $2 (a path
# under DIR), so a reused pid or a zombie never counts as ours.
live_pid() {
    local pidfile=$1 marker=$2 pid
    [ -s "$pidfile" ] || return 1
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker" \
        || return 1
    echo "$pid"
}

node_pid() {
    live_pid "$(node_pidfile "$1")" "--defaults-file=$(node_cnf "$1")"
}
haproxy_pid() { live_pid "$DIR/haproxy.pid" "$DIR/haproxy.cfg"; }

# Runs "$@" in a session of its own (so a terminal's or CI's signals do not
# reach it and stop can find its helpers, e.g. the rsync SST daemon), with
# output appended to $2, its pid (that of the exec'd program) in $1.
launch() {
    local pidfile=$1 log=$2
    shift 2
    local program=$1
    rm -f "$pidfile"
    # shellcheck disable=SC2016  # $$ and $@ belong to the inner shell
    setsid bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@" \
        >> "$log" 2>&1 < /dev/null &
    for _ in $(seq 50); do
        [ -s "$pidfile" ] && return 0
        sleep 0.1
    done
    die "could not launch $program (no pid file after 5 s)"
}

# Sends SIGTERM to pid $1 (a session leader) and waits up to $STOP_TIMEOUT
# seconds, then SIGKILL; then ends what is left of its session.
stop_pid() {
    local pid=$1 what=$2 deadline=$((SECONDS + STOP_TIMEOUT))
    kill -TERM "$pid" 2>/dev/null || true
    while process_alive "$pid"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "$what (pid $pid) did not stop in ${STOP_TIMEOUT}s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.2
    done
    # Helpers it left behind (SST scripts, rsync) share its session id.
    local left=() other
    for other in $(pgrep -s "$pid" 2>/dev/null || true); do
        if process_alive "$other"; then left+=("$other"); fi
    done
    if [ "${#left[@]}" -gt 0 ]; then
        say "ending what $what left running: ${left[*]}"
        kill -KILL "${left[@]}" 2>/dev/null || true
    fi
    # Its parent (init, once `start` has exited) reaps it: wait a little so
    # that no <defunct> entry is left behind either.
    deadline=$((SECONDS + 5))
    while [ -e "/proc/$pid" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.1
    done
}

process_alive() {
    local state
    [ -r "/proc/$1/stat" ] || return 1
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# --- MariaDB ---------------------------------------------------------------

sql() {
    local n=$1
    shift
    mariadb --no-defaults --protocol=socket --socket="$(node_sock "$n")" \
        --user=root --connect-timeout=3 --batch --skip-column-names "$@"
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
    cat > "$(node_cnf "$n")" <<EOF
# Written by tools/galera.sh: node $n of the test cluster in $DIR.
[client-server]
socket = $dir/mysqld.sock
port = ${NODE_PORT[n]}

[mariadbd]
user = root
basedir = /usr
datadir = $dir/data
tmpdir = $dir/tmp
pid-file = $dir/mariadbd.pid
log-error = $dir/mariadbd.log
bind-address = 127.0.0.1
skip-name-resolve
# As the system server (/etc/mysql/my.cnf), which tests compare against.
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
max_connect_errors = 1000000
performance_schema = OFF

# Galera needs these.
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
# Small and fast on a small shared test machine; durability does not matter.
innodb_flush_log_at_trx_commit = 2
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
# No kernel AIO contexts: several servers share the machine's limit.
innodb_use_native_aio = 0

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
    local file
    for file in "$DIR"/node1/install.log "$DIR"/node*/mariadbd.log \
            "$DIR"/haproxy.log; do
        [ -s "$file" ] || continue
        echo "==> $file (last 40 lines) <==" >&2
        tail -n 40 "$file" >&2
    done
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

# Waits for "$@" (a command) until the start deadline; $1 describes it.
wait_for() {
    local what=$1
    shift
    until "$@"; do
        if [ "$SECONDS" -ge "$DEADLINE" ]; then
            die "timed out after ${START_TIMEOUT}s waiting for $what"
        fi
        check_launched_alive
        sleep 0.5
    done
}

check_launched_alive() {
    local n
    for n in "${LAUNCHED_NODES[@]}"; do
        node_pid "$n" >/dev/null || die "node $n (mariadbd) exited"
    done
    if [ -n "$LAUNCHED_HAPROXY" ] && ! haproxy_pid >/dev/null; then
        die "haproxy exited"
    fi
}

all_synced() {
    local n
    for n in "${NODES[@]}"; do
        node_synced "$n" 3 || return 1
    done
}

running_count() {
    local n count=0
    for n in "${NODES[@]}"; do
        if node_pid "$n" >/dev/null; then count=$((count + 1)); fi
    done
    if haproxy_pid >/dev/null; then count=$((count + 1)); fi
    echo "$count"
}

start_failed() {
    local status=$?
    [ -n "$STARTED" ] && return 0
    if [ "${#LAUNCHED_NODES[@]}" -gt 0 ] || [ -n "$LAUNCHED_HAPROXY" ]; then
        print_logs
        say "start failed; stopping what it started"
        # A joiner amid its state transfer ignores SIGTERM: do not wait the
        # whole STOP_TIMEOUT for it.
        STOP_TIMEOUT=${GALERA_STOP_TIMEOUT:-15}
        stop_all || true
    fi
    exit "$status"
}

cmd_start() {
    local n running
    running=$(running_count)
    if [ "$running" -eq 4 ]; then
        load_ports || die "$DIR/ports is missing but the cluster runs"
        say "already running in $DIR"
        DEADLINE=$((SECONDS + START_TIMEOUT))
        LAUNCHED_NODES=() LAUNCHED_HAPROXY=''
        wait_for "the running cluster to be Synced" all_synced
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
    # A unix socket path must fit in sun_path (108 bytes).
    [ "${#DIR}" -le 80 ] || die "DIR is too long for the nodes' sockets: $DIR"

    choose_ports
    check_ports_free
    rm -f "$DIR/env"
    save_ports
    for n in "${NODES[@]}"; do
        mkdir -p "$(node_dir "$n")/data" "$(node_dir "$n")/tmp"
        write_node_cnf "$n"
    done
    write_haproxy_cfg
    "$HAPROXY" -c -q -f "$DIR/haproxy.cfg" || die "bad $DIR/haproxy.cfg"

    STARTED='' LAUNCHED_NODES=() LAUNCHED_HAPROXY=''
    trap start_failed EXIT
    trap 'exit 130' INT TERM
    DEADLINE=$((SECONDS + START_TIMEOUT))
    local began=$SECONDS

    # Node 1: a fresh data directory, or the one a clean stop left (node 1
    # stops last, so it may bootstrap). Nodes 2 and 3 get theirs by SST/IST.
    local data1 grastate
    data1="$(node_dir 1)/data"
    grastate="$data1/grastate.dat"
    if [ ! -d "$data1/mysql" ]; then
        say "initializing node 1's data directory"
        mariadb-install-db --defaults-file="$(node_cnf 1)" --user=root \
            --auth-root-authentication-method=normal --skip-test-db \
            > "$(node_dir 1)/install.log" 2>&1 \
            || { tail -n 40 "$(node_dir 1)/install.log" >&2;
                 die "mariadb-install-db failed"; }
    elif [ -f "$grastate" ] \
            && grep -q '^safe_to_bootstrap: *0' "$grastate"; then
        die "node 1 did not stop last or cleanly ($grastate says it is not" \
            "safe to bootstrap from); remove $DIR to start afresh"
    fi

    say "bootstrapping node 1 (port ${NODE_PORT[1]})"
    LAUNCHED_NODES+=(1)
    launch "$(node_pidfile 1)" "$(node_log 1)" \
        "$MARIADBD" --defaults-file="$(node_cnf 1)" --wsrep-new-cluster
    wait_for "node 1 to be Synced" node_synced 1 1
    # TCP logins from 127.0.0.1 (skip-name-resolve: 'localhost' does not
    # match them) and the HAProxy health check's user; replicated to all.
    sql 1 -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
        CREATE USER IF NOT EXISTS '$CHECK_USER'@'127.0.0.1';"

    for n in "${NODES[@]:1}"; do
        say "starting node $n (port ${NODE_PORT[n]})"
        LAUNCHED_NODES+=("$n")
        # The joiner's rsync daemon (wsrep_sst_rsync), started by root,
        # runs as user nobody: it must be able to write the data directory
        # (mariadbd, as root, reads whatever it wrote).
        chown -R nobody: "$(node_dir "$n")/data"
        launch "$(node_pidfile "$n")" "$(node_log "$n")" \
            "$MARIADBD" --defaults-file="$(node_cnf "$n")"
        # One joiner at a time: node 1 serves one state transfer at once.
        wait_for "node $n to join and be Synced" node_synced "$n" "$n"
    done
    wait_for "all three nodes to be Synced" all_synced

    say "starting haproxy (port $HAPROXY_PORT)"
    LAUNCHED_HAPROXY=yes
    launch "$DIR/haproxy.pid" "$DIR/haproxy.log" \
        "$HAPROXY" -db -f "$DIR/haproxy.cfg"
    wait_for "haproxy to pass a query to the cluster" haproxy_answers

    STARTED=yes
    trap - EXIT INT TERM
    say "cluster ready in $((SECONDS - began))s"
    urls | tee "$DIR/env"
}

stop_all() {
    local pid n stopped=0
    if pid=$(haproxy_pid); then
        stop_pid "$pid" haproxy
        stopped=$((stopped + 1))
    fi
    rm -f "$DIR/haproxy.pid"
    # Node 1 last: it is then the one safe to bootstrap from.
    for n in 3 2 1; do
        if pid=$(node_pid "$n"); then
            say "stopping node $n (pid $pid)"
            stop_pid "$pid" "node $n"
            stopped=$((stopped + 1))
        fi
        rm -f "$(node_pidfile "$n")"
    done
    rm -f "$DIR/env"
    [ "$stopped" -gt 0 ] || say "nothing was running in $DIR"
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

[ "$#" -eq 2 ] || usage
COMMAND=$1
case $COMMAND in
    start) mkdir -p "$2" ;;
    stop|status) [ -d "$2" ] || die "no such directory: $2" ;;
    *) usage ;;
esac
DIR=$(cd "$2" && pwd)
declare -a NODE_PORT GCOMM_PORT IST_PORT SST_PORT
HAPROXY_PORT=
"cmd_$COMMAND"
