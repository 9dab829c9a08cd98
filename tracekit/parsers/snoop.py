"""Sun snoop capture files (Solaris ``snoop``, ``editcap -F snoop``): RFC 1761.

Layout (every field big-endian)::

    file header: "snoop\\0\\0\\0" | version u32 (2) | datalink u32 (4 Ethernet, 0 802.3, 8 FDDI)
    record:      orig_len u32 | incl_len u32 | rec_len u32 | cum_drops u32 | ts_sec u32
                 | ts_usec u32 | packet bytes | padding up to rec_len

The compiled reader (``src/capture/snoop.rs``, after Wireshark's wiretap/snoop.c) walks the
records with the limits of the pcap reader and decodes them with the same link/IP/TCP code;
IPv6 captures read like any other. Warnings: W-VERSION, W-TRUNCATED (last record cut), W-EMPTY.
Datalink types other than Ethernet and FDDI go to tshark (or are refused, naming the type).
"""

from __future__ import annotations

from typing import Any

from tracekit._source import Source
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _capture
from tracekit.trace import Trace

NAME = "snoop"
DESCRIPTION = "Sun snoop capture (RFC 1761; Solaris snoop, editcap -F snoop), IPv4 and IPv6"
DETECT = "'snoop\\0\\0\\0' at byte 0"

_MAGIC = b"snoop\x00\x00\x00"


def sniff(head: bytes) -> bool:
    """True when ``head`` starts with the snoop magic."""
    return head[:8] == _MAGIC


def _meta(m: dict[str, Any], path: str, compression: str | None) -> dict[str, Any]:
    return {
        "format": NAME,
        "tool": "snoop",
        "paths": [path],
        "compression": compression,
        "linktypes": [m["linktype"]],
        "time_resolution": "us",
        "version": str(m["version"][0]),
    }


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a snoop file.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (caplen, packets, fragments, decompressed size).
        strict: Turn warnings (truncated last record, ...) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        The capture as a Trace.

    Raises:
        UnknownFormatError: not a snoop file, or an unsupported datalink type without tshark.
        CorruptTraceError: damaged header or an impossible record length.
    """
    return _capture.read(source, NAME, limits=limits, strict=strict, name=name, metadata=_meta)
