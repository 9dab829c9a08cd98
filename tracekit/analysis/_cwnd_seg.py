"""Array helpers of the cwnd analysis (its rows: every data direction one contiguous run).

No Python loop runs per row: the passes that walk the rows (the ACK stream, the loss events,
the pipe and its filter, the phases) are in the Rust core (src/state/cwnd/); these helpers hand
it contiguous arrays.
"""

from __future__ import annotations

import numpy as np


def as_i64(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous int64 array (the core's input; copied only when it is not one)."""
    return np.ascontiguousarray(x, dtype=np.int64)


def as_f64(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous float64 array."""
    return np.ascontiguousarray(x, dtype=np.float64)


def as_bool(x: np.ndarray) -> np.ndarray:
    """``x`` as a contiguous boolean array."""
    return np.ascontiguousarray(x, dtype=bool)
