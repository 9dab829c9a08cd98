"""Bytes in flight at each data segment: the ``flight`` frame (:data:`tracekit.schema.FLIGHT`).

Three measures, one row per data segment (payload > 0) as the vantage point saw it:

* ``flight_bytes`` reproduces Wireshark's ``tcp.analysis.bytes_in_flight`` (its default,
  payload-based method, ``tcp_analyze_sequence_number`` in ``packet-tcp.c``): Wireshark keeps
  the segments of each direction that no ACK from the other side has covered yet (a segment
  leaves the list when an ACK reaches its end; an ACK inside a segment trims it), and at each
  data segment reports *highest end in that list − lowest start in it*, the segment itself
  included. It then subtracts the bytes of every SACK block carried by the other side's
  latest packet (all blocks, D-SACK ones too) and, for a segment with SYN or FIN, the one
  virtual byte. The value is valid from the first segment (Wireshark 4.0), empty after a segment
  that skips bytes (``tcp.analysis.lost_segment``) until the other side sends an ACK, and
  when the result is not in (0, 2e9); ``flight_sender_only`` marks values computed before
  any ACK from the other side (the sender's segments alone).
* ``flight_sack_bytes``: RFC 6675's *pipe* without loss marking: sent and not cumulatively
  acknowledged, minus every byte SACKed above the cumulative ACK so far (a scoreboard built
  from all SACK blocks received, not only the latest ACK's: receivers report at most 3–4
  blocks, so the latest ACK alone under-counts when there are more holes).
* ``unacked_bytes``: highest data byte sent − highest cumulative ACK received (no SACK
  information), the classic "outstanding data" of tcptrace.

Wireshark's list runs in the compiled core (``src/state/flight.rs``); the SACK measures are
computed with numpy over the data rows and the state of :mod:`tracekit.analysis._state`.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import Ints, pick, prepare, sack_blocks_of, segments, take
from tracekit.schema import ACK, FIN, FLIGHT, SYN, empty

#: Segment ranges exploded per SACK block (x rows) before giving up on the scoreboard.
_MAX_EXPLODE_FACTOR = 8
_K = 1 << 44  # group id above the sequence number in one int64 key


def _wireshark_raw(st: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Wireshark's list-based bytes in flight per row, from the compiled core (``src/state/flight.rs``).

    Returns:
        ``raw`` (highest end - lowest start of the direction's unacknowledged segments at each
        data row, :data:`MISSING` where Wireshark gives none) and ``sender_only`` (no ACK from
        the other side seen yet: the value rests on the sender's segments alone).
    """
    i64 = pl.Int64
    return _core.tcp_flight(
        st["flow"].cast(pl.UInt32).to_numpy(), st["dir"].cast(pl.Int8).to_numpy(), st["seq"].cast(i64).to_numpy(),
        st["len"].cast(pl.UInt32).to_numpy(), _flags(st), st["ack"].cast(i64).fill_null(MISSING).to_numpy(),
        st["gap"].to_numpy(), st["stray_syn"].to_numpy())


def _flags(st: pl.DataFrame) -> np.ndarray:
    """The SYN, FIN and ACK bits of every row, rebuilt from the state's boolean columns."""
    f = st.select((pl.col("syn").cast(pl.UInt8) * SYN) | (pl.col("fin").cast(pl.UInt8) * FIN)
                  | (pl.col("has_ack").cast(pl.UInt8) * ACK))[:, 0]
    return f.to_numpy()


