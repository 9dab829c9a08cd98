"""Per-direction parts of the flows frame computed on numpy arrays in grouped order.

Both functions read the prepared state (:func:`tracekit.analysis._state.prepare`) through
its grouped order (``_go``), where each direction's rows are one contiguous run in packet
order, so a "per direction" aggregate is one ``reduceat`` or ``bincount`` and "the first row
of a direction satisfying X" is the first row of its run among the rows satisfying X. No
Python loop runs per row or per direction. Definitions: the :mod:`.flows` docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tracekit.analysis._groups import MISSING, Segments
from tracekit.analysis._state import Ints, segments
from tracekit.analysis.rtt import srtt_at

_EMPTY_TIMING = {"flow": pl.UInt32, "dir": pl.Int8, "_data_t0": pl.Float64, "_acked_t": pl.Float64,
                 "_ack_bytes": pl.Int64, "_ack_t": pl.Float64, "init_window_bytes": pl.Int64,
                 "init_window_segments": pl.Int64, "max_rwnd_bytes": pl.Int64}
_EMPTY_SHARES = {"flow": pl.UInt32, "dir": pl.Int8, "limited_cwnd_share": pl.Float64,
                 "limited_rwnd_share": pl.Float64, "limited_app_share": pl.Float64}


#: Rows per block in :func:`shares`.
_BLOCK = 1 << 18


def _runs(g: np.ndarray) -> np.ndarray:
    """Start positions of the runs of equal values in ``g`` (non-empty ``g``)."""
    return np.flatnonzero(np.r_[True, g[1:] != g[:-1]])


def _keyed(keys: np.ndarray) -> pl.DataFrame:
    """``flow`` and ``dir`` columns of direction ids ``2·flow + dir``."""
    k = keys.astype(np.int64)
    return pl.DataFrame({"flow": (k >> 1).astype(np.uint32), "dir": (k & 1).astype(np.int8)})


@dataclass(frozen=True)
class DataRows:
    """The data rows of a prepared state in grouped order, shared by :func:`timing` and :func:`shares`.

    Attributes:
        sg: Every row in grouped order (:func:`tracekit.analysis._state.segments`).
        order: ``sg.order`` as intp.
        d: The rows with payload, in grouped order (ascending within a direction).
        starts: Where each direction's run starts in ``d``.
        keys: The direction id (``2·flow + dir``) of each run, ascending.
        run: The run number of each entry of ``d`` (intp; shared: do not modify).
    """

    sg: Segments
    order: np.ndarray
    d: np.ndarray
    starts: np.ndarray
    keys: np.ndarray
    run: np.ndarray


def data_rows(st: pl.DataFrame) -> DataRows:
    """:class:`DataRows` of a prepared state."""
    sg = segments(st)
    o = sg.order.astype(np.intp, copy=False) if st.height else np.zeros(0, np.intp)
    ln = st["len"].to_numpy()
    d = o[ln[o] > 0]
    if not len(d):
        z = np.zeros(0, np.int64)
        return DataRows(sg, o, d, z, z, np.zeros(0, np.intp))
    gd = st["g"].to_numpy()[d].astype(np.int64)
    ds = _runs(gd)
    run = np.repeat(np.arange(len(ds), dtype=np.intp), np.diff(np.r_[ds, len(d)]))
    return DataRows(sg, o, d, ds, gd[ds], run)


def timing(st: pl.DataFrame, dr: DataRows | None = None) -> pl.DataFrame:
    """ACK timing, the initial window and the peer's largest advertised window per data direction.

    Args:
        st: Prepared state (non-empty).
        dr: ``data_rows(st)``, if at hand.

    Returns:
        ``flow, dir, _data_t0`` (first data byte sent), ``_acked_t`` (the first ACK of the last
        data byte; null: not seen), ``_ack_bytes`` (data bytes the peer's cumulative ACKs cover:
        highest ACK − first data byte, at most the data sent; null: no ACK of data seen),
        ``_ack_t`` (when the highest of those ACKs was seen), ``init_window_bytes,
        init_window_segments, max_rwnd_bytes``; one row per direction with data, ascending.
    """
    dr = data_rows(st) if dr is None else dr
    d, ds, keys = dr.d, dr.starts, dr.keys  # d: data rows (ascending within a direction)
    if not len(d):
        return pl.DataFrame(schema=_EMPTY_TIMING)
    time = st["time"].to_numpy()
    t0 = np.minimum.reduceat(time[d], ds)
    dend = Ints(st, "dend").at(d)  # seq + len: never null, unlike seq (read as dend - len)
    last = np.maximum.reduceat(dend, ds)
    dend -= st["len"].to_numpy()[d]
    s0 = np.minimum.reduceat(dend, ds)
    del dend
    acks = _acks_of_data(st, dr, s0, last)
    iw_b, iw_n = _initial_window(st, dr, acks.first)
    no_iw = (acks.first == np.iinfo(np.int64).max) | (iw_n == 0)  # no ACK of data seen, or nothing before it
    rwin = _peer_window(st, dr)
    return _keyed(keys).with_columns(
        _data_t0=pl.Series(t0),
        _acked_t=pl.Series(acks.end_t).fill_nan(None),
        _ack_bytes=pl.Series(acks.bytes).set(pl.Series(acks.bytes == MISSING), None),
        _ack_t=pl.Series(acks.t).fill_nan(None),
        init_window_bytes=pl.Series(iw_b).set(pl.Series(no_iw), None),
        init_window_segments=pl.Series(iw_n).set(pl.Series(no_iw), None),
        max_rwnd_bytes=pl.Series(rwin).set(pl.Series(rwin == MISSING), None).cast(st["win"].dtype),
    )


@dataclass(frozen=True)
class _Acks:
    """Per data direction, from the peer's ACKs that raise the cumulative ACK.

    Attributes:
        end_t: The first ACK of the last data byte (NaN: not seen).
        first: The state row of the first ACK of data (int64 max: none).
        bytes: Data bytes covered by the highest of them (``MISSING``: none).
        t: When the highest was seen (NaN: none).
    """

    end_t: np.ndarray
    first: np.ndarray
    bytes: np.ndarray
    t: np.ndarray


def _acks_of_data(st: pl.DataFrame, dr: DataRows, s0: np.ndarray, last: np.ndarray) -> _Acks:
    """:class:`_Acks` of every data direction, whose data spans ``s0`` (first byte) to ``last`` (end)."""
    o, keys = dr.order, dr.keys
    g_all = st["g"].to_numpy()
    time = st["time"].to_numpy()
    slot = np.full(int(max(keys.max(), g_all.max())) + 2, -1, dtype=np.int64)  # direction id -> data-direction
    slot[keys] = np.arange(len(keys))
    # ACKs that raise the cumulative ACK, for the direction they acknowledge (the other one)
    a = o[st["new_ack"].to_numpy()[o]]
    tgt = slot[g_all[a].astype(np.int64) ^ 1] if len(a) else np.zeros(0, np.int64)
    a, tgt = a[tgt >= 0], tgt[tgt >= 0]
    ack = Ints(st, "ack").at(a)
    # runs of one source direction have one target: the first row of a run is its earliest
    tend = np.full(len(keys), np.nan)
    fin = ack >= last[tgt]
    if fin.any():
        fr = _runs(tgt[fin])
        tend[tgt[fin][fr]] = np.minimum.reduceat(time[a[fin]], fr)
    first_ack = np.full(len(keys), np.iinfo(np.int64).max)
    cov = ack > s0[tgt]
    ack_bytes = np.full(len(keys), MISSING, dtype=np.int64)
    ack_t = np.full(len(keys), np.nan)
    if cov.any():
        cr = _runs(tgt[cov])
        first_ack[tgt[cov][cr]] = a[cov][cr]
        # cumulative ACKs only rise: the run's largest is the most the receiver had got
        ka = tgt[cov][cr]
        ack_bytes[ka] = np.minimum(np.maximum.reduceat(ack[cov], cr), last[ka]) - s0[ka]
        ack_t[ka] = np.maximum.reduceat(time[a[cov]], cr)
    return _Acks(end_t=tend, first=first_ack, bytes=ack_bytes, t=ack_t)


def _initial_window(st: pl.DataFrame, dr: DataRows, first_ack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes and segments each direction sent before the first ACK of its data (its state row ``first_ack``).

    The initial window is a prefix of each direction's run (its rows ascend); (run number,
    row) ascends along ``d``, so one sorted look-up finds where every prefix ends, and a
    running sum of the lengths gives its bytes.
    """
    d, ds, nk = dr.d, dr.starts, len(dr.keys)
    rank = dr.run.astype(np.int64) << 32
    rank += d
    stop = np.searchsorted(rank, (np.arange(nk, dtype=np.int64) << 32) + np.minimum(first_ack, 1 << 32))
    del rank
    iw_n = (stop - ds).astype(np.int64)
    ln_d = st["len"].to_numpy()[d]
    csum = np.empty(len(ln_d) + 1, dtype=np.int64)  # (np.r_ would copy it once more)
    csum[0] = 0
    np.cumsum(ln_d, dtype=np.int64, out=csum[1:])
    return csum[stop] - csum[ds], iw_n


