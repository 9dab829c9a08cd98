"""What happened, in words: a deterministic account of each connection direction that carried data.

Pure (no I/O): everything comes from an :class:`~tracekit.analysis.Analysis`'s frames. Every
sentence is one entry of :data:`tracekit.phrases.TEMPLATES` (documented in docs/explain.md) filled with numbers
formatted by :mod:`tracekit.numfmt`, so no text of the input (a file name, an OPNET label, an
address) can reach a phrase: connections are named by their flow number and direction only.

Each :class:`Sentence` carries its ``kind`` (the template's key), the ``time`` it is about and the
raw ``values`` (SI units), as ``analyze --json`` writes them under ``explain``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracekit import numfmt
from tracekit._runinfo import rate_from_text
from tracekit.explain_parts import MAX_EACH, RECOVERY, RUN_ENDS, Parts, Series, frame
from tracekit.phrases import CLAUSES, TEMPLATES, Sentence, say

__all__ = ["CLAUSES", "TEMPLATES", "Sentence", "cwnd_reductions", "explain", "rate_from_text", "say", "summaries"]

if TYPE_CHECKING:
    from tracekit.analysis import Analysis


class _Fmt:
    """Formats a direction's numbers: bytes with packets beside when the segment size is known."""

    def __init__(self, segment_size: int | None) -> None:
        self.seg = segment_size

    def window(self, b: float | None) -> str:
        if b is None or not math.isfinite(b):
            return numfmt.DASH
        if self.seg:
            return f"{numfmt.packets(b / self.seg)} ({numfmt.nbytes(b)})"
        return numfmt.nbytes(b)

    def segs(self, n: int) -> str:
        return f"{n:,} segment{'' if n == 1 else 's'}"


def slow_starts(s: Series, f: _Fmt, flow: int, d: int) -> list[Sentence]:
    """One sentence per slow-start run that grew cwnd (runs end at a loss or a phase change):
    the first :data:`MAX_EACH` the core found (:class:`tracekit.explain_parts.Runs`)."""
    r = s.runs
    if s.empty or r is None:
        return []
    out: list[Sentence] = []
    for i in range(r.start.size):
        kind, start, top, at, end = RUN_ENDS[int(r.end[i])], r.start[i], r.top[i], r.top_t[i], r.end_t[i]
        vals = {"from_cwnd_bytes": start, "cwnd_bytes": top, "time": at, "end": end}
        if f.seg:
            vals["cwnd_packets"] = top / f.seg
        shown = {"from_cwnd": f.window(start), "cwnd": f.window(top), "time": numfmt.at(at), "end": numfmt.at(end)}
        out.append(say(kind, shown, vals, time=at, flow=flow, dir=d))
    return out


