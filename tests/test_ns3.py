"""ns-3 readers: the ASCII trace (``ns3-ascii``) and the cwnd/RTT/... series (``ns3-series``).

Real data: the ns-3.37 dumbbell run in ``samples/ns3/dumbbell`` (pcaps of three devices, the
ASCII trace of the same three devices, series files and FlowMonitor XML of the same run).
Short real lines for the formats that run does not use (IPv6, IP-level ``t``/``r`` lines,
CSMA/Ethernet, UDP) were printed by ns-3.37 (Debian libns3-dev) for a two-node IPv6
point-to-point TCP transfer and a two-node CSMA link with TCP and a UDP echo.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import need_corpus, sample

import tracekit
from tracekit.cli.main import main
from tracekit.errors import CorruptTraceError, LimitError, TruncatedError, UnknownFormatError, UsageError
from tracekit.limits import Limits
from tracekit.parsers import head_of, ns3_ascii, ns3_series, sniff_bytes

RUN = sample("ns3", "dumbbell")
ASCII = RUN / "dumbbell.tr.gz"
COMPARED = ["src", "dst", "sport", "dport", "proto", "seq", "ack", "flags", "payload", "size", "win",
            "ts_val", "ts_ecr", "sack"]


@pytest.fixture(scope="module")
def ascii_trace() -> tracekit.Trace:
    return tracekit.read(ASCII)


def _plain(df: pl.DataFrame) -> pl.DataFrame:
    """Comparable columns (categoricals/enums/arrays as plain types)."""
    return df.select(COMPARED).with_columns(
        pl.col("src", "dst", "proto").cast(pl.String), pl.col("sack").cast(pl.List(pl.List(pl.Int64))))


# ---- the acceptance test: one run through its pcap and through its ASCII trace -------------------

@pytest.mark.parametrize(("pcap", "link", "frames"), [
    ("dumbbell-0-0.pcap", "0/0", 437), ("dumbbell-2-2.pcap", "2/2", 965), ("dumbbell-3-0.pcap", "3/0", 965)])
def test_pcap_and_ascii_trace_give_the_same_packets_at_the_same_device(
        ascii_trace: tracekit.Trace, pcap: str, link: str, frames: int) -> None:
    """A device's pcap holds exactly its ``-`` (dequeue) and ``r`` (MacRx) lines, in the same order.

    Why: PointToPointNetDevice fires its sniffer (pcap) trace right after ``m_queue->Dequeue()``
    when it starts a transmission (``Send`` when idle, ``TransmitComplete`` otherwise): the
    ``-`` line and the pcap record are the same instant. On reception it fires the sniffer
    just before ``MacRx``, so every ``r`` line has a record. ``+`` lines are packets entering
    the queue (recorded again at their ``-``), ``d`` lines on ``TxQueue/Drop`` are packets
    the full queue refused (never transmitted) and ``PhyRxDrop`` drops are not sniffed: none
    of these are in the pcap. Times agree to 10 µs: pcap stamps are truncated to 1 µs, ASCII
    times are rounded to 6 significant digits (10 µs between 1 and 10 s).
    """
    cap = tracekit.read(RUN / pcap)
    dev = ascii_trace.packets.filter((pl.col("link") == link) & pl.col("event").is_in(["dequeue", "recv"]))
    assert cap.packets.height == dev.height == frames
    assert _plain(cap.packets).equals(_plain(dev))
    sim_time = cap.packets["time"] + cap.meta["t0_ns"] / 1e9
    assert (sim_time - dev["time"]).abs().max() <= 1e-5
    assert dev["node"].unique().to_list() == [link.split("/")[0]]


def test_enqueues_are_the_dequeues_plus_what_is_left_in_the_queue(ascii_trace: tracekit.Trace) -> None:
    """ns-3 drops before enqueueing: a ``d`` has no ``+``; at the end at most 10 packets (the queue) wait."""
    pk = ascii_trace.packets
    counts = pk.group_by("event").len()
    assert dict(zip(counts["event"].cast(pl.String), counts["len"], strict=False)) == {
        "enqueue": 1254, "dequeue": 1247, "recv": 1120, "drop": 19}
    bottleneck = pk.filter(pl.col("link") == "2/2")
    left = (
        bottleneck.filter(pl.col("event") == "enqueue").height - bottleneck.filter(pl.col("event") == "dequeue").height
    )
    assert 0 <= left <= 10
    assert pk.filter(pl.col("event") == "drop")["link"].unique().to_list() == ["2/2"]


def test_queue_drops_match_flowmonitor(ascii_trace: tracekit.Trace) -> None:
    """The ``d`` lines per data direction equal FlowMonitor's QUEUE drops for the same 5-tuple."""
    drops = (ascii_trace.packets.filter(pl.col("event") == "drop")
             .group_by(pl.col("src").cast(pl.String), pl.col("dst").cast(pl.String)).len())
    fm = tracekit.read(RUN / "flowmon.xml").meta["flowmon"]
    want = {(f["src"], f["dst"]): int(f.get("drops", {}).get("QUEUE", {}).get("packets", 0)) for f in fm}
    got = {(r["src"], r["dst"]): r["len"] for r in drops.to_dicts()}
    assert got == {k: v for k, v in want.items() if v}
    assert sorted(got.values()) == [7, 12]


