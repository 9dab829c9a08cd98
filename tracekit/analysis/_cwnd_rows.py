"""The inputs of the cwnd analysis as numpy arrays: data segments and ACK stream per data direction.

Each data direction's data segments, and the ACKs that reach its sender, become one
contiguous run of rows in capture order (time, then frame). The latest ACK before every data
segment, the retransmission marks and the SACKed bytes come from searches within those runs
instead of joins and ``over()`` windows; snd_una, the dupACK state, retransmissions and the
minimum RTT from one walk of each direction's ACK stream in the Rust core
(``tracekit._core.cwnd_acks``, src/state/cwnd.rs). Searches put the shorter array on the
query side (a search per ACK, then counts spread over the data rows), since a binary search
per data row costs more than the rest of the step; and arrays of full length are few (each
is freshly paged memory: on the bench capture allocating costs about as much as computing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis._cwnd_packets import KEYS, DataIndex, Packets, frame_rows, sack_places, sacked
from tracekit.analysis._cwnd_seg import (
    as_f64,
    as_i64,
)


@dataclass
class Rows:
    """Data segments of every data direction, direction by direction, each in capture order.

    Per direction (index ``d``, in ``(flow, dir)`` order): rows ``lo[d]:hi[d]``, ACKs
    ``alo[d]:ahi[d]``. Per retransmitted row (``retx_rows``): the highest byte sent before
    it and whether the retransmission timer sent it.
    """

    flow: np.ndarray  # per direction
    dir: np.ndarray
    mss: np.ndarray
    min_rtt: np.ndarray  # NaN: no sample
    syn_lost: np.ndarray
    syn_t: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    alo: np.ndarray
    ahi: np.ndarray
    time: np.ndarray  # per data row
    seq_end: np.ndarray
    pay: np.ndarray  # payload (seq = seq_end - pay)
    una: np.ndarray
    dup: np.ndarray  # sent on a duplicate ACK
    new_ack: np.ndarray  # the latest ACK differs from the previous row's
    sack_at: np.ndarray  # rows with SACKed bytes above una, and how many
    sack_val: np.ndarray
    sack_pos: np.ndarray  # their rows in the flight frame
    seg_rows: np.ndarray  # rows whose segments get SACKed, and from which flight row on
    seg_at: np.ndarray  # (_cwnd_packets.sack_places)
    retx_rows: np.ndarray
    retx_hi: np.ndarray
    a_time: np.ndarray  # per ACK
    a_una: np.ndarray
    retx_timeout: np.ndarray  # per retransmitted row: the retransmission analysis' timeout (retrans.timeout_resends)
    ack_t: np.ndarray  # per data row: when the latest ACK before it arrived (NaN: none)

    def sacked(self, rows: np.ndarray) -> np.ndarray:
        """SACKed bytes at ``rows``."""
        k = np.minimum(np.searchsorted(self.sack_at, rows), max(self.sack_at.size - 1, 0))
        return np.where(self.sack_at[k] == rows, self.sack_val[k], 0) if self.sack_at.size else np.zeros(rows.size,
                                                                                                             np.int64)


def _grouped(mask: np.ndarray, code: np.ndarray, nd: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``mask`` grouped by direction (``code`` per packet, -1: none), in frame order within each.

    One counting sort in the core (``tracekit._core.group_rows``, src/state/group.rs).

    Returns:
        (packet index, rows per direction).
    """
    idx, counts = _core.group_rows(np.ascontiguousarray(mask, dtype=bool), code.astype(np.int32, copy=False), nd)
    return idx, counts


def _late(x: np.ndarray, lo: np.ndarray) -> bool:
    """Does ``x`` decrease anywhere inside one of the groups starting at ``lo``?"""
    late = x[1:] < x[:-1]
    late[lo[(lo > 0) & (lo < x.size)] - 1] = False
    return bool(late.any())


