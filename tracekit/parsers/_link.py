"""Link-layer decoding for capture readers: where each packet's network header starts.

Every link type the fast path reads is handled here over a whole chunk of packets at once
(one boolean mask per link type present); the only loop is the bounded walk over VLAN tags.
"""

from __future__ import annotations

import numpy as np

from tracekit.parsers._gather import Gather

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


def link(bf: Gather, off: np.ndarray, lt: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Where the network header starts and which IP version it holds.

    Args:
        bf: Reads over the chunk's packets.
        off: Offset of each packet's first byte.
        lt: Link type of each packet, or one link type for all of them.

    Returns:
        (offset of the network header, -1 when unknown; code: 4 IPv4, 6 IPv6, 0 other), int64.
    """
    n = len(off)
    if isinstance(lt, (int, np.integer)):
        kinds = {int(lt)}
        lt = np.full(n, int(lt), dtype=np.int64)
    else:
        kinds = set(np.unique(lt).tolist())
    if kinds == {LT_ETHERNET}:
        l3, etype = _ethernet(bf, off, bf.end, None)
        return l3, _code(bf, l3, etype)
    l3 = np.full(n, -1, dtype=np.int64)
    etype = np.zeros(n, dtype=np.int64)  # 0x0800 / 0x86DD / other; -1 = decide from version nibble

    if LT_ETHERNET in kinds:
        m = lt == LT_ETHERNET
        l3[m], etype[m] = _ethernet(bf, off[m], bf.end[m], np.nonzero(m)[0])

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
    return l3, _code(bf, l3, etype)


def _ethernet(bf: Gather, off: np.ndarray, em: np.ndarray,
              mi: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(network header offset, ethertype) of Ethernet frames at ``off`` (``mi``: which packets)."""
    pos = off + 12
    et = bf.be16(pos, mi)
    et[~bf.ok(pos, 2, em)] = 0
    # 802.1Q / QinQ tags: each adds 4 bytes; bounded depth.
    for _ in range(_MAX_VLAN):
        tagged = (et == _VLAN_TYPES[0]) | (et == _VLAN_TYPES[1]) | (et == _VLAN_TYPES[2])
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
    return start, et


def _code(bf: Gather, l3: np.ndarray, etype: np.ndarray) -> np.ndarray:
    """4 for IPv4, 6 for IPv6, 0 otherwise, from the link's type field (-1: the version nibble)."""
    code = np.zeros(len(l3), dtype=np.int64)
    code[etype == 0x0800] = 4
    code[etype == 0x86DD] = 6
    guess = np.nonzero(etype == -1)[0]
    if len(guess):
        ver = bf.u8(l3[guess]) >> 4
        code[guess] = np.where(ver == 4, 4, np.where(ver == 6, 6, 0))
    code[l3 < 0] = 0
    return code
