"""Vectorized decoding of link, IP and TCP/UDP headers for capture readers.

Input: the capture's bytes as one numpy ``uint8`` array and, per packet, the
offset of its data, captured length, original length, link type and
timestamp. Every header field is gathered with numpy fancy indexing over all
packets at once; the only loops are bounded walks over VLAN tags, IPv6
extension headers and TCP options, each step of which processes every packet
still in the walk. No per-packet Python objects are created.

Speed notes (a gather over a large capture is bound by memory access, not arithmetic): header
words are fetched 8 bytes at a time through an overlapping big-endian ``>u8`` view of the
buffer and split with shifts; IPv4 and IPv6 headers are decoded only for their own packets;
the common Linux option layout (NOP, NOP, timestamps) is read directly before the generic
option walk.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from tracekit.parsers._gather import Gather
from tracekit.schema import PROTO
from tracekit.trace import WarningLog

# Link types (LINKTYPE_*) the fast path decodes.
LT_NULL, LT_ETHERNET, LT_PPP, LT_RAW_A, LT_RAW_B, LT_PPP_HDLC = 0, 1, 9, 12, 14, 50
LT_RAW, LT_LOOP, LT_SLL, LT_IPV4, LT_IPV6, LT_SLL2 = 101, 108, 113, 228, 229, 276
SUPPORTED_LINKTYPES = {
    LT_NULL: "BSD loopback (NULL)",
    LT_ETHERNET: "Ethernet",
    LT_PPP: "PPP",
    LT_RAW_A: "raw IP (DLT 12)",
    LT_RAW_B: "raw IP (DLT 14)",
    LT_PPP_HDLC: "PPP in HDLC",
    LT_RAW: "raw IP",
    LT_LOOP: "OpenBSD loopback (LOOP)",
    LT_SLL: "Linux cooked (SLL)",
    LT_IPV4: "raw IPv4",
    LT_IPV6: "raw IPv6",
    LT_SLL2: "Linux cooked v2 (SLL2)",
}

_VLAN_TYPES = (0x8100, 0x88A8, 0x9100)
_MAX_VLAN = 8
_MAX_EXT = 8
_IPV6_EXT = (0, 43, 60, 44, 51)
_TS_PREFIX = 0x0101080A  # NOP, NOP, kind 8 length 10: how Linux lays out the timestamp option
_M32 = np.uint64(0xFFFFFFFF)


@dataclass
class Packets:
    """Per-packet record facts a container reader hands to :func:`decode`."""

    frame: np.ndarray  # uint64, 1-based record number
    data_off: np.ndarray  # int64, offset of the packet's first byte in ``buf``
    caplen: np.ndarray  # int64
    origlen: np.ndarray  # int64
    linktype: np.ndarray  # int64
    ts_ns: np.ndarray  # int64, epoch nanoseconds


def _link(bf: Gather, off: np.ndarray, lt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (offset of the network header, ethertype-like code: 4 IPv4, 6 IPv6, 0 other)."""
    n = len(off)
    l3 = np.full(n, -1, dtype=np.int64)
    etype = np.zeros(n, dtype=np.int64)  # 0x0800 / 0x86DD / other; -1 = decide from version nibble
    kinds = set(np.unique(lt).tolist())

    if LT_ETHERNET in kinds:
        m = lt == LT_ETHERNET
        mi = np.nonzero(m)[0]
        pos = off[m] + 12
        em = bf.end[m]
        et = np.where(bf.ok(pos, 2, em), bf.be16(pos, mi), 0)
        # 802.1Q / QinQ tags: each adds 4 bytes; bounded depth.
        for _ in range(_MAX_VLAN):
            tagged = np.isin(et, _VLAN_TYPES)
            if not tagged.any():
                break
            pos = np.where(tagged, pos + 4, pos)
            et = np.where(tagged, np.where(bf.ok(pos, 2, em), bf.be16(pos, mi), 0), et)
        start = pos + 2
        # PPPoE session: 6-byte header then the 2-byte PPP protocol field.
        pppoe = et == 0x8864
        if pppoe.any():
            proto = bf.be16(start + 6, mi)
            et = np.where(pppoe, np.where(proto == 0x0021, 0x0800, np.where(proto == 0x0057, 0x86DD, 0)), et)
            start = np.where(pppoe, start + 8, start)
        l3[m] = start
        etype[m] = et

    if LT_SLL in kinds:
        m = lt == LT_SLL
        l3[m] = off[m] + 16
        etype[m] = bf.be16(off[m] + 14, np.nonzero(m)[0])
    if LT_SLL2 in kinds:
        m = lt == LT_SLL2
        l3[m] = off[m] + 20
        etype[m] = bf.be16(off[m], np.nonzero(m)[0])

    if kinds & {LT_RAW, LT_RAW_A, LT_RAW_B, LT_IPV4, LT_IPV6}:
        m = np.isin(lt, (LT_RAW, LT_RAW_A, LT_RAW_B, LT_IPV4, LT_IPV6))
        l3[m] = off[m]
        etype[m] = -1

    if kinds & {LT_PPP, LT_PPP_HDLC}:
        m = np.isin(lt, (LT_PPP, LT_PPP_HDLC))
        mi = np.nonzero(m)[0]
        o = off[m]
        # ns-3 writes the bare 2-byte protocol field; real PPP/HDLC prefixes address 0xff, control 0x03.
        hdlc = bf.be16(o, mi) == 0xFF03
        p = np.where(hdlc, o + 2, o)
        proto = bf.be16(p, mi)
        l3[m] = p + 2
        etype[m] = np.where(proto == 0x0021, 0x0800, np.where(proto == 0x0057, 0x86DD, 0))

    if kinds & {LT_NULL, LT_LOOP}:
        m = np.isin(lt, (LT_NULL, LT_LOOP))
        mi = np.nonzero(m)[0]
        o = off[m]
        # NULL: AF value in the *capturing host's* byte order; LOOP: network order.
        be = bf.be32(o, mi)
        le = bf.le32(o, mi)
        fam = np.where(lt[m] == LT_LOOP, be, np.where(le <= 0xFFFF, le, be))
        l3[m] = o + 4
        # AF_INET is 2 everywhere; AF_INET6 is 10 (Linux), 24 (BSD), 28 (FreeBSD), 30 (macOS).
        etype[m] = np.where(fam == 2, 0x0800, np.where(np.isin(fam, (10, 24, 28, 30)), 0x86DD, 0))

    ver = bf.u8(l3) >> 4
    code = np.where(
        etype == -1,
        np.where(ver == 4, 4, np.where(ver == 6, 6, 0)),
        np.where(etype == 0x0800, 4, np.where(etype == 0x86DD, 6, 0)),
    )
    code = np.where(l3 < 0, 0, code)
    return l3, code


