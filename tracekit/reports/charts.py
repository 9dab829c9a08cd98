"""Charts: pure functions from tracekit frames to Altair charts, the same for every input format.

Each function takes the frames declared in :mod:`tracekit.schema` (plus the flow
it is about) and returns an :class:`altair.TopLevelMixin`, or raises
:class:`NoData` naming why there is nothing to draw. No I/O happens here. The
time–sequence graph lives in :mod:`tracekit.reports.charts_timeseq` and the multi-run
charts in :mod:`tracekit.reports.charts_runs`; both are re-exported here.

Rules every chart follows (docs/security.md rules 3 and 5, docs/reports.md "Large traces"):

* Data is thinned in polars first (:mod:`tracekit.reports.downsample`): lines keep
  their extremes, markers are capped; a chart holds a few thousand rows at most.
* Strings from the input (addresses, node and link names, file names, run labels)
  enter a spec only as data *values* in fixed, tracekit-chosen fields, or as
  plain titles -- never as field names and never inside Vega expressions
  (filters use :class:`altair.FieldOneOfPredicate`). They pass :func:`safe_label`
  first (control/bidi characters stripped, 64 characters at most).
* Every view and parameter has an explicit name, so specs are deterministic
  (golden tests compare them).
"""

from __future__ import annotations

import math
from typing import Literal

import altair as alt
import polars as pl

from tracekit import numfmt
from tracekit.reports._chartkit import (
    CWND_COLORS,
    HEADROOM,
    HEIGHT,
    MAX_LABEL,
    MODEL_COLUMNS,
    SEQ_COLORS,
    TPUT_COLORS,
    WIDTH,
    Bag,
    NoData,
    axes,
    axis_from_zero,
    from_zero,
    has,
    in_time_order,
    layer,
    layered,
    notes_of,
    one_flow,
    props,
    records,
    safe_label,
    safe_label_expr,
    spec,
    stall_layer,
    unchecked,
    with_notes,
    zoom,
)
from tracekit.reports.charts_runs import (
    ellipse,
    ellipse_points,
    flows_bar,
    jain,
    overlay,
    sample_ellipse_points,
    sweep_chart,
)
from tracekit.reports.charts_timeseq import time_sequence
from tracekit.reports.downsample import cap, minmax

__all__ = [
    "CWND_COLORS", "HEIGHT", "MAX_LABEL", "MODEL_COLUMNS", "SEQ_COLORS", "TPUT_COLORS", "WIDTH", "NoData",
    "cwnd", "ellipse", "ellipse_points", "flows_bar", "jain", "notes_of", "overlay", "queue", "records", "rtt",
    "safe_label", "safe_label_expr", "sample_ellipse_points", "samples", "spec", "stall_layer", "sweep_chart",
    "throughput", "time_sequence",
]

# ---- congestion window ----------------------------------------------------------------------------


def _phase_bands(cw: pl.DataFrame) -> pl.DataFrame:
    """Contiguous runs of one phase as [start, end) bands (end = the next run's start).

    Runs are found on the phase's codes (an Enum's physical integers), and only the few band
    rows become text: casting 300,000 phases to strings first cost more than the rest of the chart.
    A run starts where the code changes; in a series in time order (a report's always is) its
    first row holds its earliest time, so the bands are those rows, with no group-by.
    """
    dtype = cw.schema["phase"]
    code = pl.col("phase").to_physical() if isinstance(dtype, (pl.Enum, pl.Categorical)) else pl.col("phase")
    coded = cw.lazy().select("time", "phase", code.alias("code")).filter(pl.col("code").is_not_null())
    new_run = (pl.col("code") != pl.col("code").shift(1)).fill_null(True)
    t = cw["time"]
    if t.null_count() == 0 and t.is_sorted():
        runs = coded.filter(new_run).select("phase", pl.col("time").alias("t"))
    else:  # the earliest time of each run
        runs = (coded.with_columns(run=new_run.cum_sum()).group_by("run", maintain_order=True)
                .agg(pl.col("phase").first(), pl.col("time").min().alias("t")).select("phase", "t"))
    bands = runs.with_columns(pl.col("phase").cast(pl.String), t2=pl.col("t").shift(-1).fill_null(t.max())).collect()
    # congestion avoidance is the unshaded default; only the other phases get a band
    return bands.filter(pl.col("phase").is_in(["slow_start", "recovery"])).select(
        "t", "t2", pl.col("phase").alias("s"))


