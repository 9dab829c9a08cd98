"""What happened, in words: a deterministic account of each connection direction that carried data.

Pure (no I/O): everything comes from an :class:`~tracekit.analysis.Analysis`'s frames, turned into the
plain values the rules read (:mod:`tracekit.explain_account`, :mod:`tracekit.explain_rules`; the streamed
summary feeds the same rules, :mod:`tracekit._streamexplain`). Every
sentence is one entry of :data:`tracekit.phrases.TEMPLATES` (documented in docs/explain.md) filled with numbers
formatted by :mod:`tracekit.numfmt`, so no text of the input (a file name, an OPNET label, an
address) can reach a phrase: connections are named by their flow number and direction only.

Each :class:`Sentence` carries its ``kind`` (the template's key), the ``time`` it is about and the
raw ``values`` (SI units), as ``analyze --json`` writes them under ``explain``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit import numfmt
from tracekit._runinfo import rate_from_text
from tracekit.explain_account import account, data_rows, vantage_kinds
from tracekit.explain_parts import Parts, frame
from tracekit.explain_rules import TraceFacts, jain, np_extreme
from tracekit.phrases import CLAUSES, TEMPLATES, Sentence, say

__all__ = ["CLAUSES", "TEMPLATES", "Sentence", "cwnd_reductions", "explain", "rate_from_text", "say", "summaries"]

if TYPE_CHECKING:
    from tracekit.analysis import Analysis


def _trace_facts(an: Analysis) -> TraceFacts:
    """What the warnings read of an analysis' trace: its packets (the last time, the data packets and
    those captured short of their size), the flows' vantage points and ``meta``."""
    pk, meta = frame(an, "packets"), an.trace.meta
    end = float(an.trace.packets["time"].max()) if an.trace.packets.height else None  # type: ignore[arg-type]
    caplen = "caplen" in pk.columns and pk["caplen"].null_count() < pk.height
    n_data = n_cut = 0
    first = None
    if caplen:
        data = pl.col("payload") > 0
        cut = data & (pl.col("caplen") < pl.col("size"))
        n_data, n_cut, first = pk.lazy().select(data.sum(), cut.sum().alias("_c"),
                                                pl.col("time").filter(cut).min()).collect().row(0)
    fl = an.flows
    vp = vantage_kinds(fl["flow"].to_list(), fl["vantage_point"].to_list()) if "vantage_point" in fl.columns else ()
    return TraceFacts(warnings=an.trace.warnings, packets=an.trace.packets.height, last_t=end, caplen=caplen,
                      data=int(n_data or 0), data_cut=int(n_cut or 0), cut_t=None if first is None else float(first),
                      vantage=vp, mixed=meta.get("vantage_point") == "mixed",
                      segment_size=meta.get("segment_size"))


def _data_rows(an: Analysis) -> list[dict[str, Any]]:
    fl = an.flows
    if fl.is_empty() or "unique_bytes" not in fl.columns:
        return []
    return data_rows(fl.filter(pl.col("unique_bytes").fill_null(0) > 0).to_dicts())


def explain(an: Analysis, *, link_bps: float | None = None, parts: Parts | None = None) -> list[Sentence]:
    """The account of a whole trace: warnings first, then per data direction in flow order.

    The rules are :func:`tracekit.explain_account.account`'s, fed the analysis' frames
    (:meth:`tracekit.explain_parts.Parts.facts`), as the streamed summary feeds them too.

    Args:
        an: The analysis.
        link_bps: The bottleneck's rate in bit/s, when known (``--link-rate``, run.json).
        parts: ``an``'s frames split by direction, when the caller shares them (``analyze --json``).

    Returns:
        The sentences, in reading order.
    """
    parts = Parts(an) if parts is None else parts
    return account(_trace_facts(an), _data_rows(an), parts.facts, link_bps=link_bps) + _fairness_tool(an)


#: FlowMonitor / NetSim per-flow totals whose mean packet is below this carry ACKs only (40–60 B).
_ACK_ONLY_BYTES = 200.0


