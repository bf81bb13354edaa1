# shellcheck shell=bash
# shellcheck disable=SC2153,SC2154  # the script sets the variables below
# What tools/galera.sh, tools/pg-replica.sh and tools/mariadb-replica.sh
# share: private database servers for the integration tests, run under a
# directory DIR on ports of their own. Sourced, after the script has set its
# own variables:  . "$(dirname "$0")/lib/servers.sh"
#
# The script sets (before sourcing, or at least before the call that needs
# them):
#   PROGRAM        its name for messages ("galera.sh")
#   ENV_PREFIX     its environment variables' prefix ("GALERA"): the hint
#                  of a refused start names ${ENV_PREFIX}_PORT_BASE and
#                  ${ENV_PREFIX}_*_PORT; a failed start's clean-up waits
#                  ${ENV_PREFIX}_STOP_TIMEOUT, or 15 s
#   COMMANDS       its commands, space-separated ("start stop status")
#   START_TIMEOUT  seconds a start may take (begin_start's DEADLINE)
#   STOP_TIMEOUT   seconds stop_pid waits for a clean stop
#   STOP_ORDER     its servers' names (an array), in the order to stop them
#   WAIT_INTERVAL  seconds between wait_for's tries
#   SERVERS, PORT  for choose_server_ports and use_saved_ports only: the
#                  names of the servers, first to last, and an associative
#                  array of their ports (declare -A PORT=())
# and defines the functions this file calls:
#   server_pid NAME   the pid of server NAME if it runs (live_pid), else
#                     return 1
#   stop_server NAME  stop it; return 1 if it was not running
#   print_logs        the tail of its logs, on stderr (print_log_tails)
#
# What this file defines:
#   say MESSAGE, die MESSAGE  on stderr, prefixed by PROGRAM; die exits 1
#   usage                     the command line, on stderr; exits 2
#   parse_command_line "$@"   "COMMAND DIR": COMMAND must be one of
#                             COMMANDS; `start` makes DIR, the others want
#                             it to exist; sets COMMAND and DIR (absolute)
#   check_ports_valid PORT... die unless each is a port number, none twice
#   check_ports_free PORT...  die if one is taken on 127.0.0.1 ("not
#                             starting")
#   choose_server_ports BASE  PORT[NAME] for each of SERVERS: the variable
#                             ${ENV_PREFIX}_<NAME>_PORT, or the base
#                             (${ENV_PREFIX}_PORT_BASE, default BASE) + 1,
#                             + 2, ... in SERVERS' order
#   save_ports VAR...         write the variables (scalars or arrays) to
#                             DIR/ports; load_ports reads them back (return
#                             1 without the file)
#   use_saved_ports           load_ports for an existing DIR; die if the
#                             environment asks for another port
#   process_alive PID         PID runs (neither gone nor a zombie)
#   live_pid PIDFILE MARKER   the pid in PIDFILE's first line if it runs and
#                             its command line contains MARKER
#   launch WHAT PIDFILE LOG COMMAND...  start COMMAND in a session of its
#                             own, output appended to LOG; return once its
#                             pid is in PIDFILE
#   stop_pid PID WHAT         SIGTERM, up to STOP_TIMEOUT s, SIGKILL; then
#                             SIGKILL what is left of its session
#   begin_start, end_start    around a start: STARTED, LAUNCHED (the names
#                             of the servers it started: the script adds
#                             them), DEADLINE and BEGAN (SECONDS), and the
#                             EXIT trap start_failed: unless end_start ran,
#                             print_logs and stop what LAUNCHED names (in
#                             STOP_ORDER), then exit with the status
#   launched NAME             NAME is in LAUNCHED
#   wait_for WHAT COMMAND...  run COMMAND until it succeeds; die when
#                             DEADLINE passes or a launched server exited
#   stop_by_pidfile NAME      stop server NAME if it runs (server_pid),
#                             remove its pidfile (server_pidfile: the
#                             script defines it for this one); return 1 if
#                             it was not running (a stop_server for a
#                             server stopped by its pid alone)
#   stop_all                  stop_server each of STOP_ORDER; remove
#                             DIR/env; say so if nothing was running
#   run_logged LOG WHAT COMMAND...  COMMAND's output to LOG; on failure
#                             the tail of LOG and die "WHAT failed"
#   print_log_tails FILE...   the last 40 lines of each non-empty FILE
#   check_socket_dir          die if DIR is too long for a unix socket
#   mariadb_sql SOCKET ARGS...  the mariadb client as root on SOCKET,
#                             batch output without column names
#   mariadb_base_cnf DIR PORT  the settings every private mariadbd shares
#                             ([client-server] and the start of [mariadbd],
#                             its files under DIR), to append to

