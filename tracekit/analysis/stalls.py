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

The rules run in the compiled core (``tracekit._core.tcp_stalls``, Rust ``src/state/stalls.rs``:
one state machine per connection fed the prepared state in packet order); this module passes
it the state, RTT and retransmission columns and builds the frame.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import KEYS, prepare
from tracekit.analysis.rtt import est_columns, smoothed
from tracekit.analysis.rtt import samples as rtt_samples
from tracekit.schema import STALLS, empty

MIN_STALL_S = 0.2
RTT_FACTOR = 4.0
#: ``cause`` by the core's code (``Cause`` and its names in src/state/stalls.rs).
CAUSES = _core.STALL_CAUSES


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
    est = smoothed(rs) if est is None else est
    rto = retrans.lazy().filter(pl.col("kind") == "rto").select(pl.col("_i").cast(pl.UInt32)).collect()
    g, start, end, cause = _core.tcp_stalls(
        st["g"].cast(pl.UInt32).to_numpy(), st["time"].to_numpy(), st["len"].cast(pl.Int64).to_numpy(),
        _filled(st["hi_dend"], narrow=True), _filled(st["ack"]), _filled(st["win"]), st["new_ack"].to_numpy(),
        st.select(pl.arg_where(pl.col("syn")).cast(pl.UInt32))[:, 0].to_numpy(), rto["_i"].to_numpy(),
        *est_columns(est),
        rs["flow"].cast(pl.UInt32).to_numpy(), rs["dir"].cast(pl.Int8).to_numpy(),
        rs["rtt_s"].cast(pl.Float64).fill_null(np.nan).to_numpy())
    if not len(g):
        return empty(STALLS)
    out = pl.DataFrame({
        "flow": g // 2, "dir": (g % 2).astype(np.int8), "start": start, "end": end,
        "cause": pl.Series(CAUSES).gather(pl.Series(cause, dtype=pl.UInt32)),
    }).with_columns(duration=pl.col("end") - pl.col("start"))
    return out.select(list(STALLS)).cast(STALLS).sort(*KEYS, "start")  # type: ignore[arg-type]


def _filled(s: pl.Series, *, narrow: bool = False) -> np.ndarray:
    """An integer column as numpy for the core: Int64 with -2^62 for null (``narrow``: Int32 stays, -2^31).

    The state keeps sequence numbers in 32 bits when they fit (:func:`tracekit.analysis._state.prepare`);
    they go over as they are, without a widening copy (and without a fill when nothing is null).
    """
    if not (narrow and s.dtype == pl.Int32):
        s = s.cast(pl.Int64)
    if s.null_count():
        s = s.fill_null(-(1 << 31) if s.dtype == pl.Int32 else MISSING)
    return s.to_numpy()
