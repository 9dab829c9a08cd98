"""The congestion-window estimate from packets (the ``source = "estimate"`` rows of :mod:`.cwnd`).

A sender that is cwnd-limited keeps one congestion window of data outstanding: each
ACK frees room and the sender fills it at once. So after the segments an ACK releases,
``pipe = snd_nxt − snd_una − SACKed`` *is* cwnd. tracekit measures that pipe at every
data segment and corrects it where the sender is not cwnd-limited:

1. **Loss events.** A retransmission starts a loss event unless one is under way: an
   event lasts until the cumulative ACK passes its *recovery point* (the highest byte
   sent before it, RFC 6582 "recover"), so NewReno partial-ACK and SACK retransmissions
   of one window count once. A **timeout** always starts a new event — a Reno recovery
   that stalls ends in one, and the simulators cut cwnd twice (samples/ns2/lab_reno/Window.tr:
   66 → 33 → 1). Which re-sends are timeouts is the retransmission analysis' judgement
   (:func:`tracekit.analysis.retrans.timeout_resends`: the first re-send of each ``rto``
   episode, RFC 6298 §5 with RTO ≥ the sender's floor, 200 ms for Linux ``TCP_RTO_MIN`` and
   ns-2 ``minrto_``, 1 s for ns-3), never a rule of its own: a silence of one minimum RTT is
   no timer expiry where the RTT is µs (veth, a local bridge) and the RTO is 200 ms.
   A retransmitted SYN is a loss too (cwnd starts at 1 segment, ssthresh 2 segments, RFC 5681).
2. **snd_nxt restarts at each event**: go-back-N senders (timeouts, Tahoe's fast
   retransmit) resend from snd_una, so the pipe uses the highest byte sent since; data
   SACKed above that restarted snd_nxt is no part of the pipe (RFC 6675 §2: it counts
   octets between HighACK and HighData), so only the SACKed bytes below it leave it.
   After a **timeout** every segment outstanding and not SACKed is lost (RFC 5681 §3.1,
   Linux ``tcp_enter_loss``/``tcp_timeout_mark_lost``) and out of RFC 6675 §4's pipe until
   re-sent: the pipe is what was sent since (new or re-sent), not a hole not re-sent yet.
3. **Fast recovery or restart.** A fast-retransmit event is a Reno-style *recovery*
   (estimate = ssthresh, phase ``recovery``: ns-2 keeps the dupACK inflation out of
   ``cwnd_``, PRR converges to it) unless the sender shows go-back-N: it resends old
   data beyond the first hole, contiguously, before any new data (a SACK sender skips
   the SACKed segments). When it sends nothing at all until the event ends, the burst
   the ending ACK releases decides: Tahoe sends ~2 segments, Reno resumes at ssthresh —
   unless that burst is application-limited (step 5): it then tells neither, and the event
   stays a recovery. After a recovery, rows that read no window yet keep its ssthresh.
4. **ssthresh** = half the estimate just before the event (with SACK information, half
   the un-SACKed flight if smaller: RFC 5681 eq. 4's FlightSize, as ns-3 does), rounded
   down to whole segments, at least 2 MSS (ns-2 and Linux keep whole segments).
5. **Not measurements of the window**: segments sent on duplicate ACKs (RFC 3042 limited
   transmit, dupACK inflation) are skipped, and so are **application-limited** bursts: the
   burst ended at HighData, an ACK then covered all of it, and nothing new left within
   :data:`ACK_CLOCKED_S` of the latest ACK: the sender had nothing more to send (RFC 7661 §4
   validates no window then; Linux grows cwnd only when ``tcp_is_cwnd_limited``). So is a
   burst that starts from an **empty pipe** (everything sent before was ACKed) after an idle
   shorter than :data:`RESTART_S`, however soon after the ACK: outside a loss event cwnd falls
   only after an idle of one RTO (RFC 5681 §4.1, Linux ``tcp_cwnd_restart``), and a
   cwnd-limited sender whose pipe empties sends its whole window on that ACK, so the burst is
   what the application had given (a write's tail, a write once the socket buffer drained),
   a lower bound of cwnd (not at a loss event's start or end). While no
   other burst is in the filter window the estimate keeps its value (raised where such a
   pipe is higher). The segments one ACK releases count as one burst (a capture sees them
   spaced by the serialisation time). The two rules on application-limited bursts and
   timeouts need the sender's own view: a direction where no segment left within 100 µs of
   the ACK that released it (a capture a link away) keeps the plain pipe.
6. **Smoothing**: a causal max filter over two minimum RTTs (queueing and delayed ACKs
   stretch the RTT), restarted at every event start and end so that no pre-loss window
   is carried across a reduction.
7. **Congestion avoidance** grows cwnd smoothly while the pipe can only step by whole
   segments: between two one-segment steps the estimate is interpolated linearly.

Packets are sorted once (:mod:`._cwnd_rows`: every direction one contiguous run of numpy
rows); the passes over every segment (steps 2, 5-7) run in the Rust core, one state machine
per direction (``src/state/cwnd.rs``); Python loops run over directions with
retransmissions and over loss events only. The estimate
needs the sender's own view (its segments when sent, ACKs when they reach it): ACKs
observed elsewhere (e.g. at the receiver) make the pipe lag by a one-way delay.
"""

