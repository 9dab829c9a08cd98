"""The account in words' rules (:mod:`tracekit.explain`) over plain values: one implementation, two feeds.

Each rule reads plain lists, floats and the small per-direction :class:`DirFacts` and per-trace
:class:`TraceFacts`, built either from an analysis' frames (:meth:`tracekit.explain_parts.Parts.facts`,
:func:`tracekit.explain.explain`) or from the streamed summary (:mod:`tracekit._streamexplain`,
``_core.stream_summary``). This module imports neither polars nor numpy. Sums over several
values follow the frames path's own order, so both feeds give every value bit for bit:
:func:`polars_sum` (a float column's ``sum``) and :func:`numpy_sum` (an array's ``sum``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tracekit import _core, _flowrows, numfmt
from tracekit.phrases import CLAUSES, TEMPLATES, Sentence, say

__all__ = ["CONGESTION_AVOIDANCE", "FAR", "MAX_EACH", "MAX_OPTIONS", "NO_STORY", "RECOVERY", "RUN_ENDS", "SLOW_START",
           "DirFacts", "Fmt", "Resent", "Story", "TraceFacts", "below_one_segment", "far", "far_losses", "fills_rwnd",
           "jain", "losses", "np_extreme", "numpy_sum", "polars_sum", "slow_starts", "stalls"]

#: Loss events, slow-start runs and stalls the account tells one by one; the rest in one sentence.
MAX_EACH: int = _core.CWND_STORY_CAP

#: Phase codes of the series rows (the schema's phase Enum's physical order; -1: none).
SLOW_START, CONGESTION_AVOIDANCE, RECOVERY = 0, 1, 2

#: How a told slow-start run ended (src/state/cwnd/story.rs ``END_*``).
RUN_ENDS = ("slow_start_open", "slow_start_loss", "slow_start_cut", "slow_start_ca")


@dataclass(frozen=True)
class Story:
    """A direction's cwnd series told as events (:class:`tracekit.explain_parts.Series` as lists).

    Attributes:
        rows: Rows of the series (0: none). source: ``trace`` or ``estimate`` (None: no series).
        losses: The reductions' times, ascending; backed: per reduction, loss evidence backs it (None: all).
        runs: The told slow-start runs: (from cwnd, top cwnd, top time, end code, end time).
        cuts: The first reductions' rows: (before, after, phase, tol, prev_t).
    """

    rows: int
    source: str | None
    losses: list[float]
    backed: list[bool] | None = None
    runs: list[tuple[float, float, float, int, float]] | None = None
    cuts: list[tuple[float, float, int, float, float]] | None = None

    @property
    def empty(self) -> bool:
        return self.rows == 0


NO_STORY = Story(0, None, [])


@dataclass(frozen=True)
class Resent:
    """A direction's retransmissions: how many, first and last times, how many fast and rto, and
    ``told`` (time, kind) sorted by time (stable): at least those inside the windows :func:`losses` reads."""

    n: int
    t0: float
    t1: float
    fast: int
    rto: int
    told: list[tuple[float, str]]


@dataclass(frozen=True)
class DirFacts:
    """What the account reads of one direction beside its flows row.

    Attributes:
        story: Its cwnd events. resent: Its retransmissions. drops: A simulator's drop times (captures: none).
        stalls: Its stalls (start, end, cause), by start.
        zero_ads: The other direction's zero-window advertisements: count, first and last times.
    """

    story: Story
    resent: Resent
    drops: list[float]
    stalls: list[tuple[float, float, str]]
    zero_ads: tuple[int, float, float]


@dataclass(frozen=True)
class TraceFacts:
    """What the warnings read of the whole trace.

    Attributes:
        warnings: The reader's warnings (``trace.meta["warnings"]``). packets: Its packets.
        last_t: The last packet time (None: no packet). caplen: A capture length is known.
        data, data_cut, cut_t: Data packets, those captured short of their size, the first such time.
        vantage: Each vantage point of the flows with its connections (``vantage_kinds``). mixed: The
            trace's own is ``mixed``.
        segment_size: The trace's segment size (``meta``).
    """

    warnings: list[dict[str, Any]]
    packets: int
    last_t: float | None
    caplen: bool
    data: int
    data_cut: int
    cut_t: float | None
    vantage: tuple[tuple[str, tuple[int, ...]], ...]
    mixed: bool
    segment_size: int | None


def polars_sum(xs: Sequence[float]) -> float:
    """``sum`` of a polars Float64 column holding ``xs`` (one chunk, no nulls), in its order: the first
    ``len % 128`` values one after another, the rest in blocks of 128 summed pairwise, each in 16 lanes."""
    rest = len(xs) % 128
    main = 0.0
    if len(xs) > rest:
        main = _pairwise_blocks(xs, rest, len(xs))
    tail = 0.0
    for x in xs[:rest]:
        tail += x
    return main + tail


def _pairwise_blocks(xs: Sequence[float], a: int, b: int) -> float:
    blocks = (b - a) // 128
    if blocks == 1:
        lanes = list(xs[a:a + 16])
        for k in range(a + 16, b, 16):
            for j in range(16):
                lanes[j] += xs[k + j]
        w = 16
        while w > 4:
            for j in range(w // 2):
                lanes[j] += lanes[w // 2 + j]
            w //= 2
        return (lanes[0] + lanes[2]) + (lanes[1] + lanes[3])
    mid = a + (blocks // 2) * 128
    return _pairwise_blocks(xs, a, mid) + _pairwise_blocks(xs, mid, b)


def numpy_sum(xs: Sequence[float]) -> float:
    """``numpy.sum`` of a float64 array holding ``xs``: numpy's pairwise summation (blocks of 128, 8 lanes)."""
    n = len(xs)
    if n < 8:
        s = 0.0
        for x in xs:
            s += x
        return s
    if n <= 128:
        r = list(xs[:8])
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += xs[i + j]
            i += 8
        s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for x in xs[i:]:
            s += x
        return s
    n2 = n // 2
    n2 -= n2 % 8
    return numpy_sum(xs[:n2]) + numpy_sum(xs[n2:])


