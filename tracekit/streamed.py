"""``analyze --json`` from the streamed summary (``tracekit._core.stream_summary``, issue 21), without polars or numpy.

Plain values in, plain values out, no I/O: every value comes from the rule the frames path
applies, fed the stream's values. :func:`trace_block` is the document's ``trace`` block
(:func:`tracekit.reports.text.summary`'s, before its ``_clean``): the container's ``meta``
(:mod:`tracekit.parsers._meta`, from the reader facts the stream gives as ``capture``), the
defaults every trace's ``meta`` gets and the warning log (:mod:`tracekit._shared`), the
vantage point and the minimum RTO as :func:`tracekit.analyze` adds them.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from tracekit._shared import (
    RTO_FLOORS_S,
    SCHEMA_VERSION,
    WarningLog,
    json_safe,
    rto_floor,
    trace_summary,
    trace_vantage,
    with_defaults,
)
from tracekit.parsers._meta import capture_meta, pcap_meta, pcapng_meta


def trace_meta(out: dict[str, Any], path: str, *, rto_floor_s: float | None = None) -> dict[str, Any]:
    """The analysed trace's ``meta`` (``tracekit.analyze(tracekit.read(path)).trace.meta``) from the stream's output.

    Args:
        out: ``_core.stream_summary(path)``.
        path: The file's name as the trace names it (``meta["paths"]``).
        rto_floor_s: The minimum RTO the analysis was given (None: by the stack, as ``analyze``).
    """
    cap = out["capture"]
    container = pcapng_meta if "interfaces" in cap["meta"] else pcap_meta
    meta = container(cap["meta"], path, None)  # (the stream reads plain files only: no compression)
    meta = capture_meta(meta, cap["counts"], cap["records"], cap["t0_ns"], cut=cap["cut"], rows=cap["rows"])
    log = WarningLog(path)
    for code, message, count, offset, frm, hint in out["warnings"]:
        log.add(code, message, count=count, offset=offset, frame=frm, hint=hint)
    meta = with_defaults(meta, log.to_list())
    floor_s, floor_from = rto_floor(meta, rto_floor_s)
    return {**meta, "vantage_point": trace_vantage(out["vantage_point"]), "rto_floor_s": floor_s,
            "rto_floor_from": floor_from}


def trace_block(out: dict[str, Any], path: str, *, rto_floor_s: float | None = None) -> dict[str, Any]:
    """The ``trace`` block of ``analyze --json`` (before ``_clean``) from ``_core.stream_summary(path)``'s output.

    :func:`tracekit._shared.trace_summary` of the analysed trace's ``meta`` (:func:`trace_meta`),
    its ``packets`` (the decoded rows), ``samples`` (none in a capture) and ``warnings``.
    """
    return _block(out, trace_meta(out, path, rto_floor_s=rto_floor_s))


def _block(out: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The ``trace`` block of the trace whose ``meta`` :func:`trace_meta` made of ``out``."""
    return trace_summary(meta, out["capture"]["rows"], 0, meta["warnings"])


#: The first four bytes of the containers the stream reads: pcap (both byte orders, microsecond and
#: nanosecond stamps) and pcapng's Section Header Block type (the same in both byte orders).
_MAGICS = {bytes.fromhex(m) for m in ("d4c3b2a1", "a1b2c3d4", "4d3cb2a1", "a1b23c4d", "0a0d0d0a")}


def _plain_capture(path: str) -> bool:
    """True for a regular file that starts as an uncompressed pcap or pcapng (what the stream reads).

    A pipe (``/dev/stdin``, ``<(zcat ...)``) is never opened here: reading its first bytes would take
    them from the frames path, which reads it once, whole.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(4) in _MAGICS
    except OSError:
        return False


def summary_document(path: str, *, link_rate: str | None = None,
                     rto_floor_s: float | None = None) -> dict[str, Any] | None:
    """``analyze --json``'s document for one plain pcap/pcapng, from ``_core.stream_summary`` alone.

    What :func:`tracekit.reports.text.summary` writes for ``tracekit.pipeline.load(path)``, key for
    key and byte for byte, without polars or numpy and with memory by connection, not by file.
    None when the stream cannot answer for this input (another container, a compressed file, a
    capture the stream refuses): the caller then reads it through the frames path, which either
    answers or raises the error that names the file.

    Args:
        path: The file.
        link_rate: ``--link-rate`` as given (else run.json beside the file, :mod:`tracekit._runinfo`).
        rto_floor_s: ``--rto-floor`` (else by the stack that made the capture, as ``analyze``).

    Raises:
        UsageError: for a ``link_rate`` that is not a rate.
    """
    from tracekit import _core
    from tracekit._runinfo import link_rate as rate_of
    from tracekit._streamexplain import explain_from_stream
    from tracekit._streamflows import flows
    from tracekit.errors import TracekitError

    if not _plain_capture(path):
        return None
    floor = RTO_FLOORS_S["linux"] if rto_floor_s is None else rto_floor_s
    try:
        out = _core.stream_summary(path, rto_floor_s=floor)
        meta = trace_meta(out, path, rto_floor_s=rto_floor_s)
        if meta["rto_floor_s"] != floor:  # a pcapng whose section header names a simulator's stack
            out = _core.stream_summary(path, rto_floor_s=meta["rto_floor_s"])
    except TracekitError:
        return None
    rows = flows(out, meta)
    link = rate_of(meta, link_rate)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "trace": _block(out, meta),
        "flows": rows,
        "views": [],  # one capture: ``flows`` is the only view
        "tool_metrics": [],  # a capture has no tool-reported series
        "explain": [s.to_dict() for s in explain_from_stream(out, meta, rows, link_bps=link)],
    }
    safe: dict[str, Any] = json_safe(doc)
    return safe
