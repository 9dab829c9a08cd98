"""``tracekit compare``: several runs, from any formats, side by side on common units.

Every input is read and analysed like ``tracekit analyze`` does (:func:`tracekit.pipeline.load`); each run is
summarised by its *main connection direction* (the one that carried the most
unique bytes) so that a capture, an ns-2 run and an ns-3 run of one scenario
line up. The first run is the reference: the table gives every metric for
each run and its difference from the reference (absolute, and relative when
the reference is not zero). The charts overlay the runs' series with time
counted from each main connection's first packet (runs start at different
moments in different tools: ns-2 labs start FTP at 0.5 s, captures at 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

import polars as pl

from tracekit import numfmt
from tracekit.errors import UsageError
from tracekit.explain import cwnd_reductions
from tracekit.reports import charts
from tracekit.reports import html as H
from tracekit.reports.figures import Figure, flow_labels, frame, main_directions, throughput_frame
from tracekit.reports.html import write_text
from tracekit.reports.toolmetrics import summarise, value

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

#: Metrics of the main connection direction, in table order: (flows-table column, title).
METRICS: list[tuple[str, str]] = [
    ("goodput_bps", "goodput"), ("throughput_bps", "throughput"), ("transfer_s", "transfer time s"),
    ("handshake_s", "handshake s"), ("delivered_bytes", "bytes delivered"), ("data_packets", "data packets"),
    ("retrans_packets", "retransmitted packets"), ("retrans_bytes", "retransmitted bytes"),
    ("retrans_fast", "fast retransmits"), ("retrans_rto", "timeout retransmits"),
    ("rtt_p50_s", "RTT median s"), ("rtt_mean_s", "RTT mean s"),
    ("max_cwnd_bytes", "max cwnd bytes"), ("stall_time_s", "stalled s"), ("loss_rate", "packet loss rate"),
    ("loss_events", "loss events"), ("loss_event_rate", "loss-event rate"),
    ("mathis_bps", "Mathis model"), ("padhye_bps", "Padhye model"), ("window_limited_bps", "window limit"),
    ("cwnd_reductions", "cwnd reductions in congestion avoidance"),
]
#: Which way is better for each metric: +1 higher is better, -1 lower is better; a metric not
#: listed (bytes, packets, duration, model predictions, the window) is neither, and its Δ cell stays
#: uncoloured. A rise in timeouts is worse even though the number went up. Fast retransmits are
#: neither: fewer of them may mean that losses were repaired by timeouts instead.
BETTER: dict[str, int] = {
    "goodput_bps": 1, "throughput_bps": 1, "transfer_s": -1, "retrans_packets": -1, "retrans_bytes": -1,
    "retrans_rto": -1, "rtt_p50_s": -1, "rtt_mean_s": -1, "handshake_rtt_s": -1,
    "stall_time_s": -1,
}
#: Run-level metrics (not about one connection).
RUN_METRICS: list[tuple[str, str]] = [("flows", "data directions"), ("packets", "packets analysed")]


@dataclass(frozen=True)
class Run:
    """One compared run.

    Attributes:
        label: Display name (cleaned; from ``--label`` or the path).
        path: The input as given.
        analysis: Its analysis.
        main: The main connection direction's flows-table row (with ``label``), or None.
        metrics: Metric values by key (:data:`METRICS` and :data:`RUN_METRICS`).
    """

    label: str
    path: str
    analysis: Any
    main: dict[str, Any] | None
    metrics: dict[str, Any]


@dataclass(frozen=True)
class CompareResult:
    """Runs compared against the first one.

    Attributes:
        runs: The runs; ``runs[0]`` is the reference.
        metrics: (key, title) of the metrics at least one run has, in table order.
    """

    runs: list[Run]
    metrics: list[tuple[str, str]] = field(default_factory=list)

    def delta(self, i: int, key: str) -> tuple[float | None, float | None]:
        """(run i − reference, relative difference) for a metric; None where undefined."""
        ref, v = self.runs[0].metrics.get(key), self.runs[i].metrics.get(key)
        if not _num(ref) or not _num(v):
            return None, None
        d = float(v) - float(ref)
        return d, (d / float(ref) if float(ref) != 0 else None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: per run its label, path, format and metrics, plus deltas."""
        out = []
        for i, r in enumerate(self.runs):
            deltas = {k: dict(zip(("abs", "rel"), self.delta(i, k), strict=True)) for k, _ in self.metrics}
            out.append({"label": r.label, "path": r.path, "format": r.analysis.trace.meta.get("format"),
                        "tool": r.analysis.trace.meta.get("tool"), "main": r.main,
                        "metrics": {k: r.metrics.get(k) for k, _ in self.metrics},
                        "delta": deltas if i else None})
        return {"reference": self.runs[0].label if self.runs else None, "runs": out}


