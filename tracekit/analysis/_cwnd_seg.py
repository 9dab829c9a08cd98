"""Segmented numpy steps of the cwnd analysis: rows are grouped in contiguous segments.

The cwnd estimate keeps every data direction as one contiguous run of rows (sorted once).
The searches here replace polars ``join_asof``: within segments (per segment when they are
few, else on one axis with offsets). No Python loop runs per row; the passes that walk the
rows (running maxima, the ACK stream, the max filter) are in the Rust core.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

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


def as_i64(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous int64 array (the core's input; copied only when it is not one)."""
    return np.ascontiguousarray(x, dtype=np.int64)


def as_f64(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous float64 array."""
    return np.ascontiguousarray(x, dtype=np.float64)


def as_bool(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous boolean array."""
    return np.ascontiguousarray(x, dtype=bool)
