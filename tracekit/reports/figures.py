"""Which charts a report holds: every chart kind for an :class:`~tracekit.analysis.Analysis`, or why not.

:func:`figures` is the one place that decides what is drawn; the HTML page,
the PNG/SVG export, ``compare`` and the golden tests all use it. A chart that
cannot be drawn is still a :class:`Figure`, with ``chart=None`` and a reason
the report lists (e.g. "captures do not see queues").

The analysis frames are read defensively (``getattr``): this module works
with any Analysis that has ``packets`` and ``flows``, and draws more as the
analyses provide more frames.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.analysis.throughput import default_bin
from tracekit.reports import charts
from tracekit.reports._chartkit import starts_late
from tracekit.reports.charts import NoData

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

#: Chart kinds, in page order. Per-direction kinds come first, then whole-trace ones.
FLOW_KINDS = ("timeseq", "cwnd", "throughput", "rtt")
TRACE_KINDS = ("queue", "flows", "ellipse", "samples")
KINDS = FLOW_KINDS + TRACE_KINDS
TITLES = {
    "timeseq": "time–sequence",
    "cwnd": "congestion window and bytes in flight",
    "throughput": "throughput and goodput",
    "rtt": "round-trip time",
    "queue": "queue length and drops",
    "flows": "flows compared",
    "ellipse": "throughput vs RTT",
    "samples": "tool-reported series",
}
#: Tool-reported metrics charted (one chart each), at most.
MAX_SAMPLE_CHARTS = 8
#: Connection directions that get their own charts (the largest by bytes).
MAX_FLOWS = 6


@dataclass(frozen=True)
class Figure:
    """One chart of a report, or the reason it is missing.

    Attributes:
        kind: One of :data:`KINDS`.
        key: Stable id, unique in a page (``timeseq-flow0``); safe in file names.
        title: Human title (cleaned of unsafe characters).
        flow: Connection id for per-direction kinds.
        dir: Direction for per-direction kinds.
        chart: The Altair chart, or None.
        reason: Why there is no chart.
        notes: What the chart left out (capped markers).
    """

    kind: str
    key: str
    title: str
    flow: int | None = None
    dir: int | None = None
    chart: Any = None
    reason: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        """True when there is a chart to show."""
        return self.chart is not None


def frame(analysis: Any, name: str) -> pl.DataFrame | None:
    """An analysis frame by name, or None when this Analysis does not provide it."""
    if name == "throughput":
        return throughput_frame(analysis)
    try:
        value = getattr(analysis, name)
    except AttributeError:
        return None
    return value if isinstance(value, pl.DataFrame) else None


def throughput_frame(analysis: Any, bin_s: float | None = None) -> pl.DataFrame | None:
    """``analysis.throughput(bin_s)`` (a method) or ``analysis.throughput`` (a frame), else None."""
    try:
        value = getattr(analysis, "throughput")  # noqa: B009 - Analysis.__getattr__ may raise AttributeError
    except AttributeError:
        return None
    if callable(value):
        value = value(bin_s=bin_s)
    return value if isinstance(value, pl.DataFrame) else None


def flow_labels(flows: pl.DataFrame) -> pl.DataFrame:
    """The flows table with a ``label`` column: ``src:sport → dst:dport`` (cleaned, ≤ 64 chars)."""
    if flows.is_empty():
        return flows.with_columns(label=pl.lit(None, pl.String))

    def end(host: str, port: str) -> pl.Expr:
        h = pl.col(host).cast(pl.String).fill_null("?") if host in flows.columns else pl.lit("?")
        if port not in flows.columns:
            return h
        return pl.when(pl.col(port).is_not_null()).then(pl.format("{}:{}", h, pl.col(port))).otherwise(h)

    return flows.with_columns(label=charts.safe_label_expr(pl.concat_str(end("src", "sport"), pl.lit(" → "),
                                                                          end("dst", "dport"))))


def main_directions(flows: pl.DataFrame, limit: int = MAX_FLOWS) -> tuple[pl.DataFrame, int]:
    """The data directions to chart (largest first by unique bytes), and how many were left out."""
    if flows.is_empty() or "flow" not in flows.columns:
        return flows, 0
    size = next((c for c in ("unique_bytes", "data_bytes", "packets") if c in flows.columns), None)
    ranked = flows.sort([size, "flow", "dir"], descending=[True, False, False], nulls_last=True) if size else flows
    return ranked.head(limit), max(0, ranked.height - limit)


#: Columns of the flight frame the cwnd chart reads.
FLIGHT_COLUMNS = ("flow", "dir", "time", "flight_bytes")


def chart_bin(shown: pl.DataFrame) -> float | None:
    """The throughput bin of the charts: :func:`~tracekit.analysis.default_bin` (about 100 bins) of
    the charted connections' own span, from the first one's start to the last one's end.

    The analysis' default comes from the whole capture: 7 ms of TCP inside a 1-second capture
    would fall into one 10-ms bin, and its throughput chart would have no line. None when the
    flows table has no times (the analysis' default applies).
    """
    if shown.is_empty() or not {"start", "end"} <= set(shown.columns):
        return None
    lo, hi = shown["start"].min(), shown["end"].max()
    if lo is None or hi is None:
        return None
    return default_bin(float(hi) - float(lo))  # type: ignore[arg-type]


class _Split:
    """A per-sample frame (cwnd, flight, RTT) cut once per charted direction (only the columns drawn).

    Each chart of a direction would otherwise filter the whole frame again and copy all its
    columns. One filter per direction beats polars' ``partition_by`` here (measured on 1.3M
    packets: 4 filters 0.01 s, partition_by 0.11-0.15 s). A direction without rows gets the
    whole frame, so its chart says why it has nothing to draw exactly as before. The packets
    are not cut here: the time-sequence graph reads its two row sets (data one way, ACKs the
    other) lazily, copying only the rows and the few columns it draws.
    """

    def __init__(self, df: pl.DataFrame | None, keys: list[str], columns: tuple[str, ...] | None = None) -> None:
        self.df = df
        self.keys = keys
        ok = df is not None and set(keys) <= set(df.columns)
        self.cols = [c for c in df.columns if columns is None or c in columns] if ok and df is not None else None
        self.parts: dict[tuple[int, ...], pl.DataFrame | None] = {}

    def get(self, *key: int) -> pl.DataFrame | None:
        """The rows of one flow (or flow and direction), else the whole frame."""
        if self.df is None or self.cols is None:
            return self.df
        if key not in self.parts:
            cond = pl.all_horizontal([pl.col(k) == v for k, v in zip(self.keys, key, strict=True)])
            part = self.df.lazy().filter(cond).select(self.cols).collect()
            self.parts[key] = part if part.height else self.df
        return self.parts[key]


def _draw(kind: str, key: str, title: str, fn: Any, *args: Any, flow: int | None = None,
          dir: int | None = None, **kw: Any) -> Figure:
    """``fn(*args, **kw)`` as a Figure; its NoData reason when there is nothing to draw."""
    try:
        chart = fn(*args, title=title, name=key.replace("-", "_"), **kw)
    except NoData as why:  # the list of charts not drawn names each one
        return Figure(kind, key, title or TITLES[kind], flow, dir, None, str(why))
    return Figure(kind, key, title, flow, dir, chart, None, tuple(charts.notes_of(chart)))


def figures(analysis: Analysis, *, max_flows: int = MAX_FLOWS, kinds: tuple[str, ...] = KINDS,
            link_rate_bps: float | None = None) -> list[Figure]:
    """Every chart for one analysed trace, with a reason for each one that cannot be drawn.

    Args:
        analysis: The analysed trace.
        max_flows: Connection directions charted one by one (largest first).
        kinds: Chart kinds to build (default: all of :data:`KINDS`).
        link_rate_bps: The bottleneck's rate when known: drawn on the throughput charts, and
            their scale fits it.

    Returns:
        Per-direction figures (direction by direction, in :data:`FLOW_KINDS` order),
        then the whole-trace ones.
    """
    flows = flow_labels(analysis.flows)
    shown, left_out = main_directions(flows, max_flows)
    stalls = frame(analysis, "stalls")
    tput = throughput_frame(analysis, chart_bin(shown)) if {"throughput", "flows", "ellipse"} & set(kinds) else None
    rtt = frame(analysis, "rtt")
    out: list[Figure] = []
    if shown.is_empty():
        for kind in FLOW_KINDS:
            if kind in kinds:
                out.append(Figure(kind, kind, TITLES[kind], reason="no TCP connection carried data"))
    want = [k for k in FLOW_KINDS if k in kinds]
    cwnd, flight = _Split(frame(analysis, "cwnd"), ["flow", "dir"]), _Split(frame(analysis, "flight"), ["flow", "dir"],
                                                                            FLIGHT_COLUMNS)
    rtts = _Split(rtt, ["flow", "dir"])
    retrans = frame(analysis, "retransmissions")
    traced = "kernel" if analysis.trace.meta.get("kernel") else "trace"
    for row in shown.iter_rows(named=True):
        f, d, label = int(row["flow"]), int(row["dir"]), row["label"]
        tag = f"flow{f}" if d == 0 else f"flow{f}-reverse"
        models = {c: row.get(c) for c in charts.MODEL_COLUMNS}
        x0 = not starts_late(row.get("start"), row.get("end"))
        makers: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {
            "timeseq": (charts.time_sequence, (analysis.packets, f, d), {"retransmissions": retrans, "stalls": stalls}),
            "cwnd": (charts.cwnd, (_or_empty(cwnd.get(f, d)), f, d),
                     {"flight": flight.get(f, d), "stalls": stalls, "traced": traced}),
            "throughput": (charts.throughput, (_or_empty(tput), f, d),
                           {"models": models, "stalls": stalls, "link_rate_bps": link_rate_bps}),
            "rtt": (charts.rtt, (_or_empty(rtts.get(f, d)), f, d), {"stalls": stalls}),
        }
        for kind in want:
            fn, args, kw = makers[kind]
            out.append(_draw(kind, f"{kind}-{tag}", f"{TITLES[kind]} · {label}", fn, *args, flow=f, dir=d,
                             time_from_zero=x0, **kw))
    if left_out:
        out.append(Figure("timeseq", "more-flows", "more flows",
                          reason=f"{left_out:,} more connection directions not charted one by one "
                                 f"(the report shows the {max_flows} largest)"))
    if "queue" in kinds:
        out.append(_draw("queue", "queue", TITLES["queue"], charts.queue, _or_empty(frame(analysis, "queue"))))
    if "flows" in kinds:
        out.append(_draw("flows", "flows", "", charts.flows_bar, flows, tput=tput,
                         fairness=frame(analysis, "fairness")))
    if "ellipse" in kinds:
        keys = shown.select("flow", "dir", "label") if shown.height else pl.DataFrame(
            schema={"flow": pl.UInt32, "dir": pl.Int8, "label": pl.String})
        pts = charts.ellipse_points(_or_empty(rtt), _or_empty(tput), keys)
        if pts.is_empty():  # no packets: a tool's own ping and throughput series (Flent rrul)
            pts = charts.sample_ellipse_points(analysis.trace.samples)
        out.append(_draw("ellipse", "ellipse", TITLES["ellipse"], charts.ellipse, pts,
                         order=shown["label"].to_list() if "label" in shown.columns else None))
    if "samples" in kinds:
        out += _sample_figures(analysis.trace.samples)
    return out


#: Tool-reported metrics charted first, in this order: what a reader asks first (latency and
#: throughput, then the window), before counters such as a qdisc's bytes sent or CPU load.
SAMPLE_PRIORITY = ("ping_rtt", "throughput", "throughput_sum", "throughput_pps", "avg_throughput_pps", "cwnd",
                   "rtt", "srtt", "ssthresh", "queue", "drops", "goodput", "delay", "loss", "download_response_time")


def _metric_rank(metric: str) -> int:
    return SAMPLE_PRIORITY.index(metric) if metric in SAMPLE_PRIORITY else len(SAMPLE_PRIORITY)


def _slug(text: str) -> str:
    """A file-name-safe key part from a metric name (input text: only ``[a-z0-9_]`` kept, ≤ 40)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40] or "metric"


