#!/usr/bin/env bash
# Captures with the kernel's own retransmission counters beside them (run as root).
#
# Why: a sender-side capture cannot tell a fast retransmission from a timeout by itself;
# the sender's kernel counts both (nstat: TcpExtTCPFastRetrans, TcpExtTCPTimeouts, ...).
# Each capture here comes with that truth, recorded in the sender's namespace:
#
#   NAME.pcap          tcpdump -s 128 on the sender's interface (PFX_s0)
#   NAME.nstat         `nstat -az` before and after the transfer (two blocks, "# before"/"# after")
#   NAME.ss.gz         `ss -tin` polled every 10 ms during the transfer (each poll after a "# t=" line)
#   NAME.qdisc         `tc -s qdisc` of the sender's and the router's shaped ports after the transfer
#
# Topology (fresh namespaces; addresses private to them; PFX=tkq by default, the committed
# bottleneck_reno, outage_reno and shaper_gso_* were made with PFX=tkr, syn_lost* with PFX=tks):
#
#   PFX_snd                PFX_rtr                  PFX_rcv
#   PFX_s0 ===veth=== PFX_r0 [forwarding] PFX_r1 ===veth=== PFX_d0
#   10.217.1.1/24      10.217.1.254  10.217.2.254           10.217.2.1/24
#
# The transfers are iperf3 (-n BYTES, the receiver `iperf3 -s -1`); the congestion control is
# the sender namespace's net.ipv4.tcp_congestion_control.  Kernel defaults otherwise (SACK,
# timestamps, RTO floor 200 ms).  Captures:
#
#   shaper_reno / shaper_bbr  tbf on PFX_s0 itself (rate 20mbit burst 3000 limit 30000): tcpdump
#                             sees packets *after* the host's qdisc, so every re-send waits in the
#                             local queue before the capture sees it.  Offloads off on PFX_s0 and
#                             `gso_max_segs 1`: `ethtool -K gso off` alone is not enough, TCP
#                             still builds GSO packets (sk_setup_caps always sets NETIF_F_GSO
#                             for TCP) and they are split only *after* the qdisc; one segment per
#                             packet makes the tbf refuse whole segments, which TCP hears of
#                             (NET_XMIT_DROP: a refused re-send is TCPRetransFail, refused new
#                             data is sent again later as new data).  A refused segment never
#                             reaches the wire either, so the losses come from a shallow tbf in
#                             the router (PFX_r1: rate 18mbit burst 3000 limit 6000, downstream
#                             of the capture).
#   shaper_gso_reno / _bbr    the former shaper captures: tbf on PFX_s0 only, TSO/GSO left on.
#                             The tbf cuts GSO bursts into segments and drops some of them
#                             without telling TCP (tbf_segment returns success when any segment
#                             was queued), so those segments are lost before the wire; the kernel
#                             counts such re-sends as sent although tcpdump never sees them.
#   bottleneck_reno           tbf in the router (PFX_r1: rate 10mbit burst 3000 limit 20000), offloads
#                             off on the sender: the classic sender-side capture before a
#                             bottleneck.
#   outage_reno               as bottleneck_reno, and ~1 s into the transfer the receiver's veth
#                             MTU drops to 576 for 1.5 s (full-size segments are dropped on
#                             arrival, downstream of the capture point): the timeouts are on
#                             the wire.
#   syn_lost1 / syn_lost2     as bottleneck_reno with 1 MB, and the
#                             router drops the data connection's first SYN (syn_lost1) or its
#                             first two (syn_lost2): iperf3's control connection opens first, so
#                             the 2nd and 3rd SYNs to port 5201 (iptables' nth match, one rule
#                             per SYN).  The capture sees each SYN sent again after its timeout
#                             (1 s, then 1 s more: linear SYN timeouts); the kernel's ss log
#                             shows what it starts from.
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "make_kernel_truth.sh: must run as root" >&2; exit 1; }
for tool in ip tc tcpdump iperf3 nstat ss ethtool gzip iptables; do
    command -v "$tool" >/dev/null || { echo "make_kernel_truth.sh: $tool not found" >&2; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE/kernel_truth}
