"""Charts across flows and runs: goodput per flow with Jain's index, throughput–delay ellipses,
overlays of several runs (``tracekit compare``) and metric-against-parameter charts (``tracekit sweep``).

The same rules as :mod:`tracekit.reports.charts` apply: run labels and parameter
names from the input are data values or plain titles, cleaned by ``safe_label``.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import numpy as np
import polars as pl

from tracekit.reports._chartkit import (
    HEIGHT,
    WIDTH,
    Bag,
    NoData,
    from_zero,
    has,
    label_color,
    layer,
    props,
    safe_label,
    safe_label_expr,
    unchecked,
)
from tracekit.reports.downsample import MAX_POINTS, cap, minmax

# ---- multi-flow -----------------------------------------------------------------------------------


def jain(values: list[float]) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²) of non-negative rates; None when undefined."""
    xs = [v for v in values if v is not None and math.isfinite(v)]
    sq = sum(v * v for v in xs)
    return (sum(xs) ** 2) / (len(xs) * sq) if xs and sq > 0 else None


@unchecked
def flows_bar(
    flows: pl.DataFrame,
    *,
    tput: pl.DataFrame | None = None,
    fairness: pl.DataFrame | None = None,
    title: str = "",
    name: str = "flows",
) -> alt.TopLevelMixin:
    """Goodput per flow (bars) and the spread of its per-bin throughput (box plots), with Jain's index.

    Args:
        flows: The flows table with a ``label`` column (one row per data direction).
        tput: :data:`~tracekit.schema.THROUGHPUT` rows for the box plots.
        fairness: :data:`~tracekit.schema.FAIRNESS`; its overall row (time null) gives the
            index, else it is computed from the goodputs.
        title: Chart title prefix.
        name: View-name prefix.

    Returns:
        The chart (bars, plus box plots beside them when bins exist).

    Raises:
        NoData: with fewer than two data flows.
    """
    bag = Bag(name)
    if not has(flows, "flow", "dir", "goodput_bps") or flows.height < 2:
        raise NoData("fewer than two flows carried data")
    fl = flows.with_columns(label=safe_label_expr(pl.col("label")) if "label" in flows.columns
                            else pl.format("flow {} dir {}", "flow", "dir"))
    index, n = None, fl.height
    if has(fairness, "time", "jain", "flows"):
        assert fairness is not None
        overall = fairness.filter(pl.col("time").is_null() & pl.col("jain").is_not_null())
        # (the frame's index is over the directions that compete: tracekit.analysis.fairness.competing)
        index, n = (float(overall["jain"][0]), int(overall["flows"][0])) if overall.height else (None, n)
    else:
        index = jain(fl["goodput_bps"].fill_null(0.0).to_list())
    head = f"{safe_label(title) + ': ' if title else ''}goodput per flow"
    if index is not None and n >= 2:
        head += f" — Jain's index {index:.3f} over {n} flows"
        head += f" ({fl.height - n} application-limited left out)" if n < fl.height else ""
    order = fl["label"].to_list()
    bars = (
        alt.Chart(bag.frame(fl.select("label", pl.col("goodput_bps").alias("y")), {"y": 0}),
                  name=f"{name}_bars")
        .mark_bar()
        .encode(y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=260)),
                x=alt.X("y:Q", title="goodput (bit/s)", axis=alt.Axis(format="~s")),
                tooltip=[alt.Tooltip("label:N", title="flow"), alt.Tooltip("y:Q", title="bit/s", format="~s")])
        .properties(width=WIDTH // 2 - 40, height=max(60, 22 * fl.height))
    )
    chart: alt.TopLevelMixin = bars
    if has(tput, "flow", "dir", "throughput_bps"):
        assert tput is not None
        bins = tput.join(fl.select("flow", "dir", "label"), on=["flow", "dir"], how="inner")
        if bins.height:
            bins, _ = cap(bins.sort("time"), by=["label"], n=MAX_POINTS // 2)
            box = (
                alt.Chart(bag.frame(bins.select("label", pl.col("throughput_bps").alias("y")), {"y": 0}),
                          name=f"{name}_box")
                .mark_boxplot(extent="min-max")
                .encode(y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labels=False)),
                        x=alt.X("y:Q", title="throughput per bin (bit/s)", axis=alt.Axis(format="~s")))
                .properties(width=WIDTH // 2 - 40, height=max(60, 22 * fl.height))
            )
            chart = alt.hconcat(bars, box, spacing=10)
    return bag.attach(props(chart, title=head))


