"""Endace ERF capture files (DAG cards, ``editcap -F erf``): no file header, records only.

Layout::

    record: timestamp u64 LE (32.32 fixed point) | type u8 | flags u8 | rlen u16 BE
            | lctr u16 BE | wlen u16 BE | [8-byte extension headers while the high bit is set]
            | [2 bytes offset/pad for Ethernet types] | frame (| FCS) | padding up to rlen

The compiled reader (``src/capture/erf.rs``, after Wireshark's wiretap/erf.c) reads types ETH
(2, 10, 16) and IPV4/IPV6 (22, 23) with the pcap reader's limits; another type is refused at
its byte offset (``--format tshark`` reads it). ERF has no magic: sniffing checks that the
first two records have a known type, sane flags and a record length that holds a header.
"""

from __future__ import annotations

from typing import Any

from tracekit._source import Source
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _capture
from tracekit.trace import Trace

NAME = "erf"
DESCRIPTION = "Endace ERF capture (DAG cards; Ethernet and IP record types)"
DETECT = "no magic: the first two records have a known type and a plausible record length"

_TYPES = {2, 10, 16, 22, 23}


def sniff(head: bytes) -> bool:
    """True when the first two records look like ERF (the checks of wiretap/erf.c's erf_open)."""
    p = 0
    for _ in range(2):
        if p + 16 > len(head):
            return p > 0
        rlen = int.from_bytes(head[p + 10:p + 12], "big")
        if head[p + 8] & 0x7F not in _TYPES or head[p + 9] & 0xF0 or rlen < 18:
            return False
        p += rlen
    return True


def _meta(m: dict[str, Any], path: str, compression: str | None) -> dict[str, Any]:
    return {
        "format": NAME,
        "tool": "erf",
        "paths": [path],
        "compression": compression,
        "linktypes": [m["linktype"]],
        "time_resolution": "ns",
    }


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read an ERF file.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (caplen, packets, fragments, decompressed size).
        strict: Turn warnings (truncated last record, ...) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        The capture as a Trace.

    Raises:
        UnknownFormatError: not an ERF file.
        CorruptTraceError: an impossible record length or an undecoded record type.
    """
    return _capture.read(source, NAME, limits=limits, strict=strict, name=name, metadata=_meta)