def _addresses(is4: np.ndarray, s_hi: np.ndarray, s_lo: np.ndarray, d_hi: np.ndarray,
               d_lo: np.ndarray) -> tuple[pl.Series, pl.Series, np.ndarray, np.ndarray]:
    """Address columns (Categorical) and integer ids (same address -> same id in src and dst).

    Distinct addresses are found with a hash ``unique`` and numbered by ``searchsorted``; only
    the distinct ones are turned into text (one ``ipaddress`` call per address, not per packet).
    """
    n = len(is4)
    ids = np.zeros(2 * n, dtype=np.int32)
    four = np.concatenate([is4, is4])
    texts: list[str] = []
    if four.any():
        k4 = np.concatenate([s_lo, d_lo])[four].astype(np.int64)
        u4 = np.sort(pl.Series(k4).unique().to_numpy())
        ids[four] = np.searchsorted(u4, k4)
        texts += [str(ipaddress.IPv4Address(int(v))) for v in u4.tolist()]
    if not four.all():
        six = ~four
        k6 = np.stack([np.concatenate([s_hi, d_hi])[six], np.concatenate([s_lo, d_lo])[six]], axis=1)
        u6, inv = np.unique(np.ascontiguousarray(k6).view(np.dtype((np.void, 16))).ravel(), return_inverse=True)
        ids[six] = len(texts) + inv.ravel()
        pairs = u6.view(np.uint64).reshape(-1, 2)
        texts += [str(ipaddress.IPv6Address((int(h) << 64) | int(lo))) for h, lo in pairs.tolist()]
    names = pl.Series(texts, dtype=pl.String).cast(pl.Categorical)
    if not n:
        empty = pl.Series([], dtype=pl.Categorical)
        return empty, empty, ids[:0], ids[:0]
    return names.gather(ids[:n]), names.gather(ids[n:]), ids[:n], ids[n:]


