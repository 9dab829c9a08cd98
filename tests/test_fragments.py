"""IP fragment reassembly (tracekit.parsers._reasm, the ns-3 ASCII reader), against Wireshark.

Real data: ``samples/ns3/fragments`` (``fragments.cc``, ``make_fragments.sh``), an ns-3.37 bulk
TCP transfer with SegmentSize 1460 and timestamps over 1500-byte-MTU links, so that every full
segment leaves the sender as two IPv4 fragments; pcap and ASCII trace of the sender's device, for
200,000 bytes (some losses) and 30,000 bytes (none).
Independent truth: tshark with its default IP reassembly (``ip.defragment``/``ipv6.defragment``
on). Crafted captures (scapy) cover IPv6, UDP, out-of-order and interleaved fragments, the fast
path's Ethernet layout, chunk boundaries, and what a receiver refuses.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import craft
import polars as pl
import pytest
from conftest import SAMPLES, need_tool
from scapy.layers.inet import IP, TCP, UDP, fragment
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment, fragment6

import tracekit
from tracekit._source import NamedBytes
from tracekit.errors import CorruptTraceError
from tracekit.limits import Limits

RUN = SAMPLES / "ns3" / "fragments"
PCAP = RUN / "fragments-0-0.pcap"
#: prefix -> bytes BulkSend sent (MaxBytes, run.json); "short" is the loss-free run
SENT = {"fragments": 200_000, "short": 30_000}


def _tshark(path: Path) -> pl.DataFrame:
    """Per frame: Wireshark's transport fields after its IP reassembly (empty on fragments it holds)."""
    tool = need_tool("tshark")
    fields = ["frame.number", "frame.len", "frame.time_relative", "tcp.srcport", "tcp.len", "tcp.seq",
              "udp.length", "tcp.analysis.bytes_in_flight", "ip.fragment", "ipv6.fragment"]
    cmd = [tool, "-n", "-r", str(path), "-T", "fields", "-E", "separator=\t", "-E", "aggregator=,", "-E", "quote=n"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    df = pl.read_csv(io.StringIO(out), separator="\t", has_header=False, new_columns=fields, infer_schema=False,
                     quote_char=None)
    return df.select(
        pl.col("frame.number").cast(pl.UInt64).alias("frame"),
        pl.col("frame.len").cast(pl.Int64).alias("len"),
        pl.col("frame.time_relative").cast(pl.Float64).alias("time"),
        pl.col("tcp.srcport").is_not_null().alias("is_tcp"),
        pl.col("tcp.len").cast(pl.Int64).alias("tcp_len"),
        pl.col("tcp.seq").cast(pl.Int64).alias("seq"),
        (pl.col("udp.length").cast(pl.Int64) - 8).alias("udp_len"),
        pl.col("tcp.analysis.bytes_in_flight").cast(pl.Int64).alias("bif"),
        pl.coalesce("ip.fragment", "ipv6.fragment").alias("parts"),
    )


def _check_against_tshark(path: Path, trace: tracekit.Trace) -> pl.DataFrame:
    """Every frame's protocol, payload, time and (completing frames) wire bytes as Wireshark has them."""
    ws = _tshark(path)
    lens = dict(zip(ws["frame"].to_list(), ws["len"].to_list(), strict=False))
    wire = [
        sum(lens[int(f)] for f in p.split(",")) if p else n
        for p, n in zip(ws["parts"].to_list(), ws["len"], strict=False)
    ]
    mine = trace.packets.select("frame", "time", pl.col("proto").cast(pl.String), "payload", "size")
    j = ws.with_columns(wire=pl.Series(wire, dtype=pl.Int64)).join(mine, on="frame", how="left")
    assert j.height == mine.height
    want = pl.when(pl.col("is_tcp")).then(pl.lit("tcp")).when(pl.col("udp_len").is_not_null()).then(pl.lit("udp"))
    j = j.with_columns(want=want.otherwise(pl.lit("other")))
    assert j["proto"].to_list() == j["want"].to_list()
    pay = pl.coalesce("tcp_len", "udp_len", pl.lit(0))
    assert j.filter(pl.col("payload").cast(pl.Int64) != pay).height == 0
    assert j.filter(pl.col("size").cast(pl.Int64) != pl.col("wire")).height == 0  # the datagram's frames
    assert (j["time"] - j["time_right"]).abs().max() < 1e-6  # the completing frame's own time
    return j


# ---- the ns-3 run -------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=list(SENT))
def run(request: pytest.FixtureRequest) -> tuple[str, pl.DataFrame, tracekit.Analysis]:
    pcap = RUN / f"{request.param}-0-0.pcap"
    return request.param, _tshark(pcap), tracekit.analyze(tracekit.read(pcap))


@pytest.mark.parametrize("name", list(SENT))
def test_ns3_every_segment_fragments_and_each_is_reassembled_where_wireshark_does(name: str) -> None:
    pcap = RUN / f"{name}-0-0.pcap"
    t = tracekit.read(pcap)
    j = _check_against_tshark(pcap, t)
    data = j.filter(pl.col("tcp_len") > 0)
    assert data.height > 20 and (data["parts"].is_not_null()).mean() > 0.95  # nearly all reassembled
    assert t.meta["counts"]["reassembled"] == j["parts"].drop_nulls().len()
    assert not t.warnings


def test_ns3_bytes_in_flight_equal_wiresharks(run: tuple[str, pl.DataFrame, tracekit.Analysis]) -> None:
    name, ws, a = run
    data = ws.filter(pl.col("tcp_len") > 0)
    j = data.join(a.flight.select("frame", "flight_bytes"), on="frame", how="left")
    same = j["flight_bytes"].eq_missing(j["bif"])
    print(f"{name}-0-0.pcap: bytes in flight on {j.height} data frames, {same.mean():.2%} as tshark")
    assert same.mean() >= 0.99
    fl = a.flows.row(0, named=True)
    assert fl["flight_max_bytes"] == ws["bif"].max()
    assert fl["unique_bytes"] <= fl["data_bytes"]
    assert fl["data_bytes"] == data["tcp_len"].sum()
    assert fl["unique_bytes"] == SENT[name]  # BulkSend MaxBytes (run.json): every byte once


def test_ns3_ascii_trace_labels_and_reassembles_as_the_pcap(run: tuple[str, pl.DataFrame, tracekit.Analysis]) -> None:
    """The sender's '-' lines are its pcap's outgoing frames (stamped at transmit start), in order."""
    name, ws, a = run
    t = tracekit.read(RUN / f"{name}.tr.gz")
    assert not t.warnings
    tx = t.packets.filter((pl.col("event") == "dequeue") & (pl.col("src") == "10.1.1.1"))
    out = ws.join(a.packets.select("frame", pl.col("src").cast(pl.String)), on="frame").filter(
        pl.col("src") == "10.1.1.1")
    assert tx["proto"].cast(pl.String).to_list() == ["tcp" if x else "other" for x in out["is_tcp"]]
    assert tx["payload"].cast(pl.Int64).to_list() == out["tcp_len"].fill_null(0).to_list()
    assert tx.filter(pl.col("proto") == "tcp")["seq"].to_list() == out.filter(pl.col("is_tcp"))["seq"].to_list()
    flows = tracekit.analyze(t).flows.row(0, named=True)
    assert flows["unique_bytes"] <= flows["data_bytes"] == out["tcp_len"].sum()


# ---- crafted captures ----------------------------------------------------------------------------

def _seg(i: int, n: int = 3000, v6: bool = False) -> IP | IPv6:
    ip = IPv6(src="fd00::1", dst="fd00::2") if v6 else IP(src="10.0.0.1", dst="10.0.0.2", id=100 + i)
    return ip / TCP(sport=40000, dport=5001, flags="A", seq=1 + i * 10_000, ack=1) / (bytes([65 + i % 26]) * n)


def _mixture() -> list[bytes]:
    """Plain segments (the fast path's layout) around in-order, reversed, interleaved, IPv6 and UDP fragments."""
    plain = [craft.ether(IP(src="10.0.0.2", dst="10.0.0.1") / TCP(sport=5001, dport=40000, flags="A", seq=1,
                                                                    ack=k * 100 + 1)) for k in range(12)]
    a, b, c = fragment(_seg(0), 1000), fragment(_seg(1), 1000)[::-1], fragment(_seg(2), 1200)
    d, e = fragment(_seg(3), 800), fragment(_seg(4), 800)
    v6 = fragment6(IPv6(src="fd00::1", dst="fd00::2") / IPv6ExtHdrFragment(id=9) / _seg(5, v6=True)[TCP], 1280)
    udp = fragment(IP(src="10.0.0.1", dst="10.0.0.3", id=300) / UDP(sport=9, dport=9) / (b"u" * 2500), 1000)
    inter = [p for pair in zip(d, e, strict=False) for p in pair]
    frames = [craft.ether(p) for p in [*a, *b, *c, *inter, *v6, *udp]]
    out: list[bytes] = []
    for k, f in enumerate(frames):
        out += [f, plain[k % len(plain)], plain[(k + 1) % len(plain)]]
    return out


def test_crafted_ipv4_ipv6_udp_out_of_order_and_interleaved_as_wireshark(tmp_path: Path) -> None:
    path = tmp_path / "mix.pcap"
    path.write_bytes(craft.pcap(_mixture()))
    t = tracekit.read(path)
    j = _check_against_tshark(path, t)
    assert j.filter(pl.col("parts").is_not_null()).height == 7  # datagrams reassembled
    assert t.meta["counts"]["reassembled"] == 7 and not t.warnings


def test_a_datagram_read_from_a_file_or_bytes(tmp_path: Path) -> None:
    """The reader keeps a copy of the first fragment's transport header (a file is read through a
    window, so the frame itself is gone when the datagram completes): both reads agree."""
    path = tmp_path / "mix.pcap"
    data = craft.pcap(_mixture())
    path.write_bytes(data)
    whole = tracekit.read(path).packets
    assert tracekit.read(NamedBytes(data, str(path))).packets.equals(whole)


def test_first_fragment_alone_is_not_a_tcp_segment() -> None:
    first = fragment(_seg(0), 1000)[0]
    t = tracekit.read(craft.pcap([craft.ether(first)]))
    assert t.packets["proto"].cast(pl.String).to_list() == ["other"]
    assert [(w["code"], w["count"], w["frame"]) for w in t.warnings] == [("W-FRAGMENT", 1, 1)]


def _codes(t: tracekit.Trace) -> dict[str, int]:
    return {w["code"]: w["count"] for w in t.warnings}


def test_overlapping_fragments_are_refused_with_a_warning() -> None:
    seg = bytes(_seg(0)[IP].payload)  # TCP header + 3000 bytes
    hdr = dict(src="10.0.0.1", dst="10.0.0.2", id=7, proto=6)
    frames = [craft.ether(IP(**hdr, flags="MF", frag=0) / seg[:1504]),
              craft.ether(IP(**hdr, flags="MF", frag=100) / seg[800:2000]),  # bytes 800.. overlap 0..1504
              craft.ether(IP(**hdr, frag=250) / seg[2000:])]
    t = tracekit.read(craft.pcap(frames))
    assert set(t.packets["proto"].cast(pl.String)) == {"other"}
    assert _codes(t) == {"W-FRAG-OVERLAP": 2, "W-FRAGMENT": 1}  # the refused pair; the last left alone
    with pytest.raises(CorruptTraceError, match="W-FRAG-OVERLAP"):
        tracekit.read(craft.pcap(frames), strict=True)


def test_a_duplicate_fragment_is_ignored() -> None:
    frags = fragment(_seg(0), 1000)
    t = tracekit.read(craft.pcap([craft.ether(p) for p in [frags[0], frags[1], frags[1], *frags[2:]]]))
    assert t.packets["payload"].to_list()[-1] == 3000 and not t.warnings
    assert t.meta["counts"]["duplicate_fragments"] == 1


def test_oversized_datagram_is_refused_with_a_warning() -> None:
    """The "ping of death": a last fragment at offset 65,528 carrying 100 bytes (> 65,535 in all)."""
    hdr = dict(src="10.0.0.1", dst="10.0.0.2", id=5, proto=6)
    frames = [craft.ether(IP(**hdr, flags="MF", frag=0) / bytes(_seg(0)[TCP])[:1480]),
              craft.ether(IP(**hdr, frag=8191) / (b"\0" * 100))]
    t = tracekit.read(craft.pcap(frames))
    assert set(t.packets["proto"].cast(pl.String)) == {"other"}
    assert _codes(t) == {"W-FRAG-OVERSIZE": 2}


def test_reassembly_buffers_are_bounded() -> None:
    d, e = fragment(_seg(3), 800), fragment(_seg(4), 800)
    frames = [craft.ether(p) for pair in zip(d, e, strict=False) for p in pair]
    full = tracekit.read(craft.pcap(frames), limits=Limits(max_frag_datagrams=1))
    assert full.packets.filter(pl.col("proto") == "tcp").height == 1  # the first datagram only
    # e's fragments are refused while d is pending; e's last one, after d completed, is left alone
    assert _codes(full) == {"W-FRAG-LIMIT": len(e) - 1, "W-FRAGMENT": 1}
    small = tracekit.read(craft.pcap(frames), limits=Limits(max_frag_bytes=2000))
    assert small.packets.filter(pl.col("proto") == "tcp").height == 0
    assert "W-FRAG-LIMIT" in _codes(small)
    # 40 s between the fragments of one datagram: past frag_timeout_s (30 s)
    late = [craft.ether(p) for p in fragment(_seg(0), 1000)]
    ts = [(craft.T0, 0), (craft.T0, 1000), (craft.T0 + 40, 0), (craft.T0 + 40, 1000)]
    t = tracekit.read(craft.pcap(late, ts=ts))
    assert t.packets.filter(pl.col("proto") == "tcp").height == 0
    assert _codes(t) == {"W-FRAG-LIMIT": 2, "W-FRAGMENT": 2}


def test_the_tshark_slow_path_reassembles_alike(tmp_path: Path) -> None:
    """The reader for link types the fast path lacks leaves tshark's IP reassembly on: same rows."""
    need_tool("tshark")
    from tracekit.parsers import tshark

    path = tmp_path / "mix.pcap"
    path.write_bytes(craft.pcap(_mixture()))
    for p in (path, PCAP):
        fast, slow = tracekit.read(p).packets, tshark.read(p).packets
        assert slow.equals(fast), p


def test_headers_only_capture_reassembles_from_lengths() -> None:
    """A snap length of 96 bytes keeps every header but little data: lengths suffice (not for tshark)."""
    frames = [craft.ether(p) for p in fragment(_seg(0), 1000)]
    whole = tracekit.read(craft.pcap(frames)).packets
    cut = tracekit.read(craft.pcap(frames, caplens=[min(len(f), 96) for f in frames])).packets
    assert cut["payload"].to_list() == whole["payload"].to_list() == [0, 0, 0, 3000]  # _seg's 3000 bytes
    assert cut["seq"].to_list() == whole["seq"].to_list()
    assert cut["size"].to_list() == whole["size"].to_list() == [*map(len, frames[:3]), sum(map(len, frames))]