STARTED='' LAUNCHED=() DEADLINE=0 BEGAN=0 COMMAND='' DIR=''

say() {
    echo "$PROGRAM: $*" >&2
}

die() {
    echo "$PROGRAM: ERROR: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 ${COMMANDS// /|} DIR" >&2
    exit 2
}

parse_command_line() {
    local known
    [ "$#" -eq 2 ] || usage
    for known in $COMMANDS; do
        [ "$1" != "$known" ] || COMMAND=$1
    done
    [ -n "$COMMAND" ] || usage
    if [ "$COMMAND" = start ]; then
        mkdir -p "$2"
    else
        [ -d "$2" ] || die "no such directory: $2"
    fi
    DIR=$(cd "$2" && pwd)
}

# --- Ports -----------------------------------------------------------------

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

check_ports_valid() {
    local port seen=" "
    for port in "$@"; do
        if ! [[ $port =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] \
                || [ "$port" -gt 65535 ]; then
            die "invalid port '$port'"
        fi
        case $seen in
            *" $port "*) die "port $port is configured twice" ;;
        esac
        seen+="$port "
    done
}

check_ports_free() {
    local port taken=()
    for port in "$@"; do
        if port_open "$port"; then
            taken+=("$port")
        fi
    done
    if [ "${#taken[@]}" -gt 0 ]; then
        die "port(s) ${taken[*]} on 127.0.0.1 already in use; not starting" \
            "(set ${ENV_PREFIX}_PORT_BASE or ${ENV_PREFIX}_*_PORT to choose" \
            "others)"
    fi
}

choose_server_ports() {
    local base_variable=${ENV_PREFIX}_PORT_BASE base server variable i=0
    base=${!base_variable:-$1}
    for server in "${SERVERS[@]}"; do
        i=$((i + 1))
        variable=${ENV_PREFIX}_${server^^}_PORT
        PORT["$server"]=${!variable:-$((base + i))}
    done
}

save_ports() {
    local name key
    {
        for name in "$@"; do
            local -n saved=$name
            if [[ $(declare -p "$name") == "declare -"[aA]* ]]; then
                for key in "${!saved[@]}"; do
                    echo "${name}[$key]=${saved[$key]}"
                done
            else
                echo "$name=$saved"
            fi
            unset -n saved
        done
    } > "$DIR/ports"
}

load_ports() {
    [ -f "$DIR/ports" ] || return 1
    # shellcheck source=/dev/null
    . "$DIR/ports"
}

# Ports of an existing DIR; a different choice in the environment is an
# error, not something to ignore silently.
use_saved_ports() {
    local server variable
    load_ports || die "$DIR/ports is missing; remove $DIR to start afresh"
    for server in "${SERVERS[@]}"; do
        variable=${ENV_PREFIX}_${server^^}_PORT
        if [ -n "${!variable:-}" ] \
                && [ "${!variable}" != "${PORT[$server]}" ]; then
            die "$DIR was set up with the $server on port ${PORT[$server]}," \
                "not $variable=${!variable}; remove $DIR to choose other ports"
        fi
    done
}

# --- Processes -------------------------------------------------------------