from __future__ import annotations

import math
from bisect import bisect_left

import numpy as np
import polars as pl

from tracekit import _core, schema
from tracekit.analysis._cwnd_packets import Packets
from tracekit.analysis._cwnd_rows import Rows, build
from tracekit.analysis._cwnd_seg import as_bool, as_f64, as_i64, ranges

KEYS = ["flow", "dir"]
#: A data segment sent within this long after an ACK arrived was clocked by it.
ACK_CLOCKED_S = 1e-3
#: A sender may restart its window after an idle this long (RFC 5681 §4.1 after one RTO; Linux
#: ``tcp_cwnd_restart``, its RTO at least ``TCP_RTO_MIN`` = 200 ms, as ns-2's ``minrto_``).
RESTART_S = 0.2
#: The core's row flags (``tracekit._core.cwnd_pipe``): an application-limited burst; no reading in the window.
APP, HELD = 1, 2
ROW_SCHEMA = {"flow": pl.UInt32(), "dir": pl.Int8(), "time": pl.Float64(), "cwnd_bytes": pl.Float64(),
              "ssthresh_bytes": pl.Float64(), "source": schema.CWND_SOURCE, "phase": schema.PHASE}
EP_SCHEMA = {"flow": pl.UInt32(), "dir": pl.Int8(), "start": pl.Float64(), "end": pl.Float64(),
             "kind": pl.String(), "recovery": pl.Boolean(), "ssthresh_bytes": pl.Float64()}

#: One loss event: (first row, end time, recovery point, timeout?)
Event = tuple[int, float, int, bool]


def _chain(cand: np.ndarray, seq_end: np.ndarray, hi: np.ndarray, una: np.ndarray, timeout: np.ndarray,
           t_ack: np.ndarray, una_ack: np.ndarray) -> list[Event]:
    """Loss events of one direction from its retransmissions that are above una (``cand``, row numbers).

    ``seq_end``, ``hi``, ``una``, ``timeout`` are given at the candidate rows. Loops over loss
    events only (never over packets): each step jumps by bisection (over Python lists: a
    numpy call per scalar costs more than the search).
    """
    m = cand.size
    if m == 0:
        return []
    # next timeout-like candidate at or after each position (m: none)
    marks = np.where(timeout, np.arange(m), m)
    nxt_to = np.append(np.minimum.accumulate(marks[::-1])[::-1], m).tolist()
    rps = np.maximum(hi, seq_end).tolist()
    una_l, una_ack_l, t_ack_l = una.tolist(), una_ack.tolist(), t_ack.tolist()
    cand_l, to_l = cand.tolist(), timeout.tolist()
    n_ack = len(t_ack_l)
    out: list[Event] = []
    pos = 0
    while pos < m:
        rp = rps[pos]
        k = bisect_left(una_ack_l, rp)
        out.append((cand_l[pos], float(t_ack_l[k]) if k < n_ack else math.inf, rp, to_l[pos]))
        pos = min(max(bisect_left(una_l, rp), pos + 1), nxt_to[pos + 1])
    return out


