"""Vectorized decoding of link, IP and TCP/UDP headers for capture readers.

Input: the capture's bytes as one numpy ``uint8`` array and, per packet, the
offset of its data, captured length, original length, link type and
timestamp. Every header field is gathered with numpy fancy indexing over all
packets at once; the only loops are bounded walks over VLAN tags, IPv6
extension headers and TCP options, each step of which processes every packet
still in the walk. No per-packet Python objects are created.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np
import polars as pl

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


@dataclass
class Packets:
    """Per-packet record facts a container reader hands to :func:`decode`."""

    frame: np.ndarray  # uint64, 1-based record number
    data_off: np.ndarray  # int64, offset of the packet's first byte in ``buf``
    caplen: np.ndarray  # int64
    origlen: np.ndarray  # int64
    linktype: np.ndarray  # int64
    ts_ns: np.ndarray  # int64, epoch nanoseconds


class _Buf:
    """Bounds-safe gathers from the capture bytes, masked by each packet's captured end."""

    def __init__(self, buf: np.ndarray, end: np.ndarray) -> None:
        self.b = buf
        self.last = len(buf) - 1
        self.end = end  # per packet: one past its last captured byte

    def ok(self, pos: np.ndarray, n: int, end: np.ndarray | None = None) -> np.ndarray:
        e = self.end if end is None else end
        return (pos >= 0) & (pos + n <= e)

    def u8(self, pos: np.ndarray) -> np.ndarray:
        return self.b[np.clip(pos, 0, self.last)].astype(np.int64)

    def be16(self, pos: np.ndarray) -> np.ndarray:
        return (self.u8(pos) << 8) | self.u8(pos + 1)

    def be32(self, pos: np.ndarray) -> np.ndarray:
        return (self.be16(pos) << 16) | self.be16(pos + 2)

    def le32(self, pos: np.ndarray) -> np.ndarray:
        return self.u8(pos) | (self.u8(pos + 1) << 8) | (self.u8(pos + 2) << 16) | (self.u8(pos + 3) << 24)


