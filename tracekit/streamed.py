"""``analyze --json`` from the streamed summary (``tracekit._core.stream_summary``, issue 21), without polars or numpy.

Plain values in, plain values out, no I/O: every value comes from the rule the frames path
applies, fed the stream's values. :func:`trace_block` is the document's ``trace`` block
(:func:`tracekit.reports.text.summary`'s, before its ``_clean``): the container's ``meta``
(:mod:`tracekit.parsers._meta`, from the reader facts the stream gives as ``capture``), the
defaults every trace's ``meta`` gets and the warning log (:mod:`tracekit._shared`), the
vantage point and the minimum RTO as :func:`tracekit.analyze` adds them.
"""

from __future__ import annotations

from typing import Any

from tracekit._shared import WarningLog, rto_floor, trace_summary, trace_vantage, with_defaults
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
    meta = trace_meta(out, path, rto_floor_s=rto_floor_s)
    return trace_summary(meta, out["capture"]["rows"], 0, meta["warnings"])
