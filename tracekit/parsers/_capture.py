"""The part of pcap and pcapng reading that is the same for both: decode, time, connections.

Memory: a plain file is memory-mapped, and its pages are released (``MADV_DONTNEED``) behind
each pass over it (the container's walk, its header gathers, decoding), so that the file never
stays resident as a whole; and the decoded columns become the frame's columns without a copy.
On the 158 MB benchmark capture the reader peaks ~175 MB above the interpreter, for a 107 MB
frame. :func:`finish` is the tshark path's equivalent of :func:`build` (polars columns in).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from tracekit._source import Loaded, NamedBytes, compression_of, describe, load
from tracekit.errors import LimitError, UnknownFormatError
from tracekit.limits import Limits
from tracekit.parsers._decode import SUPPORTED_LINKTYPES, Packets, decode
from tracekit.parsers._frame import frame
from tracekit.parsers._tcp import finish_tcp
from tracekit.trace import Trace, WarningLog, make_trace


def load_capture(source: Any, limits: Limits) -> Loaded:
    """A capture's bytes: a plain file is memory-mapped, anything else goes through ``load``.

    Mapping avoids copying a large capture into memory before parsing it: pages are read
    when the walk and the gathers touch them, and they stay in the page cache rather than
    in the process's own heap. Compressed files, bytes and streams are loaded by
    :func:`tracekit._source.load` (with its capped decompression).

    Raises:
        TracekitError: as :func:`tracekit._source.load` (missing file, directory, limits).
    """
    if isinstance(source, (str, os.PathLike)) and not isinstance(source, NamedBytes):
        path = describe(source)
        try:
            size = os.stat(source).st_size
            with open(source, "rb") as fh:
                head = fh.read(8)
                if size > limits.max_input_bytes or not head or compression_of(head) is not None:
                    return load(source, limits)
                return Loaded(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), path, None)  # type: ignore[arg-type]
        except (OSError, ValueError):
            return load(source, limits)  # raises the proper TracekitError
    return load(source, limits)


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


def fallback(
    linktypes: list[int],
    *,
    source: Any,
    data: bytes,
    compression: str | None,
    path: str,
    limits: Limits,
    strict: bool,
    container: str,
) -> Trace | None:
    """Read the whole file through tshark when the fast path lacks one of its link types.

    Args:
        linktypes: The link types the file's packets use.
        source: What the reader was given (a path is handed to tshark as is when uncompressed).
        data: The decompressed bytes (handed to tshark through a temporary file otherwise).
        compression: The compression found on the input, if any.
        path: The file's name for messages.
        limits: Resource limits.
        strict: Strict mode (a slow-path read is itself a warning, so strict refuses it).
        container: ``"pcap"`` or ``"pcapng"``, kept as ``meta["format"]``.

    Returns:
        None when the fast path decodes every link type; else the Trace read through tshark.

    Raises:
        UnknownFormatError: when a link type is unsupported and pyshark/tshark are not installed
            (or tshark does not know the link type either).
    """
    bad = [lt for lt in linktypes if lt not in SUPPORTED_LINKTYPES]
    if not bad:
        return None
    from tracekit.parsers import tshark

    if not tshark.available():
        check_linktypes(bad, path)
    if not (isinstance(source, (str, os.PathLike)) and compression is None):
        source = NamedBytes(bytes(data), path)
    return tshark.read(source, limits=limits, strict=strict, name=path, container=container, slow_linktypes=bad)


def release(data: Any, upto: int | None = None) -> None:
    """Drop a memory-mapped capture's pages below ``upto`` (all: None) from this process.

    The pages stay in the page cache (a later access maps them again), so this only stops an
    already-parsed file from counting in the reader's resident memory. No-op for bytes.
    """
    if isinstance(data, mmap.mmap) and hasattr(data, "madvise"):
        end = len(data) if upto is None else (upto // mmap.PAGESIZE) * mmap.PAGESIZE
        if end > 0:
            data.madvise(mmap.MADV_DONTNEED, 0, end)


def releaser(data: Any) -> Callable[[int], None] | None:
    """``release`` bound to ``data`` when it is a memory map (None for bytes: nothing to release)."""
    if isinstance(data, mmap.mmap):
        return lambda upto: release(data, upto)
    return None


def build(buf: np.ndarray, pk: Packets, *, meta: dict[str, Any], log: WarningLog, limits: Limits,
          data: Any = None) -> Trace:
    """Turn record facts into a validated capture Trace.

    Args:
        buf: The (decompressed) file bytes.
        pk: Per-record facts gathered by the container reader. Its arrays are released (the
            fields emptied) once decoded, so that they do not outlive their use.
        meta: Container metadata (format, paths, linktypes, ...).
        log: The reader's warnings.
        limits: Resource limits (``max_packets``, ``max_flows``).
        data: The memory map ``buf`` views, if any: its pages are released as decoding moves on.

    Returns:
        The Trace, ``event == "capture"`` on every row.
    """
    nrec = len(pk)
    if nrec > limits.max_packets:
        raise LimitError(f"{nrec:,} packets, over the limit of {limits.max_packets:,}",
                         path=meta["paths"][0], hint="raise max_packets in [limits] or split the capture (editcap -c)")
    counts: dict[str, int] = dict(meta.get("counts", {}))
    ts = pk.ts_ns
    t0 = int(ts[0]) if nrec else None
    back = int(np.count_nonzero(ts[1:] < ts[:-1])) if nrec > 1 else 0
    del ts
    # Pages are mapped back as decoding reads them (~12 ms per pass over 160 MB) and released
    # chunk by chunk behind it, so that the file never stays resident as a whole.
    release(data)
    rows = decode(buf, pk, log, counts, done=releaser(data), t0=t0 or 0, limits=limits)
    release(data)
    del buf
    empty = np.empty(0, dtype=np.int64)
    pk.data_off = pk.caplen = pk.origlen = pk.ts_ns = empty
    if back:
        log.add("W-NONMONOTONIC", "timestamps go backwards (frame order kept)", count=back)
    cut = rows.caplen < rows.size
    headers_only = bool(np.count_nonzero(cut) * 2 > len(cut)) if cut.any() else None
    del cut
    df, nflows = frame(rows)
    del rows
    if df.height and df["flow"].null_count():
        nflows += 1  # as polars' n_unique counts null
    _check_flows(nflows, meta["paths"][0], limits)
    counts["records"] = nrec
    meta = {**meta, "counts": counts}  # (key order as finish() makes it)
    meta = {**meta, "t0_ns": t0, "counts": counts, "units": {"time": "s", "size": "bytes"}}
    if headers_only is not None:
        meta["headers_only"] = headers_only
    trace = make_trace(df, None, meta, log)
    del df
    return trace


def _check_flows(nflows: int, path: str, limits: Limits) -> None:
    """Refuse more connections than ``max_flows`` (a port scan, most likely)."""
    if nflows > limits.max_flows:
        raise LimitError(f"{nflows:,} connections, over the limit of {limits.max_flows:,}",
                         path=path, hint="a port scan? raise max_flows in [limits]")


def finish(df: pl.DataFrame, ts_ns: np.ndarray, *, meta: dict[str, Any], log: WarningLog,
           limits: Limits) -> Trace:
    """Add time, connections and relative numbers to decoded rows and make the Trace.

    Args:
        df: Decoded rows (``_ts`` in epoch ns plus the raw TCP columns of
            :func:`tracekit.parsers._tcp.finish_tcp`), in frame order.
        ts_ns: Timestamps of *every* record (rows or not), in record order.
        meta: Container metadata; ``meta["counts"]`` gains ``records``.
        log: The reader's warnings.
        limits: Resource limits (``max_flows``).

    Returns:
        The validated Trace, ``event == "capture"`` on every row.
    """
    counts: dict[str, int] = dict(meta.get("counts", {}))
    t0 = int(ts_ns[0]) if len(ts_ns) else None
    if len(ts_ns) > 1:
        back = int((np.diff(ts_ns) < 0).sum())
        if back:
            log.add("W-NONMONOTONIC", "timestamps go backwards (frame order kept)", count=back)
    df = df.with_columns(
        time=((pl.col("_ts") - (t0 or 0)).cast(pl.Float64) / 1e9),
        event=pl.lit("capture"),
    ).drop("_ts")
    df = finish_tcp(df)
    _check_flows(df["flow"].n_unique() if df.height else 0, meta["paths"][0], limits)
    counts["records"] = len(ts_ns)
    meta = {**meta, "t0_ns": t0, "counts": counts, "units": {"time": "s", "size": "bytes"}}
    if df.height and (df["caplen"] < df["size"]).any():
        meta["headers_only"] = bool((df["caplen"] < df["size"]).mean() > 0.5)  # type: ignore[operator]
    return make_trace(df, None, meta, log)