def ellipse_points(rtt_df: pl.DataFrame, tput: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """Pair each throughput bin with the mean RTT measured in it: the (RTT, throughput) samples.

    Args:
        rtt_df: :data:`~tracekit.schema.RTT` rows.
        tput: :data:`~tracekit.schema.THROUGHPUT` rows.
        keys: ``flow``, ``dir``, ``label`` of the directions to keep.

    Returns:
        Columns ``label``, ``rtt_s``, ``throughput_bps`` (bins without an RTT sample dropped).
    """
    if not (has(rtt_df, "flow", "dir", "time", "rtt_s") and has(tput, "flow", "dir", "time", "bin_s")):
        return pl.DataFrame(schema={"label": pl.String, "rtt_s": pl.Float64, "throughput_bps": pl.Float64})
    tp = tput.join(keys, on=["flow", "dir"]).filter(pl.col("bin_s") > 0)
    width = tp.group_by("flow", "dir").agg(pl.col("bin_s").first(), pl.col("time").min().alias("t0"))
    rt = (rtt_df.join(width, on=["flow", "dir"])
          .with_columns(b=((pl.col("time") - pl.col("t0")) / pl.col("bin_s")).floor().cast(pl.Int64))
          .group_by("flow", "dir", "b").agg(pl.col("rtt_s").mean()))
    tp = tp.join(width.select("flow", "dir", "t0"), on=["flow", "dir"]).with_columns(
        b=((pl.col("time") - pl.col("t0")) / pl.col("bin_s")).round().cast(pl.Int64))
    return tp.join(rt, on=["flow", "dir", "b"]).sort("label", "time").select("label", "rtt_s", "throughput_bps")


def sample_ellipse_points(smp: pl.DataFrame) -> pl.DataFrame:
    """(latency, throughput) pairs from a tool's own series, as Flent's rrul plots them.

    Latency is the tool's ping (``ping_rtt_avg`` when it reports the average, else the mean of its
    ``ping_rtt`` series at each time); throughput is each ``throughput_sum`` series (Flent's
    download and upload totals), else each ``throughput`` series. Each throughput sample is paired
    with the ping sample nearest in time (within 1 s): the two are sampled on different clocks.

    Args:
        smp: :data:`~tracekit.schema.SAMPLES` rows.

    Returns:
        Columns ``label`` (the throughput series' source), ``rtt_s``, ``throughput_bps``; empty
        when the trace lacks either.
    """
    empty = pl.DataFrame(schema={"label": pl.String, "rtt_s": pl.Float64, "throughput_bps": pl.Float64})
    if not has(smp, "time", "metric", "value", "source"):
        return empty
    ok = smp.filter(pl.col("value").is_finite())
    metrics = set(ok["metric"].unique().to_list())
    ping_metric = "ping_rtt_avg" if "ping_rtt_avg" in metrics else "ping_rtt"
    tput_metric = "throughput_sum" if "throughput_sum" in metrics else "throughput"
    if ping_metric not in metrics or tput_metric not in metrics:
        return empty
    ping = (ok.filter(pl.col("metric") == ping_metric).group_by("time").agg(pl.col("value").mean().alias("rtt_s"))
            .sort("time"))
    tput = ok.filter((pl.col("metric") == tput_metric) & (pl.col("unit") == "bps")).select(
        pl.col("source").cast(pl.String).fill_null(tput_metric).alias("label"), "time",
        pl.col("value").alias("throughput_bps")).sort("time")
    pairs = tput.join_asof(ping, on="time", strategy="nearest", tolerance=1.0)
    return pairs.drop_nulls("rtt_s").sort("label", "time").select("label", "rtt_s", "throughput_bps")


@unchecked
def ellipse(points: pl.DataFrame, *, title: str = "", name: str = "ellipse",
            order: list[str] | None = None) -> alt.LayerChart:
    """Flent-style throughput–delay plot: each group's mean and one-standard-deviation ellipse.

    The ellipse is the 1-σ contour of the (RTT, throughput) covariance: the
    eigenvectors of the covariance give its axes, the square roots of the
    eigenvalues their half-lengths.

    Args:
        points: Columns ``label`` (the run or flow), ``rtt_s``, ``throughput_bps``.
        title: Chart title.
        name: View-name prefix.
        order: Labels in the order the runs or flows were given: the colours follow it, as on the
            page's other charts (default: the order of first appearance in ``points``).

    Returns:
        The layered chart (samples faint, ellipses outlined, means as crosses).

    Raises:
        NoData: when no group has three or more paired samples.
    """
    bag = Bag(name)
    if not has(points, "label", "rtt_s", "throughput_bps"):
        raise NoData("no (RTT, throughput) sample pairs (needs RTT samples and throughput bins)")
    pts = points.drop_nulls(["rtt_s", "throughput_bps"]).with_columns(label=safe_label_expr(pl.col("label")))
    outline: list[dict[str, Any]] = []
    means: list[dict[str, Any]] = []
    theta = np.linspace(0.0, 2 * math.pi, 65)
    for (label,), grp in pts.group_by(["label"], maintain_order=True):
        if grp.height < 3:
            continue
        xy = grp.select("rtt_s", "throughput_bps").to_numpy().astype(float)
        mu = xy.mean(axis=0)
        vals, vecs = np.linalg.eigh(np.cov(xy, rowvar=False))
        radii = np.sqrt(np.clip(vals, 0.0, None))
        ring = mu + (np.stack([np.cos(theta), np.sin(theta)], axis=1) * radii) @ vecs.T
        outline += [{"label": label, "i": i, "x": float(x), "y": float(y)} for i, (x, y) in enumerate(ring)]
        means.append({"label": label, "x": float(mu[0]), "y": float(mu[1]), "n": grp.height})
    if not means:
        raise NoData("fewer than three (RTT, throughput) sample pairs per flow")
    kept, _ = cap(pts.filter(pl.col("label").is_in([m["label"] for m in means])), by=["label"], n=MAX_POINTS // 4)
    rnd = {"x": 6, "y": 0}
    color = label_color([safe_label(v) for v in order] if order else pts["label"].unique(maintain_order=True).to_list())
    layers = [
        alt.Chart(bag.frame(kept.select("label", pl.col("rtt_s").alias("x"),
                                         pl.col("throughput_bps").alias("y")), rnd),
                  name=f"{name}_samples").mark_point(size=10, opacity=0.25, filled=True).encode(
            x=alt.X("x:Q", **from_zero("RTT (s)")),
            y=alt.Y("y:Q", **from_zero("throughput (bit/s)", "~s")), color=color),
        alt.Chart(bag.frame(pl.DataFrame(outline), rnd), name=f"{name}_ring")
        .mark_line(strokeWidth=2, clip=True).encode(x=alt.X("x:Q"), y=alt.Y("y:Q"), order=alt.Order("i:Q"), color=color,
                                          detail=alt.Detail("label:N")),
        alt.Chart(bag.frame(pl.DataFrame(means), rnd), name=f"{name}_mean")
        .mark_point(shape="cross", size=120, filled=True).encode(
            x=alt.X("x:Q"), y=alt.Y("y:Q"), color=color,
            tooltip=[alt.Tooltip("label:N", title="flow"), alt.Tooltip("x:Q", title="mean RTT (s)", format=".4f"),
                     alt.Tooltip("y:Q", title="mean bit/s", format="~s"), alt.Tooltip("n:Q", title="samples")]),
    ]
    return bag.attach(props(layer(*layers),
        width=WIDTH // 2 + 100, height=HEIGHT + 40,
        title=safe_label(title) if title else "throughput vs RTT: mean and 1-σ ellipse"))


# ---- several runs ---------------------------------------------------------------------------------


@unchecked
def overlay(
    df: pl.DataFrame,
    *,
    y_title: str,
    title: str = "",
    name: str = "overlay",
    x_title: str = "time since the connection started (s)",
    mark: str = "line",
    y_format: str | None = None,
    y_from_zero: bool = True,
    order: list[str] | None = None,
) -> alt.LayerChart:
    """One series per run on shared axes (``tracekit compare``), each run in its own colour in the order given.

    Args:
        df: Tidy rows: ``label`` (the run), ``t``, ``y``.
        y_title: Y axis title (tracekit's own text).
        title: Chart title.
        name: View-name prefix.
        x_title: X axis title.
        mark: ``"line"`` (step line) or ``"point"``.
        y_format: d3 number format of the y axis (``"~s"`` for bit/s).
        y_from_zero: Start the y axis at 0 (rates, RTT, windows); False for sequence numbers.
        order: Every run's label in the order given (runs without this series included), so that
            a run keeps its colour on every chart of the page (default: the labels in ``df``).

    Returns:
        The chart.

    Raises:
        NoData: when no run has a row.
    """
    bag = Bag(name)
    if not has(df, "label", "t", "y"):
        raise NoData("no run has this series")
    data = df.drop_nulls(["t", "y"]).with_columns(label=safe_label_expr(pl.col("label"))).sort("label", "t")
    if data.is_empty():
        raise NoData("no run has this series")
    order = order if order is not None else list(dict.fromkeys(df["label"].to_list()))
    data = minmax(data, "t", "y", by=["label"])
    base = alt.Chart(bag.frame(data.select("label", "t", "y")), name=f"{name}_runs")
    drawn = (base.mark_line(interpolate="step-after", strokeWidth=1.3) if mark == "line"
             else base.mark_point(size=10, filled=True, opacity=0.7))
    color = label_color([safe_label(v) for v in order])
    y_enc = (alt.Y("y:Q", **from_zero(y_title, y_format)) if y_from_zero
             else alt.Y("y:Q", title=y_title, axis=alt.Axis(format=y_format) if y_format else alt.Axis()))
    chart = drawn.encode(x=alt.X("t:Q", **from_zero(x_title)), y=y_enc,
                         color=color, detail=alt.Detail("label:N")).add_params(
        alt.selection_interval(bind="scales", encodings=["x"], name=f"{name}_zoom"))
    return bag.attach(props(layer(chart), width=WIDTH, height=HEIGHT,
                                                  title=safe_label(title) if title else ""))


@unchecked
def sweep_chart(
    df: pl.DataFrame,
    *,
    x_title: str,
    y_title: str,
    title: str = "",
    name: str = "sweep",
    numeric_x: bool = True,
    y_format: str | None = None,
) -> alt.LayerChart:
    """A metric against a parameter, one line per group (e.g. per TCP variant).

    Args:
        df: Tidy rows: ``x`` (parameter value), ``y`` (metric), ``group`` (line), ``path`` (tooltip).
        x_title: The parameter's name (from the user: cleaned here).
        y_title: The metric's title.
        title: Chart title.
        name: View-name prefix.
        numeric_x: Quantitative x axis; else ordinal in the order given.
        y_format: d3 number format of the y axis.

    Returns:
        The chart (lines with a point per run).

    Raises:
        NoData: when no run has the metric.
    """
    bag = Bag(name)
    if not has(df, "x", "y"):
        raise NoData("no run has this metric")
    data = df.filter(pl.col("y").is_not_null() & pl.col("x").is_not_null())
    if data.is_empty():
        raise NoData("no run has this metric")
    cols = {"group": pl.col("group") if "group" in data.columns else pl.lit("")}
    if "path" in data.columns:
        cols["path"] = pl.col("path")
    data = data.with_columns(**cols).with_columns(
        safe_label_expr(pl.col("group").cast(pl.String).fill_null("")).alias("group"),
        *([safe_label_expr(pl.col("path")).alias("path")] if "path" in data.columns else []))
    x_enc = (alt.X("x:Q", title=safe_label(x_title), scale=alt.Scale(zero=False)) if numeric_x
             else alt.X("x:O", title=safe_label(x_title), sort=None))
    # metrics here are rates, times and counts: their axis starts at 0 (a small difference must not look big)
    y_enc = alt.Y("y:Q", **from_zero(y_title, y_format))
    color = label_color(data["group"].unique(maintain_order=True).to_list(), field="group")
    base = alt.Chart(bag.frame(data.select("x", "y", "group", *(["path"] if "path" in data.columns
                                                                    else []))), name=f"{name}_runs")
    tips = [alt.Tooltip("x:Q" if numeric_x else "x:O", title=safe_label(x_title)),
            alt.Tooltip("y:Q", title=y_title, format=y_format or ",.4~g"), alt.Tooltip("group:N", title="group")]
    if "path" in data.columns:
        tips.append(alt.Tooltip("path:N", title="run"))
    chart = layer(
        base.mark_line(strokeWidth=1.5).encode(x=x_enc, y=y_enc, color=color, detail=alt.Detail("group:N")),
        base.mark_point(size=50, filled=True).encode(x=x_enc, y=y_enc, color=color, tooltip=tips),
    )
    return bag.attach(props(chart, width=WIDTH // 2 + 20, height=HEIGHT,
                                       title=safe_label(title) if title else ""))