@unchecked
def cwnd(
    cwnd: pl.DataFrame,
    flow: int,
    dir: int,
    *,
    flight: pl.DataFrame | None = None,
    stalls: pl.DataFrame | None = None,
    title: str = "",
    name: str = "cwnd",
    traced: str = "trace",
    time_from_zero: bool | None = None,
) -> alt.LayerChart:
    """Congestion window (traced and/or estimated), ssthresh, phases shaded, bytes in flight.

    Args:
        cwnd: :data:`~tracekit.schema.CWND` rows.
        flow: Connection id.
        dir: Sending direction.
        flight: :data:`~tracekit.schema.FLIGHT` rows, drawn as "in flight".
        stalls: :data:`~tracekit.schema.STALLS`, shaded.
        title: Chart title.
        name: View-name prefix.
        traced: Legend name of the tool's own series: ``"kernel"`` for ss samples beside a
            capture, whose ssthresh is then drawn (the kernel's is exact; else the first series').
        time_from_zero: Start the time axis at 0 (None: unless the series starts late,
            :func:`~tracekit.reports._chartkit.starts_late`).

    Returns:
        The layered chart.

    Raises:
        NoData: when there is neither a window nor a flight series for this direction.
    """
    bag = Bag(name)
    cw = in_time_order(one_flow(cwnd, flow, dir)) if has(cwnd, "flow", "dir", "time", "cwnd_bytes") else None
    fl = in_time_order(one_flow(flight, flow, dir)) if has(flight, "flow", "dir", "time", "flight_bytes") else None
    if (cw is None or cw.is_empty()) and (fl is None or fl.is_empty()):
        raise NoData("no congestion-window samples or estimate, and no bytes-in-flight series")
    layers: list[alt.Chart] = []
    y_title = "bytes"
    x0 = axis_from_zero(time_from_zero, *(f["time"] for f in (cw, fl) if f is not None))
    if cw is not None and cw.height:
        layers += _window_layers(cw, name, bag, traced, y_title, x0)
    if fl is not None and fl.height:
        rows = minmax(fl.select("time", "flight_bytes"), "time", "flight_bytes").select(
            pl.col("time").alias("t"), pl.col("flight_bytes").alias("y"), pl.lit("in flight").alias("s"))
        layers.append(alt.Chart(bag.frame(rows), name=f"{name}_flight")
                      .mark_line(interpolate="step-after", strokeWidth=1, opacity=0.8)
                      .encode(**axes("time (s)", y_title, x_from_zero=x0)))
    st = stall_layer(stalls, flow, dir, name, bag)
    if st is not None:
        layers.append(st)
    return bag.attach(layered(layers, name, title or "congestion window", CWND_COLORS, y_title, bag))


def _window_layers(cw: pl.DataFrame, name: str, bag: Bag, traced: str, y_title: str,
                   x0: bool) -> list[alt.Chart]:
    """The cwnd chart's window layers: phase bands, one step line per source, and ssthresh."""
    layers: list[alt.Chart] = []
    own = f"cwnd ({traced})"
    label = _one_label(cw, traced)
    if label is None:  # several sources: each row's series name
        src = pl.col("source").cast(pl.String) if "source" in cw.columns else pl.lit("trace")
        src = src.fill_null("trace").replace("trace", traced)
        cw = cw.with_columns(s=pl.concat_str(pl.lit("cwnd ("), src, pl.lit(")")))
    if "phase" in cw.columns and cw["phase"].null_count() < cw.height:
        # bands from one source only: the traced window when present (it is exact)
        pref = cw.filter(pl.col("s") == own) if label is None else (cw if label == own else cw.clear())
        bands = _phase_bands(pref if pref.height else cw)
        bands, _ = cap(bands)
        if bands.height:
            layers.append(alt.Chart(bag.frame(bands), name=f"{name}_phases")
                          .mark_rect(opacity=0.25).encode(x=alt.X("t:Q", title="time (s)"), x2=alt.X2("t2:Q")))
    if label is None:
        lines = minmax(cw.select("time", "s", "cwnd_bytes"), "time", "cwnd_bytes", by=["s"])
    else:  # one series: thinned first, named after (the same rows)
        lines = minmax(cw.select("time", "cwnd_bytes"), "time", "cwnd_bytes").with_columns(s=pl.lit(label))
    layers.append(alt.Chart(bag.frame(lines.select(
        pl.col("time").alias("t"), pl.col("cwnd_bytes").alias("y"), "s"), {"y": 0}), name=f"{name}_cwnd")
        .mark_line(interpolate="step-after", strokeWidth=1.5)
        .encode(**axes("time (s)", y_title, x_from_zero=x0), detail=alt.Detail("s:N")))
    if "ssthresh_bytes" in cw.columns:
        # An "infinite" initial ssthresh (ns-3 4294967295, Linux 2^31-1) would flatten the
        # chart: values far above every window seen are not drawn.
        top = cw["cwnd_bytes"].max()
        limit = 16 * float(top) if top is not None and top > 0 else math.inf  # type: ignore[arg-type,operator]
        if label is None:
            kernel = traced == "kernel" and bool((cw["s"] == own).any())
            pick = pl.col("s") == (pl.lit(own) if kernel else pl.col("s").first())
        else:  # one series: its rows are the first series' and, for a kernel series, the kernel's
            kernel, pick = traced == "kernel" and label == own, pl.lit(True)
        ss = cw.filter(pl.col("ssthresh_bytes").is_not_null() & (pl.col("ssthresh_bytes") < limit) & pick)
        if ss.height:
            label = "ssthresh (kernel)" if kernel else "ssthresh"
            ss = minmax(ss.select("time", "ssthresh_bytes"), "time", "ssthresh_bytes").select(
                pl.col("time").alias("t"), pl.col("ssthresh_bytes").alias("y"), pl.lit(label).alias("s"))
            layers.append(alt.Chart(bag.frame(ss, {"y": 0}), name=f"{name}_ssthresh")
                          .mark_line(interpolate="step-after", strokeDash=[6, 3], strokeWidth=1)
                          .encode(x=alt.X("t:Q"), y=alt.Y("y:Q")))
    return layers


