"""ns-2 normal wired trace reader (tracekit.parsers.ns2): real lab files, real ns-2 runs, hostile edits."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import SAMPLES, need_corpus, need_tool, sample

import tracekit
from tracekit.errors import CorruptTraceError, TracekitError, TruncatedError, UnknownFormatError
from tracekit.parsers import ns2, sniff_bytes
from tracekit.schema import ACK, CWR, PSH, SYN

TPWINDOW_RUNS = sorted(p.parent for p in (SAMPLES / "ns2").glob("**/WindowMon.tr"))


def _text(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _row(tr: tracekit.Trace, event: str, uid: int, link: str | None = None) -> dict:
    pk = tr.packets.filter((pl.col("event") == event) & (pl.col("pkt_id") == uid))
    if link is not None:
        pk = pk.filter(pl.col("link") == link)
    assert pk.height == 1, pk
    return pk.row(0, named=True)


# ---- the real student trace (corpus) ---------------------------------------------------------------

def test_corpus_event_counts_match_grep() -> None:
    """Every + - r d line becomes exactly one event (compared with grep -c on the same file)."""
    path = need_corpus("ns2-lab", "outWindow.head10000.tr")
    grep = need_tool("grep")
    tr = ns2.read(path)
    for letter, event in (("+", "enqueue"), ("-", "dequeue"), ("r", "recv"), ("d", "drop")):
        n = int(subprocess.run([grep, "-c", f"^{letter} ", str(path)], capture_output=True, text=True).stdout)
        assert tr.meta["ns2_events"][letter] == n
        assert tr.packets.filter(pl.col("event") == event).height == n
    assert tr.meta["ns2_events"] == {"+": 3359, "-": 3337, "d": 14, "r": 3290}
    assert tr.packets.height == 10_000 and tr.warnings == []
    assert tr.packets["frame"].to_list() == list(range(1, 10_001))  # frame = line number


def test_corpus_values_by_hand() -> None:
    """Real lines of a student's lab run (the corpus' outWindow.tr), by hand (packetSize_ 500 -> 540 B, SYN on)."""
    tr = ns2.read(need_corpus("ns2-lab", "outWindow.head10000.tr"))
    # + 0.5 0 1 tcp 40 ------- 1 0.0 1.0 0 0   -> the SYN
    r = _row(tr, "enqueue", 0)
    assert (r["time"], r["node"], r["link"], r["src"], r["sport"], r["dst"], r["dport"]) == \
        (0.5, "0", "0->1", "0", 0, "1", 0)
    assert (r["size"], r["payload"], r["seq"], r["ack"], r["flags"], r["pkt_seq"], r["ptype"]) == \
        (40, 0, 0, None, SYN, 0, "tcp")
    assert (r["proto"], r["flow"], r["dir"]) == ("tcp", 0, 0)
    # r 0.60032 0 1 tcp 40 ... : received at the link's downstream node
    assert _row(tr, "recv", 0)["node"] == "1"
    # + 0.60032 1 0 ack 40 ------- 1 1.0 0.0 0 1  -> the sink's ACK of the SYN: SYN|ACK, ack 1
    r = _row(tr, "enqueue", 1)
    assert (r["dir"], r["seq"], r["ack"], r["flags"], r["payload"]) == (1, 0, 1, SYN | ACK, 0)
    # + 0.70064 0 1 tcp 540 ------- 1 0.0 1.0 1 2 -> first data segment: bytes [1, 501)
    r = _row(tr, "enqueue", 2)
    assert (r["seq"], r["payload"], r["flags"], r["ack"]) == (1, 500, ACK | PSH, 1)
    # + 0.80496 1 0 ack 40 ------- 1 1.0 0.0 1 4  -> acks segment 1: next expected byte 501
    assert _row(tr, "enqueue", 4)["ack"] == 501
    # + 1.8016 / d 1.8016 0 1 tcp 540 ------- 1 0.0 1.0 100 163 -> tail drop of bytes [49501, 50001)
    r = _row(tr, "drop", 163)
    assert (r["time"], r["node"], r["seq"], r["pkt_seq"]) == (1.8016, "0", 49501, 100)
    # + 1.988 1 0 ack 40 ------- 1 1.0 0.0 99 243 -> dupack: asks for exactly the dropped byte
    assert _row(tr, "enqueue", 243)["ack"] == 49501
    # + 2.09696 0 1 tcp 540 ---A--- 1 0.0 1.0 100 292 -> the retransmission, `A` = CWR
    r = _row(tr, "enqueue", 292)
    assert (r["seq"], r["flags"]) == (49501, ACK | PSH | CWR)
    assert tr.meta["segment_size"] == 500 and tr.meta["packet_size"] == 540
    assert tr.meta["tcp_flows"] == {"0": {"kind": "one-way", "header_bytes": 40, "segment_size": 500, "syn": True}}


def test_sniff_is_specific() -> None:
    head = _text(need_corpus("ns2-lab", "outWindow.head10000.tr"))[:65536]
    assert ns2.sniff(head) and sniff_bytes(head) == "ns2"
    for other in (sample("ns2", "lab_reno", "Window.tr"), sample("ns2", "lab_reno", "WindowMon.tr"),
                  sample("ns2", "wireless", "wireless.tr"), sample("ns2", "dumbbell", "queue.tr"),
                  sample("ns3", "dumbbell", "dumbbell.tr.gz")):
        assert not ns2.sniff(_text(other)[:65536]), other
    # a nam trace has the same event letters but `-t` tags: not a normal trace
    assert not ns2.sniff(b"+ -t 0.1 -s 0 -d 1 -p tcp -e 40 -c 0 -i 0 -a 0 -x {0.0 1.0 0 ------- null}\n" * 3)


# ---- the real ns-2 runs in samples/ -----------------------------------------------------------------

@pytest.mark.parametrize("run", TPWINDOW_RUNS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_tpwindow_runs_read_whole(run: Path) -> None:
    trace_file = next(run.glob("out.tr*"))
    text = _text(trace_file)
    tr = ns2.read(trace_file)
    lines = text.count(b"\n")
    partial = 0 if text.endswith(b"\n") else 1
    assert tr.packets.height == lines  # the partial last line (if any) is dropped, nothing else
    assert tr.meta["counts"]["truncated"] == partial
    assert [w["code"] for w in tr.warnings] == (["W-TRUNCATED"] if partial else [])
    assert tr.packets.filter(pl.col("event") == "drop").height == text.count(b"\nd ") + text.startswith(b"d ")
    assert tr.packets.select(pl.col("flow").n_unique()).item() == 1
    assert tr.meta["segment_size"] == 500


def test_truncated_submission() -> None:
    """A simulator killed mid-line: keep the 6,420 whole lines, warn with the line number; strict refuses."""
    path = sample("ns2", "grading", "submissions", "truncated", "out.tr")
    tr = ns2.read(path)
    assert tr.packets.height == 6420
    (w,) = tr.warnings
    assert w["code"] == "W-TRUNCATED" and w["line"] == 6421
    with pytest.raises(TruncatedError) as exc:
        ns2.read(path, strict=True)
    assert exc.value.line == 6421 and exc.value.path == str(path)


def test_dumbbell_every_link_and_sack_acks() -> None:
    """4 flows over 3 hops: both directions share a flow id, events on all links kept, SACK acks are pure ACKs."""
    tr = ns2.read(sample("ns2", "dumbbell", "out.tr.gz"))
    pk = tr.packets
    assert tr.packets.height == 29012 and tr.meta["ns2_events"]["d"] == 81
    flows = pk.group_by("flow").agg(pl.col("dir").n_unique(), pl.col("link").unique().sort()).sort("flow")
    assert flows["flow"].to_list() == [0, 1, 2, 3]
    assert flows["dir"].to_list() == [2, 2, 2, 2]
    assert flows.filter(pl.col("flow") == 0)["link"].item().to_list() == \
        ["0->4", "4->0", "4->5", "5->4", "5->6", "6->5"]
    # data senders are nodes 0..3 (ptype tcp), sinks 6..9
    senders = pk.filter(pl.col("dir") == 0).group_by("flow").agg(pl.col("src").cast(pl.String).unique())
    assert sorted(x[0] for x in senders["src"].to_list()) == ["0", "1", "2", "3"]
    acks = pk.filter(pl.col("ptype") == "ack")
    assert set(acks["size"].unique().to_list()) >= {40, 48, 56, 64}  # TCPSink/Sack1: 8 bytes per block
    assert acks["payload"].unique().to_list() == [0]
    # per-fid drop counts from the samples README (41/10/25/5)
    drops = pk.filter(pl.col("event") == "drop").group_by("flow").len().sort("flow")["len"].to_list()
    assert drops == [41, 10, 25, 5]


def test_throughput_from_out_tr_equals_windowmon() -> None:
    """Issue acceptance: departures of flow 1 on 0->1 reproduce WindowMon.tr's tput and avgtput.

    tput at sample t counts the packets dequeued in the second before t, avgtput all of them since
    0.5 s divided by t - 0.5. The trace rounds times to 1 µs, so a departure printed at exactly a
    sample time may belong to either side: the cumulative count must lie between the departures
    strictly before t and those at or before t, and the per-second tput must then match exactly.
    """
    checked = 0
    for run in TPWINDOW_RUNS:
        tr = tracekit.read(run)
        pk, sm = tr.packets, tr.samples
        end = float(pk["time"].max())  # type: ignore[arg-type]
        (flow,) = pk.filter((pl.col("ptype") == "tcp") & (pl.col("link") == "0->1"))["flow"].unique().to_list()
        dep = pk.filter((pl.col("event") == "dequeue") & (pl.col("link") == "0->1") & (pl.col("flow") == flow))
        dep = np.sort(dep["time"].to_numpy())
        tput = sm.filter(pl.col("metric") == "throughput_pps").sort("time")
        avg = sm.filter(pl.col("metric") == "avg_throughput_pps").sort("time")
        t, v, a = tput["time"].to_numpy(), tput["value"].to_numpy(), avg["value"].to_numpy()
        assert (avg["time"].to_numpy() == t).all()
        cum = np.cumsum(v)  # WindowMon's own cumulative departures (lastpktsd starts at 0)
        assert np.allclose(a * (t - 0.5), cum, rtol=0, atol=1e-9)  # avgtput = departures / (t - 0.5)
        # the truncated submission's out.tr stops early; finished transfers (sweep) just go quiet
        truncated = any(w["code"] == "W-TRUNCATED" for w in tr.warnings)
        covered = t < end if truncated else np.ones(len(t), dtype=bool)
        lo = np.searchsorted(dep, t, side="left")[covered]
        hi = np.searchsorted(dep, t, side="right")[covered]
        assert ((lo <= cum[covered]) & (cum[covered] <= hi)).all(), run
        exact = covered & (np.searchsorted(dep, t, side="left") == np.searchsorted(dep, t, side="right"))
        exact &= np.concatenate(([True], exact[:-1]))  # both ends of the window unambiguous
        per_window = np.diff(np.concatenate(([0], np.searchsorted(dep, t, side="right"))))
        assert (per_window[exact] == v[exact]).all(), run
        # the final avgtput, from the trace alone
        if covered[-1]:
            assert abs(len(dep[dep <= t[-1]]) / (t[-1] - 0.5) - a[-1]) <= 1 / (t[-1] - 0.5)
        checked += int(exact.sum())
    # of 17 x 19 + 2 (big_queue: 3 s) + 5 x 5 (the 6 s feedback example) + 5 x 19 (oscillation) = 445:
    # 18 windows touch a tie, 8 + 2 lie past the truncations
    assert checked == 417


def test_analyze_run_dir_json() -> None:
    from tracekit.cli.main import main

    result = CliRunner().invoke(main, ["analyze", str(sample("ns2", "lab_reno")), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (flow,) = [f for f in doc["flows"] if f["dir"] == 0]
    assert (flow["src"], flow["dst"], flow["sport"], flow["dport"]) == ("0", "1", 0, 0)
    assert flow["data_bytes"] > 1_000_000 and flow["retrans_packets"] > 0
    assert flow["handshake_rtt_s"] == pytest.approx(0.20064)  # SYN at 0.5, its ACK back at 0.70064
    assert sorted(doc["trace"]["formats"]) == ["ns2", "ns2-monitor", "ns2-monitor"]


# ---- FullTcp and options, from real ns runs ---------------------------------------------------------

_FULLTCP = """
set ns [new Simulator]
set f [open out.tr w]
{hdr}
$ns trace-all $f
set n0 [$ns node]
set n1 [$ns node]
$ns duplex-link $n0 $n1 1Mb 10ms DropTail
$ns queue-limit $n0 $n1 5
set tcp [new Agent/TCP/FullTcp]
set sink [new Agent/TCP/FullTcp]
$tcp set segsize_ 960
$ns attach-agent $n0 $tcp
$ns attach-agent $n1 $sink
$tcp set fid_ 3
$ns connect $tcp $sink
$sink listen
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 0.1 "$ftp send 20000"
$ns at 1.5 "$ns flush-trace; close $f; exit 0"
$ns run
"""


def _run_ns(tmp_path: Path, script: str) -> Path:
    ns = need_tool("ns")
    (tmp_path / "run.tcl").write_text(script)
    subprocess.run([ns, "run.tcl"], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    return tmp_path / "out.tr"


@pytest.mark.parametrize("show_tcphdr", [False, True])
def test_fulltcp_byte_numbers(tmp_path: Path, show_tcphdr: bool) -> None:
    path = _run_ns(tmp_path, _FULLTCP.format(hdr="Trace set show_tcphdr_ 1" if show_tcphdr else ""))
    tr = ns2.read(path)
    assert tr.meta["tcp_flows"]["0"]["kind"] == "FullTcp" and tr.meta["segment_size"] == 960
    pk = tr.packets.filter(pl.col("event") == "enqueue")
    syn = pk.row(0, named=True)
    assert (syn["dir"], syn["seq"], syn["flags"] & (SYN | ACK)) == (0, 0, SYN)
    synack = pk.filter(pl.col("dir") == 1).row(0, named=True)
    assert synack["flags"] & (SYN | ACK) == SYN | ACK and synack["ptype"] == "ack"  # the listener says `ack`
    data = pk.filter((pl.col("dir") == 0) & (pl.col("payload") > 0))
    assert data["seq"].head(3).to_list() == [1, 961, 1921] and data["payload"].max() == 960
    # 20000 bytes = 20 full segments + 800: the last one is short
    assert data.filter(pl.col("payload") < 960)["payload"].unique().to_list() == [800]
    acks = pk.filter((pl.col("dir") == 1) & (pl.col("seq") == 1))
    if show_tcphdr:
        assert acks["ack"].head(2).to_list() == [961, 1921]  # the real ack numbers, made relative
    else:
        assert acks["ack"].null_count() == acks.height  # not in the trace without show_tcphdr_


def test_timestamps_header_option(tmp_path: Path) -> None:
    """timestamps_ true adds 10 bytes to data packets only: the trace cannot tell, the option fixes it."""
    script = _FULLTCP.replace("Agent/TCP/FullTcp]\nset sink [new Agent/TCP/FullTcp]",
                              "Agent/TCP/Reno]\nset sink [new Agent/TCPSink]")
    script = script.replace("$tcp set segsize_ 960", "$tcp set timestamps_ true\n$tcp set packetSize_ 1000")
    script = script.replace("$sink listen\n", "").format(hdr="")
    path = _run_ns(tmp_path, script)
    pk = ns2.read(path).packets
    assert set(pk.filter(pl.col("payload") > 0)["size"].unique().to_list()) == {1050}
    assert ns2.read(path).meta["segment_size"] == 1010
    tr = ns2.read(path, tcp_header_bytes=50)
    assert tr.meta["segment_size"] == 1000
    assert tr.packets.filter((pl.col("pkt_seq") == 2) & (pl.col("ptype") == "tcp"))["seq"].unique().to_list() == [1001]


# ---- hostile and unusual input (edits of a real file) -----------------------------------------------

def _real_lines(n: int = 60) -> list[bytes]:
    return _text(sample("ns2", "lab_reno", "out.tr.gz")).split(b"\n")[:n]


def test_bad_lines_are_reported_never_padded() -> None:
    lines = _real_lines()
    edited = list(lines)
    edited[4] = b"r 0.2 0 2 tcp"  # missing columns (polars would pad them with nulls)
    edited[9] = lines[9].replace(b" 540 ", b" abc ")  # a non-number
    edited[14] = b"\x00\xff\xfe binary \x89PNG junk"
    edited[19] = b"+ " + b"9" * 70_000  # over max_line_bytes
    edited[24] = lines[24] + b" 1 0x10 40 0 extra"  # too many columns
    edited.insert(30, b"v 1 eval {set sim_annotation {hello}}")  # an annotation: skipped, not bad
    edited.insert(31, b"")  # a blank line: ignored
    tr = ns2.read(b"\n".join(edited) + b"\n", name="edited.tr")
    good = len([x for x in lines if x]) - 5
    assert tr.packets.height == good
    w = {x["code"]: x for x in tr.warnings}
    assert w["W-BADLINE"]["count"] == 5 and w["W-BADLINE"]["line"] == 5
    assert "lines 5, 10, 15, 20, 25" in w["W-BADLINE"]["message"]
    assert w["W-SKIPPED"]["count"] == 1 and w["W-SKIPPED"]["line"] == 31
    assert tr.packets.null_count()[["time", "size", "pkt_seq", "pkt_id", "src", "dst"]].sum_horizontal().item() == 0
    assert 5 not in tr.packets["frame"].to_list()
    with pytest.raises(CorruptTraceError) as exc:
        ns2.read(b"\n".join(edited) + b"\n", name="edited.tr", strict=True)
    assert exc.value.line == 5 and exc.value.path == "edited.tr"


def test_nothing_usable_names_the_line() -> None:
    with pytest.raises(CorruptTraceError) as exc:
        ns2.read(b"+ 0.5 0 1 tcp\n- x y\n", name="bad.tr")
    assert exc.value.line == 1 and "bad.tr" in str(exc.value)
    with pytest.raises(UnknownFormatError):
        ns2.read(b"", name="empty.tr")


def test_hierarchical_addresses_udp_and_early_drops() -> None:
    """node.port split on the last dot; cbr is UDP with payload = size; RED's `e` is a drop."""
    text = (b"+ 0.5 0 1 cbr 500 ------- 0 0.1.0.0 0.1.1.5 0 0\n"
            b"- 0.5 0 1 cbr 500 ------- 0 0.1.0.0 0.1.1.5 0 0\n"
            b"e 0.6 0 1 cbr 500 ------- 0 0.1.0.0 0.1.1.5 1 1\n"
            b"r 0.523333 0 1 cbr 500 ------- 0 0.1.0.0 0.1.1.5 0 0\n")
    pk = ns2.read(text).packets
    r = pk.row(0, named=True)
    assert (r["src"], r["sport"], r["dst"], r["dport"], r["proto"], r["payload"], r["seq"]) == (
        "0.1.0", 0, "0.1.1", 5, "udp", 500, None)
    assert pk["event"].to_list() == ["enqueue", "dequeue", "recv", "drop"]  # sorted by time, with a warning
    assert pk["flow"].unique().to_list() == [0]


