#!/usr/bin/env bash
# An application-limited Linux CUBIC sender at sub-ms RTT, with the kernel's own view beside it
# (run as root).  Output in samples/linux/app_chunks/ (NAME = chunks):
#
#   NAME.pcap    tcpdump -s 128 on the sender's interface (PFX_s0)
#   NAME.ss.gz   `ss -tin` polled with 10 ms sleeps in the sender's namespace (each poll after a "# t=" line)
#   NAME.nstat   `nstat -az` in the sender's namespace before and after ("# before"/"# after")
#   NAME.qdisc   `tc -s qdisc` of the router's shaped port after the transfer
#
#   PFX_snd                PFX_rtr                  PFX_rcv
#   PFX_s0 ===veth=== PFX_r0 [forwarding] PFX_r1 ===veth=== PFX_d0
#   10.218.1.1/24      10.218.1.254  10.218.2.254           10.218.2.1/24
#
# The bottleneck is a tbf on PFX_r1 (RATE, burst 30000, limit LIMIT); no added delay, so the RTT
# is the veth round trip plus the tbf queue (tens of µs to ~1 ms).  Offloads off on every veth end
# (MSS-sized segments).  The sender is a Python loop of 64 KiB send() calls on one CUBIC socket
# with SO_SNDBUF = SNDBUF (as bench/make_capture.sh's, whose 64 KiB writes leave a 376-byte tail:
# 65,536 = 45 x 1,448 + 376), pausing PAUSE_S seconds after every WRITES writes: between pauses the
# socket buffer, not cwnd, holds it back much of the time (the application is woken as ACKs free
# buffer space, so its next write leaves within tens of µs of an ACK), and during a pause it has
# nothing to send.  The receiver drains with 1 MB recv() calls.
#
# Knobs (environment): PFX (tkA), BYTES (5000000), RATE (200mbit), LIMIT (20000), SNDBUF (131072),
# WRITES (2), PAUSE_S (0.01), OUT (samples/linux/app_chunks).
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "make_app_chunks.sh: must run as root" >&2; exit 1; }
for tool in ip tc tcpdump nstat ss ethtool gzip python3; do
    command -v "$tool" >/dev/null || { echo "make_app_chunks.sh: $tool not found" >&2; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE/app_chunks}
PFX=${PFX:-tkA}
BYTES=${BYTES:-5000000} RATE=${RATE:-200mbit} LIMIT=${LIMIT:-20000}
SNDBUF=${SNDBUF:-131072} WRITES=${WRITES:-2} PAUSE_S=${PAUSE_S:-0.01}
NAME=chunks
NS_S=${PFX}_snd NS_R=${PFX}_rtr NS_D=${PFX}_rcv
A_S=10.218.1.1 A_D=10.218.2.1 PORT=5301
WORK=$(mktemp -d /tmp/${PFX}_chunks.XXXXXX)
PIDS=()

log() { printf '[make_app_chunks] %s\n' "$*" >&2; }
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

cat >"$WORK/peer.py" <<'PY'
"""recv BIND PORT | send DST PORT BYTES SNDBUF WRITES PAUSE_S"""
import socket, sys, time

if sys.argv[1] == "recv":
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((sys.argv[2], int(sys.argv[3])))
    ls.listen(1)
    c, _ = ls.accept()
    n = 0
    while d := c.recv(1 << 20):
        n += len(d)
    print(n)
else:
    dst, port, left, sndbuf, writes, pause = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), \
        int(sys.argv[6]), float(sys.argv[7])
    block = memoryview(bytes(range(256)) * 256)  # 64 KiB
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    s.connect((dst, port))
    k = 0
    while left > 0:
        left -= s.send(block[: min(left, len(block))])
        k += 1
        if k % writes == 0:
            time.sleep(pause)
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()
PY

