"""A run's parameters as the analysis reads them: the bottleneck rate from ``--link-rate`` or run.json.

No polars, no numpy: both the frames path (:func:`tracekit.pipeline.link_rate`) and the streamed
summary (:func:`tracekit.streamed.summary_document`) call these, so ``analyze --json`` takes the
same rate whichever path computes it.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from tracekit.errors import UsageError

#: run.json / manifest: small files; a huge one is not a manifest.
MAX_SIDE_FILE = 1 << 20


def rate_from_text(text: str) -> float | None:
    """A link rate written as ns-2/ns-3/iperf write it (``1Mb``, ``1Mbps``, ``10 Mbit/s``, ``2e6``) in bit/s."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT]?)\s*(b|bps|bit/s|bits/s|bit|b/s)?\s*",
                     text or "")
    if m is None:
        return None
    mult = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    v = float(m.group(1)) * mult
    return v if math.isfinite(v) and v > 0 else None


def link_rate_from_params(doc: dict[str, Any]) -> float | None:
    """The bottleneck rate a run's parameters name (``bandwidth`` or ``bottleneck.bandwidth``, as the
    ns-2 and ns-3 sample runs write it in run.json), in bit/s; None when absent or unreadable."""
    bott = doc.get("bottleneck")
    for v in (bott.get("bandwidth") if isinstance(bott, dict) else None, doc.get("bandwidth"),
              doc.get("link_rate"), doc.get("bottleneck_bps")):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v) if math.isfinite(v) and v > 0 else None
        if isinstance(v, str) and len(v) < 40:
            r = rate_from_text(v)
            if r is not None:
                return r
    return None


def json_file(f: Path) -> dict[str, Any] | None:
    """A small JSON object file; None when absent, too large (a run.json is small) or not an object."""
    try:
        if not f.is_file() or f.stat().st_size > MAX_SIDE_FILE:
            return None
        doc = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def link_rate(meta: dict[str, Any], given: str | None = None) -> float | None:
    """The bottleneck rate in bit/s: ``given`` (``--link-rate``) when not None, else the run's ``run.json``.

    run.json is looked for in the directory read (``meta["dir"]``), or beside the first file read
    (``meta["paths"][0]``); only a number or a rate such as ``1Mb`` / ``1Mbps`` is taken from it.

    Raises:
        UsageError: for a ``given`` rate that is not a rate.
    """
    if given is not None:
        r = rate_from_text(given)
        if r is None:
            raise UsageError(
                f"--link-rate {given!r} is not a rate", hint="e.g. --link-rate 1Mbit/s, 10M or 1e6 (bit/s)"
            )
        return r
    base = Path(meta["dir"]) if meta.get("dir") else (Path(meta["paths"][0]).parent if meta.get("paths") else None)
    doc = json_file(base / "run.json") if base is not None else None
    return link_rate_from_params(doc) if doc is not None else None
