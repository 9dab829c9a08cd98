"""Bytes in flight at each data segment: the ``flight`` frame (:data:`tracekit.schema.FLIGHT`).

Three measures, one row per data segment (payload > 0) as the vantage point saw it:

* ``flight_bytes`` reproduces Wireshark's ``tcp.analysis.bytes_in_flight`` (its default,
  payload-based method, ``tcp_analyze_sequence_number`` in ``packet-tcp.c``): Wireshark keeps
  the segments of each direction that no ACK from the other side has covered yet (a segment
  leaves the list when an ACK reaches its end; an ACK inside a segment trims it), and at each
  data segment reports *highest end in that list − lowest start in it*, the segment itself
  included. It then subtracts the bytes of every SACK block carried by the other side's
  latest packet (all blocks, D-SACK ones too) and, for a segment with SYN or FIN, the one
  virtual byte. Wireshark leaves the field empty (null here) before the other side has sent an
  ACK, after a segment that skips bytes (``tcp.analysis.lost_segment``) until the other side
  sends again, and when the result is not in (0, 2e9).
* ``flight_sack_bytes``: RFC 6675's *pipe* without loss marking: sent and not cumulatively
  acknowledged, minus every byte SACKed above the cumulative ACK so far (a scoreboard built
  from all SACK blocks received, not only the latest ACK's: receivers report at most 3–4
  blocks, so the latest ACK alone under-counts when there are more holes).
* ``unacked_bytes``: highest data byte sent − highest cumulative ACK received (no SACK
  information), the classic "outstanding data" of tcptrace.

Everything is computed with cumulative maxima and ``join_asof`` over the state of
:mod:`tracekit.analysis._state`; no Python loop touches packets.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.analysis._groups import Grouped
from tracekit.analysis._state import find_hole, first_fill, grouped, holes, pick, prepare
from tracekit.schema import FLIGHT, empty

#: Segment ranges exploded per SACK block (x rows) before giving up on the scoreboard.
_MAX_EXPLODE_FACTOR = 8
_K = 1 << 44  # group id above the sequence number in one int64 key


def _lowest_seen(st: pl.DataFrame, data: pl.DataFrame) -> pl.Series:
    """The lowest captured byte at or above the cumulative ACK, per data row.

    At a sender-side capture this is the ACK itself. Where segments were lost before the
    vantage point the ACK can sit in a hole (bytes never seen here); Wireshark's list of
    unacked segments then starts at the hole's upper edge until a retransmission fills it.
    """
    a = data["r_hi_ack"]
    hl = holes(st)
    if hl.is_empty():
        return a
    an = a.fill_null(-1).to_numpy()
    j = find_hole(hl, data["g"].to_numpy(), an)
    inh = j >= 0
    if not inh.any():
        return a
    sub = data.filter(pl.Series(inh)).select(
        "_i", "g", "r_hi_ack",
        h_hi=pl.Series(hl["h_hi"].to_numpy()[j[inh]]), h_i=pl.Series(hl["h_i"].to_numpy()[j[inh]]),
    ).join(first_fill(st, hl), left_on=["g", "r_hi_ack"], right_on=["g", "seq"], how="left")
    filled = pl.col("f_i").is_not_null() & (pl.col("f_i") < pl.col("_i"))
    sub = sub.select("_i", low=pl.when((pl.col("h_i") < pl.col("_i")) & ~filled).then(pl.col("h_hi"))
                     .otherwise(pl.col("r_hi_ack")))
    return data.select("_i").join(sub, on="_i", how="left", maintain_order="left").select(
        pl.coalesce("low", a))["low"]


def wireshark_bif() -> pl.Expr:
    """Wireshark's bytes in flight on data rows carrying ``low`` (see the module docstring)."""
    a = pl.col("r_hi_ack")
    unacked_before = pl.col("nxt").is_not_null() & (pl.col("nxt") > a)
    lo = pl.when(unacked_before).then(pl.min_horizontal("seq", "low")).otherwise(pl.col("seq"))
    hi = pl.when(unacked_before).then(pl.max_horizontal("nxt", "end")).otherwise(pl.col("end"))
    raw = hi - lo - pl.col("r_sack_sum").fill_null(0)
    # valid_bif: an ACK from the other side has been seen, and no skipped bytes since its latest packet
    valid = a.is_not_null() & (pl.col("gap_i").is_null() | (pl.col("r_i") > pl.col("gap_i")))
    vif = (raw > 0) & (raw < 2_000_000_000) & valid
    return pl.when(vif).then(raw - (pl.col("syn") | pl.col("fin")).cast(pl.Int64))


