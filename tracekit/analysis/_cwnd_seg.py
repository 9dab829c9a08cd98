"""Segmented numpy steps of the cwnd analysis: rows are grouped in contiguous segments.

The cwnd estimate keeps every data direction as one contiguous run of rows (sorted once)
and restarts its running quantities at loss events. The steps here replace polars
``over()`` windows and ``join_asof`` with numpy passes: searches within segments (per
segment when they are few, else on one axis with offsets), a running maximum restarting at
segment starts and a forward fill. No Python loop runs per row.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

#: Stand-in for "no value" in int64 arrays (as :data:`tracekit.analysis._groups.MISSING`).
MISSING = -(1 << 62)
_LIMIT = 1 << 62


def count_below(keys: np.ndarray, queries: np.ndarray, side: Literal["left", "right"] = "left",
                presorted: bool = False) -> np.ndarray:
    """``np.searchsorted(keys, queries, side)``, searching per key when keys are fewer and queries sorted.

    A binary search per query costs ~20 ns; with far fewer keys than (sorted) queries each key
    is placed among the queries instead and the counts are spread by a cumulative sum.
    """
    if keys.size * 4 >= queries.size or not (presorted or not (queries[1:] < queries[:-1]).any()):
        return np.searchsorted(keys, queries, side=side)
    # key k lies below query q ("left": k < q, "right": k <= q) from the first q it precedes on
    at = np.searchsorted(queries, keys, side="right" if side == "left" else "left")
    out = np.bincount(at, minlength=queries.size + 1)
    np.cumsum(out, out=out)
    return out[:-1]


def cummax(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Running maximum of int64 ``x`` restarting at the rows ``starts`` (sorted, first 0).

    Few segments take one accumulate each; many are lifted apart by their number × the
    value span so one ``np.maximum.accumulate`` serves all (values too spread for that,
    never in a real trace, fall back to one accumulate per segment).
    """
    n = x.size
    out = np.empty_like(x)
    if n == 0:
        return out
    starts = starts[starts < n]  # (empty segments at the end)
    ends = np.append(starts[1:], n)
    span = int(x.max()) - int(x.min()) + 1 if starts.size > 64 else 0
    if starts.size <= 64 or span * starts.size >= _LIMIT:
        for a, b in zip(starts.tolist(), ends.tolist(), strict=False):
            np.maximum.accumulate(x[a:b], out=out[a:b])
        return out
    off = np.zeros(n, dtype=np.int64)
    off[starts[1:]] = span
    np.cumsum(off, out=off)
    off -= int(x.min())
    np.add(x, off, out=out)
    np.maximum.accumulate(out, out=out)
    out -= off
    return out


def shift1(x: np.ndarray, starts: np.ndarray, fill: object) -> np.ndarray:
    """The previous row's value within the segment (``fill`` on a segment's first row)."""
    y = np.empty_like(x)
    if x.size:
        y[1:] = x[:-1]
        y[starts[starts < x.size]] = fill
    return y


def ffill_index(valid: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Index of the latest valid row at or before each row within its segment, else -1.

    Args:
        valid: Rows that carry a value.
        starts: First row of every segment (sorted, first 0).
    """
    n = valid.size
    # 2i + 1 for a valid row, 2s for an invalid segment start: a running max that a
    # segment start without a value cuts off (its even number beats every earlier row)
    idx = np.where(valid, np.arange(1, 2 * n, 2), -1)
    starts = starts[starts < n]
    cut = starts[~valid[starts]]
    idx[cut] = 2 * cut
    np.maximum.accumulate(idx, out=idx)
    return np.where(idx & 1, idx >> 1, -1)


def ranges(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rows ``a[k]:b[k]`` of every k, concatenated (a vectorised ``concatenate(arange(...))``)."""
    lens = b - a
    keep = lens > 0
    a, lens = a[keep], lens[keep]
    if a.size == 0:
        return np.empty(0, dtype=np.int64)
    step = np.ones(int(lens.sum()), dtype=np.int64)
    step[0] = a[0]
    ends = np.cumsum(lens)[:-1]
    step[ends] = a[1:] - (a[:-1] + lens[:-1] - 1)
    return np.cumsum(step)


def offset_keys(vals: np.ndarray, code: np.ndarray, x: np.ndarray, xcode: np.ndarray, nd: int
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """int64 keys ``code × span + value`` for two arrays, ordered like (direction, value); None if too spread."""
    vmin = min(int(vals.min()), int(x.min()))
    span = max(int(vals.max()), int(x.max())) - vmin + 1
    if span * (nd + 1) >= _LIMIT:
        return None
    return code.astype(np.int64) * span + (vals - vmin), xcode.astype(np.int64) * span + (x - vmin)


def below(keys: np.ndarray, klo: np.ndarray, khi: np.ndarray, q: np.ndarray, qlo: np.ndarray, qhi: np.ndarray,
           side: Literal["left", "right"] = "left") -> np.ndarray | None:
    """Per query: ``searchsorted`` of its value among the keys of its own direction, as a global key index.

    Keys and queries are grouped by direction (``klo:khi``, ``qlo:qhi``) and sorted within it.
    Few directions take one search each; many are put on one axis by offsets (None when the
    values are too spread for that).
    """
    nd = klo.size
    if nd <= 64:
        out = np.empty(q.size, dtype=np.int64)
        for c in range(nd):
            a, b = int(qlo[c]), int(qhi[c])
            if b > a:
                out[a:b] = count_below(keys[klo[c]:khi[c]], q[a:b], side=side, presorted=True) + klo[c]
        return out
    keyed = offset_keys(keys, np.repeat(np.arange(nd), khi - klo), q, np.repeat(np.arange(nd), qhi - qlo), nd)
    return None if keyed is None else count_below(*keyed, side=side, presorted=True)
