"""Crafting captures for tests: scapy builds the packets, struct builds the containers.

Containers are written by hand (not with scapy's writers) so that every field a test is about
(byte order, magic, time resolution, block lengths, interface ids) is exact and can be broken
on purpose.

Example:
    pkts = conversation()                              # a TCP connection as scapy L3 packets
    data = pcap([ether(p) for p in pkts])              # Ethernet, microsecond pcap
    data = pcapng([shb(), idb(101), *[epb(bytes(p), ts=t) for p, t in zip(pkts, times(pkts))]])
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from scapy.layers.dot11 import Dot11
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import (
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.l2 import ARP, LLC, SNAP, CookedLinux, CookedLinuxV2, Dot1AD, Dot1Q, Ether
from scapy.packet import Packet

T0 = 1_700_000_000  # epoch seconds of the first packet

# ---- packets ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What a reader must find in one crafted TCP segment (relative numbers, scaled window)."""

    dir: int
    seq: int
    ack: int | None
    flags: int
    win: int
    payload: int


def conversation(
    *,
    v6: bool = False,
    n_data: int = 4,
    mss: int = 1000,
    isn_c: int = 0xFFFFF000,
    isn_s: int = 123456789,
    ws_c: int | None = 7,
    ws_s: int | None = 5,
    sack_block: bool = True,
    src: str | None = None,
    dst: str | None = None,
    sport: int = 40000,
    dport: int = 5001,
) -> tuple[list[Packet], list[Expected]]:
    """A complete TCP connection at layer 3: handshake, data, a SACK, FIN/ACK exchange.

    The client's initial sequence number sits near 2^32 so the data crosses the wrap. Windows
    are scaled only when both SYN and SYN-ACK carry the option (RFC 7323), which the returned
    expectations encode.

    Returns:
        (scapy packets, expected relative values for each).
    """
    src = src or ("fd00::1" if v6 else "10.0.0.1")
    dst = dst or ("fd00::2" if v6 else "10.0.0.2")
    ip = (lambda s, d: IPv6(src=s, dst=d)) if v6 else (lambda s, d: IP(src=s, dst=d))
    m32 = 0xFFFFFFFF
    scale = ws_c is not None and ws_s is not None
    sc = (1 << ws_c) if scale and ws_c is not None else 1
    ss = (1 << ws_s) if scale and ws_s is not None else 1
    syn_opts: list[tuple[str, object]] = [("MSS", mss), ("SAckOK", b""), ("Timestamp", (1000, 0))]
    if ws_c is not None:
        syn_opts.append(("WScale", ws_c))
    synack_opts: list[tuple[str, object]] = [("MSS", mss), ("SAckOK", b""), ("Timestamp", (5000, 1000))]
    if ws_s is not None:
        synack_opts.append(("WScale", ws_s))
    c2s = lambda **kw: ip(src, dst) / TCP(sport=sport, dport=dport, **kw)  # noqa: E731
    s2c = lambda **kw: ip(dst, src) / TCP(sport=dport, dport=sport, **kw)  # noqa: E731
    pk: list[Packet] = []
    ex: list[Expected] = []
    pk.append(c2s(seq=isn_c, flags="S", window=64240, options=syn_opts))
    ex.append(Expected(0, 0, None, 0x02, 64240, 0))
    pk.append(s2c(seq=isn_s, ack=(isn_c + 1) & m32, flags="SA", window=65160, options=synack_opts))
    ex.append(Expected(1, 0, 1, 0x12, 65160, 0))
    pk.append(c2s(seq=(isn_c + 1) & m32, ack=isn_s + 1, flags="A", window=502,
                  options=[("NOP", None), ("NOP", None), ("Timestamp", (1001, 5000))]))
    ex.append(Expected(0, 1, 1, 0x10, 502 * sc, 0))
    for i in range(n_data):
        rel = 1 + i * mss
        if i == 1:
            continue  # "lost": the receiver SACKs what follows
        pk.append(c2s(seq=(isn_c + rel) & m32, ack=isn_s + 1, flags="PA", window=502,
                      options=[("NOP", None), ("NOP", None), ("Timestamp", (1002 + i, 5000))]) / (b"d" * mss))
        ex.append(Expected(0, rel, 1, 0x18, 502 * sc, mss))
        if i >= 2 and sack_block:
            opts = [("NOP", None), ("NOP", None), ("Timestamp", (5001 + i, 1002 + i)),
                    ("NOP", None), ("NOP", None),
                    ("SAck", ((isn_c + 1 + 2 * mss) & m32, (isn_c + 1 + (i + 1) * mss) & m32))]
            pk.append(s2c(seq=isn_s + 1, ack=(isn_c + 1 + mss) & m32, flags="A", window=1000, options=opts))
        else:
            pk.append(s2c(seq=isn_s + 1, ack=(isn_c + rel + mss) & m32, flags="A", window=1000))
        ex.append(Expected(1, 1, (pk[-1][TCP].ack - isn_c) & m32, 0x10, 1000 * ss, 0))
    # retransmission of the lost segment, then the cumulative ACK
    pk.append(c2s(seq=(isn_c + 1 + mss) & m32, ack=isn_s + 1, flags="A", window=502) / (b"r" * mss))
    ex.append(Expected(0, 1 + mss, 1, 0x10, 502 * sc, mss))
    end = 1 + n_data * mss
    pk.append(s2c(seq=isn_s + 1, ack=(isn_c + end) & m32, flags="A", window=1000))
    ex.append(Expected(1, 1, end, 0x10, 1000 * ss, 0))
    pk.append(c2s(seq=(isn_c + end) & m32, ack=isn_s + 1, flags="FA", window=502))
    ex.append(Expected(0, end, 1, 0x11, 502 * sc, 0))
    pk.append(s2c(seq=isn_s + 1, ack=(isn_c + end + 1) & m32, flags="FA", window=1000))
    ex.append(Expected(1, 1, end + 1, 0x11, 1000 * ss, 0))
    pk.append(c2s(seq=(isn_c + end + 1) & m32, ack=isn_s + 2, flags="A", window=502))
    ex.append(Expected(0, end + 1, 2, 0x10, 502 * sc, 0))
    return pk, ex