ONLY=${ONLY:-"shaper_reno shaper_bbr shaper_gso_reno shaper_gso_bbr bottleneck_reno outage_reno syn_lost1 syn_lost2"}
PFX=${PFX:-tkq}  # namespace and link names start with it
NS_S=${PFX}_snd NS_R=${PFX}_rtr NS_D=${PFX}_rcv
A_S=10.217.1.1 A_D=10.217.2.1
WORK=$(mktemp -d /tmp/${PFX}_truth.XXXXXX)
PIDS=()

log() { printf '[make_kernel_truth] %s\n' "$*" >&2; }
ns() { local n=$1; shift; ip netns exec "$n" "$@"; }

teardown() {
    local n
    for n in "$NS_S" "$NS_R" "$NS_D"; do ip netns del "$n" 2>/dev/null || true; done
}

cleanup() {
    local rc=$? p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    teardown
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

setup() {  # setup CC OFFLOAD(on|off)
    local cc=$1 off=$2 n
    teardown
    for n in "$NS_S" "$NS_R" "$NS_D"; do ip netns add "$n"; ns "$n" ip link set lo up; done
    ip link add ${PFX}_s0 netns "$NS_S" type veth peer name ${PFX}_r0 netns "$NS_R"
    ip link add ${PFX}_r1 netns "$NS_R" type veth peer name ${PFX}_d0 netns "$NS_D"
    ns "$NS_S" ip addr add "$A_S/24" dev ${PFX}_s0
    ns "$NS_R" ip addr add 10.217.1.254/24 dev ${PFX}_r0
    ns "$NS_R" ip addr add 10.217.2.254/24 dev ${PFX}_r1
    ns "$NS_D" ip addr add "$A_D/24" dev ${PFX}_d0
    for n in "$NS_S:${PFX}_s0" "$NS_R:${PFX}_r0" "$NS_R:${PFX}_r1" "$NS_D:${PFX}_d0"; do
        ns "${n%%:*}" ip link set "${n#*:}" up
    done
    ns "$NS_S" ip route add default via 10.217.1.254
    ns "$NS_D" ip route add default via 10.217.2.254
    ns "$NS_R" sysctl -qw net.ipv4.ip_forward=1
    ns "$NS_S" sysctl -qw net.ipv4.tcp_congestion_control="$cc" net.ipv4.tcp_sack=1 net.ipv4.tcp_timestamps=1
    if [[ $off == off ]]; then
        ns "$NS_S" ethtool -K ${PFX}_s0 tso off gso off gro off >/dev/null
    fi
    ns "$NS_R" ethtool -K ${PFX}_r0 gro off >/dev/null
    ns "$NS_R" ethtool -K ${PFX}_r1 tso off gso off gro off >/dev/null
    ns "$NS_D" ethtool -K ${PFX}_d0 tso off gso off gro off >/dev/null
}

ss_poll() {  # ss -tin every 10 ms in the sender's namespace (one shell inside it), until killed
    exec ip netns exec "$NS_S" bash -c 'while :; do printf "# t=%s\n" "$EPOCHREALTIME"; ss -tin dst '"$A_D"'; sleep 0.01; done'
}

run() {  # run NAME BYTES [outage]
    local name=$1 bytes=$2 outage=${3:-} p
    ns "$NS_D" iperf3 -s -1 -B "$A_D" >/dev/null 2>&1 &
    p=$!; PIDS+=("$p")
    sleep 0.3
    ns "$NS_S" tcpdump -U --immediate-mode -B 16384 -Z root -n -s 128 -i ${PFX}_s0 -w "$WORK/$name.pcap" \
        "tcp port 5201" 2>"$WORK/tcpdump.err" &
    local td=$!; PIDS+=("$td")
    for _ in $(seq 100); do grep -q 'listening on' "$WORK/tcpdump.err" 2>/dev/null && break; sleep 0.05; done
    { echo "# before"; ns "$NS_S" nstat -az; } >"$WORK/$name.nstat"
    ss_poll >"$WORK/$name.ss" 2>/dev/null &
    local sp=$!; PIDS+=("$sp")
    if [[ -n $outage ]]; then
        ( sleep 1.0; ns "$NS_D" ip link set ${PFX}_d0 mtu 576; sleep 1.5; ns "$NS_D" ip link set ${PFX}_d0 mtu 1500 ) &
        PIDS+=("$!")
    fi
    ns "$NS_S" iperf3 -c "$A_D" -n "$bytes" -B "$A_S" >"$WORK/$name.iperf" 2>&1
    wait "$p" 2>/dev/null || true
    sleep 0.5
    kill "$sp" 2>/dev/null || true; wait "$sp" 2>/dev/null || true
    { echo "# after"; ns "$NS_S" nstat -az; } >>"$WORK/$name.nstat"
    kill "$td"; wait "$td" 2>/dev/null || true
    grep -E 'captured|dropped' "$WORK/tcpdump.err" | sed "s/^/    $name tcpdump: /" >&2 || true
    { echo "# $NS_S ${PFX}_s0"; ns "$NS_S" tc -s qdisc show dev ${PFX}_s0
      echo "# $NS_R ${PFX}_r1"; ns "$NS_R" tc -s qdisc show dev ${PFX}_r1; } >"$WORK/$name.qdisc"
    sed "s/^/    $name: /" "$WORK/$name.qdisc" >&2
    mkdir -p "$OUT"
    cp "$WORK/$name.pcap" "$WORK/$name.nstat" "$WORK/$name.qdisc" "$OUT/"
    gzip -9c "$WORK/$name.ss" >"$OUT/$name.ss.gz"
    grep -E '^(TcpRetransSegs|TcpExtTCPFastRetrans|TcpExtTCPTimeouts|TcpExtTCPLossProbes|TcpExtTCPSlowStartRetrans|TcpExtTCPRetransFail) ' \
        "$WORK/$name.nstat" | sed "s/^/    $name /" >&2
}

for name in $ONLY; do
    log "$name"
    case $name in
    shaper_reno|shaper_bbr)
        setup "${name#shaper_}" off
        ns "$NS_S" ip link set ${PFX}_s0 gso_max_segs 1
        ns "$NS_S" tc qdisc add dev ${PFX}_s0 root tbf rate 20mbit burst 3000 limit 30000
        ns "$NS_R" tc qdisc add dev ${PFX}_r1 root tbf rate 18mbit burst 3000 limit 6000
        run "$name" 3M ;;
    shaper_gso_reno|shaper_gso_bbr)
        setup "${name#shaper_gso_}" on
        ns "$NS_S" tc qdisc add dev ${PFX}_s0 root tbf rate 20mbit burst 3000 limit 30000
        run "$name" 3M ;;
    bottleneck_reno)
        setup reno off
        ns "$NS_R" tc qdisc add dev ${PFX}_r1 root tbf rate 10mbit burst 3000 limit 20000
        run "$name" 3M ;;
    outage_reno)
        setup reno off
        ns "$NS_R" tc qdisc add dev ${PFX}_r1 root tbf rate 10mbit burst 3000 limit 20000
        run "$name" 4M outage ;;
    syn_lost1|syn_lost2)
        setup reno off
        ns "$NS_R" tc qdisc add dev ${PFX}_r1 root tbf rate 10mbit burst 3000 limit 20000
        for _ in $(seq "${name#syn_lost}"); do
            ns "$NS_R" iptables -A FORWARD -p tcp --syn --dport 5201 -m statistic --mode nth --every 1000 \
                --packet 1 -j DROP
        done
        run "$name" 1M ;;
    *) log "unknown capture $name"; exit 2 ;;
    esac
done
teardown
log "done: $OUT"