def _go_back_n(seq_end: np.ndarray, pay: np.ndarray, una: np.ndarray, first: np.ndarray, last: np.ndarray,
               rp: np.ndarray) -> np.ndarray:
    """Is each fast-retransmit episode a Tahoe-style restart (1), a fast recovery (0), or neither (-1)?

    Episode k's rows are ``first[k]:last[k]`` (its data segments, the fast retransmission
    first), ``rp[k]`` its recovery point. A go-back-N sender (cwnd = 1, then slow start from
    snd_una) resends old data beyond the first hole (``una < seq < rp``) before it sends new
    data (``seq ≥ rp``), and always contiguously from ``max(snd_una, last sent)``. A
    Reno/NewReno sender retransmits only at snd_una (one segment per partial ACK) and sends
    new data on dupACK inflation; a SACK sender repairs holes above snd_una but *skips* the
    segments the receiver SACKed. Neither (-1): only the fast retransmission was sent (a
    single loss, or a Reno sender stalled by the receiver window). All episodes are decided
    at once, over the concatenation of their rows after the first.
    """
    ne = len(first)
    out = np.full(ne, -1, dtype=np.int8)
    a = first + 1
    n_rest = np.maximum(last - a, 0)
    idx = ranges(a, last)  # the rows after each episode's first, episode by episode
    if not idx.size:
        return out
    ep = np.repeat(np.arange(ne), n_rest)
    pos = idx - a[ep]
    seq = seq_end[idx] - pay[idx]
    rpr = rp[ep]
    # where each episode's new data starts (its rest's length when it sends none)
    stop = n_rest.copy()
    is_new = seq >= rpr
    if is_new.any():
        u, k = np.unique(ep[is_new], return_index=True)
        stop[u] = pos[is_new][k]
    u_r = una[idx]
    beyond = np.bincount(ep[(pos < stop[ep]) & (seq < rpr) & (seq > u_r)], minlength=ne) > 0
    # up to and including the first new segment: a SACK sender jumps over SACKed data
    upto = np.minimum(stop + 1, n_rest)
    skipped = np.bincount(ep[(pos < upto[ep]) & (seq > np.maximum(seq_end[idx - 1], u_r))], minlength=ne) > 0
    has = n_rest > 0
    out[has] = 0
    out[has & beyond & ~skipped] = 1
    return out


class _Episode:
    """What the second pass needs of one loss event (all found before the pipe is built)."""

    __slots__ = ("burst", "d", "end", "gbn", "hi", "i", "j_end", "last", "sacked", "to", "una")

    def __init__(self, d: int, i: int, end: float, to: bool, j_end: int, last: int, gbn: bool | None, burst: int,
                 hi: int, una: int, sacked: int) -> None:
        self.d, self.i, self.end, self.to, self.j_end, self.last = d, i, end, to, j_end, last
        self.gbn, self.burst = gbn, burst
        self.hi, self.una, self.sacked = hi, una, sacked


def _episodes(r: Rows) -> list[_Episode]:
    """Every loss event of every direction, with its range, go-back-N verdict and burst row."""
    ri = r.retx_rows
    # the retransmission analysis' timeouts (RFC 6298 §5 against the sender's RTO floor: its
    # first re-send of each ``rto`` episode), the only judgement of a timer expiry
    timeout = r.retx_timeout
    rlo, rhi = np.searchsorted(ri, r.lo), np.searchsorted(ri, r.hi)
    found: list[tuple[int, int, float, bool, int, int, int, int, int, int]] = []
    ctx: dict[int, tuple[np.ndarray, int, float]] = {}
    for d in np.flatnonzero(rhi > rlo).tolist():
        # only directions with retransmissions: a Python step per loss event, none per packet
        sel = slice(int(rlo[d]), int(rhi[d]))
        rows = ri[sel]
        c = r.seq_end[rows] > r.una[rows]
        cand = rows[c]
        alo, ahi = int(r.alo[d]), int(r.ahi[d])
        # (a direction without ACKs searches the whole ACK stream, as the join it replaces did)
        t_ack, una_ack = (r.a_time[alo:ahi], r.a_una[alo:ahi]) if ahi > alo else (r.a_time, r.a_una)
        ch = _chain(cand, r.seq_end[cand], r.retx_hi[sel][c], r.una[cand], timeout[sel][c], t_ack, una_ack)
        lo, hi_r = int(r.lo[d]), int(r.hi[d])
        tt = r.time[lo:hi_r]
        w_s = float(r.min_rtt[d])
        ctx[d] = (tt, lo, ACK_CLOCKED_S if math.isnan(w_s) else min(ACK_CLOCKED_S, 0.05 * w_s))
        j_ends = (lo + np.searchsorted(tt, [e[1] for e in ch], side="left")).tolist()
        at = {x: k for k, x in enumerate(cand.tolist())}
        his, unas, sks = r.retx_hi[sel][c].tolist(), r.una[cand].tolist(), r.sacked(cand).tolist()
        for k, (i, end, rp, to) in enumerate(ch):
            nxt = ch[k + 1][0] if k + 1 < len(ch) else hi_r
            ci = at[i]
            found.append((d, i, end, to, j_ends[k], nxt, rp, his[ci], unas[ci], sks[ci]))
    if not found:
        return []
    first = np.fromiter((e[1] for e in found), dtype=np.int64, count=len(found))
    j_end = np.fromiter((e[4] for e in found), dtype=np.int64, count=len(found))
    nxt_a = np.fromiter((e[5] for e in found), dtype=np.int64, count=len(found))
    rp_a = np.fromiter((e[6] for e in found), dtype=np.int64, count=len(found))
    last = np.minimum(j_end, nxt_a)
    verdict = _go_back_n(r.seq_end, r.pay, r.una, first, last, rp_a).tolist()
    out: list[_Episode] = []
    for (d, i, end, to, je, nxt, _rp, hi_v, una_v, sk), lst, v in zip(found, last.tolist(), verdict, strict=False):
        gbn = None if v < 0 else bool(v)
        burst = -1
        if gbn is None and je < nxt:
            # nothing sent inside: the burst released by the ACK that ends the episode tells
            tt, lo, clocked = ctx[d]
            kb = lo + int(np.searchsorted(tt, r.time[je] + clocked, side="right")) - 1
            burst = min(kb, nxt - 1)
        out.append(_Episode(d, i, end, to, je, lst, gbn, burst, hi_v, una_v, sk))
    return out


