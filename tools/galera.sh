#!/usr/bin/env bash
# A private 3-node MariaDB Galera cluster with HAProxy in front, for the
# integration and fault tests. Everything lives under DIR; no system
# configuration (/etc/mysql) is read and the system MariaDB (3306) is left
# alone. By default every node listens on 127.0.0.1; with GALERA_NETNS_PREFIX
# each runs on a "host" of its own (tools/netns.sh), which a fault test can
# freeze, kill or cut off.
#   tools/galera.sh start DIR    # bootstrap node 1, join 2 and 3, start
#                                # HAProxy; wait until all are Synced; write
#                                # DIR/env and print it (below)
#   tools/galera.sh start-node DIR N  # start node N again after it was
#                                # killed or stopped: it joins the running
#                                # cluster (IST/SST from a donor; node 1 too,
#                                # it does not bootstrap); wait until Synced
#   tools/galera.sh status DIR   # cluster size and state per node (exit 1
#                                # unless all 3 are Synced and HAProxy is up)
#   tools/galera.sh stop DIR     # stop HAProxy, then nodes 3, 2, 1 (a frozen
#                                # node is continued, a cut one healed
#                                # first); wait; remove the namespaces
# DIR/env: PLACEMENT_TEST_GALERA_URL (HAProxy), PLACEMENT_TEST_GALERA_NODES
# (the nodes' URLs, comma-separated, node 1 first), PLACEMENT_TEST_GALERA_NETNS
# (the nodes' namespaces, space-separated, node 1 first; empty without) and
# PLACEMENT_TEST_GALERA_LAYOUT.
# Ports (environment): GALERA_PORT_BASE (default 14300) puts HAProxy on the
# base and node N's client port on base+N, its Galera ports on base+10+N
# (gcomm), base+20+N (IST) and base+30+N (rsync SST). Each can be set
# alone: GALERA_HAPROXY_PORT, GALERA_NODE<N>_PORT, GALERA_NODE<N>_GCOMM_PORT,
# GALERA_NODE<N>_IST_PORT, GALERA_NODE<N>_SST_PORT. GALERA_START_TIMEOUT
# (default 120 s) bounds `start` and `start-node`, GALERA_STOP_TIMEOUT
# (default 60 s; 15 s when a failed start cleans up) each process's clean
# stop before it is killed. A failed start prints the tail of the logs and
# stops what it started.
# Hosts (environment, both or neither): GALERA_NETNS_PREFIX=P (at most 8
# characters) and GALERA_NETWORK=A.B.C run node N in network namespace P<N>
# at A.B.C.(10+N), on the bridge P-br (A.B.C.1, in the root namespace, where
# HAProxy and the service run; the nodes see their clients come from there).
# Only the node's processes (mariadbd and the SST helpers it starts) run in
# its namespace: `kill -STOP $(ip netns pids P<N>)` freezes exactly that
# node, `tools/netns.sh cut P<N>` partitions it. Unix sockets in DIR still
# serve admin SQL.
# HAProxy (GALERA_LAYOUT): every-node (default: round-robin over the three)
# or single-writer (every connection to node 1; 2 and 3 are `backup`, as
# kolla-ansible has it). Either way the sessions of a server it marks down
# are closed, so a client of a dead node sees a closed connection, not
# silence; idle ones are kept for an hour.
# Failure detection: GALERA_SUSPECT_TIMEOUT (default PT10S),
# GALERA_INACTIVE_TIMEOUT (PT30S), GALERA_INSTALL_TIMEOUT (PT30S), Galera's
# evs.* timeouts: long ones so that a loaded machine does not make the nodes
# suspect one another, short ones (e.g. PT3S/PT6S/PT6S) so that a frozen or
# cut node is evicted within seconds and the others keep committing.
# Settings are fixed at `start` (DIR/ports); the other commands use them.
# Stopping keeps the data: nodes leave in the order 3, 2, 1, so node 1 is
# safe to bootstrap from at the next `start`. Remove DIR to start afresh.
# Packages: tools/integration-deps.sh (mariadb-server, galera-4, rsync,
# haproxy; iproute2 for the namespaces). Runs as root (mariadbd gets
# user=root).
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
COMMANDS="start start-node stop status"
NETNS_TOOL="$(dirname "$0")/netns.sh"
# Node 1 last: it is then the one safe to bootstrap from.
STOP_ORDER=(haproxy node3 node2 node1)
WAIT_INTERVAL=0.5
# How long `stop` waits for frozen or cut-off nodes it woke to rejoin.
REJOIN_TIMEOUT=30
# shellcheck source-path=SCRIPTDIR source=lib/servers.sh
. "$(dirname "$0")/lib/servers.sh"

