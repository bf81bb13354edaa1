#!/usr/bin/env bash
# A private PostgreSQL cluster managed by Patroni, for the fault tests: one
# etcd (the DCS) and HAProxy in the root namespace, and two nodes, each a
# network "host" of its own (tools/netns.sh) running Patroni and the
# PostgreSQL it manages (a primary and a synchronous standby). Everything
# lives under DIR; the system cluster (5432), any system etcd (2379) and
# /etc/postgresql are left alone.
#   tools/patroni.sh start DIR       # the bridge and namespaces, etcd, both
#                                    # nodes (the first start bootstraps one
#                                    # and clones the other), HAProxy; wait
#                                    # until a leader runs, the standby
#                                    # streams (and is the synchronous
#                                    # standby) and HAProxy and the
#                                    # multi-host URL reach the primary;
#                                    # write DIR/env and print it
#   tools/patroni.sh status DIR      # leader, sync standby, each node's role
#                                    # and lag (exit 1 unless healthy)
#   tools/patroni.sh leader DIR      # the number of the node holding the
#                                    # leader key in etcd (exit 1 if none)
#   tools/patroni.sh start-node DIR N  # node N's Patroni again, after all
#                                    # processes of its namespace were
#                                    # killed; it rejoins as a standby
#                                    # (pg_rewind if needed); wait until it
#                                    # streams (and is the sync standby)
#   tools/patroni.sh stop DIR        # thaw frozen nodes (SIGCONT), heal cut
#                                    # ones, stop HAProxy, the standby, the
#                                    # leader, etcd; remove the namespaces
# DIR/env: PLACEMENT_TEST_PATRONI_URL (SQLAlchemy server URL through
# HAProxy, which passes connections to the node whose Patroni REST API says
# it is the primary), PLACEMENT_TEST_PATRONI_MULTIHOST_URL (both nodes in
# one libpq URL with target_session_attrs=read-write: the client finds the
# primary itself), PLACEMENT_TEST_PATRONI_NETNS (the nodes' namespaces,
# comma-separated, node 1 first) and PLACEMENT_TEST_PATRONI_DIR (DIR). User
# postgres, trust authentication, no database in the URLs. The file is for
# `set -a; . DIR/env; set +a`: the multi-host URL is single-quoted (it has
# "&"s).
# Network (environment): PATRONI_NETWORK (default 10.233.0) is the /24 of
# the bridge, which has .1 (where etcd listens, with 127.0.0.1); node N is at
# .(10+N) in namespace ${PATRONI_NETNS_PREFIX}N (prefix default ppt, at most
# 8 characters; the bridge is PREFIX-br).
# Ports (environment): PATRONI_PORT_BASE (default 14600) puts HAProxy (on
# 127.0.0.1) on the base, etcd's client port on base+1 and its peer port
# (127.0.0.1) on base+2, node N's PostgreSQL on base+10+N and its Patroni
# REST API on base+20+N (both on the node's address). Each can be set alone:
# PATRONI_HAPROXY_PORT, PATRONI_ETCD_PORT, PATRONI_ETCD_PEER_PORT,
# PATRONI_NODE<N>_PORT, PATRONI_NODE<N>_REST_PORT.
# Replication: PATRONI_SYNCHRONOUS=on (default) runs Patroni's
# synchronous_mode: a commit returns once the standby has it, and only the
# synchronous standby may be promoted; =off replicates asynchronously (a
# failover may lose the last commits). Failure detection is fast: ttl 10 s,
# loop_wait 1 s, retry_timeout 4 s, so a dead leader is replaced within
# about 15 s. use_pg_rewind lets a killed old primary rejoin as a standby.
# DCS: PATRONI_DCS=etcd (default) has Patroni use etcd's v2 API, =etcd3 its
# v3 API. Patroni 3.0.2 (Debian 12) is not safe with etcd3 when a leader is
# frozen past its ttl: on waking, its stale view of etcd has it renew the
# leader key unconditionally, taking it back from the node promoted
# meanwhile, whose commits pg_rewind then discards; and a stale revision
# leaves it unable to record its synchronous standby (Patroni 3.0.3 and
# 3.1.0 fix both). With the v2 API every renewal is a compare-and-swap on a
# fresh read.
# The network, prefix, ports, DCS and replication mode are fixed when DIR is
# first set up (DIR/ports); `start` after `stop` reuses DIR's data and etcd
# state. Remove DIR to choose others. fsync is off: the faults are process
# kills, freezes and partitions, after which the kernel still has every
# write; the machine itself never crashes under a test.
# PATRONI_START_TIMEOUT (default 120 s) bounds `start` and `start-node`,
# PATRONI_STOP_TIMEOUT (default 30 s; 15 s when a failed start cleans up)
# each process's clean stop before it is killed. A failed start prints the
# tail of the logs and stops what it started. Packages: patroni, etcd-server,
# haproxy, postgresql (tools/integration-deps.sh). Runs as root; Patroni and
# PostgreSQL run as the postgres user, who must be able to enter DIR's parents
# (DIR itself is made enterable).
set -euo pipefail

