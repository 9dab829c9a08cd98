#!/usr/bin/env bash
# Field captures made with real tools (run as root): TCP inside tunnels, captured on the underlay,
# and TSO/GSO (BIG TCP) frames captured on the sending host with offloads on.
#
#   tk_fa (10.241.0.1, fd41::1) ===veth=== tk_fb (10.241.0.2, fd41::2)     the underlay
#   tunnel devices on top: inner 10.242.0.1/2 (IPv4) or fd42::1/2 (IPv6)
#
# Each VXLAN capture holds one TCP connection of BYTES bytes (default 60000) from tk_fa to tk_fb,
# seen on tk_fa's underlay device (tcpdump -s 0), with offloads off so that every segment is one
# frame. The TSO captures are taken on the sender's veth with offloads on (Linux's default) and
# gso_max_size raised (BIG TCP): IPv6 frames over 64 KiB carry a payload length of 0 (RFC 2675
# jumbograms; Linux >= 6.5 sends them without the hop-by-hop option). IPv4 BIG TCP needs
# gso_ipv4_max_size, which Debian 12's iproute2 cannot set: make_encap.py makes those frames (total
# length 0) from the IPv4 TSO capture.
#
#   sudo bash samples/field/make_field.sh        writes samples/field/{vxlan,plain_v6,tso_v4,tso_v6}.pcap
set -euo pipefail
[[ $EUID -eq 0 ]] || { echo "make_field.sh: run as root" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BYTES=${BYTES:-60000}
A=tk_fa B=tk_fb
ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
cleanup() { ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true; }
trap cleanup EXIT

underlay() {  # $1 = on|off (offloads)
  cleanup
  ip netns add $A; ip netns add $B
  ip link add tk_fa0 netns $A type veth peer name tk_fb0 netns $B
  ns $A ip addr add 10.241.0.1/24 dev tk_fa0; ns $B ip addr add 10.241.0.2/24 dev tk_fb0
  ns $A ip -6 addr add fd41::1/64 dev tk_fa0 nodad; ns $B ip -6 addr add fd41::2/64 dev tk_fb0 nodad
  for n in $A $B; do
    ns $n ip link set lo up
    ns $n ip link set "tk_${n#tk_}0" up
    ns $n ethtool -K "tk_${n#tk_}0" tso "$1" gso "$1" gro "$1" >/dev/null 2>&1 || true
  done
  sleep 2  # IPv6 routes come up with the link a moment later
}

transfer() {  # $1 = output name, $2 = destination address, $3 = capture device in A, $4 = snaplen
  local out="$HERE/$1.pcap" dst=$2
  ip netns exec $B python3 - "$dst" >/dev/null 2>&1 <<'PY' &
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5001)); s.listen(1); c, _ = s.accept()
while c.recv(65536): pass
c.close()
PY
  local srv=$!
  sleep 0.5
  rm -f "$out" "$out.log"
  ip netns exec $A tcpdump -i "$3" -s "$4" -U -w "$out" "ip or ip6" 2>"$out.log" &
  local cap=$! i
  for i in $(seq 100); do grep -q "listening on" "$out.log" 2>/dev/null && break; sleep 0.1; done
  sleep 0.5
  ns $A python3 - "$dst" "$BYTES" <<'PY'
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.create_connection((sys.argv[1], 5001), timeout=10)
s.sendall(b"x" * int(sys.argv[2])); s.close()
PY
  wait $srv || true
  sleep 1
  kill -INT $cap; wait $cap 2>/dev/null || true
  rm -f "$out.log"
  echo "$out: $(capinfos -c -M "$out" | awk '/Number of packets/ {print $NF}') packets"
}

# VXLAN (RFC 7348) is the one tunnel this machine's kernel has (CONFIG_NET_IPGRE, CONFIG_NET_IPIP,
# CONFIG_IPV6_SIT and CONFIG_GENEVE are not set): its two captures are real; make_encap.py wraps their
# inner packets in the other tunnels' headers with scapy.
vxlan_pair() {  # $1 = output name, $2 = 4|6 (inner family)
  underlay off
  for side in A B; do
    local n=${!side} l r dev
    if [[ $side == A ]]; then l=1; r=2; dev=tk_fa0; else l=2; r=1; dev=tk_fb0; fi
    ns "$n" ip link add tk_t type vxlan id 42 local 10.241.0.$l remote 10.241.0.$r dstport 4789 dev $dev
    if [[ $2 == 4 ]]; then ns "$n" ip addr add "10.242.0.$l/24" dev tk_t
    else ns "$n" ip -6 addr add "fd42::$l/64" dev tk_t nodad; fi
    ns "$n" ip link set tk_t up
    ns "$n" ethtool -K tk_t tso off gso off gro off >/dev/null 2>&1 || true
  done
  if [[ $2 == 4 ]]; then transfer "$1" 10.242.0.2 tk_fa0 0; else transfer "$1" fd42::2 tk_fa0 0; fi
}
# ONLY=tso_v6 (say) remakes one capture and leaves the others (make_encap.py builds on them)
want() { [[ -z "${ONLY:-}" || " $ONLY " == *" $1 "* ]]; }
want vxlan && vxlan_pair vxlan 4
# an IPv6 connection on the plain underlay: the inner packets make_encap.py puts in 6in4/6in6
if want plain_v6; then underlay off; transfer plain_v6 fd41::2 tk_fa0 0; fi

# TSO/GSO with BIG TCP: offloads on, 150 kB GSO frames, captured on the sender (-s 200: headers)
BYTES=${TSO_BYTES:-3000000}
underlay on
for n in $A $B; do
  ns $n ip link set "tk_${n#tk_}0" gso_max_size 150000 gro_max_size 150000
done
want tso_v4 && transfer tso_v4 10.241.0.2 tk_fa0 200
# no `tcp` filter: BPF's `tcp` matches only IPv6 packets whose first next header is TCP, and a
# jumbogram's is hop-by-hop (RFC 2675)
want tso_v6 && transfer tso_v6 fd41::2 tk_fa0 200
true
