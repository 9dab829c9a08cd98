"""Retransmissions and their causes: the ``retransmissions`` frame (:data:`tracekit.schema.RETRANSMISSIONS`).

Which segments are retransmissions follows Wireshark's ``tcp_analyze_sequence_number``
(``packet-tcp.c``), vectorized over the state of :mod:`tracekit.analysis._state`:

* a segment (payload, SYN or FIN) is a candidate when it starts below the highest
  sequence number already sent in its direction (*nextseq*), except keep-alives (0–1 byte
  at nextseq − 1), zero-window probes, and a segment longer than one byte starting at
  nextseq − 1 (after a 1-byte probe); or when its end is at or below the other side's latest
  ACK (Wireshark's *spurious retransmission* rule, which needs no nextseq).
* **out-of-order, not retransmitted**: a candidate whose bytes were never seen before at this
  vantage point — it lies in a *hole* (bytes skipped when a later segment arrived first) and
  is the first segment seen with that start — and that arrives within one round trip of the
  hole's appearance (the handshake RTT, as Wireshark's threshold; else the smallest RTT
  sample; 3 ms when no RTT is known, as Wireshark): a re-sent segment needs at least that long. At a
  sender-side capture every candidate re-sends bytes already seen, so none is out-of-order.
  Wireshark 4.0 instead calls *any* candidate out-of-order when the other side sent a packet
  within the handshake RTT and the segment does not end at nextseq, which labels some SACK
  retransmissions at the sender as out-of-order (docs/analysis.md).

``kind`` says why it was sent:

* ``spurious``: the data had already arrived — Wireshark's rule (end ≤ the other side's
  latest ACK when it was sent), or a later D-SACK block (RFC 2883) starting at the segment and
  covering it.
* ``rto``: sent after a silence since the other side's latest packet that only a timer
  explains — a timeout, whatever the duplicate ACKs before it: longer than *far* + srtt/2,
  where *far* is the round trip vantage → sender → vantage (0 at the sender; handshake RTT −
  the RTT measured here elsewhere). A fast retransmission answers the ACK that just arrived
  (at the sender within microseconds; ns-2: the same instant), a timeout comes at least one
  RTO (≥ srtt, ≥ 200 ms on Linux) after the last ACK. Also ``rto``: a retransmission with no
  loss signal at all (tail-loss probes and other timer-driven resends).
* ``fast``: triggered by loss signals since the last change of the other side's ACK: ≥ 3
  duplicate ACKs, a SACK block above the ACK, or ≥ 2 duplicate ACKs and the segment starts at
  that ACK (Wireshark's ``tcp.analysis.fast_retransmission`` rule without its 20 ms window).

Retransmissions come in episodes (a recovery): a retransmission opens a new episode when the
ACK has passed everything outstanding at the previous retransmission, or after a timeout;
the later ones of an episode take the kind of its first one (after an RTO, Linux re-sends the
rest of the window as ACKs return; during SACK recovery, the holes one by one). Wireshark marks
only the first retransmission of a fast recovery as ``fast_retransmission``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.analysis import rtt as _rtt
from tracekit.analysis._state import KEYS, find_hole, first_fill, holes, pick, prepare
from tracekit.schema import RETRANSMISSIONS, empty

#: RTO floor (Linux TCP_RTO_MIN), used when no RTT is known, and Wireshark's default out-of-order window.
RTO_MIN_S = 0.2
OOO_DEFAULT_S = 0.003

#: :func:`classify` output: the frame plus the row ``_i`` and the recovery ``episode`` (per direction).
_SCHEMA = {"_i": pl.UInt32(), **RETRANSMISSIONS, "episode": pl.Int32()}


def min_rtt(st: pl.DataFrame, rs: pl.DataFrame) -> pl.DataFrame:
    """Per flow, the round trip that bounds reordering (``flow -> min_rtt``).

    The handshake RTT (SYN → ACK spans one full round trip wherever the capture was taken,
    Wireshark's ``tcp.analysis.initial_rtt``), else the smallest RTT sample.
    """
    hs = _rtt.handshake(st).rename({"hs_rtt": "_hs"})
    smin = rs.filter(pl.col("rtt_s") > 0).group_by("flow").agg(pl.col("rtt_s").min().alias("_min"))
    out = smin.join(hs, on="flow", how="full", coalesce=True)
    return out.select("flow", pl.coalesce(pl.when(pl.col("_hs") > 0).then("_hs"), "_min").alias("min_rtt"))


def _dsack(st: pl.DataFrame) -> pl.DataFrame:
    """D-SACK blocks (RFC 2883): the first block below the ACK, or inside the second block."""
    withs = pick(st, pl.col("sack").list.len() > 0, "_i", "flow", "dir", "ack", "sack")
    if withs.is_empty():
        return pl.DataFrame(schema={"_i": pl.UInt32, "flow": pl.UInt32, "dir": pl.Int8,
                                    "seq": pl.Int64, "d_re": pl.Int64})
    b1 = pl.col("sack").list.get(0)
    b2 = pl.col("sack").list.get(1, null_on_oob=True)
    d = withs.select(
        "_i", "flow", (1 - pl.col("dir")).cast(pl.Int8).alias("dir"), "ack",
        l1=b1.arr.first(), r1=b1.arr.last(), l2=b2.arr.first(), r2=b2.arr.last(),
    ).filter(
        (pl.col("r1") <= pl.col("ack").fill_null(-1))
        | ((pl.col("l2") <= pl.col("l1")) & (pl.col("r1") <= pl.col("r2"))).fill_null(False)
    )
    return d.select("_i", *KEYS, pl.col("l1").alias("seq"), pl.col("r1").alias("d_re"))


def classify(st: pl.DataFrame, rs: pl.DataFrame) -> pl.DataFrame:
    """Find and classify retransmissions (see the module docstring).

    Args:
        st: Prepared state (:func:`tracekit.analysis._state.prepare`).
        rs: RTT samples with ``_i`` (:func:`tracekit.analysis.rtt.samples`).

    Returns:
        The ``retransmissions`` frame plus ``_i`` and ``episode`` (recoveries numbered per
        direction), in packet order.
    """
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    nxt = pl.col("nxt")
    seg = pl.col("is_seg") & ~pl.col("keepalive") & ~pl.col("zwp")
    spur = (pl.col("len") > 0) & (pl.col("r_ack").fill_null(0) > 0) & (pl.col("dend") <= pl.col("r_ack"))
    behind = nxt.is_not_null() & (pl.col("seq") < nxt) & ~((pl.col("len") > 1) & (pl.col("seq") == nxt - 1))
    cand = pick(st, seg & (spur.fill_null(False) | behind), "_i", "g", *KEYS, "frame", "time", "seq", "len",
                "dend", "nxt", "r_i", "r_time", "r_ack", "r_hi_ack", "r_dupnum", "r_sack_ev",
                _spur=spur.fill_null(False))
    if cand.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    # out-of-order: the first segment into a hole (never-seen bytes), soon after the hole appeared
    hl = holes(st)
    if hl.height:
        j = find_hole(hl, cand["g"].to_numpy(), cand["seq"].to_numpy())
        ok = j >= 0
        jj = np.maximum(j, 0)
        cand = cand.with_columns(
            h_time=pl.Series(np.where(ok, hl["h_time"].to_numpy()[jj], np.nan)).fill_nan(None),
        ).join(first_fill(st, hl), on=["g", "seq"], how="left", maintain_order="left").join(
            min_rtt(st, rs), on="flow", how="left", maintain_order="left")
        fresh = pl.col("h_time").is_not_null() & (pl.col("f_i") == pl.col("_i"))
        soon = (pl.col("time") - pl.col("h_time")) < pl.col("min_rtt").fill_null(OOO_DEFAULT_S)
        cand = cand.filter(~(fresh & soon).fill_null(False) | pl.col("_spur"))
        if cand.is_empty():
            return pl.DataFrame(schema=_SCHEMA)
    # Silence that means a timeout. A fast retransmission answers a packet that has just
    # arrived: at the sender it follows it at once; seen elsewhere, after the round trip
    # vantage -> sender -> vantage ("far", = handshake RTT - RTT measured here). A timeout
    # comes at least one RTO (>= srtt) after the last ACK. Half an RTT beyond "far" splits them.
    cand = _rtt.at_rows(st, _rtt.smoothed(rs), cand)
    near = rs.filter((pl.col("method") == "seq") & (pl.col("rtt_s") > 0)).group_by(KEYS).agg(
        pl.col("rtt_s").min().alias("_near"))
    cand = (
        cand.join(near, on=KEYS, how="left", maintain_order="left")
        .join(_rtt.handshake(st), on="flow", how="left", maintain_order="left")
    )
    full = pl.coalesce("hs_rtt", "srtt", "_near")
    far = (full - pl.col("_near").fill_null(0.0)).clip(lower_bound=0.0).fill_null(0.0)
    rto_thr = far + 0.5 * pl.max_horizontal("srtt", full).fill_null(2 * RTO_MIN_S)
    silence = (pl.col("time") - pl.col("r_time")).fill_null(float("inf"))
    timeout = silence >= rto_thr
    fast_ev = (
        (pl.col("r_dupnum").fill_null(0) >= 3) | pl.col("r_sack_ev").fill_null(False)
        | ((pl.col("r_dupnum").fill_null(0) >= 2) & (pl.col("seq") == pl.col("r_ack")))
    )
    prev_nxt = nxt.shift(1).over("g")
    new_ep = prev_nxt.is_null() | (pl.col("r_hi_ack").fill_null(-1) >= prev_nxt) | timeout
    base = pl.when(timeout).then(pl.lit("rto")).when(fast_ev).then(pl.lit("fast")).otherwise(pl.lit("rto"))
    cand = cand.with_columns(_ep=new_ep.cast(pl.Int32).cum_sum().over("g"), _base=base)
    cand = cand.with_columns(_kind=pl.col("_base").first().over("g", "_ep"))
    # D-SACK: the latest transmission starting at the block's left edge was not needed
    ds = _dsack(st)
    if ds.height:
        hit = (
            ds.sort("_i")
            .join_asof(cand.select("_i", *KEYS, "seq", "dend", _r_i=pl.col("_i")), on="_i", by=[*KEYS, "seq"],
                       check_sortedness=False)
            .filter(pl.col("_r_i").is_not_null() & (pl.col("dend") <= pl.col("d_re")))
            .select(pl.col("_r_i").alias("_i"), _dsack=pl.lit(True))
            .unique("_i")
        )
        cand = cand.join(hit, on="_i", how="left", maintain_order="left")
    else:
        cand = cand.with_columns(_dsack=pl.lit(None, pl.Boolean))
    kind = pl.when(pl.col("_spur") | pl.col("_dsack").fill_null(False)).then(pl.lit("spurious")).otherwise("_kind")
    return cand.select(
        "_i", *KEYS, "frame", "time", "seq", "len", kind.alias("kind"), pl.col("_ep").alias("episode")
    ).cast(_SCHEMA).sort("_i")  # type: ignore[arg-type]


def retransmissions(pk: pl.DataFrame, *, state: pl.DataFrame | None = None,
                    rtt_samples: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every retransmitted segment with its kind (see the module docstring).

    Args:
        pk: Packets at the vantage point.
        state: The prepared frame of ``pk``, if at hand.
        rtt_samples: RTT samples with ``_i`` (:func:`tracekit.analysis.rtt.samples`), if at hand.

    Returns:
        The ``retransmissions`` frame (:data:`tracekit.schema.RETRANSMISSIONS`).
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(RETRANSMISSIONS)
    rs = _rtt.samples(st) if rtt_samples is None else rtt_samples
    return classify(st, rs).drop("_i", "episode")


def dup_acks(st: pl.DataFrame) -> pl.DataFrame:
    """Duplicate ACKs (Wireshark's definition) counted against the direction whose data they repeat.

    Returns:
        ``flow, dir, dup_acks`` where ``dir`` is the data direction (the ACKs travel the other way).
    """
    if st.is_empty():
        return pl.DataFrame(schema={"flow": pl.UInt32, "dir": pl.Int8, "dup_acks": pl.UInt32})
    return pick(st, pl.col("dup"), "flow", (1 - pl.col("dir")).cast(pl.Int8).alias("dir")).group_by(KEYS).agg(
        pl.len().cast(pl.UInt32).alias("dup_acks")
    )
