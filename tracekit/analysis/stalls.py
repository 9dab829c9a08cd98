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
import polars as pl

from tracekit.analysis._state import KEYS, at, grouped, pick, prepare
from tracekit.analysis.rtt import at_rows, smoothed
from tracekit.analysis.rtt import samples as rtt_samples
from tracekit.schema import STALLS, empty

MIN_STALL_S = 0.2
RTT_FACTOR = 4.0


def stalls(pk: pl.DataFrame, *, state: pl.DataFrame | None = None, rtt_samples_df: pl.DataFrame | None = None,
           retrans: pl.DataFrame | None = None) -> pl.DataFrame:
    """Find stalls and their causes (see the module docstring).

    Args:
        pk: Packets at the vantage point.
        state: Prepared state of ``pk`` (:func:`tracekit.analysis._state.prepare`), if at hand.
        rtt_samples_df: RTT samples with ``_i`` (:func:`tracekit.analysis.rtt.samples`), if at hand.
        retrans: Classified retransmissions with ``_i`` (:func:`tracekit.analysis.retrans.classify`).

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
    new = pick(st, pl.col("new"), "_i", "g", "time", "hi_dend")
    if new.is_empty():
        return empty(STALLS)
    new = new.with_columns(e_i=pl.col("_i").shift(-1).over("g"), e_t=pl.col("time").shift(-1).over("g"))
    # every stall is longer than MIN_STALL_S: keep only those gaps (and each direction's last new data)
    new = new.filter(pl.col("e_t").is_null() | ((pl.col("e_t") - pl.col("time")) > MIN_STALL_S))
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
    new = at_rows(st, smoothed(rs), new)
    floor = rs.filter(pl.col("rtt_s") > 0).group_by(KEYS).agg(pl.col("rtt_s").min().alias("_rmin"))
    new = new.join(floor, on=KEYS, how="left", maintain_order="left").with_columns(
        thr=pl.max_horizontal(pl.lit(MIN_STALL_S), RTT_FACTOR * pl.coalesce("srtt", "_rmin").fill_null(0.0))
    )
    gaps = new.filter(pl.col("e_t").is_not_null() & ((pl.col("e_t") - pl.col("time")) > pl.col("thr")))
    if gaps.is_empty():
        return empty(STALLS)
    gg = grouped(st)
    n = st.height
    s_i = gaps["_i"].to_numpy().astype(np.int64)
    e_i = gaps["e_i"].to_numpy().astype(np.int64)
    e_own = at(st, e_i, "g").to_numpy() == gaps["g"].to_numpy()
    r_all = st["r_i"].fill_null(-1).to_numpy()

    def cum(flag: np.ndarray) -> np.ndarray:
        """Running count of ``flag`` rows within each direction."""
        return gg.back(gg.cumsum(gg.take(flag.astype(np.int64))))

    def other_between(flag: np.ndarray) -> np.ndarray:
        """Rows of the other direction with ``flag`` after the gap's start and before its end."""
        c = cum(flag)
        at_s = np.where(r_all[s_i] >= 0, c[np.maximum(r_all[s_i], 0)], 0)
        r_e = r_all[e_i]
        at_e = np.where(e_own, np.where(r_e >= 0, c[np.maximum(r_e, 0)], 0), c[e_i] - flag[e_i])
        return at_e - at_s

    # RTO retransmissions of this direction in the gap
    rto = np.zeros(n, dtype=bool)
    if retrans.height:
        rto[retrans.filter(pl.col("kind") == "rto")["_i"].to_numpy().astype(np.int64)] = True
    rc = cum(rto)
    own_e = np.where(e_own, e_i, r_all[e_i])
    n_rto = np.where(own_e >= 0, rc[np.maximum(own_e, 0)], 0) - rc[s_i]
    # windows the other side advertised in the gap: zero, or full (outstanding + 1 MSS above it)
    mss = st.lazy().group_by("g").agg(pl.col("len").max().alias("_mss")).collect()
    win = st["win"].fill_null(-1).to_numpy()
    hd = at(st, r_all, "hi_dend").fill_null(0).to_numpy()  # the data direction's highest byte so far
    own_mss = st.select(pl.col("g") ^ 1).join(mss, on="g", how="left", maintain_order="left")["_mss"]
    full = (win >= 0) & (hd - st["hi_ack"].fill_null(0).to_numpy() + own_mss.fill_null(0).to_numpy() > win)
    zero = (win == 0) & ~st["syn"].to_numpy()
    gaps = gaps.with_columns(
        zero=pl.Series(other_between(zero) > 0) | (pl.col("r_win") == 0).fill_null(False),
        full=pl.Series(other_between(full) > 0),
        n_rto=pl.Series(n_rto),
        acked_all=pl.Series(np.where(e_own, at(st, e_i, "r_hi_ack").fill_null(-1).to_numpy(), -1)) >= pl.col(
            "hi_dend"),
        unacked=pl.col("hi_dend") - pl.col("r_hi_ack"),
    ).join(mss, on="g", how="left", maintain_order="left")
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
