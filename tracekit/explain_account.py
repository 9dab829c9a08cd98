"""The account in words over plain values, whole: the trace's warnings, then per data direction its
opening, events (:mod:`tracekit.explain_rules`), limit and rates, then fairness.

:func:`account` is the one implementation both feeds call: :func:`tracekit.explain.explain` (an
analysis' frames) and :func:`tracekit._streamexplain.explain_from_stream` (the streamed summary).
No polars, no numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tracekit import numfmt
from tracekit._shared import competes
from tracekit.explain_rules import (
    DirFacts,
    Fmt,
    Resent,
    Story,
    TraceFacts,
    below_one_segment,
    far,
    far_losses,
    fills_rwnd,
    jain,
    losses,
    np_extreme,
    slow_starts,
    stalls,
)
from tracekit.phrases import CLAUSES, Sentence, say

__all__ = ["NOTES", "account", "bbr", "data_rows", "fairness", "limit", "lost_syn", "opening", "rates", "told_rows",
           "unfilled", "vantage_kinds", "warnings"]


def opening(row: dict[str, Any], flow: int, d: int) -> Sentence | None:
    """The initial window and, where a SYN was seen, window scaling (RFC 7323 §2) and the largest window."""
    iw, iwb = row.get("init_window_segments"), row.get("init_window_bytes")
    if iw is None or iwb is None:
        return None
    # the first flight: the first data byte (``start`` is the SYN, a round trip or a SYN timeout earlier)
    t = row["start"] if row.get("data_start") is None else row["data_start"]
    shown = {"time": numfmt.at(t), "iw": numfmt.count(int(iw), "segment"), "iw_bytes": numfmt.nbytes(iwb),
             "wscale": str(row.get("wscale")), "rwnd": numfmt.nbytes(row.get("max_rwnd_bytes"))}
    vals = {"time": t, "init_window_segments": iw, "init_window_bytes": iwb,
            "window_scaling": row.get("window_scaling"), "wscale": row.get("wscale"),
            "max_rwnd_bytes": row.get("max_rwnd_bytes")}
    if row.get("mss") is None or row.get("max_rwnd_bytes") is None:  # no SYN seen (ns-2's one-way TCP)
        kind = "start_iw"
    else:
        kind = "start_ws" if row.get("window_scaling") and row.get("wscale") is not None else "start_nows"
    if kind == "start_ws":
        shown["wscale"] = f"{int(row['wscale'])}"
    shown["first"] = CLAUSES["first_iw"].format(iw=shown["iw"], iw_bytes=shown["iw_bytes"])
    seen = True
    if row.get("vantage_point") == "receiver":
        # the initial window counts what was sent before the first ACK of data arrived (tcptrace's); a
        # receiver's first ACK leaves as the first segments arrive (Linux's quick ACK; RFC 9293 §3.8.6.3
        # allows no delay past 0.5 s), before the rest of the flight reaches it, so it is not seen there
        shown["first"] = CLAUSES["first_receiver"].format(iw=shown["iw"], iw_bytes=shown["iw_bytes"])
        seen = False
    elif kind != "start_iw":
        # a first flight under one full segment: cwnd starts at 1 SMSS at least (RFC 5681 §3.1; RFC 6928:
        # 10), so the sender had no more (iperf3's 37-byte cookie), and no initial window is seen
        # ... nor one that filled the largest window the receiver advertised: the receiver held it
        short, held = below_one_segment(iwb, row["mss"]), fills_rwnd(iwb, row["mss"], row["max_rwnd_bytes"])
        seen = not (short or held)
        if short:
            shown["first"] = CLAUSES["first_short"].format(iw_bytes=shown["iw_bytes"], mss=numfmt.nbytes(row["mss"]))
        elif held:
            shown["first"] = CLAUSES["first_rwnd"].format(**shown)
    if kind != "start_iw" or not seen:
        vals["init_window_seen"] = seen
    return say(kind, shown, vals, time=t, flow=flow, dir=d)


def lost_syn(row: dict[str, Any], rt: Resent, flow: int, d: int) -> Sentence | None:
    """The direction's SYN sent again: a retransmission before its first data byte can only be its SYN
    (or SYN-ACK), re-sent after a timeout (RFC 6298 §2.1, §5.7), which delays every byte after it."""
    # (``handshake_s``: the connection's first SYN to the direction's first data byte)
    wait, first = row.get("handshake_s"), row.get("data_start")
    if wait is None or first is None or not (rt.n and rt.t0 < first):
        return None
    # (direction 0 opened the connection: the other direction's SYN is the SYN-ACK)
    shown = {"syn": "SYN" if d == 0 else "SYN-ACK", "time": numfmt.at(rt.t0), "first": numfmt.at(first),
             "delay": numfmt.seconds(wait)}
    return say("syn_resent", shown, {"time": rt.t0, "data_start": first, "handshake_s": wait},
               time=rt.t0, flow=flow, dir=d)


def bbr(row: dict[str, Any], flow: int, d: int) -> Sentence | None:
    """Where the sender's kernel log names BBR (``kernel_cc``): its window is no RFC 5681 window. BBR
    paces at its bottleneck-rate estimate and caps cwnd near twice the bandwidth-delay product, and a
    loss does not halve it, so the slow starts and recoveries told are the estimate's reading of what
    was in flight, not BBR's states (Startup, Drain, ProbeBW, ProbeRTT)."""
    cc = row.get("kernel_cc")
    if not isinstance(cc, str) or not cc.lower().startswith("bbr"):
        return None
    return say("cc_bbr", {"cc": cc.upper()}, {"kernel_cc": cc}, time=row.get("data_start"), flow=flow, dir=d)