process_alive() {
    local state
    [ -r "/proc/$1/stat" ] || return 1
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# The marker is a path under DIR, so a reused pid or a zombie never counts
# as ours.
live_pid() {
    local pidfile=$1 marker=$2 pid
    [ -s "$pidfile" ] || return 1
    pid=$(head -n 1 "$pidfile" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    process_alive "$pid" || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker" \
        || return 1
    echo "$pid"
}

# A session of its own: a terminal's or CI's signals do not reach it, and
# stop_pid finds the helpers it starts (e.g. Galera's rsync SST daemon). Its
# pid is that of the exec'd program.
launch() {
    local what=$1 pidfile=$2 log=$3
    shift 3
    rm -f "$pidfile"
    # shellcheck disable=SC2016  # $$ and $@ belong to the inner shell
    setsid bash -c 'echo $$ > "$0"; exec "$@"' "$pidfile" "$@" \
        >> "$log" 2>&1 < /dev/null &
    for _ in $(seq 50); do
        [ -s "$pidfile" ] && return 0
        sleep 0.1
    done
    die "could not launch $what (no pid file after 5 s)"
}

# PID is a session leader (launch): SIGTERM, up to STOP_TIMEOUT seconds for
# it to exit, then SIGKILL; then whatever is left of its session.
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
        sleep 0.1
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

# --- Starting and stopping -------------------------------------------------

begin_start() {
    STARTED='' LAUNCHED=()
    trap start_failed EXIT
    trap 'exit 130' INT TERM
    DEADLINE=$((SECONDS + START_TIMEOUT))
    # shellcheck disable=SC2034  # for the script's messages
    BEGAN=$SECONDS
}

end_start() {
    STARTED=yes
    trap - EXIT INT TERM
}

launched() {
    local name
    for name in "${LAUNCHED[@]}"; do
        [ "$name" != "$1" ] || return 0
    done
    return 1
}

start_failed() {
    local status=$? name variable=${ENV_PREFIX}_STOP_TIMEOUT
    [ -n "$STARTED" ] && return 0
    if [ "${#LAUNCHED[@]}" -gt 0 ]; then
        print_logs
        say "start failed; stopping what it started"
        # Not the whole STOP_TIMEOUT: a server amid its start (a Galera
        # joiner amid its state transfer) may ignore SIGTERM.
        STOP_TIMEOUT=${!variable:-15}
        for name in "${STOP_ORDER[@]}"; do
            if launched "$name"; then
                stop_server "$name" || true
            fi
        done
    fi
    exit "$status"
}

# Waits for "$@" (a command) until the start deadline; $1 describes it.
wait_for() {
    local what=$1 name
    shift
    until "$@"; do
        if [ "$SECONDS" -ge "$DEADLINE" ]; then
            die "timed out after ${START_TIMEOUT}s waiting for $what"
        fi
        for name in "${LAUNCHED[@]}"; do
            server_pid "$name" >/dev/null || die "the $name exited"
        done
        sleep "$WAIT_INTERVAL"
    done
}

stop_by_pidfile() {
    local name=$1 pid
    if pid=$(server_pid "$name"); then
        say "stopping $name (pid $pid)"
        stop_pid "$pid" "$name"
    fi
    rm -f "$(server_pidfile "$name")"
    [ -n "$pid" ]
}

stop_all() {
    local name stopped=0
    for name in "${STOP_ORDER[@]}"; do
        if stop_server "$name"; then
            stopped=$((stopped + 1))
        fi
    done
    rm -f "$DIR/env"
    [ "$stopped" -gt 0 ] || say "nothing was running in $DIR"
}

# --- Helpers ---------------------------------------------------------------

run_logged() {
    local log=$1 what=$2
    shift 2
    "$@" > "$log" 2>&1 || { tail -n 40 "$log" >&2; die "$what failed"; }
}

print_log_tails() {
    local file
    for file in "$@"; do
        [ -s "$file" ] || continue
        echo "==> $file (last 40 lines) <==" >&2
        tail -n 40 "$file" >&2
    done
}

check_socket_dir() {
    # A unix socket path must fit in sun_path (108 bytes).
    [ "${#DIR}" -le 80 ] || die "DIR is too long for the sockets: $DIR"
}

# --- MariaDB ---------------------------------------------------------------

mariadb_sql() {
    local socket=$1
    shift
    mariadb --no-defaults --protocol=socket --socket="$socket" --user=root \
        --connect-timeout=3 --batch --skip-column-names "$@"
}

mariadb_base_cnf() {
    local dir=$1 port=$2
    cat <<EOF
[client-server]
socket = $dir/mysqld.sock
port = $port

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
default_storage_engine = InnoDB
# Small and fast on a small shared test machine; durability does not matter.
innodb_flush_log_at_trx_commit = 2
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
# No kernel AIO contexts: several servers share the machine's limit.
innodb_use_native_aio = 0
EOF
}