def test_mutations_raise_only_tracekit_errors() -> None:
    """Random byte damage of a real trace: a Trace or a TracekitError, nothing else."""
    base = bytearray(b"\n".join(_real_lines(400)) + b"\n")
    rng = np.random.default_rng(7)
    for _ in range(40):
        data = bytearray(base)
        pos = rng.integers(0, len(data), size=int(rng.integers(1, 40)))
        data_np = np.frombuffer(data, dtype=np.uint8).copy()
        data_np[pos] = rng.integers(0, 256, size=len(pos))
        try:
            tr = ns2.read(data_np.tobytes(), name="mutant.tr")
        except TracekitError:
            continue
        assert tr.packets.height <= 400


_MIXED = """
set ns [new Simulator]
set f [open out.tr w]
$ns trace-all $f
set n0 [$ns node]
set n1 [$ns node]
set n2 [$ns node]
$ns duplex-link $n0 $n1 2Mb 10ms DropTail
$ns duplex-link $n1 $n2 1Mb 20ms RED
$ns queue-limit $n1 $n2 15
set tcp [new Agent/TCP/Newreno]
$tcp set fid_ 1
$ns attach-agent $n0 $tcp
set sink [new Agent/TCPSink/DelAck]
$ns attach-agent $n2 $sink
$ns connect $tcp $sink
set ftp [new Application/FTP]
$ftp attach-agent $tcp
set udp [new Agent/UDP]
$udp set fid_ 2
$ns attach-agent $n0 $udp
set null [new Agent/Null]
$ns attach-agent $n2 $null
$ns connect $udp $null
set cbr [new Application/Traffic/CBR]
$cbr set packetSize_ 500
$cbr set rate_ 600kb
$cbr attach-agent $udp
$ns trace-annotate "start"
$ns at 0.1 "$ftp start"
$ns at 0.2 "$cbr start"
$ns at 0.5 "$ns trace-annotate \\"half\\""
$ns at 3 "$ns flush-trace; close $f; exit 0"
$ns run
"""


