"""Vectorized decoding of link, IP and TCP/UDP headers for capture readers.

Input: the capture's bytes as one numpy ``uint8`` array and, per packet, the offset of its
data, captured length, original length, link type and timestamp. Packets are decoded a chunk
at a time, every header field of the chunk with one numpy operation; the only loops are over
chunks and the bounded walks over VLAN tags, IPv6 extension headers and TCP options, each step
of which processes every packet still in the walk. No per-packet Python objects are created.

Two paths, same results: packets of the common layout (Ethernet, IPv4 without options, TCP
without options or with Linux's timestamp layout) are read from one window gather by
:mod:`tracekit.parsers._fast` (~30 ns a packet); every other packet, and every packet of a
chunk where they are more than two thirds, goes through :func:`_generic`, which handles all link
types, VLAN tags, IPv6, UDP, fragments (reassembled there: :mod:`tracekit.parsers._reasm`), damaged
headers and any option layout.

Output: :class:`Rows`, one numpy column per field, allocated once for the whole capture and
filled chunk by chunk, mostly in the schema's own (narrow) dtypes so that the final frame can
take the arrays over without a copy. Per-chunk temporaries stay small and cache-sized, and
nothing is concatenated: at 1.17 M packets the columns take ~90 MB, the temporaries ~10 MB.

Speed notes for the generic path (a gather over a large capture is bound by memory access, not
arithmetic): header words are fetched 8 bytes at a time through an overlapping big-endian
``>u8`` view of the buffer and split with shifts; IPv4 and IPv6 headers are decoded only for
their own packets; the Linux option layout is read directly before the generic option walk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _fast
from tracekit.parsers._gather import Gather
from tracekit.parsers._link import LT_ETHERNET, SUPPORTED_LINKTYPES, link
from tracekit.parsers._reasm import FragCols, Reassembler, frag6_header, reassemble
from tracekit.trace import WarningLog

__all__ = ["CHUNK", "SUPPORTED_LINKTYPES", "Packets", "Rows", "decode"]

_MAX_EXT = 8
_IPV6_EXT = (0, 43, 60, 44, 51)
_TS_PREFIX = 0x0101080A  # NOP, NOP, kind 8 length 10: how Linux lays out the timestamp option
_M32 = np.uint64(0xFFFFFFFF)

#: Packets decoded at a time: bounds the temporaries and keeps them cache-sized.
CHUNK = 1 << 17


@dataclass
class Packets:
    """Per-record facts a container reader hands to :func:`decode` (frame numbers are 1, 2, ...)."""

    data_off: np.ndarray  # int64, offset of the packet's first byte in ``buf``
    caplen: np.ndarray  # int64 or uint32
    origlen: np.ndarray  # int64 or uint32
    linktype: np.ndarray | int  # per record, or one link type for all
    ts_ns: np.ndarray  # int64, epoch nanoseconds

    def __len__(self) -> int:
        return len(self.data_off)


@dataclass
class Rows:
    """Decoded rows (one per IP packet) as numpy columns, in frame order.

    TCP fields are set on TCP rows (``proto == 0``) only; option fields where their ``*_ok``
    mask is True. IPv6 addresses are kept apart (few captures have many).
    """

    frame: np.ndarray  # uint64
    time: np.ndarray  # float64, seconds from the first record
    proto: np.ndarray  # uint8: 0 tcp, 1 udp, 2 other
    size: np.ndarray  # uint32 original length
    caplen: np.ndarray  # uint32
    payload: np.ndarray  # uint32
    ports: np.ndarray  # bool: TCP or UDP with a readable header
    sport: np.ndarray  # int32
    dport: np.ndarray  # int32
    is4: np.ndarray  # bool
    s4: np.ndarray  # uint32 IPv4 source (0 on IPv6 rows)
    d4: np.ndarray  # uint32
    seq_raw: np.ndarray  # uint32
    ack_raw: np.ndarray  # uint32
    flags: np.ndarray  # uint8
    win_raw: np.ndarray  # uint16
    mss: np.ndarray  # uint16
    mss_ok: np.ndarray  # bool
    wscale: np.ndarray  # uint8, clamped to 14
    wscale_ok: np.ndarray  # bool
    ts_val: np.ndarray  # uint32
    ts_ecr: np.ndarray  # uint32
    ts_ok: np.ndarray  # bool
    #: IPv6 rows: (row, src hi, src lo, dst hi, dst lo) per chunk
    v6: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    #: SACK blocks: (row, left, right) raw 32-bit edges per chunk, in option order within a row
    sack: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    @classmethod
    def alloc(cls, n: int) -> Rows:
        """Uninitialised columns for up to ``n`` rows (pages are only touched when written)."""
        e = np.empty
        return cls(
            frame=e(n, np.uint64), time=e(n, np.float64), proto=e(n, np.uint8), size=e(n, np.uint32),
            caplen=e(n, np.uint32), payload=e(n, np.uint32), ports=e(n, bool), sport=e(n, np.int32),
            dport=e(n, np.int32), is4=e(n, bool), s4=e(n, np.uint32), d4=e(n, np.uint32),
            seq_raw=e(n, np.uint32), ack_raw=e(n, np.uint32), flags=e(n, np.uint8), win_raw=e(n, np.uint16),
            mss=e(n, np.uint16), mss_ok=e(n, bool), wscale=e(n, np.uint8), wscale_ok=e(n, bool),
            ts_val=e(n, np.uint32), ts_ecr=e(n, np.uint32), ts_ok=e(n, bool))

    def columns(self) -> list[str]:
        """Names of the per-row array fields."""
        return [k for k, v in self.__dict__.items() if isinstance(v, np.ndarray)]

    def trim(self, n: int) -> None:
        """Keep the first ``n`` rows (copied when that frees much memory)."""
        for k in self.columns():
            v = getattr(self, k)
            if len(v) != n:
                setattr(self, k, v[:n].copy() if n < len(v) // 2 else v[:n])

    def __len__(self) -> int:
        return len(self.frame)


def decode(buf: np.ndarray, pk: Packets, log: WarningLog, counts: dict[str, int],
           done: Callable[[int], None] | None = None, t0: int = 0, limits: Limits = DEFAULT) -> Rows:
    """Decode link/IP/TCP/UDP headers of every packet.

    Args:
        buf: The capture's bytes.
        pk: Per-record facts from the container reader.
        log: Warning log (malformed headers, fragments).
        counts: Filled with counts of frames that produce no row (``non_ip``, ...).
        done: Called after each chunk with the offset below which ``buf`` is no longer needed.
        t0: Epoch ns of time 0 (``Rows.time`` is relative to it).
        limits: Bounds of the IP reassembly buffers (:mod:`tracekit.parsers._reasm`).

    Returns:
        One row per IP packet.
    """
    n = len(pk)
    out = Rows.alloc(n)
    lt = pk.linktype
    r = 0
    ctx = _Ctx(log, counts, Reassembler(limits))
    for s in range(0, n, CHUNK):
        e = min(s + CHUNK, n)
        r += _decode_chunk(buf, s, pk.data_off[s:e], pk.caplen[s:e], pk.origlen[s:e],
                           lt if isinstance(lt, int) else lt[s:e], pk.ts_ns[s:e], t0, ctx, out, r)
        if done is not None and e < n:
            done(int(pk.data_off[e]))
    ctx.reasm.finish(log, counts)
    out.trim(r)
    return out


@dataclass
class _Ctx:
    """What lives across chunks: the warning log, the frame counts and the pending fragments."""

    log: WarningLog
    counts: dict[str, int]
    reasm: Reassembler


def _decode_chunk(buf: np.ndarray, s: int, off: np.ndarray, caplen: np.ndarray, origlen: np.ndarray,
                  lt: np.ndarray | int, ts_ns: np.ndarray, t0: int, ctx: _Ctx, out: Rows, r0: int) -> int:
    """:func:`decode` for the records ``s, s+1, ...``: fills ``out`` from row ``r0``; returns the row count.

    Packets of the common layout (:mod:`tracekit.parsers._fast`) are decoded from one window
    gather; the others, if any, by :func:`_generic`, whose rows then replace theirs.
    """
    m = len(off)
    ether = lt == LT_ETHERNET if isinstance(lt, int) else bool((lt == LT_ETHERNET).all())
    fast = _fast.eligible(buf, off, caplen) if ether else None
    # Worth it when a third qualifies: the window costs ~30 ns a packet, the generic path ~150.
    if fast is None or np.count_nonzero(fast.ok) * 3 < m:
        return len(_generic(buf, np.arange(s, s + m), off, caplen, origlen, lt, ts_ns, t0, ctx, out, r0))
    o = {k: getattr(out, k)[r0:r0 + m] for k in out.columns()}
    o["frame"][:] = np.arange(s + 1, s + m + 1, dtype=np.uint64)
    _common(o, ts_ns, t0, origlen, caplen)
    _fast.fill(fast, o)
    slow = np.nonzero(~fast.ok)[0]
    if not len(slow):
        return m
    del fast
    tmp = Rows.alloc(len(slow))
    kept = slow[_generic(buf, slow + s, off[slow], caplen[slow], origlen[slow],
                         lt if isinstance(lt, int) else lt[slow], ts_ns[slow], t0, ctx, tmp, 0)]
    tmp.trim(len(kept))
    for k in out.columns():
        o[k][kept] = getattr(tmp, k)
    dest = kept  # row (in the chunk) of each of tmp's rows
    if len(kept) < len(slow):  # frames the generic path dropped (not IP, too short): close the gaps
        keep = np.ones(m, dtype=bool)
        keep[slow] = False
        keep[kept] = True
        at = np.nonzero(keep)[0]
        for k in out.columns():
            o[k][:len(at)] = o[k][at]
        dest = (np.cumsum(keep) - 1)[kept]
        m = len(at)
    out.v6 += [(dest[v[0]] + r0, *v[1:]) for v in tmp.v6]
    out.sack += [(dest[r] + r0, left, right) for r, left, right in tmp.sack]
    return m


def _common(o: dict[str, np.ndarray], ts_ns: np.ndarray, t0: int, origlen: np.ndarray, caplen: np.ndarray) -> None:
    """Time and lengths of the chunk's rows (``o``), from the same-length record columns."""
    o["time"][:] = ts_ns - t0  # int64 difference first: exact, then one rounding to float
    o["time"] *= 1 / 1e9  # as polars divides by a constant: times its reciprocal
    o["size"][:] = origlen
    o["caplen"][:] = caplen


