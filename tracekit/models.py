"""Closed-form TCP throughput models, for comparing a measured flow with theory.

Every function takes and returns SI units — bytes, seconds, bits per second —
with the unit in the argument name. Each model is one plain-Python function of
floats (IEEE semantics: a division by zero gives ``inf`` or ``nan``, never an
error), so the flows summary computes it without numpy
(:mod:`tracekit._flowrows`); given numpy arrays (or anything
``numpy.asarray`` takes) the same function runs element by element, broadcasting
as numpy does. Numbers in give a float out.

References:

* window limit: a sender can have at most one window in flight per round trip.
* Mathis, Semke, Mahdavi, Ott, "The macroscopic behavior of the TCP congestion
  avoidance algorithm", CCR 27(3), 1997: ``rate = C · MSS / (RTT · √p)``, ``C = √(3/2)``
  for an ACK per segment.
* Padhye, Firoiu, Towsley, Kurose, "Modeling TCP throughput: a simple model and
  its empirical validation", SIGCOMM 1998 ("PFTK"): the full model with timeouts
  and a receiver-window limit, eq. (31) of the SIGCOMM paper (eq. (32) is its
  approximation, not used here).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real
from typing import Any

FloatOut = Any  # float for numbers in, a numpy array (or numpy float for 0-d input) for arrays in
#: the constant of Mathis et al. (1997) for Reno with an ACK per segment: sqrt(3/2)
MATHIS_C = math.sqrt(1.5)

__all__ = ["bdp_bytes", "mathis", "padhye", "per_from_ber", "window_limited"]


def _each(f: Callable[..., float], *args: Any) -> FloatOut:
    """``f`` of plain floats; over arrays element by element (numpy imported only then), broadcast."""
    if all(type(a) is float or isinstance(a, Real) for a in args):  # (the type first: the ABC check is slow)
        return f(*(float(a) for a in args))
    import numpy as np

    out = np.vectorize(f, otypes=[float])(*(np.asarray(a, dtype=float) for a in args))
    return out[()] if out.ndim == 0 else out


# IEEE arithmetic in plain floats, as numpy does it (Python raises where IEEE gives inf or nan)
def _div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        return math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1.0, b)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _log1p(x: float) -> float:
    return math.log1p(x) if x > -1 else (-math.inf if x == -1 else math.nan)


def _expm1(x: float) -> float:
    try:
        return math.expm1(x)
    except OverflowError:
        return math.inf


def _pow(x: float, k: int) -> float:
    try:
        return x**k
    except OverflowError:
        return math.copysign(math.inf, x) if k % 2 else math.inf


def _min(a: float, b: float) -> float:
    """``numpy.minimum``: nan when either is nan."""
    return math.nan if a != a or b != b else min(a, b)


def window_limited(window_bytes: Any, rtt_s: Any) -> FloatOut:
    """Throughput ceiling of a window-limited sender: one window per round trip.

    Args:
        window_bytes: The (advertised or congestion) window, bytes.
        rtt_s: Round-trip time, seconds.

    Returns:
        Bits per second (``window × 8 / rtt``); ``inf`` where ``rtt_s`` is 0.

    Example:
        >>> round(window_limited(65535, 0.1) / 1e6, 2)   # the 64 KiB classic
        5.24
    """
    return _each(_window_limited, window_bytes, rtt_s)


def _window_limited(w: float, r: float) -> float:
    return _div(w * 8.0, r)


def mathis(p: Any, mss_bytes: Any, rtt_s: Any, c: Any = MATHIS_C) -> FloatOut:
    """Mathis et al. (1997) steady-state Reno throughput: ``c · MSS / (RTT · √p)``.

    Congestion avoidance only (no timeouts, no window limit); ``c = √(3/2)`` for an
    ACK per segment, ``√(3/4)`` with delayed ACKs (b = 2).

    Args:
        p: Loss-event probability per packet (0 < p ≤ 1).
        mss_bytes: Segment size, bytes.
        rtt_s: Round-trip time, seconds.
        c: The model constant.

    Returns:
        Bits per second; ``inf`` where ``p`` is 0.

    Example:
        >>> round(mathis(1.2e-3, 1460, 0.1) / 1e3)   # kbit/s: the textbook's "≈ 4.12 Mbit/s"
        4130
    """
    return _each(_mathis, p, mss_bytes, rtt_s, c)


def _mathis(p: float, mss: float, rtt: float, c: float) -> float:
    return _div(c * mss * 8.0, rtt * _sqrt(p))


def padhye(p: Any, mss_bytes: Any, rtt_s: Any, rto_s: Any, b: Any = 2, wmax_bytes: Any = None) -> FloatOut:
    """The full PFTK model (Padhye et al. 1998, eq. 31): Reno with timeouts and a window cap.

    With ``W = E[W_u] = (2+b)/(3b) + √(8(1-p)/(3bp) + ((2+b)/(3b))²)`` (eq. 13, in
    packets), ``Q(w) = min(1, (1-(1-p)³)(1+(1-p)³(1-(1-p)^(w-3))) / (1-(1-p)^w))``
    (eq. 24, the chance that a loss is detected by a timeout) and
    ``f(p) = 1+p+2p²+4p³+8p⁴+16p⁵+32p⁶`` (eq. 28, the timeout back-off series)::

        W < Wmax:  B = ((1-p)/p + W + Q(W)/(1-p)) / (RTT(bW/2 + 1) + Q(W)·T0·f(p)/(1-p))
        else:      B = ((1-p)/p + Wmax + Q(Wmax)/(1-p))
                       / (RTT(b·Wmax/8 + (1-p)/(p·Wmax) + 2) + Q(Wmax)·T0·f(p)/(1-p))

    in packets per second, times ``MSS × 8``. As ``T0 → 0`` and ``p → 0`` it tends to
    :func:`mathis` with ``c = √(3/(2b))``; with a window it never exceeds
    :func:`window_limited` by more than the model's own rounding (the ``+2`` round
    of the window-limited branch keeps it below).

    Args:
        p: Loss-event probability per packet (0 ≤ p < 1).
        mss_bytes: Segment size, bytes.
        rtt_s: Round-trip time, seconds.
        rto_s: The (first) retransmission timeout T0, seconds.
        b: Segments acknowledged per ACK (2 with delayed ACKs).
        wmax_bytes: The receiver's maximum window, bytes (None: unlimited).

    Returns:
        Bits per second. ``p == 0`` gives the window limit (``inf`` without one).

    Example:
        >>> round(padhye(1e-2, 1460, 0.1, 1.0) / 1e3)   # kbit/s, b = 2
        812
    """
    return _each(_padhye, p, mss_bytes, rtt_s, rto_s, b, math.inf if wmax_bytes is None else wmax_bytes)


def _padhye(pp: float, mss: float, rtt: float, t0: float, bb: float, wmax_bytes: float) -> float:
    wmax = _div(wmax_bytes, mss)
    if pp <= 0.0:  # no losses at all, so only the window limits the sender
        return _div(wmax, rtt) * mss * 8.0
    q1 = 1.0 - pp
    k = _div(2.0 + bb, 3.0 * bb)
    ew = k + _sqrt(_div(8.0 * q1, 3.0 * bb * pp) + k * k)  # eq. 13, packets
    f = 1 + pp + 2 * (pp * pp) + 4 * _pow(pp, 3) + 8 * _pow(pp, 4) + 16 * _pow(pp, 5) + 32 * _pow(pp, 6)
    lp = _log1p(-pp)
    # eq. 24; (1-p)^w via exp/log1p so large windows and tiny p stay accurate
    a3 = -_expm1(3.0 * lp)  # 1-(1-p)^3
    limited = ew >= wmax
    w = wmax if limited else ew
    aw = -_expm1(w * lp)  # 1-(1-p)^w
    q = _min(1.0, _div(a3 * (1.0 + (1.0 - a3) * (-_expm1((w - 3.0) * lp))), aw))
    num = _div(q1, pp) + w + _div(q, q1)
    den = rtt * (bb * w / 8.0 + _div(q1, pp * w) + 2.0) if limited else rtt * (bb * w / 2.0 + 1.0)
    den = den + _div(q * t0 * f, q1)
    return _div(num, den) * mss * 8.0


def per_from_ber(ber: Any, bits: Any) -> FloatOut:
    """Packet error rate from an independent bit error rate: ``1 − (1 − ber)^bits``.

    Args:
        ber: Bit error probability.
        bits: Packet length in bits (e.g. ``1500 * 8``).

    Returns:
        The probability that at least one bit of the packet is in error.

    Example:
        >>> round(per_from_ber(1e-7, 1500 * 8), 6)
        0.001199
    """
    return _each(_per_from_ber, ber, bits)


def _per_from_ber(e: float, n: float) -> float:
    # expm1/log1p: (1-ber)^bits loses every digit for ber ~ 1e-9 in plain floats
    return -_expm1(n * _log1p(-e))


def bdp_bytes(rate_bps: Any, rtt_s: Any) -> FloatOut:
    """Bandwidth-delay product: the bytes in flight needed to fill a path.

    Args:
        rate_bps: Bottleneck rate, bits per second.
        rtt_s: Round-trip time, seconds.

    Returns:
        Bytes (``rate × rtt / 8``).

    Example:
        >>> bdp_bytes(1e6, 0.2)
        25000.0
    """
    return _each(_bdp_bytes, rate_bps, rtt_s)


def _bdp_bytes(rate: float, rtt: float) -> float:
    return rate * rtt / 8.0