NODES=(1 2)
PG_USER=postgres
PATRONI=/usr/bin/patroni
ETCD=/usr/bin/etcd
HAPROXY=/usr/sbin/haproxy
# Patroni's interpreter: it has psycopg2 and Patroni's other modules; also
# reads the JSON of etcd and Patroni here.
PYTHON=/usr/bin/python3
# The etcd keys are /placement-test/pg/...
DCS_NAMESPACE=/placement-test
SCOPE=pg
START_TIMEOUT=${PATRONI_START_TIMEOUT:-120}
STOP_TIMEOUT=${PATRONI_STOP_TIMEOUT:-30}
PROGRAM=patroni.sh
ENV_PREFIX=PATRONI
COMMANDS="start stop status leader start-node"
# cmd_stop puts the leader after the standby; "network" is the bridge and
# namespaces.
STOP_ORDER=(haproxy node2 node1 etcd network)
WAIT_INTERVAL=0.5
NETNS_SH=$(cd "$(dirname "$0")" && pwd)/netns.sh
# Nothing from the caller's libpq environment may redirect our clients.
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE \
    PGSERVICE PGSERVICEFILE PGOPTIONS PGDATA PGSSLMODE PGTARGETSESSIONATTRS
# shellcheck source-path=SCRIPTDIR source=lib/servers.sh
. "$(dirname "$0")/lib/servers.sh"

# DIR N instead of DIR for start-node.
NODE_ARG=''
if [ "$#" -eq 3 ] && [ "$1" = start-node ]; then
    NODE_ARG=$3
    set -- "$1" "$2"
elif [ "${1:-}" = start-node ]; then
    echo "usage: $0 start-node DIR N" >&2
    exit 2
fi

# --- Settings --------------------------------------------------------------

choose_settings() {
    local base=${PATRONI_PORT_BASE:-14600} n var
    HAPROXY_PORT=${PATRONI_HAPROXY_PORT:-$base}
    ETCD_PORT=${PATRONI_ETCD_PORT:-$((base + 1))}
    ETCD_PEER_PORT=${PATRONI_ETCD_PEER_PORT:-$((base + 2))}
    for n in "${NODES[@]}"; do
        var=PATRONI_NODE${n}_PORT
        PG_PORT[n]=${!var:-$((base + 10 + n))}
        var=PATRONI_NODE${n}_REST_PORT
        REST_PORT[n]=${!var:-$((base + 20 + n))}
    done
    NETWORK=${PATRONI_NETWORK:-10.233.0}
    PREFIX=${PATRONI_NETNS_PREFIX:-ppt}
    SYNCHRONOUS=${PATRONI_SYNCHRONOUS:-on}
    DCS=${PATRONI_DCS:-etcd}
}

check_settings() {
    [[ $NETWORK =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] \
        || die "PATRONI_NETWORK must be three octets (10.233.0), not $NETWORK"
    [[ $PREFIX =~ ^[a-z][a-z0-9]{0,7}$ ]] \
        || die "PATRONI_NETNS_PREFIX must be 1-8 lowercase letters or" \
            "digits, starting with a letter, not $PREFIX"
    case $SYNCHRONOUS in
        on | off) ;;
        *) die "PATRONI_SYNCHRONOUS must be on or off, not $SYNCHRONOUS" ;;
    esac
    case $DCS in
        etcd | etcd3) ;;
        *) die "PATRONI_DCS must be etcd or etcd3, not $DCS" ;;
    esac
    check_ports_valid "$HAPROXY_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" \
        "${PG_PORT[@]}" "${REST_PORT[@]}"
}

save_settings() {
    save_ports HAPROXY_PORT ETCD_PORT ETCD_PEER_PORT PG_PORT REST_PORT \
        NETWORK PREFIX SYNCHRONOUS DCS
}

