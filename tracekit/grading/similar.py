"""Copied submissions: byte-identical trace files, or the same analysed run after normalising times.

Two fingerprints per submission (and per reference run):

* ``files``: sha256 of every file read as a trace (not of notes, scripts or
  ``run.json``: two students may well hand in the lab's own script);
* ``series``: sha256 of the graded flow's packets (time since the flow's first
  packet rounded to 1 µs, event, sequence number, size) and of its congestion
  window curve (same time origin). A copy re-timed by starting the application
  later, or re-saved with other line endings or another file name, still matches;
  a re-run with another seed or setting does not (its losses differ).

A match is only a flag for the instructor (summary.json, grades.csv's
``similar_to`` column, the index page): it never changes a score, because an
identical run can be legitimate (the lab's own reference command, a partner).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracekit.grading import metrics as gm
from tracekit.grading.rubric import Selector

if TYPE_CHECKING:
    from tracekit.analysis import Analysis

#: Times are compared after rounding to this (s): ns-2 prints 4-6 decimals, pcap has µs.
TIME_RESOLUTION_S = 1e-6


def series_digest(analysis: Analysis) -> str | None:
    """sha256 of the largest flow's packets and cwnd curve with times from its first packet, or None."""

    row, _ = gm.select_flow(analysis.flows, Selector())
    if row is None:
        return None
    start = float(row["start"])
    pk = analysis.packets.filter((pl.col("flow") == row["flow"]) & (pl.col("dir") == row["dir"]))
    if pk.is_empty():
        return None
    h = hashlib.sha256()
    t = np.round((pk["time"].to_numpy() - start) / TIME_RESOLUTION_S).astype(np.int64)
    h.update(t.tobytes())
    for col in ("seq", "size", "payload"):
        if col in pk.columns:
            h.update(col.encode() + pk[col].cast(pl.Float64).fill_null(-1.0).to_numpy().tobytes())
    cw = gm.cwnd_series(analysis, row)
    if cw is not None:
        h.update(b"cwnd" + np.round(cw[0] / TIME_RESOLUTION_S).astype(np.int64).tobytes())
        h.update(np.asarray(cw[1], dtype=np.float64).tobytes())
    return h.hexdigest()


def fingerprint(files: list[dict[str, Any]], analysis: Analysis | None) -> dict[str, Any]:
    """A submission's fingerprints: its trace files' hashes and its analysed series' hash."""
    return {"files": {f["name"]: f["sha256"] for f in files if f.get("format")},
            "series": series_digest(analysis) if analysis is not None else None}


def _why(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    hashes = set(b["files"].values())
    same = sorted(n for n, h in a["files"].items() if h in hashes)
    if same:
        return "byte-identical " + ", ".join(same)
    if a.get("series") and a.get("series") == b.get("series"):
        return "same packets and congestion-window curve after normalising times"
    return None


def flag(results: list[dict[str, Any]], references: list[dict[str, Any]]) -> None:
    """Set ``similar_to`` on every result: ``{"id" | "reference", "why"}`` per match (scores untouched)."""
    for r in results:
        r["similar_to"] = []
        mine = r.get("fingerprint")
        if not mine:
            continue
        for ref in references:
            why = _why(mine, {"files": ref.get("files") or {}, "series": ref.get("series_sha256")})
            if why:
                r["similar_to"].append({"reference": Path(ref["path"]).name, "why": why})
        for other in results:
            theirs = other.get("fingerprint")
            if other is r or not theirs:
                continue
            why = _why(mine, theirs)
            if why:
                r["similar_to"].append({"id": other["id"], "why": why})


def describe(similar: list[dict[str, Any]]) -> str:
    """One line for grades.csv: ``bob (byte-identical out.tr); reference ref (...)``."""
    parts = []
    for s in similar:
        who = s["id"] if "id" in s else f"reference {s['reference']}"
        parts.append(f"{who} ({s['why']})")
    return "; ".join(parts)
