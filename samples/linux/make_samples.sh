#!/usr/bin/env bash
# Regenerate the real Linux TCP captures in samples/linux/ (run as root).
#
# Topology (three network namespaces, all addresses private to them):
#
#   tk_snd                 tk_mid                          tk_rcv
#   tk_s0 ===veth=== tk_m0 [relay, one-way delay] tk_m1 ===veth=== tk_c0
#   10.213.0.1/24                      ^ tc tbf (the bottleneck)   10.213.0.2/24
#   fd00:213::1/64                                                 fd00:213::2/64
#
# Both end hosts are real Linux TCP stacks with the kernel defaults (SACK, timestamps,
# window scaling on) except the congestion control: CUBIC, set per socket with
# TCP_CONGESTION, because a namespace's default can only be one of the host-wide
# tcp_allowed_congestion_control (here "reno bbr", default bbr).  tk_mid holds
# the bottleneck: a tiny Python relay (AF_PACKET sockets) copies frames between
# tk_m0 and tk_m1 after a fixed one-way delay (netem is not available on the
# machine these were made on, so the relay stands in for it) and the frames it
# sends out of tk_m1 go through a tc tbf qdisc, which queues and tail-drops
# them.  Every capture is taken with tcpdump on tk_s0, i.e. at the sender,
# *before* the bottleneck, so dropped segments appear on the wire once and then
# again as retransmissions.
#
# Offloads (tso/gso/gro) are off on every veth end so segments are MTU-sized on
# the wire; tx checksumming is off too, so the captured checksums are valid (and
# because the relay copies raw frames, partial checksums would not survive it).
#
# The script is idempotent: it removes leftovers of an earlier run first and
# tears everything down on exit (trap).  Set DELAY_MS to change the one-way delay.
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "make_samples.sh: must run as root" >&2; exit 1; }
for tool in ip tc tcpdump tshark capinfos ethtool python3 ss; do
    command -v "$tool" >/dev/null || { echo "make_samples.sh: $tool not found" >&2; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE}
DELAY_MS=${DELAY_MS:-10}          # one-way delay added by the relay (RTT ~ 2*DELAY_MS)
NS_S=tk_snd NS_M=tk_mid NS_R=tk_rcv
V4_S=10.213.0.1 V4_R=10.213.0.2
V6_S=fd00:213::1 V6_R=fd00:213::2
PORT=5001
WORK=$(mktemp -d /tmp/tk_samples.XXXXXX)
RELAY_PID= TCPDUMP_PID= RECV_PID= CUT_PID=

log() { printf '[make_samples] %s\n' "$*" >&2; }
ns() { local n=$1; shift; ip netns exec "$n" "$@"; }

teardown_net() {
    local n
    for n in "$NS_S" "$NS_M" "$NS_R"; do
        ip netns del "$n" 2>/dev/null || true
    done
}

