"""Per data direction parts of the flows frame, from the compiled core's ``flow_stats``.

The rules (ACK timing, the initial window, the peer's largest window, the time shares
limited by the receiver window, the application and cwnd) are per-direction state machines
in ``src/state/flowstats.rs``, fed the prepared state's rows in packet order
(:func:`tracekit.analysis._state.prepare`); this module hands it the columns and builds the
frame. Definitions: the :mod:`.flows` docstring.
"""

from __future__ import annotations

import polars as pl

from tracekit import _core
from tracekit.analysis._groups import MISSING
from tracekit.analysis.rtt import est_columns

_SCHEMA = {"flow": pl.UInt32, "dir": pl.Int8, "_data_t0": pl.Float64, "_acked_t": pl.Float64,
           "_ack_bytes": pl.Int64, "_ack_t": pl.Float64, "init_window_bytes": pl.Int64,
           "init_window_segments": pl.Int64, "max_rwnd_bytes": pl.Int64, "limited_cwnd_share": pl.Float64,
           "limited_rwnd_share": pl.Float64, "limited_app_share": pl.Float64}

#: Data segments per summing block of the shares: the time per kind is added block by block
#: (in ascending direction order), as the columnar code that the core replaced did, so that
#: its sums round the same.
_BLOCK = 1 << 18

_INTS = ("dend", "ack", "win", "hi_dend", "r_hi_ack", "r_win")


def stats(st: pl.DataFrame, est: pl.DataFrame) -> pl.DataFrame:
    """ACK timing, initial window, peer window and limit shares per data direction.

    Args:
        st: Prepared state.
        est: :func:`tracekit.analysis.rtt.smoothed` output (the shares' smoothed RTT).

    Returns:
        ``flow, dir, _data_t0`` (first data byte sent), ``_acked_t`` (the first ACK of the last
        data byte; null: not seen), ``_ack_bytes`` (data bytes the peer's cumulative ACKs cover:
        highest ACK − first data byte, at most the data sent; null: no ACK of data seen),
        ``_ack_t`` (when the highest of those ACKs was seen), ``init_window_bytes,
        init_window_segments, max_rwnd_bytes, limited_cwnd_share, limited_rwnd_share,
        limited_app_share``; one row per direction with data, ascending.
    """
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    # the narrow integer columns widened with MISSING for null, in one parallel select
    ints = st.select(pl.col(_INTS).cast(pl.Int64).fill_null(MISSING))
    dend, ack, win, hi_dend, r_hi_ack, r_win = (ints[c].to_numpy() for c in _INTS)
    key, t0, acked_t, ack_bytes, ack_t, iw_b, iw_n, rwin, cw, rw, app = _core.flow_stats(
        st["g"].to_numpy(), st["len"].to_numpy(), st["time"].to_numpy(), dend, st["new_ack"].to_numpy(), ack, win,
        hi_dend, r_hi_ack, r_win, *est_columns(est), _BLOCK)
    del ints, dend, ack, win, hi_dend, r_hi_ack, r_win
    # the core's columns as they are, then its stand-ins as nulls in one pass
    cols = {"_data_t0": t0, "_acked_t": acked_t, "_ack_bytes": ack_bytes, "_ack_t": ack_t, "init_window_bytes": iw_b,
            "init_window_segments": iw_n, "max_rwnd_bytes": rwin, "limited_cwnd_share": cw,
            "limited_rwnd_share": rw, "limited_app_share": app}
    out = pl.DataFrame({"flow": pl.Series(key >> 1, dtype=pl.UInt32), "dir": pl.Series(key & 1, dtype=pl.Int8),
                        **cols})
    int_cols = ("_ack_bytes", "init_window_bytes", "init_window_segments")
    return out.with_columns(
        *[pl.when(pl.col(c) != MISSING).then(pl.col(c)) for c in int_cols],
        pl.when(pl.col("max_rwnd_bytes") != MISSING).then(pl.col("max_rwnd_bytes")).cast(st["win"].dtype),
        *[pl.col(c).fill_nan(None) for c in ("_acked_t", "_ack_t", "limited_cwnd_share", "limited_rwnd_share",
                                             "limited_app_share")],
    )
