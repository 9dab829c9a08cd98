"""Numbers for people: the one formatter of the table, the report, compare and the explanations.

Rules (issue 18 §3): never an exponent (``3.3e+04`` reads as nothing to a student), thousands
separators on large numbers, SI prefixes on rates (``796 kbit/s``), the unit always written.
Every function takes SI units (bytes, seconds, bit/s) and returns text; ``None`` and
non-finite numbers become ``–``.
"""

from __future__ import annotations

import math
from typing import Any

DASH = "–"
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def sig(v: float, digits: int = 3) -> str:
    """``v`` to ``digits`` significant digits, fixed-point, thousands separators, trailing zeros dropped.

    >>> sig(33000.0), sig(0.28512, 4), sig(1234567.8), sig(19.49696, 3)
    ('33,000', '0.2851', '1,234,568', '19.5')
    """
    if not _finite(v):
        return DASH
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    text = f"{v:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def integer(v: Any) -> str:
    """A count with thousands separators (``1,940,000``)."""
    return f"{round(v):,}" if _finite(v) else DASH


def si(v: Any, unit: str, digits: int = 3) -> str:
    """``v`` with an SI prefix on ``unit``: ``si(796021, "bit/s")`` → ``796 kbit/s``."""
    if not _finite(v):
        return DASH
    for div, prefix in _PREFIXES:
        if abs(v) >= div:
            return f"{sig(v / div, digits)} {prefix}{unit}"
    return f"{sig(v, digits)} {unit}"


def rate(bps: Any, digits: int = 3) -> str:
    """A bit rate: ``796 kbit/s``, ``8.46 Mbit/s``."""
    return si(bps, "bit/s", digits)


def nbytes(n: Any) -> str:
    """Bytes with separators below a megabyte (``33,000 B``), SI above (``1.94 MB``)."""
    if not _finite(n):
        return DASH
    return f"{integer(n)} B" if abs(n) < 1e6 else si(n, "B")


def seconds(s: Any, digits: int = 3) -> str:
    """A duration or time: ``7.18 µs`` below a millisecond, ``285 ms`` below a second, ``2.1 s`` above."""
    if not _finite(s):
        return DASH
    if s != 0 and abs(s) < 1e-3:
        return f"{sig(s * 1e6, digits)} µs"
    if s != 0 and abs(s) < 1:
        return f"{sig(s * 1e3, digits)} ms"
    return f"{sig(s, max(digits, len(str(int(abs(s))))))} s"


def at(t: Any) -> str:
    """A point in time on the trace's clock, to the millisecond's precision that matters: ``2.1 s``."""
    if not _finite(t):
        return DASH
    return f"{sig(t, max(3, len(str(int(abs(t)))) + 2))} s"


def packets(n: Any, digits: int = 4) -> str:
    """A packet count (``66 packets``; fractions kept for ns-2's cwnd: ``33.03 packets``)."""
    if not _finite(n):
        return DASH
    return f"{sig(n, digits)} packet{'' if n == 1 else 's'}"


def pps(v: Any, digits: int = 4) -> str:
    """Packets per second: ``197.8 pps``."""
    return f"{sig(v, digits)} pps" if _finite(v) else DASH


def pct(share: Any) -> str:
    """A share (0–1) as a percentage: ``96 %``, ``4.2 %``, ``0.05 %``."""
    if not _finite(share):
        return DASH
    p = share * 100
    if 0 < abs(p) < 0.1:
        return "< 0.1 %"
    if p == 0 or abs(p) >= 10:
        return f"{round(p):,} %"
    return f"{sig(p, 2)} %"


def count(n: int, word: str) -> str:
    """``1 loss event``, ``3 loss events``, ``1,204 stalls``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def quantity(v: Any, unit: str | None) -> str:
    """A value in one of the schema's units (:data:`tracekit.schema.UNITS`) with that unit written."""
    if not _finite(v):
        return DASH
    if unit == "bps":
        return rate(v, 4)
    if unit == "bytes":
        return nbytes(v)
    if unit == "s":
        return seconds(v, 4)
    if unit == "packets":
        return packets(v)
    if unit == "pps":
        return pps(v)
    if unit == "ratio":
        return pct(v)
    if unit == "count":
        return integer(v) if float(v).is_integer() else sig(v, 4)
    return sig(v, 4)


def cell(v: Any, col: str) -> str:
    """A table cell of column ``col``: the unit is in the column's header, so only the number.

    Rates keep their SI unit (the header says "throughput"), shares become percentages,
    counts and byte columns get separators, everything else 4 significant digits.
    """
    if v is None:
        return DASH
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if not math.isfinite(v):
        return DASH
    if col.endswith("_bps"):
        return rate(v)
    if col.endswith("_share"):
        return pct(v)
    if col.endswith("_pps"):
        return sig(v, 4)
    if isinstance(v, int) or col.endswith("_bytes") or col in ("unique_bytes", "bytes", "packets"):
        return integer(v)
    return sig(v, 4)