def test_window_scale_from_the_handshake_and_tcp_options(ascii_trace: tracekit.Trace) -> None:
    pk = ascii_trace.packets.filter(pl.col("link") == "0/0")
    syn = pk.row(0, named=True)
    assert (syn["flags"], syn["win"], syn["wscale"], syn["ts_val"], syn["ts_ecr"]) == (0x02, 65535, 2, 500, 0)
    # "Win=32768" after a handshake with WinScale(2) on both sides is 131072 bytes
    data = pk.filter((pl.col("payload") > 0) & (pl.col("event") == "dequeue")).row(0, named=True)
    assert (data["win"], data["payload"], data["size"], data["seq"]) == (131072, 1448, 1502, 1)
    sacked = ascii_trace.packets.filter(pl.col("sack").is_not_null()).row(0, named=True)
    assert sacked["sack"] == [[8689, 10137]] and sacked["ack"] == 4345


def test_meta_records_time_precision_and_links(ascii_trace: tracekit.Trace) -> None:
    m = ascii_trace.meta
    assert m["format"] == "ns3-ascii" and m["tool"] == "ns-3"
    assert "6 significant digits" in m["time_precision"]
    assert m["links"] == ["0/0", "2/2", "3/0"]
    assert m["warnings"] == []


def test_analyze_json_on_the_ascii_trace_matches_the_senders_pcap() -> None:
    runner = CliRunner()
    a = runner.invoke(main, ["analyze", str(ASCII), "--json"])
    p = runner.invoke(main, ["analyze", str(RUN / "dumbbell-0-0.pcap"), "--json"])
    assert a.exit_code == 0, a.output
    flows = {f["src"]: f for f in json.loads(a.output)["flows"]}
    cap = json.loads(p.output)["flows"][0]
    keys = ("packets", "data_packets", "unique_bytes", "retrans_packets", "data_bytes")
    assert {k: flows["10.1.1.1"][k] for k in keys} == {k: cap[k] for k in keys}
    assert flows["10.1.1.1"]["retrans_packets"] == 12


# ---- other ns-3 line shapes (real ns-3.37 output) -------------------------------------------------

