"""The part of pcap and pcapng reading that is the same for both: decode, time, connections."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from tracekit.errors import LimitError, UnknownFormatError
from tracekit.limits import Limits
from tracekit.parsers._decode import SUPPORTED_LINKTYPES, Packets, decode
from tracekit.parsers._tcp import finish_tcp
from tracekit.trace import Trace, WarningLog, make_trace


def check_linktypes(linktypes: list[int], name: str) -> None:
    """Refuse link types the fast path cannot decode (with the pyshark hint).

    Raises:
        UnknownFormatError: naming the first unsupported link type.
    """
    for lt in linktypes:
        if lt not in SUPPORTED_LINKTYPES:
            raise UnknownFormatError(
                f"link type {lt} is not supported by the fast reader",
                path=name,
                hint="install pyshark + tshark and pass --format tshark to read it slowly through Wireshark",
            )


def build(buf: np.ndarray, pk: Packets, *, meta: dict[str, Any], log: WarningLog, limits: Limits) -> Trace:
    """Turn record facts into a validated capture Trace.

    Args:
        buf: The (decompressed) file bytes.
        pk: Per-record facts gathered by the container reader.
        meta: Container metadata (format, paths, linktypes, ...).
        log: The reader's warnings.
        limits: Resource limits (``max_packets``, ``max_flows``).

    Returns:
        The Trace, ``event == "capture"`` on every row.
    """
    if len(pk.frame) > limits.max_packets:
        raise LimitError(f"{len(pk.frame):,} packets, over the limit of {limits.max_packets:,}",
                         path=meta["paths"][0], hint="raise max_packets in [limits] or split the capture (editcap -c)")
    counts: dict[str, int] = dict(meta.get("counts", {}))
    df = decode(buf, pk, log, counts)
    t0 = int(pk.ts_ns[0]) if len(pk.ts_ns) else None
    if len(pk.ts_ns) > 1:
        back = int((np.diff(pk.ts_ns) < 0).sum())
        if back:
            log.add("W-NONMONOTONIC", "timestamps go backwards (frame order kept)", count=back)
    df = df.with_columns(
        time=((pl.col("_ts") - (t0 or 0)).cast(pl.Float64) / 1e9),
        event=pl.lit("capture"),
    ).drop("_ts")
    df = finish_tcp(df)
    nflows = df["flow"].n_unique() if df.height else 0
    if nflows > limits.max_flows:
        raise LimitError(f"{nflows:,} connections, over the limit of {limits.max_flows:,}",
                         path=meta["paths"][0], hint="a port scan? raise max_flows in [limits]")
    counts["records"] = len(pk.frame)
    meta = {**meta, "t0_ns": t0, "counts": counts, "units": {"time": "s", "size": "bytes"}}
    if df.height and (df["caplen"] < df["size"]).any():
        meta["headers_only"] = bool((df["caplen"] < df["size"]).mean() > 0.5)
    return make_trace(df, None, meta, log)
