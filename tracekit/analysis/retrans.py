"""Retransmissions and their causes: the ``retransmissions`` frame (:data:`tracekit.schema.RETRANSMISSIONS`).

Which segments are retransmissions follows Wireshark's ``tcp_analyze_sequence_number``
(``packet-tcp.c``), over the state of :mod:`tracekit.analysis._state`, in the compiled core
(``src/state/retrans.rs``: one streaming pass per connection, a packet judged as it arrives):

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
* ``rto``: a timeout (RFC 6298 §5). With *RTO* = max(*floor*, srtt) — *floor* the minimum RTO
  of the stack that made the trace (:func:`rto_floor`: 200 ms for Linux ``TCP_RTO_MIN`` and
  ns-2 ``minrto_``, 1 s for ns-3 ``MinRto`` and RFC 6298 §2.4), srtt the RFC 6298 estimate here
  (§2.3 adds 4·rttvar, but the sender's rttvar is its own and ours can be twice it) — both hold:

  - silence: RTO has passed since the other side's last ACK that advanced the cumulative ACK
    (§5.3 restarts the timer there), or since the segment's own previous send while the other
    side has been quiet for RTO/2 (Linux re-arms the timer from the head's send when a probe
    timer was pending, ``tcp_rearm_rto``); and RTO since the previous timeout re-send (§5.5:
    the timer restarts there, backed off);
  - no loss signal the re-send answers, unless the other side has been quiet for RTO/2 (a
    sender answers at once, late only by its own queue): a SACK block above the ACK (RFC 6675)
    since that ACK and since the segment's previous send; the third duplicate ACK since that ACK
    (RFC 5681 §3.2), after the previous send, less than RTO/2 before, with the ACK past what was
    outstanding at the previous re-send (RFC 6582 §3.2 "recover": no second fast retransmit in
    one window); or, in a recovery (≥ 3 duplicate ACKs), a duplicate ACK at most
    100 µs before (SACK recovery in a trace without the blocks, ns-2).

  A capture after the sender's own queue (tc, fq, a VM) shows a µs RTT while the re-sends wait
  in that queue: silence alone, compared with the RTT on the wire, would call them timeouts.
* ``fast``: every other non-spurious retransmission: answers to ≥ 3 duplicate ACKs or SACK
  (fast retransmit, RFC 5681 §3.2, RFC 6675), RACK re-sends, and tail-loss probes
  (RFC 8985 §7: a probe timer of ≈ 2·srtt, not the RTO; Linux counts them as
  ``TCPLossProbes``, not ``TCPTimeouts``, and they start no loss recovery of their own).

Retransmissions come in episodes (a recovery): a retransmission opens a new episode when the
ACK has passed everything outstanding at the previous retransmission, or when it is a timeout
(by the rule above only: a long pause that fails it opens none);
the later ones of an episode take the kind of its first one (after an RTO, Linux re-sends the
rest of the window as ACKs return; during SACK recovery, the holes one by one). Wireshark marks
only the first retransmission of a fast recovery as ``fast_retransmission``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit._shared import RTO_FLOORS_S as RTO_FLOORS_S  # (re-exported: the minimum RTO by stack)
from tracekit._shared import rto_floor as rto_floor
from tracekit.analysis import rtt as _rtt
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import KEYS, prepare, sack_blocks_of
from tracekit.schema import RETRANSMISSIONS, empty

#: RTO floor (Linux TCP_RTO_MIN), used when no RTT is known. The core keeps the other constants
#: (``src/state/retrans.rs``): Wireshark's default out-of-order window (3 ms), the tolerance on a
#: timeout's silence (1 µs: simulators fire the timer exactly one RTO after the ACK) and
#: ``DUP_CLOCKED_S`` (100 µs: a re-send this soon after a duplicate ACK was sent while processing
#: it; a simulator: the same instant; a Linux host: tens of µs, more behind its own queue, but
#: then its SACK blocks count).
RTO_MIN_S = 0.2


#: :func:`classify` output: the frame plus the row ``_i`` and the recovery ``episode`` (per direction).
_SCHEMA = {"_i": pl.UInt32(), **RETRANSMISSIONS, "episode": pl.Int32()}
#: The ``kind`` of each of the core's codes (``KIND_NAMES`` in src/state/retrans.rs).
_KINDS = np.array(_core.RETRANS_KINDS)


def min_rtt(st: pl.DataFrame, rs: pl.DataFrame, hs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per flow, the round trip that bounds reordering (``flow -> min_rtt``).

    The handshake RTT (SYN → ACK spans one full round trip wherever the capture was taken,
    Wireshark's ``tcp.analysis.initial_rtt``), else the smallest RTT sample.

    Args:
        st: Prepared state.
        rs: RTT samples.
        hs: :func:`tracekit.analysis.rtt.handshake` of ``st``, if at hand.
    """
    hs = (_rtt.handshake(st) if hs is None else hs).rename({"hs_rtt": "_hs"})
    smin = rs.filter(pl.col("rtt_s") > 0).group_by("flow").agg(pl.col("rtt_s").min().alias("_min"))
    out = smin.join(hs, on="flow", how="full", coalesce=True)
    return out.select("flow", pl.coalesce(pl.when(pl.col("_hs") > 0).then("_hs"), "_min").alias("min_rtt"))


