"""Loss events and per-direction statistics of a cwnd frame, as segmented numpy passes.

:func:`tracekit.analysis.cwnd.loss_events` and :func:`~tracekit.analysis.cwnd.flow_stats`
define the results; here a frame whose series are plain (sources ``estimate``/``trace``
only, no missing or NaN cwnd or times) is worked on as contiguous per-series runs: the
frame :func:`tracekit.analysis.cwnd.cwnd` returns is already ordered that way, any other
is sorted once. Frames outside that shape return None and the callers use the polars
definitions instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl


@dataclass
class _Series:
    """The frame's rows in (flow, dir, source, time) order, nulls of flow and dir last.

    ``start`` holds the first row of every (flow, dir, source) series, ``pair`` the first
    row of every (flow, dir).
    """

    order: np.ndarray | None  # frame row of each sorted row (None: the frame's own order)
    trace: np.ndarray
    time: np.ndarray
    cwnd: np.ndarray
    ssth: np.ndarray  # NaN: null
    rec: np.ndarray
    start: np.ndarray
    pair: np.ndarray


def _series(df: pl.DataFrame) -> _Series | None:
    """Sort ``df`` into series (see :class:`_Series`), or None when it is not plain."""
    src = df["source"]
    cw, tm = df["cwnd_bytes"], df["time"]
    if src.null_count() or cw.null_count() or tm.null_count():
        return None
    trace = (src == "trace").to_numpy()
    if not (trace | (src == "estimate").to_numpy()).all():
        return None
    time, cwnd = tm.to_numpy(), cw.to_numpy()
    st = df["ssthresh_bytes"]
    ssth = (st.fill_null(np.nan) if st.null_count() else st).to_numpy()
    if np.isnan(time).any() or np.isnan(cwnd).any() or (st.null_count() < st.len() and st.is_nan().any()):
        return None
    rec = (df["phase"] == "recovery").fill_null(False).to_numpy()
    fl, dr = df["flow"], df["dir"]
    # flow and dir as they sort (nulls last)
    f = fl.cast(pl.Int64).fill_null(1 << 32).to_numpy() if fl.null_count() else fl.to_numpy()
    d = dr.cast(pl.Int16).fill_null(1 << 8).to_numpy() if dr.null_count() else dr.to_numpy()
    n = time.size
    # rows already in (flow, dir, source, time) order? Compared key by key (no combined key array)
    same = f[1:] == f[:-1]
    back = f[1:] < f[:-1]
    back |= same & (d[1:] < d[:-1])
    same &= d[1:] == d[:-1]
    pair_same = same.copy()
    back |= same & (trace[1:] < trace[:-1])
    same &= trace[1:] == trace[:-1]
    back |= same & (time[1:] < time[:-1])
    order = None
    if back.any():
        order = np.lexsort((time, trace, d, f))
        trace, time, cwnd, ssth, rec = trace[order], time[order], cwnd[order], ssth[order], rec[order]
        f, d = f[order], d[order]
        same = f[1:] == f[:-1]
        same &= d[1:] == d[:-1]
        pair_same = same.copy()
        same &= trace[1:] == trace[:-1]
    start = np.flatnonzero(np.concatenate([[True], ~same])) if n else np.zeros(0, dtype=np.int64)
    pair = np.flatnonzero(np.concatenate([[True], ~pair_same])) if n else np.zeros(0, dtype=np.int64)
    return _Series(order, trace, time, cwnd, ssth, rec, start, pair)


def _events(s: _Series, decrease: float) -> np.ndarray:
    """Rows that start a loss event (the rules of :func:`tracekit.analysis.cwnd.loss_events`).

    Each row is compared with the one before it; a series' first row has none (its
    comparisons are false, as polars' nulls were). ``decrease``: the fall (a fraction) that
    makes a run of falling traced samples a loss.
    """
    cw, st, rec = s.cwnd, s.ssth, s.rec
    first = s.start
    # estimate: a new ssthresh, entering recovery, or falling to half outside recovery
    ev: npt.NDArray[np.bool_] = ~np.isnan(st)
    ev[1:] &= np.isnan(st[:-1]) | (st[1:] != st[:-1])
    ev[first] = ~np.isnan(st[first])
    entered = rec.copy()
    entered[1:] &= ~rec[:-1]
    entered[first] = rec[first]
    ev |= entered
    halved = np.zeros(cw.size, dtype=bool)
    np.less_equal(cw[1:], 0.5 * cw[:-1], out=halved[1:])
    halved[1:] &= ~rec[:-1]
    halved[first] = False
    ev |= halved
    if s.trace.any():
        # trace: a run of falling samples that loses at least `decrease` of the value before it
        dec = np.zeros(cw.size, dtype=bool)
        np.less(cw[1:], cw[:-1], out=dec[1:])
        dec[first] = False
        begin = dec.copy()
        begin[1:] &= ~dec[:-1]
        cuts = np.union1d(first, np.flatnonzero(begin))
        low = np.minimum.reduceat(np.where(dec, cw, np.inf), cuts)
        run_min = np.repeat(low, np.diff(cuts, append=cw.size))
        prev = np.empty(cw.size)
        prev[1:] = cw[:-1]
        prev[first] = np.nan
        drop = begin & (run_min <= (1.0 - decrease) * prev)
        ev = np.where(s.trace, drop, ev)
    return ev


def loss_events(df: pl.DataFrame, columns: list[str], decrease: float) -> pl.DataFrame | None:
    """The rows of ``df`` that start loss events, by flow, dir, source and time (None: not plain).

    Args:
        df: A :data:`tracekit.schema.CWND` frame.
        columns: The columns to return.
        decrease: See :data:`tracekit.analysis.cwnd.DECREASE`.
    """
    s = _series(df)
    if s is None:
        return None
    rows = np.flatnonzero(_events(s, decrease))
    if s.order is not None:
        rows = s.order[rows]
    return df.select(columns)[rows]


def flow_stats(df: pl.DataFrame, schema: dict[str, pl.DataType], decrease: float,
               events: list[pl.DataFrame] | None = None) -> pl.DataFrame | None:
    """Per (flow, dir): largest cwnd, source, loss events and the first one's time (None: not plain).

    The tool's own series is preferred when the direction has one: in the sorted order it is
    the direction's last series.

    Args:
        df: A :data:`tracekit.schema.CWND` frame.
        schema: The columns and dtypes to return.
        decrease: See :data:`tracekit.analysis.cwnd.DECREASE`.
        events: If given, the chosen series' loss events are appended to it as one frame
            ``flow, dir, time, _prev`` (``_prev``: the series' sample before the event's first
            row; the row's own time for a series' first row).
    """
    s = _series(df)
    if s is None:
        return None
    n = s.time.size
    ends = np.append(s.pair[1:], n)
    # the chosen series of each direction: its last one
    chosen = s.start[np.searchsorted(s.start, ends, side="left") - 1]
    ev = _events(s, decrease)
    take = None
    if (chosen != s.pair).any():  # directions with both series: the estimate's rows do not count
        mark = np.zeros(n + 1, dtype=np.int8)
        mark[chosen] = 1
        mark[ends] -= 1
        take = np.cumsum(mark[:n]) > 0
        ev &= take
    count = np.add.reduceat(ev, s.pair, dtype=np.int64)
    pos = np.flatnonzero(ev)
    first_ev = np.full(s.pair.size, np.nan)
    if pos.size:
        pair_of = np.searchsorted(s.pair, pos, side="right") - 1
        head = np.concatenate([[True], pair_of[1:] != pair_of[:-1]])
        first_ev[pair_of[head]] = s.time[pos[head]]
    big = np.maximum.reduceat(s.cwnd if take is None else np.where(take, s.cwnd, -np.inf), s.pair)
    if events is not None:
        prev = np.maximum(pos - 1, 0)
        first_row = np.zeros(n, dtype=bool)
        first_row[s.start] = True
        pt = np.where(first_row[pos], s.time[pos], s.time[prev])
        er = pos if s.order is None else s.order[pos]
        events.append(df.select("flow", "dir")[er].with_columns(time=pl.Series(s.time[pos], dtype=pl.Float64),
                                                               _prev=pl.Series(pt, dtype=pl.Float64)))
    rows = chosen if s.order is None else s.order[chosen]
    out = df.select("flow", "dir")[rows].with_columns(
        max_cwnd_bytes=pl.Series(big), cwnd_source=pl.Series(np.where(s.trace[chosen], "trace", "estimate")),
        loss_events=pl.Series(count, dtype=pl.UInt32),
        first_loss_s=pl.Series(first_ev, nan_to_null=True))
    return out.select([pl.col(c).cast(t) for c, t in schema.items()])
