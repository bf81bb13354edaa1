#!/usr/bin/env bash
# Private network "hosts" on this machine, for the fault tests: each host is
# a network namespace with an address of its own on a bridge in the root
# namespace, so that a server running in it can be cut off from everyone
# (the service, its peers) and healed again, as a network partition would.
# Nothing leaves the machine: the bridge has no uplink.
#   tools/netns.sh up NET ADDR           # the bridge NET with ADDR/24 (the
#                                        # address the root namespace, where
#                                        # the service runs, is reached at)
#   tools/netns.sh host NET NAME ADDR    # namespace NAME with ADDR/24 on its
#                                        # eth0, linked to bridge NET, lo up
#   tools/netns.sh exec NAME COMMAND...  # COMMAND inside NAME (ip netns exec)
#   tools/netns.sh cut NAME              # NAME's link down: a partition (TCP
#                                        # peers see silence, not a reset)
#   tools/netns.sh heal NAME             # its link up again
#   tools/netns.sh down NET [NAME...]    # remove the hosts and the bridge
#                                        # (what is already gone is skipped)
# Names: NET at most 11 characters, NAME at most 12 (the root side of a
# host's link is named "vh-NAME", at most 15). Runs as root.
set -euo pipefail

die() {
    echo "netns.sh: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -e/p' "$0" | sed -n 's/^#   //p' >&2
    exit 2
}

link_of() {
    [ "${#1}" -le 12 ] || die "host name $1 is longer than 12 characters"
    echo "vh-$1"
}

cmd_up() {
    local net=$1 addr=$2
    [ "${#net}" -le 11 ] || die "bridge name $net is longer than 11 characters"
    if ! ip link show "$net" >/dev/null 2>&1; then
        ip link add "$net" type bridge
    fi
    ip address replace "$addr/24" dev "$net"
    ip link set "$net" up
}

cmd_host() {
    local net=$1 name=$2 addr=$3 link
    link=$(link_of "$name")
    ip link show "$net" >/dev/null 2>&1 || die "no bridge $net: run up first"
    ip netns list | grep -qw "^$name" || ip netns add "$name"
    if ! ip link show "$link" >/dev/null 2>&1; then
        ip link add "$link" type veth peer name eth0 netns "$name"
    fi
    ip link set "$link" master "$net"
    ip link set "$link" up
    ip netns exec "$name" ip link set lo up
    ip netns exec "$name" ip address replace "$addr/24" dev eth0
    ip netns exec "$name" ip link set eth0 up
}

cmd_cut() {
    ip link set "$(link_of "$1")" down
}

cmd_heal() {
    ip link set "$(link_of "$1")" up
}

cmd_exec() {
    local name=$1
    shift
    exec ip netns exec "$name" "$@"
}

cmd_down() {
    local net=$1 name
    shift
    for name in "$@"; do
        ip link del "$(link_of "$name")" 2>/dev/null || true
        ip netns del "$name" 2>/dev/null || true
    done
    ip link del "$net" 2>/dev/null || true
}

[ "$#" -ge 1 ] || usage
command=$1
shift
case $command in
    up) [ "$#" -eq 2 ] || usage ;;
    host) [ "$#" -eq 3 ] || usage ;;
    cut | heal) [ "$#" -eq 1 ] || usage ;;
    exec) [ "$#" -ge 2 ] || usage ;;
    down) [ "$#" -ge 1 ] || usage ;;
    *) usage ;;
esac
"cmd_$command" "$@"
