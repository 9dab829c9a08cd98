"""Metric extraction for grading: one number per rubric item from an :class:`~tracekit.analysis.Analysis`.

A metric is either a column of the ``flows`` frame (``goodput_bps``,
``retrans_packets``, ...) read on the selected flow, or one of the series-level
measures in :data:`SERIES_METRICS`. Times are relative to the selected flow's
first packet, so that a run whose application starts later is still comparable.

Curve metrics (``cwnd_distance``, ``throughput_distance``) compare the student's
curve with the *mean reference curve* on a common grid. Where the student's
curve has no data (it starts late or stops early: a truncated trace), it counts
as 0 — that is what makes an incomplete run lose the curve items. The reference
values of a curve item are the leave-one-out distances of the reference seeds
(each seed against the mean of the others), so ``within_reference_spread`` means
"no further from the references than they are from each other".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracekit import schema
from tracekit.analysis.flows import with_seq_end
from tracekit.reports.figures import frame

if TYPE_CHECKING:
    from tracekit.analysis import Analysis
    from tracekit.grading.rubric import Item, Selector

#: name -> (unit, what it measures). Units: bytes, s, count, ratio.
SERIES_METRICS: dict[str, tuple[str, str]] = {
    "max_cwnd": ("bytes", "largest congestion window"),
    "min_cwnd_after_first_loss": ("bytes", "smallest congestion window from the first loss on"),
    "cwnd_backoff": ("ratio", "median of cwnd after ÷ before each window reduction"),
    "loss_events": ("count", "the flows column when the analysis gives it (cwnd reductions backed by a "
                             "retransmission or drop), else drop events of the flow (simulators) or "
                             "retransmitted segments (captures)"),
    "queue_drops": ("count", "drops of packets that had been queued (buffer overflow)"),
    "first_loss_s": ("s", "time of the first loss after the flow's first packet"),
    "download_time_s": ("s", "the flows table's transfer_s (first SYN → last data byte acknowledged), "
                             "else first packet → last segment carrying new data"),
    "cwnd_distance": ("ratio", "distance of the cwnd curve from the mean reference curve"),
    "throughput_distance": ("ratio", "distance of the throughput curve from the mean reference curve"),
}
CURVE_METRICS = ("cwnd_distance", "throughput_distance")
_COLUMN_RE = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
#: Most grid points of one curve comparison (a 1 h trace at 0.1 s would be 36,000).
MAX_GRID = 20_000
DEFAULT_BIN_S = 1.0
DEFAULT_CWND_GRID_S = 0.1


def metric_problem(name: str) -> str | None:
    """Why ``name`` cannot be a metric, or None when it can."""
    if name in SERIES_METRICS:
        return None

    declared = getattr(schema, "FLOWS", None)
    if isinstance(declared, dict):
        if name in declared:
            return None
        return (f"unknown metric {name!r}: not a flows column ({', '.join(declared)}) nor a series metric "
                f"({', '.join(SERIES_METRICS)})")
    if _COLUMN_RE.match(name):
        return None  # checked against the flows frame when evaluated
    return f"unknown metric {name!r}; series metrics: {', '.join(SERIES_METRICS)}"


def unit_of(metric: str) -> str:
    """The unit of a metric's value (from the registry, or a flows column's suffix)."""
    if metric in SERIES_METRICS:
        return SERIES_METRICS[metric][0]
    for suffix, unit in (("_bps", "bit/s"), ("_s", "s"), ("_bytes", "bytes"), ("_rate", "ratio")):
        if metric.endswith(suffix):
            return unit
    if metric in ("start", "end", "duration"):
        return "s"
    if metric.endswith("packets") or metric in ("packets",):
        return "count"
    return ""


def fmt_value(value: float | None, unit: str) -> str:
    """A number with its unit, for verdict texts: ``1.23 Mbit/s``, ``16,000 B``, ``4.2 s``."""
    if value is None:
        return "n/a"
    if not math.isfinite(value):
        return "∞" if value > 0 else "−∞"
    if unit == "bit/s":
        for name, div in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
            if abs(value) >= div:
                return f"{value / div:.4g} {name}"
        return f"{value:.4g} bit/s"
    if unit == "bytes":
        return f"{value:,.0f} B" if abs(value) >= 100 else f"{value:.4g} B"
    if unit == "count":
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:.4g}"
    if unit == "s":
        return f"{value:.4g} s"
    return f"{value:.4g}"


@dataclass(frozen=True)
class Extracted:
    """A metric value (None when it cannot be computed) and why/how."""

    value: float | None
    note: str | None = None


# ---- flow selection -------------------------------------------------------------------------------------


def select_flow(flows: pl.DataFrame, sel: Selector) -> tuple[dict[str, Any] | None, str | None]:
    """Pick the connection direction an item is about.

    Returns:
        ``(row, None)`` or ``(None, reason)`` when no flow matches.
    """
    if flows.is_empty():
        return None, "no TCP connection carried data in this trace"
    size = next((c for c in ("unique_bytes", "data_bytes", "packets") if c in flows.columns), None)
    ranked = flows.sort([size, "flow", "dir"], descending=[True, False, False], nulls_last=True) if size else flows
    if sel.kind == "port":
        cand = ranked.filter((pl.col("sport") == sel.port) | (pl.col("dport") == sel.port))
        if cand.is_empty():
            ports = sorted({p for c in ("sport", "dport") for p in flows[c].drop_nulls().to_list()})[:20]
            return None, f"no flow uses port {sel.port} (ports seen: {ports})"
        return cand.row(0, named=True), None
    if sel.kind == "id":
        cand = ranked.filter((pl.col("flow") == sel.flow) & (pl.col("dir") == sel.dir))
        if cand.is_empty():
            return None, f"no flow {sel.flow} direction {sel.dir} with data"
        return cand.row(0, named=True), None
    if sel.kind == "label":
        if "label" in ranked.columns:
            cand = ranked.filter(pl.col("label").cast(pl.String) == sel.label)
        else:
            text = pl.format("{}:{} → {}:{}", pl.col("src"), pl.col("sport"), pl.col("dst"), pl.col("dport"))
            cand = ranked.filter(text == sel.label)
        if cand.is_empty():
            return None, f"no flow labelled {sel.label!r}"
        return cand.row(0, named=True), None
    return ranked.row(0, named=True), None


# ---- series ---------------------------------------------------------------------------------------------


def _frame(analysis: Analysis, name: str) -> pl.DataFrame | None:
    try:
        return frame(analysis, name)
    except Exception:  # noqa: BLE001 - an analysis that fails must not stop grading the other items
        return None


def cwnd_series(analysis: Analysis, row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """The flow's congestion window in bytes over time since its first packet, or None.

    Preference: a window the tool traced (``cwnd`` frame rows with ``source == "trace"``, else the
    trace's own ``cwnd`` samples — this flow's, or flow-less ones: the ns-2 lab's ``Window.tr`` does
    not name its flow — in bytes, or packets × the segment size), then tracekit's estimate.
    """
    start = float(row["start"])
    cw = _frame(analysis, "cwnd")
    est = None
    if cw is not None and cw.height and {"flow", "dir", "time", "cwnd_bytes"} <= set(cw.columns):
        mine = cw.filter((pl.col("flow") == row["flow"]) & (pl.col("dir") == row["dir"])
                         & pl.col("cwnd_bytes").is_finite()).sort("time")
        traced = mine.filter(pl.col("source") == "trace") if "source" in mine.columns else mine
        if traced.height:
            return traced["time"].to_numpy() - start, traced["cwnd_bytes"].cast(pl.Float64).to_numpy()
        if mine.height:
            est = (mine["time"].to_numpy() - start, mine["cwnd_bytes"].cast(pl.Float64).to_numpy())
    sm = analysis.trace.samples.filter((pl.col("metric") == "cwnd") & pl.col("value").is_finite())
    own = sm.filter(pl.col("flow") == row["flow"])
    sm = own if own.height else sm.filter(pl.col("flow").is_null())
    seg = analysis.trace.meta.get("segment_size") or row.get("mss")
    if sm.filter(pl.col("unit") == "bytes").height:
        sm = sm.filter(pl.col("unit") == "bytes")
    elif seg and sm.filter(pl.col("unit") == "packets").height:
        sm = sm.filter(pl.col("unit") == "packets").with_columns(value=pl.col("value") * float(seg))
    else:
        return est
    sm = sm.sort("time")
    return sm["time"].to_numpy() - start, sm["value"].to_numpy()


def flow_packets(analysis: Analysis, row: dict[str, Any]) -> pl.DataFrame:
    """The flow direction's packets at the vantage point, with ``new_bytes`` (payload not sent before)."""

    pk = analysis.packets.filter((pl.col("flow") == row["flow"]) & (pl.col("dir") == row["dir"]))
    pk = with_seq_end(pk.sort("time", maintain_order=True))
    new = (pl.col("seq_end") - pl.max_horizontal("seq", pl.col("prev_max_end").fill_null(-(1 << 62))))
    return pk.with_columns(new_bytes=new.clip(lower_bound=0).fill_null(0))


