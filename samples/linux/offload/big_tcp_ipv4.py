"""Set a link's gso_ipv4_max_size and gro_ipv4_max_size (Linux >= 6.3 BIG TCP for IPv4) over rtnetlink.

iproute2 6.1 cannot set them yet: this sends the RTM_NEWLINK message `ip link set dev DEV
gso_ipv4_max_size N gro_ipv4_max_size N` would send. Usage: big_tcp_ipv4.py DEV BYTES
"""

import socket
import struct
import sys

IFLA_GSO_IPV4_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE = 63, 64  # include/uapi/linux/if_link.h
RTM_NEWLINK, NLM_F_REQUEST, NLM_F_ACK, NLMSG_ERROR = 16, 1, 4, 2

dev, size = sys.argv[1], int(sys.argv[2])
attrs = b"".join(struct.pack("=HHI", 8, t, size) for t in (IFLA_GSO_IPV4_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE))
body = struct.pack("=BxHiII", socket.AF_UNSPEC, 0, socket.if_nametoindex(dev), 0, 0) + attrs
with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as s:
    s.send(struct.pack("=IHHII", 16 + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 1, 0) + body)
    reply = s.recv(65536)
kind, err = struct.unpack_from("=H", reply, 4)[0], struct.unpack_from("=i", reply, 16)[0]
if kind != NLMSG_ERROR or err != 0:
    raise SystemExit(f"big_tcp_ipv4.py: {dev}: netlink error {err}")
