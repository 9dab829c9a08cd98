"""ns-2 monitor files (tracekit.parsers.ns2_monitor): the lab's Window/WindowMon/TCPUDPMon, agent and queue traces."""

from __future__ import annotations

import contextlib
import gzip
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import need_corpus, need_tool, sample

import tracekit
from tracekit.errors import CorruptTraceError, TracekitError, TruncatedError, UnknownFormatError, UsageError
from tracekit.parsers import ns2_monitor, sniff_bytes


def _metric(tr: tracekit.Trace, metric: str, unit: str | None = None) -> pl.DataFrame:
    s = tr.samples.filter(pl.col("metric") == metric)
    return (s.filter(pl.col("unit") == unit) if unit else s).sort("time")


def _at(df: pl.DataFrame, t: float) -> float:
    return float(df.filter((pl.col("time") - t).abs() < 1e-9)["value"].item())


def test_window_corpus() -> None:
    """Window.tr: 2995 cwnd samples in packets on the 0.02 s grid (a real lab run; docs/formats-ns2.md)."""
    tr = ns2_monitor.read(need_corpus("ns2-lab", "Window.tr"))
    assert tr.meta["kind"] == "window" and tr.meta["format"] == "ns2-monitor"
    cw = _metric(tr, "cwnd")
    assert cw.height == 2995 and set(cw["unit"]) == {"packets"} and set(cw["source"]) == {"cwnd"}
    t = cw["time"].to_numpy()
    assert t[0] == 0.1 and t[-1] == 59.98  # the file says 0.10000000000000001 / 59.980000000003777
    assert np.array_equal(t, np.round(0.1 + 0.02 * np.arange(2995), 9))
    for when, value in ((0.1, 1), (2.08, 66), (2.1, 33), (2.32, 33.0303), (4.06, 16.0625)):
        assert _at(cw, when) == value
    assert tr.meta["time_grid_s"] == 0.02
    assert (tr.meta["cwnd_cap"], tr.meta["cwnd_cap_from"], tr.meta["cwnd_max"]) == (66.0, "guess", 66.0)
    assert ns2_monitor.read(need_corpus("ns2-lab", "Window.tr"), window=80).meta["cwnd_cap"] == 80.0


def test_windowmon_corpus() -> None:
    """WindowMon.tr: every column as a metric; pkt/s -> bit/s with the 540-byte packets of outWindow.tr."""
    path = need_corpus("ns2-lab", "WindowMon.tr")
    tr = ns2_monitor.read(path)
    assert tr.meta["kind"] == "windowmon"
    assert (tr.meta["packet_size"], tr.meta["packet_size_from"]) == (540, "outWindow.head10000.tr")
    names = set(tr.samples.select(pl.concat_str("metric", pl.lit("/"), "unit")).to_series())
    assert names == {"drops/count", "drop_rate/ratio", "throughput_pps/pps", "throughput/bps", "queue/packets",
                     "avg_throughput_pps/pps", "avg_throughput/bps"}
    assert all(_metric(tr, m).height == 59 for m in ("drops", "queue", "throughput_pps"))
    # 1.1000000000000001 0  0.0 7.0 0 11.666666666666664
    assert [_at(_metric(tr, m), 1.1) for m in ("drops", "drop_rate", "throughput_pps", "queue", "avg_throughput_pps")] \
        == [0, 0, 7, 0, 11.666666666666664]
    # 2.1000000000000001 14  0.083832335329341312 144.0 2 94.375
    assert _at(_metric(tr, "drop_rate"), 2.1) == 0.083832335329341312
    assert _at(_metric(tr, "throughput"), 2.1) == 144 * 540 * 8
    assert _at(_metric(tr, "avg_throughput"), 2.1) == 94.375 * 540 * 8
    # 59.100000000000001 14  0.0011226044423061502 231.0 19 212.25255972696246
    assert [_at(_metric(tr, m), 59.1) for m in ("drops", "throughput_pps", "queue")] == [14, 231, 19]
    # without the trace beside it there is no packet size: packets/s only
    alone = ns2_monitor.read(path, siblings=False)
    assert alone.meta["packet_size"] is None and _metric(alone, "throughput").is_empty()
    assert _at(_metric(ns2_monitor.read(path, packet_size=1000), "throughput"), 2.1) == 144 * 1000 * 8


def test_tcpudpmon_corpus_and_foreign_sibling() -> None:
    """5 columns = TCPUDPMon; the lab trace beside it is another run, so its packet size is NOT used."""
    tr = ns2_monitor.read(need_corpus("ns2-lab", "TCPUDPMon0.tr"))
    assert tr.meta["kind"] == "tcpudpmon" and tr.meta["time_grid_s"] == 0.1
    assert tr.meta["packet_size"] is None  # outWindow.head10000.tr's departures do not match
    assert _metric(tr, "throughput").is_empty()
    assert _metric(tr, "departures").height == 96
    # 0.5 0.0 10.0 0 1
    assert [_at(_metric(tr, m), 0.5) for m in ("drop_rate", "throughput_pps", "drops", "departures")] == [0, 10, 0, 1]
    assert _at(_metric(tr, "departures"), 10.0) == 1083  # 9.9999999999999805 … 13 1083


