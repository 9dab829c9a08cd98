"""Closed-form TCP throughput models, for comparing a measured flow with theory.

Every function takes and returns SI units — bytes, seconds, bits per second —
with the unit in the argument name, and accepts numpy arrays (or anything
``numpy.asarray`` takes) as well as scalars, broadcasting as numpy does. Scalars
in give a numpy float out.

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

from typing import Any

import numpy as np
import numpy.typing as npt

ArrayLike = npt.ArrayLike
FloatOut = Any  # np.float64 for scalar input, np.ndarray for array input
#: the constant of Mathis et al. (1997) for Reno with an ACK per segment: sqrt(3/2)
MATHIS_C = np.sqrt(1.5)

__all__ = ["bdp_bytes", "mathis", "padhye", "per_from_ber", "window_limited"]


def _out(x: np.ndarray) -> FloatOut:
    """Return a numpy scalar for 0-d results, the array otherwise."""
    return x[()] if x.ndim == 0 else x


def window_limited(window_bytes: ArrayLike, rtt_s: ArrayLike) -> FloatOut:
    """Throughput ceiling of a window-limited sender: one window per round trip.

    Args:
        window_bytes: The (advertised or congestion) window, bytes.
        rtt_s: Round-trip time, seconds.

    Returns:
        Bits per second (``window × 8 / rtt``); ``inf`` where ``rtt_s`` is 0.

    Example:
        >>> round(float(window_limited(65535, 0.1)) / 1e6, 2)   # the 64 KiB classic
        5.24
    """
    w = np.asarray(window_bytes, dtype=float)
    r = np.asarray(rtt_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _out(np.asarray(w * 8.0 / r))


def mathis(p: ArrayLike, mss_bytes: ArrayLike, rtt_s: ArrayLike, c: ArrayLike = MATHIS_C) -> FloatOut:
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
        >>> round(float(mathis(1.2e-3, 1460, 0.1)) / 1e3)   # kbit/s: the textbook's "≈ 4.12 Mbit/s"
        4130
    """
    pp = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _out(np.asarray(np.asarray(c, dtype=float) * np.asarray(mss_bytes, dtype=float) * 8.0
                               / (np.asarray(rtt_s, dtype=float) * np.sqrt(pp))))


def padhye(
    p: ArrayLike,
    mss_bytes: ArrayLike,
    rtt_s: ArrayLike,
    rto_s: ArrayLike,
    b: ArrayLike = 2,
    wmax_bytes: ArrayLike | None = None,
) -> FloatOut:
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
        >>> round(float(padhye(1e-2, 1460, 0.1, 1.0)) / 1e3)   # kbit/s, b = 2
        812
    """
    pp: npt.NDArray[np.float64]
    pp, mss, rtt, t0, bb = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (p, mss_bytes, rtt_s, rto_s, b)))
    wmax = np.full(pp.shape, np.inf) if wmax_bytes is None else np.broadcast_to(
        np.asarray(wmax_bytes, dtype=float) / mss, pp.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q1 = 1.0 - pp
        k = (2.0 + bb) / (3.0 * bb)
        ew = k + np.sqrt(8.0 * q1 / (3.0 * bb * pp) + k * k)  # eq. 13, packets
        f = 1 + pp + 2 * pp**2 + 4 * pp**3 + 8 * pp**4 + 16 * pp**5 + 32 * pp**6

        def q_hat(w: npt.NDArray[np.float64]) -> np.ndarray:
            # eq. 24; (1-p)^w via exp/log1p so large windows and tiny p stay accurate
            a3 = -np.expm1(3.0 * np.log1p(-pp))  # 1-(1-p)^3
            aw = -np.expm1(w * np.log1p(-pp))  # 1-(1-p)^w
            return np.minimum(1.0, a3 * (1.0 + (1.0 - a3) * (-np.expm1((w - 3.0) * np.log1p(-pp)))) / aw)

        limited = ew >= wmax
        w_eff = np.where(limited, wmax, ew)
        q = q_hat(w_eff)
        num = q1 / pp + w_eff + q / q1
        den_free = rtt * (bb * w_eff / 2.0 + 1.0)
        den_lim = rtt * (bb * w_eff / 8.0 + q1 / (pp * w_eff) + 2.0)
        den = np.where(limited, den_lim, den_free) + q * t0 * f / q1
        pkts = num / den
        # p = 0: no losses at all, so only the window limits the sender
        pkts = np.where(pp <= 0.0, wmax / rtt, pkts)
        return _out(np.asarray(pkts * mss * 8.0))


def per_from_ber(ber: ArrayLike, bits: ArrayLike) -> FloatOut:
    """Packet error rate from an independent bit error rate: ``1 − (1 − ber)^bits``.

    Args:
        ber: Bit error probability.
        bits: Packet length in bits (e.g. ``1500 * 8``).

    Returns:
        The probability that at least one bit of the packet is in error.

    Example:
        >>> round(float(per_from_ber(1e-7, 1500 * 8)), 6)
        0.001199
    """
    e = np.asarray(ber, dtype=float)
    n = np.asarray(bits, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        # expm1/log1p: (1-ber)^bits loses every digit for ber ~ 1e-9 in plain floats
        return _out(np.asarray(-np.expm1(n * np.log1p(-e))))


def bdp_bytes(rate_bps: ArrayLike, rtt_s: ArrayLike) -> FloatOut:
    """Bandwidth-delay product: the bytes in flight needed to fill a path.

    Args:
        rate_bps: Bottleneck rate, bits per second.
        rtt_s: Round-trip time, seconds.

    Returns:
        Bytes (``rate × rtt / 8``).

    Example:
        >>> float(bdp_bytes(1e6, 0.2))
        25000.0
    """
    return _out(np.asarray(np.asarray(rate_bps, dtype=float) * np.asarray(rtt_s, dtype=float) / 8.0))