def _masked(values: np.ndarray, mask: np.ndarray, dtype: pl.DataType) -> pl.Series:
    """A column with nulls where ``mask`` is False."""
    return pl.Series(np.ma.masked_array(values, mask=~mask)).cast(dtype)


#: Packets decoded at a time: bounds the temporaries (~50 arrays of this length) and keeps
#: them cache-sized; the results are concatenated.
CHUNK = 1 << 17


def decode(buf: np.ndarray, pk: Packets, log: WarningLog, counts: dict[str, int],
           done: Callable[[int], None] | None = None) -> pl.DataFrame:
    """Decode link/IP/TCP/UDP headers of every packet.

    Args:
        buf: The capture's bytes.
        pk: Per-record facts from the container reader.
        log: Warning log (malformed headers, fragments).
        counts: Filled with counts of frames that produce no row (``non_ip``, ...).
        done: Called after each chunk with the offset below which ``buf`` is no longer needed.

    Returns:
        One row per IP packet with the raw columns :func:`tracekit.parsers._tcp.finish_tcp` expects
        (plus ``_src_id``/``_dst_id`` address ids).
    """
    parts = []
    for s in range(0, max(len(pk.frame), 1), CHUNK):
        part = Packets(*(getattr(pk, f)[s:s + CHUNK] for f in ("frame", "data_off", "caplen", "origlen",
                                                               "linktype", "ts_ns")))
        parts.append(_decode_chunk(buf, part, log, counts))
        if done is not None and s + CHUNK < len(pk.frame):
            done(int(pk.data_off[s + CHUNK]))
    df = pl.concat(parts, rechunk=False) if len(parts) > 1 else parts[0]
    # Addresses are numbered over the whole capture (ids must agree between chunks).
    is4 = df["_is4"].to_numpy()
    cols = [df[c].to_numpy() for c in ("_s_hi", "_s_lo", "_d_hi", "_d_lo")]
    src, dst, src_id, dst_id = _addresses(is4, *cols)
    return df.drop("_is4", "_s_hi", "_s_lo", "_d_hi", "_d_lo").with_columns(
        src=src, dst=dst, _src_id=src_id, _dst_id=dst_id)