def _least(xs: Sequence[float]) -> float:
    """The least of ``xs`` skipping NaN (polars' ``min``); NaN when nothing is left."""
    return min((x for x in xs if not math.isnan(x)), default=math.nan)


def jain(x: Sequence[float]) -> float:
    """Jain, Chiu & Hawe (DEC-TR-301, 1984): (Σx)² / (n·Σx²), summed as numpy sums an array."""
    return float(numpy_sum(x) ** 2 / (len(x) * numpy_sum([v * v for v in x])))


def np_extreme(x: Sequence[float], pick: Callable[[Sequence[float]], float]) -> float:
    """numpy's ``min``/``max`` of ``x``: NaN as soon as one value is NaN."""
    return math.nan if any(math.isnan(v) for v in x) else pick(x)


class Fmt:
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


#: Bytes of TCP options a segment may carry (RFC 9293 §3.1: a data offset of at most 15 words).
MAX_OPTIONS = 40


def below_one_segment(b: float, mss: float | None) -> bool:
    """Whether ``b`` bytes are less than one full-sized segment: under the MSS less the most options take
    (RFC 6691: options shrink a segment's data, e.g. 1,448 B with timestamps for an MSS of 1,460 B).
    False when the MSS is unknown or ``b`` is not a number."""
    return bool(mss) and math.isfinite(b) and b < mss - MAX_OPTIONS  # type: ignore[operator]


def fills_rwnd(b: float, mss: float | None, rwnd: float | None) -> bool:
    """Whether ``b`` bytes are within one segment of the largest window the receiver advertised: the
    receiver's window, not cwnd, held that flight (RFC 9293 §3.8.6: a sender sends no more than the offered
    window). False when the MSS or the window is unknown or ``b`` is not a number."""
    return bool(mss) and rwnd is not None and math.isfinite(b) and b + mss > rwnd  # type: ignore[operator]


def slow_starts(s: Story, f: Fmt, flow: int, d: int, mss: float | None = None,
                rwnd: float | None = None) -> list[Sentence]:
    """One sentence per slow-start run that grew cwnd (runs end at a loss or a phase change):
    the first :data:`MAX_EACH` the core found (``tracekit.explain_parts.Runs``).

    A run whose first value is under one full segment (``mss``) is told without it: cwnd is never below
    one full-sized segment (RFC 5681 §3.1), so an estimate there read what the application had written
    (iperf3's 37-byte cookie) or an empty pipe, and "from 37 B" or "from 0 B" would be no window. A run
    whose top is within one segment of the largest window the receiver advertised (``rwnd``) is told as at
    least that: the receiver's window held the flight (RFC 9293 §3.8.6), and cwnd may have grown unseen."""
    if s.empty or s.runs is None:
        return []
    out: list[Sentence] = []
    for start, top, at, code, end in s.runs:
        vals = {"from_cwnd_bytes": start, "cwnd_bytes": top, "time": at, "end": end}
        if f.seg:
            vals["cwnd_packets"] = top / f.seg
        part = "" if below_one_segment(start, mss) else CLAUSES["from_part"].format(from_cwnd=f.window(start))
        held = fills_rwnd(top, mss, rwnd)
        vals["rwnd_held"] = held
        cwnd = CLAUSES["cwnd_rwnd"].format(cwnd=f.window(top)) if held else f.window(top)
        shown = {"from_part": part, "cwnd": cwnd, "time": numfmt.at(at), "end": numfmt.at(end)}
        out.append(say(RUN_ENDS[int(code)], shown, vals, time=at, flow=flow, dir=d))
    return out