IP6_LINES = """\
r 0.006296 /NodeList/0/$ns3::Ipv6L3Protocol/Rx(1) ns3::Ipv6Header ((Version 6 Traffic class 0x0 DSCP Default Flow Label 0x1 Payload Length 32 Next Header 58 Hop Limit 255 ):: > ff02::1:ff00:2) ns3::Icmpv6NS (( type = 135 (NS) code = 0 target = 2001:1::200:ff:fe00:2 checksum = 38744)) ns3::Icmpv6OptionLinkLayerAddress (( type = 1 length = 1 L2 Address = 00-06-00:00:00:00:00:02))
t 0.5 /NodeList/0/$ns3::Ipv6L3Protocol/Tx(1) ns3::Ipv6Header ((Version 6 Traffic class 0x0 DSCP Default Flow Label 0x1 Payload Length 36 Next Header 6 Hop Limit 64 )2001:1::200:ff:fe00:1 > 2001:1::200:ff:fe00:2) ns3::TcpHeader (49153 > 9000 [SYN] Seq=0 Ack=0 Win=65535 ns3::TcpOptionTS(500;0) ns3::TcpOptionWinScale(2) ns3::TcpOptionSackPermitted([sack_perm]) ns3::TcpOptionEnd(EOL))
r 0.505312 /NodeList/1/$ns3::Ipv6L3Protocol/Rx(1) ns3::Ipv6Header ((Version 6 Traffic class 0x0 DSCP Default Flow Label 0x1 Payload Length 36 Next Header 6 Hop Limit 64 )2001:1::200:ff:fe00:1 > 2001:1::200:ff:fe00:2) ns3::TcpHeader (49153 > 9000 [SYN] Seq=0 Ack=0 Win=65535 ns3::TcpOptionTS(500;0) ns3::TcpOptionWinScale(2) ns3::TcpOptionSackPermitted([sack_perm]) ns3::TcpOptionEnd(EOL))
t 0.505312 /NodeList/1/$ns3::Ipv6L3Protocol/Tx(1) ns3::Ipv6Header ((Version 6 Traffic class 0x0 DSCP Default Flow Label 0x1 Payload Length 36 Next Header 6 Hop Limit 64 )2001:1::200:ff:fe00:2 > 2001:1::200:ff:fe00:1) ns3::TcpHeader (9000 > 49153 [SYN|ACK] Seq=0 Ack=1 Win=65535 ns3::TcpOptionTS(505;500) ns3::TcpOptionWinScale(2) ns3::TcpOptionSackPermitted([sack_perm]) ns3::TcpOptionEnd(EOL))
t 0.510624 /NodeList/0/$ns3::Ipv6L3Protocol/Tx(1) ns3::Ipv6Header ((Version 6 Traffic class 0x0 DSCP Default Flow Label 0x1 Payload Length 32 Next Header 6 Hop Limit 64 )2001:1::200:ff:fe00:1 > 2001:1::200:ff:fe00:2) ns3::TcpHeader (49153 > 9000 [ACK] Seq=1 Ack=1 Win=32768 ns3::TcpOptionTS(510;505) ns3::TcpOptionEnd(EOL))
"""  # noqa: E501 -- verbatim ns-3.37 trace lines

