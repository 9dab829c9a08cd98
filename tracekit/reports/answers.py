"""What ``analyze`` answers beyond the flows table: lab units, tool-reported metrics, the account in words.

* :func:`lab_flows`: where the source counts packets (ns-2, or any trace whose reader knows the
  segment size), the flows table gains cwnd in packets and packets/s.
* :func:`print_tool_table`: the second table, one row per tool-reported series
  (:mod:`tracekit.reports.toolmetrics`).
* :func:`print_explain` / :func:`print_summaries`: :mod:`tracekit.explain`'s sentences.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit import _flowrows, numfmt
from tracekit.explain import cwnd_reductions, explain
from tracekit.explain_parts import Parts
from tracekit.reports.markup import esc
from tracekit.reports.toolmetrics import summarise

if TYPE_CHECKING:
    from rich.console import Console

    from tracekit.analysis import Analysis
    from tracekit.explain import Sentence
    from tracekit.reports.toolmetrics import ToolMetric

#: Columns of the tool-metrics table (flow, node and source only when some row has one).
TOOL_COLUMNS = ("metric", "flow", "node", "source", "samples", "last", "max", "mean")
#: Columns :func:`lab_flows` adds: (column, header).
LAB_COLUMNS = [("max_cwnd_packets", "cwnd pkts"), ("data_pps", "pps")]


def lab_flows(analysis: Analysis) -> pl.DataFrame:
    """The flows table with ``max_cwnd_packets`` and ``data_pps`` when the segment size is known
    (:func:`tracekit._flowrows.lab_units`, the streamed summary's rule too)."""
    fl = analysis.flows
    seg = _flowrows.lab_segment(analysis.trace.meta)
    if fl.is_empty() or seg is None or "max_cwnd_bytes" not in fl.columns:
        return fl
    rows = [_flowrows.lab_units(r, seg) for r in fl.select("max_cwnd_bytes", "data_packets", "duration").to_dicts()]
    return fl.with_columns(pl.Series(c, [r[c] for r in rows], dtype=pl.Float64) for c in _flowrows.LAB_COLUMNS)


def json_flows(analysis: Analysis, parts: Parts | None = None) -> list[dict[str, Any]]:
    """The flows of ``analyze --json``: :func:`lab_flows` plus ``cwnd_reductions`` (docs/explain.md;
    :func:`tracekit._flowrows.with_reductions`).

    ``parts``: the analysis' frames split by direction, shared with :func:`tracekit.explain.explain`.
    """
    parts = Parts(analysis) if parts is None else parts

    def count(flow: int, d: int, end: float | None) -> int | None:
        return cwnd_reductions(analysis, flow, d, end, parts)

    return [_flowrows.with_reductions(r, count) for r in lab_flows(analysis).to_dicts()]


def header_bytes(analysis: Analysis) -> int | None:
    """Bytes of simulated headers per packet where the reader knows both sizes (ns-2: 540 − 500 = 40)."""
    meta = analysis.trace.meta
    seg = meta.get("segment_size")
    sizes = [p.get("packet_size") for p in meta.get("parts", []) if isinstance(p, dict)] + [meta.get("packet_size")]
    pkt = next((s for s in sizes if isinstance(s, int) and s > 0), None)
    if not seg or pkt is None or pkt <= seg:
        return None
    return int(pkt - seg)


def tool_rows(metrics: list[ToolMetric], analysis: Analysis) -> list[dict[str, Any]]:
    """Rows for the tool-metrics table: texts per statistic, packets/s also as bit/s without headers."""

    hdr = header_bytes(analysis)
    seg = analysis.trace.meta.get("segment_size")
    rows = []
    for m in metrics:
        row: dict[str, Any] = {"metric": m.metric, "flow": m.flow, "node": m.node,
                               "source": m.source if m.source != m.metric else None, "samples": m.samples,
                               "unit": m.source_unit or m.unit}
        row.update({stat: m.text(stat) for stat in ("last", "max", "mean")})
        rows.append(row)
        if m.source_unit == "pps" and hdr and seg and m.source_values:
            # the lab's "without the headers": the same packets/s times the payload only
            rows.append({**row, "metric": f"{m.metric}, payload only ({hdr}-B headers left out)", "unit": "bps",
                         **{stat: numfmt.rate(m.source_values[stat] * seg * 8, 4) for stat in ("last", "max", "mean")}})
    return rows


def print_tool_table(metrics: list[ToolMetric], analysis: Analysis, console: Console) -> None:
    """The second table: each tool-reported series' last, largest and mean value."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="tool-reported series (the source's unit first, then tracekit's)", title_justify="left")
    rows = tool_rows(metrics, analysis)
    cols = [k for k in TOOL_COLUMNS if k not in ("flow", "node", "source") or any(r[k] is not None for r in rows)]
    for h in cols:
        table.add_column(h, justify="left" if h in ("metric", "node", "source") else "right", overflow="fold")
    for r in rows:
        table.add_row(*(escape("–" if r[k] is None else (f"{r[k]:,}" if isinstance(r[k], int) else str(r[k])))
                        for k in cols))
    console.print(table)


def print_summaries(sentences: list[Sentence], console: Console) -> None:
    """One line per data direction, under the flows table."""
    from rich.markup import escape

    for s in sentences:
        console.print(escape(s.text), highlight=False)


def print_explain(sentences: list[Sentence], console: Console) -> None:
    """The whole account, one sentence a line, each direction's sentences indented under its overview."""
    from rich.markup import escape

    console.print("[bold]What happened[/]")
    for s in sentences:
        indent = "" if s.kind in ("overview", "no_data") or s.kind.startswith("warn_") else "  "
        console.print(indent + escape(s.text), highlight=False, soft_wrap=True)  # one sentence, one line


def explain_html(analysis: Analysis, link_rate_bps: float | None, prefix: str = "") -> str:
    """The account in words for the top of a report section (every text escaped)."""

    sentences = explain(analysis, link_bps=link_rate_bps)
    parts: list[str] = []
    items: list[str] = []

    def close() -> None:
        if items:
            parts.append(f"<ul>{''.join(items)}</ul>")
            items.clear()

    for s in sentences:
        attrs = f' data-kind="{esc(s.kind)}"' + (f' data-time="{esc(repr(s.time))}"' if s.time is not None else "")
        if s.kind in ("overview", "no_data") or s.kind.startswith("warn_"):
            close()
            cls = ' class="warn"' if s.kind.startswith("warn_") else ""
            parts.append(f"<p{cls}{attrs}>{esc(s.text)}</p>")
        else:
            items.append(f"<li{attrs}>{esc(s.text)}</li>")
    close()
    return f'<div class="explain" id="{esc(prefix)}explain"><h3>What happened</h3>{"".join(parts)}</div>'


def tool_table_html(analysis: Analysis, prefix: str = "") -> str:
    """The tool-reported series as a table (FlowMonitor's and NetSim's totals are only here)."""

    metrics = summarise(analysis.trace)
    if not metrics:
        return ""
    if all(m.samples == 1 for m in metrics) and any(m.flow is not None for m in metrics):
        return _totals_html(metrics, prefix)
    rows = tool_rows(metrics, analysis)
    cols = [k for k in TOOL_COLUMNS if k not in ("flow", "node", "source") or any(r[k] is not None for r in rows)]
    head = "".join(f'<th class="t">{esc(c)}</th>' if c in ("metric", "node", "source") else f"<th>{esc(c)}</th>"
                   for c in cols)
    body = []
    for r in rows:
        cells = "".join(
            f'<td class="t" data-col="{esc(c)}">{esc(r[c] if r[c] is not None else "–")}</td>'
            if c in ("metric", "node", "source")
            else f'<td data-col="{esc(c)}">'
            f'{esc("–" if r[c] is None else (f"{r[c]:,}" if isinstance(r[c], int) else r[c]))}</td>'
            for c in cols
        )
        body.append(f"<tr>{cells}</tr>")
    return (f"<h3>Tool-reported series</h3><p class=\"note\">Last, largest and mean value of each series the "
            f"tool wrote, in the source's unit first.</p><table id=\"{esc(prefix)}tool-metrics\"><thead><tr>{head}"
            f"</tr></thead><tbody>{''.join(body)}</tbody></table>")


#: Columns of the totals table shown first, in this order (the rest keep the tool's order).
_TOTALS_FIRST = ["throughput", "mean_delay", "delay", "lost_packets", "mean_jitter", "jitter", "rx_packets",
                 "tx_packets", "packets_received", "packets_transmitted", "packets_generated", "rx_bytes",
                 "tx_bytes", "payload_received", "payload_transmitted"]


def _totals_html(metrics: list[ToolMetric], prefix: str) -> str:
    """Per-flow (or per-application) totals as one row per flow, one column per metric.

    FlowMonitor's flow stats and NetSim's application table are one value per flow: a table
    reads them, a chart would draw dots at one instant. A metric given more than once per
    flow (FlowMonitor's drops per reason) gets one column per source.
    """

    per: dict[tuple[Any, Any], dict[str, ToolMetric]] = {}
    cols: dict[str, None] = {}
    counts: dict[tuple[Any, Any, str], int] = {}
    for m in metrics:
        counts[(m.flow, m.node, m.metric)] = counts.get((m.flow, m.node, m.metric), 0) + 1
    for m in metrics:
        col = m.metric if counts[(m.flow, m.node, m.metric)] == 1 else f"{m.metric} · {m.source}"
        cols[col] = None
        per.setdefault((m.flow, m.node), {})[col] = m
    # the lab's answers first; columns that are zero for every flow (drops for reasons that never
    # happened) are left out
    cols = {c: None for c in sorted(cols, key=lambda c: (_TOTALS_FIRST.index(c) if c in _TOTALS_FIRST
                                                          else len(_TOTALS_FIRST)))
            if any(c in got and got[c].last != 0 for got in per.values())}
    has_node = any(n is not None for _, n in per)
    head = '<th>flow</th>' + ('<th class="t">node</th>' if has_node else "") + "".join(
        f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for (flow, node), got in per.items():
        cells = f'<td data-col="flow">{esc("–" if flow is None else flow)}</td>'
        if has_node:
            cells += f'<td class="t" data-col="node">{esc(node if node is not None else "–")}</td>'
        cells += "".join(f'<td data-col="{esc(c)}">{esc(got[c].text("last") if c in got else "–")}</td>'
                         for c in cols)
        body.append(f"<tr>{cells}</tr>")
    return (f"<h3>Tool-reported totals</h3><p class=\"note\">One value per flow or application, as the tool "
            f"wrote it (its unit first).</p><table id=\"{esc(prefix)}tool-metrics\"><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")
