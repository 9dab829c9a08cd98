"""libpcap capture files (tcpdump, Wireshark, ns-3): ``.pcap``, optionally gzip-compressed.

Layout (file header, then records)::

    file header: magic u32 | version_major u16 | version_minor u16 | thiszone i32
                 | sigfigs u32 | snaplen u32 | linktype u32           (24 bytes)
    record:      ts_sec u32 | ts_frac u32 | caplen u32 | origlen u32   (16 bytes)
                 [Kuznetzov a1b2cd34: + ifindex u32 | protocol u16 | pkt_type u8 | pad u8]

Magic ``a1b2c3d4`` has microsecond fractions, ``a1b23c4d`` nanoseconds; byte-swapped
magics mean every header field is big-endian (packet bytes are never swapped). pcap before
2.3 wrote the original length before the captured length (libpcap swaps them back), and the
upper bits of the link type field may carry an FCS length (LINKTYPE_EXT).

The file is read, decoded and reassembled by the compiled reader (``src/capture/pcap.rs``);
its warnings: W-VERSION (unusual version), W-SNAPLEN (snaplen 0, or records over it),
W-TRUNCATED (last record cut short), W-TIMESTAMP (a microsecond fraction >= 10^6),
W-CAPLEN (captured > original length), W-EMPTY.
"""

from __future__ import annotations

from tracekit._source import Source
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _capture
from tracekit.parsers._meta import pcap_meta
from tracekit.trace import Trace

NAME = "pcap"
DESCRIPTION = "libpcap capture (tcpdump, Wireshark, ns-3), µs or ns, either byte order, gzip ok"
DETECT = "magic a1b2c3d4 / a1b23c4d / a1b2cd34 (either byte order) at byte 0"

FILE_HEADER = 24
_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d",
           b"\x34\xcd\xb2\xa1", b"\xa1\xb2\xcd\x34")


def sniff(head: bytes) -> bool:
    """True when ``head`` starts with a pcap magic."""
    return head[:4] in _MAGICS


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a pcap file.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (caplen, packets, fragments, decompressed size).
        strict: Turn warnings (truncated last record, ...) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        The capture as a Trace.

    Raises:
        UnknownFormatError: not a pcap file, or an unsupported link type without tshark.
        CorruptTraceError: damaged header or an impossible record length.
    """
    return _capture.read(source, NAME, limits=limits, strict=strict, name=name, metadata=pcap_meta)