def _one_label(cw: pl.DataFrame, traced: str) -> str | None:
    """The series name (``cwnd (estimate)``) when every row has the same source, else None."""
    if "source" not in cw.columns:
        return f"cwnd ({traced})"
    if cw["source"].n_unique() != 1:
        return None
    src = cw["source"][0]
    return f"cwnd ({traced if src is None or str(src) == 'trace' else src})"


# ---- throughput -----------------------------------------------------------------------------------


@unchecked
def throughput(
    tput: pl.DataFrame,
    flow: int,
    dir: int,
    *,
    models: dict[str, float | None] | None = None,
    link_rate_bps: float | None = None,
    stalls: pl.DataFrame | None = None,
    title: str = "",
    name: str = "tput",
    time_from_zero: bool | None = None,
) -> alt.LayerChart:
    """Throughput and goodput per time bin, the link rate and the models as horizontal reference lines.

    The y scale fits the measured series and the link rate (from 0, with 10 % headroom): a model
    line never sets it. A model far above the data (the window limit of a long fat pipe, say)
    would flatten the measured series into the axis, so a model outside the scale is written as
    text at the chart's top edge instead of drawn.

    Args:
        tput: :data:`~tracekit.schema.THROUGHPUT` rows.
        flow: Connection id.
        dir: Sending direction.
        models: Flow-table columns ``mathis_bps``, ``padhye_bps``, ``window_limited_bps``
            (missing or null ones are not drawn).
        link_rate_bps: The bottleneck's rate when known; drawn as a line.
        stalls: :data:`~tracekit.schema.STALLS`, shaded.
        title: Chart title.
        name: View-name prefix.
        time_from_zero: Start the time axis at 0 (None: unless the bins start late).

    Returns:
        The layered chart.

    Raises:
        NoData: when there are no bins for this direction.
    """
    bag = Bag(name)
    if not has(tput, "flow", "dir", "time", "throughput_bps"):
        raise NoData("no throughput time series")
    tp = one_flow(tput, flow, dir).sort("time")
    if tp.is_empty():
        raise NoData("no throughput bins for this direction")
    cols = [c for c in ("throughput_bps", "goodput_bps") if c in tp.columns]
    long = tp.select("time", *cols).unpivot(index="time", on=cols, variable_name="s", value_name="y").with_columns(
        s=pl.col("s").str.replace("_bps", ""))
    long = minmax(long, "time", "y", by=["s"])
    link = link_rate_bps if link_rate_bps is not None and math.isfinite(link_rate_bps) and link_rate_bps > 0 else None
    peak = float(long["y"].drop_nans().max() or 0.0)  # type: ignore[arg-type]
    top = max(peak, link or 0.0) * HEADROOM or 1.0
    layers: list[alt.Chart] = [
        alt.Chart(bag.frame(long.select(pl.col("time").alias("t"), "y", "s"), {"y": 0}),
                  name=f"{name}_series")
        .mark_line(interpolate="step-after", strokeWidth=1.5, clip=True)
        .encode(**axes("time (s)", "bit/s", fmt="~s", top=top, x_from_zero=axis_from_zero(time_from_zero, tp["time"])),
                detail=alt.Detail("s:N"))
    ]
    refs = [(label, float(v)) for col, label in MODEL_COLUMNS.items()
            if (v := (models or {}).get(col)) is not None and math.isfinite(v) and v > 0]
    if link is not None:
        refs.append(("link rate", link))
    inside = [{"s": label, "y": round(v)} for label, v in refs if v <= top]
    if inside:
        layers.append(alt.Chart(bag(inside), name=f"{name}_models")
                      .mark_rule(strokeDash=[6, 3], strokeWidth=1.5)
                      .encode(y=alt.Y("y:Q"), tooltip=[alt.Tooltip("s:N", title="reference"),
                                                alt.Tooltip("y:Q", title="bit/s", format="~s")]))
    # one line of text each, stacked down from the top edge
    above = [{"s": label, "y": top * (1 - 0.08 * i), "text": f"{label}: {numfmt.rate(v)} (above the scale)"}
             for i, (label, v) in enumerate(lv for lv in refs if lv[1] > top)]
    if above:
        layers.append(alt.Chart(bag(above), name=f"{name}_offscale")
                      .mark_text(align="right", baseline="top", dx=-4, fontSize=11)
                      .encode(y=alt.Y("y:Q"), x=alt.XValue(WIDTH), text=alt.Text("text:N")))
    st = stall_layer(stalls, flow, dir, name, bag)
    if st is not None:
        layers.append(st)
    return bag.attach(layered(layers, name, title or "throughput", TPUT_COLORS, "bit/s", bag))