def _shares(row: dict[str, Any]) -> dict[str, float] | None:
    got = {k: row.get(f"limited_{k}_share") for k in ("cwnd", "rwnd", "app")}
    if any(v is None for v in got.values()):
        return None
    vals = {k: float(v) for k, v in got.items()}  # type: ignore[arg-type]
    vals["none"] = max(0.0, 1.0 - sum(vals.values()))
    return vals


def limit(row: dict[str, Any], flow: int, d: int) -> Sentence | None:
    """What held the sender back, with each share (flows' ``limited_*_share``); at the receiver, that it is
    not seen there (:func:`tracekit._flowrows.sender_limits`)."""
    if row.get("vantage_point") == "receiver":
        return say("limit_unseen", {}, {}, time=row.get("start"), flow=flow, dir=d)
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


#: Reader warnings that say what a run held, not that a number may be off: several packet files (each
#: connection counted once, from one capture), files that are not traces, non-packet lines of an ns-2
#: trace, and a file read through tshark. The warnings list has them; the account does not count them.
NOTES = frozenset({"W-MULTIPLE-PACKET-FILES", "W-SKIPPED-FILE", "W-SKIPPED", "W-SLOW-PATH"})


def warnings(t: TraceFacts) -> list[Sentence]:
    """Sentences for what changes the reading: truncation, headers only, several vantage points, others."""
    out: list[Sentence] = []
    ws, end = t.warnings, t.last_t
    trunc = sum(int(w.get("count", 1)) for w in ws if w.get("code") == "W-TRUNCATED")
    if trunc:
        out.append(say("warn_truncated", {"count": f"{trunc:,}", "end": numfmt.at(end)},
                       {"count": trunc, "end": end}, time=end))
    # a capture's times going back (frame order kept): a jitter of a few µs (fast links stamped on several
    # CPUs) or a broken file; its warning names the largest step and its frame (src/capture/timeback.rs), so
    # the reader can tell. (A simulator's reader sorts its events, or does not measure the step: counted below.)
    back = [w for w in ws if w.get("code") == "W-NONMONOTONIC" and w.get("frame") is not None]
    for w in back:
        n = int(w.get("count", 1))
        out.append(say("warn_time_back", {"count": f"{n:,}", "message": str(w.get("message", ""))},
                       {"count": n, "frame": w.get("frame")}))
    other = sum(int(w.get("count", 1)) for w in ws
                if w.get("code") != "W-TRUNCATED" and w.get("code") not in NOTES and w not in back)
    if other:
        out.append(say("warn_other", {"count": f"{other:,}", "end": numfmt.at(end)},
                       {"count": other, "end": end}, time=end))
    if t.caplen and t.data and t.data_cut / t.data > 0.5 and t.cut_t is not None:
        share, at = t.data_cut / t.data, float(t.cut_t)
        out.append(say("warn_headers_only", {"share": numfmt.pct(share), "time": numfmt.at(at)},
                       {"share": share, "time": at}, time=at))
    if t.mixed or len(t.vantage) > 1:
        n = max(len(t.vantage), 2)
        # which connections were seen where, so the reader knows which stories are the sender's
        where = "; ".join(f"{k}: {_flow_ids(ids)}" for k, ids in t.vantage)
        out.append(say("warn_vantage", {"count": f"{n:,}", "where": f" ({where})" if len(t.vantage) > 1 else ""},
                       {"count": n, "points": {k: list(ids) for k, ids in t.vantage}}))
    return out


