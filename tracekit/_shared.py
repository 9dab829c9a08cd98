"""Plain-value pieces the frames path and the streamed summary (:mod:`tracekit.streamed`) share.

No polars, no numpy: ``analyze --json`` computed by the stream (``_core.stream_summary``)
imports these without the frames' libraries. The warning log every reader fills, the defaults
every trace's ``meta`` gets, the minimum RTO by the stack that made a trace, the trace's
vantage point from its directions', and the ``trace`` block of ``analyze --json``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from tracekit.errors import CorruptTraceError, TruncatedError

#: The compiled core's stand-in for "missing" in int64 arrays (``src/state/seq.rs``'s ``MISSING``:
#: below any sequence number, ACK, window or time in ns); :mod:`tracekit.analysis._groups` explains it.
MISSING = -(1 << 62)


class WarningLog:
    """Collects a reader's warnings; in strict mode the first one raises instead.

    Args:
        path: The file being read (for messages).
        strict: Turn every warning into a :class:`CorruptTraceError`.
    """

    def __init__(self, path: str | None, strict: bool = False) -> None:
        self.path = path
        self.strict = strict
        self._items: dict[str, dict[str, Any]] = {}

    def add(
        self,
        code: str,
        message: str,
        *,
        count: int = 1,
        offset: int | None = None,
        line: int | None = None,
        frame: int | None = None,
        hint: str | None = None,
    ) -> None:
        """Record a warning (counts add up per code; the first location is kept).

        Raises:
            CorruptTraceError: in strict mode (``TruncatedError`` for W-TRUNCATED).
        """
        if count <= 0:
            return
        if self.strict:
            cls = TruncatedError if code == "W-TRUNCATED" else CorruptTraceError
            raise cls(
                f"{message} ({code}; strict mode)",
                path=self.path,
                offset=offset,
                line=line,
                frame=frame,
                hint=hint or "rerun without --strict to keep what could be read",
            )
        item = self._items.get(code)
        if item is None:
            self._items[code] = {
                "code": code,
                "message": message,
                "count": count,
                "offset": offset,
                "line": line,
                "frame": frame,
            }
        else:
            item["count"] += count

    def extend(self, items: list[dict[str, Any]]) -> None:
        """Merge warnings from another log (e.g. one file of a directory)."""
        for it in items:
            self.add(it["code"], it["message"], count=it.get("count", 1), offset=it.get("offset"),
                     line=it.get("line"), frame=it.get("frame"))

    def __bool__(self) -> bool:
        return bool(self._items)

    def codes(self) -> list[str]:
        """The warning codes raised so far."""
        return list(self._items)

    def to_list(self) -> list[dict[str, Any]]:
        """The warnings as JSON-ready dicts."""
        return [dict(v) for v in self._items.values()]


def with_defaults(meta: dict[str, Any], warnings: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of a trace's ``meta`` with the keys every trace has (``tool`` ... ``segment_size``) and the
    reader's ``warnings`` (:func:`tracekit.trace.make_trace`)."""
    meta = dict(meta)
    meta.setdefault("tool", meta.get("format"))
    meta.setdefault("units", {})
    meta.setdefault("counts", {})
    meta.setdefault("t0_ns", None)
    meta.setdefault("segment_size", None)
    meta["warnings"] = warnings
    return meta


#: Minimum RTO by the stack that made a trace: Linux ``TCP_RTO_MIN`` (include/net/tcp.h), ns-2
#: ``Agent/TCP set minrto_ 0.2`` (tcl/lib/ns-default.tcl), ns-3 ``TcpSocketBase::MinRto`` (1 s),
#: RFC 6298 §2.4 (1 s).
RTO_FLOORS_S = {"linux": 0.2, "ns-2": 0.2, "ns-3": 1.0, "rfc6298": 1.0}


def rto_floor(meta: dict[str, object], floor_s: float | None = None) -> tuple[float, str]:
    """The minimum RTO to test timeouts against, and where it comes from.

    A user's ``floor_s`` wins; else the stack that made the trace: ns-3 when any of its
    files came from ns-3, ns-2 likewise, else a real capture (Linux, the most common sender).

    Returns:
        ``(seconds, source)``, source one of ``user``, ``ns-3``, ``ns-2``, ``linux``.
    """
    if floor_s is not None:
        return float(floor_s), "user"
    tools = {str(meta.get("tool"))}
    for part in meta.get("parts") or []:  # type: ignore[attr-defined]
        if isinstance(part, dict):
            tools.add(str(part.get("tool")))
    for stack in ("ns-3", "ns-2"):
        if stack in tools:
            return RTO_FLOORS_S[stack], stack
    return RTO_FLOORS_S["linux"], "linux"


def trace_vantage(points: Iterable[str | None]) -> str | None:
    """Where a trace was observed from its directions' vantage points (the flows' ``vantage_point``):
    the one point they all tell, ``"mixed"`` when they tell several, None when none tells."""
    told = sorted({p for p in points if p is not None})
    return told[0] if len(told) == 1 else ("mixed" if told else None)


def trace_summary(meta: dict[str, Any], packets: int, samples: int, warnings: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``trace`` block of ``analyze --json`` (:func:`tracekit.reports.text.summary`, before its ``_clean``):
    the analysed trace's ``meta`` but ``warnings`` and ``parts``, then its ``packets`` and ``samples`` (rows)
    and ``warnings``."""
    kept = {k: v for k, v in meta.items() if k not in ("warnings", "parts")}
    return {**kept, "packets": packets, "samples": samples, "warnings": warnings}


#: Version of the ``analyze --json`` document layout (docs/cli.md).
SCHEMA_VERSION = 1


def json_safe(v: Any) -> Any:
    """A value made JSON-safe: NaN/inf -> None, containers recursively (keys as text)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


#: A data direction limited by its application more than this share of the time (the flows'
#: ``limited_app_share``) is left out of Jain's fairness index.
APP_LIMITED_SHARE = 0.5


def competes(app_share: float | None) -> bool:
    """Whether a data direction takes part in Jain's fairness index (:mod:`tracekit.analysis.fairness`, the account).

    Jain's index judges how a path's capacity was shared among flows that wanted more than they got
    (Jain, Chiu & Hawe, DEC-TR-301, 1984, apply it to demands above the fair share). A direction whose
    sender had nothing to send most of the time (``app_share`` above :data:`APP_LIMITED_SHARE`: an
    iperf3 control connection, a request-response exchange) took what it asked for, and counting
    its few bit/s as an unfair share would make one bulk transfer look unfair. Unknown (None or
    NaN) competes, as every direction did before the limit was known.
    """
    return app_share is None or not app_share > APP_LIMITED_SHARE
