"""The inputs of the cwnd analysis: data segments and ACK stream per data direction.

Each data direction's data segments, and the ACKs that reach its sender, become one
contiguous run of rows in capture order (time, then frame). One core call builds them
(``tracekit._core.cwnd_rows``, src/state/cwnd/rows_frames.rs): it groups the packets by data
direction, finds the rows the retransmission and flight frames name by (flow, dir, frame), and
feeds each direction's segments and ACKs in capture order to a per-direction builder
(src/state/cwnd/rows.rs: the latest ACK before every segment, snd_una, the dupACK state,
retransmissions, the SACK marks and the minimum RTT), the step a stream would feed packet by packet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.schema import ACK, SYN

KEYS = ["flow", "dir"]
#: Packet kinds (``_core.cwnd_rows``' ``kind`` bits): TCP with a flow and direction, payload with a
#: sequence number, an ACK, a SYN.
_TCP, _DATA, _ACK, _SYN = 1, 2, 4, 8


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
    seg_at: np.ndarray
    retx_rows: np.ndarray
    retx_hi: np.ndarray
    a_time: np.ndarray  # per ACK
    a_una: np.ndarray
    retx_timeout: np.ndarray  # per retransmitted row: the retransmission analysis' timeout (retrans.timeout_resends)
    ack_t: np.ndarray  # per data row: when the latest ACK before it arrived (NaN: none)


def _present(s: pl.Series) -> np.ndarray | np.bool_:
    """Where ``s`` has a value (all True without reading the column when it has no nulls)."""
    return s.is_not_null().to_numpy() if s.null_count() else np.True_


def _col(df: pl.DataFrame, name: str, dtype: pl.DataType, fill: int) -> np.ndarray:
    """Column ``name`` as ``dtype`` in numpy, nulls as ``fill`` (zero-copy when it is one and has none)."""
    s = df[name]
    if s.dtype != dtype:
        s = s.cast(dtype)
    return np.ascontiguousarray((s.fill_null(fill) if s.null_count() else s).to_numpy())


def _packets(pk: pl.DataFrame) -> tuple[np.ndarray, ...]:
    """The packet columns ``_core.cwnd_rows`` reads: ``(flow, dir, kind, time, frame, seq, ack, payload)``."""
    proto = pk["proto"]
    if isinstance(proto.dtype, pl.Enum) and "tcp" in proto.dtype.categories and not proto.null_count():
        tcp = proto.to_physical().to_numpy() == proto.dtype.categories.to_list().index("tcp")
    else:
        tcp = (proto == "tcp").fill_null(False).to_numpy()
    tcp = tcp & _present(pk["flow"]) & _present(pk["dir"])
    payload = _col(pk, "payload", pl.UInt32(), 0)
    flags = _col(pk, "flags", pl.UInt8(), 0)
    # an ACK needs an ACK number and the ACK flag (a trace without flags is taken to set it)
    ack = _present(pk["ack"]) & (((flags & ACK) != 0) | ~_present(pk["flags"]))
    kind = tcp.astype(np.uint8)
    kind |= ((payload > 0) & _present(pk["seq"])).astype(np.uint8) * _DATA
    kind |= (ack & tcp).astype(np.uint8) * _ACK
    kind |= ((flags & SYN) != 0).astype(np.uint8) * _SYN
    return (_col(pk, "flow", pl.UInt32(), 0), _col(pk, "dir", pl.Int8(), 0), kind, _col(pk, "time", pl.Float64(), 0),
            _col(pk, "frame", pl.UInt64(), 0), _col(pk, "seq", pl.Int64(), 0), _col(pk, "ack", pl.Int64(), 0), payload)


def _keys(q: pl.DataFrame | None) -> tuple[np.ndarray, ...]:
    """``(flow, dir, frame, ok)`` of a frame naming packets (``ok``: no key is null; empty: all)."""
    if q is None or q.is_empty():
        q = pl.DataFrame(schema={"flow": pl.UInt32(), "dir": pl.Int8(), "frame": pl.UInt64()})
    nulls = any(q[c].null_count() for c in ("flow", "dir", "frame"))
    ok = q.select(pl.all_horizontal(pl.col("flow", "dir", "frame").is_not_null())).to_series().to_numpy() \
        if nulls else np.empty(0, dtype=bool)
    return (_col(q, "flow", pl.UInt32(), 0), _col(q, "dir", pl.Int8(), 0), _col(q, "frame", pl.UInt64(), 0),
            np.ascontiguousarray(ok, dtype=bool))


def _flight(flight: pl.DataFrame, sacked_at: np.ndarray | None
            ) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """The flight frame's keys, SACKed bytes above una per row and from which flight row on each segment
    counts as SACKed (each empty where unknown).

    SACKed bytes as the flight analysis measured them (RFC 6675 "pipe"): unacked − pipe
    (flight_bytes is Wireshark's figure, which already subtracts the latest ACK's SACK blocks).
    """
    none = np.empty(0, dtype=np.int64)
    sacked = at = none
    if flight.height and "flight_sack_bytes" in flight.columns:
        b = "unacked_bytes" if "unacked_bytes" in flight.columns else "flight_bytes"
        sacked = _col(flight.select((pl.col(b) - pl.col("flight_sack_bytes")).clip(lower_bound=0).alias("v")),
                      "v", pl.Int64(), 0)
    if sacked_at is not None and sacked_at.size == flight.height:
        at = np.ascontiguousarray(sacked_at, dtype=np.int64)
    return _keys(flight if sacked.size or at.size else None), sacked, at


def build(pk: pl.DataFrame, flight: pl.DataFrame, retrans: pl.DataFrame, dirs: pl.DataFrame,
          sacked_at: np.ndarray | None = None, timeouts: pl.DataFrame | None = None) -> Rows | None:
    """Gather the estimate's inputs (see the module docstring); None when there are no data rows or no ACKs.

    Args:
        pk: Packets at the sender's vantage point.
        flight: The flight frame (its SACK accounting; may be empty).
        retrans: The retransmissions frame (its frames are retransmissions; may be empty).
        dirs: Data directions (``flow, dir, mss``) from :func:`tracekit.analysis.cwnd.data_directions`.
        sacked_at: Per flight row, from when its segment counts as SACKed
            (:func:`tracekit.analysis.flight.flight_and_sacks`; None: unknown).
        timeouts: ``flow, dir, frame`` of the re-sends the retransmission timer sent
            (:func:`tracekit.analysis.retrans.timeout_resends`; None: none).
    """
    dd = dirs.filter(pl.col("dir").is_not_null()).sort(KEYS)  # packets without a direction never join one
    dflow, ddir = _col(dd, "flow", pl.UInt32(), 0), _col(dd, "dir", pl.Int8(), 0)
    mss = dd["mss"].cast(pl.Float64)
    # (no size known: the core takes the largest segment sent)
    sizes = (np.ascontiguousarray(mss.fill_null(np.nan).to_numpy(), dtype=np.float64),
             np.ascontiguousarray(mss.is_null().to_numpy(), dtype=bool))
    out = _core.cwnd_rows(_packets(pk), (dflow, ddir, *sizes), _flight(flight, sacked_at), _keys(retrans),
                          _keys(timeouts))
    if out is None:
        return None
    (lo, hi, alo, ahi, seg_size, min_rtt, syn_lost, syn_t), rows, sack, retx, acks = out
    time, seq_end, pay, una, dup, new_ack, ack_t = rows
    sack_at, sack_val, sack_pos, seg_rows, seg_at = sack
    return Rows(
        flow=dd["flow"].to_numpy(), dir=dd["dir"].to_numpy(), mss=seg_size, min_rtt=min_rtt, syn_lost=syn_lost,
        syn_t=syn_t, lo=lo, hi=hi, alo=alo, ahi=ahi, time=time, seq_end=seq_end, pay=pay, una=una, dup=dup,
        new_ack=new_ack, sack_at=sack_at, sack_val=sack_val, sack_pos=sack_pos, seg_rows=seg_rows, seg_at=seg_at,
        retx_rows=retx[0], retx_hi=retx[1], a_time=acks[0], a_una=acks[1], retx_timeout=retx[2], ack_t=ack_t)
