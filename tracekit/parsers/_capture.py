"""What pcap and pcapng reading share: the compiled reader, its warnings and errors, the frame.

The file (a plain file by its path; compressed input, bytes and streams through
:func:`tracekit._source.load`) is handed to ``tracekit._core.read_capture``, which
walks the records, decodes every header on every core and reassembles IP fragments in frame
order (Rust, ``src/capture/``; docs/architecture.md) and returns numpy columns and address ids.
Its warnings are replayed into the reader's :class:`~tracekit.trace.WarningLog` in the order
they arose (strict mode raises the first), its
located failures become :class:`~tracekit.errors.TracekitError`. Link types it lacks are read
through tshark (:func:`fallback`). :func:`finish` is the tshark path's equivalent of
:func:`build` (polars columns in).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from tracekit import _core
from tracekit._source import Loaded, NamedBytes, Source, compression_of, describe, load
from tracekit.errors import CorruptTraceError, LimitError, TracekitError, UnknownFormatError
from tracekit.limits import Limits
from tracekit.parsers._decode import Rows
from tracekit.parsers._frame import frame
from tracekit.parsers._meta import capture_meta
from tracekit.parsers._tcp import finish_tcp
from tracekit.trace import Trace, WarningLog, make_trace

#: Link types the compiled reader decodes (LINKTYPE_* number -> name); others go to tshark.
SUPPORTED_LINKTYPES: dict[int, str] = _core.linktypes()

_ERRORS: dict[str, type[TracekitError]] = {"corrupt": CorruptTraceError, "unknown": UnknownFormatError,
                                           "limit": LimitError}


def load_capture(source: Any, limits: Limits) -> Loaded:
    """A capture to read: a plain file stays a path (the compiled reader reads it through a
    small window, so the file never needs to fit in memory), anything else goes through ``load``.

    Compressed files, bytes and streams are loaded by :func:`tracekit._source.load` (with its
    capped decompression) and handed over as bytes.

    Raises:
        TracekitError: as :func:`tracekit._source.load` (missing file, directory, limits).
    """
    if isinstance(source, (str, os.PathLike)) and not isinstance(source, NamedBytes):
        path = describe(source)
        try:
            size = os.stat(source).st_size
            with open(source, "rb") as fh:
                head = fh.read(8)
            if size <= limits.max_input_bytes and head and compression_of(head) is None and os.path.isfile(source):
                return Loaded(os.fspath(source), path, None)  # type: ignore[arg-type]
        except (OSError, ValueError):
            pass
    return load(source, limits)  # raises the proper TracekitError


def check_linktypes(linktypes: list[int], name: str) -> None:
    """Refuse link types the compiled reader cannot decode (with the pyshark hint).

    Raises:
        UnknownFormatError: naming the first unsupported link type.
    """
    for lt in linktypes:
        if lt not in SUPPORTED_LINKTYPES:
            raise UnknownFormatError(
                f"link type {lt} (LINKTYPE_* number, tcpdump.org link-layer header types) is not supported"
                " by the fast reader",
                path=name,
                hint="its fallback through tshark needs the `pyshark` extra (pip install 'tracekit[pyshark]')"
                " and tshark; then pass --format tshark to read it slowly through Wireshark",
            )


def fallback(linktypes: list[int], *, source: Any, data: Any, compression: str | None, path: str,
             limits: Limits, strict: bool, container: str) -> Trace:
    """Read the whole file through tshark when the compiled reader lacks one of its link types.

    Args:
        linktypes: The link types it lacks.
        source: What the reader was given (a path is handed to tshark as is when uncompressed).
        data: The decompressed bytes (handed to tshark through a temporary file otherwise).
        compression: The compression found on the input, if any.
        path: The file's name for messages.
        limits: Resource limits.
        strict: Strict mode (a slow-path read is itself a warning, so strict refuses it).
        container: ``"pcap"`` or ``"pcapng"``, kept as ``meta["format"]``.

    Raises:
        UnknownFormatError: when pyshark/tshark are not installed (or tshark does not know the
            link type either).
    """
    from tracekit.parsers import tshark

    if not tshark.available():
        check_linktypes(linktypes, path)
    if not (isinstance(source, (str, os.PathLike)) and compression is None):
        source = NamedBytes(data if isinstance(data, bytes) else bytes(data), path)
    return tshark.read(source, limits=limits, strict=strict, name=path, container=container,
                       slow_linktypes=linktypes)


def read(source: Source, container: str, *, limits: Limits, strict: bool, name: str | None,
         metadata: Callable[[dict[str, Any], str, str | None], dict[str, Any]]) -> Trace:
    """Read a pcap or pcapng file through the compiled reader.

    Args:
        source: Path, bytes or binary stream.
        container: ``"pcap"`` or ``"pcapng"``.
        limits: Resource limits.
        strict: Turn warnings into errors.
        name: Name for messages when ``source`` is bytes.
        metadata: Makes the Trace's ``meta`` from the reader's container facts, the path and
            the compression.

    Raises:
        TracekitError: located (file, offset and/or frame, hint).
    """
    loaded = load_capture(source, limits)
    data, path = loaded.data, name or loaded.path
    log = WarningLog(path, strict)
    out = _core.read_capture(data, container, limits, f"{limits.frag_timeout_s:g}")
    for code, message, count, offset, frm, hint in out["warnings"]:
        log.add(code, message, count=count, offset=offset, frame=frm, hint=hint)
    if "error" in out:
        kind, message, offset, frm, hint = out["error"]
        raise _ERRORS[kind](message, path=path, offset=offset, frame=frm, hint=hint)
    if out["unsupported"]:
        return fallback(out["unsupported"], source=source, data=data, compression=loaded.compression, path=path,
                        limits=limits, strict=strict, container=container)
    meta = metadata(out["meta"], path, loaded.compression)
    del data, loaded
    return build(out, meta=meta, log=log, limits=limits)


def build(out: dict[str, Any], *, meta: dict[str, Any], log: WarningLog, limits: Limits) -> Trace:
    """Turn the compiled reader's rows into a validated capture Trace (``event == "capture"``)."""
    rows = Rows.from_core(out)
    del out["rows"], out["ids"]  # (the arrays now belong to rows)
    cut, nrows = int(np.count_nonzero(rows.caplen < rows.size)), len(rows)
    df, nflows = frame(rows)
    del rows
    if df.height and df["flow"].null_count():
        nflows += 1  # as polars' n_unique counts null
    _check_flows(nflows, meta["paths"][0], limits)
    meta = capture_meta(meta, out["counts"], out["records"], out["t0_ns"], cut=cut, rows=nrows)
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
    back = _core.time_back_warning(np.ascontiguousarray(ts_ns, dtype=np.int64))
    if back is not None:  # (the compiled reader's own warning: how often, the largest step and its frame)
        code, message, count, offset, frm, _ = back
        log.add(code, message, count=count, offset=offset, frame=frm)
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
