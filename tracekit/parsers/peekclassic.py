"""Savvius EtherPeek/AiroPeek "classic" capture files, versions 5-7 (``.pkt``, Mac and Windows).

Layout (every field big-endian)::

    header: version u8 (5-7) | status u8 | file length u32 | packets u32 | timeDate u32
            (seconds since 1904) | start u32 | stop u32 | media type u32 | physical medium u32
            (0 Ethernet, 1 802.11) | application version u32 | link speed u32 | reserved 12 B
    V7 record: protocol u16 | length u16 | slice u16 | flags u8 | status u8 | µs since 1904 u64,
            data padded to an even length
    V5/V6 record: length u16 | slice u16 | flags u8 | status u8 | ms since timeDate u32
            | destination u16 | source u16 | protocol u16 | protocol string 8 B

The compiled reader (``src/capture/peek.rs``, after Wireshark's wiretap/peekclassic.c) reads
them with the pcap reader's limits; AiroPeek frames (4 bytes of radio information, then an
802.11 frame and its FCS) are decoded as link type 105.
"""

from __future__ import annotations

from typing import Any

from tracekit._source import Source
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _capture
from tracekit.trace import Trace

NAME = "peekclassic"
DESCRIPTION = "EtherPeek/AiroPeek classic capture, versions 5-7 (Ethernet, 802.11)"
DETECT = "version 5-7, status 0, physical medium 0/1 and a file length >= 50 in the 50-byte header"

def sniff(head: bytes) -> bool:
    """True when the header looks like Peek classic V5-V7 (peekclassic_open's checks)."""
    if len(head) < 50 or head[0] not in (5, 6, 7) or head[1] != 0:
        return False
    return int.from_bytes(head[26:30], "big") in (0, 1) and int.from_bytes(head[2:6], "big") >= 50


def _meta(m: dict[str, Any], path: str, compression: str | None) -> dict[str, Any]:
    return {
        "format": NAME,
        "tool": "etherpeek",
        "paths": [path],
        "compression": compression,
        "linktypes": [m["linktype"]],
        "time_resolution": "us" if m["version"][0] == 7 else "ms",
        "version": str(m["version"][0]),
    }


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a Peek classic file.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (caplen, packets, fragments, decompressed size).
        strict: Turn warnings (truncated last record, ...) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        The capture as a Trace.

    Raises:
        UnknownFormatError: not a Peek classic file.
        CorruptTraceError: damaged header or an impossible record length.
    """
    return _capture.read(source, NAME, limits=limits, strict=strict, name=name, metadata=_meta)