# An existing DIR's settings; a different choice in the environment is an
# error, not something to ignore silently.
use_saved_settings() {
    local saved=() wanted=() i
    load_ports || die "$DIR/ports is missing; remove $DIR to start afresh"
    saved=("$HAPROXY_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT" "${PG_PORT[@]}"
        "${REST_PORT[@]}" "$NETWORK" "$PREFIX" "$SYNCHRONOUS" "$DCS")
    wanted=("${PATRONI_HAPROXY_PORT:-}" "${PATRONI_ETCD_PORT:-}"
        "${PATRONI_ETCD_PEER_PORT:-}" "${PATRONI_NODE1_PORT:-}"
        "${PATRONI_NODE2_PORT:-}" "${PATRONI_NODE1_REST_PORT:-}"
        "${PATRONI_NODE2_REST_PORT:-}" "${PATRONI_NETWORK:-}"
        "${PATRONI_NETNS_PREFIX:-}" "${PATRONI_SYNCHRONOUS:-}"
        "${PATRONI_DCS:-}")
    for i in "${!saved[@]}"; do
        if [ -n "${wanted[i]}" ] && [ "${wanted[i]}" != "${saved[i]}" ]; then
            die "$DIR was set up with ${saved[i]}, not ${wanted[i]} (see" \
                "$DIR/ports); remove $DIR to choose again"
        fi
    done
    if [ -n "${PATRONI_PORT_BASE:-}" ] \
            && [ "$PATRONI_PORT_BASE" != "$HAPROXY_PORT" ]; then
        die "$DIR was set up with PATRONI_PORT_BASE=$HAPROXY_PORT; remove" \
            "$DIR to choose other ports"
    fi
}

bridge() { echo "$PREFIX-br"; }
bridge_ip() { echo "$NETWORK.1"; }
node_ns() { echo "$PREFIX$1"; }
node_ip() { echo "$NETWORK.$((10 + $1))"; }
node_dir() { echo "$DIR/node$1"; }
node_cfg() { echo "$DIR/node$1/patroni.yml"; }

# --- Processes -------------------------------------------------------------

server_pidfile() {
    case $1 in
        etcd | haproxy) echo "$DIR/$1.pid" ;;
        node*) echo "$(node_dir "${1#node}")/patroni.pid" ;;
    esac
}

# Node N's pid is its Patroni's; the PostgreSQL processes are its children.
server_pid() {
    case $1 in
        etcd) live_pid "$DIR/etcd.pid" "--data-dir $DIR/etcd" ;;
        haproxy) live_pid "$DIR/haproxy.pid" "$DIR/haproxy.cfg" ;;
        node*) live_pid "$(server_pidfile "$1")" "$(node_cfg "${1#node}")" ;;
        network) ip link show "$(bridge)" >/dev/null 2>&1 && echo - ;;
    esac
}

ns_exists() {
    ip netns list 2>/dev/null | grep -q "^$1\( \|$\)"
}

ns_pids() {
    if ns_exists "$1"; then
        ip netns pids "$1" 2>/dev/null || true
    fi
}

# A node the fault tests froze (SIGSTOP) runs again and one they cut off is
# linked again, so that it can be stopped (or, for the cut one, restarted).
thaw_node() {
    local ns pids
    ns=$(node_ns "$1")
    ns_exists "$ns" || return 0
    "$NETNS_SH" heal "$ns" 2>/dev/null || true
    pids=$(ns_pids "$ns")
    # shellcheck disable=SC2086  # one pid per word
    [ -z "$pids" ] || kill -CONT $pids 2>/dev/null || true
}

# Whatever still runs in node N's namespace (PostgreSQL processes a killed
# Patroni left behind): SIGKILL, then wait until it is gone.
kill_node_leftovers() {
    local ns pids deadline=$((SECONDS + 10))
    ns=$(node_ns "$1")
    pids=$(ns_pids "$ns")
    [ -n "$pids" ] || return 0
    say "killing what is left in namespace $ns: $(echo "$pids" | tr '\n' ' ')"
    # shellcheck disable=SC2086  # one pid per word
    kill -CONT $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    while [ -n "$(ns_pids "$ns")" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.1
    done
}

stop_server() {
    local name=$1 pid='' n
    case $name in
        network)
            server_pid network >/dev/null || return 1
            say "removing the bridge $(bridge) and namespaces"
            for n in "${NODES[@]}"; do kill_node_leftovers "$n"; done
            local names=()
            for n in "${NODES[@]}"; do names+=("$(node_ns "$n")"); done
            "$NETNS_SH" down "$(bridge)" "${names[@]}"
            return 0
            ;;
        node*)
            n=${name#node}
            thaw_node "$n"
            if pid=$(server_pid "$name"); then
                say "stopping node $n's Patroni and PostgreSQL (pid $pid)"
                stop_pid "$pid" "node $n's Patroni"
            fi
            local left
            left=$(ns_pids "$(node_ns "$n")")
            kill_node_leftovers "$n"
            rm -f "$(server_pidfile "$name")"
            [ -n "$pid" ] || [ -n "$left" ]
            return
            ;;
    esac
    stop_by_pidfile "$name"
}