def _window(times: list[float], cuts: list[tuple[float, float, int, float, float]], i: int,
            rt: list[tuple[float, str]], tol_s: float | None, backed: bool) -> list[tuple[float, str]]:
    """The retransmissions (time, kind) told with reduction ``i``, in time order: those from its reach
    back (``tol``) up to where the next one's reach begins; an event loss evidence backs whose span
    holds none takes those within ``tol_s`` of it (from its row before)."""
    te, tol, prev_t = times[i], cuts[i][3], cuts[i][4]
    hi = times[i + 1] - cuts[i + 1][3] if i + 1 < len(times) else math.inf
    sel = [(t, k) for t, k in rt if t >= te - tol and t < hi]
    if backed and not sel and tol_s is not None and math.isfinite(tol_s) and not math.isnan(prev_t):
        sel = [(t, k) for t, k in rt if t >= prev_t - tol_s and t <= te + tol_s]  # (NaN prev_t: the first row)
    return sel


def _loss_kind(kinds: list[str], backed: bool, phase: int, small: bool, syn: bool = False) -> str:
    """How a reduction is told (``kinds``: its retransmissions' kinds in time order; ``syn``: they
    all went out before the direction's first data byte, so they re-sent its SYN)."""
    first = kinds[0] if kinds else None
    if not backed:
        # no loss evidence (tracekit.analysis.cwnd.reductions): re-sends the receiver already had
        # (D-SACK, RFC 2883; a sender undoes such a reduction, RFC 3708), a lost SYN (RFC 5681 §3.1:
        # the sender then starts from one segment; the loss evidence counts data only), or no re-send
        if syn:
            return "reduction_syn"
        return "reduction_spurious" if first == "spurious" else "reduction_no_loss"
    if first == "rto" and small:
        return "loss_timeout"
    if phase == RECOVERY or (first == "fast" and not small):
        return "loss_fast_recovery"
    return "loss_tahoe" if first == "fast" and small else "loss_other"


def cwnd_change(f: Fmt, before: float, after: float) -> str:
    """The window's change at an event: ``cwnd X → Y``, or, where the estimate did not fall, that
    ssthresh was set while cwnd stayed or rose. The estimate marks a reduction where a new ssthresh
    is set (RFC 5681 §3.2 step 2) even when cwnd holds: a sender that undoes an unneeded reduction
    (RFC 3708; Linux's ``tcp_try_undo_dsack``) keeps its window, and "cwnd 80,896 B → 80,896 B" would read as a fall."""
    if before == before and after == after and after >= before:  # (NaN: not a number either way)
        kind = "cwnd_rose" if after > before else "cwnd_held"
    else:
        kind = "cwnd_fell"
    return CLAUSES[kind].format(before=f.window(before), after=f.window(after))


def losses(x: DirFacts, f: Fmt, flow: int, d: int, tol_s: float | None = None,
           data_start: float | None = None) -> list[Sentence]:
    """One sentence per loss event: what was retransmitted (and dropped) and how the sender recovered.

    ``tol_s`` is the direction's minimum RTT, the reach :func:`tracekit.analysis.cwnd.reductions`
    gives loss evidence: an event it backs whose own span (up to the next event) holds no
    retransmission is told with the ones within that reach, never as a loss with none.
    ``data_start`` is when its first data byte was sent: a re-send before it re-sent the SYN.
    """
    s = x.story
    times = s.losses
    if not times or s.empty or s.cuts is None:
        return []
    cuts, rt, drops = s.cuts, x.resent.told, x.drops
    out: list[Sentence] = []
    prev = -math.inf
    for i, te in enumerate(times[:MAX_EACH]):
        before, after, phase, tol, _ = cuts[i]
        backed = s.backed is None or bool(s.backed[i])
        sent = _window(times, cuts, i, rt, tol_s, backed)
        kinds = [k for _, k in sent]
        syn = bool(sent) and data_start is not None and all(t < data_start for t, _ in sent)
        small = after <= max(2.0 * (f.seg or 0), 0.3 * before)
        kind = _loss_kind(kinds, backed, phase, small, syn)
        if kind == "reduction_spurious":
            # the re-sends told are the unneeded ones it starts with (later ones back the next event)
            n_sp = next((j for j, k in enumerate(kinds) if k != "spurious"), len(kinds))
            kinds = kinds[:n_sp]
        # drops up to the reduction: a drop is learnt of at least a round trip later, so past the reduction
        # they reach at most one least RTT (``tol_s``; the reach back ``tol`` spans the gap to the row
        # before, 3.7 s on ns-2's dumbbell flow 1, which once counted the next events' drops too)
        ahead = min(tol, tol_s) if tol_s is not None and math.isfinite(tol_s) else tol
        nd = sum(1 for t in drops if prev <= t < te + ahead)
        vals = {"time": te, "retransmitted": len(kinds), "retrans_rto": kinds.count("rto"),
                "retrans_fast": kinds.count("fast"), "drops": nd if drops else None,
                "cwnd_before_bytes": before, "cwnd_after_bytes": after}
        dropped = CLAUSES["dropped"].format(drops=f.segs(nd)) if nd else ""
        shown = {"time": numfmt.at(te), "retrans": f.segs(len(kinds)), "dropped": dropped,
                 "change": cwnd_change(f, before, after)}
        out.append(say(kind, shown, vals, time=te, flow=flow, dir=d))
        prev = te + ahead
    if len(times) > MAX_EACH:
        lossy = [True] * len(times) if s.backed is None else [bool(b) for b in s.backed]
        for kind, want in (("losses_more", True), ("reductions_more", False)):
            rest = [t for t, b in zip(times[MAX_EACH:], lossy[MAX_EACH:], strict=True) if b == want]
            if rest:
                out.append(say(kind, {"count": f"{len(rest):,}", "time": numfmt.at(rest[0]),
                                      "end": numfmt.at(rest[-1])},
                               {"count": len(rest), "time": rest[0], "end": rest[-1]}, time=rest[0],
                               flow=flow, dir=d))
    return out


