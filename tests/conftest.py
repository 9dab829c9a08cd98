"""Shared test helpers: sample locations (via __file__), tool skips, and make_events()."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
#: Real files made by others, beside the project (never copied into it).
CORPUS = ROOT.parent / "shared" / "corpus"
GOLDEN = Path(__file__).resolve().parent / "golden"

IN_CI = os.environ.get("CI") == "true"

#: Every sample pcap and pcapng capture.
CAPTURES = sorted(p for p in SAMPLES.rglob("*") if p.suffix in (".pcap", ".pcapng"))


def damaged_captures(tmp_path: Path, seed: int, n: int = 30) -> Iterator[Path]:
    """``n`` sample captures (under 3 MB) with one byte in 2,000 changed past the first 64 (the file
    header kept, so the damage lands in records, lengths and options), written under ``tmp_path``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    bases = [p for p in CAPTURES if p.stat().st_size < 3_000_000]
    for k in range(n):
        base = bases[(7 * k) % len(bases)]
        arr = np.frombuffer(base.read_bytes(), dtype=np.uint8).copy()
        mask = rng.random(arr.size - 64) < 0.0005
        arr[64:][mask] = rng.integers(0, 256, int(mask.sum()), dtype=np.uint8)
        p = tmp_path / f"m{k}{base.suffix}"
        p.write_bytes(arr.tobytes())
        yield p


def need_tool(name: str) -> str:
    """Skip the test (with a reason) when a command-line tool is missing; CI installs them all."""
    path = shutil.which(name)
    if path is None:
        if IN_CI:
            pytest.fail(f"{name} is not installed, but CI must install it (.ci/run)")
        pytest.skip(f"{name} is not installed")
    return path


def need_corpus(*parts: str) -> Path:
    """Path into ../shared/corpus, skipping when the corpus is absent."""
    p = CORPUS.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared corpus file {p} is absent")
    return p


def sample(*parts: str) -> Path:
    """Path to a bundled sample (fails loudly if it is missing: samples are part of the repo)."""
    p = SAMPLES.joinpath(*parts)
    assert p.exists(), f"sample {p} is missing"
    return p


def make_events(n: int | None = None, **columns: Any) -> pl.DataFrame:
    """Build a valid ``packets`` frame, filling every column a test does not care about.

    Args:
        n: Number of rows (default: the length of the first given column, else 1).
        **columns: Column values (lists) for the columns the test is about.

    Returns:
        A frame with exactly the schema's packet columns and dtypes.

    Example:
        make_events(seq=[1, 1001], payload=[1000, 1000], flags=[0x18, 0x18])
    """
    from tracekit import schema

    if n is None:
        n = len(next(iter(columns.values()))) if columns else 1
    base: dict[str, Any] = {
        "frame": list(range(1, n + 1)),
        "time": [i * 0.001 for i in range(n)],
        "event": ["capture"] * n,
        "flow": [0] * n,
        "dir": [0] * n,
        "src": ["10.0.0.1"] * n,
        "dst": ["10.0.0.2"] * n,
        "sport": [40000] * n,
        "dport": [5001] * n,
        "proto": ["tcp"] * n,
        "size": [1500] * n,
        "payload": [1448] * n,
        "seq": [1 + 1448 * i for i in range(n)],
        "ack": [1] * n,
        "flags": [0x10] * n,
        "win": [65535] * n,
    }
    base.update(columns)
    # a src/dst swap for dir 1 keeps the frame self-consistent
    if "dir" in columns and "src" not in columns:
        base["src"] = ["10.0.0.2" if d == 1 else "10.0.0.1" for d in base["dir"]]
        base["dst"] = ["10.0.0.1" if d == 1 else "10.0.0.2" for d in base["dir"]]
    df = pl.DataFrame({k: v for k, v in base.items()}, strict=False)
    return schema.conform(df, schema.PACKETS)


def make_trace(packets: pl.DataFrame | None = None, samples: pl.DataFrame | None = None, **meta: Any) -> Any:
    """Wrap frames in a validated Trace with minimal metadata."""
    from tracekit.trace import make_trace as _mk

    return _mk(packets, samples, {"format": "test", "paths": ["<test>"], **meta})