# --- Queries ---------------------------------------------------------------

# Runs the SQL in $2 on node $1 (over the bridge, from the root namespace)
# and prints the unaligned, headerless result.
sql() {
    PGCONNECT_TIMEOUT=2 "$PG_BIN/psql" -X -q -A -t -w -v ON_ERROR_STOP=1 \
        -h "$(node_ip "$1")" -p "${PG_PORT[$1]}" -U "$PG_USER" -d postgres \
        -c "$2" 2>/dev/null
}

# The same through a libpq connection string (HAProxy, multi-host).
sql_at() {
    PGCONNECT_TIMEOUT=2 "$PG_BIN/psql" -X -q -A -t -w -v ON_ERROR_STOP=1 \
        -d "$1" -c "$2" 2>/dev/null
}

haproxy_conninfo() {
    echo "postgresql://$PG_USER@127.0.0.1:$HAPROXY_PORT/postgres"
}

multihost_conninfo() {
    echo "postgresql://$PG_USER@$(node_ip 1):${PG_PORT[1]},$(node_ip 2):${PG_PORT[2]}/postgres?target_session_attrs=read-write"
}

# The value of etcd key $1 (under the cluster's prefix); return 1 without.
dcs_get() {
    local key
    if [ "$DCS" = etcd ]; then
        curl -fsS --max-time 3 \
            "http://127.0.0.1:$ETCD_PORT/v2/keys$DCS_NAMESPACE/$SCOPE/$1" \
            2>/dev/null | "$PYTHON" -c '
import json, sys
print(json.load(sys.stdin)["node"]["value"])' 2>/dev/null
        return
    fi
    key=$(printf '%s' "$DCS_NAMESPACE/$SCOPE/$1" | base64 -w 0)
    curl -fsS --max-time 3 -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" \
        -d "{\"key\": \"$key\"}" 2>/dev/null | "$PYTHON" -c '
import base64, json, sys
kvs = json.load(sys.stdin).get("kvs") or []
if not kvs:
    sys.exit(1)
print(base64.b64decode(kvs[0].get("value", "")).decode())'
}

# The number of the node holding the leader key.
leader_node() {
    local name
    name=$(dcs_get leader) || return 1
    [[ $name =~ ^node[0-9]+$ ]] || return 1
    echo "${name#node}"
}

# The synchronous standby Patroni chose (a node number), or nothing.
sync_node() {
    local value
    value=$(dcs_get sync) || return 0
    "$PYTHON" -c '
import json, sys
name = json.loads(sys.argv[1]).get("sync_standby") or ""
print(name[4:] if name.startswith("node") else "")' "$value"
}

other_node() { echo $((3 - $1)); }

etcd_healthy() {
    curl -fsS --max-time 3 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null \
        | grep -q '"health": *"true"'
}

is_primary() { [ "$(sql "$1" 'SELECT pg_is_in_recovery()')" = f ]; }

leader_is_primary() {
    local leader
    leader=$(leader_node) && is_primary "$leader"
}

# Node $1 is a standby whose WAL receiver streams, and the primary's
# walsender to it (application_name = its Patroni name) streams; in
# synchronous mode it is also the synchronous one, for Patroni and for
# PostgreSQL.
standby_ready() {
    local n=$1 leader state
    leader=$(leader_node) || return 1
    [ "$leader" != "$n" ] || return 1
    [ "$(sql "$n" 'SELECT status FROM pg_stat_wal_receiver')" = streaming ] \
        || return 1
    state=$(sql "$leader" "SELECT state || ' ' || sync_state
        FROM pg_stat_replication WHERE application_name = 'node$n'") \
        || return 1
    if [ "$SYNCHRONOUS" = on ]; then
        [ "$state" = "streaming sync" ] && [ "$(sync_node)" = "$n" ]
    else
        [ "${state%% *}" = streaming ]
    fi
}

# Whichever node is not the leader is ready as a standby.
cluster_ready() {
    local leader
    leader=$(leader_node) && is_primary "$leader" \
        && standby_ready "$(other_node "$leader")"
}

haproxy_answers() {
    [ "$(sql_at "$(haproxy_conninfo)" 'SELECT pg_is_in_recovery()')" = f ]
}

# HAProxy's view of the nodes ("node1 UP, node2 DOWN"), from its stats
# socket.
haproxy_states() {
    "$PYTHON" - "$DIR/haproxy.sock" 2>/dev/null <<'EOF'
import csv, socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.settimeout(3)
sock.connect(sys.argv[1])
sock.sendall(b"show stat\n")
data = b""
while chunk := sock.recv(65536):
    data += chunk
rows = csv.DictReader(data.decode().lstrip("# ").splitlines())
print(", ".join("%s %s" % (row["svname"], row["status"].split()[0])
                for row in rows if row["svname"].startswith("node")))
EOF
}

# A server starts UP in HAProxy until its checks fail, so the standby may
# take connections in the first seconds: ready once only the leader is up.
haproxy_ready() {
    local leader n expected=''
    leader=$(leader_node) || return 1
    for n in "${NODES[@]}"; do
        expected+="${expected:+, }node$n "
        if [ "$n" = "$leader" ]; then expected+=UP; else expected+=DOWN; fi
    done
    [ "$(haproxy_states)" = "$expected" ] && haproxy_answers
}

multihost_answers() {
    [ "$(sql_at "$(multihost_conninfo)" 'SELECT pg_is_in_recovery()')" = f ]
}

# --- Configuration ---------------------------------------------------------

write_patroni_cfg() {
    local n=$1 dir ip sync=false
    dir=$(node_dir "$n")
    ip=$(node_ip "$n")
    [ "$SYNCHRONOUS" = off ] || sync=true
    cat > "$(node_cfg "$n")" <<EOF
# Written by tools/patroni.sh: node $n of the test cluster in $DIR.
scope: $SCOPE
namespace: $DCS_NAMESPACE
name: node$n

log:
  level: INFO

restapi:
  listen: $ip:${REST_PORT[n]}
  connect_address: $ip:${REST_PORT[n]}

$DCS:
  hosts: $(bridge_ip):$ETCD_PORT

watchdog:
  mode: "off"

bootstrap:
  # The cluster-wide settings, stored in etcd by the node that bootstraps.
  dcs:
    # A leader that stops renewing its key for ttl seconds is replaced;
    # loop_wait + 2 * retry_timeout <= ttl, as Patroni requires.
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: $sync
    # A primary whose standby is gone goes on alone (not strict).
    synchronous_mode_strict: false
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        shared_buffers: 32MB
        # Process faults only (see tools/patroni.sh): no fsync needed.
        fsync: "off"
        synchronous_commit: "on"
        wal_level: replica
        hot_standby: "on"
        # pg_rewind needs it (or data checksums).
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
        wal_receiver_status_interval: 1s
        # A primary cut off from its standby must shut down promptly when
        # Patroni demotes it (a fast shutdown waits for the walsenders): a
        # demotion still running at the next loop is started again by
        # Patroni 3.0.2, which then runs two postmasters on one data
        # directory.
        wal_sender_timeout: 5s
        wal_receiver_timeout: 5s
        log_line_prefix: "%m [%p] %q%u@%d "
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8

postgresql:
  listen: $ip:${PG_PORT[n]}
  connect_address: $ip:${PG_PORT[n]}
  data_dir: $dir/data
  bin_dir: $PG_BIN
  pgpass: $dir/pgpass
  # Patroni talks to its own server over the socket: a cut link does not
  # cut it off.
  use_unix_socket: true
  authentication:
    superuser:
      username: $PG_USER
    replication:
      username: $PG_USER
    rewind:
      username: $PG_USER
  pg_hba:
    - local all all trust
    - local replication all trust
    - host all all $NETWORK.0/24 trust
    - host replication all $NETWORK.0/24 trust
  parameters:
    unix_socket_directories: $dir/run
    logging_collector: "on"
    log_directory: $dir/log
    log_filename: postgresql.log
  # A crashed old primary that pg_rewind cannot bring back is cloned again.
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
EOF
    chown "$PG_USER": "$(node_cfg "$n")"
}

write_haproxy_cfg() {
    local n
    {
        cat <<EOF
# Written by tools/patroni.sh: HAProxy in front of the test cluster in $DIR.
global
    maxconn 4096
    # For haproxy_states: which node HAProxy has up.
    stats socket $DIR/haproxy.sock mode 600 level user

defaults
    mode tcp
    timeout connect 4s
    # Long idle times: pooled connections must not be cut.
    timeout client 1h
    timeout server 1h
    timeout check 2s

listen primary
    bind 127.0.0.1:$HAPROXY_PORT
    # Only the node whose Patroni says it runs the primary is up; when it
    # stops being that, its connections are cut.
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
EOF
        for n in "${NODES[@]}"; do
            echo "    server node$n $(node_ip "$n"):${PG_PORT[n]}" \
                "check port ${REST_PORT[n]}"
        done
    } > "$DIR/haproxy.cfg"
}

make_dirs() {
    local n dir
    # mktemp -d makes DIR 0700: the postgres user must be able to enter it.
    chmod o+x "$DIR"
    runuser -u "$PG_USER" -- test -x "$DIR" \
        || die "the $PG_USER user cannot enter $DIR (check its parents)"
    mkdir -p "$DIR/etcd"
    chmod 0700 "$DIR/etcd"
    for n in "${NODES[@]}"; do
        dir=$(node_dir "$n")
        mkdir -p "$dir/run" "$dir/log"
        chown "$PG_USER": "$dir" "$dir/run" "$dir/log"
        chmod 0700 "$dir"
    done
}

# --- Starting --------------------------------------------------------------

network_up() {
    local n
    say "creating the bridge $(bridge) ($(bridge_ip)) and the namespaces"
    LAUNCHED+=(network)
    "$NETNS_SH" up "$(bridge)" "$(bridge_ip)"
    for n in "${NODES[@]}"; do
        "$NETNS_SH" host "$(bridge)" "$(node_ns "$n")" "$(node_ip "$n")"
    done
}

start_etcd() {
    local client peer="http://127.0.0.1:$ETCD_PEER_PORT"
    client="http://$(bridge_ip):$ETCD_PORT"
    say "starting etcd (port $ETCD_PORT on $(bridge_ip) and 127.0.0.1)"
    LAUNCHED+=(etcd)
    launch etcd "$DIR/etcd.pid" "$DIR/etcd.log" \
        "$ETCD" --name placement-test --data-dir "$DIR/etcd" \
        --listen-client-urls "$client,http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "$client" \
        --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
        --initial-cluster "placement-test=$peer" \
        --initial-cluster-token "placement-test-$PREFIX" \
        --initial-cluster-state new --enable-v2=true \
        --quota-backend-bytes 268435456 --logger zap --log-level warn
    wait_for "etcd to be healthy" etcd_healthy
}

# Patroni as the postgres user inside the node's namespace: it and the
# PostgreSQL it starts are all that runs there.
launch_node() {
    local n=$1
    say "starting node $n's Patroni in namespace $(node_ns "$n")" \
        "(PostgreSQL $(node_ip "$n"):${PG_PORT[n]}, REST ${REST_PORT[n]})"
    LAUNCHED+=("node$n")
    launch "node $n" "$(server_pidfile "node$n")" "$(node_dir "$n")/patroni.log" \
        ip netns exec "$(node_ns "$n")" \
        setpriv --reuid="$PG_USER" --regid="$PG_USER" --init-groups \
        env HOME="$(node_dir "$n")" "$PYTHON" "$PATRONI" "$(node_cfg "$n")"
}

start_haproxy() {
    say "starting haproxy (port $HAPROXY_PORT)"
    LAUNCHED+=(haproxy)
    launch haproxy "$DIR/haproxy.pid" "$DIR/haproxy.log" \
        "$HAPROXY" -db -f "$DIR/haproxy.cfg"
    wait_for "haproxy to pass queries to the primary only" haproxy_ready
}

wait_for_cluster() {
    wait_for "a leader running a primary" leader_is_primary
    if [ "$SYNCHRONOUS" = on ]; then
        wait_for "the standby to stream and be the synchronous standby" \
            cluster_ready
    else
        wait_for "the standby to stream" cluster_ready
    fi
}

print_logs() {
    local n
    print_log_tails "$DIR/etcd.log" "$DIR/haproxy.log"
    for n in "${NODES[@]}"; do
        print_log_tails "$(node_dir "$n")/patroni.log" \
            "$(node_dir "$n")/log/postgresql.log"
    done
}

urls() {
    local server=postgresql+psycopg2://$PG_USER
    echo "PLACEMENT_TEST_PATRONI_URL=$server@127.0.0.1:$HAPROXY_PORT/"
    # Quoted: the file is sourced, and "&" would end the command.
    echo "PLACEMENT_TEST_PATRONI_MULTIHOST_URL='$server@/?host=$(node_ip 1):${PG_PORT[1]}&host=$(node_ip 2):${PG_PORT[2]}&target_session_attrs=read-write'"
    echo "PLACEMENT_TEST_PATRONI_NETNS=$(node_ns 1),$(node_ns 2)"
    echo "PLACEMENT_TEST_PATRONI_DIR=$DIR"
}

check_tools() {
    local tool
    [ -n "$PG_BIN" ] || die "no /usr/lib/postgresql/*/bin/postgres: run" \
        "tools/integration-deps.sh"
    for tool in "$PATRONI" "$ETCD" "$HAPROXY" "$PYTHON" "$PG_BIN/psql" \
            "$PG_BIN/pg_rewind" /usr/bin/curl /usr/bin/setpriv; do
        [ -x "$tool" ] || die "$tool is missing: run tools/integration-deps.sh"
    done
    "$PYTHON" -c 'import psycopg2, patroni' 2>/dev/null \
        || die "$PYTHON cannot import psycopg2 and patroni (python3-psycopg2," \
            "patroni)"
    [ "$(id -u)" -eq 0 ] || die "must run as root (namespaces; Patroni" \
        "runs as $PG_USER)"
    id "$PG_USER" >/dev/null 2>&1 || die "no $PG_USER system user"
    # The sockets are under DIR/nodeN/run.
    check_socket_dir
}

running_count() {
    local name count=0
    for name in etcd node1 node2 haproxy; do
        if server_pid "$name" >/dev/null; then count=$((count + 1)); fi
    done
    echo "$count"
}

# The cluster-wide settings live in etcd from the first start on: a
# different replication mode in the environment would be ignored.
cmd_start() {
    local n running
    check_tools
    if [ -f "$DIR/ports" ]; then
        use_saved_settings
    else
        choose_settings
    fi
    check_settings
    running=$(running_count)
    if [ "$running" -eq 4 ]; then
        say "already running in $DIR"
        begin_start
        wait_for_cluster
        wait_for "haproxy to pass queries to the primary only" haproxy_ready
        end_start
        urls | tee "$DIR/env"
        return 0
    elif [ "$running" -gt 0 ]; then
        die "the cluster in $DIR is partly running; run: $0 stop $DIR"
    fi
    check_ports_free "$HAPROXY_PORT" "$ETCD_PORT" "$ETCD_PEER_PORT"
    rm -f "$DIR/env"
    [ -f "$DIR/ports" ] || save_settings
    make_dirs
    for n in "${NODES[@]}"; do write_patroni_cfg "$n"; done
    write_haproxy_cfg
    "$HAPROXY" -c -q -f "$DIR/haproxy.cfg" || die "bad $DIR/haproxy.cfg"

    begin_start
    network_up
    start_etcd
    # Both at once: on the first start one bootstraps and the other clones
    # it; later, Patroni elects whichever may lead.
    for n in "${NODES[@]}"; do
        kill_node_leftovers "$n"
        launch_node "$n"
    done
    wait_for_cluster
    start_haproxy
    wait_for "the multi-host URL to reach the primary" multihost_answers
    end_start
    say "cluster ready in $((SECONDS - BEGAN))s: node $(leader_node) leads"
    urls | tee "$DIR/env"
}

cmd_start_node() {
    local n=$NODE_ARG
    [[ $n =~ ^[12]$ ]] || die "no node '$n' (nodes: ${NODES[*]})"
    check_tools
    load_ports || die "no cluster in $DIR (run: $0 start $DIR)"
    server_pid etcd >/dev/null \
        || die "etcd is not running in $DIR (run: $0 start $DIR)"
    server_pid network >/dev/null || die "no bridge $(bridge) (run: $0 start $DIR)"
    begin_start
    # The failed start-node stops nothing but what it launched: node N.
    STOP_ORDER=("node$n")
    if server_pid "node$n" >/dev/null; then
        say "node $n's Patroni is already running"
    else
        kill_node_leftovers "$n"
        write_patroni_cfg "$n"
        launch_node "$n"
    fi
    wait_for "a leader running a primary" leader_is_primary
    if [ "$(leader_node)" != "$n" ]; then
        wait_for "node $n to stream from the leader$([ "$SYNCHRONOUS" = off ] \
            || echo ' and be the synchronous standby')" standby_ready "$n"
    fi
    end_start
    say "node $n back in $((SECONDS - BEGAN))s: node $(leader_node) leads"
}

cmd_stop() {
    local n leader
    if ! load_ports; then
        say "nothing was running in $DIR"
        return 0
    fi
    # Thawed and linked first: a frozen Patroni could not stop, and a cut
    # one could not give up its leader key.
    for n in "${NODES[@]}"; do thaw_node "$n"; done
    # The standby first: stopping the leader first would promote it.
    if leader=$(leader_node 2>/dev/null) && [[ $leader =~ ^[12]$ ]]; then
        STOP_ORDER=(haproxy "node$(other_node "$leader")" "node$leader" etcd
            network)
    fi
    stop_all
}

cmd_leader() {
    load_ports || die "no cluster in $DIR"
    leader_node || die "no leader (etcd down or the leader key expired)"
}

# One line per node: role, state, lag.
node_status() {
    local n=$1 pid ns link state='' role wal
    ns=$(node_ns "$n")
    link=''
    if ip link show "vh-$ns" 2>/dev/null | grep -q 'state DOWN'; then
        link=', link CUT'
    fi
    if ! pid=$(server_pid "node$n"); then
        echo "node$n ($ns $(node_ip "$n"):${PG_PORT[n]}): Patroni not" \
            "running$link"
        return 1
    fi
    if [ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)" = T ]
    then
        state=', FROZEN'
    fi
    role=$(sql "$n" 'SELECT pg_is_in_recovery()') || role=''
    case $role in
        f) echo "node$n ($ns $(node_ip "$n"):${PG_PORT[n]}) pid $pid:" \
            "primary$link$state" ;;
        t)
            wal=$(sql "$n" "SELECT coalesce((SELECT status
                FROM pg_stat_wal_receiver), 'no wal receiver')") || true
            echo "node$n ($ns $(node_ip "$n"):${PG_PORT[n]}) pid $pid:" \
                "standby, ${wal:-?}$link$state" ;;
        *) echo "node$n ($ns $(node_ip "$n"):${PG_PORT[n]}) pid $pid:" \
            "PostgreSQL not answering$link$state"
            return 1 ;;
    esac
}