def losses(parts: Parts, s: Series, f: _Fmt, flow: int, d: int, tol_s: float | None = None) -> list[Sentence]:
    """One sentence per loss event: what was retransmitted (and dropped) and how the sender recovered.

    ``tol_s`` is the direction's minimum RTT, the reach :func:`tracekit.analysis.cwnd.reductions`
    gives loss evidence: an event it backs whose own span (up to the next event) holds no
    retransmission is told with the ones within that reach, never as a loss with none.
    """
    times = s.losses
    if times.size == 0 or s.empty:
        return []
    c = s.cuts
    if c is None:
        return []
    rt = parts.get("retransmissions", flow, d).sort("time")
    rtt_t, rt_kind = rt["time"].to_numpy(), rt["kind"].to_numpy()
    drops = parts.get("drops", flow, d)["time"].to_numpy()
    out: list[Sentence] = []
    prev = -math.inf
    # each event reaches back to the row before it (``tol``); its retransmissions run up to where the next one's reach
    for i, te in enumerate(times[:MAX_EACH]):
        tol, prev_t = float(c.tol[i]), c.prev_t[i]
        hi = times[i + 1] - c.tol[i + 1] if i + 1 < times.size else math.inf
        sel = (rtt_t >= te - tol) & (rtt_t < hi)
        backed = s.backed is None or bool(s.backed[i])
        if backed and not sel.any() and tol_s is not None and math.isfinite(tol_s) and not np.isnan(prev_t):
            sel = (rtt_t >= prev_t - tol_s) & (rtt_t <= te + tol_s)  # (NaN prev_t: the first row)
        kinds = rt_kind[sel]
        before, after = float(c.before[i]), float(c.after[i])
        first = kinds[0] if kinds.size else None
        small = after <= max(2.0 * (f.seg or 0), 0.3 * before)
        if not backed:
            # no loss evidence (tracekit.analysis.cwnd.reductions): re-sends the receiver already had
            # (D-SACK, RFC 2883; a sender undoes such a reduction, RFC 3708), or no re-send at all;
            # the re-sends told are the unneeded ones it starts with (later ones back the next event)
            kind = "reduction_spurious" if first == "spurious" else "reduction_no_loss"
            if first == "spurious":
                n_sp = int(np.argmin(kinds == "spurious")) if (kinds != "spurious").any() else kinds.size
                sel = sel & (np.cumsum(sel) <= n_sp)
                kinds = rt_kind[sel]
        elif first == "rto" and small:
            kind = "loss_timeout"
        elif c.phase[i] == RECOVERY or (first == "fast" and not small):
            kind = "loss_fast_recovery"
        elif first == "fast" and small:
            kind = "loss_tahoe"
        else:
            kind = "loss_other"
        nd = int(((drops >= prev) & (drops < te + tol)).sum()) if drops.size else 0
        vals = {"time": te, "retransmitted": int(sel.sum()), "retrans_rto": int((kinds == "rto").sum()),
                "retrans_fast": int((kinds == "fast").sum()), "drops": nd if drops.size else None,
                "cwnd_before_bytes": before, "cwnd_after_bytes": after}
        dropped = CLAUSES["dropped"].format(drops=f.segs(nd)) if nd else ""
        shown = {"time": numfmt.at(te), "retrans": f.segs(int(sel.sum())), "dropped": dropped,
                 "before": f.window(before), "after": f.window(after)}
        out.append(say(kind, shown, vals, time=te, flow=flow, dir=d))
        prev = te + tol
    if times.size > MAX_EACH:
        lossy = np.ones(times.size, dtype=bool) if s.backed is None else s.backed.astype(bool)
        for kind, rest in (("losses_more", times[MAX_EACH:][lossy[MAX_EACH:]]),
                           ("reductions_more", times[MAX_EACH:][~lossy[MAX_EACH:]])):
            if rest.size:
                out.append(say(kind, {"count": f"{rest.size:,}", "time": numfmt.at(rest[0]),
                                      "end": numfmt.at(rest[-1])},
                               {"count": int(rest.size), "time": rest[0], "end": rest[-1]}, time=rest[0],
                               flow=flow, dir=d))
    return out


#: Vantage points whose estimated cwnd is not the sender's (tracekit.analysis.vantage), as told in the phrase.
_FAR = {"middle": "in the middle of the path", "receiver": "at the receiver"}


def _far(row: dict[str, Any], s: Series) -> bool:
    """True when the cwnd would be an estimate made away from the sender (not the sender's window)."""
    est = s.empty or s.source == "estimate"
    return est and row.get("vantage_point") in _FAR


def far_losses(parts: Parts, row: dict[str, Any], flow: int, d: int) -> list[Sentence]:
    """Retransmissions counted only, for a direction seen away from its sender."""
    rt = parts.get("retransmissions", flow, d)
    if rt.is_empty():
        return []
    t0, t1 = float(rt["time"].min()), float(rt["time"].max())  # type: ignore[arg-type]
    fast, rto = int((rt["kind"] == "fast").sum()), int((rt["kind"] == "rto").sum())
    where = str(row.get("vantage_point"))
    shown = {"retrans": f"{rt.height:,} segment{'' if rt.height == 1 else 's'}", "time": numfmt.at(t0),
             "end": numfmt.at(t1), "fast": f"{fast:,}", "rto": f"{rto:,}", "where": _FAR[where]}
    return [say("losses_far", shown, {"retransmitted": rt.height, "time": t0, "end": t1, "retrans_fast": fast,
                                      "retrans_rto": rto, "vantage_point": where}, time=t0, flow=flow, dir=d)]


