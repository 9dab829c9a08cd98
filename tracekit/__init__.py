"""tracekit: TCP packet-trace analysis for captures and simulator traces, in one polars schema.

Example:
    >>> import tracekit
    >>> trace = tracekit.read("samples/linux/bulk_lossy.pcap")   # doctest: +SKIP
    >>> tracekit.analyze(trace).flows                               # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracekit.errors import (
    CorruptTraceError,
    LimitError,
    OutputError,
    SchemaError,
    TracekitError,
    TruncatedError,
    UnknownFormatError,
    UsageError,
)
from tracekit.limits import Limits

if TYPE_CHECKING:
    from tracekit.analysis import Analysis
    from tracekit.trace import Trace

__version__ = "0.1.0"

__all__ = [
    "Analysis",
    "CorruptTraceError",
    "LimitError",
    "Limits",
    "OutputError",
    "SchemaError",
    "Trace",
    "TracekitError",
    "TruncatedError",
    "UnknownFormatError",
    "UsageError",
    "__version__",
    "analyze",
    "formats",
    "read",
    "sniff",
]


def read(source: Any, format: str | None = None, **options: Any) -> Trace:
    """Read a capture, a simulator trace, or a run directory into a :class:`Trace`.

    Args:
        source: Path (file or directory), bytes, or binary stream.
        format: Reader name (see :func:`formats`); detected from the content when omitted.
        **options: Reader options, e.g. ``strict=True``, ``limits=Limits(...)``.

    Returns:
        The validated Trace.

    Raises:
        TracekitError: when the input cannot be read.
    """
    from tracekit.parsers import read as _read

    return _read(source, format, **options)  # type: ignore[no-any-return]


def sniff(path: Any) -> str | None:
    """Name the reader for a file from its content, or None."""
    from tracekit.parsers import sniff as _sniff

    return _sniff(path)


def formats() -> list[Any]:
    """The available readers with their detection rules."""
    from tracekit.parsers import available

    return available()


def analyze(trace: Trace, **options: Any) -> Analysis:
    """Analyse a trace: flows, flight, cwnd, RTT, retransmissions, stalls, ...

    Args:
        trace: A Trace from :func:`read`.
        **options: Analysis options (see :func:`tracekit.analysis.analyze`).

    Returns:
        An :class:`Analysis` of polars frames.
    """
    from tracekit.analysis import analyze as _analyze

    return _analyze(trace, **options)


def __getattr__(name: str) -> Any:
    # Lazy re-exports keep `import tracekit` (and `tracekit --help`) free of polars.
    if name == "Trace":
        from tracekit.trace import Trace

        return Trace
    if name == "Analysis":
        from tracekit.analysis import Analysis

        return Analysis
    raise AttributeError(f"module 'tracekit' has no attribute {name!r}")