usage() {
    echo "usage: $0 start|stop|status DIR" >&2
    echo "       $0 start-node DIR N" >&2
    exit 2
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

# The hosts, the layout and the timeouts, from the environment (`start`; the
# other commands read what it saved in DIR/ports).
choose_settings() {
    NETNS_PREFIX=${GALERA_NETNS_PREFIX:-}
    NETWORK=${GALERA_NETWORK:-}
    LAYOUT=${GALERA_LAYOUT:-every-node}
    SUSPECT_TIMEOUT=${GALERA_SUSPECT_TIMEOUT:-PT10S}
    INACTIVE_TIMEOUT=${GALERA_INACTIVE_TIMEOUT:-PT30S}
    INSTALL_TIMEOUT=${GALERA_INSTALL_TIMEOUT:-PT30S}
    if [ -n "$NETNS_PREFIX" ] || [ -n "$NETWORK" ]; then
        if [ -z "$NETNS_PREFIX" ] || [ -z "$NETWORK" ]; then
            die "set both GALERA_NETNS_PREFIX and GALERA_NETWORK, or neither"
        fi
        # The bridge's name (P-br) must fit in 11 characters.
        [[ $NETNS_PREFIX =~ ^[a-z][a-z0-9]{0,7}$ ]] \
            || die "GALERA_NETNS_PREFIX=$NETNS_PREFIX: want 1 to 8 lower-case" \
                "letters and digits, a letter first"
        local octet='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
        [[ $NETWORK =~ ^$octet\.$octet\.$octet$ ]] \
            || die "GALERA_NETWORK=$NETWORK: want the first three numbers of" \
                "a /24 network (e.g. 10.232.1)"
    fi
    case $LAYOUT in
        every-node | single-writer) ;;
        *) die "GALERA_LAYOUT=$LAYOUT: want every-node or single-writer" ;;
    esac
    local timeout
    for timeout in "$SUSPECT_TIMEOUT" "$INACTIVE_TIMEOUT" "$INSTALL_TIMEOUT"; do
        [[ $timeout =~ ^PT[0-9]+(\.[0-9]+)?S$ ]] \
            || die "Galera timeout '$timeout': want an ISO 8601 duration in" \
                "seconds, e.g. PT3S"
    done
}

all_ports() {
    echo "$HAPROXY_PORT" "${NODE_PORT[@]}" "${GCOMM_PORT[@]}" \
        "${IST_PORT[@]}" "${SST_PORT[@]}"
}

# --- Hosts -----------------------------------------------------------------

bridge() { echo "$NETNS_PREFIX-br"; }

# Node $1's namespace, or nothing when the nodes share the root namespace.
node_netns() {
    [ -z "$NETNS_PREFIX" ] || echo "$NETNS_PREFIX$1"
}

node_addr() {
    if [ -n "$NETWORK" ]; then
        echo "$NETWORK.$((10 + $1))"
    else
        echo 127.0.0.1
    fi
}

# Where the nodes see HAProxy and the service connect from.
client_addr() {
    if [ -n "$NETWORK" ]; then echo "$NETWORK.1"; else echo 127.0.0.1; fi
}

all_netns() {
    local n
    for n in "${NODES[@]}"; do node_netns "$n"; done
}

# The processes in node $1's namespace (none without one).
netns_pids() {
    local netns
    netns=$(node_netns "$1")
    [ -z "$netns" ] || ip netns pids "$netns" 2>/dev/null || true
}