CSMA_LINES = """\
+ 0.508 /NodeList/2/DeviceList/1/$ns3::CsmaNetDevice/TxQueue/Enqueue ns3::EthernetHeader ( length/type=0x806, source=00:00:00:00:00:03, destination=ff:ff:ff:ff:ff:ff) ns3::ArpHeader (request source mac: 00-06-00:00:00:00:00:03 source ipv4: 10.9.0.1 dest ipv4: 10.9.0.2) Payload (size=18) ns3::EthernetTrailer (fcs=0)
- 0.508103 /NodeList/2/DeviceList/1/$ns3::CsmaNetDevice/TxQueue/Dequeue ns3::EthernetHeader ( length/type=0x800, source=00:00:00:00:00:03, destination=00:00:00:00:00:04) ns3::Ipv4Header (tos 0x0 DSCP Default ECN Not-ECT ttl 64 id 0 protocol 6 offset (bytes) 0 flags [none] length: 56 10.9.0.1 > 10.9.0.2) ns3::TcpHeader (49153 > 9001 [SYN] Seq=0 Ack=0 Win=65535 ns3::TcpOptionTS(500;0) ns3::TcpOptionWinScale(2) ns3::TcpOptionSackPermitted([sack_perm]) ns3::TcpOptionEnd(EOL)) ns3::EthernetTrailer (fcs=0)
r 1.00012 /NodeList/3/DeviceList/1/$ns3::CsmaNetDevice/MacRx ns3::EthernetHeader ( length/type=0x800, source=00:00:00:00:00:03, destination=00:00:00:00:00:04) ns3::Ipv4Header (tos 0x0 DSCP Default ECN Not-ECT ttl 64 id 0 protocol 17 offset (bytes) 0 flags [none] length: 128 10.9.0.1 > 10.9.0.2) ns3::UdpHeader (length: 108 49153 > 9) Payload (size=100) ns3::EthernetTrailer (fcs=0)
t 1 /NodeList/2/$ns3::Ipv4L3Protocol/Tx(1) ns3::Ipv4Header (tos 0x0 DSCP Default ECN Not-ECT ttl 64 id 0 protocol 17 offset (bytes) 0 flags [none] length: 128 10.9.0.1 > 10.9.0.2) ns3::UdpHeader (length: 108 49153 > 9) Payload (size=100)
t 0.517327 /NodeList/2/$ns3::Ipv4L3Protocol/Tx(1) ns3::Ipv4Header (tos 0x0 DSCP Default ECN Not-ECT ttl 64 id 3 protocol 6 offset (bytes) 0 flags [none] length: 552 10.9.0.1 > 10.9.0.2) ns3::TcpHeader (49153 > 9001 [ACK] Seq=501 Ack=1 Win=32768 ns3::TcpOptionTS(517;508) ns3::TcpOptionEnd(EOL)) Payload Fragment [500:512] Payload Fragment [0:488]
"""  # noqa: E501 -- verbatim ns-3.37 trace lines


def test_ipv6_ip_level_lines() -> None:
    t = ns3_ascii.read(IP6_LINES.encode(), name="ip6.tr")
    pk = t.packets
    assert pk["event"].cast(pl.String).to_list() == ["recv", "send", "recv", "send", "send"]
    assert pk["link"].to_list() == ["0/if1", "0/if1", "1/if1", "1/if1", "0/if1"]
    syn = pk.row(1, named=True)
    assert (str(syn["src"]), str(syn["dst"]), syn["sport"], syn["dport"]) == (
        "2001:1::200:ff:fe00:1", "2001:1::200:ff:fe00:2", 49153, 9000)
    assert (syn["proto"], syn["size"], syn["payload"], syn["flags"]) == ("tcp", 76, 0, 0x02)
    assert pk.row(0, named=True)["proto"] == "other"  # ICMPv6 neighbour solicitation
    assert pk["dir"].to_list()[1:] == [0, 0, 1, 0]
    assert pk.row(4, named=True)["win"] == 32768 * 4


def test_csma_ethernet_udp_and_arp_lines() -> None:
    t = ns3_ascii.read(CSMA_LINES.encode(), name="csma.tr")
    assert t.meta["counts"]["non_ip"] == 1  # the ARP request
    rows = t.packets.to_dicts()
    # Ethernet: 14-byte header + IP + 4-byte FCS (payload padded to 46)
    assert [(r["proto"], r["size"], r["payload"]) for r in rows] == [
        ("tcp", 74, 0), ("udp", 146, 100), ("udp", 128, 100), ("tcp", 552, 500)]
    assert rows[3]["seq"] == 501 and rows[1]["link"] == "3/1" and rows[2]["link"] == "2/if1"


def test_lines_without_context() -> None:
    """Helpers using the *WithoutContext sinks print no config path (docs/formats-simulators.md)."""
    line = ("+ 2 ns3::PppHeader (Point-to-Point Protocol: IP (0x0021)) ns3::Ipv4Header (tos 0x0 DSCP Default "
            "ECN ECT (1) ttl 64 id 0 protocol 17 offset (bytes) 0 flags [none] length: 1052 10.1.1.1 > 10.1.1.2) "
            "ns3::UdpHeader (length: 1032 49153 > 9) Payload (size=1024)\n")
    assert sniff_bytes(line.encode()) == "ns3-ascii"
    r = ns3_ascii.read(line.encode(), name="x.tr").packets.row(0, named=True)
    assert (r["node"], r["link"], r["size"], r["payload"], r["dport"]) == (None, None, 1054, 1024, 9)