def _new_sack(st: pl.DataFrame, owner: np.ndarray, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, ...]:
    """The SACK blocks above the ACK, each with only its part not reported before.

    Args:
        st: Prepared state.
        owner, left, right: Every SACK block (:func:`tracekit.analysis._state.sack_blocks`).

    Returns:
        ``ack_i, g, lo, re`` of the blocks that report something new, in block order.
    """
    ack = take(st, "ack", owner, -1)
    # D-SACK blocks report duplicates, not holes
    k = np.flatnonzero((right != MISSING) & (right > ack))
    owner, left, right = owner[k], left[k], right[k]
    g = st["g"].to_numpy()[owner].astype(np.int64)
    # successive ACKs repeat a block while its right edge grows: only the new part is new, i.e.
    # above the largest right edge reported before with the same (direction, left edge)
    o = np.lexsort((left, g))
    gs, ls, rs = g[o], left[o], right[o]
    first = np.r_[True, (gs[1:] != gs[:-1]) | (ls[1:] != ls[:-1])] if len(o) else np.zeros(0, bool)
    run = np.cumsum(first) - 1
    lo_v, span = (int(rs.min()), int(rs.max()) - int(rs.min()) + 1) if len(o) else (0, 1)
    if len(o) and (run[-1] + 1) * span < (1 << 62):
        y = (rs - lo_v) + run * span
        prev = np.empty_like(y)
        prev[1:] = np.maximum.accumulate(y)[:-1]
        prev = np.where(first, MISSING, prev - run * span + lo_v)
    else:  # (a value range too wide for the offset trick: per run)
        prev = np.full(len(o), MISSING, dtype=np.int64)
        for a, b in zip(
            np.flatnonzero(first).tolist(), np.r_[np.flatnonzero(first)[1:], len(o)].tolist(), strict=False
        ):
            prev[a + 1:b] = np.maximum.accumulate(rs[a:b - 1])
    lo_s = np.where(ls == MISSING, prev, np.maximum(ls, prev))  # (a missing left edge: the earlier maximum)
    lo = np.empty_like(lo_s)
    lo[o] = lo_s
    k = np.flatnonzero((lo != MISSING) & (lo < right))
    return owner[k], g[k], lo[k], right[k]