def _sample_figures(smp: pl.DataFrame) -> list[Figure]:
    """One chart per (metric, unit) the tool reported, by :data:`SAMPLE_PRIORITY`, then largest first.

    Keys name what the chart shows (``samples-throughput-bps``), so exported images are named by it.
    """
    if smp.is_empty():
        return [Figure("samples", "samples", TITLES["samples"], reason="the trace has no tool-reported series")]
    # per-flow or per-application totals (FlowMonitor, NetSim's application table: one sample a
    # series) are not time series: the report shows them in the tool-reported table instead
    fin = smp.filter(pl.col("value").is_finite())
    series = fin.group_by("metric", "unit", "source", "flow", "node").len()
    timed = series.filter(pl.col("len") > 1).select("metric", "unit").unique()
    if series.height and timed.is_empty():
        return [Figure("samples", "samples", TITLES["samples"],
                       reason="totals only (one value per flow or application): see the tool-reported table")]
    pairs = (fin.join(timed, on=["metric", "unit"]).group_by("metric", "unit").len()
             .with_columns(rank=pl.col("metric").map_elements(_metric_rank, return_dtype=pl.Int64))
             .sort(["rank", "len", "metric", "unit"], descending=[False, True, False, False]))
    out = []
    used: set[str] = set()
    for metric, unit, _n, _rank in pairs.head(MAX_SAMPLE_CHARTS).iter_rows():
        key = f"samples-{_slug(metric)}-{_slug(unit)}"
        while key in used:
            key += "-x"
        used.add(key)
        title = f"{TITLES['samples']} · {charts.safe_label(metric)} ({unit})"
        out.append(_draw("samples", key, title, charts.samples, smp, metric, unit))
    if pairs.height > MAX_SAMPLE_CHARTS:
        out.append(Figure("samples", "samples-more", TITLES["samples"],
                          reason=f"{pairs.height - MAX_SAMPLE_CHARTS} more reported metrics not charted"))
    if not out:
        out.append(Figure("samples", "samples", TITLES["samples"], reason="no finite tool-reported values"))
    return out


def _or_empty(df: pl.DataFrame | None) -> pl.DataFrame:
    return df if df is not None else pl.DataFrame()
