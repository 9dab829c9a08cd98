#!/usr/bin/env bash
# samples/linux/two_ends/{sender,receiver}.pcap: the SAME TCP transfers captured at both ends at
# once (run as root; namespaces and links twe_*).
#
#   twe_snd                twe_mid (bridge twe_br)            twe_rcv
#   twe_s0 ===veth=== twe_m0 [br] twe_m1 ===veth=== twe_r0
#   10.223.0.1/24                     ^ tc tbf              10.223.0.2/24
#   ^ tcpdump -> sender.pcap                                ^ tcpdump -> receiver.pcap
#
# CONNS CUBIC bulk transfers of BYTES each (python3 sockets, the kernel's defaults otherwise:
# SACK, timestamps) go one after another (0.2 s apart) from twe_snd to twe_rcv, port 5004; the
# receiver reads to EOF and closes.  The kernel bridge forwards (no TTL decrement: both hosts'
# packets carry TTL 64 at both capture points) through a tbf on the bridge port towards the
# receiver (rate 20mbit burst 32kb limit 100kb), so the transfers are cwnd-limited and the tbf
# drops some segments: those are seen in sender.pcap but never in receiver.pcap.  Offloads are
# off on every veth, so each segment is one MTU-sized packet at both points.  Two tcpdumps
# (-s 128, headers only) run at the same time: one in twe_snd on twe_s0, one in twe_rcv on
# twe_r0.  The script fails if either reports dropped packets.
# Knobs (environment): CONNS (2), BYTES per connection (1500000), RATE (20mbit), OUT (two_ends/).
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "make_two_ends.sh: must run as root" >&2; exit 1; }
for tool in ip tc tcpdump ethtool python3 ss; do
    command -v "$tool" >/dev/null || { echo "make_two_ends.sh: $tool not found" >&2; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE/two_ends}
CONNS=${CONNS:-2}
BYTES=${BYTES:-1500000}
RATE=${RATE:-20mbit}
NS_S=twe_snd NS_M=twe_mid NS_R=twe_rcv
V4_S=10.223.0.1 V4_R=10.223.0.2
PORT=5004
WORK=$(mktemp -d /tmp/twe_cap.XXXXXX)
TD_S= TD_R= RECV_PID=

