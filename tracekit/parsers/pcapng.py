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

The one per-block Python loop is :func:`walk_blocks` (block boundaries only); every block's
fields are then gathered with numpy, and packets are decoded by the shared vectorized path
(:func:`tracekit.parsers._capture.build`).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np

from tracekit._source import Source
from tracekit.errors import CorruptTraceError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._capture import build, fallback, load_capture, release, releaser
from tracekit.parsers._decode import Packets
from tracekit.parsers._pcapng_fields import MAX_SEC, Fields, Interface, block_fields, options, text, ts_to_ns
from tracekit.trace import Trace, WarningLog

NAME = "pcapng"
DESCRIPTION = "pcapng capture (Wireshark, dumpcap, tcpdump): several interfaces/sections, gzip ok"
DETECT = "block type 0a0d0d0a with byte-order magic 1a2b3c4d (either byte order) at byte 0"

BT_SHB, BT_IDB, BT_PB, BT_SPB, BT_NRB, BT_ISB, BT_EPB, BT_DSB = 0x0A0D0D0A, 1, 2, 3, 4, 5, 6, 0x0A
BT_JOURNAL = 9
#: Blocks that hold no packets and are skipped silently (names, statistics, TLS secrets, journal).
_QUIET = (BT_NRB, BT_ISB, BT_DSB, BT_JOURNAL)
_BOM_LE = b"\x4d\x3c\x2b\x1a"
_BOM_BE = b"\x1a\x2b\x3c\x4d"
#: Smallest legal total length of each packet block (header 8 + fixed fields + trailer 4).
_MIN_LEN = {BT_EPB: 32, BT_PB: 32, BT_SPB: 16, BT_IDB: 20, BT_SHB: 28}
_OPT_TSRESOL, _OPT_FCSLEN, _OPT_TSOFFSET, _OPT_NAME = 9, 13, 14, 2
_OPT_USERAPPL, _OPT_OS, _OPT_HARDWARE = 4, 3, 2


def sniff(head: bytes) -> bool:
    """True when ``head`` starts with a section header block with a valid byte-order magic."""
    return head[:4] == b"\x0a\x0d\x0d\x0a" and head[8:12] in (_BOM_LE, _BOM_BE)


#: Bytes of a memory map walked before the pages behind the walk are released.
_WALK_SEGMENT = 16 << 20


