#!/usr/bin/env bash
# Regenerate samples/linux/offload/big_tcp.pcap: a TCP upload captured on the sending host with
# segmentation offload on (the Linux default) and BIG TCP enabled, so that tcpdump sees the
# sender's GSO super-segments before they are cut: IPv4 total length 0 on those over 64 KB
# (issue 24 point 2). Run as root.
#
#   cd_tso_a (10.233.0.1) ==== veth cd_tso0 / cd_tso1 ==== cd_tso_b (10.233.0.2)
#
# tcpdump -s 128 on cd_tso0 in the sender's namespace; sender and receiver are python3 sockets. Offloads
# (tso, gso, gro) stay on; gso_max_size / gso_ipv4_max_size are raised to 185,000 bytes on
# both ends (kernel >= 6.3; big_tcp_ipv4.py sets the IPv4 ones over rtnetlink).
set -euo pipefail
[[ $EUID -eq 0 ]] || { echo "make.sh: must run as root" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
A=cd_tso_a B=cd_tso_b
BYTES=${BYTES:-3000000}
cleanup() { ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true; }
trap cleanup EXIT
cleanup
ip netns add "$A"; ip netns add "$B"
ip link add cd_tso0 netns "$A" type veth peer name cd_tso1 netns "$B"
ip -n "$A" addr add 10.233.0.1/24 dev cd_tso0
ip -n "$B" addr add 10.233.0.2/24 dev cd_tso1
for x in "$A cd_tso0" "$B cd_tso1"; do
    set -- $x
    ip -n "$1" link set dev "$2" gso_max_size 185000 gro_max_size 185000 up
    ip netns exec "$1" python3 "$HERE/big_tcp_ipv4.py" "$2" 185000  # iproute2 6.1 lacks gso_ipv4_max_size
    ip -n "$1" link set lo up
done
ip netns exec "$B" python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.233.0.2", 5001)); s.listen(1); c, _ = s.accept()
while c.recv(1 << 20): pass
c.close()' &
RECV=$!
sleep 0.5
ip netns exec "$A" tcpdump -i cd_tso0 -s 128 -w "$HERE/big_tcp.pcap" -U tcp port 5001 2>/dev/null &
DUMP=$!
sleep 1
ip netns exec "$A" python3 -c "
import socket
s = socket.create_connection(('10.233.0.2', 5001)); s.sendall(bytes($BYTES))
s.shutdown(socket.SHUT_WR); s.recv(1); s.close()"
sleep 1
kill "$DUMP"; wait "$DUMP" 2>/dev/null || true
kill "$RECV" 2>/dev/null || true
echo "big_tcp.pcap: $(tcpdump -r "$HERE/big_tcp.pcap" 2>/dev/null | wc -l) packets" >&2