def _fairness_tool(an: Analysis) -> list[Sentence]:
    """Jain's index over the tool's per-flow throughput (FlowMonitor, NetSim; captures have none)."""
    out: list[Sentence] = []
    sm = an.trace.samples
    if sm.is_empty():
        return out
    tp = sm.filter(pl.col("metric") == "throughput", pl.col("unit") == "bps", pl.col("flow").is_not_null())
    if tp.is_empty() or tp.group_by("flow").len()["len"].max() != 1:
        return out  # a time series per flow, not totals
    size = sm.filter(pl.col("metric").is_in(["rx_bytes", "rx_packets"]), pl.col("flow").is_not_null()).pivot(
        "metric", index="flow", values="value", aggregate_function="first") if "rx_packets" in sm["metric"] else None
    if size is None or not {"rx_bytes", "rx_packets"} <= set(size.columns):
        return out  # per-application tables (NetSim) mix applications of different kinds: no index
    data = size.filter(pl.col("rx_bytes") >= _ACK_ONLY_BYTES * pl.col("rx_packets"))["flow"]
    tp = tp.filter(pl.col("flow").is_in(data.implode()))
    x = [math.nan if v is None else float(v) for v in tp["value"].to_list()]
    if len(x) >= 2 and any(v > 0 for v in x):
        j, t = jain(x), float(tp["time"].max())  # type: ignore[arg-type]
        low, high = np_extreme(x, min), np_extreme(x, max)
        out.append(say("fairness_tool", {"flows": f"{len(x):,}", "time": numfmt.at(t), "jain": f"{j:.3f}",
                                         "low": numfmt.rate(low), "high": numfmt.rate(high)},
                       {"flows": len(x), "jain": j, "time": t, "low_bps": low, "high_bps": high}, time=t))
    return out


def summaries(an: Analysis, sentences: list[Sentence], *, link_bps: float | None = None) -> list[Sentence]:
    """One line per data direction for under the flows table."""
    out = []
    for row in _data_rows(an):
        flow, d = int(row["flow"]), int(row["dir"])
        mine = [s for s in sentences if s.flow == flow and s.dir == d]
        lim = next((s for s in mine if s.kind.startswith("limit_")), None)
        limit_part = numfmt.DASH
        if lim is not None and lim.kind == "limit_unseen":
            limit_part = CLAUSES["limit_unseen"]
        elif lim is not None:
            key = lim.kind.split("_", 1)[1]
            limit_part = CLAUSES[f"limit_{key}"].format(share=numfmt.pct(lim.values[f"{key}_share"]))
        g = row.get("goodput_bps")
        link_part = (CLAUSES["link_part"].format(share=numfmt.pct(g / link_bps), link=numfmt.rate(link_bps))
                     if g is not None and link_bps else "")
        nloss = int(row.get("loss_events") or 0)
        nst = int(row.get("stall_count") or 0)
        out.append(say("summary", {"flow": str(flow), "dir": str(d), "goodput": numfmt.rate(g), "link_part": link_part,
                                   "limit_part": limit_part, "losses": numfmt.count(nloss, "loss event"),
                                   "stalls": numfmt.count(nst, "stall")},
                       {"goodput_bps": g, "link_bps": link_bps, "loss_events": nloss, "stalls": nst},
                       time=row.get("start"), flow=flow, dir=d))
    return out


def cwnd_reductions(an: Analysis, flow: int, d: int, end: float | None = None,
                    parts: Parts | None = None) -> int | None:
    """cwnd reductions (loss events) once congestion avoidance has begun, up to ``end`` (the last data).

    The tpWindow lab's "largest window without oscillation" is the largest window whose run
    scores 0. Slow start may end in an overshoot whose recovery takes more than one reduction
    (Reno: fast recovery, then a timeout); the count starts when congestion avoidance first
    begins, after that recovery. Reductions after the last data segment (ns-2 restarts an idle
    sender's window) are not oscillation and are left out. None when the direction has no cwnd series.
    """
    from tracekit._flowrows import reductions_in_ca  # (the rule in plain values, the streamed summary's too)

    s = (parts if parts is not None else Parts(an)).series(flow, d)
    return reductions_in_ca(s.rows, s.losses.tolist(), s.ca_start, end)