def test_agent_trace() -> None:
    """`$tcp trace cwnd_` output of 4 agents (space-padded %-8.5f … columns)."""
    tr = ns2_monitor.read(sample("ns2", "dumbbell", "cwnd.tr"))
    assert tr.meta["kind"] == "agent" and tr.warnings == []
    cw = _metric(tr, "cwnd")
    assert cw.height == 1241 and set(cw["unit"]) == {"packets"} and set(cw["source"]) == {"cwnd_"}
    assert sorted(cw["node"].unique()) == ["0.0->6.0", "1.0->7.0", "2.0->8.0", "3.0->9.0"]
    first = cw.filter(pl.col("node") == "0.0->6.0").head(2)
    assert first["time"].to_list() == [0.0, 0.16055] and first["value"].to_list() == [1.0, 2.0]


def test_agent_trace_other_variables() -> None:
    text = b"0.10000  0  0  1  0  cwnd_ 1.000 \n0.20000  0  0  1  0  srtt_ 0.125 \n0.30000  0  0  1  0  t_seqno_ 7 \n"
    tr = ns2_monitor.read(text)
    got = {(r["metric"], r["unit"], r["source"]): r["value"] for r in tr.samples.iter_rows(named=True)}
    assert got == {
        ("cwnd", "packets", "cwnd_"): 1.0,
        ("srtt", "s", "srtt_"): 0.125,
        ("next_seq", "packets", "t_seqno_"): 7.0,
    }


def test_queue_monitor() -> None:
    tr = ns2_monitor.read(sample("ns2", "dumbbell", "queue.tr"))
    q, qb = _metric(tr, "queue"), _metric(tr, "queue_bytes")
    assert q.height == qb.height == 3446 and set(q["node"]) == {"4->5"}
    # q -t 0.105032 -s 4 -d 5 -l 40 -p 1
    assert (q["time"][0], q["value"][0], qb["value"][0]) == (0.105032, 1.0, 40.0)
    assert (q["unit"][0], qb["unit"][0]) == ("packets", "bytes")
    assert q["value"].max() <= 21  # queue limit 20 (+ the one being sent)


def test_sniff_by_content_not_name(tmp_path: Path) -> None:
    """Renamed files are still recognised; ns-3 `time value` series are not taken."""
    for src, kind in ((sample("ns2", "lab_tahoe", "WindowMon.tr"), "windowmon"),
                      (sample("ns2", "lab_tahoe", "Window.tr"), "window")):
        renamed = tmp_path / f"student_{kind}.txt"
        shutil.copy(src, renamed)
        tr = tracekit.read(renamed)
        assert (tr.meta["format"], tr.meta["kind"]) == ("ns2-monitor", kind)
    for other in ("dumbbell-cwnd.data", "dumbbell-rtt.data", "dumbbell.cwnd", "flows.txt"):
        head = sample("ns3", "dumbbell", other).read_bytes()[:65536]
        assert not ns2_monitor.sniff(head), other
    assert not ns2_monitor.sniff(gzip.decompress(sample("ns2", "lab_reno", "out.tr.gz").read_bytes())[:65536])
    assert sniff_bytes(sample("ns2", "dumbbell", "queue.tr").read_bytes()[:65536]) == "ns2-monitor"
    # 2 columns without Tcl's %.17g noise: too ambiguous to claim
    assert not ns2_monitor.sniff(b"0.1 1\n0.2 2\n0.3 3\n0.4 4\n")


def test_bad_and_truncated_lines() -> None:
    lines = sample("ns2", "lab_reno", "Window.tr").read_bytes().split(b"\n")[:200]
    edited = list(lines)
    edited[9] = b"0.28000000000000003"  # a missing column
    edited[19] = b"0.48000000000000004 abc"
    edited[29] = b"0.68000000000000005 1 7"  # one too many
    text = b"\n".join(edited[:-1]) + b"\n" + b"4.0800000000000027 3"  # cut mid-line
    tr = ns2_monitor.read(text, name="Window.tr")
    w = {x["code"]: x for x in tr.warnings}
    assert (w["W-BADLINE"]["count"], w["W-BADLINE"]["line"]) == (3, 10)
    assert w["W-TRUNCATED"]["line"] == 200
    assert _metric(tr, "cwnd").height == 200 - 1 - 3
    with pytest.raises(CorruptTraceError) as exc:
        ns2_monitor.read(text, name="Window.tr", strict=True)
    assert exc.value.line == 10
    with pytest.raises(TruncatedError):
        ns2_monitor.read(b"\n".join(lines[:-1]) + b"\n0.1", name="Window.tr", strict=True)


