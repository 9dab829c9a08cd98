"""pcapng capture files (Wireshark/dumpcap, tcpdump -w with pcapng, editcap -F pcapng), gzip ok.

Layout (every block: type u32 | total length u32 | body | total length u32, padded to 4)::

    SHB 0x0A0D0D0A  byte-order magic u32 (1A2B3C4D) | major u16 | minor u16 | section len i64 | options
    IDB 1           linktype u16 | reserved u16 | snaplen u32 | options (if_tsresol 9, if_fcslen 13,
                    if_tsoffset 14, ...)
    EPB 6           interface u32 | ts high u32 | ts low u32 | caplen u32 | origlen u32 | data | options
    PB  2 (obsolete) interface u16 | drops u16 | ts high | ts low | caplen | origlen | data | options
    SPB 3           origlen u32 | data            (no timestamp, interface 0)

Byte order is per *section* (each SHB says which), and interface ids count the IDBs of the
current section only (they restart at every SHB). Link type, snaplen, time resolution, time
offset and FCS length are per interface. Frame numbers count packet blocks (EPB/PB/SPB), as
Wireshark numbers them.

The compiled reader (``src/capture/pcapng.rs``) walks and checks the blocks and decodes the
packets; every refusal names the block number and its byte offset.
"""

from __future__ import annotations

from tracekit._source import Source
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _capture
from tracekit.parsers._meta import pcapng_meta
from tracekit.trace import Trace

NAME = "pcapng"
DESCRIPTION = "pcapng capture (Wireshark, dumpcap, tcpdump): several interfaces/sections, gzip ok"
DETECT = "block type 0a0d0d0a with byte-order magic 1a2b3c4d (either byte order) at byte 0"

_BOM_LE = b"\x4d\x3c\x2b\x1a"
_BOM_BE = b"\x1a\x2b\x3c\x4d"


def sniff(head: bytes) -> bool:
    """True when ``head`` starts with a section header block with a valid byte-order magic."""
    return head[:4] == b"\x0a\x0d\x0d\x0a" and head[8:12] in (_BOM_LE, _BOM_BE)


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a pcapng file.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (``max_block_bytes``, ``max_caplen``, ``max_packets``, ...).
        strict: Turn warnings (truncated last block, unknown blocks, ...) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        The capture as a Trace (``meta["interfaces"]`` describes every IDB).

    Raises:
        UnknownFormatError: not a pcapng file, or a link type neither the reader nor tshark reads.
        CorruptTraceError: a damaged block (bad length, trailer, interface id, time resolution),
            naming the block number and its byte offset.
    """
    return _capture.read(source, NAME, limits=limits, strict=strict, name=name, metadata=pcapng_meta)
