#!/usr/bin/env bash
# Produce bench/data/big.pcap: a real Linux TCP capture of >= 1,000,000 packets
# (run as root; bench/data/ is git-ignored).
#
#   tk_bsnd                tk_bmid (bridge)                 tk_brcv
#   tk_bs0 ===veth=== tk_bm0 [br] tk_bm1 ===veth=== tk_bc0
#   10.213.0.1/24                     ^ tc tbf              10.213.0.2/24
#
# FLOWS parallel CUBIC bulk transfers of BYTES each go from tk_bsnd to tk_brcv
# through a tbf bottleneck on the bridge port towards the receiver; the flows
# compete for its queue, so there are drops and retransmissions.  The capture is
# taken at the sender (tcpdump -s 128 on tk_bs0, before the bottleneck).  The
# kernel bridge forwards (no userspace relay, no added delay), so the RTT is the
# queueing delay of the tbf only.  Offloads are off so every segment is MTU-sized.
#
# Knobs (environment): FLOWS (4), BYTES per flow (400000000), RATE (600mbit),
# OUT (bench/data/big.pcap), MIN_PACKETS (1000000: the script fails below it).
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "make_capture.sh: must run as root" >&2; exit 1; }
for tool in ip tc tcpdump capinfos ethtool python3 ss; do
    command -v "$tool" >/dev/null || { echo "make_capture.sh: $tool not found" >&2; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE/data/big.pcap}
FLOWS=${FLOWS:-4}
BYTES=${BYTES:-400000000}
RATE=${RATE:-600mbit}
MIN_PACKETS=${MIN_PACKETS:-1000000}
NS_S=tk_bsnd NS_M=tk_bmid NS_R=tk_brcv
V4_S=10.213.0.1 V4_R=10.213.0.2
PORT=5002
WORK=$(mktemp -d /tmp/tk_bench.XXXXXX)
TCPDUMP_PID= RECV_PID=

log() { printf '[make_capture] %s\n' "$*" >&2; }
ns() { local n=$1; shift; ip netns exec "$n" "$@"; }

teardown_net() {
    local n
    for n in "$NS_S" "$NS_M" "$NS_R"; do ip netns del "$n" 2>/dev/null || true; done
}
cleanup() {
    local rc=$? p
    for p in $TCPDUMP_PID $RECV_PID; do kill "$p" 2>/dev/null || true; done
    for p in $TCPDUMP_PID $RECV_PID; do wait "$p" 2>/dev/null || true; done
    teardown_net
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$WORK/peer.py" <<'PY'
"""FLOWS parallel bulk senders / one receiver serving them all."""
import socket, sys, threading

BLOCK = bytes(range(256)) * 256          # 64 KiB


def recv(bind, port, flows):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((bind, port))
    ls.listen(flows)
    totals = []

    def drain(c):
        n = 0
        while True:
            d = c.recv(1 << 20)
            if not d:
                break
            n += len(d)
        c.close()
        totals.append(n)

    threads = []
    for _ in range(flows):
        c, _ = ls.accept()
        t = threading.Thread(target=drain, args=(c,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    print(sum(totals))


def send(dst, port, flows, nbytes):
    def one(i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
        s.bind(("0.0.0.0", 41000 + i))
        s.connect((dst, port))
        left = nbytes
        view = memoryview(BLOCK)
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

teardown_net
ip netns add "$NS_S"; ip netns add "$NS_M"; ip netns add "$NS_R"
ip -n "$NS_S" link add name tk_bs0 type veth peer name tk_bm0 netns "$NS_M"
ip -n "$NS_R" link add name tk_bc0 type veth peer name tk_bm1 netns "$NS_M"
ns "$NS_M" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$NS_M" link add name tk_bbr type bridge stp_state 0
for d in "$NS_S:tk_bs0" "$NS_M:tk_bm0" "$NS_M:tk_bm1" "$NS_R:tk_bc0"; do
    n=${d%%:*} d=${d#*:}
    ns "$n" ethtool -K "$d" tso off gso off gro off >/dev/null
    ip -n "$n" link set dev "$d" up
done
ip -n "$NS_M" link set dev tk_bm0 master tk_bbr
ip -n "$NS_M" link set dev tk_bm1 master tk_bbr
ip -n "$NS_M" link set dev tk_bbr up
ip -n "$NS_S" addr add "$V4_S/24" dev tk_bs0
ip -n "$NS_R" addr add "$V4_R/24" dev tk_bc0
ns "$NS_M" tc qdisc replace dev tk_bm1 root tbf rate "$RATE" burst 200kb limit 600kb

mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
START=$(date +%s.%N)
# -s 128 headers only; a 256 MiB ring so tcpdump does not drop at ~100 kpps
ip netns exec "$NS_S" tcpdump -n -s 128 -B 262144 -Z root -w "$WORK/big.pcap" "tcp port $PORT" 2>"$WORK/tcpdump.err" &
TCPDUMP_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$WORK/tcpdump.err" 2>/dev/null && break; sleep 0.05; done
grep -q 'listening on' "$WORK/tcpdump.err" || { cat "$WORK/tcpdump.err" >&2; exit 1; }

ip netns exec "$NS_R" python3 "$WORK/peer.py" recv "$V4_R" "$PORT" "$FLOWS" >"$WORK/recv.out" &
RECV_PID=$!
for _ in $(seq 100); do [[ -n $(ns "$NS_R" ss -Hltn "sport = :$PORT") ]] && break; sleep 0.05; done
log "sending $FLOWS x $BYTES bytes through tbf $RATE ..."
ns "$NS_S" python3 "$WORK/peer.py" send "$V4_R" "$PORT" "$FLOWS" "$BYTES"
wait "$RECV_PID"; RECV_PID=
[[ $(cat "$WORK/recv.out") == $((FLOWS * BYTES)) ]] || { log "receiver got $(cat "$WORK/recv.out") bytes"; exit 1; }
drops=$(ns "$NS_M" tc -s qdisc show dev tk_bm1 | grep -o 'dropped [0-9]*' | head -1)

sleep 2          # > the 1 s TPACKET_V3 block timeout, so the last block reaches tcpdump
kill -TERM "$TCPDUMP_PID"; wait "$TCPDUMP_PID" || true; TCPDUMP_PID=
sed 's/^/    tcpdump: /' "$WORK/tcpdump.err" | grep -E 'captured|dropped' >&2 || true
mv "$WORK/big.pcap" "$OUT"
END=$(date +%s.%N)

count=$(capinfos -c -M "$OUT" | awk -F': *' '/Number of packets/ {print $2}')
log "tbf $drops; $(stat -c %s "$OUT") bytes; took $(python3 -c "print(round($END - $START, 1))") s"
echo "$count packets in $OUT"
if grep -qE '^[1-9][0-9]* packets? dropped by kernel' "$WORK/tcpdump.err"; then
    log "WARNING: tcpdump dropped packets (try a lower RATE)"
fi
(( count >= MIN_PACKETS )) || { log "only $count packets (< $MIN_PACKETS): raise BYTES or FLOWS"; exit 1; }