log() { printf '[make_two_ends] %s\n' "$*" >&2; }
ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
teardown() { local n; for n in "$NS_S" "$NS_M" "$NS_R"; do ip netns del "$n" 2>/dev/null || true; done; }
cleanup() {
    local rc=$? p
    for p in $TD_S $TD_R $RECV_PID; do kill "$p" 2>/dev/null || true; done
    for p in $TD_S $TD_R $RECV_PID; do wait "$p" 2>/dev/null || true; done
    teardown
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$WORK/peer.py" <<'PY'
"""Sequential CUBIC bulk transfers: the receiver accepts CONNS connections one at a time."""
import socket, sys, time

BLOCK = bytes(range(256)) * 256          # 64 KiB


def recv(bind, port, conns):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((bind, port))
    ls.listen(4)
    out = []
    for _ in range(conns):
        c, _ = ls.accept()
        n = 0
        while d := c.recv(1 << 20):
            n += len(d)
        c.close()
        out.append(n)
    print(" ".join(map(str, out)))


def send(dst, port, conns, nbytes):
    for i in range(conns):
        if i:
            time.sleep(0.2)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        s.connect((dst, port))
        left = nbytes
        view = memoryview(BLOCK)
        while left > 0:
            left -= s.send(view[: min(left, len(BLOCK))])
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
        s.close()


if sys.argv[1] == "recv":
    recv(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
else:
    send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
PY

teardown
for n in "$NS_S" "$NS_M" "$NS_R"; do
    ip netns add "$n"
    ns "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip -n "$NS_S" link add name twe_s0 type veth peer name twe_m0 netns "$NS_M"
ip -n "$NS_R" link add name twe_r0 type veth peer name twe_m1 netns "$NS_M"
ip -n "$NS_M" link add name twe_br type bridge stp_state 0
for d in "$NS_S:twe_s0" "$NS_M:twe_m0" "$NS_M:twe_m1" "$NS_R:twe_r0"; do
    n=${d%%:*} d=${d#*:}
    ns "$n" ethtool -K "$d" tso off gso off gro off >/dev/null
    ip -n "$n" link set dev "$d" up
done
ip -n "$NS_M" link set dev twe_m0 master twe_br
ip -n "$NS_M" link set dev twe_m1 master twe_br
ip -n "$NS_M" link set dev twe_br up
ip -n "$NS_S" addr add "$V4_S/24" dev twe_s0
ip -n "$NS_R" addr add "$V4_R/24" dev twe_r0
ns "$NS_M" tc qdisc replace dev twe_m1 root tbf rate "$RATE" burst 32kb limit 100kb

start_tcpdump() {  # start_tcpdump NS DEV NAME -> pid in $!
    ip netns exec "$1" tcpdump -n -i "$2" -s 128 -B 16384 -U --immediate-mode -Z root \
        -w "$WORK/$3.pcap" "tcp port $PORT" 2>"$WORK/$3.err" &
}
wait_listening() {
    for _ in $(seq 100); do grep -q 'listening on' "$WORK/$1.err" 2>/dev/null && return 0; sleep 0.05; done
    cat "$WORK/$1.err" >&2; return 1
}
start_tcpdump "$NS_S" twe_s0 sender;   TD_S=$!
start_tcpdump "$NS_R" twe_r0 receiver; TD_R=$!
wait_listening sender
wait_listening receiver

ns "$NS_R" python3 "$WORK/peer.py" recv "$V4_R" "$PORT" "$CONNS" >"$WORK/recv.out" &
RECV_PID=$!
for _ in $(seq 100); do [[ -n $(ns "$NS_R" ss -Hltn "sport = :$PORT") ]] && break; sleep 0.05; done
log "$CONNS x $BYTES bytes through tbf $RATE, captured at both ends"
ns "$NS_S" python3 "$WORK/peer.py" send "$V4_R" "$PORT" "$CONNS" "$BYTES"
wait "$RECV_PID"; RECV_PID=
got=$(cat "$WORK/recv.out")
expect=$(printf "$BYTES %.0s" $(seq "$CONNS")); expect=${expect% }
[[ $got == "$expect" ]] || { log "receiver got '$got', expected '$expect'"; exit 1; }
tbf=$(ns "$NS_M" tc -s qdisc show dev twe_m1 | grep -oE 'Sent [0-9]+ bytes [0-9]+ pkt \(dropped [0-9]+' | head -1)
log "receiver got: $got; tbf: $tbf"

sleep 1
kill -TERM "$TD_S" "$TD_R"
wait "$TD_S" || true; TD_S=
wait "$TD_R" || true; TD_R=
for side in sender receiver; do
    grep -E 'captured|dropped' "$WORK/$side.err" | sed "s/^/    $side tcpdump: /" >&2 || true
    grep -q '^0 packets dropped by kernel' "$WORK/$side.err" \
        || { log "$side tcpdump dropped packets (or gave no count)"; exit 1; }
    if grep -qE '^[1-9][0-9]* packets? dropped by interface' "$WORK/$side.err"; then
        log "$side tcpdump: packets dropped by interface"; exit 1
    fi
done

mkdir -p "$OUT"
mv "$WORK/sender.pcap" "$OUT/sender.pcap"
mv "$WORK/receiver.pcap" "$OUT/receiver.pcap"
chmod 644 "$OUT/sender.pcap" "$OUT/receiver.pcap"
cap_s=$(grep -oE '^[0-9]+ packets captured' "$WORK/sender.err")
cap_r=$(grep -oE '^[0-9]+ packets captured' "$WORK/receiver.err")

cat >"${OUT}/README.md" <<EOF
# two_ends: the same TCP transfers captured at the sender and at the receiver

\`sender.pcap\` and \`receiver.pcap\` hold the **same $CONNS TCP connections**, captured at the
same time at both ends of one path: \`sender.pcap\` on the sender's interface (twe_s0, before
the bottleneck), \`receiver.pcap\` on the receiver's interface (twe_r0, after it).  Each
connection is a CUBIC bulk transfer of $BYTES bytes from $V4_S to $V4_R:$PORT (python3
sockets; kernel defaults otherwise: SACK, timestamps); the connections run one after another,
0.2 s apart; the receiver reads to EOF and closes.

## Path

    twe_snd                twe_mid (bridge twe_br)            twe_rcv
    twe_s0 ===veth=== twe_m0 [br] twe_m1 ===veth=== twe_r0
    $V4_S/24                     ^ tc tbf              $V4_R/24
    ^ tcpdump -> sender.pcap                                ^ tcpdump -> receiver.pcap

- Linux network namespaces joined by veth pairs and a kernel bridge (no routing hop: both
  hosts' packets carry TTL 64 at both capture points; no added delay, the RTT is the tbf's
  queueing delay).
- \`tc qdisc ... dev twe_m1 root tbf rate $RATE burst 32kb limit 100kb\` on the bridge port
  towards the receiver: the transfers are cwnd-limited, and the segments the tbf drops
  appear in sender.pcap but not in receiver.pcap.
- TSO/GSO/GRO off on every veth: one MTU-sized segment per packet at both points.
- \`tcpdump -s 128\` (headers only), filter \`tcp port $PORT\`; neither tcpdump dropped packets
  (sender: $cap_s, receiver: $cap_r).

This run: receiver got $got bytes; tbf on twe_m1: $tbf).

## Made by

    sudo samples/linux/make_two_ends.sh

on $(date -u '+%Y-%m-%d %H:%M UTC') (Linux $(uname -r)).
EOF
log "$(stat -c %s "$OUT/sender.pcap") bytes in $OUT/sender.pcap ($cap_s)"
log "$(stat -c %s "$OUT/receiver.pcap") bytes in $OUT/receiver.pcap ($cap_r)"
