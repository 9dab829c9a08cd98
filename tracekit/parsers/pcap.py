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
import sys
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np

from tracekit._source import Source
from tracekit.errors import CorruptTraceError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _spec_walk as _spec
from tracekit.parsers._capture import build, fallback, load_capture, release, releaser
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


#: Bytes of a memory map walked before the pages behind the walk are released.
_WALK_SEGMENT = 16 << 20


def _walk_ahead(data: Any, start: int, endian: str, rec_len: int, cap_at: int, nanos: bool, max_caplen: int,
                done: Callable[[int], None] | None) -> tuple[list[np.ndarray], int]:
    """Record header offsets proven by the vectorized walk (:mod:`._spec_walk`), window by window.

    Returns:
        (the proven offsets, in pieces; the header offset where the plain loop goes on).
    """
    proven: list[np.ndarray] = []
    n = len(data)
    if not _spec.usable(endian, rec_len, cap_at) or n - start < 2 * _spec.MIN_WINDOW:
        return proven, start
    buf = np.frombuffer(data, dtype=np.uint8)
    sec0 = int(buf[start:start + 4].view(np.uint32)[0])
    while True:
        offs, nxt = _spec.walk(buf, start, start + _WALK_SEGMENT, cap_at=cap_at, nanos=nanos,
                               max_caplen=max_caplen, sec0=sec0)
        if not len(offs):
            break
        proven.append(offs)
        # a window mostly unproven (guesses failing: an odd file) is left to the plain loop
        short = nxt - start < _WALK_SEGMENT // 2 and nxt < n - _WALK_SEGMENT
        start = nxt
        if done is not None:
            done(start)
        if short:
            break
    del buf
    return proven, start