def test_errors() -> None:
    with pytest.raises(UnknownFormatError):
        ns2_monitor.read(b"", name="empty")
    with pytest.raises(UnknownFormatError):
        ns2_monitor.read(b"hello world\n", name="notes.txt")
    with pytest.raises(UsageError):
        ns2_monitor.read(b"0.1 1\n", kind="nonsense")
    with pytest.raises(CorruptTraceError) as exc:
        ns2_monitor.read(b"x y z\n", kind="window", name="w.tr")
    assert exc.value.line == 1
    rng = np.random.default_rng(11)
    base = np.frombuffer(sample("ns2", "lab_reno", "WindowMon.tr").read_bytes(), dtype=np.uint8)
    for _ in range(40):
        data = base.copy()
        pos = rng.integers(0, len(data), size=int(rng.integers(1, 20)))
        data[pos] = rng.integers(0, 256, size=len(pos))
        with contextlib.suppress(TracekitError):
            ns2_monitor.read(data.tobytes(), kind="windowmon", name="mutant")


def test_run_directory_combines_units() -> None:
    """out.tr + Window.tr + WindowMon.tr: cwnd gets a byte twin (x 500), throughput is in bit/s (x 540 x 8)."""
    tr = tracekit.read(sample("ns2", "lab_reno"))
    assert sorted(tr.meta["formats"]) == ["ns2", "ns2-monitor", "ns2-monitor"] and tr.meta["segment_size"] == 500
    pk, by = _metric(tr, "cwnd", "packets"), _metric(tr, "cwnd", "bytes")
    assert pk.height == by.height == 996
    assert (by["value"] == pk["value"] * 500).all()
    tp, bps = _metric(tr, "throughput_pps"), _metric(tr, "throughput", "bps")
    assert (bps["value"] == tp["value"] * 540 * 8).all()
    # the first packet event and the first sample share the simulation clock
    assert tr.packets["time"].min() == 0.5 and _metric(tr, "cwnd")["time"].min() == 0.1


_FAIRNESS = """
set ns [new Simulator]
set tr [open out.tr w]
$ns trace-all $tr
set n0 [$ns node]
set n1 [$ns node]
$ns duplex-link $n0 $n1 1Mb 20ms DropTail
set fmon [$ns makeflowmon Fid]
$ns attach-fmon [$ns link $n0 $n1] $fmon
for {set i 1} {$i <= 2} {incr i} {
  set tcp($i) [new Agent/TCP/Sack1]
  $tcp($i) set fid_ $i
  $ns attach-agent $n0 $tcp($i)
  set sink($i) [new Agent/TCPSink/Sack1]
  $ns attach-agent $n1 $sink($i)
  $ns connect $tcp($i) $sink($i)
  set ftp($i) [new Application/FTP]
  $ftp($i) attach-agent $tcp($i)
  $ns at 0.1 "$ftp($i) start"
  set mon($i) [open fairnessMon$i.tr w]
  set last($i) 0
}
# tp_fairness.tcl's sampler ("$now $pktsd $tput"), every 0.5 s instead of 5 s
proc sample {i} {
  global ns fmon mon last
  set now [$ns now]
  set flow [[$fmon classifier] lookup auto 0 0 $i]
  if { $flow != "" } {
    set pktsd [$flow set pdepartures_]
    set tput [expr 1.0*($pktsd - $last($i))/0.5]
    set last($i) $pktsd
    puts $mon($i) "$now $pktsd $tput"
  }
  $ns at [expr $now+0.5] "sample $i"
}
$ns at 0.3 "sample 1"
$ns at 0.3 "sample 2"
$ns at 10 "$ns flush-trace; close $tr; close $mon(1); close $mon(2); exit 0"
$ns run
"""


def test_fairness_monitor_from_a_real_run(tmp_path: Path) -> None:
    """3 columns = fairnessMon; the run's out.tr gives each flow's packet size (1000 + 40 bytes)."""
    ns = need_tool("ns")
    (tmp_path / "run.tcl").write_text(_FAIRNESS)
    subprocess.run([ns, "run.tcl"], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    for i in (1, 2):
        path = tmp_path / f"fairnessMon{i}.tr"
        tr = tracekit.read(path)
        assert (tr.meta["format"], tr.meta["kind"], tr.meta["time_grid_s"]) == ("ns2-monitor", "fairnessmon", 0.5)
        dep, pps = _metric(tr, "departures"), _metric(tr, "throughput_pps")
        assert dep.height == pps.height == len(path.read_text().splitlines())
        # tput = departures in the last 0.5 s / 0.5
        assert np.allclose(np.diff(dep["value"].to_numpy()) / 0.5, pps["value"].to_numpy()[1:])
        assert (tr.meta["packet_size"], tr.meta["packet_size_from"]) == (1040, "out.tr")
        assert (_metric(tr, "throughput")["value"] == pps["value"] * 1040 * 8).all()
        # and the departures agree with the trace's `-` events of fid i on 0->1
        pk = tracekit.read(tmp_path / "out.tr").packets
        mine = pk.filter((pl.col("event") == "dequeue") & (pl.col("link") == "0->1") & (pl.col("dir") == 0)
                         & (pl.col("flow") == i - 1))
        t_last = float(dep["time"][-1])
        assert mine.filter(pl.col("time") <= t_last).height == int(dep["value"][-1])