teardown
for n in "$NS_S" "$NS_R" "$NS_D"; do ip netns add "$n"; ns "$n" ip link set lo up; done
ip link add ${PFX}_s0 netns "$NS_S" type veth peer name ${PFX}_r0 netns "$NS_R"
ip link add ${PFX}_r1 netns "$NS_R" type veth peer name ${PFX}_d0 netns "$NS_D"
ns "$NS_S" ip addr add "$A_S/24" dev ${PFX}_s0
ns "$NS_R" ip addr add 10.218.1.254/24 dev ${PFX}_r0
ns "$NS_R" ip addr add 10.218.2.254/24 dev ${PFX}_r1
ns "$NS_D" ip addr add "$A_D/24" dev ${PFX}_d0
for d in "$NS_S:${PFX}_s0" "$NS_R:${PFX}_r0" "$NS_R:${PFX}_r1" "$NS_D:${PFX}_d0"; do
    ns "${d%%:*}" ethtool -K "${d#*:}" tso off gso off gro off >/dev/null
    ns "${d%%:*}" ip link set "${d#*:}" up
done
ns "$NS_S" ip route add default via 10.218.1.254
ns "$NS_D" ip route add default via 10.218.2.254
ns "$NS_R" sysctl -qw net.ipv4.ip_forward=1
ns "$NS_S" sysctl -qw net.ipv4.tcp_sack=1 net.ipv4.tcp_timestamps=1
ns "$NS_R" tc qdisc add dev ${PFX}_r1 root tbf rate "$RATE" burst 30000 limit "$LIMIT"

ns "$NS_D" python3 "$WORK/peer.py" recv "$A_D" "$PORT" >"$WORK/recv.out" &
RECV=$!; PIDS+=("$RECV")
for _ in $(seq 100); do [[ -n $(ns "$NS_D" ss -Hltn "sport = :$PORT") ]] && break; sleep 0.05; done
ns "$NS_S" tcpdump -U --immediate-mode -B 16384 -Z root -n -s 128 -i ${PFX}_s0 -w "$WORK/$NAME.pcap" \
    "tcp port $PORT" 2>"$WORK/tcpdump.err" &
TD=$!; PIDS+=("$TD")
for _ in $(seq 100); do grep -q 'listening on' "$WORK/tcpdump.err" 2>/dev/null && break; sleep 0.05; done
{ echo "# before"; ns "$NS_S" nstat -az; } >"$WORK/$NAME.nstat"
ip netns exec "$NS_S" bash -c 'while :; do printf "# t=%s\n" "$EPOCHREALTIME"; ss -tin dst '"$A_D"'; sleep 0.01; done' \
    >"$WORK/$NAME.ss" 2>/dev/null &
SP=$!; PIDS+=("$SP")
sleep 0.05
log "sending $BYTES bytes (64 KiB writes, SO_SNDBUF $SNDBUF, $PAUSE_S s pause every $WRITES) through tbf $RATE"
ns "$NS_S" python3 "$WORK/peer.py" send "$A_D" "$PORT" "$BYTES" "$SNDBUF" "$WRITES" "$PAUSE_S"
wait "$RECV"
[[ $(cat "$WORK/recv.out") == "$BYTES" ]] || { log "receiver got $(cat "$WORK/recv.out") bytes"; exit 1; }
sleep 0.3
kill "$SP" 2>/dev/null || true; wait "$SP" 2>/dev/null || true
{ echo "# after"; ns "$NS_S" nstat -az; } >>"$WORK/$NAME.nstat"
kill "$TD"; wait "$TD" 2>/dev/null || true
grep -E 'captured|dropped' "$WORK/tcpdump.err" | sed 's/^/    tcpdump: /' >&2 || true
{ echo "# $NS_R ${PFX}_r1"; ns "$NS_R" tc -s qdisc show dev ${PFX}_r1; } >"$WORK/$NAME.qdisc"
mkdir -p "$OUT"
cp "$WORK/$NAME.pcap" "$WORK/$NAME.nstat" "$WORK/$NAME.qdisc" "$OUT/"
gzip -9c "$WORK/$NAME.ss" >"$OUT/$NAME.ss.gz"
grep -E '^(TcpRetransSegs|TcpExtTCPFastRetrans|TcpExtTCPTimeouts|TcpExtTCPLossProbes) ' "$WORK/$NAME.nstat" \
    | sed 's/^/    /' >&2
sed 's/^/    /' "$WORK/$NAME.qdisc" >&2
ls -l "$OUT" >&2