def walk_records(data: Any, start: int, endian: str, rec_len: int, max_caplen: int,
                 cap_at: int = 8, done: Callable[[int], None] | None = None,
                 nanos: bool = False) -> tuple[np.ndarray, str | None, int]:
    """Find record boundaries: the one per-record Python loop, kept small and isolated.

    As far as its guesses are proven, the vectorized walk of :mod:`._spec_walk` finds them first
    (most of a large native-order file); the loop goes on from the last proven record, with the
    same result as if it had walked the whole file.

    The loop only chains ``offset += header + caplen`` (a few bytecodes per record; ~0.1 µs);
    it stops when the next caplen cannot be read (``struct.error`` at the end of the data).
    Everything else is checked afterwards with numpy: a caplen over the maximum (the walk may
    have run on through garbage after it, but the error names the first bad record), and a
    last record cut short.

    With ``done``, the data is walked in segments (a view that ends early stops the loop just
    as the end of the data does; the walk then resumes from the record it could not read),
    and ``done(offset)`` is called after each: nothing below ``offset`` is read again, so a
    memory map's pages can be released behind the walk instead of all staying resident.

    Args:
        data: The file bytes (bytes or a memory map).
        start: Offset of the first record header.
        endian: ``"<"`` or ``">"``.
        rec_len: Record header length (16, or 24 for Kuznetzov files).
        max_caplen: Largest acceptable captured length.
        cap_at: Offset of the captured-length field in the record header (12 for pcap < 2.3,
            whose caplen and length fields are swapped).
        done: Called as the walk moves on (to release a memory map's pages behind it).
        nanos: Nanosecond timestamps (a bound in the vectorized walk's guess, never in the result).

    Returns:
        (offsets of complete records' headers as int64, stop reason or None, offset where it
        stopped). Stop reasons: ``"truncated-header"``, ``"truncated-data"``, ``"caplen"``.
    """
    read_cap = struct.Struct(endian + "I").unpack_from
    native = endian == ("<" if sys.byteorder == "little" else ">") and struct.calcsize("I") == 4
    n = len(data)
    proven, start = _walk_ahead(data, start, endian, rec_len, cap_at, nanos, max_caplen, done)
    found = array("q")
    append = found.append
    p = start + cap_at
    whole = done is None or n <= _WALK_SEGMENT
    mv = None if whole else memoryview(data)
    limit = n if whole else 0
    while True:
        if mv is not None:
            limit = min(max(limit, p) + _WALK_SEGMENT, n)
        part = data if limit == n or mv is None else mv[:limit]
        if native:
            # the caplen through four native uint32 views of the bytes, one per p % 4: an index
            # costs less than an unpack_from call (~10 % of the walk), IndexError at the end
            views = tuple(memoryview(part)[k:k + 4 * ((len(part) - k) // 4)].cast("I") for k in range(4))
            try:
                while True:
                    append(p)
                    p += rec_len + views[p & 3][p >> 2]
            except IndexError:
                pass
            finally:
                for v in views:
                    v.release()
                del views
        else:
            try:
                while True:
                    append(p)
                    p += rec_len + read_cap(part, p)[0]
            except struct.error:
                pass
        del part
        if limit == n or done is None:
            break
        found.pop()  # not read here, only past this segment's end: read again in the next one
        done(p - cap_at)
    if mv is not None:
        mv.release()
    tail = np.frombuffer(found, dtype=np.int64) - cap_at
    del found, append  # (the bound method holds the array too)
    # header offsets; the last one is where no captured length could be read (the end, or past it)
    allh = np.concatenate([*proven, tail]) if proven else tail
    del proven, tail
    hdr = allh[:-1]
    # each step added header + caplen: a step over header + max_caplen is a caplen over the maximum
    i = _first_step_over(allh, rec_len + max_caplen)
    if i is not None:
        return hdr[:i], "caplen", int(hdr[i])
    failed = int(allh[-1])
    if len(hdr) and failed > n:
        last = int(hdr[-1])
        return hdr[:-1], ("truncated-data" if last + rec_len <= n else "truncated-header"), last
    if failed < n:
        return hdr, "truncated-header", failed
    return hdr, None, failed


def _first_step_over(h: np.ndarray, limit: int, chunk: int = 1 << 18) -> int | None:
    """The first ``i`` with ``h[i + 1] - h[i] > limit``, or None (in chunks: no full-length temporary)."""
    for s in range(0, len(h) - 1, chunk):
        big = np.flatnonzero(np.diff(h[s:s + chunk + 1]) > limit)
        if len(big):
            return s + int(big[0])
    return None


#: Records whose headers are gathered at a time.
_HDR_CHUNK = 1 << 18


def _headers(buf: np.ndarray, offs: np.ndarray, endian: str, nanos: bool, swapped: bool, fcs_bytes: int,
             snaplen: int, data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int]]:
    """Timestamps and lengths of every record, from its header at ``offs``.

    One 16-byte gather per record (an opaque ``V16`` view at every byte offset: a plain copy
    per element), then the fields are read from the gathered, contiguous copy. Chunk by chunk,
    so that temporaries stay small and the memory map's pages (``data``) can be released as the
    gathers move on.

    Returns:
        (epoch ns int64, captured length uint32, original length uint32, and the counts of
        microsecond fractions >= 10^6, captured > original lengths, captured > snaplen).
    """
    n = len(offs)
    ts_ns = np.empty(n, dtype=np.int64)
    caplen = np.empty(n, dtype=np.uint32)
    origlen = np.empty(n, dtype=np.uint32)
    n_frac = n_cap = n_snap = 0
    view = np.ndarray(shape=(max(len(buf) - 15, 0),), dtype="V16", buffer=buf, strides=(1,))
    for s in range(0, n, _HDR_CHUNK):
        e = min(s + _HDR_CHUNK, n)
        recs = view[offs[s:e]].view(np.dtype(endian + "u4")).reshape(-1, 4)
        sec, frac = recs[:, 0].astype(np.int64), recs[:, 1].astype(np.int64)
        cap, orig = recs[:, 2].astype(np.int64), recs[:, 3].astype(np.int64)
        del recs
        if swapped:  # pcap before 2.3 wrote the original length before the captured length
            cap, orig = orig, cap
        if not nanos:
            n_frac += int(np.count_nonzero(frac >= 1_000_000))
        n_cap += int(np.count_nonzero(cap > orig))
        np.maximum(orig, cap, out=orig)
        if snaplen:
            n_snap += int(np.count_nonzero(cap > snaplen))
        if fcs_bytes:
            # The FCS trails the frame: it is in the captured bytes only if the capture reached it.
            orig -= fcs_bytes
            np.maximum(orig, 0, out=orig)
            np.minimum(cap, orig, out=cap)
        sec *= 1_000_000_000
        if not nanos:
            frac *= 1000
        sec += frac
        ts_ns[s:e], caplen[s:e], origlen[s:e] = sec, cap, orig
        if e < n:
            release(data, int(offs[e]))
    release(data)
    return ts_ns, caplen, origlen, (n_frac, n_cap, n_snap)


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
    offs, reason, stop = walk_records(data, FILE_HEADER, endian, rec_len, limits.max_caplen, 12 if swapped else 8,
                                      done=releaser(data), nanos=nanos)
    release(data)
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
    ts_ns, caplen, origlen, (n_frac, n_cap, n_snap) = _headers(
        buf, offs, endian, nanos, swapped, fcs_bytes, snaplen, data)
    if n_frac:
        log.add("W-TIMESTAMP", "microsecond fraction >= 1,000,000 (carried into the seconds)", count=n_frac)
    if n_cap:
        log.add("W-CAPLEN", "captured length larger than the original length (original length raised)",
                count=n_cap)
    if n_snap:
        log.add("W-SNAPLEN", "records longer than the file's snaplen (accepted, as libpcap does)", count=n_snap)
    offs += rec_len
    nrec = len(offs)
    pk = Packets(data_off=offs, caplen=caplen, origlen=origlen, linktype=linktype, ts_ns=ts_ns)
    del offs, caplen, origlen, ts_ns
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
