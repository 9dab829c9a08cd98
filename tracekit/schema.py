"""The event schema: the one contract between parsers and everything after them.

Declared once here and documented column by column in ``docs/schema.md``.
Every parser's :class:`~tracekit.trace.Trace` is checked by :func:`validate`
before it is returned; the analysis frames are declared here too so that
reports can be written against them.

Units everywhere: seconds, bytes, bits per second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from tracekit.errors import SchemaError

if TYPE_CHECKING:
    from tracekit.trace import Trace

#: Where a packet event was observed.
EVENTS = ("capture", "send", "recv", "enqueue", "dequeue", "drop")
EVENT = pl.Enum(list(EVENTS))
PROTOS = ("tcp", "udp", "other")
PROTO = pl.Enum(list(PROTOS))
#: Where a cwnd row comes from: the tool's own series or tracekit's estimate (sorted as strings sort).
CWND_SOURCES = ("estimate", "trace")
CWND_SOURCE = pl.Enum(list(CWND_SOURCES))
#: Congestion-control phase of a cwnd row.
PHASES = ("slow_start", "congestion_avoidance", "recovery")
PHASE = pl.Enum(list(PHASES))

#: TCP flag bits as in the TCP header's low byte.
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80

#: One row per observed packet event.
PACKETS: dict[str, pl.DataType] = {
    "frame": pl.UInt64(),  # capture frame number (1-based) or text line number
    "time": pl.Float64(),  # seconds: captures from the first record, simulators on the simulation clock
    "event": EVENT,
    "node": pl.String(),  # where observed (null for plain captures)
    "link": pl.String(),  # "from->to" / device path (null for plain captures)
    "flow": pl.UInt32(),  # connection id, same for both directions (null: not TCP/UDP)
    "dir": pl.Int8(),  # 0 from the initiator, 1 back
    "src": pl.Categorical(),
    "dst": pl.Categorical(),
    "sport": pl.Int32(),
    "dport": pl.Int32(),
    "proto": PROTO,
    "size": pl.UInt32(),  # bytes on the wire incl. headers (IP length + link header)
    "payload": pl.UInt32(),  # TCP/UDP payload bytes from the length fields
    "seq": pl.Int64(),  # relative byte sequence number (per direction)
    "ack": pl.Int64(),  # relative byte ack (null without the ACK flag)
    "flags": pl.UInt8(),
    "win": pl.Int64(),  # advertised window in bytes (scale applied when the handshake was seen)
    "mss": pl.UInt16(),
    "wscale": pl.UInt8(),
    "ts_val": pl.UInt32(),
    "ts_ecr": pl.UInt32(),
    "sack": pl.List(pl.Array(pl.Int64(), 2)),  # [left, right) relative pairs
    "pkt_id": pl.Int64(),  # simulator packet id (ns-2 uid, NetSim PACKET_ID)
    "pkt_seq": pl.Int64(),  # simulator segment number (ns-2 seqno in packets)
    "ptype": pl.String(),  # simulator packet type name (ns-2 ptype), null for captures
    "caplen": pl.UInt32(),  # bytes captured (null for simulator traces)
    "ttl": pl.UInt8(),  # IPv4 TTL or IPv6 hop limit as captured (null for simulator traces)
    "tunnel": pl.Categorical(),  # outermost tunnel the packet came through (vxlan, gre, ...), null: none
    "outer_src": pl.Categorical(),  # that tunnel's outer IP source (null without a tunnel)
    "outer_dst": pl.Categorical(),  # its outer IP destination
}

#: Columns that may never be null.
PACKETS_REQUIRED = ("frame", "time", "event", "proto", "size")

#: One row per time-series sample a tool reported itself.
SAMPLES: dict[str, pl.DataType] = {
    "time": pl.Float64(),
    "flow": pl.UInt32(),
    "node": pl.String(),
    "metric": pl.String(),  # cwnd, ssthresh, rtt, srtt, rto, throughput, queue, drops, ...
    "value": pl.Float64(),
    "unit": pl.String(),  # bytes, packets, s, bps, ratio, count
    "source": pl.String(),  # the original column / series name
}
SAMPLES_REQUIRED = ("time", "metric", "value", "unit", "source")

#: Units a sample may carry.
UNITS = ("bytes", "packets", "s", "bps", "pps", "ratio", "count", "1")

# ---- analysis frames (tracekit.analysis) ---------------------------------------------------------

FLIGHT: dict[str, pl.DataType] = {
    "flow": pl.UInt32(),
    "dir": pl.Int8(),
    "frame": pl.UInt64(),
    "time": pl.Float64(),
    "flight_bytes": pl.Int64(),  # Wireshark's tcp.analysis.bytes_in_flight (minus the peer's latest SACK blocks)
    "flight_sack_bytes": pl.Int64(),  # refined: minus SACKed bytes (RFC 6675 "pipe" without loss marks)
    "unacked_bytes": pl.Int64(),  # added: highest data byte sent - highest cumulative ACK (no SACK)
    # flight_bytes rests on the sender's segments only: no ACK from the other side seen yet
    # (one-way or mid-stream captures, the first segments); Wireshark 4.0 gives such values too
    "flight_sender_only": pl.Boolean(),
}

CWND: dict[str, pl.DataType] = {
    "flow": pl.UInt32(),
    "dir": pl.Int8(),
    "time": pl.Float64(),
    "cwnd_bytes": pl.Float64(),
    "ssthresh_bytes": pl.Float64(),
    # Enums (one byte a row, not a string: ~30 MB less per million rows); categories in
    # lexical order for ``source``, so that sorting by it sorts as the strings would
    "source": CWND_SOURCE,  # "estimate" or "trace"
    "phase": PHASE,  # slow_start, congestion_avoidance, recovery
}

#: The cwnd reductions of each direction's chosen series (``tracekit.analysis.cwnd.reductions``).
REDUCTIONS: dict[str, pl.DataType] = {
    "flow": pl.UInt32(),
    "dir": pl.Int8(),
    "source": CWND_SOURCE,  # the series it is in: the tool's ("trace") when it wrote one, else "estimate"
    "time": pl.Float64(),  # the first sample of the reduction
    "cwnd_bytes": pl.Float64(),
    "ssthresh_bytes": pl.Float64(),
    "loss_event": pl.Boolean(),  # loss evidence backs it: counted in the flows' loss_events
}

RTT: dict[str, pl.DataType] = {
    "flow": pl.UInt32(),
    "dir": pl.Int8(),
    "frame": pl.UInt64(),  # the ACK that closed the sample
    "time": pl.Float64(),
    "rtt_s": pl.Float64(),
    "method": pl.String(),  # "seq" (data->ACK, Karn) or "ts" (timestamps)
}

RETRANSMISSIONS: dict[str, pl.DataType] = {
    "flow": pl.UInt32(),
    "dir": pl.Int8(),
    "frame": pl.UInt64(),
    "time": pl.Float64(),
    "seq": pl.Int64(),
    "len": pl.Int64(),
    "kind": pl.String(),  # fast, rto, spurious
}

STALLS: dict[str, pl.DataType] = {
    "flow": pl.UInt32(),
    "dir": pl.Int8(),
    "start": pl.Float64(),
    "end": pl.Float64(),
    "duration": pl.Float64(),
    "cause": pl.String(),  # zero_window, rwnd_limited, rto, app_limited, unknown
}

THROUGHPUT: dict[str, pl.DataType] = {
    "flow": pl.UInt32(),
    "dir": pl.Int8(),
    "time": pl.Float64(),  # bin start
    "bin_s": pl.Float64(),
    "throughput_bps": pl.Float64(),
    "goodput_bps": pl.Float64(),
    "packets_per_s": pl.Float64(),
}

QUEUE: dict[str, pl.DataType] = {
    "link": pl.String(),
    "time": pl.Float64(),
    "packets": pl.Int64(),
    "bytes": pl.Int64(),
    "drops": pl.Int64(),  # cumulative
}

FAIRNESS: dict[str, pl.DataType] = {
    "time": pl.Float64(),  # bin start; null for the overall row
    "flows": pl.UInt32(),
    "jain": pl.Float64(),
}


def empty(columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """Return an empty frame with exactly these columns and dtypes."""
    return pl.DataFrame(schema=columns)


def conform(df: pl.DataFrame, columns: dict[str, pl.DataType]) -> pl.DataFrame:
    """Add missing columns as nulls, cast, and order ``df`` as ``columns`` says.

    Parsers build only the columns their format has and call this last.
    Extra columns are dropped.

    Args:
        df: The frame a parser built.
        columns: The declared schema (:data:`PACKETS` or :data:`SAMPLES`).

    Returns:
        A frame with exactly the declared columns.
    """
    if not df.columns:
        return empty(columns)
    exprs = []
    for name, dtype in columns.items():
        if name in df.columns:
            exprs.append(pl.col(name).cast(dtype, strict=False).alias(name))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return df.select(exprs)


def problems(df: pl.DataFrame, columns: dict[str, Any], required: tuple[str, ...], name: str) -> list[str]:
    """List every way ``df`` breaks its declared schema (empty when it conforms)."""
    found: list[str] = []
    for col, dtype in columns.items():
        if col not in df.columns:
            found.append(f"{name}: missing column {col!r} ({dtype})")
            continue
        have = df.schema[col]
        if have != dtype:
            found.append(f"{name}.{col}: dtype {have}, expected {dtype}")
    extra = [c for c in df.columns if c not in columns]
    if extra:
        found.append(f"{name}: unexpected columns {extra}")
    for col in required:
        if col in df.columns:
            n = df[col].null_count()
            if n:
                found.append(f"{name}.{col}: {n} null value(s) in a required column")
    if "time" in df.columns and df.schema["time"] == pl.Float64() and df.height:
        bad = df.select((~pl.col("time").is_finite()).sum()).item()
        if bad:
            found.append(f"{name}.time: {bad} non-finite value(s)")
    return found


def validate(trace: Trace) -> Trace:
    """Check a trace against the schema, reporting every problem at once.

    Args:
        trace: What a parser built.

    Returns:
        The same trace, unchanged.

    Raises:
        SchemaError: listing each problem with its column.
    """
    found = problems(trace.packets, PACKETS, PACKETS_REQUIRED, "packets")
    found += problems(trace.samples, SAMPLES, SAMPLES_REQUIRED, "samples")
    if "unit" in trace.samples.columns and trace.samples.height:
        bad_units = set(trace.samples["unit"].drop_nulls().unique().to_list()) - set(UNITS)
        if bad_units:
            found.append(f"samples.unit: unknown unit(s) {sorted(bad_units)}")
    for key in ("format", "paths"):
        if key not in trace.meta:
            found.append(f"meta: missing key {key!r}")
    if found:
        path = ", ".join(trace.meta.get("paths", [])) or None
        raise SchemaError("trace does not match the tracekit schema:", found, path=path)
    return trace
