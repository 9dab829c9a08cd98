"""Every link type the fast path decodes, IP versions and extension headers, TCP options, and
the tshark slow path for link types it does not decode. Captures are crafted in ``craft.py``."""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import craft
import polars as pl
import pytest
from conftest import need_tool
from scapy.layers.inet import IP, TCP, IPOption_NOP
from scapy.layers.inet6 import IPv6

import tracekit
from tracekit._source import NamedBytes
from tracekit.errors import UnknownFormatError

CONV = craft.conversation()
CONV6 = craft.conversation(v6=True)


def _check(trace: tracekit.Trace, expected: list[craft.Expected], v6: bool = False) -> None:
    """Every crafted segment decoded with its relative numbers, scaled window and addresses."""
    pk = trace.packets
    assert pk.height == len(expected)
    assert pk["frame"].to_list() == list(range(1, len(expected) + 1))
    assert pk["proto"].cast(pl.String).to_list() == ["tcp"] * len(expected)
    assert pk["flow"].to_list() == [0] * len(expected)
    got = pk.select("dir", "seq", "ack", "flags", "win", "payload").rows()
    assert got == [(e.dir, e.seq, e.ack, e.flags, e.win, e.payload) for e in expected]
    c, s = ("fd00::1", "fd00::2") if v6 else ("10.0.0.1", "10.0.0.2")
    first = pk.row(0, named=True)
    assert (first["src"], first["dst"], first["sport"], first["dport"]) == (c, s, 40000, 5001)
    assert (first["mss"], first["wscale"], first["ts_val"], first["ts_ecr"]) == (1000, 7, 1000, 0)
    # SACK blocks relative to the data sender's ISN, like tcp.options.sack_le/re
    sacks = [x for x in pk["sack"].to_list() if x]
    assert sacks == [[[2001, 3001]], [[2001, 4001]]]


LINKS: dict[str, tuple[int, Callable[[object], bytes]]] = {
    "ethernet": (1, craft.ether),
    "vlan_8021q": (1, lambda p: craft.ether(p, tags=(7,))),
    "qinq_88a8": (1, lambda p: craft.ether(p, tags=(100, 7), qinq=True)),
    "sll_113": (113, craft.sll),
    "sll2_276": (276, craft.sll2),
    "raw_101": (101, bytes),
    "raw_12": (12, bytes),
    "raw_14": (14, bytes),
    "ppp_ns3_bare": (9, craft.ppp),
    "ppp_ff03": (9, lambda p: craft.ppp(p, hdlc=True)),
    "ppp_hdlc_50": (50, lambda p: craft.ppp(p, hdlc=True)),
    "null_le_af30": (0, lambda p: craft.null(p, af6=30, order="<")),
    "null_be_af24": (0, lambda p: craft.null(p, af6=24, order=">")),
    "null_le_af28": (0, lambda p: craft.null(p, af6=28, order="<")),
    "loop_108": (108, lambda p: craft.null(p, af6=24, order=">")),
}


@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
@pytest.mark.parametrize("link", list(LINKS))
def test_link_type_decodes_the_connection(link: str, v6: bool) -> None:
    lt, wrap = LINKS[link]
    pkts, expected = CONV6 if v6 else CONV
    trace = tracekit.read(craft.pcap([wrap(p) for p in pkts], linktype=lt))
    assert trace.meta["linktypes"] == [lt]
    assert trace.warnings == []
    _check(trace, expected, v6)


@pytest.mark.parametrize("lt,v6", [(228, False), (229, True)], ids=["ipv4_228", "ipv6_229"])
def test_raw_ipv4_and_ipv6_link_types(lt: int, v6: bool) -> None:
    pkts, expected = CONV6 if v6 else CONV
    _check(tracekit.read(craft.pcap([bytes(p) for p in pkts], linktype=lt)), expected, v6)


def test_size_is_the_original_length_and_caplen_the_captured_one() -> None:
    pkts, _ = CONV
    frames = [craft.ether(p) for p in pkts]
    pk = tracekit.read(craft.pcap(frames)).packets
    assert pk["size"].to_list() == [len(f) for f in frames]
    assert pk["caplen"].to_list() == [len(f) for f in frames]


