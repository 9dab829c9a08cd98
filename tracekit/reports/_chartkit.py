"""Shared pieces of tracekit's charts: safe labels, JSON-ready rows, layering, stall bands.

Kept apart from :mod:`tracekit.reports.charts` (time charts of one flow) and
:mod:`tracekit.reports.charts_runs` (charts across flows and runs) so that both stay small.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, ParamSpec, TypeGuard, TypeVar

import altair as alt
import polars as pl
from altair.utils.schemapi import debug_mode

from tracekit.reports.datasets import FrameRows, frame_rows
from tracekit.reports.datasets import Rows as Rows  # re-exported: the pages and charts import them from here
from tracekit.reports.datasets import records as records
from tracekit.reports.downsample import MAX_MARKERS, cap

#: Any chart (:meth:`Bag.attach` hands back what it was given).
_Chart = TypeVar("_Chart", bound=alt.TopLevelMixin)
#: A top-level chart (:func:`with_notes` keeps its class).
_TopLevel = TypeVar("_TopLevel", bound=alt.TopLevelMixin)
_P = ParamSpec("_P")
_R = TypeVar("_R")

WIDTH = 760
HEIGHT = 260
#: Longest label kept (docs/security.md rule 5).
MAX_LABEL = 64
# C0/C1 controls, bidi overrides/isolates and line/paragraph separators: they can
# break layouts or spoof the order of text in a label (docs/security.md rule 5).
_UNSAFE_CHARS = r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"

#: Series names and colours: tracekit's own constants, fixed so legends agree across charts.
SEQ_COLORS = {"data": "#1f77b4", "retransmission": "#d62728", "ack": "#2ca02c",
              "window": "#9467bd", "sack": "#ff7f0e", "stall": "#7f7f7f"}
CWND_COLORS = {"cwnd (trace)": "#1f77b4", "cwnd (kernel)": "#08306b", "cwnd (estimate)": "#17becf",
               "ssthresh": "#d62728", "ssthresh (kernel)": "#d62728",
               "in flight": "#2ca02c", "slow_start": "#aec7e8", "recovery": "#ff9896", "stall": "#7f7f7f"}
TPUT_COLORS = {"throughput": "#1f77b4", "goodput": "#2ca02c", "mathis": "#d62728",
               "padhye": "#ff7f0e", "window limited": "#9467bd", "link rate": "#000000", "stall": "#7f7f7f"}
MODEL_COLUMNS = {"mathis_bps": "mathis", "padhye_bps": "padhye", "window_limited_bps": "window limited"}
#: Colours of runs (compare) and flows, assigned in the order the runs were given, so one run keeps
#: one colour on every chart of a page (Vega would otherwise order a domain alphabetically).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
#: Headroom above the largest value drawn, so the top of a series does not touch the frame.
HEADROOM = 1.1


def unchecked(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Build a chart without altair's validation of every object as it is made.

    altair (``DEBUG_MODE``, on by default) turns each schema object into a dict and checks it
    against the Vega-Lite schema when it is created, again at each copy: a chart of a few layers
    costs 0.1-0.3 s that way, most of a report's time. The finished chart is the same object;
    ``chart.to_dict()`` still validates it as a whole (the tests do, on every sample).
    """

    @functools.wraps(fn)
    def build(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with debug_mode(False):
            return fn(*args, **kwargs)

    return build


class NoData(Exception):  # noqa: N818 - a signal, not an error: caught by tracekit.reports.figures
    """There is nothing to draw; the message says why (shown in the report)."""


def safe_label(value: Any) -> str:
    """Make an untrusted string fit for a title or a label: no control characters, ≤ 64 chars."""
    text = re.sub(_UNSAFE_CHARS, "", str(value))
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def safe_label_expr(expr: pl.Expr) -> pl.Expr:
    """:func:`safe_label` as a polars expression (vectorised, for label columns)."""
    cleaned = expr.cast(pl.String).str.replace_all(_UNSAFE_CHARS, "")
    return (
        pl.when(cleaned.str.len_chars() > MAX_LABEL)
        .then(cleaned.str.slice(0, MAX_LABEL - 1) + "…")
        .otherwise(cleaned)
    )


class Bag:
    """A chart's datasets, kept out of altair until the chart is finished.

    Altair deep-copies and validates inline ``values`` at every step (layering,
    ``properties``): with a few thousand rows per layer that costs seconds per
    chart. Layers refer to named datasets instead (``bag(rows)`` gives the
    reference); :meth:`attach` puts the rows into the finished chart's top-level
    ``datasets`` -- the chart's ``to_dict()`` is complete and valid Vega-Lite --
    and :func:`spec` serialises it without walking the rows.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.rows: dict[str, list[dict[str, Any]] | FrameRows] = {}
        #: The ``s`` values of the datasets added as frames (:meth:`frame`), by dataset name.
        self.known: dict[str, set[str]] = {}

    def __call__(self, rows: list[dict[str, Any]] | FrameRows) -> alt.NamedData:
        name = f"{self.prefix}_d{len(self.rows)}"
        self.rows[name] = rows
        return alt.NamedData(name=name)

    def frame(self, df: pl.DataFrame, digits: dict[str, int] | None = None) -> alt.NamedData:
        """``self(records(df, digits))`` as a :class:`FrameRows` (no dicts until asked for), its series
        names read once from the frame's ``s`` column.

        :meth:`series` would otherwise visit every row dict of every dataset in Python to find the
        two or three names there are; a set of the column's values is made in C.
        """
        ref = self(frame_rows(df, digits))
        if "s" not in df.columns:
            self.known[ref.name] = set()
        elif df.schema["s"] == pl.String:
            self.known[ref.name] = set(df["s"].to_list()) - {None}
        return ref

    def series(self) -> set[str]:
        """The ``s`` (series) values the datasets carry: the legend shows only these."""
        out: set[str] = set()
        for name, rows in self.rows.items():
            known = self.known.get(name)
            out |= known if known is not None else {str(r["s"]) for r in rows if r.get("s") is not None}
        return out

    def attach(self, chart: _Chart) -> _Chart:
        """Set the datasets on the finished chart (call last: later altair steps would copy them)."""
        # every top-level chart class has ``datasets`` (a top-level spec property); TopLevelMixin does not declare it
        chart.datasets = dict(self.rows)  # type: ignore[attr-defined]
        return chart


def spec(chart: Any, *, lazy: bool = False) -> dict[str, Any]:
    """The Vega-Lite dict of a chart, fast: the datasets are added after altair's ``to_dict``.

    Equal to ``chart.to_dict(validate=False)``; altair's own conversion walks every
    row of every dataset value by value (~0.25 s per 10,000 rows). ``lazy``: datasets kept
    as :class:`FrameRows` stay so (for :func:`tracekit.reports.html.script_json`, which
    needs only their text); otherwise they are handed out as their rows.
    """
    kwds = getattr(chart, "_kwds", None)
    datasets = kwds.get("datasets", alt.Undefined) if isinstance(kwds, dict) else alt.Undefined
    if not isinstance(kwds, dict) or not isinstance(datasets, dict):
        with debug_mode(False):
            whole: dict[str, Any] = chart.to_dict(validate=False)  # (chart is Any: any altair chart)
        return whole
    kwds["datasets"] = alt.Undefined
    try:
        with debug_mode(False):
            out: dict[str, Any] = chart.to_dict(validate=False)
    finally:
        kwds["datasets"] = datasets
    if not lazy:
        datasets = {k: v.rows() if isinstance(v, FrameRows) else v for k, v in datasets.items()}
    out["datasets"] = {**out.get("datasets", {}), **datasets}
    return out


def color_scale(colors: dict[str, str], title: str | None = None) -> alt.Color:
    return alt.Color("s:N", scale=alt.Scale(domain=list(colors), range=list(colors.values())),
                     title=title, legend=alt.Legend(orient="top"))


def label_color(order: list[str], field: str = "label", title: str | None = None) -> alt.Color:
    """A colour encoding whose domain is ``order`` (first given, first colour), cycling :data:`PALETTE`.

    Args:
        order: Cleaned labels in the order the runs or flows were given.
        field: The data field holding the label.
        title: Legend title.
    """
    labels = list(dict.fromkeys(order))
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(labels))]
    return alt.Color(f"{field}:N", title=title, scale=alt.Scale(domain=labels, range=colors),
                     legend=alt.Legend(orient="top", labelLimit=300))


def from_zero(title: str, fmt: str | None = None, top: float | None = None) -> dict[str, Any]:
    """Scale and axis for a time, rate or RTT axis: it starts at 0, never below; ``top`` fixes its end."""
    scale = alt.Scale(domain=[0, top], clamp=True) if top is not None else alt.Scale(zero=True, domainMin=0)
    return {"title": title, "scale": scale, "axis": alt.Axis(format=fmt) if fmt else alt.Axis()}


def has(df: pl.DataFrame | None, *cols: str) -> TypeGuard[pl.DataFrame]:
    return df is not None and df.height > 0 and all(c in df.columns for c in cols)


def one_flow(df: pl.DataFrame, flow: int, dir: int | None = None) -> pl.DataFrame:
    """The rows of one connection direction (of the connection: ``dir`` None).

    A report hands a chart its direction's rows already cut (:class:`tracekit.reports.figures._Split`):
    a frame whose every row matches is returned as it is, not copied by a filter that keeps all of it.
    """
    cond = pl.col("flow") == flow
    if dir is not None:
        cond = cond & (pl.col("dir") == dir)
    if df.height and df.select(cond.fill_null(False).all()).item():
        return df
    return df.filter(cond)


def in_time_order(df: pl.DataFrame, *, maintain_order: bool = False) -> pl.DataFrame:
    """``df.sort("time")``, skipped when the rows already are in time order (a capture's per-direction
    series are: the sort of 300,000 rows cost ~10 ms a series, to change nothing)."""
    t = df["time"]
    if t.null_count() == 0 and t.is_sorted():
        return df
    return df.sort("time", maintain_order=maintain_order)


def zoom(name: str) -> alt.Parameter:
    # Explicit names: altair's automatic ones come from a global counter (non-deterministic specs).
    return alt.selection_interval(bind="scales", encodings=["x"], name=f"{name}_zoom")


def stall_layer(stalls: pl.DataFrame | None, flow: int | None, dir: int | None, name: str,
                bag: Bag) -> alt.Chart | None:
    """Grey bands for the stalls of a flow (all flows when ``flow`` is None); None if there are none.

    Args:
        stalls: The :data:`~tracekit.schema.STALLS` frame (or None).
        flow: Flow id to select, or None for every flow.
        dir: Direction to select (ignored when ``flow`` is None).
        name: Prefix for the layer's name.
        bag: The chart's datasets.
    """
    if not has(stalls, "start", "end"):
        return None
    assert stalls is not None
    st = stalls if flow is None else one_flow(stalls, flow, dir if dir is not None else 0)
    if st.is_empty():
        return None
    st, _ = cap(st.sort("start"), n=MAX_MARKERS)
    cause = pl.col("cause").cast(pl.String) if "cause" in st.columns else pl.lit(None, pl.String)
    data = st.select(pl.col("start").alias("t"), pl.col("end").alias("t2"), cause.alias("cause"),
                     pl.lit("stall").alias("s"))
    # altair's encode() is generated at run time and typed as returning Any: the layer is a Chart
    bands: alt.Chart = (
        alt.Chart(bag.frame(data), name=f"{name}_stalls")
        .mark_rect(opacity=0.18)
        .encode(x=alt.X("t:Q"), x2=alt.X2("t2:Q"), color=alt.Color("s:N"),
                tooltip=[alt.Tooltip("t:Q", title="stall from (s)"), alt.Tooltip("t2:Q", title="to (s)"),
                         alt.Tooltip("cause:N", title="cause")])
    )
    return bands


def layer(*charts: alt.Chart | alt.LayerChart) -> alt.LayerChart:
    """``alt.layer`` of charts that are not faceted.

    altair types ``alt.layer`` as ``LayerChart | FacetChart`` (layering a faceted chart gives a
    FacetChart); tracekit never facets, so the result is a LayerChart (checked).
    """
    fast = _plain_layer(charts)
    if fast is not None:
        return fast
    out = alt.layer(*charts)
    if not isinstance(out, alt.LayerChart):
        raise TypeError(f"layering gave a {type(out).__name__}, not a LayerChart")
    return out


class _Layers(alt.LayerChart):
    """A LayerChart whose layers :func:`_plain_layer` already combined.

    altair copies a chart by calling its class again (``to_dict`` does, once per chart), and
    LayerChart's constructor would combine the layers anew: two deep copies of every layer and a
    schema validation of the selection, all to find nothing to change. This class is only built
    with layers in their final form, so its constructor is the schema object's own.
    """

    def __init__(self, data: Any = alt.Undefined, layer: Any = (), **kwargs: Any) -> None:
        # LayerChart.__init__ without its combining steps (they would change nothing: see above)
        super(alt.LayerChart, self).__init__(data=data, layer=list(layer), **kwargs)


#: Properties a layer may not carry (altair raises) or that altair moves to the top (width ...).
_NOT_IN_A_LAYER = ("autosize", "config", "padding", "background", "$schema", "width", "height", "view")


def _slot(chart: alt.Chart | alt.LayerChart, key: str) -> Any:
    """A schema property as set on the chart (``Undefined`` when not set), without altair's lookup rules."""
    return chart._kwds.get(key, alt.Undefined)


def _plain_layer(charts: tuple[alt.Chart | alt.LayerChart, ...]) -> alt.LayerChart | None:
    """The LayerChart ``alt.layer`` builds from tracekit's layers, without its copies, or None.

    For layers that each hold their own data, carry no size and no parameter but the first one's
    selections, altair's constructor changes nothing but where the selections sit: it lifts
    them to the top with the first layer's name as their view, and a lone layer's data to the top.
    It also deep-copies every layer twice and validates each selection against the schema on
    the way (~25 ms a chart; most of a report's altair time). Here the same object is built
    directly; any other layering (layers sharing data, a variable parameter) goes through ``alt.layer``.
    """
    if not charts or not all(type(c) is alt.Chart for c in charts):
        return None
    first, rest = charts[0], charts[1:]
    datas = [_slot(c, "data") for c in charts]
    if any(d is alt.Undefined for d in datas) or (rest and all(d is datas[0] for d in datas)):
        return None
    if any(_slot(c, k) is not alt.Undefined for c in charts for k in _NOT_IN_A_LAYER):
        return None
    if any(_slot(c, "params") is not alt.Undefined for c in rest) or _slot(first, "name") is alt.Undefined:
        return None
    params = _slot(first, "params")
    lifted: list[Any] = []
    if params is not alt.Undefined:
        if not all(type(p) is alt.SelectionParameter for p in params) or len(params) != 1:
            return None
        lifted = [alt.TopLevelSelectionParameter(**params[0].to_dict(validate=False), views=[first.name])]
    top: Any = alt.Undefined
    if lifted or not rest:
        first = first.copy(deep=False)
        first.params = alt.Undefined
        if not rest:  # a lone layer's data is the chart's
            top, first.data = first.data, alt.Undefined
    out = _Layers(data=top, layer=[first, *rest])
    if lifted:
        out.params = lifted
    return out


def layered(layers: list[alt.Chart], name: str, title: str, colors: dict[str, str], y_title: str,
            bag: Bag, x_title: str = "time (s)") -> alt.LayerChart:
    """Stack layers, add the shared colour legend (series drawn only), x zoom, title and the data."""
    seen = bag.series()
    shown = {k: v for k, v in colors.items() if k in seen}
    # a series the palette does not know (a new RTT method, say) still gets drawn, in grey
    shown.update({k: "#8c8c8c" for k in sorted(seen - set(colors))})
    shown = shown or colors
    first = layers[0].add_params(zoom(name))
    chart = layer(first, *layers[1:])
    chart.encoding = alt.FacetedEncoding(color=color_scale(shown))  # what LayerChart.encode(color=...) sets
    return props(chart, width=WIDTH, height=HEIGHT, title=safe_label(title) if title else "",
                 config=alt.Config(axis=alt.AxisConfig(labelFontSize=11, titleFontSize=12),
                                   legend=alt.LegendConfig(labelLimit=200)),
                 usermeta={"tracekit": {"chart": name, "x": x_title, "y": y_title}})


def props(chart: _Chart, **values: Any) -> _Chart:
    """Set top-level properties on a chart just built here, in place; returns it.

    The same spec as altair's ``properties()`` / ``configure_*()``, without their cost: each of
    those rebuilds a LayerChart, and its constructor deep-copies every layer twice (the
    objects are mostly ``Undefined`` slots: ~3,000 per layer), ~0.1 s per step and chart.
    """
    for key, value in values.items():
        chart[key] = value  # type: ignore[index]  # SchemaBase.__setitem__ (TopLevelMixin does not declare it)
    return chart


def axes(x_title: str, y_title: str, y: str = "y", fmt: str | None = None, top: float | None = None,
         y_from_zero: bool = True, x_from_zero: bool = True) -> dict[str, Any]:
    """x (time, from 0) and y encodings; ``top`` fixes the y scale's end (otherwise it fits the data from 0).

    ``y_from_zero=False`` leaves the y scale to Vega (relative sequence numbers may be negative in a
    capture that starts mid-connection); ``x_from_zero=False`` fits the time axis to the data
    (a connection that starts late, :func:`starts_late`).
    """
    y_enc = (alt.Y(f"{y}:Q", **from_zero(y_title, fmt, top)) if y_from_zero
             else alt.Y(f"{y}:Q", title=y_title, axis=alt.Axis(format=fmt) if fmt else alt.Axis()))
    x_enc = (alt.X("t:Q", **from_zero(x_title)) if x_from_zero
             else alt.X("t:Q", title=x_title, scale=alt.Scale(zero=False), axis=alt.Axis()))
    return {"x": x_enc, "y": y_enc}


def starts_late(first: float | None, last: float | None) -> bool:
    """True for a connection that begins after a silence longer than itself (7 ms of TCP at 0.98 s
    of a capture): its time axis then fits its own times; from 0 it would be a sliver at the right edge."""
    return first is not None and last is not None and first > 0 and first > last - first


def axis_from_zero(given: bool | None, *times: pl.Series | None) -> bool:
    """The chart's choice of a time axis from 0: ``given`` (the page decides per connection), else
    from the chart's own ``times`` (:func:`starts_late`)."""
    if given is not None:
        return given
    ends = [(float(t.min()), float(t.max())) for t in times  # type: ignore[arg-type]
            if t is not None and t.len() and t.null_count() < t.len()]
    if not ends:
        return True
    return not starts_late(min(lo for lo, _ in ends), max(hi for _, hi in ends))


def with_notes(chart: _TopLevel, notes: list[str]) -> _TopLevel:
    """The chart with ``notes`` (e.g. markers left out by the cap) in its ``usermeta`` (set in place), for
    :func:`notes_of`."""
    if notes:
        # usermeta is a property of every top-level chart class; TopLevelMixin does not declare it
        meta = dict(chart.usermeta) if chart.usermeta is not alt.Undefined else {}  # type: ignore[attr-defined]
        tk = dict(meta.get("tracekit", {}))
        tk["notes"] = notes
        props(chart, usermeta={**meta, "tracekit": tk})
    return chart


def notes_of(chart: alt.TopLevelMixin) -> list[str]:
    """Notes a chart function attached (e.g. markers left out by the cap)."""
    meta = chart.usermeta if chart.usermeta is not alt.Undefined else {}  # type: ignore[attr-defined]
    return list(meta.get("tracekit", {}).get("notes", []))
