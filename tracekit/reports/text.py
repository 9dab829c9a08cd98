"""Plain outputs of an analysis: the JSON document of ``analyze --json``, rich tables, parquet export."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit import _jsontext
from tracekit._shared import SCHEMA_VERSION
from tracekit._shared import json_safe as _clean

if TYPE_CHECKING:
    import polars as pl
    from rich.console import Console

    from tracekit.analysis import Analysis

def summary(analysis: Analysis, *, link_bps: float | None = None) -> dict[str, Any]:
    """The ``analyze --json`` document for one trace (keys documented in docs/cli.md).

    ``tool_metrics``: the tool-reported series (:mod:`tracekit.reports.toolmetrics`);
    ``explain``: the account in words (:mod:`tracekit.explain`), ``{time, kind, text, values}``.
    """
    from tracekit._shared import trace_summary
    from tracekit.explain import explain
    from tracekit.explain_parts import Parts
    from tracekit.reports.answers import json_flows
    from tracekit.reports.toolmetrics import summarise

    tr = analysis.trace
    trace = trace_summary(tr.meta, tr.packets.height, tr.samples.height, tr.warnings)
    parts = Parts(analysis)  # split by direction once, for the flows and the account
    doc = {
        "schema_version": SCHEMA_VERSION,
        "trace": trace,
        "flows": json_flows(analysis, parts),
        "views": _views(analysis),
        "tool_metrics": [m.to_dict() for m in summarise(tr)],
        "explain": [s.to_dict() for s in explain(analysis, link_bps=link_bps, parts=parts)],
    }
    if tr.meta.get("kernel"):  # ss / nstat beside the capture (tracekit.kernel)
        from tracekit.kernel import summary as kernel_summary

        doc["kernel"] = kernel_summary(analysis)
    cleaned: dict[str, Any] = _clean(doc)
    return cleaned


def _views(analysis: Analysis) -> list[dict[str, Any]]:
    """Every capture's rows when connections were seen from several captures (else ``[]``: ``flows`` is the only
    view)."""
    views: pl.DataFrame | None = getattr(analysis, "views", None)
    if views is None or views.is_empty() or views.height == analysis.flows.height:
        return []
    return views.to_dicts()


def dumps(doc: Any) -> str:
    """Serialise to strict JSON (no NaN/Infinity): ``json.dumps(_clean(doc), indent=2, allow_nan=False,
    default=str)``, byte for byte, written by :mod:`tracekit._jsontext` (without json's pure-Python encoder
    or the cleaned copy)."""
    return _jsontext.dumps(doc, clean=True)


def _fmt(v: Any, col: str) -> str:
    """A table cell's text (:func:`tracekit.numfmt.cell`: no exponents, separators, SI rates)."""
    from tracekit.numfmt import cell

    return cell(v, col)


#: Columns shown in the terminal table (all columns are in --json and --export).
TABLE_COLUMNS = [
    ("flow", "flow"), ("dir", "dir"), ("src", "source"), ("dst", "destination"),
    ("duration", "dur s"), ("packets", "pkts"), ("unique_bytes", "bytes"),
    ("retrans_packets", "retx"), ("throughput_bps", "throughput"), ("goodput_bps", "goodput"),
    ("rtt_p50_s", "rtt p50 s"), ("handshake_rtt_s", "hs rtt s"),
    ("max_cwnd_packets", "cwnd pkts"), ("data_pps", "pps"),  # lab units (reports.answers.lab_flows)
]


def print_table(analysis: Analysis, console: Console) -> None:
    """Print the per-flow table and the trace's warnings with rich."""
    from rich.markup import escape
    from rich.table import Table

    from tracekit.reports.answers import lab_flows

    tr = analysis.trace
    flows = lab_flows(analysis)
    title = f"{escape(tr.path)}  [{escape(str(tr.meta.get('format')))}, {tr.packets.height:,} packet events]"
    table = Table(title=title, title_justify="left")
    cols = [(c, h) for c, h in TABLE_COLUMNS if c in flows.columns]
    if "views" in flows.columns and (flows["views"] > 1).any():
        # several captures saw the connections: say which one each row comes from
        cols += [(c, h) for c, h in (("capture", "capture"), ("vantage_point", "vantage")) if c in flows.columns]
    for c, h in cols:
        table.add_column(h, justify="left" if c in ("src", "dst") else "right")
    for row in flows.iter_rows(named=True):
        cells = []
        for c, _ in cols:
            v = row[c]
            if c in ("src", "dst"):
                port = row["sport" if c == "src" else "dport"]
                v = f"{v}:{port}" if port is not None else v
            cells.append(escape(_fmt(v, c)))
        table.add_row(*cells)
    if flows.height:
        console.print(table)
    else:
        console.print(title + "  (no TCP connection carried data)", highlight=False)
    if tr.meta.get("kernel"):
        from tracekit.reports.kernel import print_kernel

        print_kernel(analysis, console)
    for w in tr.warnings:
        console.print(f"[yellow]warning[/] {escape(w['code'])}: {escape(w['message'])} (×{w['count']})")


def export(analysis: Analysis, outdir: Path) -> list[Path]:
    """Write packets, samples, flows and every analysis frame as parquet files in ``outdir``.

    Returns:
        The files written.
    """
    from tracekit.errors import OutputError

    frames = {"packets": analysis.trace.packets, "samples": analysis.trace.samples, "flows": analysis.flows}
    frames.update(analysis.extra)
    written = []
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        for name, df in frames.items():
            p = outdir / f"{name}.parquet"
            tmp = outdir / f".{name}.parquet.tmp"
            df.write_parquet(tmp)
            os.replace(tmp, p)
            written.append(p)
    except OSError as exc:
        raise OutputError(f"cannot write parquet files: {exc.strerror or exc}", path=str(outdir),
                          hint="choose a writable --export directory") from None
    return written
