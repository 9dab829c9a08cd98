"""make_encap.py's link types (point 6) and EtherPeek/AiroPeek classic files (point 7).

Each header follows the Wireshark dissector named in README.md; the payload is always the real
IPv4 connection of vxlan.pcap (inner Ethernet frames, their MACs and timestamps).
"""

from __future__ import annotations

import hashlib
import struct

from encap_io import HERE, SNAP, Inner, Rec

BSSID = bytes.fromhex("020000002401")
SNAP_IP = b"\xaa\xaa\x03\x00\x00\x00\x08\x00"  # RFC 1042 LLC/SNAP, ethertype IPv4
EPOCH_1904 = 2_082_844_800  # seconds from 1904-01-01 to 1970-01-01 (Mac epoch, Peek files)


def dot11(r: Rec, n: int, protected: bytes | None = None) -> bytes:
    """An 802.11 data frame (no FCS): the client is a station, the server behind the AP.

    ToDS (client -> AP): A1 = BSSID, A2 = SA, A3 = DA; FromDS: A1 = DA, A2 = BSSID, A3 = SA.
    `protected` replaces the LLC/SNAP body with an encrypted one and sets the Protected flag."""
    e = r.data
    dst, src = e[0:6], e[6:12]
    flags, addrs = (0x01, BSSID + src + dst) if r.outbound else (0x02, dst + BSSID + src)
    body = SNAP_IP + e[14:]
    if protected is not None:
        flags, body = flags | 0x40, protected
    return struct.pack("<BBH", 0x08, flags, 44) + addrs + struct.pack("<H", (n & 0xFFF) << 4) + body


def _cipher(i: int, n: int) -> bytes:
    """Deterministic bytes standing in for ciphertext (no key exists)."""
    out = b""
    while len(out) < n:
        out += hashlib.sha256(struct.pack("!II", i, len(out))).digest()
    return out[:n]


