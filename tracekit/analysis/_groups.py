"""Segmented (per-group) cumulative operations on numpy arrays, the fast path of the analyses.

Polars window expressions (``.over``) and ``join_asof(..., by=...)`` cost tens to hundreds
of milliseconds per call on a million rows; the per-direction state of a capture needs a
dozen of them. Here rows are put once into *grouped order* (stable sort by a group id), where
every group is one contiguous run, and cumulative maxima, sums, shifts and forward fills
become single numpy passes with resets at the group starts. No Python loop runs per row or
per group.
"""

from __future__ import annotations

import numpy as np

#: Stand-in for "missing" in int64 arrays (below any sequence number or time in ns).
MISSING = -(1 << 62)
_BIG = 1 << 44  # values must lie in (-2^43, 2^43); group ranks up to 2^18 keep x + rank*_BIG in int64


def _cummax_offsets(x: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Cumulative maximum of int64 ``x`` within the runs that start where ``first`` is True.

    Each run is lifted by its number × 2^44, so one ``np.maximum.accumulate`` serves all of them
    (values are clipped to +-2^43, far beyond any relative sequence number or time in ns);
    :data:`MISSING` entries are ignored (they stay MISSING until a value appears). Over 2^18
    runs the offsets would overflow: the runs are then accumulated one by one.
    """
    rank = np.cumsum(first) - 1
    if len(rank) and rank[-1] >= (1 << 18):
        cuts = np.flatnonzero(first)[1:]
        return np.concatenate([np.maximum.accumulate(p) for p in np.split(x, cuts)])
    off = rank.astype(np.int64) * _BIG
    y = np.where(x == MISSING, -(_BIG // 2), np.clip(x, -(_BIG // 2) + 1, _BIG // 2 - 1))
    m = np.maximum.accumulate(y + off) - off
    return np.where(m == -(_BIG // 2), MISSING, m)


#: Up to this many groups, segmented scans loop over the groups (one numpy call each, no offsets).
_LOOP_GROUPS = 256


def _bisect_bounds(gid: np.ndarray, order: np.ndarray, most: int) -> np.ndarray | None:
    """Where the group changes along a grouped order, found by bisection (no pass over the rows).

    A known order with few groups needs a few hundred probes instead of a count over every
    row; None when there are more than ``most`` groups (then counting is cheaper).
    """
    n = len(order)
    cuts: list[int] = []
    todo = [(0, n - 1, int(gid[order[0]]), int(gid[order[n - 1]]))]
    while todo:
        lo, hi, glo, ghi = todo.pop()
        if glo == ghi:
            continue  # sorted: one group throughout
        if hi == lo + 1:
            cuts.append(hi)
            if len(cuts) >= most:
                return None
            continue
        mid = (lo + hi) // 2
        gm = int(gid[order[mid]])
        todo += [(lo, mid, glo, gm), (mid, hi, gm, ghi)]
    return np.array([0, *sorted(cuts)], dtype=np.intp)


class Segments:
    """Rows in grouped order (a stable sort by group id) with explicit group bounds.

    Keeps only the group bounds (no per-row rank or start arrays) and loops over the groups
    for the scans when there are few of them; many groups share one offset accumulate.

    Args:
        gid: Group id of every row (non-negative integers), in the frame's order.
        order: The grouped order if already known (a stable argsort of ``gid``; kept in its
            dtype: index with :meth:`rows` per group, or convert once for whole-frame gathers).
    """

    def __init__(self, gid: np.ndarray, order: np.ndarray | None = None) -> None:
        n = len(gid)
        if order is None:
            # small ids sort by radix (numpy's stable sort for <= 16-bit integers): linear time
            small = n and int(gid.max()) < (1 << 16)
            order = np.argsort(gid.astype(np.uint16) if small else gid, kind="stable")
        self.order = order
        self.n = n
        self._index: dict[int, int] | None = None
        bounds = _bisect_bounds(gid, self.order, _LOOP_GROUPS) if n else None
        top = int(gid.max()) if n and bounds is None else 0
        if bounds is not None:
            self.starts = bounds
            self.ends = np.r_[bounds[1:], n].astype(np.intp)
            self.keys = gid[self.order[self.starts]]
        elif n and top < 4 * n + 1024:
            # ids are dense enough to count: the groups are the ids that occur, in ascending order
            counts = np.bincount(gid, minlength=top + 1)
            self.keys = np.flatnonzero(counts)
            lengths = counts[self.keys]
            self.ends = np.cumsum(lengths).astype(np.intp)
            self.starts = self.ends - lengths
            self.keys = self.keys.astype(gid.dtype)
        else:
            gs = gid[self.order]
            cut = np.flatnonzero(gs[1:] != gs[:-1]) + 1 if n > 1 else np.zeros(0, np.intp)
            self.starts = np.concatenate(([0], cut)).astype(np.intp) if n else np.zeros(0, np.intp)
            self.ends = np.concatenate((cut, [n])).astype(np.intp) if n else np.zeros(0, np.intp)
            #: group id of each segment
            self.keys = gs[self.starts] if n else gs[:0]

    def find(self, key: int) -> int | None:
        """The segment number of group ``key``, or None when no row has it."""
        if self._index is None:
            self._index = {int(k): j for j, k in enumerate(self.keys.tolist())}
        return self._index.get(int(key))

    def rows(self, j: int) -> np.ndarray:
        """The frame rows of segment ``j`` (ascending), as an index array."""
        return self.order[self.starts[j]:self.ends[j]].astype(np.intp, copy=False)

    @property
    def first(self) -> np.ndarray:
        """True on the first row (grouped order) of every group."""
        f = np.zeros(self.n, dtype=bool)
        f[self.starts] = True
        return f

    def back(self, x: np.ndarray) -> np.ndarray:
        """``x`` (grouped order) back in frame order."""
        out = np.empty_like(x)
        out[self.order] = x
        return out

    def cummax(self, x: np.ndarray, *, shift: bool = False, missing: int = MISSING) -> np.ndarray:
        """Cumulative maximum within groups (``x`` in grouped order, any integer dtype).

        Args:
            x: Values in grouped order; ``missing`` (below every real value) means none yet.
            shift: Return the maximum over the *earlier* rows of the group (``missing`` on its first row).
            missing: The dtype's stand-in for "none" (:data:`MISSING` for int64).

        Returns:
            A new array of ``x``'s dtype.
        """
        out = np.empty_like(x)
        if self.n == 0:
            return out
        if len(self.starts) <= _LOOP_GROUPS:
            for s, e in zip(self.starts.tolist(), self.ends.tolist(), strict=False):
                if shift:
                    out[s] = missing
                    if e - s > 1:
                        np.maximum.accumulate(x[s:e - 1], out=out[s + 1:e])
                else:
                    np.maximum.accumulate(x[s:e], out=out[s:e])
            return out
        # many groups: one accumulate over offset groups
        m = _cummax_offsets(np.where(x == missing, MISSING, x.astype(np.int64)), self.first)
        m = np.where(m == MISSING, missing, m).astype(x.dtype)
        if not shift:
            return m
        out[1:] = m[:-1]
        out[self.starts] = missing
        return out

    def shift1(self, x: np.ndarray, fill: object = MISSING) -> np.ndarray:
        """The previous row's value within the group (``fill`` on a group's first row)."""
        y = np.empty_like(x)
        if self.n:
            y[1:] = x[:-1]
            y[self.starts] = fill
        return y
