#!/usr/bin/env bash
# samples/linux/cwnd_restart/cwnd_restart.pcap: the start of FLOWS parallel CUBIC transfers through a tbf on a
# kernel bridge, captured at the senders (tcpdump -s 128), as bench/make_capture.sh makes
# bench/data/big.pcap but small (run as root; namespaces cwr_*).
#
#   cwr_snd                cwr_mid (bridge)                 cwr_rcv
#   cwr_s0 ===veth=== cwr_m0 [br] cwr_m1 ===veth=== cwr_c0
#   10.219.0.1/24                     ^ tc tbf              10.219.0.2/24
#
# The RTT is tens of µs (no added delay): the flows' first bursts meet in the tbf, a burst's
# segments reach the receiver late and out of order, the senders re-send them (one per ACK,
# tens of µs apart) and the receiver then reports every re-sent segment as a duplicate
# (D-SACK, RFC 2883): the originals were delayed, not lost. The cwnd estimate takes these
# re-sends for timeouts (a restart of snd_nxt) while SACK blocks lie above the restarted
# snd_nxt (tests/test_cwnd_restart.py).
# Knobs: FLOWS (4), BYTES per flow (1500000), RATE (600mbit), OUT.
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "make_cwnd_restart.sh: must run as root" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE/cwnd_restart/cwnd_restart.pcap}
FLOWS=${FLOWS:-4}
BYTES=${BYTES:-1500000}
RATE=${RATE:-600mbit}
NS_S=cwr_snd NS_M=cwr_mid NS_R=cwr_rcv
V4_S=10.219.0.1 V4_R=10.219.0.2
PORT=5002
WORK=$(mktemp -d /tmp/cwr_cap.XXXXXX)
TCPDUMP_PID= RECV_PID=

ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
teardown() { local n; for n in "$NS_S" "$NS_M" "$NS_R"; do ip netns del "$n" 2>/dev/null || true; done; }
cleanup() {
    local rc=$? p
    for p in $TCPDUMP_PID $RECV_PID; do kill "$p" 2>/dev/null || true; done
    for p in $TCPDUMP_PID $RECV_PID; do wait "$p" 2>/dev/null || true; done
    teardown
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT

cat >"$WORK/peer.py" <<'PY'
"""FLOWS parallel CUBIC bulk senders / one receiver serving them all."""
import socket, sys, threading

BLOCK = bytes(range(256)) * 256


def recv(bind, port, flows):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((bind, port))
    ls.listen(flows)
    totals = []

    def drain(c):
        n = 0
        while d := c.recv(1 << 20):
            n += len(d)
        c.close()
        totals.append(n)

    threads = []
    for _ in range(flows):
        c, _ = ls.accept()
        threads.append(threading.Thread(target=drain, args=(c,)))
        threads[-1].start()
    for t in threads:
        t.join()
    print(sum(totals))


def send(dst, port, flows, nbytes):
    def one(i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        s.bind(("0.0.0.0", 41000 + i))
        s.connect((dst, port))
        left, view = nbytes, memoryview(BLOCK)
        while left > 0:
            left -= s.send(view[: min(left, len(BLOCK))])
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
        s.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(flows)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if sys.argv[1] == "recv":
    recv(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
else:
    send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
PY

teardown
ip netns add "$NS_S"; ip netns add "$NS_M"; ip netns add "$NS_R"
ip -n "$NS_S" link add name cwr_s0 type veth peer name cwr_m0 netns "$NS_M"
ip -n "$NS_R" link add name cwr_c0 type veth peer name cwr_m1 netns "$NS_M"
ns "$NS_M" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$NS_M" link add name cwr_br type bridge stp_state 0
for d in "$NS_S:cwr_s0" "$NS_M:cwr_m0" "$NS_M:cwr_m1" "$NS_R:cwr_c0"; do
    n=${d%%:*} d=${d#*:}
    ns "$n" ethtool -K "$d" tso off gso off gro off >/dev/null
    ip -n "$n" link set dev "$d" up
done
ip -n "$NS_M" link set dev cwr_m0 master cwr_br
ip -n "$NS_M" link set dev cwr_m1 master cwr_br
ip -n "$NS_M" link set dev cwr_br up
ip -n "$NS_S" addr add "$V4_S/24" dev cwr_s0
ip -n "$NS_R" addr add "$V4_R/24" dev cwr_c0
ns "$NS_M" tc qdisc replace dev cwr_m1 root tbf rate "$RATE" burst 200kb limit 600kb

ns "$NS_S" tcpdump -n -s 128 -U -Z root -w "$WORK/cap.pcap" "tcp port $PORT" 2>"$WORK/tcpdump.err" &
TCPDUMP_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$WORK/tcpdump.err" 2>/dev/null && break; sleep 0.05; done
ns "$NS_R" python3 "$WORK/peer.py" recv "$V4_R" "$PORT" "$FLOWS" >"$WORK/recv.out" &
RECV_PID=$!
for _ in $(seq 100); do [[ -n $(ns "$NS_R" ss -Hltn "sport = :$PORT") ]] && break; sleep 0.05; done
ns "$NS_S" python3 "$WORK/peer.py" send "$V4_R" "$PORT" "$FLOWS" "$BYTES"
wait "$RECV_PID"; RECV_PID=
[[ $(cat "$WORK/recv.out") == $((FLOWS * BYTES)) ]] || { echo "receiver got $(cat "$WORK/recv.out") bytes" >&2; exit 1; }
sleep 1
kill -TERM "$TCPDUMP_PID"; wait "$TCPDUMP_PID" || true; TCPDUMP_PID=
mv "$WORK/cap.pcap" "$OUT"
echo "$(capinfos -c -M "$OUT" | awk -F': *' '/Number of packets/ {print $2}') packets in $OUT ($(stat -c %s "$OUT") bytes)"
