"""The default throughput bin (kept apart so that :mod:`.throughput` can import it while the package initialises)."""

from __future__ import annotations

import math


def default_bin(duration_s: float) -> float:
    """A round throughput bin (1, 2 or 5 × 10^k s) giving about 100 bins over ``duration_s`` (at least 1 ms)."""
    if not math.isfinite(duration_s) or duration_s <= 0:
        return 1.0
    raw = max(duration_s / 100.0, 1e-3)
    exp = math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10**exp >= raw * 0.999:
            return float(f"{m * 10**exp:.3g}")
    return float(10 ** (exp + 1))  # pragma: no cover - the loop always returns
