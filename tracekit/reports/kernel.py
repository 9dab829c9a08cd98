"""The kernel's view in the reports: how far the cwnd estimate is, and the retransmission counts.

Text (``analyze``'s table) and HTML (``report``) show the same two things for a capture read
with an ss log / nstat snapshots (:mod:`tracekit.kernel`): one sentence per sending direction
with the estimate's median error against the kernel's cwnd, and tracekit's retransmission
kinds beside the kernel's counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracekit.kernel import CWND_LIMITED, retrans_table
from tracekit.reports.markup import esc, table

if TYPE_CHECKING:
    from rich.console import Console

    from tracekit.analysis import Analysis

#: Above this median error the report says the estimate is only a rough guide here.
TRUSTED = 0.10


def verdicts(analysis: Analysis) -> list[str]:
    """One sentence per direction the kernel reported on: the estimate's median error against it."""
    fl = analysis.flows
    if "kernel_cc" not in fl.columns:
        return []
    out = []
    for row in fl.filter(fl["kernel_cc"].is_not_null()).iter_rows(named=True):
        who = f"flow {row['flow']} ({row['src']}:{row['sport']} → {row['dst']}:{row['dport']}, {row['kernel_cc']})"
        n, err, bias = row.get("kernel_cwnd_compared"), row.get("kernel_cwnd_err_p50"), row.get("kernel_cwnd_bias_p50")
        if not n or err is None:
            out.append(f"{who}: no ss poll found the sender cwnd-limited (unacked ≥ {CWND_LIMITED:.0%} of cwnd), "
                       "so the estimate was not checked against the kernel")
            continue
        text = (f"{who}: the cwnd estimate is {err:.1%} from the kernel's cwnd (median over {n} cwnd-limited "
                f"ss polls; median signed error {bias:+.1%})")
        if err > TRUSTED:
            text += f" — more than {TRUSTED:.0%}: read the estimated window as a rough guide only for this flow"
        out.append(text)
    return out


def _cell(v: Any) -> str:
    return "–" if v is None else f"{v:,}" if isinstance(v, int) else str(v)


def print_kernel(analysis: Analysis, console: Console) -> None:
    """Print the verdicts and the retransmission comparison with rich."""
    from rich.markup import escape
    from rich.table import Table

    for line in verdicts(analysis):
        console.print(escape(line))
    info = analysis.trace.meta.get("kernel") or {}
    if not info.get("counters"):
        return
    table = Table(title=f"retransmissions: tracekit vs the kernel ({escape(str(info.get('counters_tool')))})",
                  title_justify="left")
    for h in ("what", "tracekit", "kernel", "counter"):
        table.add_column(h, justify="left" if h in ("what", "counter") else "right")
    for row in retrans_table(analysis):
        table.add_row(*(escape(_cell(row[k])) for k in ("what", "tracekit", "kernel", "counter")))
    console.print(table)


def kernel_html(analysis: Analysis) -> str:
    """The report's "Kernel's view" part (all text escaped)."""

    info = analysis.trace.meta.get("kernel") or {}
    parts = ["<h3>The kernel's view</h3>"]
    offset = info.get("clock_offset_s")
    parts.append('<p class="note">' + esc(
        f"ss log: {info.get('ss_layout') or '–'} layout, stamps {info.get('ss_stamps') or '–'}; "
        f"congestion control {info.get('congestion_control') or '–'}; "
        + (f"first poll {offset:+.3f} s from the first packet" if offset is not None else "not aligned in time")
        + ("; connections not in the capture: " + ", ".join(info["unmatched"]) if info.get("unmatched") else ""))
        + "</p>")
    lines = verdicts(analysis)
    if lines:
        parts.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in lines) + "</ul>")
    if info.get("counters"):
        cols = [("what", "what"), ("tracekit", "tracekit"), ("kernel", f"kernel ({info.get('counters_tool')})"),
                ("counter", "counter")]
        parts.append(table(cols, retrans_table(analysis), table_id="kernel-retrans"))
    return "\n".join(parts)
