#!/usr/bin/env bash
# Regenerate samples/linux/kernel/{cubic,reno,bbr,tiny}/: a capture beside the sender kernel's own
# view of the same connection (run as root).
#
# Topology (three network namespaces, plain kernel forwarding in the middle):
#
#   tkk_snd                     tkk_rtr (router, ip_forward=1)          tkk_rcv
#   tkk_s0 ====veth==== tkk_r0            tkk_r1 ====veth==== tkk_c0
#   10.231.1.1/24       10.231.1.254      10.231.2.254        10.231.2.1/24
#                                         ^ tc tbf: the bottleneck (queues, tail-drops)
#
# In every run directory:
#   capture.pcap  tcpdump -s 128 on tkk_s0 (the sender's interface, before the bottleneck)
#   ss.log        the sender namespace's `ss` polled every 10 ms while iperf3 runs, timestamped
#   nstat.log     `nstat -az` in the sender namespace before and after (each after a `date` line)
#   netstat.log   (reno only) `netstat -s` before and after, the same way
#   run.json      what was run
#
# Two iproute2 output layouts are recorded (both are what ss 6.1 prints here):
#   cubic, bbr: `date +%s.%N` line, then `ss -tin` (the two-line layout: the socket line,
#               then a tab-indented line of TCP info);
#   reno:       `ss -tineOm` (-e -m, and -O: one line per socket) piped through moreutils'
#               `ts '%.s'` (an epoch prefix on every line).
#
# The transfer is iperf3 (client = sender, --cport 40000, -n caps the bytes, -C the congestion
# control); its control connection (port 5201 too) is in ss.log and the capture as well.
# Offloads (tso/gso/gro, tx checksums) are off on every veth end: one wire segment is one
# kernel segment, so the kernel's counters count what the capture shows.
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "make_kernel_samples.sh: must run as root" >&2; exit 1; }
for tool in ip tc tcpdump iperf3 ss nstat netstat ts ethtool capinfos; do
    command -v "$tool" >/dev/null || { echo "make_kernel_samples.sh: $tool not found" >&2; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE/kernel}
NS_S=tkk_snd NS_M=tkk_rtr NS_R=tkk_rcv
SND=10.231.1.1 RCV=10.231.2.1
BYTES=${BYTES:-2500000}          # ~2 s through the 10 Mbit/s bottleneck
RATE=${RATE:-10mbit} BURST=${BURST:-3000} DEFAULT_LIMIT=${LIMIT:-45000}   # tbf queue ~30 full segments
WORK=$(mktemp -d)
PIDS=()

log() { echo "make_kernel_samples: $*" >&2; }
ns() { local n=$1; shift; ip netns exec "$n" "$@"; }

teardown() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    PIDS=()
    for n in "$NS_S" "$NS_M" "$NS_R"; do ip netns del "$n" 2>/dev/null || true; done
}
trap 'teardown; rm -rf "$WORK"' EXIT