def _generic(buf: np.ndarray, rec: np.ndarray, off: np.ndarray, caplen: np.ndarray, origlen: np.ndarray,
             lt: np.ndarray | int, ts_ns: np.ndarray, t0: int, ctx: _Ctx, out: Rows, r0: int) -> np.ndarray:
    """Decode any packets (record numbers ``rec``, 0-based) into ``out`` from row ``r0``.

    Fragments go to the reassembler (in frame order: the caller's chunks and rows are); the
    frame completing a datagram gets its transport header and length, the others stay 'other'.

    Returns:
        The positions (in ``rec``) of the packets that gave a row, in row order.
    """
    log, counts = ctx.log, ctx.counts
    end = off + caplen
    bf0 = Gather(buf, off, end)
    l3, ipv = link(bf0, off, lt)
    non_ip = ipv == 0
    if non_ip.any():
        counts["non_ip"] = counts.get("non_ip", 0) + int(non_ip.sum())
    keep = ~non_ip
    # Headers-only captures keep the IP header; a frame cut before its fixed IP header is unusable.
    short = keep & ~bf0.ok(l3, 20)
    short6 = keep & (ipv == 6) & ~bf0.ok(l3, 40)
    bad_ip = short | short6
    if bad_ip.any():
        log.add("W-MALFORMED", "packets too short for their IP header (skipped)", count=int(bad_ip.sum()),
                frame=int(rec[np.nonzero(bad_ip)[0][0]]) + 1)
        counts["malformed"] = counts.get("malformed", 0) + int(bad_ip.sum())
    keep &= ~bad_ip
    all_kept = bool(keep.all())
    idx = np.arange(len(off)) if all_kept else np.nonzero(keep)[0]
    if not all_kept:
        l3, ipv = l3[idx], ipv[idx]
    bf = bf0 if all_kept else bf0.sub(idx)
    n = len(idx)
    rows = slice(r0, r0 + n)
    is4 = ipv == 4
    o = {k: getattr(out, k)[rows] for k in out.columns()}  # this chunk's part of every column
    o["frame"][:] = rec[idx]
    o["frame"] += 1
    if all_kept:
        _common(o, ts_ns, t0, origlen, caplen)
    else:
        _common(o, ts_ns[idx], t0, origlen[idx], caplen[idx])
    o["is4"][:] = is4

    # ---- IPv4 / IPv6 network header, each decoded for its own packets only
    ihl = np.full(n, 40, dtype=np.int64)
    tot = np.zeros(n, dtype=np.int64)
    nh = np.zeros(n, dtype=np.int64)
    fr = FragCols.alloc(n)
    o["s4"][:] = 0
    o["d4"][:] = 0
    i4 = np.nonzero(is4)[0]
    if len(i4):
        p = l3[i4]
        w0, w1 = bf.be64(p, i4), bf.be64(p + 8, i4)  # bytes 0-7 and 8-15 of the IPv4 header
        ihl[i4] = ((w0 >> np.uint64(56)) & np.uint64(0x0F)).astype(np.int64) * 4
        tot[i4] = ((w0 >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64)
        fr.offset[i4] = (w0 & np.uint64(0x1FFF)).astype(np.int64) * 8  # RFC 791: in 8-byte units
        fr.more[i4] = (w0 & np.uint64(0x2000)) != 0  # MF
        fr.ident[i4] = ((w0 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64)
        fr.is_frag[i4] = (fr.offset[i4] != 0) | fr.more[i4]
        nh[i4] = ((w1 >> np.uint64(48)) & np.uint64(0xFF)).astype(np.int64)
        o["s4"][i4] = w1 & _M32
        o["d4"][i4] = bf.read(p + 16, 4, i4)
        del w0, w1
    i6 = np.nonzero(~is4)[0]
    if len(i6):
        p = l3[i6]
        w0 = bf.be64(p, i6)
        tot[i6] = ((w0 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64) + 40
        nh[i6] = ((w0 >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int64)
        fr.addr6 = (bf.be64(p + 8, i6), bf.be64(p + 16, i6), bf.be64(p + 24, i6), bf.be64(p + 32, i6))
        out.v6.append((i6 + r0, *fr.addr6))
    bad = is4 & ((ihl < 20) | (tot < ihl))
    l4 = l3 + ihl
    fr.data[:] = l4  # IPv4: a fragment's data follows the header; IPv6: set at its Fragment header
    # IPv6 extension headers: a bounded walk of the next-header chain.
    ext = ~is4 & np.isin(nh, _IPV6_EXT)
    for _ in range(_MAX_EXT):
        if not ext.any():
            break
        e = np.nonzero(ext)[0]
        pe, nhe = l4[e], nh[e]
        b1 = bf.u8(pe + 1, e)
        hlen = np.where(nhe == 44, 8, np.where(nhe == 51, (b1 + 2) * 4, (b1 + 1) * 8))
        stop = frag6_header(fr, bf, e, pe, nhe == 44)
        ok = bf.ok(pe, 2, bf.end[e])
        nh[e] = np.where(ok, bf.u8(pe, e), 59)  # 59: no next header
        l4[e] = np.where(ok, pe + hlen, pe)
        ext[e] = ok & ~stop & np.isin(nh[e], _IPV6_EXT)
    l4len = tot - (l4 - l3)
    bad |= l4len < 0
    frag = fr.is_frag & ~bad
    if frag.any():
        reassemble(ctx.reasm, o, fr, frag, bf, l3, l4, l4len, tot, nh)
    del tot, ihl
    if bad.any():
        log.add("W-MALFORMED", "packets with impossible IP header/total lengths (kept as 'other')",
                count=int(bad.sum()))
    np.maximum(l4len, 0, out=l4len)

    plain = ~frag & ~bad
    is_tcp = (nh == 6) & plain
    is_udp = (nh == 17) & plain
    del plain, frag, bad, nh
    # TCP fixed header: bytes 0-7 (ports, seq) and 8-15 (ack, data offset, flags, window).
    t = np.nonzero(is_tcp)[0]
    b = l4[t]
    tw0, tw1 = bf.be64(b, t), bf.be64(b + 8, t)
    doff_t = ((tw1 >> np.uint64(28)) & np.uint64(0xF)).astype(np.int64) * 4
    # The fixed header needs 20 captured bytes; the data offset must fit inside the segment.
    tbad = ~bf.ok(b, 20, bf.end[t]) | (doff_t < 20) | (doff_t > l4len[t])
    if tbad.any():
        log.add("W-MALFORMED", "TCP segments with a bad data offset or cut before the TCP header (kept as 'other')",
                count=int(tbad.sum()))
        is_tcp[t[tbad]] = False
        good = ~tbad
        t, b, tw0, tw1, doff_t = t[good], b[good], tw0[good], tw1[good], doff_t[good]
    is_udp &= bf.ok(l4, 8)

    proto = o["proto"]
    proto[:] = 2
    proto[is_udp] = 1
    proto[t] = 0
    np.logical_or(is_tcp, is_udp, out=o["ports"])
    sport, dport = o["sport"], o["dport"]
    sport[:] = 0
    dport[:] = 0
    sport[t] = tw0 >> np.uint64(48)
    dport[t] = (tw0 >> np.uint64(32)) & np.uint64(0xFFFF)
    u = np.nonzero(is_udp)[0]
    payload = o["payload"]
    payload[:] = 0
    if len(u):
        uw = bf.be32(l4[u], u)
        sport[u], dport[u] = uw >> 16, uw & 0xFFFF
        payload[u] = np.maximum(l4len[u] - 8, 0)
    payload[t] = l4len[t] - doff_t
    del is_tcp, is_udp, l4len, l4, l3
    _tcp_columns(o, bf, log, t, b, tw0, tw1, doff_t, r0, out)
    return idx


def _tcp_columns(o: dict[str, np.ndarray], bf: Gather, log: WarningLog, t: np.ndarray, b: np.ndarray,
                 tw0: np.ndarray, tw1: np.ndarray, doff: np.ndarray, r0: int, out: Rows) -> None:
    """Fill the raw TCP fields and options of the TCP rows ``t`` (header at ``b``) of one chunk."""
    for k in ("seq_raw", "ack_raw", "flags", "win_raw", "mss_ok", "wscale_ok", "ts_ok"):
        o[k][:] = 0
    o["seq_raw"][t] = tw0 & _M32
    o["ack_raw"][t] = tw1 >> np.uint64(32)
    o["flags"][t] = (tw1 >> np.uint64(16)) & np.uint64(0xFF)
    o["win_raw"][t] = tw1 & np.uint64(0xFFFF)
    mss, wsc, tsv, tse = o["mss"], o["wscale"], o["ts_val"], o["ts_ecr"]
    mss_ok, wsc_ok, ts_ok = o["mss_ok"], o["wscale_ok"], o["ts_ok"]
    # Options walk: at most 40 option bytes, every step advances by >= 1 byte, so <= 40 steps.
    hdr_end = np.minimum(b + doff, bf.end[t])
    pos = b + 20
    # Fast path for the layout Linux uses on every segment: NOP, NOP, timestamps (12 bytes).
    lin = (hdr_end >= b + 32) & (bf.read(pos, 4, t) == _TS_PREFIX)
    if lin.any():
        w = bf.be64(b[lin] + 24, t[lin])
        tl = t[lin]
        tsv[tl] = w >> np.uint64(32)
        tse[tl] = w & _M32
        ts_ok[tl] = True
        pos[lin] += 12
    act = pos < hdr_end
    for _ in range(40):
        if not act.any():
            break
        sel = np.nonzero(act)[0]
        p = pos[sel]
        he = hdr_end[sel]
        rows = t[sel]
        kl = bf.be16(p, rows)
        kind = kl >> 8
        olen = np.where(kind == 1, 1, kl & 0xFF)
        # kind 0 ends the list; a length < 2 (except NOP) or past the header ends parsing
        # (the classic infinite-loop trap of zero-length options).
        stop = (kind == 0) | ((kind != 1) & ((olen < 2) | (p + olen > he)))
        m = ~stop & (kind == 2) & (olen == 4)
        if m.any():
            mss[rows[m]] = bf.be16(p[m] + 2, rows[m])
            mss_ok[rows[m]] = True
        m = ~stop & (kind == 3) & (olen == 3)
        if m.any():
            wsc[rows[m]] = bf.read(p[m] + 2, 1, rows[m])  # clamped to 14 below, once counted
            wsc_ok[rows[m]] = True
        m = ~stop & (kind == 8) & (olen == 10)
        if m.any():
            tsv[rows[m]] = bf.be32(p[m] + 2, rows[m])
            tse[rows[m]] = bf.be32(p[m] + 6, rows[m])
            ts_ok[rows[m]] = True
        m = ~stop & (kind == 5) & (olen >= 10) & ((olen - 2) % 8 == 0)
        if m.any():
            nblk = (olen[m] - 2) // 8
            for blk in range(4):
                mk = nblk > blk
                if not mk.any():
                    break
                q = p[m][mk] + 2 + 8 * blk
                w = bf.be64(q, rows[m][mk])
                out.sack.append((rows[m][mk] + r0, (w >> np.uint64(32)).astype(np.int64),
                                 (w & _M32).astype(np.int64)))
        newpos = p + np.where(stop, 0, olen)
        pos[sel] = newpos
        act[sel] = ~stop & (newpos < he)
    if wsc_ok.any():
        big = wsc_ok & (wsc > 14)
        if big.any():
            log.add("W-WSCALE", "window scale options above 14 (clamped to 14, RFC 7323)", count=int(big.sum()))
            np.minimum(wsc, 14, out=wsc)
