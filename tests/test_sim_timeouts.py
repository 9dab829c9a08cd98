"""Timeouts in ns-2 runs against the simulator's own count of them (issue 17, point 1).

ns-2's ``Agent/TCP`` counts its retransmission-timer firings in ``nrexmit_`` and its re-sent
packets in ``nrexmitpack_`` (tcp.cc, ``TcpAgent::timeout`` / ``output``). The test re-runs the
committed scripts that made the bundled samples (deterministic: same seeds, same events) with
a few lines added that print those two variables of every TCP agent when the run ends, and
compares them with the bundled sample's analysis: per flow, re-sent packets = tracekit's
retransmissions and timer firings = tracekit's ``rto`` recoveries (a timeout opens one; the
go-back-N re-sends that follow belong to it).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import polars as pl
import pytest

import tracekit
from tests.conftest import SAMPLES, need_tool, sample
from tracekit.analysis import _state
from tracekit.analysis import retrans as _retrans
from tracekit.analysis import rtt as _rtt
from tracekit.analysis.vantage import vantage

#: Printed by every TCP agent (subclasses included) when the run ends.
_REPORT = """
proc tkr_agents {cls} {
    set out [$cls info instances]
    foreach s [$cls info subclass] { set out [concat $out [tkr_agents $s]] }
    return $out
}
proc tkr_report {} {
    foreach a [tkr_agents Agent/TCP] { puts "tkr [$a set nrexmit_] [$a set nrexmitpack_]" }
}
"""

# sample dir, script, arguments (samples/ns2/make_samples.sh)
RUNS = [
    ("dumbbell", "dumbbell.tcl", ["10"]),
    ("lab_tahoe", "tpwindow.tcl", ["66", "100ms", "Tahoe", "20", "20", "0", "1", "0"]),
    ("lab_reno", "tpwindow.tcl", ["66", "100ms", "Reno", "20", "20", "0", "1", "0"]),
    ("lab_lossy", "tpwindow.tcl", ["66", "100ms", "Reno", "20", "20", "0.02", "1", "0"]),
    *[(f"grading/ref_seed{s}", "tpwindow.tcl", ["32", "50ms", "Tahoe", "20", "20", "0.01", str(s), "0"])
      for s in (1, 2, 3)],
]


def _ns2_truth(ns: str, script: str, args: list[str], tmp: Path) -> list[tuple[int, int]]:
    """``(nrexmitpack_, nrexmit_)`` of each TCP agent that re-sent anything, sorted."""
    src = (SAMPLES / "ns2" / script).read_text()
    assert src.count("proc finish {} {") == 1
    (tmp / "run.tcl").write_text(_REPORT + src.replace("proc finish {} {", "proc finish {} {\n\ttkr_report"))
    out = subprocess.run([ns, "run.tcl", *args], cwd=tmp, capture_output=True, text=True, timeout=120,
                         check=True).stdout
    rows = [(int(p), int(n)) for n, p in re.findall(r"^tkr (\d+) (\d+)$", out, re.MULTILINE)]
    assert rows, out[-500:]
    return sorted(r for r in rows if r[0] > 0)


def _tracekit(d: str) -> list[tuple[int, int]]:
    """``(retransmissions, rto recoveries)`` per direction that re-sent anything, sorted."""
    tr = tracekit.read(sample("ns2", *d.split("/")))
    st = _state.prepare(vantage(tr.packets))
    rs = _rtt.samples(st)
    rt = _retrans.classify(st, rs, rto_floor_s=_retrans.rto_floor(tr.meta)[0])
    per = rt.group_by("flow", "dir").agg(
        pl.len().alias("n"),
        pl.col("episode").filter(pl.col("kind") == "rto").n_unique().alias("rto"),
    )
    return sorted((int(n), int(r)) for n, r in per.select("n", "rto").rows())


@pytest.mark.parametrize(("d", "script", "args"), RUNS, ids=[r[0] for r in RUNS])
def test_rto_recoveries_equal_ns2_timer_firings(d: str, script: str, args: list[str], tmp_path: Path) -> None:
    ns = need_tool("ns")
    assert _tracekit(d) == _ns2_truth(ns, script, args, tmp_path)


def test_ns2_floor_applies() -> None:
    tr = tracekit.read(sample("ns2", "dumbbell"))
    assert _retrans.rto_floor(tr.meta) == (0.2, "ns-2")


def test_ns3_loss_events_equal_its_ssthresh_trace() -> None:
    """ns-3 dumbbell, flow 0 (10.1.1.1): every reduction sets SlowStartThreshold, which the run
    traced (dumbbell-ssth.data). Seen from each of its captures, tracekit's loss events (no
    timeout where the retransmissions find none: NewReno + SACK, MinRto 1 s) are as many."""
    d = sample("ns3", "dumbbell")
    vals = [int(float(line.split()[1])) for line in (d / "dumbbell-ssth.data").read_text().split("\n") if line.strip()]
    sets = [v for i, v in enumerate(vals) if v not in (0, 2**32 - 1) and (i == 0 or v != vals[i - 1])]
    an = tracekit.analyze(tracekit.read(d))
    assert an.trace.meta["rto_floor_from"] == "ns-3"
    # one row per capture that saw the connection (the flows table keeps one of them)
    ev = an.views.filter((pl.col("src") == "10.1.1.1") & (pl.col("data_bytes") > 0))["loss_events"].to_list()
    assert len(ev) >= 2 and all(e == len(sets) for e in ev), (ev, sets)