setup() {
    teardown
    ip netns add "$NS_S"; ip netns add "$NS_M"; ip netns add "$NS_R"
    ip -n "$NS_S" link add name tkk_s0 type veth peer name tkk_r0 netns "$NS_M"
    ip -n "$NS_R" link add name tkk_c0 type veth peer name tkk_r1 netns "$NS_M"
    local d n
    for d in "$NS_S:tkk_s0" "$NS_M:tkk_r0" "$NS_M:tkk_r1" "$NS_R:tkk_c0"; do
        n=${d%%:*} d=${d#*:}
        ns "$n" ethtool -K "$d" tso off gso off gro off tx off >/dev/null
        ip -n "$n" link set dev "$d" up
    done
    for n in "$NS_S" "$NS_M" "$NS_R"; do ip -n "$n" link set dev lo up; done
    ip -n "$NS_S" addr add "$SND/24" dev tkk_s0
    ip -n "$NS_M" addr add 10.231.1.254/24 dev tkk_r0
    ip -n "$NS_M" addr add 10.231.2.254/24 dev tkk_r1
    ip -n "$NS_R" addr add "$RCV/24" dev tkk_c0
    ip -n "$NS_S" route add default via 10.231.1.254
    ip -n "$NS_R" route add default via 10.231.2.254
    ns "$NS_M" sysctl -qw net.ipv4.ip_forward=1
    for n in "$NS_S" "$NS_R"; do
        ns "$n" sysctl -qw net.ipv4.tcp_sack=1 net.ipv4.tcp_timestamps=1 net.ipv4.tcp_no_metrics_save=1
    done
    ns "$NS_M" tc qdisc replace dev tkk_r1 root tbf rate "$RATE" burst "$BURST" limit "$LIMIT"
}

# poll_ss LAYOUT FILE: the sender's sockets towards the receiver, every 10 ms, until $WORK/stop
# exists. The loop runs inside the sender's namespace (one `ip netns exec`, not one per poll:
# it costs ~10 ms a call on a loaded machine). ss -e prints "Failed to find cgroup2 mount" on
# stderr where no cgroup2 is mounted: dropped.
poll_ss() {
    local layout=$1 file=$2
    if [[ $layout == two-line ]]; then
        ns "$NS_S" bash -c 'while [[ ! -e $1/stop ]]; do date +%s.%N; ss -tin dst "$2"; sleep 0.01; done' \
            _ "$WORK" "$RCV" >>"$file"
    else
        ns "$NS_S" bash -c 'while [[ ! -e $1/stop ]]; do ss -tineOm dst "$2" 2>/dev/null; sleep 0.01; done' \
            _ "$WORK" "$RCV" | ts '%.s' >>"$file"
    fi
}

snapshot() {  # snapshot FILE CMD...: a date line, then the command's output
    local file=$1; shift
    { date +%s.%N; ns "$NS_S" "$@"; } >>"$file"
}

run() {  # run NAME CC LAYOUT
    local name=$1 cc=$2 layout=$3 dir="$OUT/$1"
    log "--- $name ($cc, ss $layout)"
    setup
    rm -rf "$dir"; mkdir -p "$dir"
    ns "$NS_R" iperf3 -s -1 -B "$RCV" >"$WORK/server.out" 2>&1 &
    PIDS+=($!)
    local i
    for i in $(seq 100); do [[ -n $(ns "$NS_R" ss -Hltn "sport = :5201") ]] && break; sleep 0.05; done
    rm -f "$WORK/tcpdump.err"
    ns "$NS_S" tcpdump -U --immediate-mode -B 16384 -Z root -n -s 128 -i tkk_s0 -w "$dir/capture.pcap" \
        "tcp and host $RCV" 2>"$WORK/tcpdump.err" &
    local tcpdump_pid=$!
    PIDS+=($tcpdump_pid)
    for i in $(seq 100); do grep -q 'listening on' "$WORK/tcpdump.err" 2>/dev/null && break; sleep 0.05; done
    NSTAT_HISTORY="$WORK/nstat.hist" snapshot "$dir/nstat.log" nstat -az
    [[ $name == reno ]] && snapshot "$dir/netstat.log" netstat -s
    poll_ss "$layout" "$dir/ss.log" &
    local poll_pid=$!
    ns "$NS_S" iperf3 -c "$RCV" --cport 40000 -n "$BYTES" -C "$cc" -J >"$WORK/client.json"
    sleep 0.3                            # the last ACKs and FINs
    touch "$WORK/stop"; wait "$poll_pid" || true; rm -f "$WORK/stop"
    NSTAT_HISTORY="$WORK/nstat.hist" snapshot "$dir/nstat.log" nstat -az
    [[ $name == reno ]] && snapshot "$dir/netstat.log" netstat -s
    sleep 0.5
    kill -TERM "$tcpdump_pid"; wait "$tcpdump_pid" 2>/dev/null || true
    grep -E 'captured|dropped by kernel' "$WORK/tcpdump.err" | sed 's/^/    tcpdump: /' >&2 || true
    local drops; drops=$(ns "$NS_M" tc -s qdisc show dev tkk_r1 | grep -o 'dropped [0-9]*' | head -1)
    python3 - "$WORK/client.json" "$name" "$cc" "$layout" "$RATE" "$BURST" "$LIMIT" "$drops" \
        >"$dir/run.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
end = doc["end"]
print(json.dumps({
    "congestion_control": sys.argv[3], "ss_layout": sys.argv[4],
    "bottleneck": f"tc tbf rate {sys.argv[5]} burst {sys.argv[6]} limit {sys.argv[7]} on the router's egress",
    "tbf": sys.argv[8],
    "iperf3_sent_bytes": end["sum_sent"]["bytes"],
    "iperf3_retransmits": end["sum_sent"].get("retransmits"),
    "iperf3_seconds": round(end["sum_sent"]["seconds"], 3),
}, indent=2))
PY
    chmod 0644 "$dir"/*
    log "$name: $(capinfos -c -M "$dir/capture.pcap" | awk -F': *' '/Number of packets/ {print $2}') packets," \
        "$(stat -c %s "$dir/capture.pcap") bytes, ss.log $(stat -c %s "$dir/ss.log") bytes, tbf $drops"
    teardown
}

mkdir -p "$OUT"
# NAME:CC:LAYOUT[:TBF_LIMIT_BYTES]; tiny: an 8 kB router queue, so cwnd stays at 5-8 segments
for spec in ${ONLY:-cubic:cubic:two-line reno:reno:one-line bbr:bbr:two-line tiny:reno:two-line:8000}; do
    IFS=: read -r name cc layout limit <<<"$spec"
    LIMIT=${limit:-$DEFAULT_LIMIT} run "$name" "$cc" "$layout"
done
log "done; tkk namespaces left: $(ip netns list | grep -c '^tkk' || true)"
