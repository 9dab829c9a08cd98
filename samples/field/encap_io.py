"""Byte-level helpers for make_encap.py: pcap/pcapng I/O and the real inner packets.

Everything here is deterministic: timestamps are copied from the source captures as integer
(seconds, microseconds) pairs, and nothing reads the clock or a random source.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Records of the crafted files are cut here, as `tcpdump -s 256` would (orig_len stays true),
#: so that forty files stay under 2 MB; the files listed in FULL_FRAMES keep whole frames.
SNAP = 256


@dataclass(frozen=True)
class Rec:
    """One capture record: timestamp (s, µs), the bytes kept, and the original length."""

    sec: int
    usec: int
    data: bytes
    orig: int
    outbound: bool = True  # True: sent by the connection's client (10.242.0.1 / fd41::1)

    def with_data(self, data: bytes, grow: int | None = None) -> Rec:
        """Replace the bytes; orig_len grows by the same amount the frame grew (or by `grow`)."""
        delta = len(data) - len(self.data) if grow is None else grow
        return replace(self, data=data, orig=self.orig + delta)


def read_pcap(path: Path) -> list[Rec]:
    """Read a little-endian microsecond pcap (what tcpdump writes here)."""
    raw = path.read_bytes()
    magic = struct.unpack_from("<I", raw, 0)[0]
    assert magic == 0xA1B2C3D4, f"{path}: not a little-endian µs pcap"
    off, out = 24, []
    while off + 16 <= len(raw):
        sec, usec, incl, orig = struct.unpack_from("<IIII", raw, off)
        out.append(Rec(sec, usec, raw[off + 16 : off + 16 + incl], orig))
        off += 16 + incl
    return out


def write_pcap(path: Path, linktype: int, recs: list[Rec], snap: int | None = SNAP) -> None:
    """Write a µs pcap; records longer than `snap` are cut to it (orig_len kept)."""
    snaplen = snap if snap else 262144
    parts = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype)]
    for r in recs:
        data = r.data[:snap] if snap else r.data
        parts.append(struct.pack("<IIII", r.sec, r.usec, len(data), r.orig) + data)
    path.write_bytes(b"".join(parts))


def csum(data: bytes) -> int:
    """RFC 1071 Internet checksum."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ip4_fix(hdr_and_rest: bytes, total_len: int | None = None, proto: int | None = None) -> bytes:
    """Rewrite an IPv4 header's total length / protocol and recompute its header checksum."""
    b = bytearray(hdr_and_rest)
    ihl = (b[0] & 0x0F) * 4
    if total_len is not None:
        struct.pack_into("!H", b, 2, total_len)
    if proto is not None:
        b[9] = proto
    struct.pack_into("!H", b, 10, 0)
    struct.pack_into("!H", b, 10, csum(bytes(b[:ihl])))
    return bytes(b)


@dataclass(frozen=True)
class Inner:
    """The real packets make_encap.py wraps, with the underlay they came from."""

    v4_eth: list[Rec]  # inner Ethernet frames of vxlan.pcap's TCP connection (full length)
    v6_eth: list[Rec]  # plain_v6.pcap's IPv6 TCP frames
    mac_a: bytes  # underlay MACs of tk_fa0 / tk_fb0 (vxlan.pcap's outer Ethernet)
    mac_b: bytes


def load_inner() -> Inner:
    """Decapsulate vxlan.pcap (RFC 7348: outer Eth/IPv4/UDP 4789/VXLAN 8 bytes) and read plain_v6."""
    v4, mac_a, mac_b = [], b"", b""
    for r in read_pcap(HERE / "vxlan.pcap"):
        d = r.data
        if d[12:14] != b"\x08\x00" or d[23] != 17:
            continue
        ihl = (d[14] & 0x0F) * 4
        udp = 14 + ihl
        if struct.unpack_from("!H", d, udp + 2)[0] != 4789:
            continue
        inner = d[udp + 16 :]
        if inner[12:14] != b"\x08\x00" or inner[23] != 6:
            continue  # ARP, ICMPv6 noise of the tunnel device coming up
        out = d[26:30] == bytes([10, 241, 0, 1])
        if out:
            mac_a, mac_b = d[6:12], d[0:6]
        v4.append(Rec(r.sec, r.usec, inner, len(inner), out))
    v6 = []
    for r in read_pcap(HERE / "plain_v6.pcap"):
        d = r.data
        if d[12:14] == b"\x86\xdd" and d[20] == 6:
            v6.append(Rec(r.sec, r.usec, d, r.orig, d[22 + 15] == 1))  # src fd41::1 -> out
    return Inner(v4, v6, mac_a, mac_b)


# --- pcapng (for the damaged-later-section samples) -------------------------------------------


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def shb() -> bytes:
    """Section Header Block, little-endian, section length unknown (-1)."""
    return _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(linktype: int, snap: int = SNAP) -> bytes:
    """Interface Description Block with the default µs resolution."""
    return _block(1, struct.pack("<HHI", linktype, 0, snap))


def epb(r: Rec, snap: int = SNAP) -> bytes:
    """Enhanced Packet Block on interface 0 (timestamp in µs)."""
    ts = r.sec * 1_000_000 + r.usec
    data = r.data[:snap]
    return _block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(data), r.orig) + data)
