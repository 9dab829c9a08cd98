"""Round-trip time samples: the ``rtt`` frame (:data:`tracekit.schema.RTT`).

Two methods, both run by the compiled core in one pass over the packets (``src/state/rtt.rs``:
each rule cites its RFC section); ``dir`` is the direction whose data (or timestamps) the sample
measures, ``frame``/``time`` are those of the ACK that closed it:

* ``seq`` — as Wireshark's ``tcp.analysis.ack_rtt``: an ACK that raises the cumulative
  ACK to exactly the end of a segment (SYN and FIN count one byte) closes a sample,
  RTT = ACK time − that segment's time. Unlike Wireshark (which then times the *first*
  transmission), Karn's rule applies: no sample when the segment ending there was sent more
  than once before the ACK, or re-sent bytes already sent. ACKs that end inside a segment
  or beyond the segments seen give no sample (as in Wireshark and tcptrace).
* ``ts`` — from TCP timestamps (RFC 7323): an ACK that raises the cumulative ACK and echoes
  TSecr = *v* closes a sample from the first packet of the other direction that carried
  TSval = *v*. 32-bit wrap is undone by unwrapping TSval per direction and placing each
  TSecr in the 2^32 epoch nearest to the latest TSval sent before it. Timestamp clocks tick
  every 1–10 ms and the receiver echoes the *oldest* unacknowledged TSval (delayed ACKs), so
  ``ts`` samples can exceed ``seq`` ones by a tick plus the delayed-ACK wait.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis import _dirstats
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import Ints, prepare
from tracekit.schema import RTT, empty

_SCHEMA = {"_i": pl.UInt32(), **RTT}


def _core_columns(st: pl.DataFrame) -> tuple[np.ndarray, ...]:
    """The columns :func:`tracekit._core.tcp_rtt` reads: the packets', their TCP flags and state bits as prepared."""
    i64 = pl.Int64
    return (
        st["g"].to_numpy(), st["time"].to_numpy(), st["seq"].cast(i64).to_numpy(), st["len"].cast(i64).to_numpy(),
        st["_f"].to_numpy(), st["ack"].cast(i64).fill_null(MISSING).to_numpy(),
        st["ts_val"].cast(i64).fill_null(MISSING).to_numpy(), st["ts_ecr"].cast(pl.UInt32).fill_null(0).to_numpy(),
        st["_b"].to_numpy(), Ints(st, "nxt").at(slice(None)),
    )


def _frame(st: pl.DataFrame, rows: np.ndarray, rtt_s: np.ndarray, method: str) -> pl.DataFrame:
    """The samples closed at ACK rows ``rows`` (ascending): they time the other direction's packets."""
    at_ack = st.select(pl.col("flow", "dir", "frame", "time").gather(pl.Series(rows, dtype=pl.UInt32)))
    return at_ack.select(
        pl.Series("_i", rows, dtype=pl.UInt32), "flow", (1 - pl.col("dir")).alias("dir"), "frame", "time",
        pl.Series("rtt_s", rtt_s, dtype=pl.Float64), pl.lit(method).alias("method"),
    ).cast(_SCHEMA)  # type: ignore[arg-type]


def samples(st: pl.DataFrame) -> pl.DataFrame:
    """RTT samples with the closing ACK's row ``_i`` (the ``rtt`` frame plus ``_i``), sorted by method and ``_i``.

    Both methods run in the compiled core (``tracekit._core.tcp_rtt``, Rust ``src/state/rtt.rs``):
    one pass over the packets in capture order, a state machine per connection.
    """
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    seq_rows, seq_rtt, ts_rows, ts_rtt = _core.tcp_rtt(*_core_columns(st))
    return pl.concat([_frame(st, seq_rows, seq_rtt, "seq"), _frame(st, ts_rows, ts_rtt, "ts")])


def smoothed(rs: pl.DataFrame) -> pl.DataFrame:
    """RFC 6298 smoothed RTT and RTT variation after each sample, per direction.

    Uses the ``seq`` samples of a direction, or its ``ts`` samples when it has no ``seq`` ones.
    The estimator runs in the compiled core (``tracekit._core.tcp_srtt``, Rust
    ``src/state/srtt.rs``: RFC 6298 §2, one state machine per direction).

    Args:
        rs: Samples from :func:`samples` (with ``_i``).

    Returns:
        ``_i, flow, dir, time, srtt, rttvar`` sorted by ``_i``.
    """
    if rs.is_empty():
        return pl.DataFrame(schema={"_i": pl.UInt32, "flow": pl.UInt32, "dir": pl.Int8, "time": pl.Float64,
                                    "srtt": pl.Float64, "rttvar": pl.Float64})
    idx, srtt, rttvar = _core.tcp_srtt(
        rs["flow"].cast(pl.UInt32).to_numpy(), rs["dir"].cast(pl.Int8).to_numpy(), rs["_i"].cast(pl.UInt32).to_numpy(),
        (rs["method"] == "seq").to_numpy(), rs["rtt_s"].cast(pl.Float64).fill_null(np.nan).to_numpy())
    return rs.select("_i", "flow", "dir", "time")[pl.Series(idx)].with_columns(
        srtt=pl.Series(srtt), rttvar=pl.Series(rttvar))


def est_columns(est: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``est`` (:func:`smoothed`) as the core's passes read it: the rows (uint32) and srtt (float64, NaN for null).

    Retransmissions, stalls and the flows' limit shares look the smoothed RTT of a direction
    up as of each packet in the core (``src/state/srtt.rs``: ``Est``, ``Latest``).
    """
    return est["_i"].cast(pl.UInt32).to_numpy(), est["srtt"].cast(pl.Float64).fill_null(np.nan).to_numpy()


def handshake(st: pl.DataFrame) -> pl.DataFrame:
    """Per flow, SYN → the initiator's first ACK after the SYN-ACK (Wireshark's ``tcp.analysis.initial_rtt``).

    Wherever the packets were observed, this spans exactly one full round trip. The rule is
    the compiled core's per-direction accumulator (``src/state/dirstats.rs``), which
    :func:`tracekit.analysis._dirstats.of_packets` runs over the packets (its ``hs_rtt``): this runs
    it over the prepared state's rows, the same packets.

    Returns:
        ``flow, hs_rtt`` for flows whose three handshake packets were all seen.
    """
    return _dirstats.handshake_of_state(st)


def rtt(pk: pl.DataFrame, *, state: pl.DataFrame | None = None) -> pl.DataFrame:
    """RTT samples of every connection direction by both methods (see the module docstring).

    Args:
        pk: Packets at the vantage point.
        state: The prepared frame of ``pk`` (:func:`tracekit.analysis._state.prepare`), if at hand.

    Returns:
        The ``rtt`` frame (:data:`tracekit.schema.RTT`).
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(RTT)
    return samples(st).drop("_i")