def _decode_chunk(buf: np.ndarray, pk: Packets, log: WarningLog, counts: dict[str, int]) -> pl.DataFrame:
    """:func:`decode` for one chunk of packets (addresses left numeric)."""
    off, caplen = pk.data_off, pk.caplen
    end = off + caplen
    bf0 = Gather(buf, off, end)
    l3, ipv = _link(bf0, off, pk.linktype)
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
                frame=int(pk.frame[bad_ip][0]))
        counts["malformed"] = counts.get("malformed", 0) + int(bad_ip.sum())
    keep &= ~bad_ip
    idx = np.nonzero(keep)[0]
    l3, ipv = l3[idx], ipv[idx]
    bf = bf0.sub(idx)
    n = len(idx)
    is4 = ipv == 4

    # ---- IPv4 / IPv6 network header, each decoded for its own packets only
    ihl = np.full(n, 40, dtype=np.int64)
    tot = np.zeros(n, dtype=np.int64)
    nh = np.zeros(n, dtype=np.int64)
    frag_off = np.zeros(n, dtype=np.int64)
    s_hi = np.zeros(n, dtype=np.uint64)
    s_lo = np.zeros(n, dtype=np.uint64)
    d_hi = np.zeros(n, dtype=np.uint64)
    d_lo = np.zeros(n, dtype=np.uint64)
    i4 = np.nonzero(is4)[0]
    if len(i4):
        p = l3[i4]
        w0, w1 = bf.be64(p, i4), bf.be64(p + 8, i4)  # bytes 0-7 and 8-15 of the IPv4 header
        ihl[i4] = ((w0 >> np.uint64(56)) & np.uint64(0x0F)).astype(np.int64) * 4
        tot[i4] = ((w0 >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64)
        frag_off[i4] = (w0 & np.uint64(0x1FFF)).astype(np.int64)
        nh[i4] = ((w1 >> np.uint64(48)) & np.uint64(0xFF)).astype(np.int64)
        s_lo[i4] = w1 & _M32
        d_lo[i4] = bf.be32(p + 16, i4).astype(np.uint64)
    i6 = np.nonzero(~is4)[0]
    if len(i6):
        p = l3[i6]
        w0 = bf.be64(p, i6)
        tot[i6] = ((w0 >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.int64) + 40
        nh[i6] = ((w0 >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int64)
        s_hi[i6], s_lo[i6] = bf.be64(p + 8, i6), bf.be64(p + 16, i6)
        d_hi[i6], d_lo[i6] = bf.be64(p + 24, i6), bf.be64(p + 32, i6)
    bad = is4 & ((ihl < 20) | (tot < ihl))
    l4 = l3 + ihl
    # IPv6 extension headers: a bounded walk of the next-header chain.
    ext = ~is4 & np.isin(nh, _IPV6_EXT)
    frag6 = np.zeros(n, dtype=bool)
    for _ in range(_MAX_EXT):
        if not ext.any():
            break
        e = np.nonzero(ext)[0]
        pe, nhe = l4[e], nh[e]
        b1 = bf.u8(pe + 1, e)
        hlen = np.where(nhe == 44, 8, np.where(nhe == 51, (b1 + 2) * 4, (b1 + 1) * 8))
        frag6[e] |= (nhe == 44) & ((bf.be16(pe + 2, e) & 0xFFF8) != 0)
        ok = bf.ok(pe, 2, bf.end[e])
        nh[e] = np.where(ok, bf.u8(pe, e), 59)  # 59: no next header
        l4[e] = np.where(ok, pe + hlen, pe)
        ext[e] = ok & np.isin(nh[e], _IPV6_EXT)
    l4len = tot - (l4 - l3)
    bad |= l4len < 0
    frag = (frag_off != 0) | frag6
    if frag.any():
        log.add("W-FRAGMENT", "non-first IP fragments (no transport header; counted, not reassembled)",
                count=int(frag.sum()))
    if bad.any():
        log.add("W-MALFORMED", "packets with impossible IP header/total lengths (kept as 'other')",
                count=int(bad.sum()))
    l4len = np.maximum(l4len, 0)

    is_tcp = (nh == 6) & ~frag & ~bad
    is_udp = (nh == 17) & ~frag & ~bad
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
    udp_bad = is_udp & ~bf.ok(l4, 8)
    is_udp &= ~udp_bad

    proto = np.where(is_tcp, 0, np.where(is_udp, 1, 2))
    has_ports = is_tcp | is_udp
    sport = np.zeros(n, dtype=np.int64)
    dport = np.zeros(n, dtype=np.int64)
    sport[t] = (tw0 >> np.uint64(48)).astype(np.int64)
    dport[t] = ((tw0 >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64)
    u = np.nonzero(is_udp)[0]
    if len(u):
        uw = bf.be32(l4[u], u)
        sport[u], dport[u] = uw >> 16, uw & 0xFFFF
    payload = np.where(is_udp, np.maximum(l4len - 8, 0), 0)
    payload[t] = l4len[t] - doff_t

    df = pl.DataFrame({
        "frame": pk.frame[idx],
        "_ts": pk.ts_ns[idx],
        "proto": pl.Series(["tcp", "udp", "other"], dtype=PROTO).gather(proto),
        # the schema's own dtypes, so that nothing is converted (copied) later
        "size": pk.origlen[idx].astype(np.uint32),
        "caplen": caplen[idx].astype(np.uint32),
        "payload": payload.astype(np.uint32),
        "sport": _masked(sport.astype(np.int32), has_ports, pl.Int32),
        "dport": _masked(dport.astype(np.int32), has_ports, pl.Int32),
        "_is4": is4,
        "_s_hi": s_hi,
        "_s_lo": s_lo,
        "_d_hi": d_hi,
        "_d_lo": d_lo,
    })
    return _tcp_columns(df, bf, log, t, b, tw0, tw1, doff_t, n)


def _tcp_columns(df: pl.DataFrame, bf: Gather, log: WarningLog, t: np.ndarray, b: np.ndarray, tw0: np.ndarray,
                 tw1: np.ndarray, doff: np.ndarray, n: int) -> pl.DataFrame:
    """Add the raw TCP fields and options of the TCP rows ``t`` (header at ``b``) to ``df``."""
    is_t = np.zeros(n, dtype=bool)
    is_t[t] = True
    seq = np.zeros(n, dtype=np.int64)
    ack = np.zeros(n, dtype=np.int64)
    flags = np.zeros(n, dtype=np.int64)
    win = np.zeros(n, dtype=np.int64)
    seq[t] = (tw0 & _M32).astype(np.int64)
    ack[t] = (tw1 >> np.uint64(32)).astype(np.int64)
    flags[t] = ((tw1 >> np.uint64(16)) & np.uint64(0xFF)).astype(np.int64)
    win[t] = (tw1 & np.uint64(0xFFFF)).astype(np.int64)
    mss = np.full(n, -1, dtype=np.int64)
    wsc = np.full(n, -1, dtype=np.int64)
    tsv = np.full(n, -1, dtype=np.int64)
    tse = np.full(n, -1, dtype=np.int64)
    sack_rows: list[np.ndarray] = []
    sack_l: list[np.ndarray] = []
    sack_r: list[np.ndarray] = []
    # Options walk: at most 40 option bytes, every step advances by >= 1 byte, so <= 40 steps.
    hdr_end = np.minimum(b + doff, bf.end[t])
    pos = b + 20
    # Fast path for the layout Linux uses on every segment: NOP, NOP, timestamps (12 bytes).
    lin = (hdr_end >= b + 32) & (bf.be32(pos, t) == _TS_PREFIX)
    if lin.any():
        w = bf.be64(b[lin] + 24, t[lin])
        tsv[t[lin]] = (w >> np.uint64(32)).astype(np.int64)
        tse[t[lin]] = (w & _M32).astype(np.int64)
        pos = np.where(lin, b + 32, pos)
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
        m = ~stop & (kind == 3) & (olen == 3)
        if m.any():
            wsc[rows[m]] = bf.u8(p[m] + 2, rows[m])
        m = ~stop & (kind == 8) & (olen == 10)
        if m.any():
            tsv[rows[m]] = bf.be32(p[m] + 2, rows[m])
            tse[rows[m]] = bf.be32(p[m] + 6, rows[m])
        m = ~stop & (kind == 5) & (olen >= 10) & ((olen - 2) % 8 == 0)
        if m.any():
            nblk = (olen[m] - 2) // 8
            for k in range(4):
                mk = nblk > k
                if not mk.any():
                    break
                q = p[m][mk] + 2 + 8 * k
                sack_rows.append(rows[m][mk])
                w = bf.be64(q, rows[m][mk])
                sack_l.append((w >> np.uint64(32)).astype(np.int64))
                sack_r.append((w & _M32).astype(np.int64))
        newpos = p + np.where(stop, 0, olen)
        pos[sel] = newpos
        act[sel] = ~stop & (newpos < he)
    if wsc.max(initial=-1) > 14:
        log.add("W-WSCALE", "window scale options above 14 (clamped to 14, RFC 7323)",
                count=int((wsc > 14).sum()))

    df = df.with_columns(
        seq_raw=_masked(seq.astype(np.uint32), is_t, pl.UInt32),
        ack_raw=_masked(ack.astype(np.uint32), is_t, pl.UInt32),
        flags=_masked(flags, is_t, pl.UInt8),
        win_raw=_masked(win.astype(np.uint16), is_t, pl.UInt16),
        mss=_masked(mss, mss >= 0, pl.UInt16),
        wscale=_masked(np.minimum(wsc, 14), wsc >= 0, pl.UInt8),
        ts_val=_masked(tsv, tsv >= 0, pl.UInt32),
        ts_ecr=_masked(tse, tse >= 0, pl.UInt32),
    )
    if sack_rows:
        sk = (
            pl.DataFrame({
                "_i": np.concatenate(sack_rows),
                "l": np.concatenate(sack_l),
                "r": np.concatenate(sack_r),
            })
            .with_columns(b=pl.concat_arr("l", "r"))
            .group_by("_i")
            .agg(pl.col("b").alias("sack_raw"))
        )
        full = pl.DataFrame({"_i": np.arange(n, dtype=np.int64)}).join(sk, on="_i", how="left", maintain_order="left")
        df = df.with_columns(sack_raw=full["sack_raw"])
    else:
        df = df.with_columns(sack_raw=pl.lit(None, dtype=pl.List(pl.Array(pl.Int64, 2))))
    return df