def vantage_kinds(flows: list[Any], points: list[Any]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Each vantage point among the flows' rows (nulls left out) with its connections, ascending; the points
    in the order of their first connection."""
    seen: dict[str, set[int]] = {}
    for f, p in zip(flows, points, strict=True):
        if p is not None:
            seen.setdefault(str(p), set()).add(int(f))
    kinds = sorted(seen.items(), key=lambda kv: min(kv[1]))
    return tuple((k, tuple(sorted(ids))) for k, ids in kinds)


#: Runs of connection ids named one by one in ``warn_vantage`` before "and N more".
_MAX_RUNS = 4


def _flow_ids(ids: tuple[int, ...]) -> str:
    """``flow 3``, ``flows 0–2, 7`` or ``flows 0–2, 4, 6, 8 and 5 more``: ascending ids, runs joined."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    text = [f"{a}" if a == b else (f"{a}, {b}" if b == a + 1 else f"{a}–{b}") for a, b in runs[:_MAX_RUNS]]
    rest = sum(b - a + 1 for a, b in runs[_MAX_RUNS:])
    more = f" and {rest:,} more" if rest else ""
    return ("flow " if len(ids) == 1 else "flows ") + ", ".join(text) + more


def data_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flows rows of the directions that carried data, by flow and direction."""
    got = [r for r in rows if (r.get("unique_bytes") or 0) > 0]
    return sorted(got, key=lambda r: (r["flow"], r["dir"]))


def fairness(rows: list[dict[str, Any]]) -> list[Sentence]:
    """Jain's index over the data directions that compete for the path (tracekit's goodput): those
    application-limited most of the time are left out and named (:func:`tracekit._shared.competes`)."""
    them: list[dict[str, Any]] = []
    idle: list[dict[str, Any]] = []
    for r in rows:
        if r.get("goodput_bps"):
            (them if competes(r.get("limited_app_share")) else idle).append(r)
    rows = them
    g = [float(r["goodput_bps"]) for r in rows]
    if len(g) < 2:
        return []
    t0, t1 = min(r["start"] for r in rows), max(r["end"] for r in rows)
    j, low, high = jain(g), np_extreme(g, min), np_extreme(g, max)
    left = ""
    if idle:
        names = ", ".join(f"{r['flow']}.{r['dir']}" for r in idle[:_MAX_RUNS])
        more = f" and {len(idle) - _MAX_RUNS:,} more" if len(idle) > _MAX_RUNS else ""
        left = CLAUSES["fairness_left"].format(names=names + more)
    return [say("fairness", {"flows": f"{len(g):,}", "time": numfmt.at(t0), "end": numfmt.at(t1),
                             "jain": f"{j:.3f}", "low": numfmt.rate(low), "high": numfmt.rate(high), "left": left},
                {"flows": len(g), "jain": j, "time": t0, "end": t1, "low_bps": low, "high_bps": high,
                 "left_out": len(idle)}, time=t0)]


#: Data directions told one by one (the largest by unique bytes); the others in one sentence. A class's lab has a
#: handful; a field capture may have thousands, whose account no one reads and which took 10 s for 100,000.
MAX_TOLD = 50


def told_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The data directions the account tells one by one (``rows``: :func:`data_rows`): all of them, or the
    :data:`MAX_TOLD` with the most unique bytes (ties: flow order), in flow order."""
    if len(rows) <= MAX_TOLD:
        return rows
    order = sorted(range(len(rows)), key=lambda i: (-(rows[i].get("unique_bytes") or 0), i))
    return [rows[i] for i in sorted(order[:MAX_TOLD])]


