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

All three run in the compiled core (``src/state/flight.rs``: Wireshark's list; ``src/state/sack.rs``:
the SACK scoreboard and the corrections): one pass in packet order over the state of
:mod:`tracekit.analysis._state`, a state machine per connection, which also hands back the frame's
key columns, so the frame is built from the core's arrays without a query.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import prepare, sack_blocks_of
from tracekit.schema import FLIGHT, empty


def flight(pk: pl.DataFrame, *, state: pl.DataFrame | None = None) -> pl.DataFrame:
    """Bytes in flight at every data segment (see the module docstring for the three measures).

    Args:
        pk: Packets at the vantage point (:func:`tracekit.analysis.vantage.vantage`).
        state: The frame :func:`tracekit.analysis._state.prepare` made from ``pk`` (computed when None).

    Returns:
        The ``flight`` frame (:data:`tracekit.schema.FLIGHT`), in packet order.
    """
    return flight_and_sacks(pk, state=state)[0]


def flight_and_sacks(pk: pl.DataFrame, *, state: pl.DataFrame | None = None) -> tuple[pl.DataFrame, np.ndarray]:
    """:func:`flight`, and from when the scoreboard holds each first transmission SACKed.

    Returns:
        (the ``flight`` frame, per row of it: the number of data packets (rows of the frame) up to
        and including the packet whose SACK block first covered that segment whole; -2^62: never
        SACKed, or not a first transmission). Row ``k`` of the frame sees segment ``s`` SACKed iff
        ``sacked_at[s] <= k``: the cwnd estimate needs where the SACKed bytes lie (RFC 6675 §2).
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(FLIGHT), np.empty(0, dtype=np.int64)
    owner, left, right, _ = sack_blocks_of(st)
    i64 = pl.Int64
    # (a validated trace has no null frame or time: both are required columns)
    flow, dr, frame, time, fb, only, sb, ub, sacked_at = _core.tcp_flight_sack(
        st["flow"].cast(pl.UInt32).to_numpy(), st["dir"].cast(pl.Int8).to_numpy(), st["seq"].cast(i64).to_numpy(),
        st["len"].cast(pl.UInt32).to_numpy(), st["_f"].to_numpy(), st["ack"].cast(i64).fill_null(MISSING).to_numpy(),
        st["_b"].to_numpy(), np.ascontiguousarray(owner), np.ascontiguousarray(left), np.ascontiguousarray(right),
        frame=st["frame"].cast(pl.UInt64).to_numpy(), time=st["time"].cast(pl.Float64).to_numpy())
    if not len(fb):
        return empty(FLIGHT), sacked_at

    def col(name: str, x: np.ndarray) -> pl.Series:  # -2^62 from the core: no value
        return pl.Series(name, x).set(pl.Series(x == MISSING), None)

    return pl.DataFrame([
        pl.Series("flow", flow), pl.Series("dir", dr), pl.Series("frame", frame), pl.Series("time", time),
        col("flight_bytes", fb), col("flight_sack_bytes", sb), col("unacked_bytes", ub),
        pl.Series("flight_sender_only", only)]), sacked_at