# The bridge and a namespace per node; refused if another cluster (or
# anything else) uses them or the network.
hosts_up() {
    local n netns route
    for n in "${NODES[@]}"; do
        [ -z "$(netns_pids "$n")" ] \
            || die "namespace $(node_netns "$n") has processes running in it" \
                "(another cluster?); not starting"
    done
    route=$(ip -o route show to "$NETWORK.0/24" 2>/dev/null || true)
    case $route in
        "" | *" dev $(bridge) "*) ;;
        *) die "network $NETWORK.0/24 is already routed ($route); set" \
               "GALERA_NETWORK to another" ;;
    esac
    "$NETNS_TOOL" up "$(bridge)" "$(client_addr)"
    for n in "${NODES[@]}"; do
        netns=$(node_netns "$n")
        "$NETNS_TOOL" host "$(bridge)" "$netns" "$(node_addr "$n")"
    done
}

hosts_down() {
    local n pids
    for n in "${NODES[@]}"; do
        mapfile -t pids < <(netns_pids "$n")
        if [ "${#pids[@]}" -gt 0 ]; then
            say "ending what is left in $(node_netns "$n"): ${pids[*]}"
            kill -KILL "${pids[@]}" 2>/dev/null || true
        fi
    done
    # shellcheck disable=SC2046  # one name per word
    "$NETNS_TOOL" down "$(bridge)" $(all_netns)
}

# Undo a fault on node $1 so that it can be stopped or started: its link up
# again, its processes (a frozen mariadbd, its helpers) continued. Returns 1
# if there was none.
wake_node() {
    local n=$1 pid pids netns faulted=1
    netns=$(node_netns "$n")
    mapfile -t pids < <(netns_pids "$n")
    if pid=$(node_pid "$n"); then
        mapfile -t -O "${#pids[@]}" pids < <(echo "$pid"; pgrep -s "$pid")
    fi
    if [ -n "$netns" ] && ! ip -o link show "vh-$netns" 2>/dev/null \
            | grep -q '<[^>]*,UP[,>]'; then
        say "healing node $n's link"
        "$NETNS_TOOL" heal "$netns" 2>/dev/null || true
        faulted=0
    fi
    for pid in "${pids[@]}"; do
        if [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)" = T ]
        then
            say "continuing node $n's frozen process $pid"
            kill -CONT "$pid" 2>/dev/null || true
            faulted=0
        fi
    done
    return "$faulted"
}

# Whether every node that runs is back in a Primary component, Synced.
running_rejoined() {
    local n
    for n in "${NODES[@]}"; do
        if node_pid "$n" >/dev/null; then
            node_rejoined "$n" || return 1
        fi
    done
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
    stop_by_pidfile "$1"
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
    local n=$1 dir peers="" m options addr
    dir=$(node_dir "$n")
    addr=$(node_addr "$n")
    for m in "${NODES[@]}"; do
        peers+="${peers:+,}$(node_addr "$m"):${GCOMM_PORT[m]}"
    done
    # By default longer failure-detection timeouts than Galera's: a loaded
    # 2-core machine must not make the nodes suspect one another.
    options="gmcast.listen_addr=tcp://$addr:${GCOMM_PORT[n]}"
    options+=";ist.recv_addr=$addr:${IST_PORT[n]};gcache.size=32M"
    options+=";evs.suspect_timeout=$SUSPECT_TIMEOUT"
    options+=";evs.inactive_timeout=$INACTIVE_TIMEOUT"
    options+=";evs.install_timeout=$INSTALL_TIMEOUT"
    {
        echo "# Written by tools/galera.sh: node $n of the test cluster" \
            "in $DIR."
        mariadb_base_cnf "$dir" "${NODE_PORT[n]}"
        if [ "$addr" != 127.0.0.1 ]; then
            echo "# The node's own address (the last one counts)."
            echo "bind-address = $addr"
        fi
        cat <<EOF

# Galera needs these (and InnoDB, above).
binlog_format = ROW
innodb_autoinc_lock_mode = 2

wsrep_on = ON
wsrep_provider = $PROVIDER
wsrep_cluster_name = placement-test-galera
wsrep_cluster_address = gcomm://$peers
wsrep_node_name = node$n
wsrep_node_address = $addr:${GCOMM_PORT[n]}
wsrep_node_incoming_address = $addr:${NODE_PORT[n]}
wsrep_sst_method = rsync
wsrep_sst_receive_address = $addr:${SST_PORT[n]}
wsrep_provider_options = "$options"
EOF
    } > "$(node_cnf "$n")"
}