def _pipe(r: Rows, eps: list[_Episode]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pipe at each data segment, filtered (the estimate before recoveries), raw, and the core's row flags.

    One pass per direction in the core (``tracekit._core.cwnd_pipe``): snd_nxt restarts at each
    loss event (go-back-N senders resend from snd_una); after a timeout only what was sent since
    is in the pipe (everything outstanding then is lost, RFC 5681 §3.1, RFC 6675 §4); segments
    sent on a duplicate ACK (RFC 3042 limited transmit, fast recovery's dupACK inflation) and
    application-limited bursts (RFC 7661 §4) are no reading; the segments one ACK releases count
    as one burst; a causal max filter over two minimum RTTs, restarting at every event start and
    end. After a restart, SACKed data above the restarted snd_nxt stays out of the pipe (RFC 6675
    §2: only octets between HighACK and HighData; the core knows which segments are SACKed from
    ``r.seg_rows``/``r.seg_at``). Frees the sequence arrays of ``r``.
    """
    ev = np.array([e.i for e in eps], dtype=np.int64)
    ev_to = np.array([e.i for e in eps if e.to], dtype=np.int64)
    ends = np.array([e.j_end for e in eps if e.j_end < r.hi[e.d]], dtype=np.int64)
    clocked = np.full(r.lo.size, ACK_CLOCKED_S)  # (at the sender: docs/analysis.md, application-limited bursts)
    has = r.ahi > r.alo
    end_una = np.full(r.lo.size, np.iinfo(np.int64).min, dtype=np.int64)
    end_una[has] = r.a_una[r.ahi[has] - 1]
    i, f, b = as_i64, as_f64, as_bool
    restart = np.full(r.lo.size, RESTART_S)  # (a burst from an empty pipe: docs/analysis.md)
    filt, raw, flags = _core.cwnd_pipe(f(r.time), i(r.seq_end), i(r.una), b(r.dup), b(r.new_ack), i(r.sack_at),
                                       i(r.sack_val), i(r.sack_pos), i(r.pay), i(r.seg_rows), i(r.seg_at), i(r.lo),
                                       i(r.hi), f(r.min_rtt), ev, ends, ev_to, f(r.ack_t), f(clocked), end_una,
                                       restart)
    gone = np.empty(0, dtype=np.int64)  # (nothing after needs them per row)
    r.seq_end = r.pay = r.una = r.sack_pos = r.seg_rows = r.seg_at = gone
    r.dup = r.new_ack = np.empty(0, dtype=bool)
    r.ack_t = np.empty(0)
    return filt, raw, flags


def _held_after(est: np.ndarray, raw: np.ndarray, flags: np.ndarray, read: np.ndarray, a: int, b: int, s: float
                ) -> None:
    """After a recovery, the rows ``a:`` up to the first with a reading (``read``: those rows, ascending)
    keep ssthresh, or the pipe of application-limited bursts where higher (cwnd is at least what is out)."""
    k = int(np.searchsorted(read, a))
    stop = min(int(read[k]) if k < read.size else b, b)
    if stop > a:
        app = np.where(flags[a:stop] & APP, raw[a:stop], -1.0)
        est[a:stop] = np.maximum.accumulate(np.maximum(app, s))


def _recoveries(r: Rows, eps: list[_Episode], est: np.ndarray, raw: np.ndarray, flags: np.ndarray,
                hold_backoff: bool = True) -> tuple[dict[int, float], np.ndarray, list[dict[str, object]]]:
    """Second pass over the loss events: recovery or restart, ssthresh, the estimate inside recoveries.

    ``est`` (the filtered pipe) is overwritten inside recoveries and after them where no burst
    reads the window yet (``flags``: the core's ``APP`` and ``HELD``); each event's ssthresh is
    half the estimate just before it, as the earlier events left it, except that a backed-off
    expiry holds it when ``hold_backoff`` (RFC 5681 §3.1, Linux, ns-3; ns-2 halves it every time).

    Returns:
        (ssthresh set at each event's first row, in-recovery mask, episodes).
    """
    in_rec = np.zeros(est.size, dtype=bool)
    ssth: dict[int, float] = {}
    episodes: list[dict[str, object]] = []
    read = np.flatnonzero((flags & HELD) == 0) if eps else np.empty(0, dtype=np.int64)
    last_to: dict[int, tuple[int, float]] = {}  # per direction: snd_una and ssthresh at its latest timeout
    for e in eps:
        mss = float(r.mss[e.d])
        # at a direction's first row nothing has changed the filtered value yet
        pre = est[e.i - 1] if e.i > r.lo[e.d] else est[e.i]
        if e.sacked > 0:
            # with SACK information, FlightSize (RFC 5681 eq. 4) is what is outstanding and not SACKed
            pre = min(pre, float(max(e.hi - e.una - e.sacked, 0)))
        s = max(math.floor(pre / 2.0 / mss) * mss, 2.0 * mss) if mss > 0 else pre / 2.0
        held = last_to.get(e.d) if e.to and hold_backoff else None
        if held is not None and held[0] == e.una:
            # the timer fired again for the segment it had re-sent (nothing ACKed since: a backed-off
            # expiry, RFC 6298 §5.5): ssthresh is held constant (RFC 5681 §3.1; Linux ``tcp_enter_loss``
            # recomputes it only on the first expiry, ``icsk_retransmits == 0``; ns-3's ``ReTxTimeout``
            # only unless ``IsHeadRetransmitted``; ns-2's ``TcpAgent::timeout`` halves the window every
            # time, ``closecwnd(0)``: ssthresh = max(window() / 2, 2), so it is no hold there)
            s = held[1]
        if e.to:
            last_to[e.d] = (e.una, s)
        else:
            last_to.pop(e.d, None)
        restart = e.gbn
        if e.burst >= 0 and not flags[e.burst] & APP:
            # Tahoe restarts from one segment (sends ~2), Reno resumes at ssthresh; a burst the
            # application cut short (RFC 7661 §4) tells neither: the event stays a recovery
            restart = bool(raw[e.burst] < 0.75 * s)
        recovery = (not e.to) and not restart
        ssth[e.i] = s
        if recovery:
            in_rec[e.i:e.last] = True
            est[e.i:e.last] = s
            # cwnd leaves a recovery at ssthresh (RFC 6582 §3.2 step 6, RFC 6937 §3.1)
            _held_after(est, raw, flags, read, e.last, int(r.hi[e.d]), s)
        episodes.append({"flow": int(r.flow[e.d]), "dir": int(r.dir[e.d]), "start": float(r.time[e.i]),
                         "end": e.end if e.end != math.inf else None, "kind": "rto" if e.to else "fast",
                         "recovery": recovery, "ssthresh_bytes": s})
    return ssth, in_rec, episodes


def _ssthresh(r: Rows, ssth: dict[int, float]) -> np.ndarray:
    """ssthresh at every row: the latest value set in its direction (NaN before any)."""
    n = r.time.size
    pts = {i: s for i, s in ssth.items() if not math.isnan(s)}  # a NaN ssthresh sets nothing
    for d in np.flatnonzero(r.syn_lost & (r.hi > r.lo)).tolist():
        # a lost SYN: ssthresh 2 MSS from the first segment on (RFC 5681 eq. 4 with FlightSize 0)
        pts.setdefault(int(r.lo[d]), 2.0 * float(r.mss[d]))
    starts = sorted(set(pts) | set(r.lo[r.hi > r.lo].tolist()))
    vals = np.array([pts.get(i, np.nan) for i in starts], dtype=np.float64)
    return np.repeat(vals, np.diff(starts, append=n))


def _enum(codes: np.ndarray, dtype: pl.Enum, name: str) -> pl.Series:
    """An Enum column from its category numbers (``codes``: uint8, each < the number of categories)."""
    s = pl.Series(name, codes, dtype=pl.UInt8)
    try:
        return s.cat.to(dtype)  # the codes are the physical values: no strings are made
    except (AttributeError, pl.exceptions.PolarsError):  # (``cat.to`` is marked unstable in polars 2.1)
        return s.replace_strict(list(range(len(dtype.categories))), dtype.categories.to_list(), return_dtype=dtype)


def estimate(pk: pl.DataFrame, flight: pl.DataFrame, retrans: pl.DataFrame, dirs: pl.DataFrame, *,
             packets: Packets | None = None, sacked_at: np.ndarray | None = None,
             timeouts: pl.DataFrame | None = None, hold_backoff: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Estimate cwnd at every data segment of every data direction (see the module docstring).

    Args:
        pk: Packets at the sender's vantage point.
        flight: The flight frame (only its SACK accounting is used; may be empty).
        retrans: The retransmissions frame (its frames are marked as retransmissions; may be empty).
        dirs: Data directions ``flow, dir, mss`` (from :func:`tracekit.analysis.cwnd.data_directions`).
        packets: ``pk``'s columns if already read.
        sacked_at: Per flight row, from when its segment counts as SACKed
            (:func:`tracekit.analysis.flight.flight_and_sacks`; None: not known).
        timeouts: ``flow, dir, frame`` of the re-sends the retransmission timer sent
            (:func:`tracekit.analysis.retrans.timeout_resends`; None: no timeouts).
        hold_backoff: A backed-off expiry holds ssthresh (RFC 5681 §3.1: Linux, ns-3); False for ns-2,
            which halves it at every expiry.

    Returns:
        (rows, episodes): rows with ``flow, dir, time, cwnd_bytes, ssthresh_bytes, source, phase``
        (``source = "estimate"``, by flow, dir and time: the order of :data:`tracekit.schema.CWND`);
        episodes with ``flow, dir, start, end, kind, recovery, ssthresh_bytes``.
    """
    empty = pl.DataFrame(schema=ROW_SCHEMA), pl.DataFrame(schema=EP_SCHEMA)
    if pk.is_empty() or dirs.is_empty():
        return empty
    r = build(pk, flight, retrans, dirs, packets, sacked_at, timeouts)
    if r is None:
        return empty
    eps = _episodes(r)
    est, raw, flags = _pipe(r, eps)
    ssth, in_rec, episodes = _recoveries(r, eps, est, raw, flags, hold_backoff)
    del eps, raw, flags
    st = _ssthresh(r, ssth)
    # congestion avoidance spread between whole-segment steps, and the phase codes (the core's
    # ``cwnd_phases``: slow start while cwnd < ssthresh or none yet, RFC 5681 §3.1)
    est, codes = _core.cwnd_phases(as_f64(r.time), est, as_f64(st), as_bool(in_rec), as_i64(r.lo), as_i64(r.hi),
                                   as_f64(r.mss))
    del in_rec
    counts = r.hi - r.lo
    rows = pl.DataFrame([
        pl.Series("flow", np.repeat(r.flow, counts), dtype=pl.UInt32),
        pl.Series("dir", np.repeat(r.dir, counts), dtype=pl.Int8),
        pl.Series("time", r.time), pl.Series("cwnd_bytes", est),
        pl.Series("ssthresh_bytes", st, nan_to_null=True),
        pl.select(pl.repeat("estimate", est.size, dtype=schema.CWND_SOURCE).alias("source")).to_series(),
        _enum(codes, schema.PHASE, "phase"),
    ])
    syn = np.flatnonzero(r.syn_lost & (counts > 0))
    syn_eps = pl.DataFrame(
        {
            "flow": r.flow[syn],
            "dir": r.dir[syn],
            "start": r.syn_t[syn],
            "end": r.time[r.lo[syn]],
            "kind": ["syn"] * syn.size,
            "recovery": np.zeros(syn.size, dtype=bool),
            "ssthresh_bytes": 2.0 * r.mss[syn],
        },
        schema=EP_SCHEMA,
    )
    eps_df = pl.concat([pl.DataFrame(episodes, schema=EP_SCHEMA) if episodes else pl.DataFrame(schema=EP_SCHEMA),
                        syn_eps])
    return rows, eps_df