def _untold(rows: list[dict[str, Any]], told: list[dict[str, Any]]) -> list[Sentence]:
    """One sentence for the data directions not told one by one (none when all were)."""
    n = len(rows) - len(told)
    if n <= 0:
        return []
    total = sum(r.get("unique_bytes") or 0 for r in rows)
    rest = total - sum(r.get("unique_bytes") or 0 for r in told)
    share = rest / total if total else 0.0
    return [say("directions_more", {"count": f"{n:,}", "told": f"{len(told):,}", "bytes": numfmt.nbytes(rest),
                                    "share": numfmt.pct(share)},
                {"count": n, "told": len(told), "unique_bytes": rest, "share": share})]


def unfilled(row: dict[str, Any], s: Story) -> bool:
    """True when a direction's cwnd estimate never reached one full segment (``max_cwnd_bytes`` below its
    ``mss``): cwnd is never below one full-sized segment (RFC 5681 §3.1), so the estimate is bounded by what
    the application wrote (an iperf3 control connection), and its slow starts and reductions tell nothing."""
    mss, top = row.get("mss"), row.get("max_cwnd_bytes")
    est = s.empty or s.source == "estimate"
    return bool(est and top is not None and below_one_segment(top, mss))


def account(t: TraceFacts, rows: list[dict[str, Any]], facts: Callable[[int, int], DirFacts], *,
            link_bps: float | None = None) -> list[Sentence]:
    """The account of a whole trace but the tool's fairness: warnings first, then per data direction told
    (:func:`told_rows`) in flow order (``rows``: :func:`data_rows`; ``facts``: a direction's :class:`DirFacts`,
    asked only for those), the others in one sentence, then fairness over all of them."""
    out = warnings(t)
    if not rows:
        out.append(say("no_data", {"packets": f"{t.packets:,}"}, {"packets": t.packets}))
        return out
    f = Fmt(t.segment_size)
    told = told_rows(rows)
    for row in told:
        flow, d = int(row["flow"]), int(row["dir"])
        out.append(say("overview", {"flow": str(flow), "dir": str(d), "bytes": numfmt.nbytes(row["unique_bytes"]),
                                    "start": numfmt.at(row["start"]), "end": numfmt.at(row["end"]),
                                    "duration": numfmt.seconds(row["duration"]),
                                    "goodput": numfmt.rate(row.get("goodput_bps"))},
                       {k: row.get(k) for k in ("unique_bytes", "start", "end", "duration", "goodput_bps")},
                       time=row["start"], flow=flow, dir=d))
        x = facts(flow, d)
        out += [s for s in (lost_syn(row, x.resent, flow, d), opening(row, flow, d)) if s is not None]
        if far(row, x.story):
            body = far_losses(x, row, flow, d) + stalls(x, flow, d)
        elif unfilled(row, x.story):
            mss, top = row["mss"], row["max_cwnd_bytes"]
            body = [say("window_unfilled", {"mss": numfmt.nbytes(mss), "largest": f.window(top)},
                        {"mss_bytes": mss, "max_cwnd_bytes": top}, time=row.get("start"), flow=flow, dir=d)]
            body += stalls(x, flow, d)
        else:
            body = (slow_starts(x.story, f, flow, d, row.get("mss"), row.get("max_rwnd_bytes"))
                    + losses(x, f, flow, d, row.get("rtt_min_s"), row.get("data_start")))
            # (a BBR sender's window events, where any are told, are read in RFC 5681's words)
            body += [s for s in [bbr(row, flow, d)] if s is not None and body] + stalls(x, flow, d)
        out += sorted(body, key=lambda s: (s.time if s.time is not None else math.inf))
        lim = limit(row, flow, d)
        if lim is not None:
            out.append(lim)
        out += rates(row, link_bps, flow, d)
    return out + _untold(rows, told) + fairness(rows)