def wlan_frames(inner: Inner) -> list[tuple[Rec, bytes]]:
    """The connection as 802.11 frames plus three protected ones (2 CCMP, 1 WEP) from the station.

    The protected frames are extra traffic (not part of the TCP connection), placed between
    the 10th/11th, 30th/31st and 50th/51st frames at the midpoint of their timestamps."""
    out: list[tuple[Rec, bytes]] = []
    n = 0
    v4 = inner.v4_eth
    for i, r in enumerate(v4):
        n += 1
        out.append((r, dot11(r, n)))
        if i in (9, 29, 49):
            n += 1
            t = ((r.sec + v4[i + 1].sec) * 1_000_000 + r.usec + v4[i + 1].usec) // 2
            if i == 29:  # WEP: IV (3) + key id (1), body, ICV (4)
                body = bytes([0x11, 0x22, i, 0x00]) + _cipher(i, 120) + _cipher(i + 1, 4)
            else:  # CCMP: PN0 PN1 rsvd ExtIV|keyid PN2..PN5, body, MIC (8)
                body = bytes([i, 0, 0, 0x20, 0, 0, 0, 0]) + _cipher(i, 120) + _cipher(i + 1, 8)
            fake = Rec(t // 1_000_000, t % 1_000_000, b"", 0, True)
            frame = dot11(Rec(0, 0, v4[0].data, 0, True), n, body)  # v4[0]: the station's SYN
            out.append((fake, frame))
    return out


def radiotap() -> bytes:
    """Radiotap (radiotap.org): Flags, Rate 54 Mb/s, Channel 2437 MHz OFDM 2 GHz, -42 dBm, antenna 1."""
    present = (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 11)
    return struct.pack("<BBHI", 0, 0, 16, present) + struct.pack("<BBHHbB", 0, 108, 2437, 0x00C0, -42, 1)


def ppi(r: Rec) -> bytes:
    """PPI header (dlt 105) with one 802.11-Common field (type 2, 20 bytes), per Wireshark packet-ppi.c."""
    common = struct.pack("<QHHHHBBbb", r.sec * 1_000_000 + r.usec, 0, 108, 2437, 0x00C0, 0, 0, -42, -95)
    return struct.pack("<BBHI", 0, 0, 8 + 4 + len(common), 105) + struct.pack("<HH", 2, len(common)) + common


def _nflog(r: Rec) -> bytes:
    """Linux NFLOG (packet-nflog.c): family, version, resource id (BE), then host-order (LE) TLVs."""

    def tlv(t: int, v: bytes) -> bytes:
        return struct.pack("<HH", 4 + len(v), t) + v + b"\0" * (-len(v) % 4)

    hook = 3 if r.outbound else 1  # NF_INET_LOCAL_OUT / NF_INET_LOCAL_IN
    return (struct.pack("!BBH", 2, 0, 24) + tlv(1, struct.pack("!HBB", 0x0800, hook, 0))
            + tlv(10, b"tk24\0") + tlv(9, r.data[14:]))


def link_types(inner: Inner) -> dict[str, tuple[int, list[Rec]]]:
    """Point 6: the connection under each link-layer header (name -> linktype, records)."""
    v4 = inner.v4_eth
    wl = wlan_frames(inner)

    def fr(r: Rec) -> bytes:
        dlci = 100  # Q.922 2-byte address (EA bits), UI control 0x03, NLPID 0xCC: RFC 2427
        return bytes([(dlci >> 4) << 2, ((dlci & 0xF) << 4) | 1, 0x03, 0xCC]) + r.data[14:]

    def arc(r: Rec, i: int) -> bytes:
        s, d = (1, 2) if r.outbound else (2, 1)  # Linux ARCNET: src, dst, offset(2), RFC 1201 hdr
        return bytes([s, d, 0, 0, 0xD4, 0]) + struct.pack("!H", i) + r.data[14:]

    def fddi(r: Rec) -> bytes:
        return b"\x50" + r.data[0:6] + r.data[6:12] + SNAP_IP + r.data[14:]  # FC: async LLC

    def ipoib(r: Rec) -> bytes:
        # 40-byte pseudo-header: GRH not valid (zeros), destination QPN + GID; then RFC 4391 type
        dgid = bytes.fromhex("fe800000000000000002c90300002402" if r.outbound else
                             "fe800000000000000002c90300002401")
        return b"\0" * 20 + b"\0\x00\x00\x48" + dgid + b"\x08\x00\x00\x00" + r.data[14:]

    def juniper(r: Rec) -> bytes:
        # "MGC", flags (EXT | direction in), ext length, TLV 1 (ifd index, 4 bytes LE), Ethernet
        return b"MGC" + bytes([0x80 | (0 if r.outbound else 1)]) + struct.pack("!H", 6) + \
            bytes([1, 4]) + struct.pack("<I", 7) + r.data

    def slip(r: Rec) -> bytes:
        # BSD SLIP pseudo-header (16 bytes): direction (0 in, 1 out), TYPE_IP 0x40, 14 bytes of zeros
        return bytes([1 if r.outbound else 0, 0x40]) + b"\0" * 14 + r.data[14:]

    def mk(fn):  # noqa: ANN001, ANN202
        return [r.with_data(fn(r)) for r in v4]

    return {
        "wlan_105.pcap": (105, [Rec(r.sec, r.usec, f, len(f), r.outbound) for r, f in wl]),
        "wlan_radiotap_127.pcap": (127, [Rec(r.sec, r.usec, radiotap() + f, 16 + len(f), r.outbound)
                                         for r, f in wl]),
        "wlan_ppi_192.pcap": (192, [Rec(r.sec, r.usec, ppi(r) + f, 32 + len(f), r.outbound) for r, f in wl]),
        "chdlc_104.pcap": (104, mk(lambda r: b"\x0f\x00\x08\x00" + r.data[14:])),
        "frelay_107.pcap": (107, mk(fr)),
        "arcnet_129.pcap": (129, [r.with_data(arc(r, i)) for i, r in enumerate(v4)]),
        "fddi_10.pcap": (10, mk(fddi)),
        "ipoib_242.pcap": (242, mk(ipoib)),
        "nflog_239.pcap": (239, mk(_nflog)),
        "juniper_178.pcap": (178, mk(juniper)),
        "slip_8.pcap": (8, mk(slip)),
    }


def _peek_header(version: int, recs: list[Rec], wireless: bool, size: int) -> bytes:
    """Master header (version, status) + the V5/V6/V7 secondary header, big-endian (peekclassic.c)."""
    t0 = recs[0].sec + EPOCH_1904
    media, phys = (0, 1) if wireless else (0, 0)
    return bytes([version, 0]) + struct.pack(">IIIIIIIII", size, len(recs), t0, t0, recs[-1].sec + EPOCH_1904,
                                             media, phys, 0x05000000, 10_000_000) + b"\0" * 12


def _peek_v7(recs: list[tuple[Rec, bytes]], wireless: bool) -> bytes:
    """V7 records: protoNum, length, sliceLength, flags, status, µs since 1904; data padded to even.

    Ethernet: status bit 0 set = no FCS. AiroPeek (wireless): 4 bytes of radio info (rate in
    500 kb/s, channel, signal %, 0) before the 802.11 frame and 4 trailing bytes Wireshark drops."""
    body = []
    for r, frame in recs:
        if wireless:
            frame = bytes([108, 6, 60, 0]) + frame + b"\0\0\0\0"
        cut = frame[:SNAP]
        ts = (r.sec + EPOCH_1904) * 1_000_000 + r.usec
        status = 0x01 | (0x20 if len(cut) < len(frame) else 0)
        body.append(struct.pack(">HHHBBQ", 0, len(frame), len(cut), 0, status, ts) + cut + b"\0" * (len(cut) % 2))
    return b"".join(body)


def _peek_v56(recs: list[Rec]) -> bytes:
    """V5/V6 records (26-byte header): length, sliceLength, flags, status, ms since the file's
    timeDate (32 bits, 2-byte aligned), destNum, srcNum, protoNum, protoStr[8], filterNum; no padding."""
    t0 = recs[0].sec
    body = []
    for r in recs:
        cut = r.data[:SNAP]
        ms = (r.sec - t0) * 1000 + r.usec // 1000
        body.append(struct.pack(">HHBBIHHH8sH", r.orig, len(cut), 0, 0, ms, 0, 0, 0, b"", 0) + cut)
    return b"".join(body)


def peek_files(inner: Inner) -> list[str]:
    """EtherPeek V7 and V6 (Ethernet) and AiroPeek V7 (802.11 with radio info) from the connection."""
    v4 = inner.v4_eth
    files = {
        "etherpeek_v7.pkt": (7, _peek_v7([(r, r.data) for r in v4], False), v4, False),
        "airopeek_v7.pkt": (7, _peek_v7(wlan_frames(inner), True), [r for r, _ in wlan_frames(inner)], True),
        "etherpeek_v6.pkt": (6, _peek_v56(v4), v4, False),
    }
    for name, (ver, body, recs, wireless) in files.items():
        head = _peek_header(ver, recs, wireless, 50 + len(body))
        (HERE / name).write_bytes(head + body)
    return list(files)
