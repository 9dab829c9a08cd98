"""Stalls: intervals in which a sender sent no new data for much longer than the RTT.

The ``stalls`` frame (:data:`tracekit.schema.STALLS`). Per connection direction, the
*new-data* segments are those that raise the highest data byte sent. A stall is a gap
between two consecutive new-data segments — or between the last one and the ACK of the
last byte (a tail that needed a timeout) — longer than

    threshold = max(4 × srtt, 200 ms)

with srtt the RFC 6298 smoothed RTT of the direction at the start of the gap (its
handshake or minimum RTT before the first sample; 200 ms alone when no RTT is known).
Four RTTs cover the normal pauses of a cwnd-limited sender (an ACK clock hiccup, a
delayed ACK, a recovery round) and 200 ms (Linux's minimum RTO) keeps sub-millisecond
LAN RTTs from turning scheduling jitter into stalls. ``start`` is the last new data before the
gap, ``end`` the next new data (or that final ACK).

``cause``, first that applies:

* ``zero_window``: the receiver advertised a zero window at the start or during the gap;
* ``rto``: a retransmission of kind ``rto`` happened in the gap (it ended by a timeout);
* ``rwnd_limited``: at the start or in an ACK during the gap, the data outstanding + one MSS
  exceeded the window the receiver advertised (the window was full);
* ``app_limited``: everything sent had been acknowledged before new data came (nothing
  outstanding, window open: the application had nothing to send);
* ``unknown``: none of these (e.g. a long loss recovery without timeout, or a path stall).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

from tracekit.analysis._groups import MISSING, Segments
from tracekit.analysis._state import KEYS, at, pick, prepare, segments, take
from tracekit.analysis.rtt import at_rows, smoothed
from tracekit.analysis.rtt import samples as rtt_samples
from tracekit.schema import STALLS, empty

MIN_STALL_S = 0.2
RTT_FACTOR = 4.0


def _long_gaps(st: pl.DataFrame, sg: Segments) -> pl.DataFrame:
    """New-data rows followed by more than :data:`MIN_STALL_S` without new data (or their direction's last).

    Returns:
        ``_i, g, time, hi_dend, e_i, e_t`` (the next new data, null after the last), in packet order.
    """
    new = st["new"].to_numpy()
    t = st["time"].to_numpy()
    s_rows, e_rows = [], []
    for j in range(len(sg.keys)):
        rows = sg.rows(j)
        rows = rows[new[rows]]
        if not len(rows):
            continue
        tt = t[rows]
        # every stall is longer than MIN_STALL_S: keep only those gaps (and the direction's last new data)
        k = np.flatnonzero((tt[1:] - tt[:-1]) > MIN_STALL_S)
        s_rows += [rows[k], rows[-1:]]
        e_rows += [rows[k + 1], np.full(1, -1, dtype=np.intp)]
    if not s_rows:
        return pl.DataFrame(schema={"_i": pl.UInt32, "g": pl.UInt32, "time": pl.Float64, "hi_dend": pl.Int64,
                                    "e_i": pl.UInt32, "e_t": pl.Float64})
    si, ei = np.concatenate(s_rows), np.concatenate(e_rows)
    o = np.argsort(si, kind="stable")  # packet order
    si, ei = si[o], ei[o]
    has_e = pl.Series(ei >= 0)
    return pl.DataFrame({
        "_i": si.astype(np.uint32), "g": st["g"].to_numpy()[si], "time": t[si], "hi_dend": take(st, "hi_dend", si),
        "e_i": ei.astype(np.uint32), "e_t": t[ei],
    }).with_columns(
        hi_dend=pl.when(pl.col("hi_dend") != MISSING).then(pl.col("hi_dend")),
        e_i=pl.when(has_e).then(pl.col("e_i")),
        e_t=pl.when(has_e).then(pl.col("e_t")),
    )


def _ranges(sg: Segments, grp: np.ndarray, lo_i: np.ndarray, hi_i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grouped-order positions [a, b) of the rows of groups ``grp`` with packet rows in (lo_i, hi_i)."""
    a = np.zeros(len(grp), dtype=np.int64)
    b = np.zeros(len(grp), dtype=np.int64)
    for h in np.unique(grp).tolist():
        j = sg.find(h)
        if j is None:
            continue
        m = grp == h
        s = int(sg.starts[j])
        rows = sg.rows(j)  # ascending packet rows
        a[m] = s + np.searchsorted(rows, lo_i[m], side="right")
        b[m] = s + np.searchsorted(rows, hi_i[m], side="left")
    return a, np.maximum(a, b)


def _count_in(flag: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per range [a, b) of the concatenated rows ``flag`` was computed on, how many are True."""
    c = np.concatenate(([0], np.cumsum(flag, dtype=np.int64)))
    off = np.concatenate(([0], np.cumsum(b - a)))
    return c[off[1:]] - c[off[:-1]]


def stalls(pk: pl.DataFrame, *, state: pl.DataFrame | None = None, rtt_samples_df: pl.DataFrame | None = None,
           retrans: pl.DataFrame | None = None, est: pl.DataFrame | None = None) -> pl.DataFrame:
    """Find stalls and their causes (see the module docstring).

    Args:
        pk: Packets at the vantage point.
        state: Prepared state of ``pk`` (:func:`tracekit.analysis._state.prepare`), if at hand.
        rtt_samples_df: RTT samples with ``_i`` (:func:`tracekit.analysis.rtt.samples`), if at hand.
        retrans: Classified retransmissions with ``_i`` (:func:`tracekit.analysis.retrans.classify`).
        est: ``smoothed`` RTT of the samples (:func:`tracekit.analysis.rtt.smoothed`), if at hand.

    Returns:
        The ``stalls`` frame (:data:`tracekit.schema.STALLS`).
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(STALLS)
    rs = rtt_samples(st) if rtt_samples_df is None else rtt_samples_df
    if retrans is None:
        from tracekit.analysis.retrans import classify

        retrans = classify(st, rs)
    sg = segments(st)
    gaps = _gaps(st, sg, rs, est)
    if gaps is None:
        return empty(STALLS)
    gaps = _evidence(st, sg, gaps, retrans)
    cause = (
        pl.when(pl.col("zero")).then(pl.lit("zero_window"))
        .when(pl.col("n_rto") > 0).then(pl.lit("rto"))
        .when(pl.col("full") | (pl.col("unacked") + pl.col("_mss") > pl.col("r_win")).fill_null(False))
        .then(pl.lit("rwnd_limited"))
        .when(pl.col("acked_all") & ~pl.col("tail")).then(pl.lit("app_limited"))
        .otherwise(pl.lit("unknown"))
    )
    out = gaps.with_columns(start=pl.col("time"), end=pl.col("e_t")).with_columns(
        duration=pl.col("end") - pl.col("start"), cause=cause)
    return out.select(list(STALLS)).cast(STALLS).sort(*KEYS, "start")  # type: ignore[arg-type]


def _gaps(st: pl.DataFrame, sg: Segments, rs: pl.DataFrame, est: pl.DataFrame | None) -> pl.DataFrame | None:
    """The silences of a data direction longer than its threshold (None: none).

    A silence ends at the direction's next segment, or, for the last one, at the ACK of the
    last byte (a tail that needed a timeout: ``tail``). The threshold is RTT_FACTOR × srtt at
    the gap's start (before any sample: the smallest RTT known for the direction), at least
    MIN_STALL_S.

    Returns:
        One row per stall: its state row ``_i`` and time, end ``e_i``/``e_t``, ``flow, dir``,
        the peer's latest ACK state (``r_i, r_hi_ack, r_win``), ``tail`` and ``thr``.
    """
    new = _long_gaps(st, sg)
    if new.is_empty():
        return None
    # the ACK of the last byte closes the final interval (a tail that needed a timeout)
    last = new.filter(pl.col("e_i").is_null()).select("g", _last="hi_dend", _li="_i")
    fin = (
        pick(st, pl.col("new_ack"), "_i", "time", "ack", g=pl.col("g") ^ 1)
        .join(last, on="g").filter((pl.col("ack") >= pl.col("_last")) & (pl.col("_i") > pl.col("_li")))
        .group_by("g").agg(pl.col("_i").min().alias("_fin_i"), pl.col("time").min().alias("_fin_t"))
    )
    new = new.join(fin, on="g", how="left", maintain_order="left").with_columns(
        tail=pl.col("e_i").is_null() & pl.col("_fin_i").is_not_null(),
        e_i=pl.coalesce(pl.col("e_i").cast(pl.Int64), pl.col("_fin_i").cast(pl.Int64)),
        e_t=pl.coalesce("e_t", "_fin_t"),
    )
    ix = new["_i"]
    new = new.with_columns(
        flow=(pl.col("g") // 2).cast(pl.UInt32), dir=(pl.col("g") % 2).cast(pl.Int8),
        r_i=at(st, ix, "r_i"), r_hi_ack=at(st, ix, "r_hi_ack"), r_win=at(st, ix, "r_win"),
    )
    # srtt at the gap's start; before any sample the smallest RTT known for the direction
    new = at_rows(st, smoothed(rs) if est is None else est, new)
    floor = rs.filter(pl.col("rtt_s") > 0).group_by(KEYS).agg(pl.col("rtt_s").min().alias("_rmin"))
    new = new.join(floor, on=KEYS, how="left", maintain_order="left").with_columns(
        thr=pl.max_horizontal(pl.lit(MIN_STALL_S), RTT_FACTOR * pl.coalesce("srtt", "_rmin").fill_null(0.0))
    )
    gaps = new.filter(pl.col("e_t").is_not_null() & ((pl.col("e_t") - pl.col("time")) > pl.col("thr")))
    return None if gaps.is_empty() else gaps


def _evidence(st: pl.DataFrame, sg: Segments, gaps: pl.DataFrame, retrans: pl.DataFrame) -> pl.DataFrame:
    """Add what decides each stall's cause: the peer's windows and RTO retransmissions during it.

    Columns added: ``zero`` (the peer advertised a zero window), ``full`` (outstanding data
    plus one MSS exceeded a window it advertised), ``n_rto`` (this direction's RTO
    retransmissions in the gap), ``acked_all`` (everything sent was acknowledged at the end),
    ``unacked`` and ``_mss`` (the direction's largest segment).
    """
    gcol = st["g"].to_numpy()
    s_i = gaps["_i"].to_numpy().astype(np.int64)
    e_i = gaps["e_i"].to_numpy().astype(np.int64)
    g_s = gaps["g"].to_numpy().astype(np.int64)
    e_own = gcol[e_i] == g_s
    r_e = take(st, "r_i", e_i, -1)
    # largest segment per direction (the MSS the window checks add)
    ln = st["len"].to_numpy()
    mss_of = np.zeros(int(max(gcol.max(), g_s.max())) + 1, dtype=np.int64)
    for h in np.unique(g_s).tolist():
        mss_of[h] = ln[sg.rows(sg.find(h))].max()  # type: ignore[arg-type]
    # rows of the other direction after the gap's start and before its end: the windows it advertised
    a, b = _ranges(sg, g_s ^ 1, s_i, e_i)
    other = sg.order[np.concatenate([np.arange(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=False)])
                     if len(a) else np.zeros(0, np.intp)].astype(np.int64)
    win = take(st, "win", other, -1)
    zero = (win == 0) & ~st["syn"].to_numpy()[other]
    # full: outstanding data (the data direction's highest byte so far - the highest ACK so far) + 1 MSS above it
    r_o = take(st, "r_i", other, -1)
    hd = np.where(r_o >= 0, take(st, "hi_dend", np.maximum(r_o, 0), 0), 0)
    hi_ack = _hi_ack(st, sg, other)
    own_mss = np.repeat(mss_of[g_s], b - a)
    full = (win >= 0) & (hd - hi_ack + own_mss > win)
    # RTO retransmissions of this direction in the gap
    own_e = np.where(e_own, e_i, r_e)
    n_rto = _count_rows(st, retrans.filter(pl.col("kind") == "rto")["_i"].to_numpy(), g_s, s_i, own_e)
    acked = np.where(e_own, take(st, "r_hi_ack", e_i, -1), -1)
    return gaps.with_columns(
        zero=pl.Series(_count_in(zero, a, b) > 0) | (pl.col("r_win") == 0).fill_null(False),
        full=pl.Series(_count_in(full, a, b) > 0),
        n_rto=pl.Series(n_rto),
        acked_all=pl.Series(acked) >= pl.col("hi_dend"),
        unacked=pl.col("hi_dend") - pl.col("r_hi_ack"),
        _mss=pl.Series(mss_of[g_s]),
    )


def _hi_ack(st: pl.DataFrame, sg: Segments, rows: np.ndarray) -> np.ndarray:
    """The highest ACK each row's direction has sent up to that row (0 before any).

    The ``new_ack`` rows are where that running maximum rises: the latest one at or before a
    row holds it.
    """
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    na = np.flatnonzero(st["new_ack"].to_numpy())
    gcol = st["g"].to_numpy()
    key = (gcol[na].astype(np.int64) << 32) | na
    ko = np.argsort(key, kind="stable")
    key = key[ko]
    gr = gcol[rows].astype(np.int64)
    j = np.searchsorted(key, (gr << 32) | rows, side="right") - 1
    jj = np.maximum(j, 0)
    ok = (j >= 0) & ((key[jj] >> 32) == gr) if len(key) else np.zeros(len(rows), dtype=bool)
    return np.where(ok, take(st, "ack", na[ko[jj]] if len(key) else jj, 0), 0)


def _count_rows(st: pl.DataFrame, marked: np.ndarray, g: np.ndarray, after: np.ndarray, upto: np.ndarray) -> np.ndarray:
    """Per query, the marked rows of direction ``g`` in (after, upto] (``upto`` -1: as of before the direction)."""
    m = marked.astype(np.int64)
    key = np.sort((st["g"].to_numpy()[m].astype(np.int64) << 32) | m)
    base = np.searchsorted(key, g << 32, side="left")

    def upto_count(x: np.ndarray) -> npt.NDArray[np.int64]:
        return np.where(x >= 0, np.searchsorted(key, (g << 32) | np.maximum(x, 0), side="right") - base, 0)

    return upto_count(upto) - upto_count(after)
