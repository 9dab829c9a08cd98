"""An address as the frames show it, in plain Python: the packets frame's ``src``/``dst`` text
(:mod:`tracekit.parsers._frame`) and the streamed summary's (:mod:`tracekit._streamflows`) come
from this one function, which imports neither polars nor numpy."""

from __future__ import annotations

import ipaddress


def address_text(is_v4: bool, hi: int, lo: int) -> str:
    """An address as the frames show it: IPv4 dotted (``lo``'s low 32 bits), IPv6 as :mod:`ipaddress` writes it.

    ``hi``/``lo``: the high and low 64 bits (the reader's and ``_core.stream_summary``'s halves).
    """
    if is_v4:  # (dotted decimal, as ipaddress.IPv4Address writes it, without building one)
        return f"{lo >> 24 & 255}.{lo >> 16 & 255}.{lo >> 8 & 255}.{lo & 255}"
    return str(ipaddress.IPv6Address((hi << 64) | lo))