cleanup() {
    local rc=$? p
    for p in "$CUT_PID" "$TCPDUMP_PID" "$RECV_PID" "$RELAY_PID"; do
        [[ -n $p ]] && kill "$p" 2>/dev/null || true
    done
    for p in "$CUT_PID" "$TCPDUMP_PID" "$RECV_PID" "$RELAY_PID"; do
        [[ -n $p ]] && wait "$p" 2>/dev/null || true
    done
    teardown_net
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- python helper
cat >"$WORK/tk_peer.py" <<'PY'
"""Sender, receiver and delay relay used by make_samples.sh."""
import argparse, collections, select, socket, sys, time

PATTERN = b"".join(b"tracekit sample payload line %06d\n" % i for i in range(4096))


def payload(n):
    reps = n // len(PATTERN) + 1
    return (PATTERN * reps)[:n]


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def recv(a):
    ls = socket.socket(family(a.bind), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if a.rcvbuf:  # before listen(): the accepted socket inherits it (and the window scale)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    ls.bind((a.bind, a.port))
    ls.listen(1)
    c, _ = ls.accept()
    ls.close()
    total = 0
    while True:
        d = c.recv(a.chunk)
        if not d:
            break
        total += len(d)
        if a.sleep:
            time.sleep(a.sleep)
    c.close()
    print(total)


def send(a):
    s = socket.socket(family(a.dst), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # the per-namespace default can only be a CC listed in the (host-wide)
    # tcp_allowed_congestion_control; the socket option works with CAP_NET_ADMIN
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    if a.sport:
        s.bind(("::" if ":" in a.dst else "0.0.0.0", a.sport))
    s.connect((a.dst, a.port))
    s.sendall(payload(a.bytes))
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()


def relay(a):
    ETH_P_ALL, SOL_PACKET, PACKET_IGNORE_OUTGOING = 3, 263, 23
    socks = []
    for name in (a.a, a.b):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        try:
            s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass
        s.bind((name, ETH_P_ALL))
        s.setblocking(False)
        socks.append(s)
    peer = {socks[0]: socks[1], socks[1]: socks[0]}
    queues = {s: collections.deque() for s in socks}   # frames waiting to leave via s
    delay = a.delay_ms / 1000.0
    print("ready", flush=True)
    while True:
        now = time.monotonic()
        for out, q in queues.items():
            while q and q[0][0] <= now:
                try:
                    out.send(q.popleft()[1])
                except OSError:   # ENOBUFS: the tbf queue is full -> a drop, as on a router
                    pass
        due = [q[0][0] for q in queues.values() if q]
        timeout = max(0.0, min(due) - now) if due else None
        ready, _, _ = select.select(socks, [], [], timeout)
        now = time.monotonic()
        for s in ready:
            while True:
                try:
                    data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING:
                    continue
                queues[peer[s]].append((now + delay, data))


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
r = sub.add_parser("recv")
r.add_argument("--bind", required=True)
r.add_argument("--port", type=int, required=True)
r.add_argument("--rcvbuf", type=int, default=0)
r.add_argument("--chunk", type=int, default=65536)
r.add_argument("--sleep", type=float, default=0.0)
s = sub.add_parser("send")
s.add_argument("--dst", required=True)
s.add_argument("--port", type=int, required=True)
s.add_argument("--sport", type=int, default=0)
s.add_argument("--bytes", type=int, required=True)
s.add_argument("--cc", default="cubic")
y = sub.add_parser("relay")
y.add_argument("a")
y.add_argument("b")
y.add_argument("--delay-ms", type=float, default=10.0)
args = p.parse_args()
{"recv": recv, "send": send, "relay": relay}[args.cmd](args)
PY

# ---------------------------------------------------------------- network setup
setup_net() {
    teardown_net
    ip netns add "$NS_S"; ip netns add "$NS_M"; ip netns add "$NS_R"
    ip -n "$NS_S" link add name tk_s0 type veth peer name tk_m0 netns "$NS_M"
    ip -n "$NS_R" link add name tk_c0 type veth peer name tk_m1 netns "$NS_M"
    ns "$NS_M" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    local n d
    for n in "$NS_S" "$NS_R"; do
        ns "$n" sysctl -qw net.ipv4.tcp_sack=1 net.ipv4.tcp_timestamps=1 net.ipv4.tcp_ecn=2 \
            net.ipv4.tcp_no_metrics_save=1
    done
    for d in "$NS_S:tk_s0" "$NS_M:tk_m0" "$NS_M:tk_m1" "$NS_R:tk_c0"; do
        n=${d%%:*} d=${d#*:}
        ns "$n" ethtool -K "$d" tso off gso off gro off tx off >/dev/null
        ip -n "$n" link set dev "$d" up
    done
    ip -n "$NS_S" link set dev lo up; ip -n "$NS_R" link set dev lo up
    ip -n "$NS_S" addr add "$V4_S/24" dev tk_s0
    ip -n "$NS_R" addr add "$V4_R/24" dev tk_c0
    ip -n "$NS_S" addr add "$V6_S/64" dev tk_s0 nodad
    ip -n "$NS_R" addr add "$V6_R/64" dev tk_c0 nodad
    ip netns exec "$NS_M" python3 -u "$WORK/tk_peer.py" relay tk_m0 tk_m1 --delay-ms "$DELAY_MS" >"$WORK/relay.out" 2>&1 &
    RELAY_PID=$!
    local i
    for i in $(seq 100); do grep -q ready "$WORK/relay.out" 2>/dev/null && break; sleep 0.05; done
    grep -q ready "$WORK/relay.out" || { cat "$WORK/relay.out" >&2; log "relay did not start"; exit 1; }
}

# bottleneck RATE BURST LIMIT: (re)install the tbf on the relay's egress towards the receiver
bottleneck() {
    ns "$NS_M" tc qdisc replace dev tk_m1 root tbf rate "$1" burst "$2" limit "$3"
}

# capture_start FILE [tcpdump options...]
capture_start() {
    local file=$1; shift
    rm -f "$WORK/$file" "$WORK/tcpdump.err"
    ip netns exec "$NS_S" tcpdump -U --immediate-mode -B 16384 -Z root -n "$@" -w "$WORK/$file" "tcp port $PORT" 2>"$WORK/tcpdump.err" &
    TCPDUMP_PID=$!
    local i
    for i in $(seq 100); do grep -q 'listening on' "$WORK/tcpdump.err" 2>/dev/null && break; sleep 0.05; done
    grep -q 'listening on' "$WORK/tcpdump.err" || { cat "$WORK/tcpdump.err" >&2; log "tcpdump did not start"; exit 1; }
}

capture_stop() {
    local file=$1
    # let the last ACKs arrive and tcpdump drain the ring buffer (without
    # --immediate-mode a partly filled TPACKET_V3 block is only handed over after
    # its ~1 s timeout, and packets still in it are lost when tcpdump is stopped)
    sleep 1.2
    kill -TERM "$TCPDUMP_PID"   # SIGINT is ignored by background jobs of a script; TERM flushes the same way
    wait "$TCPDUMP_PID" || true
    TCPDUMP_PID=
    grep -E 'captured|dropped' "$WORK/tcpdump.err" | sed 's/^/    tcpdump: /' >&2 || true
    if grep -qE '^[1-9][0-9]* packets? dropped by kernel' "$WORK/tcpdump.err"; then
        log "WARNING: tcpdump dropped packets for $file"
    fi
    install -m 0644 "$WORK/$file" "$OUT/$file"
}

# transfer BYTES [receiver options...]: one connection sender -> receiver
transfer() {
    local bytes=$1; shift
    local dst=$V4_R bind=$V4_R
    if [[ ${IPV6:-0} == 1 ]]; then dst=$V6_R bind=$V6_R; fi
    ip netns exec "$NS_R" python3 "$WORK/tk_peer.py" recv --bind "$bind" --port "$PORT" "$@" >"$WORK/recv.out" &
    RECV_PID=$!
    local i
    for i in $(seq 100); do
        [[ -n $(ns "$NS_R" ss -Hltn "sport = :$PORT") ]] && break
        sleep 0.05
    done
    ns "$NS_S" python3 "$WORK/tk_peer.py" send --dst "$dst" --port "$PORT" --sport 40000 --bytes "$bytes"
    wait "$RECV_PID"
    RECV_PID=
    local got; got=$(cat "$WORK/recv.out")
    [[ $got == "$bytes" ]] || { log "receiver got $got bytes, expected $bytes"; exit 1; }
}

# ---------------------------------------------------------------- the samples
# Each one runs on a fresh set of namespaces (no metrics / TIME_WAIT state leaks).

# 750 kB through a 5 Mbit/s tbf with a 10-packet queue -> slow-start overshoot with a burst of
# drops (SACK recovery), then a few congestion-avoidance losses (fast retransmits)
s_bulk_lossy() {
    bottleneck 5mbit 3000 15000
    capture_start bulk_lossy.pcap -i tk_s0
    transfer 750000
    capture_stop bulk_lossy.pcap
}

# receiver SO_RCVBUF 16 KiB (it reads promptly); the 50 Mbit/s bottleneck is never the limit
s_rwnd_limited() {
    bottleneck 50mbit 15000 300000
    capture_start rwnd_limited.pcap -i tk_s0
    transfer 500000 --rcvbuf 16384
    capture_stop rwnd_limited.pcap
}

# tiny receive buffer (4 KiB), the application reads 2000 bytes every 0.4 s -> zero windows,
# and the persist timer (~RTO) fires before each reopening -> zero-window probes
s_slow_reader() {
    bottleneck 10mbit 3000 300000
    capture_start slow_reader.pcap -i tk_s0
    transfer 20000 --rcvbuf 4096 --chunk 2000 --sleep 0.4
    capture_stop slow_reader.pcap
}

# the bottleneck is cut (tbf replaced by a blackhole qdisc) for ~1.5 s mid-transfer
s_stall_cut() {
    bottleneck 4mbit 3000 30000
    capture_start stall_cut.pcap -i tk_s0 -s 128
    (
        sleep 1.0
        ns "$NS_M" tc qdisc replace dev tk_m1 root blackhole
        start=$(date +%s.%N)
        sleep 1.5
        bottleneck 4mbit 3000 30000
        end=$(date +%s.%N)
        echo "$start $end" >"$WORK/cut.times"
    ) &
    CUT_PID=$!
    transfer 1200000
    wait "$CUT_PID"
    CUT_PID=
    capture_stop stall_cut.pcap
    local first cut_start cut_end
    read -r cut_start cut_end <"$WORK/cut.times"
    first=$(tshark -r "$OUT/stall_cut.pcap" -c1 -T fields -e frame.time_epoch 2>/dev/null)
    # relative times of the sender's retransmissions from the cut start on (RTOs with backoff)
    tshark -r "$OUT/stall_cut.pcap" -Y "tcp.analysis.retransmission && frame.time_epoch >= $cut_start" \
        -T fields -e frame.time_relative 2>/dev/null | head -4 >"$WORK/rtx.times"
    python3 - "$first" "$cut_start" "$cut_end" "$WORK/rtx.times" >"$OUT/stall_cut.json" <<'PY'
import json, sys
first, start, end = (float(x) for x in sys.argv[1:4])
rtx = [round(float(x), 6) for x in open(sys.argv[4]).read().split()]
print(json.dumps({
    "capture": "stall_cut.pcap",
    "first_packet_epoch": round(first, 6),
    "cut_start_epoch": round(start, 6),
    "cut_end_epoch": round(end, 6),
    "cut_start_rel": round(start - first, 6),
    "cut_end_rel": round(end - first, 6),
    "cut_duration": round(end - start, 6),
    "retransmissions_during_cut_rel": [t for t in rtx if t < end - first],
    "recovery_retransmission_rel": next((t for t in rtx if t >= end - first), None),
    "how": "tc qdisc replace dev tk_m1 root blackhole (drops everything towards the receiver), "
           "then tc qdisc replace dev tk_m1 root tbf rate 4mbit burst 3000 limit 30000; "
           "times are taken when each tc command returned",
}, indent=2))
PY
    log "stall cut: $(tr -s '\n ' ' ' <"$OUT/stall_cut.json")"
}

# tcpdump -i any: LINUX_SLL2 (link type 276, this libpcap's default) and LINUX_SLL (113).
# -B 64 MiB: in immediate mode libpcap uses a TPACKET_V2 ring whose slots are snaplen-sized
# for "any" (no MTU to go by), so the default 2 MiB ring holds ~8 packets and drops some.
s_any_sll2() {
    bottleneck 20mbit 3000 300000
    capture_start any_sll2.pcap -i any -y LINUX_SLL2 -B 65536
    transfer 100000
    capture_stop any_sll2.pcap
}
s_any_sll() {
    bottleneck 20mbit 3000 300000
    capture_start any_sll.pcap -i any -y LINUX_SLL -B 65536
    transfer 100000
    capture_stop any_sll.pcap
}

# IPv6 (fd00:213::1 -> fd00:213::2) through the same lossy bottleneck as bulk_lossy
s_ipv6_bulk() {
    bottleneck 5mbit 3000 15000
    capture_start ipv6_bulk.pcap -i tk_s0
    IPV6=1 transfer 400000
    capture_stop ipv6_bulk.pcap
}

# snaplen 96 (Ethernet + IPv4 + TCP with timestamps + 30 bytes of payload); same set-up as bulk_lossy
s_headers_only() {
    bottleneck 5mbit 3000 15000
    capture_start headers_only.pcap -i tk_s0 -s 96
    transfer 750000
    capture_stop headers_only.pcap
}

ALL="bulk_lossy rwnd_limited slow_reader stall_cut any_sll2 any_sll ipv6_bulk headers_only"
mkdir -p "$OUT"
for name in ${ONLY:-$ALL}; do
    declare -F "s_$name" >/dev/null || { log "unknown sample $name (known: $ALL)"; exit 2; }
    log "--- $name"
    setup_net
    "s_$name"
    drops=$(ns "$NS_M" tc -s qdisc show dev tk_m1 | grep -o 'dropped [0-9]*' | head -1)
    kill "$RELAY_PID" 2>/dev/null || true; wait "$RELAY_PID" 2>/dev/null || true; RELAY_PID=
    teardown_net
    f=$OUT/$name.pcap
    log "$name.pcap: $(capinfos -c -M "$f" | awk -F': *' '/Number of packets/ {print $2}') packets," \
        "$(stat -c %s "$f") bytes, $(tshark -r "$f" -Y tcp.analysis.retransmission 2>/dev/null | wc -l) retransmissions," \
        "$(tshark -r "$f" -Y tcp.analysis.zero_window 2>/dev/null | wc -l) zero windows, tbf $drops"
done
log "done; tk_ namespaces left: $(ip netns list | grep -c '^tk_' || true)"