# ---- hostile input -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ascii_bytes() -> bytes:
    return gzip.decompress(ASCII.read_bytes())


def test_empty_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "empty.tr"
    p.write_bytes(b"")
    with pytest.raises(UnknownFormatError, match="empty"):
        tracekit.read(p)
    with pytest.raises(UnknownFormatError, match="empty"):
        tracekit.read(p, "ns3-ascii")


def test_garbage_lines_are_skipped_with_their_line_number(ascii_bytes: bytes) -> None:
    lines = ascii_bytes.split(b"\n")
    bad = b"\n".join(lines[:10] + [b"Segmentation fault (core dumped)", b"+ soon /NodeList/0 ns3::X ()"] + lines[10:])
    t = ns3_ascii.read(bad, name="bad.tr")
    assert t.packets.height == 3640
    (w,) = t.warnings
    assert (w["code"], w["count"], w["line"]) == ("W-BADLINE", 2, 11)
    with pytest.raises(CorruptTraceError, match="bad.tr: line 11"):
        ns3_ascii.read(bad, name="bad.tr", strict=True)


def test_truncated_last_line(ascii_bytes: bytes) -> None:
    cut = ascii_bytes[:-200]
    t = ns3_ascii.read(cut, name="cut.tr")
    assert t.packets.height == 3639
    assert [w["code"] for w in t.warnings] == ["W-TRUNCATED"]
    with pytest.raises(TruncatedError):
        ns3_ascii.read(cut, name="cut.tr", strict=True)


def test_truncated_gzip_is_corrupt(tmp_path: Path) -> None:
    p = tmp_path / "cut.tr.gz"
    p.write_bytes(ASCII.read_bytes()[:20000])
    with pytest.raises(CorruptTraceError, match="cut.tr.gz"):
        tracekit.read(p)


def test_not_a_trace_when_forced() -> None:
    with pytest.raises(CorruptTraceError, match="no line is an ns-3 ASCII trace line"):
        ns3_ascii.read(b"hello\nworld\n", name="g.tr")
    with pytest.raises(UnknownFormatError, match="NUL"):
        ns3_ascii.read(b"+ 0.5 \x00\x01\x02 binary\n", name="bin.tr")


def test_limits(ascii_bytes: bytes) -> None:
    with pytest.raises(LimitError, match="packet events"):
        ns3_ascii.read(ascii_bytes, name="x.tr", limits=Limits(max_packets=100))
    t = ns3_ascii.read(ascii_bytes, name="x.tr", limits=Limits(max_line_bytes=450))
    (w,) = t.warnings
    assert (w["code"], w["count"]) == ("W-LONGLINE", 2244)  # lines over 450 bytes (awk)
    assert t.packets.height == 3640 - 2244


def test_latin1_junk_is_a_warning(ascii_bytes: bytes) -> None:
    t = ns3_ascii.read(ascii_bytes.replace(b"ns3::PppHeader", b"ns3::PppHeader\xe9", 1), name="x.tr")
    assert "W-ENCODING" in [w["code"] for w in t.warnings]


# ---- ns-3 series ----------------------------------------------------------------------------------