def throughput_series(analysis: Analysis, row: dict[str, Any], bin_s: float,
                      series: str = "goodput") -> tuple[np.ndarray, np.ndarray] | None:
    """Bit/s per ``bin_s`` bin since the flow's first packet (bin start times), or None.

    ``goodput`` counts payload bytes not sent before; ``throughput`` every byte on the wire.
    Computed here rather than taken from the throughput analysis so that bins start at the
    flow's first packet for every run, which keeps student and reference grids aligned.
    """
    pk = flow_packets(analysis, row)
    if pk.is_empty():
        return None
    t = pk["time"].to_numpy() - float(row["start"])
    w = (pk["new_bytes"] if series == "goodput" else pk["size"]).cast(pl.Float64).fill_null(0).to_numpy()
    nbins = int(math.floor(max(t.max(), 0.0) / bin_s)) + 1
    if nbins > 10 * MAX_GRID:
        return None
    idx = np.clip((t // bin_s).astype(np.int64), 0, nbins - 1)
    vals = np.bincount(idx, weights=w, minlength=nbins) * 8.0 / bin_s
    return np.arange(nbins) * bin_s, vals


def drop_times(analysis: Analysis, row: dict[str, Any]) -> tuple[np.ndarray, str] | None:
    """Times (since the flow start) of the flow's losses and where they come from, or None."""
    pk = analysis.trace.packets
    start = float(row["start"])
    if pk.height and (pk["event"] == "drop").any():
        d = pk.filter((pl.col("event") == "drop") & (pl.col("flow") == row["flow"]) & (pl.col("dir") == row["dir"]))
        return np.sort(d["time"].to_numpy()) - start, "drop events"
    rt = _frame(analysis, "retransmissions")
    if rt is not None and {"flow", "dir", "time"} <= set(rt.columns):
        r = rt.filter((pl.col("flow") == row["flow"]) & (pl.col("dir") == row["dir"]))
        return np.sort(r["time"].to_numpy()) - start, "retransmissions"
    fp = flow_packets(analysis, row)
    if fp.is_empty():
        return None
    re_ = fp.filter((pl.col("payload") > 0) & (pl.col("seq") < pl.col("prev_max_end")))
    return np.sort(re_["time"].to_numpy()) - start, "retransmissions"


# ---- scalar metrics ---------------------------------------------------------------------------------------


def _queue_drops(analysis: Analysis, row: dict[str, Any]) -> Extracted:
    pk = analysis.trace.packets
    if not pk.height or not (pk["event"] == "enqueue").any():
        return Extracted(None, "the trace has no queue (enqueue) events: buffer overflows cannot be seen")
    if pk["pkt_id"].null_count() == pk.height:
        return Extracted(None, "the trace has no packet ids to match drops with enqueues")
    d = pk.filter((pl.col("event") == "drop") & (pl.col("flow") == row["flow"]) & (pl.col("dir") == row["dir"]))
    # ns-2: a tail drop is "+" then "d" for the same uid on the same link; an error-model loss is a
    # "d" with no "+" before it (the loss module sits before the queue), so it is not counted here.
    enq = pk.filter(pl.col("event") == "enqueue").select("pkt_id", "link").unique()
    return Extracted(float(d.join(enq, on=["pkt_id", "link"], how="semi").height))


def _download_time(analysis: Analysis, row: dict[str, Any]) -> Extracted:
    v = row.get("transfer_s")
    if isinstance(v, (int, float)) and math.isfinite(v):
        return Extracted(float(v))
    fp = flow_packets(analysis, row).filter(pl.col("new_bytes") > 0)
    if fp.is_empty():
        return Extracted(None, "the flow carried no data")
    last = float(fp["time"].max())  # type: ignore[arg-type]
    return Extracted(last - float(row["start"]), "last segment carrying new data")


def scalar(analysis: Analysis, item: Item, row: dict[str, Any]) -> Extracted:
    """The value of a non-curve metric on the selected flow."""
    m = item.metric
    if m not in SERIES_METRICS:
        if m not in row:
            return Extracted(None, f"the flows table has no column {m!r} (columns: {', '.join(row)})")
        v = row[m]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return Extracted(None, f"{m} is not available for this flow")
        return Extracted(float(v))
    if m == "queue_drops":
        return _queue_drops(analysis, row)
    if m == "download_time_s":
        return _download_time(analysis, row)
    if m == "loss_events" and isinstance(row.get(m), (int, float)) and math.isfinite(row[m]):
        return Extracted(float(row[m]), "the analysis' loss events")  # its own definition wins
    if m in ("loss_events", "first_loss_s", "min_cwnd_after_first_loss"):
        losses = drop_times(analysis, row)
        if losses is None:
            return Extracted(None, "no packets for this flow")
        times, src = losses
        if m == "loss_events":
            return Extracted(float(times.size), f"counted from {src}")
        if times.size == 0:
            return Extracted(None, f"no loss in this flow ({src})")
        if m == "first_loss_s":
            return Extracted(float(times[0]), f"from {src}")
        cw = cwnd_series(analysis, row)
        if cw is None:
            return Extracted(None, "no congestion-window series in this trace")
        after = cw[1][cw[0] >= times[0]]
        return Extracted(float(after.min()) if after.size else None, "no cwnd sample after the first loss")
    cw = cwnd_series(analysis, row)
    if cw is None:
        return Extracted(None, "no congestion-window series in this trace (traced or estimated)")
    t, v = cw
    if m == "max_cwnd":
        return Extracted(float(v.max()))
    # cwnd_backoff: consecutive samples where the window fell by more than min_drop (10 %):
    # Tahoe restarts from 1 segment (ratio ~ 1/cwnd), Reno halves (~0.5).
    min_drop = float(item.option("min_drop", 0.1))
    prev, cur = v[:-1], v[1:]
    red = (prev > 0) & (cur < prev * (1.0 - min_drop))
    if not red.any():
        return Extracted(None, "the congestion window never decreased")
    return Extracted(float(np.median(cur[red] / prev[red])), f"{int(red.sum())} reductions")


# ---- curves -------------------------------------------------------------------------------------------------


def curve(analysis: Analysis, item: Item, row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """The raw curve a curve metric compares (times since the flow start)."""
    if item.metric == "cwnd_distance":
        return cwnd_series(analysis, row)
    return throughput_series(analysis, row, float(item.option("bin_s", DEFAULT_BIN_S)),
                             str(item.option("series", "goodput")))


def resample(t: np.ndarray, v: np.ndarray, grid: np.ndarray, *, step: bool) -> np.ndarray:
    """Values of a curve on ``grid``: the last value at or before each point (``step``) or the
    bin whose start matches; 0 outside the curve's span (no data counts as nothing)."""
    out = np.zeros(grid.size)
    if t.size == 0:
        return out
    idx = np.searchsorted(t, grid, side="right") - 1
    inside = (idx >= 0) & (grid <= t[-1] + (0 if step else 1e-9))
    out[inside] = v[idx[inside]]
    if step:
        # a step-held state is known until the last sample, not beyond
        out[grid > t[-1]] = 0.0
    return out


def distance(s: np.ndarray, r: np.ndarray, kind: str) -> float | None:
    """Normalised distance of ``s`` from ``r``: ``nrmse`` (RMS error) or ``nmae`` (mean abs. error),
    divided by the mean level of ``r``."""
    level = float(np.mean(np.abs(r)))
    if level <= 0 or s.size == 0:
        return None
    err = s - r
    num = float(np.sqrt(np.mean(err * err))) if kind == "nrmse" else float(np.mean(np.abs(err)))
    return num / level


@dataclass
class CurveRef:
    """The reference side of a curve item: grid, mean curve, the seeds' leave-one-out distances."""

    grid: np.ndarray
    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    values: list[float] = field(default_factory=list)
    step: bool = True


def make_grid(item: Item, ends: list[float]) -> np.ndarray:
    """The comparison grid: ``start_s`` .. ``end_s`` (default: the shortest reference) by the step."""
    default = DEFAULT_CWND_GRID_S if item.metric == "cwnd_distance" else DEFAULT_BIN_S
    step = float(item.option("grid_s", item.option("bin_s", default)))
    start = float(item.option("start_s", 0.0))
    end = float(item.option("end_s", min(ends) if ends else start))
    if end <= start:
        return np.array([start])
    if (end - start) / step > MAX_GRID:
        step = (end - start) / MAX_GRID
    return np.arange(start, end, step)


def curve_reference(item: Item, curves: list[tuple[np.ndarray, np.ndarray]]) -> CurveRef:
    """Build the reference of a curve item from the reference runs' curves."""
    step = item.metric == "cwnd_distance"
    grid = make_grid(item, [float(t[-1]) for t, _ in curves if t.size])
    ys = np.vstack([resample(t, v, grid, step=step) for t, v in curves])
    kind = str(item.option("distance", "nrmse"))
    values: list[float] = []
    if len(curves) >= 2:
        for i in range(len(curves)):
            others = np.delete(ys, i, axis=0).mean(axis=0)
            d = distance(ys[i], others, kind)
            if d is not None:
                values.append(d)
    else:
        values = [0.0]
    return CurveRef(grid, ys.mean(axis=0), ys.min(axis=0), ys.max(axis=0), values, step)


def curve_value(item: Item, ref: CurveRef, c: tuple[np.ndarray, np.ndarray] | None) -> Extracted:
    """The student's distance from the mean reference curve."""
    if c is None:
        what = "congestion-window" if item.metric == "cwnd_distance" else "throughput"
        return Extracted(None, f"no {what} series for this flow")
    s = resample(c[0], c[1], ref.grid, step=ref.step)
    d = distance(s, ref.mean, str(item.option("distance", "nrmse")))
    if d is None:
        return Extracted(None, "the reference curve is zero on the comparison grid")
    covered = float(np.mean(ref.grid <= (c[0][-1] if c[0].size else -1)))
    note = None if covered >= 0.999 else f"the curve covers only {covered:.0%} of the comparison window"
    return Extracted(d, note)