def stalls(parts: Parts, flow: int, d: int) -> list[Sentence]:
    """Stalls one by one (zero-window ones in one sentence with the zero-window advertisements)."""
    st = parts.get("stalls", flow, d).sort("start")
    out: list[Sentence] = []
    zw = st.filter(pl.col("cause") == "zero_window")
    ads = parts.get("zero_windows", flow, 1 - d)  # the other direction's advertisements
    if zw.height or ads.height:
        t0 = min(x for x in (zw["start"].min() if zw.height else None, ads["time"].min() if ads.height else None)
                 if x is not None)
        t1 = max(x for x in (zw["end"].max() if zw.height else None, ads["time"].max() if ads.height else None)
                 if x is not None)
        total = float(zw["duration"].sum()) if zw.height else 0.0
        out.append(say("zero_window", {"count": f"{ads.height:,}", "time": numfmt.at(t0), "end": numfmt.at(t1),
                                       "stalls": f"{zw.height:,}", "duration": numfmt.seconds(total)},
                       {"count": ads.height, "time": t0, "end": t1, "stalls": zw.height, "duration_s": total},
                       time=t0, flow=flow, dir=d))  # type: ignore[arg-type]  # t0: a float time column's min
    other = st.filter(pl.col("cause") != "zero_window")
    for r in other.head(MAX_EACH).iter_rows(named=True):
        cause = r["cause"] if f"stall_{r['cause']}" in TEMPLATES else "unknown"
        out.append(say(f"stall_{cause}", {"duration": numfmt.seconds(r["duration"]), "time": numfmt.at(r["start"]),
                                          "end": numfmt.at(r["end"])},
                       {"time": r["start"], "end": r["end"], "duration_s": r["duration"], "cause": cause},
                       time=r["start"], flow=flow, dir=d))
    rest = other.slice(MAX_EACH)
    if rest.height:
        tot = float(rest["duration"].sum())
        out.append(say("stalls_more", {"count": f"{rest.height:,}", "time": numfmt.at(rest["start"][0]),
                                       "end": numfmt.at(rest["end"][-1]), "duration": numfmt.seconds(tot)},
                       {"count": rest.height, "time": rest["start"][0], "end": rest["end"][-1], "duration_s": tot},
                       time=rest["start"][0], flow=flow, dir=d))
    return out


def opening(row: dict[str, Any], flow: int, d: int) -> Sentence | None:
    """The initial window and, where a SYN was seen, window scaling (RFC 7323 §2) and the largest window."""
    iw, iwb = row.get("init_window_segments"), row.get("init_window_bytes")
    if iw is None or iwb is None:
        return None
    shown = {"time": numfmt.at(row["start"]), "iw": numfmt.count(int(iw), "segment"), "iw_bytes": numfmt.nbytes(iwb),
             "wscale": str(row.get("wscale")), "rwnd": numfmt.nbytes(row.get("max_rwnd_bytes"))}
    vals = {"time": row["start"], "init_window_segments": iw, "init_window_bytes": iwb,
            "window_scaling": row.get("window_scaling"), "wscale": row.get("wscale"),
            "max_rwnd_bytes": row.get("max_rwnd_bytes")}
    if row.get("mss") is None or row.get("max_rwnd_bytes") is None:  # no SYN seen (ns-2's one-way TCP)
        kind = "start_iw"
    else:
        kind = "start_ws" if row.get("window_scaling") and row.get("wscale") is not None else "start_nows"
    if kind == "start_ws":
        shown["wscale"] = f"{int(row['wscale'])}"
    return say(kind, shown, vals, time=row["start"], flow=flow, dir=d)


def _shares(row: dict[str, Any]) -> dict[str, float] | None:
    got = {k: row.get(f"limited_{k}_share") for k in ("cwnd", "rwnd", "app")}
    if any(v is None for v in got.values()):
        return None
    vals = {k: float(v) for k, v in got.items()}  # type: ignore[arg-type]
    vals["none"] = max(0.0, 1.0 - sum(vals.values()))
    return vals