def _link(bf: _Buf, off: np.ndarray, lt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (offset of the network header, ethertype-like code: 4 IPv4, 6 IPv6, 0 other)."""
    n = len(off)
    l3 = np.full(n, -1, dtype=np.int64)
    etype = np.zeros(n, dtype=np.int64)  # 0x0800 / 0x86DD / other; -1 = decide from version nibble

    m = lt == LT_ETHERNET
    if m.any():
        pos = off[m] + 12
        et = np.where(bf.ok(pos, 2, bf.end[m]), bf.be16(pos), 0)
        # 802.1Q / QinQ tags: each adds 4 bytes; bounded depth.
        for _ in range(_MAX_VLAN):
            tagged = np.isin(et, _VLAN_TYPES)
            if not tagged.any():
                break
            pos = np.where(tagged, pos + 4, pos)
            et = np.where(tagged, np.where(bf.ok(pos, 2, bf.end[m]), bf.be16(pos), 0), et)
        start = pos + 2
        # PPPoE session: 6-byte header then the 2-byte PPP protocol field.
        pppoe = et == 0x8864
        if pppoe.any():
            proto = bf.be16(start + 6)
            et = np.where(pppoe, np.where(proto == 0x0021, 0x0800, np.where(proto == 0x0057, 0x86DD, 0)), et)
            start = np.where(pppoe, start + 8, start)
        l3[m] = start
        etype[m] = et

    m = lt == LT_SLL
    if m.any():
        l3[m] = off[m] + 16
        etype[m] = bf.be16(off[m] + 14)
    m = lt == LT_SLL2
    if m.any():
        l3[m] = off[m] + 20
        etype[m] = bf.be16(off[m])

    m = np.isin(lt, (LT_RAW, LT_RAW_A, LT_RAW_B, LT_IPV4, LT_IPV6))
    if m.any():
        l3[m] = off[m]
        etype[m] = -1

    m = np.isin(lt, (LT_PPP, LT_PPP_HDLC))
    if m.any():
        o = off[m]
        # ns-3 writes the bare 2-byte protocol field; real PPP/HDLC prefixes address 0xff, control 0x03.
        hdlc = (bf.u8(o) == 0xFF) & (bf.u8(o + 1) == 0x03)
        p = np.where(hdlc, o + 2, o)
        proto = bf.be16(p)
        l3[m] = p + 2
        etype[m] = np.where(proto == 0x0021, 0x0800, np.where(proto == 0x0057, 0x86DD, 0))

    m = np.isin(lt, (LT_NULL, LT_LOOP))
    if m.any():
        o = off[m]
        # NULL: AF value in the *capturing host's* byte order; LOOP: network order.
        le, be = bf.le32(o), bf.be32(o)
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


def _addr_strings(kind: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> pl.Series:
    """Format addresses: kind 4 -> lo is the IPv4 value; kind 6 -> (hi, lo) 64-bit halves."""
    df = pl.DataFrame({"k": kind.astype(np.int8), "hi": hi.astype(np.uint64), "lo": lo.astype(np.uint64)})
    uniq = df.unique(maintain_order=False)
    texts: list[str | None] = []
    for k, h, l in uniq.iter_rows():  # one call per distinct address, not per packet
        if k == 4:
            texts.append(str(ipaddress.IPv4Address(int(l) & 0xFFFFFFFF)))
        elif k == 6:
            texts.append(str(ipaddress.IPv6Address((int(h) << 64) | int(l))))
        else:
            texts.append(None)
    uniq = uniq.with_columns(pl.Series("s", texts, dtype=pl.String))
    return df.join(uniq, on=["k", "hi", "lo"], how="left", maintain_order="left")["s"]


def decode(buf: np.ndarray, pk: Packets, log: WarningLog, counts: dict[str, int]) -> pl.DataFrame:
    """Decode link/IP/TCP/UDP headers of every packet.

    Args:
        buf: The capture's bytes.
        pk: Per-record facts from the container reader.
        log: Warning log (malformed headers, fragments).
        counts: Filled with counts of frames that produce no row (``non_ip``, ...).

    Returns:
        One row per IP packet with the raw columns :func:`tracekit.parsers._tcp.finish_tcp` expects.
    """
    off, caplen = pk.data_off, pk.caplen
    end = off + caplen
    bf = _Buf(buf, end)
    l3, ipv = _link(bf, off, pk.linktype)
    non_ip = ipv == 0
    if non_ip.any():
        counts["non_ip"] = counts.get("non_ip", 0) + int(non_ip.sum())
    keep = ~non_ip
    # Headers-only captures keep the IP header; a frame cut before its fixed IP header is unusable.
    short = keep & ~bf.ok(l3, 20)
    short6 = keep & (ipv == 6) & ~bf.ok(l3, 40)
    bad_ip = short | short6
    if bad_ip.any():
        log.add("W-MALFORMED", "packets too short for their IP header (skipped)", count=int(bad_ip.sum()),
                frame=int(pk.frame[bad_ip][0]))
        counts["malformed"] = counts.get("malformed", 0) + int(bad_ip.sum())
    keep &= ~bad_ip
    idx = np.nonzero(keep)[0]
    l3, ipv, bf = l3[idx], ipv[idx], _Buf(buf, end[idx])
    n = len(idx)
    is4 = ipv == 4

    # ---- IPv4 / IPv6 network header
    ihl = np.where(is4, (bf.u8(l3) & 0x0F) * 4, 40)
    tot = np.where(is4, bf.be16(l3 + 2), bf.be16(l3 + 4) + 40)
    nh = np.where(is4, bf.u8(l3 + 9), bf.u8(l3 + 6))
    frag_off = np.where(is4, bf.be16(l3 + 6) & 0x1FFF, 0)
    src_lo = np.where(is4, bf.be32(l3 + 12), (bf.be32(l3 + 16) << 32) | bf.be32(l3 + 20))
    src_hi = np.where(is4, 0, (bf.be32(l3 + 8) << 32) | bf.be32(l3 + 12))
    dst_lo = np.where(is4, bf.be32(l3 + 16), (bf.be32(l3 + 32) << 32) | bf.be32(l3 + 36))
    dst_hi = np.where(is4, 0, (bf.be32(l3 + 24) << 32) | bf.be32(l3 + 28))
    bad = is4 & ((ihl < 20) | (tot < ihl))
    l4 = l3 + ihl
    # IPv6 extension headers: a bounded walk of the next-header chain.
    ext = ~is4 & np.isin(nh, _IPV6_EXT)
    frag6 = np.zeros(n, dtype=bool)
    for _ in range(_MAX_EXT):
        if not ext.any():
            break
        hlen = np.where(nh == 44, 8, np.where(nh == 51, (bf.u8(l4 + 1) + 2) * 4, (bf.u8(l4 + 1) + 1) * 8))
        frag6 |= ext & (nh == 44) & ((bf.be16(l4 + 2) & 0xFFF8) != 0)
        ok = bf.ok(l4, 2)
        new_nh = bf.u8(l4)
        nh = np.where(ext & ok, new_nh, np.where(ext, 59, nh))  # 59: no next header
        l4 = np.where(ext & ok, l4 + hlen, l4)
        ext = ext & ok & np.isin(nh, _IPV6_EXT)
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
    # TCP fixed header needs 20 captured bytes; the data offset must fit inside the segment.
    doff = (bf.u8(l4 + 12) >> 4) * 4
    tcp_bad = is_tcp & (~bf.ok(l4, 20) | (doff < 20) | (doff > l4len))
    if tcp_bad.any():
        log.add("W-MALFORMED", "TCP segments with a bad data offset or cut before the TCP header (kept as 'other')",
                count=int(tcp_bad.sum()))
        is_tcp &= ~tcp_bad
    udp_bad = is_udp & ~bf.ok(l4, 8)
    is_udp &= ~udp_bad

    proto = np.where(is_tcp, 0, np.where(is_udp, 1, 2)).astype(np.int8)
    has_ports = is_tcp | is_udp
    sport = np.where(has_ports, bf.be16(l4), -1)
    dport = np.where(has_ports, bf.be16(l4 + 2), -1)
    payload = np.where(is_tcp, l4len - doff, np.where(is_udp, np.maximum(l4len - 8, 0), 0))

    cols: dict[str, object] = {
        "frame": pk.frame[idx],
        "_ts": pk.ts_ns[idx],
        "proto": pl.Series(np.array(["tcp", "udp", "other"])[proto]),
        "size": pk.origlen[idx],
        "caplen": caplen[idx],
        "payload": payload,
        "sport": pl.Series(sport).replace(-1, None),
        "dport": pl.Series(dport).replace(-1, None),
    }
    df = pl.DataFrame(cols)
    df = df.with_columns(
        src=_addr_strings(ipv, src_hi, src_lo),
        dst=_addr_strings(ipv, dst_hi, dst_lo),
    )

    # ---- TCP fixed fields and options
    t = np.nonzero(is_tcp)[0]
    seq = np.full(n, -1, dtype=np.int64)
    ack = np.full(n, -1, dtype=np.int64)
    flags = np.full(n, -1, dtype=np.int64)
    win = np.full(n, -1, dtype=np.int64)
    mss = np.full(n, -1, dtype=np.int64)
    wsc = np.full(n, -1, dtype=np.int64)
    tsv = np.full(n, -1, dtype=np.int64)
    tse = np.full(n, -1, dtype=np.int64)
    sack_rows: list[np.ndarray] = []
    sack_l: list[np.ndarray] = []
    sack_r: list[np.ndarray] = []
    if len(t):
        b = l4[t]
        seq[t] = bf.be32(b + 4)
        ack[t] = bf.be32(b + 8)
        flags[t] = bf.u8(b + 13)
        win[t] = bf.be16(b + 14)
        # Options walk: at most 40 option bytes, every step advances by >= 1 byte, so <= 40 steps.
        hdr_end = np.minimum(b + doff[t], bf.end[t])
        pos = b + 20
        act = pos < hdr_end
        tt = t
        for _ in range(40):
            if not act.any():
                break
            sel = np.nonzero(act)[0]
            p = pos[sel]
            he = hdr_end[sel]
            kind = bf.u8(p)
            olen = np.where(kind == 1, 1, bf.u8(p + 1))
            # kind 0 ends the list; a length < 2 (except NOP) or past the header ends parsing
            # (the classic infinite-loop trap of zero-length options).
            stop = (kind == 0) | ((kind != 1) & ((olen < 2) | (p + olen > he)))
            rows = tt[sel]
            m = ~stop & (kind == 2) & (olen == 4)
            mss[rows[m]] = bf.be16(p[m] + 2)
            m = ~stop & (kind == 3) & (olen == 3)
            wsc[rows[m]] = bf.u8(p[m] + 2)
            m = ~stop & (kind == 8) & (olen == 10)
            tsv[rows[m]] = bf.be32(p[m] + 2)
            tse[rows[m]] = bf.be32(p[m] + 6)
            m = ~stop & (kind == 5) & (olen >= 10) & ((olen - 2) % 8 == 0)
            if m.any():
                nblk = (olen[m] - 2) // 8
                for k in range(4):
                    mk = nblk > k
                    if not mk.any():
                        break
                    q = p[m][mk] + 2 + 8 * k
                    sack_rows.append(rows[m][mk])
                    sack_l.append(bf.be32(q))
                    sack_r.append(bf.be32(q + 4))
            newpos = p + np.where(stop, 0, olen)
            pos[sel] = newpos
            act[sel] = ~stop & (newpos < he)
        if wsc.max(initial=-1) > 14:
            log.add("W-WSCALE", "window scale options above 14 (clamped to 14, RFC 7323)",
                    count=int((wsc > 14).sum()))

    def _nullable(a: np.ndarray, dtype: pl.DataType) -> pl.Series:
        return pl.Series(a).replace(-1, None).cast(dtype)

    df = df.with_columns(
        seq_raw=_nullable(seq, pl.Int64),
        ack_raw=_nullable(ack, pl.Int64),
        flags=_nullable(flags, pl.UInt8),
        win_raw=_nullable(win, pl.Int64),
        mss=_nullable(mss, pl.UInt16),
        wscale=_nullable(np.where(wsc > 14, 14, wsc), pl.UInt8),
        ts_val=_nullable(tsv, pl.UInt32),
        ts_ecr=_nullable(tse, pl.UInt32),
    )
    if sack_rows:
        sk = pl.DataFrame({
            "_i": np.concatenate(sack_rows),
            "l": np.concatenate(sack_l),
            "r": np.concatenate(sack_r),
        }).with_columns(b=pl.concat_arr("l", "r")).group_by("_i").agg(pl.col("b").alias("sack_raw"))
        df = (
            df.with_row_index("_i")
            .with_columns(pl.col("_i").cast(pl.Int64))
            .join(sk.with_columns(pl.col("_i").cast(pl.Int64)), on="_i", how="left", maintain_order="left")
            .drop("_i")
        )
    else:
        df = df.with_columns(sack_raw=pl.lit(None, dtype=pl.List(pl.Array(pl.Int64, 2))))
    return df
