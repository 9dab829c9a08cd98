"""The stand-in for "missing" that the analyses and the compiled core share.

The core's int64 columns carry :data:`MISSING` where a value does not exist (no ACK number, no
window, no earlier packet), because numpy integer arrays have no null; the analyses turn it
back into polars nulls. It is ``seq.rs``'s ``MISSING`` (``src/state/seq.rs``): below every
sequence number, ACK, window and time in nanoseconds a trace can carry.
"""

from __future__ import annotations

from tracekit._shared import MISSING as MISSING  # (plain values: the streamed summary reads it too)