def limit(row: dict[str, Any], flow: int, d: int) -> Sentence | None:
    """What held the sender back, with each share (flows' ``limited_*_share``)."""
    sh = _shares(row)
    if sh is None:
        return None
    top = max(("cwnd", "rwnd", "app", "none"), key=lambda k: sh[k])
    shown = {f"{k}_share": numfmt.pct(v) for k, v in sh.items()}
    return say(f"limit_{top}", shown, {f"{k}_share": v for k, v in sh.items()}, time=row.get("start"),
               flow=flow, dir=d)


def rates(row: dict[str, Any], link_bps: float | None, flow: int, d: int) -> list[Sentence]:
    """Goodput against the link rate and against the Mathis and PFTK models."""
    out: list[Sentence] = []
    g = row.get("goodput_bps")
    end = row.get("end")
    if g is not None and link_bps:
        out.append(say("goodput_link", {"goodput": numfmt.rate(g), "share": numfmt.pct(g / link_bps),
                                        "link": numfmt.rate(link_bps)},
                       {"goodput_bps": g, "link_bps": link_bps, "share": g / link_bps}, time=end, flow=flow, dir=d))
    m, p, lr = row.get("mathis_bps"), row.get("padhye_bps"), row.get("loss_rate")
    if g is not None and m is not None and lr:
        vals = {"goodput_bps": g, "mathis_bps": m, "padhye_bps": p, "loss_rate": lr}
        shown = {"goodput": numfmt.rate(g), "mathis": numfmt.rate(m), "padhye": numfmt.rate(p),
                 "loss_rate": numfmt.pct(lr)}
        out.append(say("models" if p is not None else "model_mathis", shown, vals, time=end, flow=flow, dir=d))
    return out


def warnings(an: Analysis) -> list[Sentence]:
    """Sentences for what changes the reading: truncation, headers only, several vantage points, others."""
    out: list[Sentence] = []
    ws = an.trace.warnings
    end = float(an.trace.packets["time"].max()) if an.trace.packets.height else None  # type: ignore[arg-type]
    trunc = sum(int(w.get("count", 1)) for w in ws if w.get("code") == "W-TRUNCATED")
    if trunc:
        out.append(say("warn_truncated", {"count": f"{trunc:,}", "end": numfmt.at(end)},
                       {"count": trunc, "end": end}, time=end))
    other = sum(int(w.get("count", 1)) for w in ws if w.get("code") != "W-TRUNCATED")
    if other:
        out.append(say("warn_other", {"count": f"{other:,}", "end": numfmt.at(end)},
                       {"count": other, "end": end}, time=end))
    pk = frame(an, "packets")
    if "caplen" in pk.columns and pk["caplen"].null_count() < pk.height:
        data = pl.col("payload") > 0
        cut = data & (pl.col("caplen") < pl.col("size"))
        n_data, n_cut, first = pk.lazy().select(data.sum(), cut.sum().alias("_c"),
                                                pl.col("time").filter(cut).min()).collect().row(0)
        if n_data and n_cut / n_data > 0.5:
            t = float(first)
            out.append(say("warn_headers_only", {"share": numfmt.pct(n_cut / n_data), "time": numfmt.at(t)},
                           {"share": n_cut / n_data, "time": t}, time=t))
    vp = an.flows["vantage_point"].drop_nulls().unique().to_list() if "vantage_point" in an.flows.columns else []
    if an.trace.meta.get("vantage_point") == "mixed" or len(vp) > 1:
        out.append(say("warn_vantage", {"count": f"{max(len(vp), 2):,}"}, {"count": max(len(vp), 2)}))
    return out


def _data_rows(an: Analysis) -> list[dict[str, Any]]:
    fl = an.flows
    if fl.is_empty() or "unique_bytes" not in fl.columns:
        return []
    return fl.filter(pl.col("unique_bytes").fill_null(0) > 0).sort("flow", "dir").to_dicts()


