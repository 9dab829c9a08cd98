#!/usr/bin/env python3
"""Writes a pcap of N three-packet TCP handshakes (SYN, SYN-ACK, ACK), one after another.

It measures what the streamed summary keeps per connection: each handshake is a connection of
its own, so memory grows with the connections, not with the data. N defaults to 100,000, the
reader's ``max_flows`` limit (``tracekit.limits``). With DATA > 0 each handshake's last ACK carries
DATA bytes, so every connection is a row of ``analyze --json`` (without data there is nothing to
analyze): the document of 100,000 connections that ``tracekit.reports.text.dumps`` writes.

Usage: python bench/make_many.py OUT.pcap [N [DATA]]
"""

from __future__ import annotations

import random
import struct
import sys
from typing import BinaryIO


def _packet(
    out: BinaryIO, t: float, src: bytes, dst: bytes, ports: tuple[int, int], seq: int, ack: int, flags: int,
    payload: bytes = b"",
) -> None:
    tcp = struct.pack(">HHIIBBHHH", ports[0], ports[1], seq, ack, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    frame = b"\x00" * 6 + b"\x11" * 6 + b"\x08\x00" + ip + tcp + payload
    out.write(struct.pack("<IIII", int(t), int(round((t % 1) * 1e6)) % 1_000_000, len(frame), len(frame)) + frame)


def main() -> None:
    path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    data = b"x" * (int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    rng = random.Random(1)
    client = bytes([10, 0, 0, 1])
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))  # pcap, Ethernet
        t = 0.0
        for i in range(n):
            server = bytes([10, 1, (i >> 8) & 255, i & 255])
            sport = rng.randrange(1024, 65535)
            _packet(out, t, client, server, (sport, 80), 1000, 0, 0x02)
            _packet(out, t + 1e-5, server, client, (80, sport), 5000, 1001, 0x12)
            _packet(out, t + 2e-5, client, server, (sport, 80), 1001, 5001, 0x18 if data else 0x10, data)
            t += 3e-5


if __name__ == "__main__":
    main()
