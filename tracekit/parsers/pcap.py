"""libpcap capture files (tcpdump, Wireshark, ns-3): ``.pcap``, optionally gzip-compressed.

Layout (file header, then records), declared as data::

    file header: magic u32 | version_major u16 | version_minor u16 | thiszone i32
                 | sigfigs u32 | snaplen u32 | linktype u32           (24 bytes)
    record:      ts_sec u32 | ts_frac u32 | caplen u32 | origlen u32   (16 bytes)
                 [Kuznetzov a1b2cd34: + ifindex u32 | protocol u16 | pkt_type u8 | pad u8]

Magic ``a1b2c3d4`` has microsecond fractions, ``a1b23c4d`` nanoseconds; byte-swapped
magics mean every header field is big-endian (packet bytes are never swapped).
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

import numpy as np

from tracekit._source import Source
from tracekit.errors import CorruptTraceError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._capture import build, fallback, load_capture
from tracekit.parsers._decode import Packets
from tracekit.trace import Trace, WarningLog

NAME = "pcap"
DESCRIPTION = "libpcap capture (tcpdump, Wireshark, ns-3), µs or ns, either byte order, gzip ok"
DETECT = "magic a1b2c3d4 / a1b23c4d / a1b2cd34 (either byte order) at byte 0"

FILE_HEADER = 24
# magic as read little-endian -> (endianness of header fields, ns resolution, record header length)
_MAGICS: dict[bytes, tuple[str, bool, int]] = {
    b"\xd4\xc3\xb2\xa1": ("<", False, 16),
    b"\xa1\xb2\xc3\xd4": (">", False, 16),
    b"\x4d\x3c\xb2\xa1": ("<", True, 16),
    b"\xa1\xb2\x3c\x4d": (">", True, 16),
    b"\x34\xcd\xb2\xa1": ("<", False, 24),  # Kuznetzov's patched libpcap
    b"\xa1\xb2\xcd\x34": (">", False, 24),
}
# Upper 6 bits of the linktype field carry extra info (FCS length): LT_LINKTYPE_EXT.
_LT_MASK = 0x03FFFFFF
_LT_FCS_PRESENT = 0x04000000


def sniff(head: bytes) -> bool:
    """True when ``head`` starts with a pcap magic."""
    return head[:4] in _MAGICS


def walk_records(data: Any, start: int, endian: str, rec_len: int, max_caplen: int,
                 cap_at: int = 8) -> tuple[np.ndarray, str | None, int]:
    """Find record boundaries: the one per-record Python loop, kept small and isolated.

    The loop only chains ``offset += header + caplen`` (a few bytecodes per record; ~0.2 µs);
    it stops when the next caplen cannot be read (``struct.error`` at the end of the data).
    Everything else is checked afterwards with numpy: a caplen over the maximum (the walk may
    have run on through garbage after it, but the error names the first bad record), and a
    last record cut short.

    Args:
        data: The file bytes (bytes or a memory map).
        start: Offset of the first record header.
        endian: ``"<"`` or ``">"``.
        rec_len: Record header length (16, or 24 for Kuznetzov files).
        max_caplen: Largest acceptable captured length.
        cap_at: Offset of the captured-length field in the record header (12 for pcap < 2.3,
            whose caplen and length fields are swapped).

    Returns:
        (offsets of complete records' headers as int64, stop reason or None, offset where it
        stopped). Stop reasons: ``"truncated-header"``, ``"truncated-data"``, ``"caplen"``.
    """
    read_cap = struct.Struct(endian + "I").unpack_from
    found = array("q")
    append = found.append
    p = start + cap_at
    try:
        while True:
            append(p)
            p += rec_len + read_cap(data, p)[0]
    except struct.error:
        pass
    n = len(data)
    pos = np.frombuffer(found, dtype=np.int64)
    hdr = pos[:-1] - cap_at  # the last position is the one that could not be read
    caps = _u32(np.frombuffer(data, dtype=np.uint8), hdr + cap_at, endian)
    over = np.nonzero(caps > max_caplen)[0]
    if len(over):
        i = int(over[0])
        return hdr[:i], "caplen", int(hdr[i])
    failed = int(pos[-1]) - cap_at
    if len(hdr) and int(hdr[-1]) + rec_len + int(caps[-1]) > n:
        last = int(hdr[-1])
        return hdr[:-1], ("truncated-data" if last + rec_len <= n else "truncated-header"), last
    if failed < n:
        return hdr, "truncated-header", failed
    return hdr, None, failed


def _headers(buf: np.ndarray, offs: np.ndarray, endian: str) -> tuple[np.ndarray, ...]:
    """The four u32 fields of every record header (ts_sec, ts_frac, caplen, origlen) as int64.

    One 16-byte gather per record (an opaque ``V16`` view at every byte offset: a plain copy
    per element), then the fields are read from the gathered, contiguous copy.
    """
    if not len(offs):
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(4))
    view = np.ndarray(shape=(len(buf) - 15,), dtype="V16", buffer=buf, strides=(1,))
    recs = view[offs].view(np.dtype(endian + "u4")).reshape(-1, 4)
    return tuple(recs[:, k].astype(np.int64) for k in range(4))


def _u32(buf: np.ndarray, pos: np.ndarray, endian: str) -> np.ndarray:
    """Unaligned u32 fields at ``pos`` (all inside ``buf``) as int64, one gather each."""
    if len(buf) < 4 or not len(pos):
        return np.zeros(len(pos), dtype=np.int64)
    view = np.ndarray(shape=(len(buf) - 3,), dtype=endian + "u4", buffer=buf, strides=(1,))
    return view[pos].astype(np.int64)


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    **_: Any,
) -> Trace:
    """Read a pcap file.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (caplen, packets, decompressed size).
        strict: Turn warnings (truncated last record, ...) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        The capture as a Trace.

    Raises:
        UnknownFormatError: not a pcap file, or an unsupported link type.
        CorruptTraceError: damaged header or an impossible record length.
    """
    loaded = load_capture(source, limits)
    data, path = loaded.data, name or loaded.path
    log = WarningLog(path, strict)
    if len(data) == 0:
        raise UnknownFormatError("empty file (0 bytes)", path=path, hint="the capture was not written")
    if len(data) < FILE_HEADER:
        if data[:4] in _MAGICS or len(data) < 4:
            raise CorruptTraceError(
                f"truncated file header: {len(data)} of {FILE_HEADER} bytes", path=path, offset=len(data),
                hint="the file was cut short before the first packet; re-copy it")
        raise UnknownFormatError("not a pcap file", path=path, offset=0)
    magic = data[:4]
    if magic not in _MAGICS:
        raise UnknownFormatError(f"not a pcap file (magic {magic.hex()})", path=path, offset=0,
                                 hint="is it pcapng or a text trace? try without --format")
    endian, nanos, rec_len = _MAGICS[magic]
    vmaj, vmin, _zone, _sig, snaplen, lt_field = struct.unpack_from(endian + "HHiIII", data, 4)
    if (vmaj, vmin) not in ((2, 4), (2, 3), (2, 2)):
        # tshark reads these, libpcap refuses; we read them, as tshark does, and say so.
        log.add("W-VERSION", f"unusual pcap version {vmaj}.{vmin} (read as 2.4)", offset=4)
    if snaplen == 0:
        log.add("W-SNAPLEN", "snaplen is 0 (pcap forbids it; ignored)", offset=16)
    linktype = lt_field & _LT_MASK
    fcs_bytes = ((lt_field >> 28) & 0xF) * 2 if lt_field & _LT_FCS_PRESENT else 0
    slow = fallback([linktype], source=source, data=data, compression=loaded.compression, path=path,
                    limits=limits, strict=strict, container=NAME)
    if slow is not None:
        return slow

    # pcap before 2.3 wrote the original length before the captured length (libpcap swaps them).
    swapped = (vmaj, vmin) < (2, 3)
    offs, reason, stop = walk_records(data, FILE_HEADER, endian, rec_len, limits.max_caplen, 12 if swapped else 8)
    if reason == "caplen":
        cap = struct.unpack_from(endian + "I", data, stop + (12 if swapped else 8))[0]
        raise CorruptTraceError(
            f"record claims a captured length of {cap:,} bytes, beyond the maximum of {limits.max_caplen:,}",
            path=path, offset=stop, frame=len(offs) + 1,
            hint="the file is corrupt from here on; `editcap -r` can cut it to the first "
                 f"{len(offs):,} packets")
    if reason is not None:
        log.add("W-TRUNCATED", f"last record is cut short ({reason}); kept the {len(offs):,} packets before it",
                offset=stop, frame=len(offs) + 1, hint="the capture was cut short; rerun without --strict to keep them")

    buf = np.frombuffer(data, dtype=np.uint8)
    ts_sec, ts_frac, caplen, origlen = _headers(buf, offs, endian)
    if swapped:
        caplen, origlen = origlen, caplen
    if not nanos and len(offs) and (ts_frac >= 1_000_000).any():
        log.add("W-TIMESTAMP", "microsecond fraction >= 1,000,000 (carried into the seconds)",
                count=int((ts_frac >= 1_000_000).sum()))
    if len(offs) and (caplen > origlen).any():
        log.add("W-CAPLEN", "captured length larger than the original length (original length raised)",
                count=int((caplen > origlen).sum()))
        origlen = np.maximum(origlen, caplen)
    if snaplen and len(offs) and (caplen > snaplen).any():
        log.add("W-SNAPLEN", "records longer than the file's snaplen (accepted, as libpcap does)",
                count=int((caplen > snaplen).sum()))
    if fcs_bytes:
        # The FCS trails the frame: it is in the captured bytes only if the capture reached it.
        caplen = np.minimum(caplen, np.maximum(origlen - fcs_bytes, 0))
        origlen = np.maximum(origlen - fcs_bytes, 0)
    ts_sec *= 1_000_000_000
    ts_sec += ts_frac if nanos else ts_frac * 1000
    ts_ns = ts_sec
    del ts_frac
    offs += rec_len
    nrec = len(offs)
    pk = Packets(
        frame=np.arange(1, nrec + 1, dtype=np.uint64),
        data_off=offs,
        caplen=caplen,
        origlen=origlen,
        linktype=np.broadcast_to(np.int64(linktype), (nrec,)),  # one link type: no per-packet array
        ts_ns=ts_ns,
    )
    del offs, caplen, origlen, ts_sec, ts_ns
    if not nrec:
        log.add("W-EMPTY", "the capture holds no packets")
    meta = {
        "format": NAME,
        "tool": "libpcap",
        "paths": [path],
        "compression": loaded.compression,
        "linktypes": [linktype],
        "snaplen": snaplen,
        "time_resolution": "ns" if nanos else "us",
        "version": f"{vmaj}.{vmin}",
    }
    del buf
    return build(np.frombuffer(data, dtype=np.uint8), pk, meta=meta, log=log, limits=limits, data=data)