def test_ipv6_extension_header_chain_is_walked() -> None:
    pkts, expected = CONV6
    chained = [craft.ipv6_ext_chain(p) for p in pkts]
    assert bytes(chained[0])[6] == 0  # next header: hop-by-hop
    _check(tracekit.read(craft.pcap([craft.ether(p) for p in chained])), expected, v6=True)


def test_ipv6_first_fragment_keeps_its_tcp_header() -> None:
    pkts, expected = CONV6
    t = tracekit.read(craft.pcap([craft.ether(craft.ipv6_first_fragment(p)) for p in pkts]))
    _check(t, expected, v6=True)
    assert "W-FRAGMENT" not in [w["code"] for w in t.warnings]


def test_non_first_fragments_are_counted_not_decoded() -> None:
    frag = IP(src="10.0.0.1", dst="10.0.0.2", proto=6, frag=100) / (b"\0" * 40)
    t = tracekit.read(craft.pcap([craft.ether(frag)]))
    assert t.packets["proto"].cast(pl.String).to_list() == ["other"]
    assert [w["count"] for w in t.warnings if w["code"] == "W-FRAGMENT"] == [1]


def test_udp_rows_are_kept_with_ports_and_payload() -> None:
    t = tracekit.read(craft.pcap([craft.ether(craft.udp_packet()), craft.ether(craft.udp_packet(v6=True))]))
    pk = t.packets
    assert pk["proto"].cast(pl.String).to_list() == ["udp", "udp"]
    assert pk.select("sport", "dport", "payload").rows() == [(5353, 53, 100)] * 2
    assert pk["seq"].null_count() == 2 and pk["flow"].to_list() == [0, 1]


def test_non_ip_frames_are_counted_and_dropped_from_rows() -> None:
    pkts, expected = CONV
    frames = [craft.arp_frame()] + [craft.ether(p) for p in pkts] + [craft.arp_frame()]
    t = tracekit.read(craft.pcap(frames))
    assert t.meta["counts"]["non_ip"] == 2
    assert t.meta["counts"]["records"] == len(frames)
    assert t.packets["frame"].to_list() == list(range(2, len(pkts) + 2))  # frame numbers stay the file's


def _tcp_with_options(opts: bytes) -> bytes:
    seg = bytes(TCP(sport=1, dport=2, flags="S", seq=7))
    seg = seg[:12] + bytes([(20 + len(opts)) // 4 << 4]) + seg[13:] + opts
    return bytes(IP(src="10.0.0.1", dst="10.0.0.2", proto=6) / seg)


def test_zero_length_option_ends_option_parsing() -> None:
    # MSS first, then a length-0 option (the classic infinite loop), then a wscale never reached.
    opts = b"\x02\x04\x05\xb4" + b"\x08\x00" + b"\x03\x03\x07" + b"\x00" * 3
    t = tracekit.read(craft.pcap([craft.ether(_tcp_with_options(opts))]))
    row = t.packets.row(0, named=True)
    assert (row["mss"], row["wscale"], row["ts_val"]) == (1460, None, None)
    assert row["proto"] == "tcp" and row["payload"] == 0


def test_option_overrunning_the_header_stops_parsing_and_keeps_the_segment() -> None:
    opts = b"\x03\x03\x05" + b"\x08\x30" + b"\x00" * 3  # timestamps claiming 48 bytes
    row = tracekit.read(craft.pcap([craft.ether(_tcp_with_options(opts))])).packets.row(0, named=True)
    assert (row["wscale"], row["ts_val"], row["proto"]) == (5, None, "tcp")


def test_option_layouts_other_than_linux_are_parsed() -> None:
    # SYN options in FreeBSD's order: MSS, NOP, WS, SACK-permitted, TS
    opts = b"\x02\x04\x05\x8c" + b"\x01\x03\x03\x06" + b"\x04\x02" + b"\x08\x0a" + struct.pack("!II", 77, 0)
    opts += b"\x00" * ((-len(opts)) % 4)
    row = tracekit.read(craft.pcap([craft.ether(_tcp_with_options(opts))])).packets.row(0, named=True)
    assert (row["mss"], row["wscale"], row["ts_val"], row["ts_ecr"]) == (1420, 6, 77, 0)


def test_sack_with_four_blocks() -> None:
    blocks = [(100, 200), (300, 400), (500, 600), (700, 800)]
    opts = b"\x01\x01\x05\x22" + b"".join(struct.pack("!II", a, b) for a, b in blocks)
    pkt = bytes(IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=2, dport=1, flags="A", seq=5, ack=100,
                                                            options=[("NOP", None), ("NOP", None),
                                                                     ("SAck", tuple(x for b in blocks for x in b))]))
    assert opts[2:] in pkt
    syn = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1, dport=2, flags="S", seq=0))
    pk = tracekit.read(craft.pcap([craft.ether(syn), craft.ether(pkt)])).packets
    assert pk["sack"][1].to_list() == [list(b) for b in blocks]