def _time_order(time: np.ndarray, lo: np.ndarray, hi: np.ndarray, reordered: np.ndarray) -> np.ndarray | None:
    """The permutation that puts each group's rows (frame order, frames increasing) in time order.

    A stable sort per group that is out of order, so rows at one time keep their frame order:
    capture order is (time, frame). None when every group is in order already; groups sorted
    are marked in ``reordered``.
    """
    late = time[1:] < time[:-1]
    late[lo[(lo > 0) & (lo < time.size)] - 1] = False
    if not late.any():
        return None
    perm = np.arange(time.size)
    for c in np.unique(np.searchsorted(hi, np.flatnonzero(late), side="right")).tolist():
        a, b = int(lo[c]), int(hi[c])
        perm[a:b] = a + np.argsort(time[a:b], kind="stable")
        reordered[c] = True
    return perm


def _by_rank(idx: np.ndarray, rank: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
    """The permutation that puts each group's rows in rank order (None: they are)."""
    lo = np.cumsum(counts) - counts
    if not _late(rank, lo):
        return None
    return np.lexsort((rank, np.repeat(np.arange(counts.size), counts)))


@dataclass
class _Streams:
    """Each data direction's data rows and the ACKs that reach its sender, one run per direction.

    Packet rows ``d_idx`` (data, ``lo[d]:hi[d]``) and ``a_idx`` (ACKs, ``alo[d]:ahi[d]``) with
    their times; :func:`_latest_acks` puts each run in capture order (``reordered``: the data
    runs it re-sorted). ``frames_up``: the capture's frame numbers strictly increase.
    """

    d_idx: np.ndarray
    counts: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    a_idx: np.ndarray
    acounts: np.ndarray
    alo: np.ndarray
    ahi: np.ndarray
    time: np.ndarray
    a_time: np.ndarray
    reordered: np.ndarray
    frames_up: bool


def _streams(p: Packets, code: np.ndarray, d_mask: np.ndarray, dflow: np.ndarray, ddir: np.ndarray
             ) -> _Streams | None:
    """Group the data segments and the ACKs by data direction (None: no data rows or no ACKs).

    An ACK travels the other way: it belongs to the data direction ``1 - dir``.
    """
    nd = dflow.size
    d_idx, counts = _grouped(d_mask, code, nd)
    a_idx, acounts = _grouped(p.tcp & ~p.dnull & p.ack, p.codes(dflow, ddir, reverse=True), nd)
    if d_idx.size == 0 or a_idx.size == 0:
        return None
    hi = np.cumsum(counts)
    ahi = np.cumsum(acounts)
    frames_up = p.n < 2 or bool((p.fr[1:] > p.fr[:-1]).all())
    return _Streams(d_idx=d_idx, counts=counts, lo=hi - counts, hi=hi, a_idx=a_idx, acounts=acounts,
                    alo=ahi - acounts, ahi=ahi, time=p.t[d_idx], a_time=p.t[a_idx],
                    reordered=np.zeros(nd, dtype=bool), frames_up=frames_up)


def _capture_order(p: Packets, s: _Streams) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Put every run in capture order (time, then frame) and give each row its place in it.

    Returns:
        ``(key, tie)`` of the data rows and of the ACK rows: one ACK reaches the sender before a
        segment when its pair is lower (the core's ``cwnd_acks`` merges the two streams by it).
    """
    nd = s.lo.size
    if nd <= 64 and s.frames_up:
        # frames increase: frame order is capture order except where times go back (packets
        # of several queues); each stream is put in time order, and ordered by (time, frame)
        by = _time_order(s.time, s.lo, s.hi, s.reordered)
        if by is not None:
            s.d_idx, s.time = s.d_idx[by], s.time[by]
        by = _time_order(s.a_time, s.alo, s.ahi, np.zeros(nd, dtype=bool))
        if by is not None:
            s.a_idx, s.a_time = s.a_idx[by], s.a_time[by]
        return s.time, p.fr[s.d_idx], s.a_time, p.fr[s.a_idx]
    # many directions or frame numbers out of order: rank every packet by (time, frame)
    inv = np.empty(p.n, dtype=np.int64)
    inv[np.lexsort((p.fr, p.t))] = np.arange(p.n)
    d_rank, a_rank = inv[s.d_idx], inv[s.a_idx]
    del inv
    by = _by_rank(s.d_idx, d_rank, s.counts)
    if by is not None:
        s.d_idx, d_rank, s.time = s.d_idx[by], d_rank[by], s.time[by]
        s.reordered[:] = True
    by = _by_rank(s.a_idx, a_rank, s.acounts)
    if by is not None:
        s.a_idx, a_rank, s.a_time = s.a_idx[by], a_rank[by], s.a_time[by]
    return np.zeros(d_rank.size), d_rank, np.zeros(a_rank.size), a_rank


def _marks(p: Packets, flight: pl.DataFrame, retrans: pl.DataFrame, timeouts: pl.DataFrame | None,
           s: _Streams, code: np.ndarray, d_mask: np.ndarray, sacked_at: np.ndarray | None
           ) -> tuple[np.ndarray, ...]:
    """What the other analyses say per data row: SACKed bytes, retransmissions, and the timeouts.

    Returns:
        (rows with SACKed bytes, their counts and flight rows, retransmitted rows, rows the
        retransmission timer sent (``timeouts``' frames), and :func:`sack_places`' two arrays).
    """
    di = DataIndex(s.d_idx, code, s.lo, s.hi, s.frames_up)
    di.reordered = s.reordered
    sack_at, sack_val, sack_pos = sacked(p, flight, di, d_mask)
    seg_rows, seg_at = sack_places(p, flight, di, sacked_at)
    given = timer = np.empty(0, dtype=np.int64)
    if retrans.height:
        given = frame_rows(p, di, retrans.select(*KEYS, pl.col("frame").cast(pl.UInt64)))[0]
    if timeouts is not None and timeouts.height:
        timer = frame_rows(p, di, timeouts.select(*KEYS, pl.col("frame").cast(pl.UInt64)))[0]
    return sack_at, sack_val, sack_pos, given, timer, seg_rows, seg_at


def _acks(p: Packets, s: _Streams, order: tuple[np.ndarray, ...], seq_end: np.ndarray, pay: np.ndarray,
          given: np.ndarray, timer: np.ndarray) -> tuple[np.ndarray, ...]:
    """The ACK stream walked with the data segments in capture order (``order``: :func:`_capture_order`),
    one direction at a time in the core (``tracekit._core.cwnd_acks``): the latest ACK before each
    segment, snd_una, dupACKs, retransmissions and Karn's minimum RTT.

    Returns:
        (latest ACK row per data row (-1: none), cumulative ACK per ACK row, una per data row,
        sent on a duplicate ACK per data row, retransmitted rows, which are timeouts (the
        ``timer`` rows), the highest byte sent before each, each direction's minimum RTT).
    """
    i, f = as_i64, as_f64
    key, tie, a_key, a_tie = order
    j, una, dup, a_una, retx_rows, retx_timeout, retx_hi, min_rtt = _core.cwnd_acks(
        f(s.time), i(seq_end), i(pay), f(key), i(tie), i(given), i(timer), i(s.lo), i(s.hi), i(s.alo), i(s.ahi),
        f(s.a_time), i(p.take("ack", s.a_idx)), f(a_key), i(a_tie))
    return j, a_una, una, dup, retx_rows, retx_timeout, retx_hi, min_rtt


def _segment_sizes(dd: pl.DataFrame, pay: np.ndarray, s: _Streams) -> np.ndarray:
    """Each direction's segment size: ``dirs``' ``mss``, else (no size known) the largest segment sent."""
    mss = dd["mss"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    unknown = dd["mss"].is_null().to_numpy()
    if unknown.any():
        ne = s.counts > 0
        big_seg = np.zeros(dd.height)
        big_seg[ne] = np.maximum.reduceat(pay, s.lo[ne])
        mss = np.where(unknown, big_seg, mss)
    return mss


def build(pk: pl.DataFrame, flight: pl.DataFrame, retrans: pl.DataFrame, dirs: pl.DataFrame,
          packets: Packets | None = None, sacked_at: np.ndarray | None = None,
          timeouts: pl.DataFrame | None = None) -> Rows | None:
    """Gather the estimate's inputs (see the module docstring); None when there are no data rows or no ACKs.

    Args:
        pk: Packets at the sender's vantage point.
        flight: The flight frame (its SACK accounting; may be empty).
        retrans: The retransmissions frame (its frames are retransmissions; may be empty).
        dirs: Data directions (``flow, dir, mss``) from :func:`tracekit.analysis.cwnd.data_directions`.
        packets: ``pk``'s columns if already read.
        sacked_at: Per flight row, from when its segment counts as SACKed
            (:func:`tracekit.analysis.flight.flight_and_sacks`; None: unknown).
        timeouts: ``flow, dir, frame`` of the re-sends the retransmission timer sent
            (:func:`tracekit.analysis.retrans.timeout_resends`; None: none).
    """
    p = packets if packets is not None else Packets(pk)
    dd = dirs.filter(pl.col("dir").is_not_null()).sort(KEYS)  # packets without a direction never join one
    dflow, ddir = dd["flow"].to_numpy(), dd["dir"].to_numpy()
    code = p.codes(dflow, ddir)
    d_mask = p.tcp & ~p.dnull & p.pay & p.seq_ok & (code >= 0)
    s = _streams(p, code, d_mask, dflow, ddir)
    if s is None:
        return None
    s_idx = np.flatnonzero(p.tcp & ~p.dnull & p.syn & (code >= 0))
    s_code = code[s_idx]

    order = _capture_order(p, s)
    sack_at, sack_val, sack_pos, given, timer, seg_rows, seg_at = _marks(p, flight, retrans, timeouts, s, code,
                                                                        d_mask, sacked_at)
    del d_mask, code
    seq_end = p.take("seq", s.d_idx)
    pay = p.payload[s.d_idx]
    seq_end += pay
    s.d_idx = np.empty(0, dtype=np.int64)
    j, a_una, una, dup, retx_rows, retx_timeout, retx_hi, min_rtt = _acks(p, s, order, seq_end, pay, given, timer)
    del order
    new_ack = np.empty(j.size, dtype=bool)  # the segments one ACK releases: a new latest ACK
    new_ack[0] = True
    np.not_equal(j[1:], j[:-1], out=new_ack[1:])
    s.a_idx = np.empty(0, dtype=np.int64)
    ack_t = s.a_time[np.maximum(j, 0)] if s.a_time.size else np.zeros(j.size)
    ack_t[j < 0] = np.nan
    del j

    # a retransmitted SYN: the transfer starts with cwnd = 1 segment, ssthresh = 2
    syn_n = np.bincount(s_code, minlength=dd.height)
    syn_t = np.full(dd.height, -np.inf)
    np.maximum.at(syn_t, s_code, p.t[s_idx])
    return Rows(
        flow=dflow, dir=ddir, mss=_segment_sizes(dd, pay, s), min_rtt=min_rtt, syn_lost=syn_n > 1, syn_t=syn_t,
        lo=s.lo, hi=s.hi, alo=s.alo, ahi=s.ahi, time=s.time, seq_end=seq_end, pay=pay, una=una, dup=dup,
        new_ack=new_ack, sack_at=sack_at, sack_val=sack_val, sack_pos=sack_pos, seg_rows=seg_rows,
        seg_at=seg_at,
        retx_rows=retx_rows, retx_hi=retx_hi, a_time=s.a_time, a_una=a_una, retx_timeout=retx_timeout, ack_t=ack_t)
