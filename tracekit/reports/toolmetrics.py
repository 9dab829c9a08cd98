"""The series a tool reported itself (``trace.samples``), summarised per metric, flow and node.

A lab's answer is often a number the simulator already wrote: ns-2's ``Window.tr`` (cwnd in
packets), ``WindowMon.tr`` (packets/s), an OPNET statistic (download response time), a NetSim
application table (throughput in Mbit/s), FlowMonitor's per-flow totals. Each becomes one row:
the last, largest and mean value, in the schema's unit and in the unit the source wrote.

The source's unit is recognised from a fixed table of unit spellings (:data:`SOURCE_UNITS`)
found in the column header or in ``meta["units"]``; the label shown is the table's, never the
input's text. ns-2's monitors give two rows per column (``cwnd`` in packets and in bytes,
``tput`` in packets/s and bit/s): they are one row here, the packet row being the source unit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit import numfmt

if TYPE_CHECKING:
    from tracekit.trace import Trace

#: (pattern in a header or unit note, label shown, schema unit, schema value of one source unit).
SOURCE_UNITS: list[tuple[re.Pattern[str], str, str, float]] = [
    (re.compile(r"\bMbps\b|\bMbits?/s\b", re.I), "Mbit/s", "bps", 1e6),
    (re.compile(r"\bkbps\b|\bkbits?/s\b", re.I), "kbit/s", "bps", 1e3),
    (re.compile(r"\bbytes/sec\b|\bbytes/s\b|\bB/s\b", re.I), "B/s", "bps", 8.0),
    (re.compile(r"\bmicro ?sec(onds?)?\b|\bµs\b|\bus\b", re.I), "µs", "s", 1e-6),
    (re.compile(r"\bms\b|\bmilliseconds?\b", re.I), "ms", "s", 1e-3),
    (re.compile(r"\bsec\b|\bseconds?\b", re.I), "s", "s", 1.0),
]
#: Units whose rows are the source's own where a column gives two rows (ns-2 monitors).
_PACKET_UNITS = ("packets", "pps")


@dataclass(frozen=True)
class ToolMetric:
    """One tool-reported series summarised.

    Attributes:
        metric: tracekit's metric name (``cwnd``, ``throughput``, ``download_time``...).
        names: Every name ``--y`` accepts for it (the metric, and the header's snake-case name).
        flow, node: Where it was measured (None: the whole run).
        source: The source's column or series name (input text: escape before showing it).
        unit: The schema unit of ``last``/``max``/``mean``.
        samples: Number of samples.
        last, max, mean: Value at the latest time, the largest, the mean (schema unit).
        source_unit: Label of the source's own unit when it differs (``packets``, ``Mbit/s``...).
        source_values: ``last``, ``max``, ``mean`` in ``source_unit``.
    """

    metric: str
    names: tuple[str, ...]
    flow: int | None
    node: str | None
    source: str
    unit: str
    samples: int
    last: float
    max: float
    mean: float
    source_unit: str | None = None
    source_values: dict[str, float] = field(default_factory=dict)

    def text(self, stat: str) -> str:
        """``stat`` (last/max/mean) for people, the source's unit first: ``66 packets (33,000 B)``."""
        v = getattr(self, stat)
        schema = numfmt.quantity(v, self.unit)
        if self.source_unit is None:
            return schema
        src = self.source_values.get(stat)
        if self.source_unit in _PACKET_UNITS:
            shown = numfmt.quantity(src, self.source_unit)
        else:
            shown = f"{numfmt.sig(src, 4)} {self.source_unit}" if src is not None else numfmt.DASH
        return shown if shown == schema or v == 0 else f"{shown} ({schema})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``analyze --json``'s ``tool_metrics`` entries)."""
        return {"metric": self.metric, "names": list(self.names), "flow": self.flow, "node": self.node,
                "source": self.source, "unit": self.unit, "samples": self.samples, "last": self.last,
                "max": self.max, "mean": self.mean, "source_unit": self.source_unit,
                "source_values": self.source_values or None}


def snake(text: str) -> str:
    """A header's last dotted part as a name: ``FTP.Download Response Time (sec)`` → ``download_response_time``."""
    t = re.sub(r"\([^)]*\)", " ", text.split("::")[-1])
    t = t.rsplit(".", 1)[-1] if "." in t else t
    return re.sub(r"[^a-z0-9]+", "_", t.lower()).strip("_")


def _source_unit(unit: str, source: str, note: str | None) -> tuple[str, float] | None:
    """(label, factor) of the source's unit when it is another than the schema's, else None."""
    for text in (note or "", source):
        for pat, label, schema_unit, factor in SOURCE_UNITS:
            if schema_unit == unit and pat.search(text):
                return (label, factor) if factor != 1.0 else None
    return None


def _stats(df: pl.DataFrame) -> tuple[int, float, float, float]:
    s = df.sort("time", maintain_order=True)["value"]
    return s.len(), float(s[-1]), float(s.max()), float(s.mean())  # type: ignore[arg-type]


def summarise(trace: Trace) -> list[ToolMetric]:
    """One :class:`ToolMetric` per (source column, flow, node) of ``trace.samples``, in first-seen order."""
    sm = trace.samples
    if sm.is_empty():
        return []
    notes: dict[str, str] = {str(k): str(v) for k, v in (trace.meta.get("units") or {}).items()}
    sm = sm.with_row_index("_r")
    keys = ["source", "flow", "node"]
    groups = sm.group_by(keys, maintain_order=True).agg(pl.col("_r").min()).sort("_r")
    out = []
    for g in groups.iter_rows(named=True):
        part = sm.filter(pl.col("source") == g["source"],
                         pl.col("flow").is_null() if g["flow"] is None else pl.col("flow") == g["flow"],
                         pl.col("node").is_null() if g["node"] is None else pl.col("node") == g["node"])
        by_unit = {u: part.filter(pl.col("unit") == u) for u in part["unit"].unique(maintain_order=True).to_list()}
        pairs = part.select("metric", "unit").unique(maintain_order=True).iter_rows()
        for metric, unit in pairs:
            rows = part.filter(pl.col("metric") == metric, pl.col("unit") == unit)
            if unit in _PACKET_UNITS and len(by_unit) > 1:
                continue  # shown as the source unit of its bytes/bps twin
            n, last, mx, mean = _stats(rows)
            src_unit, src_vals = None, {}
            twin = next((u for u in by_unit if u in _PACKET_UNITS and u != unit), None)
            if twin is not None and unit not in _PACKET_UNITS:
                tw = part.filter(pl.col("unit") == twin, pl.col("metric") == _twin_metric(metric, part, twin))
                if tw.height:
                    _, tl, tm, tmean = _stats(tw)
                    src_unit, src_vals = twin, {"last": tl, "max": tm, "mean": tmean}
            else:
                su = _source_unit(unit, g["source"], notes.get(metric))
                if su is not None:
                    src_unit = su[0]
                    src_vals = {"last": last / su[1], "max": mx / su[1], "mean": mean / su[1]}
            names = tuple(dict.fromkeys(n for n in (metric, snake(g["source"])) if n))
            out.append(ToolMetric(metric, names, g["flow"], g["node"], g["source"], unit, n,
                                  last, mx, mean, src_unit, src_vals))
    return out


def _twin_metric(metric: str, part: pl.DataFrame, twin: str) -> str:
    """The packet-unit metric of the same column (``throughput`` → ``throughput_pps``, ``cwnd`` → ``cwnd``)."""
    names = part.filter(pl.col("unit") == twin)["metric"].unique().to_list()
    for cand in (metric, f"{metric}_pps", f"{metric}_packets"):
        if cand in names:
            return cand
    return names[0] if names else metric


def find(metrics: list[ToolMetric], name: str) -> list[ToolMetric]:
    """The metrics ``name`` names (its metric or snake-case header name), case-insensitive."""
    want = name.strip().lower()
    return [m for m in metrics if want in (n.lower() for n in m.names)]


def value(metrics: list[ToolMetric], name: str, stat: str = "mean", flow: int | None = None) -> float | None:
    """One number for ``name`` in a run (sweep and compare cells).

    With one matching series, its ``stat``; with several (one per flow), the one of ``flow``
    when given and present, else ``stat`` over all of them (the max of maxes, the mean of means,
    the last of the series that ends last).
    """
    found = find(metrics, name)
    if flow is not None and any(m.flow == flow for m in found):
        found = [m for m in found if m.flow == flow]
    if not found:
        return None
    vals = [getattr(m, stat) for m in found]
    if stat == "max":
        v = max(vals)
    elif stat == "mean":
        v = sum(vals) / len(vals)
    else:
        v = vals[-1]
    return v if math.isfinite(v) else None