def udp_packet(v6: bool = False) -> Packet:
    """A UDP datagram with 100 payload bytes."""
    ip = IPv6(src="fd00::1", dst="fd00::2") if v6 else IP(src="10.0.0.1", dst="10.0.0.2")
    return ip / UDP(sport=5353, dport=53) / (b"u" * 100)


def ipv6_ext_chain(inner: Packet) -> Packet:
    """IPv6 with Hop-by-Hop, Routing and Destination Options headers in front of ``inner``'s L4."""
    l4 = inner[IPv6].payload.copy()
    return (IPv6(src=inner[IPv6].src, dst=inner[IPv6].dst) / IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting(addresses=[])
            / IPv6ExtHdrDestOpt() / l4)


def ipv6_first_fragment(inner: Packet) -> Packet:
    """IPv6 carrying ``inner``'s L4 behind a Fragment header with offset 0 (a first fragment)."""
    l4 = inner[IPv6].payload.copy()
    return IPv6(src=inner[IPv6].src, dst=inner[IPv6].dst) / IPv6ExtHdrFragment(offset=0, m=0, id=7) / l4


# ---- link layers --------------------------------------------------------------------------------

def ether(p: Packet | bytes, tags: tuple[int, ...] = (), qinq: bool = False) -> bytes:
    """Ethernet II; ``tags`` are VLAN ids (the outer one an 802.1ad S-tag when ``qinq``)."""
    raw = bytes(p)
    v6 = raw[:1] and raw[0] >> 4 == 6
    etype = 0x86DD if v6 else 0x0800
    frame: Packet = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    for i, vid in enumerate(tags):
        frame = frame / (Dot1AD(vlan=vid) if qinq and i == 0 else Dot1Q(vlan=vid))
    hdr = bytes(frame)
    # scapy fills the inner type fields from the layers; set the last one to the L3 type.
    return hdr[:-2] + struct.pack("!H", etype) + raw if tags else hdr[:12] + struct.pack("!H", etype) + raw


def arp_frame() -> bytes:
    """An Ethernet ARP request (a non-IP frame)."""
    return bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01") / ARP(pdst="10.0.0.2"))


def sll(p: Packet | bytes) -> bytes:
    """Linux cooked v1 (LINKTYPE 113): 16-byte header, protocol last."""
    raw = bytes(p)
    proto = 0x86DD if raw[0] >> 4 == 6 else 0x0800
    return bytes(CookedLinux(pkttype=4, lladdrtype=1, lladdrlen=6, src=b"\x02" * 6 + b"\0\0", proto=proto)) + raw


def sll2(p: Packet | bytes) -> bytes:
    """Linux cooked v2 (LINKTYPE 276): 20-byte header, protocol first."""
    raw = bytes(p)
    proto = 0x86DD if raw[0] >> 4 == 6 else 0x0800
    return bytes(CookedLinuxV2(proto=proto, ifindex=2, pkttype=4, lladdrtype=1, lladdrlen=6)) + raw


def ppp(p: Packet | bytes, hdlc: bool = False) -> bytes:
    """PPP (LINKTYPE 9): ns-3 writes only the 2-byte protocol; real PPP prefixes ff 03."""
    raw = bytes(p)
    proto = 0x0057 if raw[0] >> 4 == 6 else 0x0021
    return (b"\xff\x03" if hdlc else b"") + struct.pack("!H", proto) + raw


def null(p: Packet | bytes, af6: int = 30, order: str = "<") -> bytes:
    """BSD loopback (LINKTYPE 0, host byte order ``order``) / LOOP (108, use order ``>``)."""
    raw = bytes(p)
    fam = af6 if raw[0] >> 4 == 6 else 2
    return struct.pack(order + "I", fam) + raw


def dot11(p: Packet | bytes) -> bytes:
    """IEEE 802.11 data frame (LINKTYPE 105) with LLC/SNAP carrying IPv4 — not in the fast path."""
    raw = bytes(p)
    return bytes(Dot11(type=2, subtype=0, FCfield=0x01, addr1="02:00:00:00:00:aa",
                       addr2="02:00:00:00:00:01", addr3="02:00:00:00:00:02")
                 / LLC(dsap=0xAA, ssap=0xAA, ctrl=3) / SNAP(OUI=0, code=0x0800)) + raw


