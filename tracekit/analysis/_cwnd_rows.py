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
from tracekit.analysis._cwnd_packets import KEYS, DataIndex, Packets, frame_rows, sacked
from tracekit.analysis._cwnd_seg import (
    as_f64,
    as_i64,
    below,
    count_below,
    ranges,
)


@dataclass
class Rows:
    """Data segments of every data direction, direction by direction, each in capture order.

    Per direction (index ``d``, in ``(flow, dir)`` order): rows ``lo[d]:hi[d]``, ACKs
    ``alo[d]:ahi[d]``. Per retransmitted row (``retx_rows``): the highest byte sent before
    it and the arrival times of the latest ACK and of the latest ACK that advanced.
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
    retx_rows: np.ndarray
    retx_hi: np.ndarray
    retx_tack: np.ndarray
    retx_tnew: np.ndarray
    a_time: np.ndarray  # per ACK
    a_una: np.ndarray
    retx_fast: np.ndarray  # per retransmitted row: the retransmissions frame calls it ``fast`` (no timeout)

    def sacked(self, rows: np.ndarray) -> np.ndarray:
        """SACKed bytes at ``rows``."""
        k = np.minimum(np.searchsorted(self.sack_at, rows), max(self.sack_at.size - 1, 0))
        return np.where(self.sack_at[k] == rows, self.sack_val[k], 0) if self.sack_at.size else np.zeros(rows.size,
                                                                                                             np.int64)


def _grouped(mask: np.ndarray, code: np.ndarray, nd: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``mask`` grouped by direction (``code`` per packet, -1: none), in frame order within each.

    Returns:
        (packet index, rows per direction).
    """
    if nd <= 16:  # few directions: one selection each
        parts = [np.flatnonzero(mask & (code == c)) for c in range(nd)]
        if not parts:
            return np.empty(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(parts), np.array([x.size for x in parts], dtype=np.int64)
    sel = np.flatnonzero(mask & (code >= 0))
    c = code[sel]
    counts = np.bincount(c, minlength=nd)
    # a stable radix sort on one or two bytes
    perm = np.argsort(c.astype(np.uint8 if nd < 256 else np.uint16) if nd < (1 << 16) else c, kind="stable")
    return sel[perm], counts


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


def _acks_before(time: np.ndarray, d_idx: np.ndarray, lo: np.ndarray, hi: np.ndarray, a_time: np.ndarray,
                 a_idx: np.ndarray, alo: np.ndarray, ahi: np.ndarray, fr: np.ndarray) -> np.ndarray:
    """Per data row: the latest ACK of its direction before it in capture order (time, then frame), -1 for none.

    Both streams (packet rows ``d_idx``, ``a_idx``) are in capture order and frame numbers
    ``fr`` are unique. An ACK at the same time as a segment precedes it when its frame number
    is lower (few rows: looked at block by block).
    """
    j = np.empty(time.size, dtype=np.int64)
    for c in range(lo.size):
        a, b = int(lo[c]), int(hi[c])
        at = a_time[alo[c]:ahi[c]]
        if b == a:
            continue
        tt = time[a:b]
        k = count_below(at, tt, presorted=True)  # ACKs strictly earlier
        if at.size:
            tie = np.flatnonzero(at[np.minimum(k, at.size - 1)] == tt)
            if tie.size:
                end = np.searchsorted(at, tt[tie], side="right")
                f, af = fr[d_idx[a + tie]], fr[a_idx[alo[c]:ahi[c]]]
                start = k[tie]
                for step in range(int((end - start).max())):
                    inside = start + step < end
                    k[tie] += inside & (af[np.minimum(start + step, at.size - 1)] < f)
        j[a:b] = k + (alo[c] - 1)
    return j


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


def _latest_acks(p: Packets, s: _Streams) -> np.ndarray:
    """Put every run in capture order (time, then frame) and find, per data row, the latest ACK before it.

    Returns:
        The ACK row of each data row (-1: none), non-decreasing within a direction.
    """
    nd = s.lo.size
    if nd <= 64 and s.frames_up:
        # frames increase: frame order is capture order except where times go back (packets
        # of several queues); each stream is put in time order, then the streams are merged by time
        by = _time_order(s.time, s.lo, s.hi, s.reordered)
        if by is not None:
            s.d_idx, s.time = s.d_idx[by], s.time[by]
        by = _time_order(s.a_time, s.alo, s.ahi, np.zeros(nd, dtype=bool))
        if by is not None:
            s.a_idx, s.a_time = s.a_idx[by], s.a_time[by]
        del by
        j = _acks_before(s.time, s.d_idx, s.lo, s.hi, s.a_time, s.a_idx, s.alo, s.ahi, p.fr)
    else:
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
        del by
        jr = below(a_rank, s.alo, s.ahi, d_rank, s.lo, s.hi)
        if jr is None:  # never: ranks are below the number of packets
            raise AssertionError("capture ranks out of range")
        j = jr - 1
    return j


def _marks(p: Packets, flight: pl.DataFrame, retrans: pl.DataFrame, s: _Streams, code: np.ndarray,
           d_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the other analyses say per data row: SACKed bytes, retransmissions, and the ``fast`` ones.

    Returns:
        (rows with SACKed bytes, their counts, retransmitted rows, rows the retransmission
        analysis calls ``fast``: no timeout).
    """
    di = DataIndex(s.d_idx, code, s.lo, s.hi, s.frames_up)
    di.reordered = s.reordered
    sack_at, sack_val = sacked(p, flight, di, d_mask)
    given = fast = np.empty(0, dtype=np.int64)
    if retrans.height:
        given = frame_rows(p, di, retrans.select(*KEYS, pl.col("frame").cast(pl.UInt64)))[0]
        if "kind" in retrans.columns:  # re-sends the retransmission analysis finds no timeout
            fast = frame_rows(p, di, retrans.filter(pl.col("kind") == "fast").select(
                *KEYS, pl.col("frame").cast(pl.UInt64)))[0]
    return sack_at, sack_val, given, fast


def _acks(p: Packets, s: _Streams, j: np.ndarray, seq_end: np.ndarray, pay: np.ndarray, given: np.ndarray,
          fast: np.ndarray) -> tuple[np.ndarray, ...]:
    """The ACK stream walked with the data segments, one direction at a time in the core
    (``tracekit._core.cwnd_acks``): snd_una, dupACKs, retransmissions and Karn's minimum RTT.

    Returns:
        (cumulative ACK per ACK row, una per data row, sent on a duplicate ACK per data row,
        retransmitted rows, which are ``fast``, the highest byte sent before each, the arrival
        time of its latest ACK and of its latest advancing ACK, each direction's minimum RTT).
    """
    i, f = as_i64, as_f64
    una, dup, a_una, retx_rows, retx_fast, retx_hi, retx_tack, retx_tnew, min_rtt = _core.cwnd_acks(
        f(s.time), i(seq_end), i(pay), i(j), i(given), i(fast), i(s.lo), i(s.hi), i(s.alo), i(s.ahi), f(s.a_time),
        i(p.take("ack", s.a_idx)))
    return a_una, una, dup, retx_rows, retx_fast, retx_hi, retx_tack, retx_tnew, min_rtt


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
          packets: Packets | None = None) -> Rows | None:
    """Gather the estimate's inputs (see the module docstring); None when there are no data rows or no ACKs.

    Args:
        pk: Packets at the sender's vantage point.
        flight: The flight frame (its SACK accounting; may be empty).
        retrans: The retransmissions frame (its frames are retransmissions; may be empty).
        dirs: Data directions (``flow, dir, mss``) from :func:`tracekit.analysis.cwnd.data_directions`.
        packets: ``pk``'s columns if already read.
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

    j = _latest_acks(p, s)
    # rows before a direction's first ACK lead it (j is non-decreasing): no ACK yet (-1)
    first_ack = np.minimum(np.searchsorted(j, s.alo), s.hi)
    no_ack = ranges(s.lo, first_ack)
    j[no_ack] = -1
    new_ack = np.empty(j.size, dtype=bool)  # the segments one ACK releases: a new latest ACK
    new_ack[0] = True
    np.not_equal(j[1:], j[:-1], out=new_ack[1:])

    sack_at, sack_val, given, fast = _marks(p, flight, retrans, s, code, d_mask)
    del d_mask, code
    seq_end = p.take("seq", s.d_idx)
    pay = p.payload[s.d_idx]
    seq_end += pay
    s.d_idx = np.empty(0, dtype=np.int64)
    a_una, una, dup, retx_rows, retx_fast, retx_hi, retx_tack, retx_tnew, min_rtt = _acks(
        p, s, j, seq_end, pay, given, fast)
    s.a_idx = np.empty(0, dtype=np.int64)
    del j

    # a retransmitted SYN: the transfer starts with cwnd = 1 segment, ssthresh = 2
    syn_n = np.bincount(s_code, minlength=dd.height)
    syn_t = np.full(dd.height, -np.inf)
    np.maximum.at(syn_t, s_code, p.t[s_idx])
    return Rows(
        flow=dflow, dir=ddir, mss=_segment_sizes(dd, pay, s), min_rtt=min_rtt, syn_lost=syn_n > 1, syn_t=syn_t,
        lo=s.lo, hi=s.hi, alo=s.alo, ahi=s.ahi, time=s.time, seq_end=seq_end, pay=pay, una=una, dup=dup,
        new_ack=new_ack, sack_at=sack_at, sack_val=sack_val, retx_rows=retx_rows, retx_hi=retx_hi,
        retx_tack=retx_tack, retx_tnew=retx_tnew, a_time=s.a_time, a_una=a_una, retx_fast=retx_fast)