cmd_status() {
    local n ok=yes leader sync pid replication
    if ! load_ports; then
        echo "no cluster in $DIR"
        return 1
    fi
    if pid=$(server_pid etcd) && etcd_healthy; then
        echo "etcd port $ETCD_PORT pid $pid: healthy"
    else
        echo "etcd port $ETCD_PORT: NOT healthy"
        ok=
    fi
    leader=$(leader_node) || leader=''
    sync=$(sync_node)
    echo "leader: ${leader:+node}${leader:-none}; synchronous standby:" \
        "${sync:+node}${sync:-none} (synchronous mode $SYNCHRONOUS; DCS $DCS)"
    for n in "${NODES[@]}"; do
        node_status "$n" || ok=
    done
    if [ -n "$leader" ]; then
        # Bytes the standby has yet to replay, and its replay lag.
        replication=$(sql "$leader" "SELECT application_name || ': ' || state
            || ', ' || sync_state || ', replay ' || pg_wal_lsn_diff(
            pg_current_wal_lsn(), replay_lsn) || ' bytes / '
            || coalesce(extract(epoch FROM replay_lag)::text, '0') || ' s behind'
            FROM pg_stat_replication") || replication=''
        echo "replication (node$leader's view): ${replication:-none}"
        cluster_ready || ok=
    else
        ok=
    fi
    if pid=$(server_pid haproxy) && haproxy_ready; then
        echo "haproxy port $HAPROXY_PORT pid $pid: reaches the primary" \
            "($(haproxy_states))"
    elif [ -n "$pid" ]; then
        echo "haproxy port $HAPROXY_PORT pid $pid: NOT reaching the" \
            "primary alone ($(haproxy_states))"
        ok=
    else
        echo "haproxy port $HAPROXY_PORT: not running"
        ok=
    fi
    [ -n "$ok" ]
}

# The newest version's bin directory, or nothing.
find_bin() {
    find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/postgres' \
        -printf '%h\n' 2>/dev/null | sort -V | tail -n 1
}

parse_command_line "$@"
declare -a PG_PORT REST_PORT
HAPROXY_PORT='' ETCD_PORT='' ETCD_PEER_PORT='' NETWORK='' PREFIX=''
SYNCHRONOUS=on DCS=etcd
PG_BIN=$(find_bin)
"cmd_${COMMAND//-/_}"