def test_window_scale_above_14_is_clamped_with_a_warning() -> None:
    t = tracekit.read(craft.pcap([craft.ether(_tcp_with_options(b"\x03\x03\x14\x01"))]))
    assert t.packets["wscale"].to_list() == [14]
    assert "W-WSCALE" in [w["code"] for w in t.warnings]


def test_truncated_headers_only_frames_still_decode_tcp() -> None:
    pkts, expected = CONV
    frames = [craft.ether(p) for p in pkts]
    t = tracekit.read(craft.pcap(frames, caplens=[min(len(f), 66) for f in frames],
                                 origlens=[len(f) for f in frames]))
    # payload comes from the IP length fields, not from the captured bytes
    assert t.packets["payload"].to_list() == [e.payload for e in expected]
    assert t.packets["caplen"].max() == 66


# ---- the fast path: the common layout read from one window, exactly as the generic path reads it

def _edge_frames() -> list[bytes]:
    """Frames at every edge of the fast path's layout, among ordinary ones it takes."""
    pkts, _ = CONV
    base = [craft.ether(p) for p in pkts]
    ack = IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=5001, dport=40000, flags="A", seq=9, ack=9)
    ts = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]
    edges = [
        craft.ether(IP(src="10.0.0.1", dst="10.0.0.2", options=[IPOption_NOP()] * 4)
                    / TCP(sport=40000, dport=5001, flags="A")),  # IP options
        craft.ether(IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=40000, dport=5001, flags="A",
                                                               options=[("Timestamp", (1, 2)), ("NOP", None),
                                                                        ("NOP", None)])),  # 32 bytes, other layout
        craft.ether(IP(src="10.0.0.1", dst="10.0.0.2", frag=3, proto=6) / (b"\0" * 40)),  # not a first fragment
        # the TCP header (32 bytes with its options) does not fit the IP total length
        craft.ether(IP(src="10.0.0.1", dst="10.0.0.2", len=45) / TCP(sport=40000, dport=5001, options=ts)),
        craft.ether(ack, tags=(5,)),
        craft.ether(IPv6(src="fd00::2", dst="fd00::1") / TCP(sport=5001, dport=40000, flags="A")),
        craft.ether(craft.udp_packet()),
        craft.arp_frame(),
        craft.ether(ack)[:50],  # cut before the end of the TCP header
        craft.ether(ack / (b"x" * 30)),
    ]
    frames = []
    for i, f in enumerate(base):
        frames += [f, edges[i % len(edges)]]
    return frames + base[:3] + [craft.ether(ack)]  # a last frame shorter than the window


FAST_CASES = {
    "conversation": lambda: craft.pcap([craft.ether(p) for p in CONV[0]]),
    "edges": lambda: craft.pcap(_edge_frames()),
    "headers_only": lambda: craft.pcap(
        _edge_frames(),
        caplens=[min(len(f), n) for f, n in zip(_edge_frames(), [66, 54, 70, 60, 66, 65] * 99, strict=False)],
    ),
    "big_endian_ns": lambda: craft.pcap(_edge_frames(), endian=">", nanos=True),
}