def walk_blocks(data: bytes, max_block: int, done: Callable[[int], None] | None = None
                ) -> tuple[np.ndarray, list[tuple[int, bool]], str | None, int]:
    """Find block boundaries: the one per-block Python loop, kept small and isolated.

    The block type ``0A0D0D0A`` reads the same in both byte orders, so an SHB is recognised
    before its byte order is known; its byte-order magic then says how to read its length
    and everything up to the next SHB.

    With ``done``, the data is walked in segments, as :func:`tracekit.parsers.pcap.walk_records`
    walks it, and ``done(offset)`` is called after each (nothing below ``offset`` is read again).

    Args:
        data: The file bytes.
        max_block: Largest acceptable block length (checked before anything else is done with it).
        done: Called as the walk moves on (to release a memory map's pages behind it).

    Returns:
        (offsets of complete blocks as int64, sections as (index of their SHB among the
        blocks, big-endian?), stop reason or None, offset where the walk stopped).
        Stop reasons: ``"truncated"`` (the last block is cut short), ``"magic"`` (an SHB
        with a bad byte-order magic), ``"length"`` (< 12 or not a multiple of 4),
        ``"too-large"`` (over ``max_block``).
    """
    le_at = struct.Struct("<II").unpack_from  # type and length in one call
    be_at = struct.Struct(">II").unpack_from
    at = le_at
    n = len(data)
    offs = array("q")
    append = offs.append
    sections: list[tuple[int, bool]] = []
    off = 0
    reason: str | None = None
    mv = None if done is None or n <= _WALK_SEGMENT else memoryview(data)
    limit = n if mv is None else 0
    while reason is None:
        if mv is not None:
            limit = min(max(limit, off) + _WALK_SEGMENT, n)
        part = data if limit == n or mv is None else mv[:limit]
        try:
            while True:
                btype, ln = at(part, off)  # struct.error when fewer than 8 bytes are left
                if btype == BT_SHB:
                    bom = data[off + 8:off + 12]
                    if bom == _BOM_LE:
                        at = le_at
                    elif bom == _BOM_BE:
                        at = be_at
                    else:
                        reason = "truncated" if len(bom) < 4 else "magic"
                        break
                    sections.append((len(offs), at is be_at))
                    ln = at(part, off)[1]
                if ln < 12 or ln & 3 or ln > max_block:
                    reason = "too-large" if ln > max_block and not ln & 3 else "length"
                    break
                append(off)
                off += ln
        except struct.error:
            pass
        del part
        if limit == n or done is None:
            break
        done(off)  # the block at ``off`` is read again, from the next segment
    if mv is not None:
        mv.release()
    if reason is None and off != n:
        reason = "truncated"
        if off > n:  # the last block runs past the end of the file
            off = offs.pop()
    return np.frombuffer(offs, dtype=np.int64).copy(), sections, reason, off


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    **_: Any,
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
        UnknownFormatError: not a pcapng file, or a link type neither the fast path nor tshark reads.
        CorruptTraceError: a damaged block (bad length, trailer, interface id, time resolution),
            naming the block number and its byte offset.
    """
    loaded = load_capture(source, limits)
    data, path = loaded.data, name or loaded.path
    log = WarningLog(path, strict)
    if len(data) == 0:
        raise UnknownFormatError("empty file (0 bytes)", path=path, hint="the capture was not written")
    if data[:4] != b"\x0a\x0d\x0d\x0a":
        raise UnknownFormatError(f"not a pcapng file (first bytes {data[:4].hex(' ')})", path=path, offset=0,
                                 hint="is it a classic pcap or a text trace? try without --format")

    offs, sections, reason, stop = walk_blocks(data, limits.max_block_bytes, releaser(data))
    nb = len(offs)

    def corrupt(msg: str, block: int, offset: int, hint: str | None = None) -> CorruptTraceError:
        return CorruptTraceError(f"block {block:,}: {msg}", path=path, offset=offset,
                                 hint=hint or "the file is damaged from here on; "
                                 "`editcap -r` can keep the packets before it")

    if reason in ("length", "too-large", "magic"):
        e = "<" if not sections or not sections[-1][1] else ">"
        if reason == "magic":
            raise corrupt(f"section header with a bad byte-order magic {data[stop + 8:stop + 12].hex()}",
                          nb + 1, stop)
        ln = struct.unpack_from(e + "I", data, stop + 4)[0]
        if reason == "too-large":
            raise corrupt(f"block length {ln:,} is over the maximum of {limits.max_block_bytes:,} bytes",
                          nb + 1, stop, hint="the file is corrupt (libpcap refuses blocks over 16 MiB); "
                          "raise max_block_bytes in [limits] only if the file is genuine")
        raise corrupt(f"block length {ln:,} is " + ("less than 12" if ln < 12 else "not a multiple of 4"),
                      nb + 1, stop)
    if not sections:
        raise CorruptTraceError(f"truncated section header block: {len(data)} bytes", path=path,
                                offset=len(data), hint="the file was cut short before the first packet")
    if reason == "truncated":
        log.add("W-TRUNCATED", f"last block is cut short; kept the {nb:,} blocks before it", offset=stop,
                hint="the capture was cut short; rerun without --strict to keep them")

    buf = np.frombuffer(data, dtype=np.uint8)
    sec_first = np.array([s for s, _ in sections], dtype=np.int64)
    sec_big = np.array([b for _, b in sections], dtype=bool)
    sec_of = np.searchsorted(sec_first, np.arange(nb), side="right") - 1
    fl = Fields(buf, sec_big[sec_of])
    btype, blen, trailer, w = block_fields(buf, offs, fl.big, releaser(data))
    release(data)
    bad = np.nonzero(trailer != blen)[0]
    if len(bad):
        i = int(bad[0])
        raise corrupt(f"trailing length {int(trailer[i]):,} differs from the leading length {int(blen[i]):,}",
                      i + 1, int(offs[i]))
    for bt, need in _MIN_LEN.items():
        short = np.nonzero((btype == bt) & (blen < need))[0]
        if len(short):
            i = int(short[0])
            raise corrupt(f"block of type {bt:#x} has length {int(blen[i])}, less than its minimum {need}",
                          i + 1, int(offs[i]))

    # ---- section and interface headers (few: parsed one by one)
    shb_meta: dict[str, Any] = {}
    for k, (first, big) in enumerate(sections):
        o = int(offs[first])
        e = ">" if big else "<"
        major, minor = struct.unpack_from(e + "HH", data, o + 12)
        if major != 1:
            raise corrupt(f"section version {major}.{minor} (only 1.x exists)", first + 1, o)
        if k == 0:
            opts, _ok = options(data, o + 24, o + int(blen[first]) - 4, e)
            shb_meta = {"version": f"{major}.{minor}", "application": text(opts.get(_OPT_USERAPPL)),
                        "os": text(opts.get(_OPT_OS)), "hardware": text(opts.get(_OPT_HARDWARE))}
    idb_rows = np.nonzero(btype == BT_IDB)[0]
    ifaces: list[Interface] = []
    for i in idb_rows.tolist():
        o, e = int(offs[i]), (">" if sec_big[sec_of[i]] else "<")
        lt, _res, snap = struct.unpack_from(e + "HHI", data, o + 8)
        opts, ok = options(data, o + 16, o + int(blen[i]) - 4, e)
        if not ok:
            log.add("W-OPTION", "interface option runs past its block (options after it ignored)", offset=o)
        itf = Interface(lt, snap, section=int(sec_of[i]), name=text(opts.get(_OPT_NAME)))
        if _OPT_TSRESOL in opts and opts[_OPT_TSRESOL]:
            r = opts[_OPT_TSRESOL][0]
            # 10^-19 s still fits a u64 tick count; finer resolutions (libpcap: "too high") cannot.
            if (r & 0x80 and (r & 0x7F) > 63) or (not r & 0x80 and r > 19):
                what = f"2^-{r & 0x7F}" if r & 0x80 else f"10^-{r}"
                raise corrupt(f"interface time resolution {what} s is beyond 64-bit timestamps", i + 1, o,
                              hint="the if_tsresol option is corrupt")
            itf.tsresol = r
        if len(opts.get(_OPT_TSOFFSET, b"")) == 8:
            itf.tsoffset = struct.unpack(e + "q", opts[_OPT_TSOFFSET])[0]
        if opts.get(_OPT_FCSLEN):
            itf.fcslen = opts[_OPT_FCSLEN][0]
        ifaces.append(itf)

    # ---- packet blocks, all at once
    is_idb = btype == BT_IDB
    idb_before = np.cumsum(is_idb)
    idb_before -= is_idb  # IDBs strictly before each block
    rows = np.nonzero(np.isin(btype, (BT_EPB, BT_PB, BT_SPB)))[0]
    known = idb_before[rows]  # the packet's section has those after its SHB
    idb_at_section = idb_before[sec_first][sec_of[rows]]
    known -= idb_at_section
    del is_idb, idb_before, sec_of
    po, pt, pl_ = offs[rows], btype[rows], blen[rows]
    pf = Fields(buf, fl.big[rows])
    spb = pt == BT_SPB
    epb = pt == BT_EPB
    # EPB/PB (>= 32 bytes): interface, ts high, ts low, caplen, origlen: ``w`` (one 20-byte gather)
    # PB: a 16-bit interface id, then a 16-bit drop count, in the section's byte order
    iface16 = np.where(pf.big, w[:, 0] >> 16, w[:, 0] & 0xFFFF)
    local = np.where(spb, 0, np.where(epb, w[:, 0], iface16))
    del iface16
    unknown = np.nonzero(local >= known)[0]
    if len(unknown):
        k = int(unknown[0])
        raise corrupt(f"packet for interface {int(local[k])}, but its section has only {int(known[k])} "
                      "interface(s) described before it", int(rows[k]) + 1, int(po[k]),
                      hint="an interface description block is missing or the interface id is corrupt")
    gidx = idb_at_section + local
    del idb_at_section, local, known
    caplen = np.where(spb, 0, w[:, 3])
    origlen = w[:, 4].copy()
    if spb.any():  # SPB: the original length is the only field (a 16-byte SPB may end the file)
        origlen[spb] = pf.u32(po[spb] + 8) if not pf.mixed else Fields(buf, pf.big[spb]).u32(po[spb] + 8)
    room = pl_ - np.where(spb, 16, 32)
    over = np.nonzero(~spb & (caplen > room))[0]
    if len(over):
        k = int(over[0])
        raise corrupt(f"packet claims {int(caplen[k]):,} captured bytes but its block holds {int(room[k]):,}",
                      int(rows[k]) + 1, int(po[k]))
    snap = np.array([f.snaplen for f in ifaces], dtype=np.int64)[gidx] if ifaces else np.zeros(0, np.int64)
    # SPB: the captured length is implied by the block length, the original length and the snaplen.
    caplen = np.where(spb, np.minimum(np.minimum(origlen, room), np.where(snap > 0, snap, room)), caplen)
    big_cap = np.nonzero(caplen > limits.max_caplen)[0]
    if len(big_cap):
        k = int(big_cap[0])
        raise corrupt(f"packet of {int(caplen[k]):,} captured bytes, beyond the maximum of {limits.max_caplen:,}",
                      int(rows[k]) + 1, int(po[k]), hint="raise max_caplen in [limits] if the file is genuine")
    if (caplen > origlen).any():
        log.add("W-CAPLEN", "captured length larger than the original length (original length raised)",
                count=int((caplen > origlen).sum()))
        origlen = np.maximum(origlen, caplen)
    if ((snap > 0) & (caplen > snap)).any():
        log.add("W-SNAPLEN", "packets longer than their interface's snaplen (accepted, as libpcap does)",
                count=int(((snap > 0) & (caplen > snap)).sum()))

    ts_raw = (w[:, 1].astype(np.uint64) << np.uint64(32)) | w[:, 2].astype(np.uint64)
    del w
    ts_ns = np.zeros(len(rows), dtype=np.int64)
    lt = np.zeros(len(rows), dtype=np.int64)
    fcs = np.zeros(len(rows), dtype=np.int64)
    clamped = 0
    groups = np.unique(gidx).tolist()
    for g in groups:
        if len(groups) == 1:  # one interface (the usual case): no masks, no copies
            ts_ns, clamped = ts_to_ns(ts_raw, ifaces[g])
            lt[:] = ifaces[g].linktype
            fcs[:] = ifaces[g].fcslen
            break
        m = gidx == g
        ts_ns[m], c = ts_to_ns(ts_raw[m], ifaces[g])
        clamped += c
        lt[m] = ifaces[g].linktype
        fcs[m] = ifaces[g].fcslen
    del ts_raw
    if clamped:
        log.add("W-TIMESTAMP", f"timestamps beyond ±{MAX_SEC:,} s from the epoch (clamped)", count=clamped)
    if spb.any():
        # An SPB has no timestamp: carry the previous timed packet's time forward (0 before any).
        log.add("W-NO-TIMESTAMP", "simple packet blocks carry no timestamp (previous packet's time used)",
                count=int(spb.sum()))
        idx = np.where(spb, -1, np.arange(len(rows)))
        np.maximum.accumulate(idx, out=idx)
        ts_ns = np.where(idx < 0, 0, ts_ns[np.maximum(idx, 0)])
    if fcs.any():
        # The FCS trails the frame: it is in the captured bytes only if the capture reached it.
        caplen = np.minimum(caplen, np.maximum(origlen - fcs, 0))
        origlen = np.maximum(origlen - fcs, 0)

    other = ~np.isin(btype, (BT_SHB, BT_IDB, BT_EPB, BT_PB, BT_SPB, *_QUIET))
    if other.any():
        log.add("W-UNKNOWN-BLOCK", "blocks of unknown or custom types skipped", count=int(other.sum()),
                offset=int(offs[np.nonzero(other)[0][0]]))
    if not len(rows):
        log.add("W-EMPTY", "the capture holds no packets")
    used = sorted({ifaces[g].linktype for g in np.unique(gidx).tolist()})
    slow = fallback(used, source=source, data=data, compression=loaded.compression, path=path,
                    limits=limits, strict=strict, container=NAME)
    if slow is not None:
        return slow
    pk = Packets(
        data_off=po + np.where(spb, 12, 28),
        caplen=caplen,
        origlen=origlen,
        linktype=lt,
        ts_ns=ts_ns,
    )
    meta = {
        "format": NAME,
        "tool": shb_meta.get("application") or "pcapng",
        "paths": [path],
        "compression": loaded.compression,
        "linktypes": used or sorted({f.linktype for f in ifaces}),
        "sections": len(sections),
        "interfaces": [
            {"linktype": f.linktype, "snaplen": f.snaplen, "name": f.name, "section": f.section,
             "tsresol": (f"2^-{f.tsresol & 0x7F}" if f.tsresol & 0x80 else f"10^-{f.tsresol}"),
             "tsoffset": f.tsoffset, "fcslen": f.fcslen}
            for f in ifaces
        ],
        "shb": shb_meta,
        "counts": {"blocks": nb, "simple_packet_blocks": int(spb.sum()),
                   "obsolete_packet_blocks": int((pt == BT_PB).sum())},
    }
    del offs, btype, blen, trailer, fl, pf, rows, po, pt, pl_
    del spb, epb, gidx, caplen, origlen, snap, ts_ns, lt, fcs
    return build(buf, pk, meta=meta, log=log, limits=limits, data=data)
