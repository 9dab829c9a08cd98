"""An address as the frames show it, in plain Python: the packets frame's ``src``/``dst`` text
(:mod:`tracekit.parsers._frame`) and the streamed summary's (:mod:`tracekit._streamflows`) come
from this one function, which imports neither polars nor numpy."""

from __future__ import annotations

import ipaddress


def address_text(is_v4: bool, hi: int, lo: int) -> str:
    """An address as the frames show it: IPv4 dotted (``lo``'s low 32 bits), IPv6 as :mod:`ipaddress` writes it.

    ``hi``/``lo``: the high and low 64 bits (the reader's and ``_core.stream_summary``'s halves).
    """
    v = (hi << 64) | lo
    return str(ipaddress.IPv4Address(v & 0xFFFFFFFF) if is_v4 else ipaddress.IPv6Address(v))