# --- HAProxy ---------------------------------------------------------------

hex() {
    printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'
}

# A MySQL packet: 3-byte little-endian payload length, sequence id $1,
# payload $2 (hex).
packet() {
    local length=$((${#2} / 2))
    printf '%02x%02x%02x%02x%s' $((length & 255)) $((length >> 8 & 255)) \
        $((length >> 16)) "$1" "$2"
}

# What the health check sends, at once (the server reads it in turn): the
# handshake response (4.1 protocol, no password) of $CHECK_USER, the query,
# COM_QUIT (the server then closes: a wrong answer fails at once).
check_request() {
    # Capabilities PROTOCOL_41 | SECURE_CONNECTION, max packet 16 MB,
    # utf8, 23 bytes reserved, the user, an empty auth response.
    packet 1 "008200000000000121$(printf '0%.0s' {1..46})$(hex "$CHECK_USER")0000"
    packet 0 "03$(hex "SHOW GLOBAL STATUS LIKE 'wsrep_local_state_comment'")"
    packet 0 01
}

# The result row: two length-prefixed strings.
check_answer() {
    local name=wsrep_local_state_comment value=Synced
    printf '%02x%s%02x%s' "${#name}" "$(hex "$name")" "${#value}" \
        "$(hex "$value")"
}

write_haproxy_cfg() {
    local n backup
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
    # Layout $LAYOUT.
    balance roundrobin
    # Logs in as $CHECK_USER (no privileges), asks for the node's state and
    # quits: a node that stopped, does not answer or is not Synced (cut off
    # from the others, in a non-Primary component, joining, donating) is
    # skipped, as kolla-ansible's clustercheck would have it.
    option tcp-check
    tcp-check connect
    tcp-check send-binary $(check_request)
    tcp-check expect binary $(check_answer)
    # The sessions of a node marked down are closed: its clients see their
    # connection end at once instead of waiting on a dead or cut-off node.
    default-server check inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
EOF
        for n in "${NODES[@]}"; do
            backup=
            # Node 1 takes every connection; the first backup up takes
            # them all while node 1 is down.
            if [ "$LAYOUT" = single-writer ] && [ "$n" != 1 ]; then
                backup=" backup"
            fi
            echo "    server node$n $(node_addr "$n"):${NODE_PORT[n]}$backup"
        done
    } > "$DIR/haproxy.cfg"
}

print_logs() {
    print_log_tails "$DIR"/node1/install.log "$DIR"/node*/mariadbd.log \
        "$DIR"/haproxy.log
}

# --- Commands --------------------------------------------------------------

urls() {
    local n nodes="" server=mysql+pymysql://root@ netns
    for n in "${NODES[@]}"; do
        nodes+="${nodes:+,}$server$(node_addr "$n"):${NODE_PORT[n]}/"
    done
    netns=$(all_netns | paste -sd ' ')
    echo "PLACEMENT_TEST_GALERA_URL=${server}127.0.0.1:$HAPROXY_PORT/"
    echo "PLACEMENT_TEST_GALERA_NODES=$nodes"
    echo "PLACEMENT_TEST_GALERA_NETNS='$netns'"
    echo "PLACEMENT_TEST_GALERA_LAYOUT=$LAYOUT"
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
    choose_settings
    # shellcheck disable=SC2046  # one port per word
    check_ports_valid $(all_ports)
    if [ -n "$NETNS_PREFIX" ]; then
        # The nodes' ports are in their namespaces, only HAProxy's here.
        check_ports_free "$HAPROXY_PORT"
    else
        # shellcheck disable=SC2046
        check_ports_free $(all_ports)
    fi
    rm -f "$DIR/env"
    # With the ports, what the other commands must know of this start.
    save_ports HAPROXY_PORT NODE_PORT GCOMM_PORT IST_PORT SST_PORT \
        NETNS_PREFIX NETWORK LAYOUT
    for n in "${NODES[@]}"; do
        mkdir -p "$(node_dir "$n")/data" "$(node_dir "$n")/tmp"
        write_node_cnf "$n"
    done
    write_haproxy_cfg
    "$HAPROXY" -c -q -f "$DIR/haproxy.cfg" || die "bad $DIR/haproxy.cfg"

    begin_start
    if [ -n "$NETNS_PREFIX" ]; then
        say "making hosts $(all_netns | paste -sd ' ') on bridge $(bridge)" \
            "($NETWORK.0/24)"
        trap start_failed_with_hosts EXIT
        hosts_up
    fi

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

    say "bootstrapping node 1 ($(node_addr 1) port ${NODE_PORT[1]})"
    LAUNCHED+=(node1)
    launch_node 1 --wsrep-new-cluster
    wait_for "node 1 to be Synced" node_synced 1 1
    # TCP logins from where HAProxy and the service connect (skip-name-
    # resolve: 'localhost' does not match them) and the HAProxy health
    # check's user; replicated to all.
    local client
    client=$(client_addr)
    sql 1 -e "CREATE USER IF NOT EXISTS 'root'@'$client';
        GRANT ALL PRIVILEGES ON *.* TO 'root'@'$client' WITH GRANT OPTION;
        CREATE USER IF NOT EXISTS '$CHECK_USER'@'$client';"

    for n in "${NODES[@]:1}"; do
        say "starting node $n ($(node_addr "$n") port ${NODE_PORT[n]})"
        LAUNCHED+=("node$n")
        launch_node "$n"
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

# A failed start also removes the hosts it made. start_failed (lib/
# servers.sh) ends with an exit, hence the subshell, which sees the status.
start_failed_with_hosts() {
    local status=$?
    [ -n "$STARTED" ] && return 0
    (exit "$status") || (start_failed) || true
    hosts_down
    exit "$status"
}

# Node $1's mariadbd (with the options that follow), in its namespace if it
# has one. `ip netns exec` execs it: the pid launch records is mariadbd's.
launch_node() {
    local n=$1 netns
    shift
    local command=("$MARIADBD" --defaults-file="$(node_cnf "$n")" "$@")
    netns=$(node_netns "$n")
    if [ -n "$netns" ]; then
        command=(ip netns exec "$netns" "${command[@]}")
    fi
    # A joiner's rsync daemon (wsrep_sst_rsync), started by root, runs as
    # user nobody: it must be able to write the data directory (mariadbd,
    # as root, reads whatever it wrote).
    if [ "$*" != --wsrep-new-cluster ]; then
        chown -R nobody: "$(node_dir "$n")/data"
    fi
    launch "node $n" "$(node_pidfile "$n")" "$(node_log "$n")" \
        "${command[@]}"
}

# In the Primary component, Synced, with at least one other node.
node_rejoined() {
    local state
    state=$(node_state "$1")
    # shellcheck disable=SC2086  # the words of the state
    set -- ${state:-0 ? ? ?}
    [ "$1" -ge 2 ] && [ "$2 $3 $4" = "Synced ON Primary" ]
}

cmd_start_node() {
    local n=$NODE m pid donor=
    load_ports || die "no cluster in $DIR: run $0 start $DIR"
    [ -f "$(node_cnf "$n")" ] || die "node $n was never started in $DIR"
    begin_start
    if pid=$(node_pid "$n"); then
        say "node $n already runs (pid $pid)"
        wait_for "node $n to be Synced" node_rejoined "$n"
        end_start
        return 0
    fi
    for m in "${NODES[@]}"; do
        if [ "$m" != "$n" ] && node_rejoined "$m"; then
            donor=$m
            break
        fi
    done
    [ -n "$donor" ] || die "no other node is Synced in a Primary component" \
        "to join; run: $0 stop $DIR; $0 start $DIR"
    # What the killed node left (an SST helper, a frozen or cut-off
    # namespace) must not stand in the way.
    wake_node "$n" || true
    end_leftovers "$n"
    say "starting node $n ($(node_addr "$n") port ${NODE_PORT[n]}); it" \
        "joins node $donor's cluster"
    LAUNCHED+=("node$n")
    launch_node "$n"
    wait_for "node $n to rejoin and be Synced" node_rejoined "$n"
    end_start
    say "node $n Synced in $((SECONDS - BEGAN))s"
}

# SIGKILL what a node that is not running left behind: helpers in the
# session of its last pid, anything in its namespace.
end_leftovers() {
    local n=$1 old left=()
    old=$(head -n 1 "$(node_pidfile "$n")" 2>/dev/null || true)
    # Its session outlives it only in what it started; a live process with
    # that pid is someone else's.
    if [[ $old =~ ^[0-9]+$ ]] && ! process_alive "$old"; then
        mapfile -t left < <(pgrep -s "$old")
    fi
    mapfile -t -O "${#left[@]}" left < <(netns_pids "$n")
    if [ "${#left[@]}" -gt 0 ]; then
        say "ending what node $n left running: ${left[*]}"
        kill -KILL "${left[@]}" 2>/dev/null || true
        sleep 0.5
    fi
}

cmd_stop() {
    local n loaded='' woken='' deadline
    if load_ports; then loaded=yes; fi
    if [ -n "$loaded" ]; then
        for n in "${NODES[@]}"; do
            if wake_node "$n"; then woken=yes; fi
        done
    fi
    if [ -n "$woken" ]; then
        # Leaving one by one from a Primary component is what leaves node 1
        # safe to bootstrap from; a partition that cost the quorum heals
        # back into one within seconds.
        say "waiting up to ${REJOIN_TIMEOUT}s for the nodes to be Synced again"
        deadline=$((SECONDS + REJOIN_TIMEOUT))
        until running_rejoined || [ "$SECONDS" -ge "$deadline" ]; do
            sleep "$WAIT_INTERVAL"
        done
    fi
    stop_all
    if [ -n "$loaded" ]; then
        for n in "${NODES[@]}"; do end_leftovers "$n"; done
        if [ -n "$NETNS_PREFIX" ]; then hosts_down; fi
    fi
}

cmd_status() {
    local n pid state where ok=yes
    if ! load_ports; then
        echo "no cluster in $DIR"
        return 1
    fi
    for n in "${NODES[@]}"; do
        where="port ${NODE_PORT[n]}"
        if [ -n "$NETNS_PREFIX" ]; then
            where="$(node_addr "$n") $where (namespace $(node_netns "$n"))"
        fi
        if pid=$(node_pid "$n"); then
            state=$(node_state "$n")
            # shellcheck disable=SC2086  # the words of the state
            set -- ${state:-? not-answering ? ?}
            printf 'node%s %s pid %s: wsrep_cluster_size=%s' \
                "$n" "$where" "$pid" "$1"
            printf ' wsrep_local_state_comment=%s wsrep_ready=%s %s\n' \
                "$2" "$3" "$4"
            [ "$state" = "3 Synced ON Primary" ] || ok=
        else
            echo "node$n $where: not running"
            ok=
        fi
    done
    if pid=$(haproxy_pid); then
        if haproxy_answers; then
            echo "haproxy port $HAPROXY_PORT pid $pid ($LAYOUT): answering"
        else
            echo "haproxy port $HAPROXY_PORT pid $pid ($LAYOUT): NOT" \
                "answering"
            ok=
        fi
    else
        echo "haproxy port $HAPROXY_PORT: not running"
        ok=
    fi
    [ -n "$ok" ]
}

NODE=
if [ "${1:-}" = start-node ]; then
    [ "$#" -eq 3 ] || usage
    NODE=$3
    [[ $NODE =~ ^[1-3]$ ]] || die "no node $NODE: the nodes are 1, 2 and 3"
    set -- "$1" "$2"
fi
parse_command_line "$@"
declare -a NODE_PORT GCOMM_PORT IST_PORT SST_PORT
HAPROXY_PORT=
# Saved by `start` (DIR/ports) along with the ports; the defaults describe a
# cluster started before they were.
NETNS_PREFIX='' NETWORK='' LAYOUT=every-node
SUSPECT_TIMEOUT='' INACTIVE_TIMEOUT='' INSTALL_TIMEOUT=''
"cmd_${COMMAND//-/_}"