def _sacked(st: pl.DataFrame, blocks: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """Bytes SACKed above the cumulative ACK as of every row (None when there is no SACK).

    Each segment first sent (the ``new`` rows: their ranges partition the bytes sent) gets the
    row of the first ACK whose SACK blocks cover it and the row of the first ACK that
    cumulatively acknowledges it; the SACKed bytes at any moment are the segments between the
    two events, so a running sum over the events, per ACK direction, is the scoreboard.

    Returns:
        ``st.height + 1`` values (read them at the other side's latest packet, ``r_i``; the
        spare last one, zero, answers ``r_i`` = -1).
    """
    b_i, b_g, b_lo, b_re = _new_sack(st, *blocks[:3])
    if not len(b_i):
        return None
    sg = segments(st)
    o = sg.order
    gcol = st["g"].to_numpy()
    s_i = o[st["new"].to_numpy()[o]].astype(np.intp)  # first transmissions, grouped order
    key = gcol[s_i].astype(np.int64) * _K
    key += st["seq"].to_numpy()[s_i]
    bg = (b_g ^ 1) * _K  # the data direction the blocks are about
    a = np.searchsorted(key, bg + b_lo, side="left")
    b = np.searchsorted(key, bg + b_re, side="left")
    del key
    cnt = np.clip(b - a, 0, None)
    if int(cnt.sum()) > _MAX_EXPLODE_FACTOR * max(st.height, 1):
        return None
    # every (block, segment) pair with the segment's start inside the block
    which = np.repeat(np.arange(len(a)), cnt)
    seg = s_i[np.arange(len(which)) - np.repeat(np.cumsum(cnt) - cnt, cnt) + a[which]]
    del s_i
    if not len(seg):
        return None
    dend = st["dend"].to_numpy()
    ok = (dend[seg] <= b_re[which]) & (seg < b_i[which])
    seg, ack_at = seg[ok], b_i[which[ok]]
    if not len(seg):
        return None
    # per segment, the first ACK whose blocks cover it
    srt = np.lexsort((ack_at, seg))
    seg, ack_at = seg[srt], ack_at[srt]
    f = np.r_[True, seg[1:] != seg[:-1]]
    ix, sack_i = seg[f], ack_at[f]
    s_end = dend[ix].astype(np.int64)
    length = s_end - st["seq"].to_numpy()[ix]
    # first ACK (other direction) whose cumulative value reaches the segment's end
    a_i = o[st["new_ack"].to_numpy()[o]].astype(np.intp)
    a_key = gcol[a_i].astype(np.int64) * _K + take(st, "ack", a_i)
    q = (gcol[ix].astype(np.int64) ^ 1) * _K + s_end
    k = np.searchsorted(a_key, q, side="left")
    kk = np.minimum(k, max(len(a_key) - 1, 0))
    found = (k < len(a_key)) & ((a_key[kk] // _K) == (q // _K)) if len(a_key) else np.zeros(len(q), bool)
    ack_i = np.where(found, a_i[kk] if len(a_i) else 0, -1)
    keep = (ack_i < 0) | (sack_i < ack_i)
    rm = keep & (ack_i >= 0)
    ev_rows = np.concatenate((sack_i[keep], ack_i[rm]))
    # running sum of the events per direction, only over the directions that have any
    total = np.zeros(st.height + 1, dtype=np.int64)
    np.add.at(total, ev_rows, np.concatenate((length[keep], -length[rm])))
    for h in np.unique(gcol[ev_rows]).tolist():
        rows = sg.rows(sg.find(h))  # type: ignore[arg-type]
        total[rows] = np.cumsum(total[rows])
    return _narrowed(total)


def _narrowed(x: np.ndarray) -> np.ndarray:
    """``x`` as int32 when its values fit (half the memory while the flight rows are built)."""
    if len(x) and int(x.min()) > -(1 << 31) and int(x.max()) < (1 << 31):
        return x.astype(np.int32)
    return x


def _sack_sums(st: pl.DataFrame, blocks: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """Bytes in each row's SACK blocks, ``st.height + 1`` values (the spare last one for ``r_i`` = -1)."""
    owner, left, right, _ = blocks
    if not owner.size:
        return None
    width = np.where((left == MISSING) | (right == MISSING), 0, right - left)
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    ss = np.zeros(st.height + 1, dtype=np.int64)
    ss[owner[starts]] = np.add.reduceat(width, starts)
    return _narrowed(ss)


def flight(pk: pl.DataFrame, *, state: pl.DataFrame | None = None) -> pl.DataFrame:
    """Bytes in flight at every data segment (see the module docstring for the three measures).

    Args:
        pk: Packets at the vantage point (:func:`tracekit.analysis.vantage.vantage`).
        state: The frame :func:`tracekit.analysis._state.prepare` made from ``pk`` (computed when None).

    Returns:
        The ``flight`` frame (:data:`tracekit.schema.FLIGHT`), in packet order.
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(FLIGHT)
    ln = st["len"].to_numpy()
    m = int(np.count_nonzero(ln > 0))
    if not m:
        return empty(FLIGHT)
    raw_all, only_all = _wireshark_raw(st)
    blocks = sack_blocks_of(st)
    sacked = _sacked(st, blocks)
    sums = _sack_sums(st, blocks)
    del blocks
    sf = (st["syn"] | st["fin"]).to_numpy()
    # the nullable columns with nulls as their dtype's stand-in; r_i's nulls point at the spare zero after the last row
    r_hi_ack, hi_dend = Ints(st, "r_hi_ack"), Ints(st, "hi_dend")
    r_i = st["r_i"].fill_null(st.height).to_numpy()
    dd = np.flatnonzero(ln > 0)
    ri = r_i[dd]
    # Wireshark's bytes in flight, minus the SACK blocks of the other side's latest packet;
    # kept in (0, 2e9) as Wireshark does, then minus the virtual byte of a SYN or FIN
    raw = raw_all[dd]
    has_raw = raw != MISSING
    if sums is not None:
        raw = raw - sums[ri]
    valid = has_raw & (raw > 0) & (raw < 2_000_000_000)
    fb = raw - sf[dd]
    # unacked: highest data byte sent - highest cumulative ACK; the SACK variant also minus SACKed bytes
    a = r_hi_ack.x[dd]
    has_a = a != r_hi_ack.stand_in
    ub = np.maximum(np.subtract(hi_dend.x[dd], a, dtype=np.int64), 0)
    sb = ub if sacked is None else np.maximum(ub - sacked[ri], 0)
    del sacked, sums
    ok_a = pl.lit(pl.Series(has_a))
    keys = pick(st, pl.col("len") > 0, "flow", "dir", "frame", "time")
    return keys.hstack(pl.DataFrame({"flight_bytes": fb, "flight_sack_bytes": sb, "unacked_bytes": ub})).with_columns(
        flight_bytes=pl.when(pl.lit(pl.Series(valid))).then(pl.col("flight_bytes")),
        flight_sack_bytes=pl.when(ok_a).then(pl.col("flight_sack_bytes")),
        unacked_bytes=pl.when(ok_a).then(pl.col("unacked_bytes")),
        flight_sender_only=pl.lit(pl.Series(only_all[dd] & valid)),
    )
