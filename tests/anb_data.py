"""Helpers for the part-B analysis tests (cwnd, throughput, queue, fairness): real runs and comparisons.

Runs are read with ``tracekit.read`` and analysed with ``tracekit.analysis.analyze`` (cached:
several tests look at the same run). The simulators' own outputs are the ground truth:
ns-2 ``Window.tr`` / the agent's ``cwnd_`` trace / ``WindowMon.tr`` / the queue monitor,
ns-3's ``CongestionWindow`` trace.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import tracekit
from tracekit.analysis import Analysis, analyze
from tracekit.trace import Trace, make_trace

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def run_json(run: str) -> dict[str, Any]:
    """An ns-2 run's parameters (``samples/ns2/<run>/run.json``)."""
    return json.loads((SAMPLES / "ns2" / run / "run.json").read_text())  # type: ignore[no-any-return]


@cache
def ns2_run(run: str) -> tuple[Trace, Analysis]:
    """Read and analyse one ns-2 run directory (packet trace + its monitor files)."""
    t = tracekit.read(SAMPLES / "ns2" / run)
    return t, analyze(t)


@cache
def ns3_sender() -> tuple[Trace, Analysis]:
    """The ns-3 dumbbell's sender-side capture with the sender socket's cwnd and ssthresh traces.

    The pcap reader counts time from the first packet (``t0_ns`` = 0.5 s of simulation time);
    the trace-source files count from the simulation start, so the packets are shifted back
    onto the simulation clock before the two are put in one trace.
    """
    d = SAMPLES / "ns3" / "dumbbell"
    cap = tracekit.read(d / "dumbbell-0-0.pcap")
    cw = tracekit.read(d / "dumbbell.cwnd")
    st = tracekit.read(d / "dumbbell-ssth.data")
    pk = cap.packets.with_columns(pl.col("time") + cap.meta["t0_ns"] / 1e9)
    t = make_trace(
        pk,
        pl.concat([cw.samples, st.samples]),
        {"format": "test", "tool": "ns-3", "paths": [str(d / "dumbbell-0-0.pcap"), str(d / "dumbbell.cwnd")]},
    )
    return t, analyze(t)


def outstanding(pk: pl.DataFrame, flow: int, d: int, times: pl.Series) -> pl.Series:
    """Bytes sent and not yet cumulatively acknowledged at each of ``times`` (the sender's view)."""
    data = pk.filter((pl.col("flow") == flow) & (pl.col("dir") == d) & (pl.col("payload") > 0)).sort("time")
    data = data.select("time", (pl.col("seq") + pl.col("payload").cast(pl.Int64)).cum_max().alias("hi"))
    acks = pk.filter((pl.col("flow") == flow) & (pl.col("dir") == 1 - d) & pl.col("ack").is_not_null()).sort("time")
    acks = acks.select("time", pl.col("ack").cum_max().alias("una"))
    grid = pl.DataFrame({"time": times}).sort("time")
    j = grid.join_asof(data, on="time").join_asof(acks, on="time")
    return j.select((pl.col("hi") - pl.col("una").fill_null(0)).fill_null(0).alias("out"))["out"]


def intervals(times: np.ndarray, mask: np.ndarray, step: float) -> list[tuple[float, float]]:
    """The stretches of a regular grid where ``mask`` holds, as (start, end) pairs."""
    out: list[tuple[float, float]] = []
    start = None
    for t, m in zip(times, mask, strict=False):  # a few thousand grid points, test-side only
        if m and start is None:
            start = t
        elif not m and start is not None:
            out.append((round(float(start), 3), round(float(t), 3)))
            start = None
    if start is not None:
        out.append((round(float(start), 3), round(float(times[-1] + step), 3)))
    return out


def compare_cwnd(an: Analysis, flow: int, limit_bytes: float, step: float = 0.01) -> dict[str, Any]:
    """Median relative error of the estimate against the trace over the cwnd-limited periods.

    Both series are sampled on a common grid (every ``step`` s, each taking its latest value:
    the two series' samples never fall at the same instants). The sender is cwnd-limited where
    the tool's cwnd is below ``limit_bytes`` (the advertised / maximum window) and data is outstanding.
    """
    cw = an.cwnd.filter(pl.col("flow") == flow)
    tr = cw.filter(pl.col("source") == "trace").sort("time")
    es = cw.filter(pl.col("source") == "estimate").sort("time")
    d = int(es["dir"][0])
    t0, t1 = float(es["time"].min()), float(es["time"].max())  # type: ignore[arg-type]
    grid = pl.DataFrame({"time": np.arange(math_ceil(t0, step), t1, step)})
    j = (grid.join_asof(tr.select("time", pl.col("cwnd_bytes").alias("truth")), on="time")
         .join_asof(es.select("time", "cwnd_bytes"), on="time"))
    j = j.with_columns(out=outstanding(an.packets, flow, d, j["time"]))
    limited = (pl.col("truth") < limit_bytes) & (pl.col("out") > 0) & pl.col("cwnd_bytes").is_not_null()
    j = j.with_columns(_lim=limited.fill_null(False))
    lim = j.filter("_lim")
    rel = ((lim["cwnd_bytes"] - lim["truth"]).abs() / lim["truth"])
    return {
        "median": float(rel.median()),  # type: ignore[arg-type]
        "p90": float(rel.quantile(0.9)),  # type: ignore[arg-type]
        "n": lim.height,
        "grid": j.height,
        "periods": intervals(j["time"].to_numpy(), j["_lim"].to_numpy(), step),
    }


def math_ceil(x: float, step: float) -> float:
    """``x`` rounded up to the grid."""
    return float(np.ceil(x / step) * step)


def match_events(truth: np.ndarray, est: np.ndarray, tol: float) -> tuple[list[float], list[float]]:
    """Truth events with no estimate event within ``tol`` s, and estimate events with no truth event."""
    missed = [round(float(x), 3) for x in truth if not np.any(np.abs(est - x) <= tol)]
    extra = [round(float(x), 3) for x in est if not np.any(np.abs(truth - x) <= tol)]
    return missed, extra


def median_rtt(an: Analysis, flow: int) -> float:
    """The flow's median RTT sample (seconds)."""
    return float(an.rtt.filter(pl.col("flow") == flow)["rtt_s"].median())  # type: ignore[arg-type]