def _peer_window(st: pl.DataFrame, dr: DataRows) -> np.ndarray:
    """The largest window the other direction advertised (over all its packets; ``MISSING``: none)."""
    sg, keys = dr.sg, dr.keys
    w = Ints(st, "win").at(dr.order)
    starts = np.asarray(sg.starts, dtype=np.intp)
    wmax = np.maximum.reduceat(w, starts) if len(w) else w
    rw = np.full(int(max(keys.max(), st["g"].to_numpy().max())) + 2, MISSING, dtype=np.int64)
    rw[sg.keys.astype(np.int64)] = wmax
    peer: np.ndarray = rw[keys ^ 1]  # (numpy types indexing by an array of unknown dtype as Any)
    return peer


def shares(st: pl.DataFrame, est: pl.DataFrame, dr: DataRows | None = None) -> pl.DataFrame:
    """Time shares limited by the receiver window, the application and cwnd (:mod:`.flows` docstring).

    Args:
        st: Prepared state.
        est: :func:`tracekit.analysis.rtt.smoothed` output.
        dr: ``data_rows(st)``, if at hand.

    Returns:
        ``flow, dir, limited_cwnd_share, limited_rwnd_share, limited_app_share`` per data direction.
    """
    if st.is_empty():
        return pl.DataFrame(schema=_EMPTY_SHARES)
    dr = data_rows(st) if dr is None else dr
    d, starts, keys = dr.d, dr.starts, dr.keys  # data rows in grouped order
    if not len(d):
        return pl.DataFrame(schema=_EMPTY_SHARES)
    ln_all = st["len"].to_numpy()
    srtt = srtt_at(st, est, d)
    srtt[np.isnan(srtt)] = 0.0  # no sample yet: no gap counts as the application's
    mss_g = np.maximum.reduceat(ln_all[d], starts)
    last = np.zeros(len(d), dtype=bool)
    last[starts[1:] - 1] = True
    last[-1] = True
    time, hi, ra, rw = st["time"].to_numpy(), Ints(st, "hi_dend"), Ints(st, "r_hi_ack"), Ints(st, "r_win")
    ng = len(keys)
    sums = np.zeros((ng, 3))
    # in blocks of rows (one look-ahead row each): the dozen row-long temporaries stay small
    for a in range(0, len(d), _BLOCK):
        b = min(a + _BLOCK, len(d))
        rows = d[a:min(b + 1, len(d))]
        m = b - a
        t = time[rows]
        lst = last[a:b]
        # each segment stands for the time until the direction's next one (the last: none)
        w = np.zeros(m)
        k = len(t) - 1  # m with a look-ahead row, m - 1 in the last block (its last row is a direction's last)
        np.subtract(t[1:], t[:k], out=w[:k])
        w[lst] = 0.0
        np.clip(w, 0.0, None, out=w)
        grp = dr.run[a:b]
        ack = ra.at(rows)
        hd = hi.at(rows[:m])
        win = rw.at(rows[:m])
        unacked = np.where(ack[:m] == MISSING, 0, np.clip(hd - ack[:m], 0, None))
        rwnd = (win != MISSING) & (ack[:m] != MISSING) & (unacked + mss_g[grp] > win)
        del unacked, win
        next_ack = np.full(m, MISSING, dtype=np.int64)
        next_ack[:len(ack) - 1] = ack[1:]
        next_ack[lst] = MISSING
        app = ~rwnd & (w > srtt[a:b]) & (next_ack != MISSING) & (next_ack >= hd)
        # one count for the three kinds: bin 3·group + (0 cwnd, 1 rwnd, 2 app)
        kind = rwnd.view(np.uint8) + app.view(np.uint8) * np.uint8(2)
        sums += np.bincount(grp * 3 + kind, weights=w, minlength=3 * ng).reshape(ng, 3)
    tot = sums.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = {k: sums[:, c] / tot for c, k in enumerate(("cwnd", "rwnd", "app"))}
    return _keyed(keys).with_columns(
        **{f"limited_{k}_share": pl.Series(v, dtype=pl.Float64).fill_nan(None) for k, v in share.items()})