def _sacked(st: pl.DataFrame, data: pl.DataFrame) -> np.ndarray | None:
    """Bytes SACKed above the cumulative ACK at each data row (None when there is no SACK).

    Each segment first sent (the ``new`` rows: their ranges partition the bytes sent) gets the
    row of the first ACK whose SACK blocks cover it and the row of the first ACK that
    cumulatively acknowledges it; the SACKed bytes at any moment are the segments between the
    two events, so a cumulative sum over the events, per ACK direction, read at the other
    side's latest packet (``r_i``), is the scoreboard.
    """
    blocks = (
        pick(st, pl.col("sack").list.len() > 0, "_i", "g", "ack", "sack")
        .explode("sack")
        .with_columns(le=pl.col("sack").arr.first(), re=pl.col("sack").arr.last())
        .filter(pl.col("re") > pl.col("ack").fill_null(-1))  # D-SACK blocks report duplicates, not holes
        .drop("sack")
    )
    if blocks.is_empty() or data.is_empty():
        return None
    # successive ACKs repeat a block while its right edge grows: only the new part is new
    blocks = blocks.with_columns(
        lo=pl.max_horizontal("le", pl.col("re").cum_max().shift(1).over("g", "le"))
    ).filter(pl.col("lo") < pl.col("re"))
    segs = pick(st, pl.col("new"), "_i", "g", "seq", "dend")
    sg = Grouped(segs["g"].to_numpy())
    s_i, s_g, s_seq, s_end = (sg.take(segs[c].to_numpy()) for c in ("_i", "g", "seq", "dend"))
    key = s_g.astype(np.int64) * _K + s_seq
    bg = (blocks["g"].to_numpy() ^ 1).astype(np.int64)  # the data direction the blocks are about
    a = np.searchsorted(key, bg * _K + blocks["lo"].to_numpy(), side="left")
    b = np.searchsorted(key, bg * _K + blocks["re"].to_numpy(), side="left")
    if int(np.clip(b - a, 0, None).sum()) > _MAX_EXPLODE_FACTOR * max(st.height, 1):
        return None
    cover = (
        pl.DataFrame({"ack_i": blocks["_i"], "re": blocks["re"], "a": a, "b": b})
        .select("ack_i", "re", idx=pl.int_ranges("a", "b"))
        .explode("idx").drop_nulls("idx")
    )
    if cover.is_empty():
        return None
    ix = cover["idx"].to_numpy()
    ok = (s_end[ix] <= cover["re"].to_numpy()) & (s_i[ix] < cover["ack_i"].to_numpy())
    cover = cover.filter(pl.Series(ok)).group_by("idx").agg(pl.col("ack_i").min())
    if cover.is_empty():
        return None
    ix = cover["idx"].to_numpy()
    sack_i = cover["ack_i"].to_numpy().astype(np.int64)
    length = s_end[ix] - s_seq[ix]
    # first ACK (other direction) whose cumulative value reaches the segment's end
    acks = pick(st, pl.col("new_ack"), "_i", "g", "ack")
    ag = Grouped(acks["g"].to_numpy())
    a_i, a_key = ag.take(acks["_i"].to_numpy()).astype(np.int64), ag.take(acks["g"].to_numpy()).astype(np.int64) * _K + ag.take(
        acks["ack"].to_numpy())
    q = (s_g[ix].astype(np.int64) ^ 1) * _K + s_end[ix]
    k = np.searchsorted(a_key, q, side="left")
    kk = np.minimum(k, max(len(a_key) - 1, 0))
    found = (k < len(a_key)) & (len(a_key) > 0) & ((a_key[kk] // _K) == (q // _K)) if len(a_key) else np.zeros(
        len(q), bool)
    ack_i = np.where(found, a_i[kk] if len(a_i) else 0, -1)
    keep = (ack_i < 0) | (sack_i < ack_i)
    ev = np.zeros(st.height, dtype=np.int64)
    np.add.at(ev, sack_i[keep], length[keep])
    rm = keep & (ack_i >= 0)
    np.add.at(ev, ack_i[rm], -length[rm])
    gg = grouped(st)
    total = gg.back(gg.cumsum(gg.take(ev)))
    r_i = data["r_i"].fill_null(-1).to_numpy()
    return np.where(r_i >= 0, total[np.maximum(r_i, 0)], 0)


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
    data = pick(st, pl.col("len") > 0, "_i", "g", "flow", "dir", "frame", "time", "seq", "end", "nxt", "hi_dend",
                "r_i", "r_hi_ack", "r_sack_sum", "gap_i", "syn", "fin")
    if data.is_empty():
        return empty(FLIGHT)
    data = data.with_columns(low=_lowest_seen(st, data))
    a = pl.col("r_hi_ack")
    data = data.with_columns(
        flight_bytes=wireshark_bif(),
        unacked_bytes=pl.when(a.is_not_null()).then((pl.col("hi_dend") - a).clip(lower_bound=0)),
    )
    sacked = _sacked(st, data)
    sk = pl.lit(0, pl.Int64) if sacked is None else pl.Series(sacked)
    data = data.with_columns(flight_sack_bytes=(pl.col("unacked_bytes") - sk).clip(lower_bound=0))
    return data.select(list(FLIGHT)).cast(FLIGHT)  # type: ignore[arg-type]