@pytest.mark.parametrize("case", list(FAST_CASES))
def test_edge_frames_decode_as_wireshark_does(case: str, tmp_path: Path) -> None:
    """Frames around the common layout (VLAN, IPv6, UDP, ARP, cut headers, headers-only snap
    lengths, big-endian ns files): every TCP/UDP row has the ports and payload tshark gives the
    frame, and the rows are the same whether read from the file or from bytes."""
    need_tool("tshark")
    from test_fragments import _tshark

    data = FAST_CASES[case]()
    path = tmp_path / f"{case}.pcap"
    path.write_bytes(data)
    t = tracekit.read(path)
    assert tracekit.read(data).packets.equals(t.packets)
    mine = t.packets.select("frame", pl.col("proto").cast(pl.String), "payload")
    j = mine.join(_tshark(path), on="frame", how="left")
    tcp, udp = j.filter(pl.col("proto") == "tcp"), j.filter(pl.col("proto") == "udp")
    assert tcp.height > 0 and tcp["is_tcp"].all()
    assert (tcp["payload"].cast(pl.Int64) == tcp["tcp_len"]).all()
    assert (udp["payload"].cast(pl.Int64) == udp["udp_len"]).all()


# ---- the slow path: link types only tshark decodes --------------------------------------------------

def _atm_llc(p: object) -> bytes:
    """LINKTYPE_ATM_RFC1483 (100): RFC 2684 LLC/SNAP, then IPv4 — not in the fast path."""
    return b"\xaa\xaa\x03\x00\x00\x00\x08\x00" + bytes(p)  # type: ignore[call-overload]


SLOW = {"atm_rfc1483_100": (100, _atm_llc)}
#: link types the fast reader decodes since issue 24 (they went to tshark before)
NATIVE = {"ieee802_11_105": (105, craft.dot11), "c_hdlc_104": (104, craft.c_hdlc)}


@pytest.mark.parametrize("link", list(NATIVE))
def test_issue24_link_types_are_read_natively_like_ethernet(link: str) -> None:
    lt, wrap = NATIVE[link]
    pkts, expected = CONV
    t = tracekit.read(craft.pcap([wrap(p) for p in pkts], linktype=lt))
    assert t.warnings == [] and t.meta["linktypes"] == [lt]
    _check(t, expected)
    fast = tracekit.read(craft.pcap([craft.ether(p) for p in pkts]))
    cols = ["frame", "flow", "dir", "src", "dst", "sport", "dport", "seq", "ack", "flags", "payload", "sack"]
    assert t.packets.select(cols).equals(fast.packets.select(cols))


@pytest.mark.parametrize("link", list(SLOW))
def test_unknown_link_type_is_read_through_tshark(link: str) -> None:
    need_tool("tshark")
    pytest.importorskip("pyshark")
    lt, wrap = SLOW[link]
    pkts, expected = CONV
    t = tracekit.read(craft.pcap([wrap(p) for p in pkts], linktype=lt))
    assert [w["code"] for w in t.warnings] == ["W-SLOW-PATH"]
    assert "tshark" in t.warnings[0]["message"] and str(lt) in t.warnings[0]["message"]
    assert t.meta["format"] == "pcap" and t.meta["reader"] == "tshark" and t.meta["linktypes"] == [lt]
    _check(t, expected)
    fast = tracekit.read(craft.pcap([craft.ether(p) for p in pkts]))
    cols = ["frame", "time", "flow", "dir", "src", "dst", "sport", "dport", "seq", "ack", "flags", "win",
            "payload", "mss", "wscale", "ts_val", "ts_ecr", "sack"]
    assert t.packets.select(cols).equals(fast.packets.select(cols))


def test_slow_path_in_pcapng_and_strict_mode() -> None:
    need_tool("tshark")
    pytest.importorskip("pyshark")
    pkts, expected = CONV
    data = craft.pcapng([_atm_llc(p) for p in pkts], linktype=100)
    # the slow path is not damage: strict mode still reads the file
    t = tracekit.read(data, strict=True)
    assert t.meta["format"] == "pcapng" and [w["code"] for w in t.warnings] == ["W-SLOW-PATH"]
    _check(t, expected)