def _file_rows(path: Path) -> list[list[float]]:
    return [[float(x) for x in line.split()] for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(("name", "metric", "unit"), [
    ("dumbbell-cwnd.data", "cwnd", "bytes"), ("dumbbell-ssth.data", "ssthresh", "bytes"),
    ("dumbbell-rtt.data", "rtt", "s"), ("dumbbell-inflight.data", "inflight", "bytes"),
    ("dumbbell.cwnd", "cwnd", "bytes")])
def test_series_files_of_the_run(name: str, metric: str, unit: str) -> None:
    t = tracekit.read(RUN / name)
    assert t.meta["format"] == "ns3-series" and t.packets.height == 0
    s = t.samples
    assert s["metric"].unique().to_list() == [metric] and s["unit"].unique().to_list() == [unit]
    rows = _file_rows(RUN / name)
    want = [(r[0], r[-1]) for r in rows]
    if metric in ("ssthresh", "rtt"):  # the "0.0 0" placeholder (not set yet) is left out
        assert want[0] == (0.0, 0.0)
        want = want[1:]
    if metric == "ssthresh":  # UINT32_MAX = ssthresh not set yet
        want = [w for w in want if w[1] != 4294967295]
    assert list(zip(s["time"], s["value"], strict=False)) == want
    assert s["source"].unique().to_list() == [name]


def test_sixth_and_tcp_variants_cwnd_files_agree() -> None:
    """Both files trace the same CongestionWindow source (the .data one repeats lines at ssthresh changes)."""
    sixth = tracekit.read(RUN / "dumbbell.cwnd").samples
    tvc = tracekit.read(RUN / "dumbbell-cwnd.data").samples.slice(1)  # after the "0.0 <old>" line
    pairs = lambda s: set(zip(s["time"], s["value"], strict=False))  # noqa: E731
    assert pairs(sixth) <= pairs(tvc)
    # the extra lines repeat the cwnd in force when ssthresh changed, i.e. sixth's "old" column
    extra = pairs(tvc) - pairs(sixth)
    old = {(r[0], r[1]) for r in _file_rows(RUN / "dumbbell.cwnd")}
    assert 0 < len(extra) < 10 and extra <= old
    assert tracekit.read(RUN / "dumbbell.cwnd").meta["layout"] == "sixth"


FIFTH_STDOUT = b"""1.00419\t536
1.0093\t1072
1.01528\t1608
RxDrop at 1.13696
1.13696\t2144
RxDrop at 1.3
"""


def test_fifth_stdout_with_rxdrop_lines() -> None:
    """fifth.cc prints ``time<TAB>cwnd`` and ``RxDrop at <time>`` (NS_LOG_UNCOND in ns-3's examples/tcp/fifth.cc)."""
    t = ns3_series.read(FIFTH_STDOUT, name="fifth.out")
    assert t.meta["layout"] == "fifth" and t.warnings == []
    cw = t.samples.filter(pl.col("metric") == "cwnd")
    drops = t.samples.filter(pl.col("metric") == "drops")
    assert cw["value"].to_list() == [536, 1072, 1608, 2144]
    assert list(zip(drops["time"], drops["value"], drops["unit"], strict=False)) == [
        (1.13696, 1, "count"),
        (1.3, 2, "count"),
    ]


def test_metric_option_and_unknown_names() -> None:
    data = (RUN / "dumbbell-rtt.data").read_bytes()
    t = ns3_series.read(data, name="series.txt")
    assert t.samples["metric"][0] == "cwnd" and [w["code"] for w in t.warnings] == ["W-METRIC"]
    t = ns3_series.read(data, name="series.txt", metric="rtt")
    assert t.samples["metric"][0] == "rtt" and t.warnings == [] and t.meta["metric_from"] == "option"
    t = tracekit.read(RUN / "dumbbell-ssth.data", metric="rto")
    assert t.samples["unit"][0] == "s"
    with pytest.raises(UsageError, match="unknown ns-3 series metric"):
        ns3_series.read(data, name="x", metric="bananas")


def test_series_hostile_lines() -> None:
    data = (RUN / "dumbbell-cwnd.data").read_bytes()
    t = ns3_series.read(data[:-3], name="x-cwnd.data")
    assert [w["code"] for w in t.warnings] == ["W-TRUNCATED"] and t.samples.height == 141
    t = ns3_series.read(data.replace(b"0.702845 17376\n", b"0.702845 17376 garbage\n"), name="x-cwnd.data")
    assert [(w["code"], w["line"]) for w in t.warnings] == [("W-BADLINE", 5)]
    t = ns3_series.read(b"1\t0\t536\n1e999\t536\t1072\n2\t1072\t1e999\n", name="x.cwnd")
    assert [w["code"] for w in t.warnings] == ["W-NONFINITE"] and t.samples["value"].to_list() == [536]
    with pytest.raises(CorruptTraceError, match="x-cwnd.data"):
        ns3_series.read(b"a b c\n", name="x-cwnd.data")
    with pytest.raises(UnknownFormatError, match="empty"):
        ns3_series.read(b"\n\n", name="x-cwnd.data")


def test_series_sniffing_leaves_ns2_monitor_files_alone() -> None:
    """ns-2's Window.tr (``%.17g`` times, packet counts) must not be taken for an ns-3 series."""
    for part in ("Window.tr", "WindowMon.tr", "TCPUDPMon0.tr", "outWindow.head10000.tr"):
        assert not ns3_series.sniff(head_of(need_corpus("ns2-lab", part).read_bytes()))
    assert not ns3_series.sniff(sample("ns2", "lab_reno", "Window.tr").read_bytes())
    # even with exact times, small integer values and no "0.0" first line are not ns-3 bytes
    assert not ns3_series.sniff(b"0 1\n0.5 2\n1 4\n1.5 8\n")
    for name in ("dumbbell-cwnd.data", "dumbbell-ssth.data", "dumbbell-rtt.data", "dumbbell-inflight.data",
                 "dumbbell.cwnd"):
        assert sniff_bytes(head_of((RUN / name).read_bytes())) == "ns3-series"
    assert not ns3_series.sniff(head_of(ASCII.read_bytes()))
    assert not ns3_ascii.sniff((RUN / "dumbbell.cwnd").read_bytes())


# ---- one run directory -----------------------------------------------------------------------------

def test_run_directory_reads_into_one_trace() -> None:
    t = tracekit.read(RUN)
    assert sorted(t.meta["formats"]) == sorted(["pcap"] * 3 + ["ns3-series"] * 5 + ["ns3-ascii", "flowmon"])
    metrics = set(t.samples["metric"].unique().to_list())
    assert {"cwnd", "ssthresh", "rtt", "inflight", "throughput", "rx_bytes"} <= metrics
    skipped = next(w for w in t.warnings if w["code"] == "W-SKIPPED-FILE")
    # flows.txt (program output) is reported; run.json is a known non-trace and is skipped quietly
    assert "flows.txt" in skipped["message"] and "run.json" not in skipped["message"]


def test_run_directory_is_on_the_simulation_clock() -> None:
    """ns-3 stamps its pcaps on the simulation clock: combined, they line up with the ASCII trace and the series."""
    t = tracekit.read(RUN)
    cap = tracekit.read(RUN / "dumbbell-0-0.pcap")
    assert t.meta["t0_ns"] == 0 and cap.meta["t0_ns"] == 500_000_000  # the first SYN leaves at 0.5 s
    caps = t.packets.filter(pl.col("event") == "capture")
    sim = t.packets.filter(pl.col("event") != "capture")
    assert caps["time"].min() == pytest.approx(0.5)
    # the same SYN in the ASCII trace (enqueued on node 0's device at 0.5 s)
    assert sim["time"].min() == pytest.approx(0.5, abs=1e-6)
    # every pcap moved by its own first record: frame times = the file's own times + t0
    n = cap.packets.height
    first_file = caps.filter(pl.col("flow") < cap.packets["flow"].max() + 1).head(n)
    assert first_file["time"].to_list() == pytest.approx((cap.packets["time"] + 0.5).to_list())
    cwnd = t.samples.filter((pl.col("metric") == "cwnd") & (pl.col("source") == "dumbbell.cwnd"))
    assert cwnd["time"].min() >= caps["time"].min()


def test_analyze_json_on_a_series_file() -> None:
    r = CliRunner().invoke(main, ["analyze", str(RUN / "dumbbell-rtt.data"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # stderr notes "tool-reported series only"
    assert doc["trace"]["format"] == "ns3-series" and doc["trace"]["samples"] == 106 and doc["flows"] == []
