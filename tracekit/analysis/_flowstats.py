"""Per data direction parts of the flows frame, from the compiled core's ``flow_stats``.

The rules (ACK timing, the initial window, the peer's largest window, the time shares
limited by the receiver window, the application and cwnd) are per-direction state machines
in ``src/state/flowstats.rs``, fed the prepared state's rows in packet order
(:func:`tracekit.analysis._state.prepare`); this module hands it the columns and returns them
per direction. Definitions: the :mod:`.flows` docstring.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis import _flowdirs as _fd
from tracekit.analysis._groups import MISSING
from tracekit.analysis.rtt import est_columns

#: The types of :func:`stats`' columns.
SCHEMA: dict[str, pl.DataType] = {
    **{c: pl.Float64() for c in ("_data_t0", "_acked_t", "_ack_t", "limited_cwnd_share", "limited_rwnd_share",
                                 "limited_app_share")},
    **{c: pl.Int64() for c in ("_ack_bytes", "init_window_bytes", "init_window_segments", "max_rwnd_bytes")},
}

#: Data segments per summing block of the shares: the time per kind is added block by block
#: (in ascending direction order), as the columnar code that the core replaced did, so that
#: its sums round the same.
_BLOCK = 1 << 18

_INTS = ("dend", "ack", "win", "hi_dend", "r_hi_ack", "r_win")


def stats(st: pl.DataFrame, est: pl.DataFrame) -> tuple[np.ndarray, dict[str, list[Any]]]:
    """ACK timing, initial window, peer window and limit shares per data direction.

    Args:
        st: Prepared state (not empty).
        est: :func:`tracekit.analysis.rtt.smoothed` output (the shares' smoothed RTT).

    Returns:
        The directions with data (keys ``2·flow + dir``, ascending) and per direction (one
        value per key, None for missing): ``_data_t0`` (first data byte sent), ``_acked_t``
        (the first ACK of the last data byte; None: not seen), ``_ack_bytes`` (data bytes the
        peer's cumulative ACKs cover: highest ACK − first data byte, at most the data sent;
        None: no ACK of data seen), ``_ack_t`` (when the highest of those ACKs was seen),
        ``init_window_bytes, init_window_segments, max_rwnd_bytes, limited_cwnd_share,
        limited_rwnd_share, limited_app_share`` (types: :data:`SCHEMA`, ``max_rwnd_bytes``
        that of ``st["win"]``).
    """
    # the narrow integer columns widened with MISSING for null, in one parallel select
    ints = st.select(pl.col(_INTS).cast(pl.Int64).fill_null(MISSING))
    dend, ack, win, hi_dend, r_hi_ack, r_win = (ints[c].to_numpy() for c in _INTS)
    key, t0, acked_t, ack_bytes, ack_t, iw_b, iw_n, rwin, cw, rw, app = _core.flow_stats(
        st["g"].to_numpy(), st["len"].to_numpy(), st["time"].to_numpy(), dend, st["new_ack"].to_numpy(), ack, win,
        hi_dend, r_hi_ack, r_win, *est_columns(est), _BLOCK)
    del ints, dend, ack, win, hi_dend, r_hi_ack, r_win
    # the core's stand-ins as None
    cols = {"_data_t0": t0.tolist(), "_ack_bytes": _fd.ints(ack_bytes), "init_window_bytes": _fd.ints(iw_b),
            "init_window_segments": _fd.ints(iw_n), "max_rwnd_bytes": _fd.ints(rwin)}
    for c, a in (("_acked_t", acked_t), ("_ack_t", ack_t), ("limited_cwnd_share", cw), ("limited_rwnd_share", rw),
                 ("limited_app_share", app)):
        cols[c] = _fd.floats(a)
    return key, cols
