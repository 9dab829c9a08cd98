"""Craft the issue-24 samples from the REAL packets of make_field.sh's captures (scapy + struct).

This machine's kernel has no GRE/IPIP/SIT/GENEVE devices and Debian 12's iproute2 cannot set
gso_ipv4_max_size, so these files wrap real inner packets (the TCP connection inside vxlan.pcap,
decapsulated, and plain_v6.pcap's IPv6 connection) in each header, keeping their timestamps.
Deterministic: the same bytes on every run (no clock, no randomness; scapy only builds headers).

    /work/main/.venv/bin/python samples/field/make_encap.py     (then tshark_expect.py)

Header layouts follow the RFCs and Wireshark's dissectors named in README.md.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from collections.abc import Callable
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6

sys.path.insert(0, str(Path(__file__).resolve().parent))
import encap_links  # noqa: E402
from encap_cases import editcap_formats, oddities, offloads, pcapng_damaged  # noqa: E402
from encap_io import HERE, Inner, Rec, ip4_fix, load_inner, write_pcap  # noqa: E402

U4 = ("10.241.0.1", "10.241.0.2")  # underlay of make_field.sh
U6 = ("fd43::1", "fd43::2")  # an IPv6 underlay for 4in6 / 6in6 (fd41:: is plain_v6's inner)
#: Files kept with whole frames (every other crafted file is cut at SNAP bytes per record).
#: NFLOG stays whole too: its kernel cuts the payload TLV itself (copy range), never the record.
FULL_FRAMES = {"geneve.pcap", "gre.pcap", "ip6in4.pcap", "nflog_239.pcap"}


def _pick(r: Rec, pair: tuple[str, str]) -> tuple[str, str]:
    return pair if r.outbound else (pair[1], pair[0])


class Wrap:
    """Builds outer headers around one inner packet, numbering IP ids and tunnel sequences."""

    def __init__(self, inner: Inner) -> None:
        self.inner = inner
        self.n = 0

    def eth(self, r: Rec, etype: int, payload: bytes) -> bytes:
        a, b = self.inner.mac_a, self.inner.mac_b
        src, dst = (a, b) if r.outbound else (b, a)
        return dst + src + struct.pack("!H", etype) + payload

    def ip4(self, r: Rec, proto: int, payload: bytes) -> bytes:
        self.n += 1
        s, d = _pick(r, U4)
        return self.eth(r, 0x0800, bytes(IP(src=s, dst=d, proto=proto, id=self.n, flags="DF") / payload))

    def ip6(self, r: Rec, nh: int, payload: bytes) -> bytes:
        s, d = _pick(r, U6)
        return self.eth(r, 0x86DD, bytes(IPv6(src=s, dst=d, nh=nh, hlim=64) / payload))

    def udp4(self, r: Rec, port: int, payload: bytes, sport: int | None = None) -> bytes:
        """UDP over the IPv4 underlay; a fixed source port per direction (hash-like, as VXLAN)."""
        if sport is None:  # GENEVE: both ends send to the well-known port
            sp, dp = (37659 if r.outbound else 51016), port
        else:
            sp, dp = (sport, port) if r.outbound else (port, sport)
        self.n += 1
        s, d = _pick(r, U4)
        pkt = IP(src=s, dst=d, id=self.n, flags="DF") / UDP(sport=sp, dport=dp) / payload
        return self.eth(r, 0x0800, bytes(pkt))


def ip_of(r: Rec) -> bytes:
    """The IP packet inside an inner Ethernet frame."""
    return r.data[14:]


def seqno(counter: dict[bool, int], r: Rec) -> int:
    """A per-direction sequence number starting at 1 (GRE RFC 2890, GTP-U, AH, ERSPAN)."""
    counter[r.outbound] = counter.get(r.outbound, 0) + 1
    return counter[r.outbound]


def tunnels(inner: Inner) -> dict[str, tuple[int, list[Rec]]]:
    """Point 4: every tunnel of issue 24 around the real inner packets (name -> linktype, records)."""
    out: dict[str, tuple[int, list[Rec]]] = {}

    def make(name: str, src: list[Rec], fn: Callable[[Wrap, Rec, dict], bytes], link: int = 1) -> None:
        w, ctr = Wrap(inner), {}
        recs = []
        for r in src:
            data = fn(w, r, ctr)
            recs.append(r.with_data(data))
        out[name] = (link, recs)

    v4, v6 = inner.v4_eth, inner.v6_eth
    geneve_opt = struct.pack("!HBB", 0xFF01, 0x01, 1) + b"tk24"  # RFC 8926 3.5: one 4-byte option
    make("geneve.pcap", v4, lambda w, r, c: w.udp4(
        r, 6081, struct.pack("!BBHI", len(geneve_opt) // 4, 0, 0x6558, 42 << 8) + geneve_opt + r.data))
    make("gre.pcap", v4, lambda w, r, c: w.ip4(r, 47, struct.pack("!HH", 0, 0x0800) + ip_of(r)))
    make("gre_keyseq.pcap", v4, lambda w, r, c: w.ip4(
        r, 47, struct.pack("!HHII", 0x3000, 0x0800, 42, seqno(c, r)) + ip_of(r)))
    make("gre_teb.pcap", v4, lambda w, r, c: w.ip4(r, 47, struct.pack("!HH", 0, 0x6558) + r.data))
    make("erspan2.pcap", v4, lambda w, r, c: w.ip4(r, 47, struct.pack(
        "!HHIII", 0x1000, 0x88BE, seqno(c, r), (1 << 28) | (0 << 13) | 7, 1) + r.data))
    make("erspan3.pcap", v4, lambda w, r, c: w.ip4(r, 47, struct.pack(
        "!HHIIIHH", 0x1000, 0x22EB, seqno(c, r), (2 << 28) | 7,
        ((r.sec * 1_000_000 + r.usec) // 100) & 0xFFFFFFFF, 0,
        (1 << 4) | ((0 if r.outbound else 1) << 3)) + r.data))
    make("wccp.pcap", v4, lambda w, r, c: w.ip4(
        r, 47, struct.pack("!HH", 0, 0x883E) + bytes([0x00, 0x00, 0x00, 0x07]) + ip_of(r)))
    make("gtpu.pcap", v4, lambda w, r, c: w.udp4(r, 2152, struct.pack(
        "!BBHI", 0x30, 0xFF, len(ip_of(r)), 0x1001 if r.outbound else 0x2002) + ip_of(r), sport=2152))
    make("gtpu_seq.pcap", v4, lambda w, r, c: w.udp4(r, 2152, struct.pack(
        "!BBHIHBB", 0x32, 0xFF, len(ip_of(r)) + 4, 0x1001 if r.outbound else 0x2002,
        seqno(c, r), 0, 0) + ip_of(r), sport=2152))
    make("ip4in4.pcap", v4, lambda w, r, c: w.ip4(r, 4, ip_of(r)))
    make("ip4in6.pcap", v4, lambda w, r, c: w.ip6(r, 4, ip_of(r)))
    make("ip6in4.pcap", v6, lambda w, r, c: w.ip4(r, 41, ip_of(r)))
    make("ip6in6.pcap", v6, lambda w, r, c: w.ip6(r, 41, ip_of(r)))
    make("mpls1.pcap", v4, lambda w, r, c: w.eth(r, 0x8847, mpls(100, True) + ip_of(r)))
    make("mpls2.pcap", v4, lambda w, r, c: w.eth(r, 0x8847, mpls(200, False) + mpls(100, True) + ip_of(r)))
    make("l2tp.pcap", v4, lambda w, r, c: w.udp4(r, 1701, l2tp(r), sport=1701))
    make("ah.pcap", v4, lambda w, r, c: ah(r, seqno(c, r)))
    make("ppp_chdlc.pcap", v4, lambda w, r, c: b"\x0f\x00\x08\x00" + ip_of(r), link=9)
    make("capwap.pcap", v4, lambda w, r, c: w.udp4(r, 5247, capwap_hdr() + r.data, sport=12223))
    return out


def mpls(label: int, bottom: bool, ttl: int = 64) -> bytes:
    """RFC 3032 label stack entry: label 20 bits, TC 3, S 1, TTL 8."""
    return struct.pack("!I", (label << 12) | (int(bottom) << 8) | ttl)


def l2tp(r: Rec) -> bytes:
    """RFC 2661 3.1 data message (T=0, L=1, ver 2) carrying PPP (FF 03, protocol 0x0021 IPv4)."""
    ppp = b"\xff\x03\x00\x21" + ip_of(r)
    tid, sid = (0x1234, 0x0001) if r.outbound else (0x4321, 0x0002)
    return struct.pack("!HHHH", 0x4002, 8 + len(ppp), tid, sid) + ppp


def ah(r: Rec, seq: int) -> bytes:
    """RFC 4302 transport mode: AH (HMAC-SHA1-96 ICV, 24 bytes) between the IPv4 header and TCP.

    The IPv4 protocol becomes 51 and the total length grows by 24; the header checksum is redone.
    The ICV is a fixed hash of the sequence number (no key exists: the bytes just fill the field)."""
    d = r.data
    ihl = (d[14] & 0x0F) * 4
    ip_hdr, tcp = d[14 : 14 + ihl], d[14 + ihl :]
    icv = hashlib.sha256(struct.pack("!I", seq)).digest()[:12]
    hdr = struct.pack("!BBHII", 6, 4, 0, 0x100 if r.outbound else 0x200, seq) + icv
    total = struct.unpack_from("!H", ip_hdr, 2)[0] + len(hdr)
    return d[:14] + ip4_fix(ip_hdr, total_len=total, proto=51) + hdr + tcp


def capwap_hdr() -> bytes:
    """RFC 5415 4.3 header, 8 bytes: preamble 0, HLEN 2, RID 1, WBID 1 (802.11), T=0 (802.3 payload)."""
    word0 = (2 << 19) | (1 << 14) | (1 << 9)
    return struct.pack("!II", word0, 0)


def main() -> None:
    inner = load_inner()
    made: list[str] = []
    for name, (link, recs) in tunnels(inner).items():
        write_pcap(HERE / name, link, recs, snap=None if name in FULL_FRAMES else 256)
        made.append(name)
    for name, (link, recs, snap) in {**offloads(), **oddities(inner)}.items():
        write_pcap(HERE / name, link, recs, snap=snap)
        made.append(name)
    for name, (link, recs) in encap_links.link_types(inner).items():
        write_pcap(HERE / name, link, recs, snap=None if name in FULL_FRAMES else 256)
        made.append(name)
    made += encap_links.peek_files(inner)
    made += pcapng_damaged(inner)
    made += editcap_formats(inner)
    for name in made:
        print(f"{name}: {(HERE / name).stat().st_size} bytes")

if __name__ == "__main__":
    main()