def c_hdlc(p: Packet | bytes) -> bytes:
    """Cisco HDLC (LINKTYPE 104): address 0x0f, control 0, ethertype — not in the fast path."""
    return b"\x0f\x00\x08\x00" + bytes(p)


# ---- containers ---------------------------------------------------------------------------------

def times(n: int, step_us: int = 1000) -> list[tuple[int, int]]:
    """(seconds, microseconds) for ``n`` packets ``step_us`` apart from :data:`T0`."""
    return [(T0 + (i * step_us) // 1_000_000, (i * step_us) % 1_000_000) for i in range(n)]


def pcap(frames: list[bytes], linktype: int = 1, *, nanos: bool = False, endian: str = "<",
         ts: list[tuple[int, int]] | None = None, snaplen: int = 65535, kuznetzov: bool = False,
         caplens: list[int] | None = None, origlens: list[int] | None = None, fcs_bits: int = 0) -> bytes:
    """A pcap file; ``ts`` fractions are µs (ns with ``nanos``); ``fcs_bits`` sets LT_FCS_LENGTH."""
    magic = 0xA1B2CD34 if kuznetzov else (0xA1B23C4D if nanos else 0xA1B2C3D4)
    lt = linktype | ((0x04000000 | (fcs_bits << 28)) if fcs_bits else 0)
    out = [struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, snaplen, lt)]
    given = ts is not None
    ts = ts if ts is not None else times(len(frames))
    for i, f in enumerate(frames):
        sec, frac = ts[i]
        if nanos and not given:
            frac *= 1000
        cap = caplens[i] if caplens else len(f)
        orig = origlens[i] if origlens else len(f)
        out.append(struct.pack(endian + "IIII", sec, frac, cap, orig))
        if kuznetzov:
            out.append(struct.pack(endian + "IHBB", 1, 0x0800, 0, 0))
        out.append(f[:cap])
    return b"".join(out)


def opt(code: int, value: bytes, e: str = "<") -> bytes:
    """One pcapng option, padded to 4 bytes."""
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * ((-len(value)) % 4)


def block(btype: int, body: bytes, e: str = "<", *, length: int | None = None, trailer: int | None = None) -> bytes:
    """A pcapng block around ``body`` (``length``/``trailer`` override the lengths)."""
    body += b"\0" * ((-len(body)) % 4)
    ln = 12 + len(body) if length is None else length
    return struct.pack(e + "II", btype, ln) + body + struct.pack(e + "I", ln if trailer is None else trailer)


def shb(e: str = "<", app: str | None = None) -> bytes:
    """A section header block (byte order ``e``), optional shb_userappl."""
    opts = (opt(4, app.encode(), e) + opt(0, b"", e)) if app else b""
    return block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1) + opts, e)


def idb(linktype: int = 1, e: str = "<", *, tsresol: int | None = None, tsoffset: int | None = None,
        fcslen: int | None = None, snaplen: int = 0, name: str | None = None) -> bytes:
    """An interface description block with the options asked for."""
    opts = b""
    if name is not None:
        opts += opt(2, name.encode(), e)
    if tsresol is not None:
        opts += opt(9, bytes([tsresol]), e)
    if fcslen is not None:
        opts += opt(13, bytes([fcslen]), e)
    if tsoffset is not None:
        opts += opt(14, struct.pack(e + "q", tsoffset), e)
    if opts:
        opts += opt(0, b"", e)
    return block(1, struct.pack(e + "HHI", linktype, 0, snaplen) + opts, e)


def epb(frame: bytes, iface: int = 0, ts: int = T0 * 1_000_000, e: str = "<", *, caplen: int | None = None,
        origlen: int | None = None) -> bytes:
    """An enhanced packet block; ``ts`` in the interface's resolution units."""
    cap = len(frame) if caplen is None else caplen
    orig = len(frame) if origlen is None else origlen
    return block(6, struct.pack(e + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, cap, orig) + frame, e)


def pb(frame: bytes, iface: int = 0, ts: int = T0 * 1_000_000, e: str = "<") -> bytes:
    """An obsolete packet block (2-byte interface id + 2-byte drop count)."""
    return block(2, struct.pack(e + "HHIIII", iface, 0, ts >> 32, ts & 0xFFFFFFFF, len(frame), len(frame)) + frame, e)


def spb(frame: bytes, e: str = "<", origlen: int | None = None) -> bytes:
    """A simple packet block (no timestamp, interface 0)."""
    return block(3, struct.pack(e + "I", len(frame) if origlen is None else origlen) + frame, e)


def pcapng(frames: list[bytes], linktype: int = 1, e: str = "<", step_us: int = 1000) -> bytes:
    """A one-section, one-interface pcapng with one EPB per frame (µs timestamps)."""
    return b"".join([shb(e), idb(linktype, e)] + [
        epb(f, ts=T0 * 1_000_000 + i * step_us, e=e) for i, f in enumerate(frames)])