def explain(an: Analysis, *, link_bps: float | None = None, parts: Parts | None = None) -> list[Sentence]:
    """The account of a whole trace: warnings first, then per data direction in flow order.

    Args:
        an: The analysis.
        link_bps: The bottleneck's rate in bit/s, when known (``--link-rate``, run.json).
        parts: ``an``'s frames split by direction, when the caller shares them (``analyze --json``).

    Returns:
        The sentences, in reading order.
    """
    out = warnings(an)
    rows = _data_rows(an)
    if not rows:
        out.append(say("no_data", {"packets": f"{an.trace.packets.height:,}"}, {"packets": an.trace.packets.height}))
        return out + fairness(an, rows)
    f = _Fmt(an.trace.meta.get("segment_size"))
    parts = Parts(an) if parts is None else parts
    for row in rows:
        flow, d = int(row["flow"]), int(row["dir"])
        out.append(say("overview", {"flow": str(flow), "dir": str(d), "bytes": numfmt.nbytes(row["unique_bytes"]),
                                    "start": numfmt.at(row["start"]), "end": numfmt.at(row["end"]),
                                    "duration": numfmt.seconds(row["duration"]),
                                    "goodput": numfmt.rate(row.get("goodput_bps"))},
                       {k: row.get(k) for k in ("unique_bytes", "start", "end", "duration", "goodput_bps")},
                       time=row["start"], flow=flow, dir=d))
        first = opening(row, flow, d)
        if first is not None:
            out.append(first)
        s = parts.series(flow, d)
        if _far(row, s):
            body = far_losses(parts, row, flow, d) + stalls(parts, flow, d)
        else:
            body = (slow_starts(s, f, flow, d) + losses(parts, s, f, flow, d, row.get("rtt_min_s"))
                    + stalls(parts, flow, d))
        out += sorted(body, key=lambda s: (s.time if s.time is not None else math.inf))
        lim = limit(row, flow, d)
        if lim is not None:
            out.append(lim)
        out += rates(row, link_bps, flow, d)
    return out + fairness(an, rows)


def _jain(x: np.ndarray) -> float:
    """Jain, Chiu & Hawe (DEC-TR-301, 1984): (Σx)² / (n·Σx²)."""
    return float(x.sum() ** 2 / (x.size * (x**2).sum()))


#: FlowMonitor / NetSim per-flow totals whose mean packet is below this carry ACKs only (40–60 B).
_ACK_ONLY_BYTES = 200.0


def fairness(an: Analysis, rows: list[dict[str, Any]]) -> list[Sentence]:
    """Jain's index over the data directions (tracekit's goodput) and over the tool's per-flow throughput."""
    out: list[Sentence] = []
    g = np.array([r["goodput_bps"] for r in rows if r.get("goodput_bps")], dtype=float)
    if g.size >= 2:
        t0, t1 = min(r["start"] for r in rows), max(r["end"] for r in rows)
        j = _jain(g)
        out.append(say("fairness", {"flows": f"{g.size:,}", "time": numfmt.at(t0), "end": numfmt.at(t1),
                                    "jain": f"{j:.3f}", "low": numfmt.rate(g.min()), "high": numfmt.rate(g.max())},
                       {"flows": int(g.size), "jain": j, "time": t0, "end": t1, "low_bps": g.min(),
                        "high_bps": g.max()}, time=t0))
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
    x = tp["value"].to_numpy().astype(float)
    if x.size >= 2 and (x > 0).any():
        j, t = _jain(x), float(tp["time"].max())  # type: ignore[arg-type]
        out.append(say("fairness_tool", {"flows": f"{x.size:,}", "time": numfmt.at(t), "jain": f"{j:.3f}",
                                         "low": numfmt.rate(x.min()), "high": numfmt.rate(x.max())},
                       {"flows": int(x.size), "jain": j, "time": t, "low_bps": x.min(), "high_bps": x.max()}, time=t))
    return out


def summaries(an: Analysis, sentences: list[Sentence], *, link_bps: float | None = None) -> list[Sentence]:
    """One line per data direction for under the flows table."""
    out = []
    for row in _data_rows(an):
        flow, d = int(row["flow"]), int(row["dir"])
        mine = [s for s in sentences if s.flow == flow and s.dir == d]
        lim = next((s for s in mine if s.kind.startswith("limit_")), None)
        limit_part = numfmt.DASH
        if lim is not None:
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