def test_format_tshark_reads_any_capture_without_a_warning(tmp_path: Path) -> None:
    need_tool("tshark")
    pytest.importorskip("pyshark")
    pkts, expected = CONV
    path = tmp_path / "eth.pcap"
    path.write_bytes(craft.pcap([craft.ether(p) for p in pkts] + [craft.arp_frame()]))
    t = tracekit.read(path, "tshark")
    assert t.meta["format"] == "tshark" and t.warnings == []
    assert t.meta["counts"]["non_ip"] == 1
    _check(t, expected)


def test_tshark_never_claims_a_file_by_sniffing() -> None:
    from tracekit.parsers import sniff_bytes, tshark

    assert tshark.sniff(craft.pcap([craft.ether(CONV[0][0])])) is False
    assert sniff_bytes(craft.pcap([craft.ether(CONV[0][0])])) == "pcap"


def test_unknown_link_type_without_pyshark_is_refused_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracekit.parsers import tshark

    monkeypatch.setattr(tshark, "tshark_path", lambda: None)
    with pytest.raises(UnknownFormatError) as err:
        tracekit.read(NamedBytes(craft.pcap([_atm_llc(p) for p in CONV[0]], linktype=100), "atm.pcap"))
    assert str(err.value).startswith("atm.pcap: link type 100")
    assert "pyshark" in str(err.value)


def test_link_type_tshark_does_not_know_either_is_refused() -> None:
    need_tool("tshark")
    pytest.importorskip("pyshark")
    with pytest.raises(UnknownFormatError, match="65000"):
        tracekit.read(craft.pcap([craft.ether(p) for p in CONV[0]], linktype=65000))


def test_ipv6_over_null_uses_every_bsd_family_value() -> None:
    pkt = bytes(IPv6(src="fd00::1", dst="fd00::2") / TCP(sport=1, dport=2, flags="S"))
    frames = [struct.pack("<I", af) + pkt for af in (10, 24, 28, 30)] + [struct.pack("<I", 99) + pkt]
    t = tracekit.read(craft.pcap(frames, linktype=0))
    assert t.packets.height == 4 and t.meta["counts"]["non_ip"] == 1


# ---- issue 24 point 5: an IP version nibble that disagrees with the ethertype ---------------------

def test_ip_version_disagreeing_with_the_ethertype_is_malformed_as_in_wireshark(tmp_path: Path) -> None:
    """An IPv6 header under the IPv4 ethertype is read as IPv6 (Wireshark's dissect_ip hands it
    over); an IPv4 header under the IPv6 ethertype is "Bogus IP version" there: no TCP, and no
    row here (W-MALFORMED), where it used to be read as whatever the ethertype said."""
    tool = need_tool("tshark")
    seg = TCP(sport=40000, dport=5001, flags="S", seq=1)
    good = craft.ether(IP(src="10.0.0.1", dst="10.0.0.2") / seg)
    hdr = good[:12]
    v6_as_v4 = hdr + struct.pack("!H", 0x0800) + bytes(IPv6(src="fd00::1", dst="fd00::2") / seg)
    v4_as_v6 = hdr + struct.pack("!H", 0x86DD) + bytes(IP(src="10.0.0.1", dst="10.0.0.2") / seg)
    path = tmp_path / "bogus.pcap"
    path.write_bytes(craft.pcap([good, v6_as_v4, v4_as_v6, good]))
    t = tracekit.read(path)
    out = subprocess.run([tool, "-n", "-r", str(path), "-T", "fields", "-e", "frame.number", "-e", "tcp.srcport"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    ws_tcp = [int(line.split("\t")[0]) for line in out.splitlines() if line.split("\t")[1]]
    assert t.packets.filter(pl.col("proto") == "tcp")["frame"].to_list() == ws_tcp == [1, 2, 4]
    assert t.packets.filter(pl.col("frame") == 2)["src"].cast(pl.String).to_list() == ["fd00::1"]
    (w,) = t.warnings
    assert (w["code"], w["count"], w["frame"]) == ("W-MALFORMED", 1, 3)
    assert t.meta["counts"]["malformed"] == 1
