"""Per-direction summary of every TCP connection, from the compiled core's ``dir_stats``.

One accumulator per (flow, dir) fed the packets in order (``src/state/dirstats.rs``: each rule
cites its RFC section): packet, data and byte counts, the time span, the lowest and highest
data byte, the first MSS/window-scale options, the SYN times and the handshake RTT. This
module hands it the packet columns and builds the frame that :func:`tracekit.analysis.flows.directions`,
:func:`tracekit.analysis.rtt.handshake` and :func:`tracekit.analysis.cwnd.data_directions` read.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis._groups import MISSING
from tracekit.schema import ACK, SYN

#: The core's "no direction" and "leave the packet out" in its ``dir`` column.
_NO_DIR, _SKIP = -(1 << 15), -(1 << 15) + 1

SCHEMA: dict[str, pl.DataType] = {
    "flow": pl.UInt32(), "dir": pl.Int8(), "src": pl.String(), "dst": pl.String(), "sport": pl.Int32(),
    "dport": pl.Int32(), "start": pl.Float64(), "end": pl.Float64(), "packets": pl.UInt32(),
    "data_packets": pl.UInt32(), "data_bytes": pl.Int64(), "wire_bytes": pl.Int64(), "unique_bytes": pl.Int64(),
    "mss": pl.UInt16(), "wscale": pl.UInt8(), "_smss": pl.Int64(), "window_scaling": pl.Boolean(),
    "syn_mss": pl.UInt16(), "syn_t": pl.Float64(), "_syn_t": pl.Float64(), "hs_rtt": pl.Float64(),
}


def _frame(d: dict[str, np.ndarray], pk: pl.DataFrame | None) -> pl.DataFrame:
    """The core's columns as the per-direction frame (nulls for its stand-ins)."""
    if not len(d["flow"]):
        return pl.DataFrame(schema=SCHEMA)
    rows = pl.Series(d["first_row"], dtype=pl.UInt32)
    if pk is not None:
        at_first = pk.select(pl.col("src", "dst").gather(rows).cast(pl.String), pl.col("sport", "dport").gather(rows))
    else:
        at_first = pl.DataFrame({c: pl.Series(c, [None] * len(rows), SCHEMA[c]) for c in ("src", "dst", "sport",
                                                                                             "dport")})
    raw = pl.DataFrame({
        "flow": d["flow"], "dir": d["dir"], "start": d["start"], "end": d["end"], "packets": d["packets"],
        "data_packets": d["data_packets"], "data_bytes": d["data_bytes"], "wire_bytes": d["wire_bytes"],
        "seq_lo": d["seq_lo"], "end_hi": d["end_hi"], "mss": d["mss"], "wscale": d["wscale"],
        "_smss": d["max_payload"], "window_scaling": d["window_scaling"], "syn_mss": d["syn_mss"],
        "syn_t": d["syn_t"], "_syn_t": d["flow_syn_t"], "hs_rtt": d["hs_rtt"],
    }).hstack(at_first)

    def nulled(name: str, none: int) -> pl.Expr:
        return pl.when(pl.col(name) != none).then(pl.col(name))

    lo, hi = nulled("seq_lo", MISSING), nulled("end_hi", MISSING)
    # the core's stand-ins as nulls, in one pass
    out = raw.select(
        "flow", nulled("dir", _NO_DIR), "src", "dst", "sport", "dport", "start", "end", "packets", "data_packets",
        "data_bytes", "wire_bytes", unique_bytes=hi - lo, mss=nulled("mss", -1), wscale=nulled("wscale", -1),
        _smss="_smss", window_scaling="window_scaling", syn_mss=nulled("syn_mss", -1),
        syn_t=pl.col("syn_t").fill_nan(None), _syn_t=pl.col("_syn_t").fill_nan(None),
        hs_rtt=pl.col("hs_rtt").fill_nan(None),
    )
    return out.cast(SCHEMA)  # type: ignore[arg-type]


def of_packets(pk: pl.DataFrame) -> pl.DataFrame:
    """Per direction of every TCP connection in ``pk`` (packets with ``proto`` tcp and a flow).

    Returns:
        :data:`SCHEMA`: ``src, dst, sport, dport`` of the direction's first packet, its time
        span and counts, ``unique_bytes`` (highest data end − lowest data sequence, null: no
        data with a sequence number), ``mss``/``wscale`` (first option values seen),
        ``_smss`` (largest payload), ``window_scaling`` (both SYNs carried the option),
        ``syn_mss`` (the MSS option on its first SYN that had one), ``syn_t`` (its first SYN),
        ``_syn_t`` (the connection's first SYN) and ``hs_rtt`` (the connection's handshake RTT);
        the SYN and handshake times only from packets with a direction and a sequence number.
    """
    if pk.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    keep = (pl.col("proto") == "tcp") & pl.col("flow").is_not_null()
    c = pk.select(
        flow=pl.col("flow").cast(pl.UInt32).fill_null(0),
        dir=pl.when(keep).then(pl.col("dir").cast(pl.Int16).fill_null(_NO_DIR)).otherwise(_SKIP).cast(pl.Int16),
        time=pl.col("time").cast(pl.Float64), payload=pl.col("payload").cast(pl.UInt32).fill_null(0),
        size=pl.col("size").cast(pl.UInt32).fill_null(0), seq=pl.col("seq").cast(pl.Int64).fill_null(MISSING),
        # the ACK flag counts only with an ACK number
        flags=(pl.col("flags").cast(pl.UInt8) & pl.when(pl.col("ack").is_null()).then(~ACK & 0xFF).otherwise(0xFF)
               ).cast(pl.UInt8).fill_null(0),
        mss=pl.col("mss").cast(pl.Int32).fill_null(-1), wscale=pl.col("wscale").cast(pl.Int16).fill_null(-1),
    )
    d = _core.dir_stats(*(c[name].to_numpy() for name in c.columns))
    del c
    return _frame(d, pk)


def handshake_of_state(st: pl.DataFrame) -> pl.DataFrame:
    """:func:`handshake` from a prepared state frame (:func:`tracekit.analysis._state.prepare`).

    The state has no sizes or options (none here): of the accumulators' columns only the SYN
    and handshake times are used, the same as from the packets.
    """
    if st.is_empty():
        return handshake(pl.DataFrame(schema=SCHEMA))
    c = st.select(
        dir=pl.col("dir").cast(pl.Int16),
        flags=((pl.col("syn").cast(pl.UInt8) * SYN) | (pl.col("has_ack").cast(pl.UInt8) * ACK)).cast(pl.UInt8),
    )
    none = np.zeros(0, dtype=np.uint32)  # no sizes or options in the state (empty: none)
    d = _core.dir_stats(
        st["flow"].cast(pl.UInt32).to_numpy(), c["dir"].to_numpy(), st["time"].to_numpy(),
        st["len"].cast(pl.UInt32).to_numpy(), none, st["seq"].cast(pl.Int64).to_numpy(), c["flags"].to_numpy(),
        none.view(np.int32), none.view(np.int16))
    return handshake(_frame(d, None))


def handshake(dirs: pl.DataFrame) -> pl.DataFrame:
    """``flow, hs_rtt`` of the connections whose three handshake packets were seen (from :func:`of_packets`)."""
    return dirs.filter((pl.col("dir") == 0) & pl.col("hs_rtt").is_not_null()).select("flow", "hs_rtt").sort("flow")