# ---- RTT ------------------------------------------------------------------------------------------


@unchecked
def rtt(
    rtt: pl.DataFrame,
    flow: int,
    dir: int,
    *,
    stalls: pl.DataFrame | None = None,
    title: str = "",
    name: str = "rtt",
    time_from_zero: bool | None = None,
) -> alt.LayerChart:
    """RTT samples over time, one colour per method (sequence/ACK matching, timestamps).

    Args:
        rtt: :data:`~tracekit.schema.RTT` rows.
        flow: Connection id.
        dir: The data direction whose segments were timed.
        stalls: :data:`~tracekit.schema.STALLS`, shaded.
        title: Chart title.
        name: View-name prefix.
        time_from_zero: Start the time axis at 0 (None: unless the samples start late).

    Returns:
        The layered chart.

    Raises:
        NoData: when there are no samples for this direction.
    """
    bag = Bag(name)
    if not has(rtt, "flow", "dir", "time", "rtt_s"):
        raise NoData("no RTT samples")
    rt = one_flow(rtt, flow, dir).filter(pl.col("rtt_s").is_not_null()).sort("time")
    if rt.is_empty():
        raise NoData("no RTT samples for this direction")
    method = pl.col("method").cast(pl.String).fill_null("rtt") if "method" in rt.columns else pl.lit("rtt")
    rt = rt.select("time", "rtt_s", method.alias("s"))
    rt = minmax(rt, "time", "rtt_s", by=["s"])
    colors = {"seq": "#1f77b4", "ts": "#ff7f0e", "rtt": "#2ca02c", "stall": "#7f7f7f"}
    layers: list[alt.Chart] = [
        alt.Chart(bag.frame(rt.select(pl.col("time").alias("t"), pl.col("rtt_s").alias("y"), "s")),
                  name=f"{name}_samples")
        .mark_point(size=8, filled=True, opacity=0.7)
        .encode(**axes("time (s)", "RTT (s)", x_from_zero=axis_from_zero(time_from_zero, rt["time"])))
    ]
    st = stall_layer(stalls, flow, dir, name, bag)
    if st is not None:
        layers.append(st)
    return bag.attach(layered(layers, name, title or "round-trip time", colors, "RTT (s)", bag))


# ---- queue ----------------------------------------------------------------------------------------