def test_real_run_tcp_beside_cbr(tmp_path: Path) -> None:
    """NewReno + DelAck sink beside CBR/UDP over DropTail then RED, with trace-annotate lines."""
    path = _run_ns(tmp_path, _MIXED)
    text = path.read_text()
    tr = ns2.read(path)
    (w,) = tr.warnings
    assert (w["code"], w["count"], w["line"]) == ("W-SKIPPED", text.count("\nv ") + text.startswith("v "), 1)
    pk = tr.packets
    assert pk.height == sum(1 for ln in text.splitlines() if ln[:2] in ("+ ", "- ", "r ", "d "))
    kinds = pk.group_by("flow", "dir").agg(pl.col("proto").first().cast(pl.String), pl.col("ptype").unique())
    kinds = kinds.sort("flow", "dir")
    assert kinds.select("flow", "dir", "proto").rows() == [(0, 0, "tcp"), (0, 1, "tcp"), (1, 0, "udp")]
    cbr = pk.filter(pl.col("ptype") == "cbr")
    assert cbr["payload"].unique().to_list() == [500] and cbr["seq"].null_count() == cbr.height
    assert (cbr["sport"].unique().to_list(), cbr["dport"].unique().to_list()) == ([1], [1])
    data = pk.filter((pl.col("ptype") == "tcp") & (pl.col("pkt_seq") > 0))
    assert (data["seq"] == (data["pkt_seq"] - 1) * 1000 + 1).all() and tr.meta["segment_size"] == 1000
    # every link of the path is kept: 0->1, 1->2 for data, 2->1, 1->0 for the ACKs
    assert sorted(pk["link"].unique().to_list()) == ["0->1", "1->0", "1->2", "2->1"]
