"""Array helpers of the cwnd analysis (its rows: every data direction one contiguous run).

No Python loop runs per row: the passes that walk the rows (the ACK stream, running maxima,
the max filter, the phases) are in the Rust core (src/state/cwnd.rs); these helpers build
row ranges and hand it contiguous arrays.
"""

from __future__ import annotations

import numpy as np


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


def as_i64(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous int64 array (the core's input; copied only when it is not one)."""
    return np.ascontiguousarray(x, dtype=np.int64)


def as_f64(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous float64 array."""
    return np.ascontiguousarray(x, dtype=np.float64)


def as_bool(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous boolean array."""
    return np.ascontiguousarray(x, dtype=bool)