def _columns(st: pl.DataFrame) -> list[np.ndarray]:
    """The state columns the core reads, as numpy (one ``select``: polars converts them in parallel).

    ``flow, dir, time, seq, len, nxt, ack, r_hi_ack`` (integers as int64, -2^62 for null), the
    TCP flags and the state bits as prepared (``_f``, ``_b``: ``src/state/seq.rs``'s layout).
    """
    i64 = pl.Int64
    cols = st.select(
        pl.col("flow").cast(pl.UInt32), pl.col("dir").cast(pl.Int8), pl.col("time").cast(pl.Float64),
        *[pl.col(c).cast(i64).fill_null(MISSING) for c in ("seq", "len", "nxt", "ack", "r_hi_ack")], "_f", "_b",
    )
    return [s.to_numpy() for s in cols.get_columns()]


def classify(st: pl.DataFrame, rs: pl.DataFrame, *, est: pl.DataFrame | None = None,
             hs: pl.DataFrame | None = None, rto_floor_s: float = RTO_MIN_S) -> pl.DataFrame:
    """Find and classify retransmissions (see the module docstring).

    The rules run in the compiled core (``tracekit._core.tcp_retrans``, Rust
    ``src/state/retrans.rs``: one streaming pass per connection); this function hands it the
    prepared state, the smoothed RTT after each sample and each flow's out-of-order window.

    Args:
        st: Prepared state (:func:`tracekit.analysis._state.prepare`).
        rs: RTT samples with ``_i`` (:func:`tracekit.analysis.rtt.samples`).
        est: ``smoothed(rs)`` (:func:`tracekit.analysis.rtt.smoothed`), if at hand.
        hs: ``handshake(st)`` (:func:`tracekit.analysis.rtt.handshake`), if at hand.
        rto_floor_s: The minimum RTO of the sender's stack, seconds (:func:`rto_floor`).

    Returns:
        The ``retransmissions`` frame plus ``_i`` and ``episode`` (recoveries numbered per
        direction), in packet order.
    """
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    est = _rtt.smoothed(rs) if est is None else est
    est_rows, est_srtt = _rtt.est_columns(est)  # (the core looks each direction's latest up)
    # the out-of-order window only matters where a hole opened
    mr = pl.DataFrame(schema={"flow": pl.UInt32, "min_rtt": pl.Float64})
    if st["gap"].any():
        mr = min_rtt(st, rs, _rtt.handshake(st) if hs is None else hs).drop_nulls().sort("flow")
    owner, left, right, _ = sack_blocks_of(st)
    flow, dr, time, seq, ln, nxt, ack, r_hi_ack, flags, bits = _columns(st)
    rows, kind, episode = _core.tcp_retrans(
        flow, dr, time, seq, ln, nxt, ack, r_hi_ack, flags, bits, est_rows, est_srtt, owner, left, right,
        mr["flow"].cast(pl.UInt32).to_numpy(), mr["min_rtt"].cast(pl.Float64).to_numpy(), float(rto_floor_s))
    if not len(rows):
        return pl.DataFrame(schema=_SCHEMA)
    return st.select("_i", *KEYS, "frame", "time", "seq", "len")[pl.Series(rows)].with_columns(
        kind=pl.Series(_KINDS[kind], dtype=pl.String), episode=pl.Series(episode)
    ).cast(_SCHEMA)  # type: ignore[arg-type]


def timeout_resends(rt: pl.DataFrame) -> pl.DataFrame:
    """The re-sends the retransmission timer sent: the first of every ``rto`` episode (``flow, dir, frame``).

    ``rt`` is :func:`classify`'s output (with ``episode``, in packet order). An episode is a timeout when any of
    its re-sends is ``rto``: its later re-sends take its first one's kind, and only a D-SACK
    (RFC 2883) or Wireshark's spurious rule turns one into ``spurious``, which says the data had
    arrived, not that the timer did not fire (RFC 6298 §5.4-5.6: each expiry re-sends one segment,
    the earliest unacknowledged, and starts a new episode; backed-off expiries are episodes of
    their own). The cwnd estimate takes these as its timeouts (:mod:`._cwnd_estimate`).
    """
    out = {"flow": pl.UInt32(), "dir": pl.Int8(), "frame": pl.UInt64()}
    if rt.is_empty():
        return pl.DataFrame(schema=out)
    keys = [*KEYS, "episode"]
    return (rt.group_by(keys, maintain_order=True)
            .agg(pl.col("frame").first(), (pl.col("kind") == "rto").any().alias("_rto"))
            .filter("_rto").select(*KEYS, "frame").cast(out))  # type: ignore[arg-type]


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

    Counted in the compiled core (``src/state/flowdirs.rs``, as for the flows' ``dup_acks``).

    Returns:
        ``flow, dir, dup_acks`` where ``dir`` is the data direction (the ACKs travel the other way).
    """
    from tracekit.analysis._flowdirs import dup_acks as counted

    if st.is_empty():
        return pl.DataFrame(schema={"flow": pl.UInt32, "dir": pl.Int8, "dup_acks": pl.UInt32})
    return counted(st)