def _signed(d: float, key: str) -> str:
    """A difference with its sign, in the metric's unit (bit/s scaled; counts with separators)."""
    large_count = not key.endswith("_bps") and abs(d) >= 1000
    text = f"{abs(d):,.0f}" if large_count else (numfmt.cell(abs(d), key) if d else "0")
    return ("+" if d > 0 else "−" if d < 0 else "±") + text


def _delta_class(d: float | None, key: str) -> str:
    """``class="better"`` / ``class="worse"`` for a Δ cell, by :data:`BETTER`; empty when neither."""
    way = BETTER.get(key, 0)
    if not d or not way:
        return ""
    return ' class="better"' if d * way > 0 else ' class="worse"'


def _num(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def main_flow(analysis: Any) -> dict[str, Any] | None:
    """The flows-table row (with ``label``) of the direction that carried the most unique bytes."""
    top, _ = main_directions(flow_labels(analysis.flows), 1)
    return top.to_dicts()[0] if top.height else None


def run_metrics(analysis: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The main direction's row and the metric values of a run."""

    main = main_flow(analysis)
    values: dict[str, Any] = {k: (main or {}).get(k) for k, _ in METRICS}
    if main is not None:
        values["cwnd_reductions"] = cwnd_reductions(analysis, int(main["flow"]), int(main["dir"]), main.get("end"))
    values["flows"] = analysis.flows.height
    values["packets"] = analysis.packets.height
    return main, values


def tool_values(analysis: Any, names: Sequence[str]) -> dict[str, Any]:
    """Values of tool-reported metrics named by ``--y NAME[:STAT]`` (STAT: mean, max or last; default mean).

    Raises:
        UsageError: for an unknown statistic.
    """

    metrics = summarise(analysis.trace)
    out: dict[str, Any] = {}
    for spec in names:
        name, _, stat = spec.partition(":")
        stat = stat or "mean"
        if stat not in ("mean", "max", "last"):
            raise UsageError(f"--y {spec!r}: statistic must be mean, max or last")
        out[spec] = value(metrics, name, stat)  # tool flow ids are the tool's, not tracekit's: all flows
        found = [m.unit for m in metrics if name.lower() in (n.lower() for n in m.names)]
        if found:
            out[f"_unit.{spec}"] = _UNIT_WORDS.get(found[0], found[0])
    return out


#: Schema units as a metric title writes them.
_UNIT_WORDS = {"bps": "bit/s", "bytes": "bytes", "s": "s", "packets": "packets", "pps": "packets/s",
               "ratio": "ratio", "count": "count", "1": "as written"}


def parse_labels(items: Sequence[str]) -> list[tuple[str, str]]:
    """Parse ``--label NAME=PATH`` options.

    Raises:
        UsageError: when an item has no ``=`` or an empty side.
    """
    out = []
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path:
            raise UsageError(f"--label {item!r} is not NAME=PATH", hint="e.g. --label linux=run1/cap.pcap")
        out.append((name.strip(), path))
    return out


def _default_labels(paths: Sequence[str]) -> list[str]:
    """File (or directory) names; the parent directory is added where names repeat."""
    names = [Path(p).name or str(p) for p in paths]
    if len(set(names)) < len(names):
        names = [f"{Path(p).parent.name}/{Path(p).name}" for p in paths]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} #{seen[n]}")
    return out


def compare(
    loaded: Sequence[tuple[str, Analysis]],
    labels: Sequence[str] | dict[str, str] | None = None,
    *,
    y: Sequence[str] = (),
) -> CompareResult:
    """Line up several analysed runs; the first is the reference.

    Args:
        loaded: ``(path, analysis)`` per run, any formats (e.g. from :func:`tracekit.pipeline.load`;
            the path names the run and is shown, never read).
        labels: One label per run, or a mapping path -> label (others keep their file name).
        y: Tool-reported metrics to add as rows, ``NAME[:STAT]`` (:func:`tool_values`).

    Returns:
        The comparison.

    Raises:
        UsageError: with fewer than two runs, or labels that do not fit the paths.
    """
    inputs = [str(p) for p, _ in loaded]
    if len(inputs) < 2:
        raise UsageError("compare needs at least two runs", hint="tracekit compare A B [C ...] -o compare.html")
    names = _default_labels(inputs)
    if isinstance(labels, dict):
        unknown = [p for p in labels if p not in inputs]
        if unknown:
            raise UsageError(f"--label names a path that is not compared: {unknown[0]!r}",
                             hint="give the same path as on the command line")
        names = [labels.get(p, n) for p, n in zip(inputs, names, strict=True)]
    elif labels is not None:
        if len(labels) != len(inputs):
            raise UsageError(f"{len(labels)} labels for {len(inputs)} runs")
        names = list(labels)
    runs = []
    for (path, analysis), name in zip(loaded, names, strict=True):
        main, values = run_metrics(analysis)
        values.update(tool_values(analysis, y))
        runs.append(Run(charts.safe_label(name), path, analysis, main, values))
    def title(spec: str) -> str:
        unit = next((r.metrics.get(f"_unit.{spec}") for r in runs if r.metrics.get(f"_unit.{spec}")), None)
        return charts.safe_label(spec) + (f" ({unit})" if unit else "")

    wanted = METRICS + RUN_METRICS + [(spec, title(spec)) for spec in y]
    present = [(k, t) for k, t in wanted if any(r.metrics.get(k) is not None for r in runs)]
    return CompareResult(runs, present)


# ---- charts ---------------------------------------------------------------------------------------


def _series(result: CompareResult, pick: Any) -> pl.DataFrame:
    """Stack one series per run: ``pick(run, flow, dir, t0)`` returns a frame with ``t``, ``y``."""
    parts = []
    for r in result.runs:
        if r.main is None:
            continue
        df = pick(r, int(r.main["flow"]), int(r.main["dir"]), float(r.main.get("start") or 0.0))
        if df is not None and df.height:
            parts.append(df.select(pl.lit(r.label).alias("label"), pl.col("t").cast(pl.Float64),
                                   pl.col("y").cast(pl.Float64)))
    return pl.concat(parts) if parts else pl.DataFrame(schema={"label": pl.String, "t": pl.Float64, "y": pl.Float64})


def _sel(df: pl.DataFrame | None, flow: int, dir: int, need: tuple[str, ...]) -> pl.DataFrame | None:
    if df is None or df.is_empty() or not all(c in df.columns for c in ("flow", "dir", *need)):
        return None
    return df.filter((pl.col("flow") == flow) & (pl.col("dir") == dir))


def _seq(r: Run, f: int, d: int, t0: float) -> pl.DataFrame | None:
    pk = _sel(r.analysis.packets, f, d, ("time", "seq", "payload"))
    if pk is None:
        return None
    pk = pk.filter((pl.col("payload") > 0) & pl.col("seq").is_not_null())
    return pk.select((pl.col("time") - t0).alias("t"), (pl.col("seq") + pl.col("payload").cast(pl.Int64)).alias("y"))


def _tput(r: Run, f: int, d: int, t0: float) -> pl.DataFrame | None:
    tp = _sel(throughput_frame(r.analysis), f, d, ("time", "goodput_bps"))
    return None if tp is None else tp.select((pl.col("time") - t0).alias("t"), pl.col("goodput_bps").alias("y"))


def _cwnd(r: Run, f: int, d: int, t0: float) -> pl.DataFrame | None:
    cw = _sel(frame(r.analysis, "cwnd"), f, d, ("time", "cwnd_bytes"))
    if cw is None or cw.is_empty():
        return None
    if "source" in cw.columns and (cw["source"] == "trace").any():
        cw = cw.filter(pl.col("source") == "trace")  # the tool's own numbers beat an estimate
    return cw.select((pl.col("time") - t0).alias("t"), pl.col("cwnd_bytes").alias("y"))


def _rtt(r: Run, f: int, d: int, t0: float) -> pl.DataFrame | None:
    rt = _sel(frame(r.analysis, "rtt"), f, d, ("time", "rtt_s"))
    return None if rt is None else rt.select((pl.col("time") - t0).alias("t"), pl.col("rtt_s").alias("y"))


def figures(result: CompareResult) -> list[Figure]:
    """The overlay charts of a comparison (or why each is missing)."""
    specs: list[tuple[str, str, Callable[[Run, int, int, float], pl.DataFrame | None], str, str,
                      str | Literal[False] | None]] = [
        ("timeseq", "sequence number over time", _seq, "highest sequence sent (bytes)", "line", False),
        ("throughput", "goodput over time", _tput, "goodput (bit/s)", "line", "~s"),
        ("cwnd", "congestion window", _cwnd, "cwnd (bytes)", "line", None),
        ("rtt", "round-trip time", _rtt, "RTT (s)", "point", None),
    ]
    out = []
    for kind, title, pick, y_title, mark, fmt in specs:
        key = f"cmp-{kind}"
        try:
            chart = charts.overlay(_series(result, pick), y_title=y_title, title=title, name=key.replace("-", "_"),
                                   mark=mark, y_format=fmt or None, y_from_zero=fmt is not False,
                                   order=[r.label for r in result.runs])
            out.append(Figure(kind, key, title, chart=chart))
        except charts.NoData as why:
            out.append(Figure(kind, key, title, reason=str(why)))
    pts = []
    for r in result.runs:
        if r.main is None:
            continue
        keys = pl.DataFrame({"flow": [r.main["flow"]], "dir": [r.main["dir"]], "label": [r.label]},
                            schema={"flow": pl.UInt32, "dir": pl.Int8, "label": pl.String})
        rt, tp = frame(r.analysis, "rtt"), throughput_frame(r.analysis)
        if rt is not None and tp is not None:
            pts.append(charts.ellipse_points(rt, tp, keys))
    try:
        chart = charts.ellipse(pl.concat(pts) if pts else pl.DataFrame(), title="throughput vs RTT per run",
                               name="cmp_ellipse", order=[r.label for r in result.runs])
        out.append(Figure("ellipse", "cmp-ellipse", "throughput vs RTT", chart=chart))
    except charts.NoData as why:
        out.append(Figure("ellipse", "cmp-ellipse", "throughput vs RTT", reason=str(why)))
    return out


def render(result: CompareResult) -> str:
    """The comparison page: runs, the side-by-side metric table with deltas, overlay charts."""

    runs = result.runs
    parts = ["<h1>tracekit compare</h1>", "<h2>Runs</h2>"]
    parts.append(H.table([("run", "run"), ("path", "input"), ("format", "format"), ("tool", "tool"),
                          ("connection", "main connection")],
                         [{"run": r.label, "path": r.path, "format": r.analysis.trace.meta.get("format"),
                           "tool": r.analysis.trace.meta.get("tool"),
                           "connection": (r.main or {}).get("label") or "(no TCP data)"} for r in runs],
                         table_id="runs"))
    parts.append(f"<h2>Metrics (reference: {H.esc(runs[0].label)})</h2>")
    head = "<th class=\"t\">metric</th>" + "".join(
        f'<th data-run="{i}">{H.esc(r.label)}</th>' + (f'<th data-run="{i}">Δ {H.esc(r.label)}</th>' if i else "")
        for i, r in enumerate(runs))
    rows = []
    for key, title in result.metrics:
        cells = [f'<th class="t" data-col="{H.esc(key)}">{H.esc(title)}</th>']
        for i, r in enumerate(runs):
            cells.append(H.cell(r.metrics.get(key), key).replace("<td", f'<td data-run="{i}"', 1))
            if i:
                d, rel = result.delta(i, key)
                text = "–" if d is None else (_signed(d, key) + (f" ({rel:+.1%})" if rel is not None else ""))
                cls = _delta_class(d, key)
                cells.append(f'<td data-run="{i}" data-delta="{H.esc(key)}"{cls}>{H.esc(text)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    parts.append(f'<table id="metrics"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    specs: dict[str, dict[str, Any]] = {}
    parts.append("<h2>Overlays</h2><p class=\"note\">Time counts from each run's main connection start.</p>")
    parts.extend(H.figures_html(list(figures(result)), specs))
    for r in runs:
        if r.analysis.trace.warnings:
            items = "".join(f"<li class=\"warn\"><code>{H.esc(w.get('code'))}</code> {H.esc(w.get('message'))}</li>"
                            for w in r.analysis.trace.warnings)
            parts.append(f"<h3>Warnings of {H.esc(r.label)}</h3><ul>{items}</ul>")
    return H.page("tracekit compare — " + ", ".join(r.label for r in runs[:4]), "\n".join(parts), specs)


def write(result: CompareResult, path: Path) -> None:
    """Write the comparison page atomically.

    Raises:
        OutputError: when the file cannot be written.
    """

    write_text(Path(path), render(result))
