"""A generator of malformed or awkward inputs, one per row of a checklist of bad inputs
(containers and headers, link layers and packets, simulator and CSV inputs; filesystem and
environment cases are in test_bad_inputs.py). Outcomes: docs/limits.md and the "Bad input" /
"Warnings and errors" sections of docs/formats-*.md.

Each case is ``Case(name, data, expect)`` where ``expect`` is ``"ok"``, a
warning code (``"W-TRUNCATED"``: read, with that warning), or an error class
name (``"CorruptTraceError"``). Bytes are built with ``struct`` so every case is
exact and deterministic; the table is the documented outcome of each input.
"""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One bad input and its documented outcome."""

    name: str
    data: bytes
    expect: str
    row: str  # the checklist row it covers


# ---- packet builders -------------------------------------------------------------------------------

def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def tcp(sport: int = 40000, dport: int = 5001, seq: int = 1000, ack: int = 0, flags: int = 0x02,
        win: int = 65535, opts: bytes = b"", payload: bytes = b"", doff: int | None = None) -> bytes:
    """A TCP header (+options, +payload); ``doff`` overrides the data offset in words."""
    pad = (-len(opts)) % 4
    opts += b"\x01" * pad
    words = doff if doff is not None else (20 + len(opts)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, words << 4, flags, win, 0, 0) + opts + payload


def ipv4(l4: bytes, proto: int = 6, src: str = "10.0.0.1", dst: str = "10.0.0.2", ihl: int = 5,
         total: int | None = None, frag: int = 0) -> bytes:
    """An IPv4 header in front of ``l4``."""
    s = bytes(int(x) for x in src.split("."))
    d = bytes(int(x) for x in dst.split("."))
    tot = total if total is not None else 20 + len(l4)
    hdr = struct.pack("!BBHHHBBH4s4s", (4 << 4) | ihl, 0, tot, 1, frag, 64, proto, 0, s, d)
    hdr = hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:]
    return hdr + l4


def ipv6(l4: bytes, nh: int = 6, ext: bytes = b"") -> bytes:
    """An IPv6 header (fd00::1 -> fd00::2), optional extension headers before ``l4``."""
    src = bytes.fromhex("fd000000000000000000000000000001")
    dst = bytes.fromhex("fd000000000000000000000000000002")
    return struct.pack("!IHBB", 6 << 28, len(ext) + len(l4), nh, 64) + src + dst + ext + l4


def eth(l3: bytes, etype: int = 0x0800, tags: int = 0) -> bytes:
    """Ethernet II with ``tags`` 802.1Q tags."""
    hdr = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01"
    for _ in range(tags):
        hdr += struct.pack("!HH", 0x8100, 7)
    return hdr + struct.pack("!H", etype) + l3


def syn_handshake() -> list[bytes]:
    """A SYN, SYN-ACK, ACK and one data segment over Ethernet/IPv4."""
    mss = b"\x02\x04\x05\xb4"
    return [
        eth(ipv4(tcp(flags=0x02, seq=1000, opts=mss))),
        eth(ipv4(tcp(5001, 40000, seq=5000, ack=1001, flags=0x12, opts=mss),
                 src="10.0.0.2", dst="10.0.0.1")),
        eth(ipv4(tcp(seq=1001, ack=5001, flags=0x10))),
        eth(ipv4(tcp(seq=1001, ack=5001, flags=0x18, payload=b"x" * 100))),
    ]


# ---- containers --------------------------------------------------------------------------------------

def pcap(packets: list[bytes], linktype: int = 1, magic: int = 0xA1B2C3D4, endian: str = "<",
         version: tuple[int, int] = (2, 4), snaplen: int = 65535, ts: list[tuple[int, int]] | None = None,
         caplens: list[int] | None = None, origlens: list[int] | None = None) -> bytes:
    """A pcap file; ``caplens``/``origlens`` override the recorded lengths."""
    out = struct.pack(endian + "IHHiIII", magic, version[0], version[1], 0, 0, snaplen, linktype)
    for i, p in enumerate(packets):
        sec, frac = ts[i] if ts else (1_700_000_000, i * 1000)
        cap = caplens[i] if caplens else len(p)
        orig = origlens[i] if origlens else len(p)
        out += struct.pack(endian + "IIII", sec, frac, cap, orig) + p
    return out


def _opt(code: int, value: bytes, e: str) -> bytes:
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * ((-len(value)) % 4)


def _block(btype: int, body: bytes, e: str, length: int | None = None, trailer: int | None = None) -> bytes:
    ln = 12 + len(body) if length is None else length
    tl = ln if trailer is None else trailer
    return struct.pack(e + "II", btype, ln) + body + struct.pack(e + "I", tl)


def shb(e: str = "<") -> bytes:
    """A section header block."""
    return _block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1), e)


def idb(linktype: int = 1, e: str = "<", tsresol: int | None = None) -> bytes:
    """An interface description block, optional if_tsresol."""
    opts = b""
    if tsresol is not None:
        opts = _opt(9, bytes([tsresol]), e) + _opt(0, b"", e)
    return _block(1, struct.pack(e + "HHI", linktype, 0, 0) + opts, e)


def epb(pkt: bytes, iface: int = 0, ts: int = 1_700_000_000_000_000, e: str = "<",
        caplen: int | None = None) -> bytes:
    """An enhanced packet block."""
    cap = len(pkt) if caplen is None else caplen
    body = struct.pack(e + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, cap, len(pkt)) + pkt
    body += b"\0" * ((-len(pkt)) % 4)
    return _block(6, body, e)


def pcapng(blocks: list[bytes]) -> bytes:
    """Concatenate blocks."""
    return b"".join(blocks)


def cases() -> list[Case]:
    """Every bad-input case with its documented outcome."""
    hs = syn_handshake()
    good = pcap(hs)
    c: list[Case] = []
    add = lambda *a: c.append(Case(*a))  # noqa: E731

    # containers and headers
    add("empty", b"", "UnknownFormatError", "0-byte file")
    add("text_renamed", b"this is not a capture\n" * 3, "UnknownFormatError", "text renamed .pcap")
    add("short_header", good[:10], "CorruptTraceError", "header < 24 bytes")
    add("header_only", good[:24], "W-EMPTY", "header only, no records")
    add("truncated_record_header", good + b"\x01\x02\x03", "W-TRUNCATED", "truncated record header")
    add("truncated_last_record", good[:-30], "W-TRUNCATED", "truncated last record")
    add("caplen_huge", pcap(hs[:1], caplens=[0xFFFFFFF0]), "CorruptTraceError", "caplen = 0xFFFFFFF0")
    add("caplen_gt_snaplen", pcap(hs, snaplen=60), "W-SNAPLEN", "caplen > snaplen but sane")
    cap_gt = bytearray(pcap(hs[:1]))
    struct.pack_into("<I", cap_gt, 24 + 12, 10)  # origlen 10 < caplen
    add("caplen_gt_origlen", bytes(cap_gt), "W-CAPLEN", "caplen > origlen")
    add("snaplen_zero", pcap(hs, snaplen=0), "W-SNAPLEN", "snaplen 0")
    add("version_9_9", pcap(hs, version=(9, 9)), "W-VERSION", "version 9.9")
    add("linktype_65000", pcap(hs, linktype=65000), "UnknownFormatError", "unknown link type 65000")
    add("nanosecond_magic", pcap(hs, magic=0xA1B23C4D), "ok", "nanosecond magic")
    add("usec_fraction_overflow", pcap(hs, ts=[(1_700_000_000, 2_000_000)] * 4), "W-TIMESTAMP",
        "µs fraction >= 1 000 000")
    add("big_endian_pcap", pcap(hs, endian=">"), "ok", "big-endian pcap")
    kuz = struct.pack("<IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    for p in hs:
        kuz += struct.pack("<IIII", 1_700_000_000, 0, len(p), len(p)) + struct.pack("<IHBB", 1, 0x0800, 0, 0) + p
    add("kuznetzov", kuz, "ok", "Kuznetzov magic a1b2cd34")
    add("nonmonotonic", pcap(hs, ts=[(1_700_000_010, 0), (1_700_000_000, 0), (1_700_000_020, 0), (1_700_000_001, 0)]),
        "W-NONMONOTONIC", "timestamps non-monotonic")
    add("pre1970_and_2106", pcap(hs[:2], ts=[(0, 0), (0xFFFFFFFF, 0)]), "ok", "pre-1970 / 2106 timestamps")
    add("zero_length_records", pcap([b""] * 1000), "ok", "1000 zero-length records")
    add("pcapng_two_linktypes", pcapng([shb(), idb(1, tsresol=6), idb(101, tsresol=9), epb(hs[0], 0),
                                        epb(hs[3][14:], 1, ts=1_700_000_000_000_000_000)]),
        "ok", "pcapng, 2 IDBs with link types 1 and 101 + different if_tsresol")
    add("pcapng_tsresol_pow2", pcapng([shb(), idb(1, tsresol=0x80 | 10), epb(hs[0], ts=1 << 40)]), "ok",
        "if_tsresol 2^-10")
    add("pcapng_tsresol_absurd", pcapng([shb(), idb(1, tsresol=127), epb(hs[0])]), "CorruptTraceError",
        "if_tsresol 10^-127")
    add("pcapng_big_endian", pcapng([shb(">"), idb(1, ">"), epb(hs[0], e=">")]), "ok", "big-endian pcapng section")
    add("pcapng_mixed_sections", pcapng([shb("<"), idb(1, "<"), epb(hs[0], e="<"), shb(">"), idb(1, ">"),
                                         epb(hs[1], e=">")]), "ok", "sections with different byte orders")
    add("pcapng_unknown_block", pcapng([shb(), idb(), _block(0x0BAD, b"abcd", "<"), epb(hs[0])]),
        "W-UNKNOWN-BLOCK", "unknown block type")
    add("pcapng_epb_before_idb", pcapng([shb(), epb(hs[0], iface=3)]), "CorruptTraceError",
        "EPB before any IDB / bad interface id")
    add("pcapng_len_not_mult4", pcapng([shb(), idb(), _block(6, b"x" * 9, "<")]), "CorruptTraceError",
        "block length not multiple of 4")
    add("pcapng_len_lt_12", pcapng([shb(), idb(), struct.pack("<II", 6, 8)]), "CorruptTraceError",
        "block length < 12")
    add("pcapng_len_huge", pcapng([shb(), idb(), struct.pack("<II", 6, 0xFFFFFFF0) + b"\0" * 64]),
        "CorruptTraceError", "block length 0xFFFFFFF0")
    add("pcapng_trailer_mismatch", pcapng([shb(), idb(), _block(6, b"\0" * 20, "<", trailer=1000)]),
        "CorruptTraceError", "trailer ≠ header length")
    add("pcapng_epb_caplen_gt_block", pcapng([shb(), idb(), epb(hs[0], caplen=100000)]), "CorruptTraceError",
        "EPB caplen > block")
    add("gzip_capture", gzip.compress(good), "ok", "gzip-compressed capture")
    add("truncated_gzip", gzip.compress(good * 50)[:-40], "CorruptTraceError", "truncated gzip")

    # link layers and packets
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\0" * 28
    add("non_ip_arp", pcap([arp] * 3 + hs), "ok", "non-IP frames (ARP)")
    add("vlan_qinq", pcap([eth(ipv4(tcp(flags=0x02)), tags=2)]), "ok", "VLAN 802.1Q / QinQ")
    sll = struct.pack("!HHH8sH", 0, 1, 6, b"\x02" * 8, 0x0800)
    add("sll", pcap([sll + ipv4(tcp())], linktype=113), "ok", "Linux cooked SLL")
    sll2 = struct.pack("!HHIHBB8s", 0x0800, 0, 2, 1, 0, 6, b"\x02" * 8)
    add("sll2", pcap([sll2 + ipv4(tcp())], linktype=276), "ok", "Linux cooked SLL2")
    add("ppp_ns3", pcap([b"\x00\x21" + ipv4(tcp())], linktype=9), "ok", "PPP (ns-3 bare protocol field)")
    add("raw_101", pcap([ipv4(tcp())], linktype=101), "ok", "raw IP 101")
    add("raw_12", pcap([ipv6(tcp())], linktype=12), "ok", "raw IP 12")
    add("raw_228_229", pcap([ipv4(tcp())], linktype=228) , "ok", "raw IPv4 228")
    add("null_loopback_ipv6_af30", pcap([struct.pack("<I", 30) + ipv6(tcp())], linktype=0), "ok",
        "BSD NULL with IPv6 family 30")
    add("ipv4_bad_ihl", pcap([eth(ipv4(tcp(), ihl=3))]), "W-MALFORMED", "IPv4 IHL < 5")
    add("ipv4_fragment", pcap([eth(ipv4(b"\0" * 40, frag=100))]), "W-FRAGMENT", "fragments")
    # a first fragment [0, 40) then one at offset 16 (frag field 2 = 16 bytes) overlapping it
    overlap = [eth(ipv4(tcp(payload=b"x" * 20), frag=0x2000)), eth(ipv4(b"y" * 24, frag=2))]
    add("ipv4_fragment_overlap", pcap(overlap), "W-FRAG-OVERLAP", "overlapping fragments")
    add("ipv4_fragment_oversize", pcap([eth(ipv4(b"z" * 16, frag=0x1FFF))]), "W-FRAG-OVERSIZE",
        "fragment past 65,535 bytes")
    hop = bytes([6, 0]) + b"\0" * 6  # hop-by-hop, next = TCP
    add("ipv6_ext_headers", pcap([eth(ipv6(tcp(), nh=0, ext=hop), 0x86DD)]), "ok", "IPv6 extension headers")
    add("tcp_bad_doff", pcap([eth(ipv4(tcp(doff=3)))]), "W-MALFORMED", "TCP data offset < 5")
    add("tcp_opt_len0", pcap([eth(ipv4(tcp(opts=b"\x02\x00\x00\x00" + b"\x01" * 4)))]), "ok",
        "TCP option with length 0")
    add("tcp_opt_overrun", pcap([eth(ipv4(tcp(opts=b"\x08\x30" + b"\0" * 6)))]), "ok",
        "TCP option length overrunning the header")
    add("tcp_wscale_20", pcap([eth(ipv4(tcp(opts=b"\x03\x03\x14\x01")))]), "W-WSCALE", "window scale > 14")
    seqwrap = [eth(ipv4(tcp(seq=0xFFFFFF00, flags=0x02))),
               eth(ipv4(tcp(seq=0xFFFFFF01, flags=0x10, payload=b"y" * 512)))]
    add("tcp_seq_wrap", pcap(seqwrap), "ok", "TCP sequence wrap")
    add("headers_only", pcap([p[:54] for p in hs], origlens=[len(p) for p in hs]), "ok",
        "captured length < IP length (headers only)")

    # simulator and CSV inputs
    ns2 = (b"+ 0.5 0 1 tcp 40 ------- 1 0.0 1.0 0 0\n- 0.5 0 1 tcp 40 ------- 1 0.0 1.0 0 0\n"
           b"r 0.60032 0 1 tcp 40 ------- 1 0.0 1.0 0 0\n+ 0.60032 1 0 ack 40 ------- 1 1.0 0.0 0 1\n"
           b"+ 0.70064 0 1 tcp 540 ------- 1 0.0 1.0 1 2\n")
    add("ns2_ok", ns2, "ok", "ns-2 wired trace (control)")
    add("ns2_missing_columns", ns2 + b"r 0.2 0 2 tcp\n", "W-BADLINE", "ns-2 wired trace with missing columns")
    add("ns2_non_numeric", ns2 + b"+ 0.9 0 1 tcp 540 ------- 1 0.0 1.0 abc 9\n", "W-BADLINE",
        "ns-2 non-numeric field")
    add(
        "ns2_nonfinite_time",
        ns2 + b"+ 1e309 0 1 tcp 540 ------- 1 0.0 1.0 2 9\n+ nan 0 1 tcp 540 ------- 1 0.0 1.0 2 9\n",
        "W-BADLINE",
        "numbers like 1e309, NaN",
    )
    add("ns2_truncated_line", ns2 + b"r 0.8", "W-TRUNCATED", "simulator killed: last line cut")
    add("ns2_binary_junk", ns2 * 100 + bytes(range(256)) * 4 + b"\n" + ns2, "W-BADLINE", "binary junk in a text trace")
    add("ns2_overlong_line", ns2 + b"+ 0.9 0 1 tcp 540 ------- 1 0.0 1.0 2 9" + b" x" * 70000 + b"\n",
        "W-BADLINE", "very long lines")
    add("ns2_crlf", ns2.replace(b"\n", b"\r\n"), "ok", "CRLF line ends")
    add("ns2_wireless_old", b"s 76.0 _98_ AGT  --- 1812 tcp 1040 [0 0 0 0] ------- [98:0 0:0 32 0] [1 0] 0 0\n"
        b"r 76.1 _0_ AGT  --- 1812 tcp 1040 [0 0 0 0] ------- [98:0 0:0 32 0] [1 0] 1 0\n", "ok",
        "ns-2 old wireless format (not parsed as wired)")
    add("ns2_wireless_new", b"s -t 0.267662078 -Hs 0 -Hd -1 -Ni 0 -Nx 5.00 -Ny 2.00 -Nz 0.00 -Ne -1.000000 -Nl AGT "
        b"-Nw --- -Ma 0 -Md 0 -Ms 0 -Mt 0 -Is 0.0 -Id 1.0 -It tcp -Il 1040 -If 0 -Ii 0 -Iv 32 -Pn tcp -Ps 1 -Pa 0 "
        b"-Pf 0 -Po 0 \n", "ok", "ns-2 new wireless format")
    ns3 = (b"+ 2 /NodeList/0/DeviceList/0/$ns3::PointToPointNetDevice/TxQueue/Enqueue ns3::PppHeader "
           b"(Point-to-Point Protocol: IP (0x0021)) ns3::Ipv4Header (tos 0x0 DSCP Default ECN Not-ECT ttl 64 id 0 "
           b"protocol 17 offset (bytes) 0 flags [none] length: 1052 10.1.1.1 > 10.1.1.2) ns3::UdpHeader "
           b"(length: 1032 49153 > 9) Payload (size=1024)\n")
    add("ns3_ascii_udp", ns3, "ok", "ns-3 ASCII trace")
    opnet = "time (sec)\tNet.client.TCP Connection.Congestion Window Size (bytes)\n0\t536\n1\t1072\n"
    add("csv_bom_crlf", b"\xef\xbb\xbf" + opnet.replace("\n", "\r\n").encode(), "ok", "CSV with UTF-8 BOM + CRLF")
    add("csv_semicolon_decimal_comma", b"time (sec);Net.client.TCP Connection.Congestion Window Size (bytes)\n"
        b"0;536\n1,5;1072,5\n", "ok", "CSV with ; and decimal commas")
    add("csv_utf16", opnet.encode("utf-16"), "ok", "UTF-16 CSV (Excel Unicode text)")
    add("csv_gzip", gzip.compress(opnet.encode()), "ok", "gzip CSV (decompressed with a cap)")
    add("csv_nonfinite", (opnet + "2\tNaN\n3\tinf\n4\t1e309\n").encode(), "W-NONFINITE",
        "NaN / inf / 1e309 values")
    add("csv_unknown_column", (opnet.replace("\n", "\tNet.x.Foo Bar (bits)\n", 1)
                               .replace("536\n", "536\t1\n").replace("1072\n", "1072\t2\n")).encode(),
        "W-UNMAPPED", "OPNET export: unknown column")
    add("netsim_missing_columns", b"PACKET_ID,SEGMENT_ID,PACKET_TYPE,CONTROL_PACKET_TYPE/APP_NAME,SOURCE_ID,"
        b"DESTINATION_ID,TRANSMITTER_ID\n1,1,FTP,APP1_FTP,NODE-1,NODE-2,NODE-1\n", "UnknownFormatError",
        "NetSim export missing required columns")
    add("flent_newer_version", gzip.compress(b'{"version": 9, "x_values": [0.0], "results": {}, "metadata": {}, '
                                             b'"raw_values": {}}'), "UnknownFormatError",
        "Flent file of a newer format version")
    add("xml_entity_bomb", b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
        b"<FlowMonitor><FlowStats>&lol2;</FlowStats></FlowMonitor>", "UnknownFormatError",
        "XML with entity declarations (billion laughs)")
    return c