@unchecked
def queue(q: pl.DataFrame, *, title: str = "", name: str = "queue") -> alt.LayerChart:
    """Queue length (packets) per link over time, drops marked where the cumulative count rises.

    Args:
        q: :data:`~tracekit.schema.QUEUE` rows (simulators).
        title: Chart title.
        name: View-name prefix.

    Returns:
        The layered chart.

    Raises:
        NoData: when there is no queue series.
    """
    bag = Bag(name)
    if not has(q, "link", "time", "packets"):
        raise NoData("no queue monitor or queue events in this trace (a capture does not see router queues)")
    df = q.with_columns(s=safe_label_expr(pl.col("link").fill_null("?"))).sort("time")
    line = minmax(df.select("time", "s", "packets"), "time", "packets", by=["s"])
    layers: list[alt.Chart] = [
        alt.Chart(bag.frame(line.select(pl.col("time").alias("t"), pl.col("packets").alias("y"), "s")),
                  name=f"{name}_len")
        .mark_line(interpolate="step-after", strokeWidth=1.2)
        .encode(x=alt.X("t:Q", title="time (s)"), y=alt.Y("y:Q", title="queue length (packets)"),
                color=alt.Color("s:N", title="link", legend=alt.Legend(orient="top")))
    ]
    notes: list[str] = []
    if "drops" in df.columns:
        inc = df.filter(pl.col("drops").diff().over("s").fill_null(pl.col("drops")) > 0).select(
            pl.col("time").alias("t"), pl.col("packets").alias("y"), "s",
            pl.col("drops").alias("total"))
        inc, left = cap(inc, by=["s"])
        if left:
            notes.append(f"{left:,} drop markers not drawn")
        if inc.height:
            layers.append(alt.Chart(bag.frame(inc), name=f"{name}_drops")
                          .mark_point(shape="triangle-down", size=50, filled=True, color="#d62728")
                          .encode(x=alt.X("t:Q"), y=alt.Y("y:Q"), tooltip=[alt.Tooltip("s:N", title="link"),
                                                             alt.Tooltip("t:Q", title="time (s)"),
                                                             alt.Tooltip("total:Q", title="drops so far")]))
    first = layers[0].add_params(zoom(name))
    chart = props(layer(first, *layers[1:]),
        width=WIDTH, height=HEIGHT, title=safe_label(title) if title else "queue length and drops (▼)")
    return bag.attach(with_notes(chart, notes))


# ---- tool-reported series -------------------------------------------------------------------------


@unchecked
def samples(smp: pl.DataFrame, metric: str, unit: str, *, title: str = "", name: str = "samples") -> alt.LayerChart:
    """One metric the tool reported itself (``trace.samples``: ns-2 Window.tr, OPNET, ns-3 ...), per series.

    A series is one (source, node, flow) of the metric; its label is data, the
    metric name (from the input) only a cleaned title. A rate (pps, bit/s) a tool reports at
    time t was measured over the interval that ends at t (ns-2's WindowMon.tr prints the packets
    of the last second; Flent the rate since its previous sample), so rates are drawn as steps
    that end at their time stamp; other values hold from their stamp on.

    Args:
        smp: :data:`~tracekit.schema.SAMPLES` rows.
        metric: The metric to draw.
        unit: Its unit (a metric may come in two units, e.g. cwnd in packets and bytes).
        title: Chart title.
        name: View-name prefix.

    Returns:
        The chart.

    Raises:
        NoData: when there is no finite value of the metric.
    """
    bag = Bag(name)
    if not has(smp, "time", "metric", "value", "unit"):
        raise NoData("the trace has no tool-reported series")
    df = smp.filter((pl.col("metric") == metric) & (pl.col("unit") == unit) & pl.col("value").is_finite())
    if df.is_empty():
        raise NoData(f"no finite {safe_label(metric)} values")
    parts = [pl.col(c).cast(pl.String) for c in ("source", "node") if c in df.columns]
    if "flow" in df.columns:
        parts.append(pl.format("flow {}", pl.col("flow")))
    label = pl.concat_str([p.fill_null("") for p in parts], separator=" ").str.strip_chars() if parts else pl.lit("")
    df = df.with_columns(s=safe_label_expr(label)).sort("time")
    df = minmax(df.select("time", "s", "value"), "time", "value", by=["s"])
    line = alt.Chart(bag.frame(df.select(pl.col("time").alias("t"), pl.col("value").alias("y"), "s")),
                     name=f"{name}_series")
    step: Literal["step-before", "step-after"] = "step-before" if unit in ("pps", "bps") else "step-after"
    mark = line.mark_line(interpolate=step, point=df.height <= 200, strokeWidth=1.3)
    fmt = "~s" if unit in ("bps", "bytes") else None
    lowest = float(df["value"].min() or 0)  # type: ignore[arg-type]  # polars types min() as any scalar
    y = (alt.Y("y:Q", **from_zero(safe_label(f"{metric} ({unit})"), fmt)) if lowest >= 0
         else alt.Y("y:Q", title=safe_label(f"{metric} ({unit})"), axis=alt.Axis(format=fmt) if fmt else alt.Axis()))
    chart = mark.encode(x=alt.X("t:Q", **from_zero("time (s)")), y=y,
                        color=alt.Color("s:N", title=None, legend=alt.Legend(orient="top", labelLimit=300)))
    return bag.attach(props(layer(chart.add_params(zoom(name))),
        width=WIDTH, height=HEIGHT - 60, title=safe_label(title) if title else safe_label(metric)))
