"""Port pairs and their reuse: the grouping steps of :mod:`tracekit.parsers._tcp`.

A connection is a (protocol, port pair) unless the pair was reused (Wireshark's rule, see
:func:`epochs`). Pairs get dense ids in order of first appearance, so that every per-pair or
per-(pair, side) table is a small array indexed by the id.
"""

from __future__ import annotations

import numpy as np

from tracekit.parsers._dense import dense_ids, first_rows, lookup, sorted_unique
from tracekit.schema import SYN

TWO32 = 1 << 32


def pair_groups(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of the ``(lo, hi)`` pairs, numbered by first appearance.

    Args:
        lo, hi: Non-negative int64 pair keys of the rows that have a pair (``lo`` is reused).

    Returns:
        (pair id of every row as uint32, first row of each pair).
    """
    if not len(lo):
        return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.int64)
    k = int(hi.max()) + 1
    if (int(lo.max()) + 1) * k >= 1 << 62:
        # Too wide for one int64 key: number each side's values first (they are < the rows).
        lo = lookup(lo, sorted_unique(lo)).astype(np.int64)
        uh = sorted_unique(hi)
        hi = lookup(hi, uh)
        k = len(uh)
    lo *= k
    lo += hi
    return dense_ids(lo)


def epochs(pair: np.ndarray, pfirst: np.ndarray, side: np.ndarray, syn: np.ndarray, flags: np.ndarray,
           seq: np.ndarray, l4: np.ndarray) -> np.ndarray | None:
    """The first row of each row's connection, splitting a port pair where it was reused.

    Wireshark's rule (packet-tcp.c, 4.0): a pure SYN whose sequence number differs from the
    base its sender already has *in the port pair's current conversation* opens a new
    conversation. That base is the sequence number of the sender's first segment in the
    conversation (minus 1 unless it was a SYN); a sender with no segment yet has none.

    Only SYNs whose sender already sent something on the port pair can split, so the loop
    below runs over those few SYNs (retransmitted SYNs and reused ports), never over packets.

    Args:
        pair: Dense pair id of every row; pfirst: first row of each pair.
        side: Which endpoint of its pair sent the row.
        syn: Pure SYN rows. flags, seq: TCP flags and raw sequence numbers.
        l4: Rows with a pair.

    Returns:
        None when no pair was reused (each pair is one connection), else the first row of every
        row's connection (-1 on rows without a pair).
    """
    syn_rows = np.nonzero(syn)[0]
    # A SYN that opens its port pair has nothing before it: it cannot split (the usual case).
    maybe = syn_rows[syn_rows != pfirst[pair[syn_rows]]]
    if not len(maybe):
        return None
    npair = len(pfirst)
    hit = np.zeros(npair, dtype=bool)
    hit[pair[maybe]] = True
    sel = np.nonzero(hit[pair] & l4)[0]  # the rows of those SYNs' port pairs
    g_sel = pair[sel].astype(np.int64)
    g_sel *= 2
    g_sel += side[sel]  # (port pair, sender side)
    first_side = first_rows(g_sel, sel, 2 * npair, len(pair))
    g_maybe = pair[maybe].astype(np.int64) * 2 + side[maybe]
    cand = maybe[first_side[g_maybe] < maybe]
    if not len(cand):
        return None
    order = np.argsort(g_sel, kind="stable")
    rows_g, g_sorted = sel[order], g_sel[order]  # rows grouped by (pair, side), ascending in each
    del g_sel, order
    current: dict[int, int] = {}
    splits: list[int] = []
    for r in cand.tolist():
        k = int(pair[r])
        e = current.get(k, int(pfirst[k]))
        gg = 2 * k + int(side[r])
        i0, i1 = np.searchsorted(g_sorted, [gg, gg + 1])
        j = i0 + int(np.searchsorted(rows_g[i0:i1], e))
        if j >= i1 or rows_g[j] >= r:
            continue  # the sender has no segment in this conversation yet: the SYN sets its base
        f = int(rows_g[j])
        ref = int(seq[f]) - (0 if flags[f] & SYN else 1)
        if (int(seq[r]) - ref) % TWO32:
            splits.append(r)
            current[k] = r
    if not splits:
        return None
    n = len(pair)
    pair = pair.astype(np.int64)
    key_first = np.where(l4, pfirst[pair], -1)
    starts = np.array(splits, dtype=np.int64)
    # rows belong to the last split at or before them on the same port pair
    s_key = pair[starts] * n + starts
    s_order = np.argsort(s_key)
    s_key, starts = s_key[s_order], starts[s_order]
    pos = np.searchsorted(s_key, pair * n + np.arange(n, dtype=np.int64), side="right") - 1
    cand_first = starts[np.maximum(pos, 0)]
    same = (pos >= 0) & (pair[cand_first] == pair) & l4
    return np.where(same, cand_first, key_first)
