"""TCP throughput models: the textbook numbers and the models' known limits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tracekit.models import bdp_bytes, mathis, padhye, per_from_ber, window_limited


def test_textbook_numbers() -> None:
    """64 KiB over 100 ms; a 1500-byte packet at BER 1e-7; Mathis at that loss rate."""
    assert window_limited(65535, 0.1) == pytest.approx(5.24e6, rel=1e-3)
    assert window_limited(65535, 0.1) == 65535 * 8 / 0.1
    per = per_from_ber(1e-7, 1500 * 8)
    assert per == pytest.approx(1.2e-3, rel=1e-3)
    assert mathis(1.2e-3, 1460, 0.1) == pytest.approx(4.12e6, rel=5e-3)
    assert mathis(per, 1460, 0.1) == pytest.approx(4.13e6, rel=5e-3)
    assert bdp_bytes(1e6, 0.2) == 25000.0
    assert bdp_bytes(10e6, 0.05) * 8 / 0.05 == pytest.approx(10e6)  # a window of one BDP fills the link


def test_per_from_ber_keeps_precision_for_tiny_rates() -> None:
    """(1 − ber)^bits in plain floats loses every digit at BER 1e-12; expm1/log1p does not."""
    assert per_from_ber(1e-12, 12000) == pytest.approx(1.2e-8, rel=1e-6)
    assert per_from_ber(0.0, 12000) == 0.0
    assert per_from_ber(1.0, 8) == 1.0


def test_padhye_tends_to_mathis_without_timeouts() -> None:
    """T0 → 0 and p → 0: PFTK's congestion-avoidance term is Mathis with c = √(3/(2b))."""
    p = np.array([1e-6, 1e-5, 1e-4])
    ratio_b1 = padhye(p, 1460, 0.1, rto_s=0.0, b=1) / mathis(p, 1460, 0.1)
    ratio_b2 = padhye(p, 1460, 0.1, rto_s=0.0, b=2) / mathis(p, 1460, 0.1, c=math.sqrt(3 / 4))
    print("padhye/mathis (b=1):", ratio_b1, " (b=2):", ratio_b2)
    assert np.all(np.abs(ratio_b1 - 1) < 0.01) and np.all(np.abs(ratio_b2 - 1) < 0.01)
    # and the gap closes as p shrinks
    assert abs(ratio_b1[0] - 1) < abs(ratio_b1[-1] - 1)


def test_padhye_matches_its_own_approximation() -> None:
    """Eq. 31 against the paper's closed-form approximation (eq. 32), where the latter is accurate."""
    p = np.array([1e-4, 1e-3, 1e-2])
    rtt, t0, b, mss = 0.1, 1.0, 2, 1460
    approx = (
        mss * 8 / (rtt * np.sqrt(2 * b * p / 3) + t0 * np.minimum(1, 3 * np.sqrt(3 * b * p / 8)) * p * (1 + 32 * p**2))
    )
    full = padhye(p, mss, rtt, t0, b)
    assert np.all(np.abs(full / approx - 1) < 0.03)
    # timeouts cost throughput, more as losses grow
    no_to = padhye(p, mss, rtt, 0.0, b)
    assert np.all(full < no_to)
    assert (1 - full / no_to)[-1] > 0.1 > (1 - full / no_to)[0]


def test_padhye_never_beats_the_window_limit() -> None:
    p = np.logspace(-8, -0.5, 60)
    for wmax in (16 * 1460, 65535, 1 << 20):
        b = padhye(p, 1460, 0.1, 1.0, wmax_bytes=wmax)
        limit = window_limited(wmax, 0.1)
        assert np.all(b <= limit * (1 + 1e-12)), wmax
        assert b[0] == pytest.approx(limit, rel=0.01)  # losses vanish: the window is all that limits
    assert padhye(0.0, 1460, 0.1, 1.0, wmax_bytes=65535) == window_limited(65535, 0.1)
    assert padhye(0.0, 1460, 0.1, 1.0) == math.inf and mathis(0.0, 1460, 0.1) == math.inf


def test_models_take_arrays_and_broadcast() -> None:
    rtt = np.array([0.01, 0.1, 1.0])
    out = mathis(1e-3, 1460, rtt)
    assert out.shape == (3,) and np.allclose(out * rtt, out[0] * rtt[0])
    grid = padhye(np.array([[1e-3], [1e-2]]), 1460, rtt, 4 * rtt)
    assert grid.shape == (2, 3) and np.all(grid[0] > grid[1])
    assert isinstance(window_limited(1000, 0.1), float)