#: Vantage points whose estimated cwnd is not the sender's (``_flowrows.FAR``, the flows rows' rule), as told
#: in the phrase.
FAR = dict(zip(_flowrows.FAR, ("in the middle of the path", "at the receiver"), strict=True))


def far(row: dict[str, Any], s: Story) -> bool:
    """True when the cwnd would be an estimate made away from the sender (not the sender's window)."""
    est = s.empty or s.source == "estimate"
    return est and row.get("vantage_point") in FAR


def far_losses(x: DirFacts, row: dict[str, Any], flow: int, d: int) -> list[Sentence]:
    """Retransmissions counted only, for a direction seen away from its sender."""
    r = x.resent
    if not r.n:
        return []
    where = str(row.get("vantage_point"))
    shown = {"retrans": f"{r.n:,} segment{'' if r.n == 1 else 's'}", "time": numfmt.at(r.t0),
             "end": numfmt.at(r.t1), "fast": f"{r.fast:,}", "rto": f"{r.rto:,}", "where": FAR[where]}
    return [say("losses_far", shown, {"retransmitted": r.n, "time": r.t0, "end": r.t1, "retrans_fast": r.fast,
                                      "retrans_rto": r.rto, "vantage_point": where}, time=r.t0, flow=flow, dir=d)]


def stalls(x: DirFacts, flow: int, d: int) -> list[Sentence]:
    """Stalls one by one (zero-window ones in one sentence with the zero-window advertisements)."""
    out: list[Sentence] = []
    zw = [s for s in x.stalls if s[2] == "zero_window"]
    n_ads, a0, a1 = x.zero_ads  # the other direction's advertisements
    if zw or n_ads:
        t0 = min(v for v in (_least([s[0] for s in zw]) if zw else None, a0 if n_ads else None) if v is not None)
        t1 = max(v for v in (-_least([-s[1] for s in zw]) if zw else None, a1 if n_ads else None) if v is not None)
        total = polars_sum([e - b for b, e, _ in zw]) if zw else 0.0
        out.append(say("zero_window", {"count": f"{n_ads:,}", "time": numfmt.at(t0), "end": numfmt.at(t1),
                                       "stalls": f"{len(zw):,}", "duration": numfmt.seconds(total)},
                       {"count": n_ads, "time": t0, "end": t1, "stalls": len(zw), "duration_s": total},
                       time=t0, flow=flow, dir=d))
    other = [s for s in x.stalls if s[2] != "zero_window"]
    for start, end, cause in other[:MAX_EACH]:
        cause = cause if f"stall_{cause}" in TEMPLATES else "unknown"
        out.append(say(f"stall_{cause}", {"duration": numfmt.seconds(end - start), "time": numfmt.at(start),
                                          "end": numfmt.at(end)},
                       {"time": start, "end": end, "duration_s": end - start, "cause": cause},
                       time=start, flow=flow, dir=d))
    rest = other[MAX_EACH:]
    if rest:
        tot = polars_sum([e - b for b, e, _ in rest])
        out.append(say("stalls_more", {"count": f"{len(rest):,}", "time": numfmt.at(rest[0][0]),
                                       "end": numfmt.at(rest[-1][1]), "duration": numfmt.seconds(tot)},
                       {"count": len(rest), "time": rest[0][0], "end": rest[-1][1], "duration_s": tot},
                       time=rest[0][0], flow=flow, dir=d))
    return out
