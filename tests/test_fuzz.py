"""Mutation fuzzing: mutants of every sample, read in bounded subprocesses (as Wireshark's tools/fuzz-test.sh).

Mutations follow ``editcap -E``: random byte changes (2 % of the bytes after a
protected header), plus truncations and duplicated chunks. Every mutant must
be read cleanly or refused with a TracekitError: no other exception, no hang,
no memory blow-up. ``TRACEKIT_FUZZ_SEED`` / ``TRACEKIT_FUZZ_N`` reproduce or
extend a run; a failure prints the seed, the mutant and the file.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLES
from robust import run_files

from tracekit.parsers import sniff

SEED = int(os.environ.get("TRACEKIT_FUZZ_SEED", "20261121"))
N = int(os.environ.get("TRACEKIT_FUZZ_N", "1000"))
PREFIX = 256 * 1024  # mutate a prefix of large samples to keep the run short
RSS_MB = 500.0


def _bases() -> list[tuple[str, bytes]]:
    """Every sample file a reader recognises, decompressed, cut to PREFIX bytes."""
    out = []
    for p in sorted(SAMPLES.rglob("*")):
        if not p.is_file() or p.suffix in (".sh", ".py", ".tcl", ".cc", ".md", ".plot", ".toml"):
            continue
        if sniff(p) is None:
            continue
        data = p.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        out.append((str(p.relative_to(SAMPLES)), data[:PREFIX]))
    return out


def mutate(data: bytes, rng: np.random.Generator) -> tuple[bytes, str]:
    """One editcap-style mutant of ``data`` and a description of what was done."""
    arr = np.frombuffer(data, dtype=np.uint8).copy()
    kind = rng.choice(["flip", "flip", "truncate", "duplicate", "flip+truncate"])
    desc = [str(kind)]
    if "flip" in kind and len(arr) > 24:
        protect = int(rng.choice([0, 24, 64]))
        mask = rng.random(len(arr) - protect) < 0.02
        arr[protect:][mask] = rng.integers(0, 256, int(mask.sum()), dtype=np.uint8)
        desc.append(f"{int(mask.sum())} bytes after {protect}")
    out = arr.tobytes()
    if "truncate" in kind and out:
        cut = int(rng.integers(0, len(out)))
        out = out[:cut]
        desc.append(f"cut at {cut}")
    if kind == "duplicate" and len(out) > 2:
        a = int(rng.integers(0, len(out) - 1))
        b = int(min(len(out), a + rng.integers(1, 4096)))
        at = int(rng.integers(0, len(out)))
        out = out[:at] + out[a:b] + out[at:]
        desc.append(f"dup [{a},{b}) at {at}")
    return out, " ".join(desc)


def test_mutants_never_crash_hang_or_blow_up(tmp_path: Path) -> None:
    bases = _bases()
    assert bases, "no recognisable samples to mutate"
    rng = np.random.default_rng(SEED)
    files: list[Path] = []
    what: dict[str, str] = {}
    for i in range(N):
        name, data = bases[i % len(bases)]
        mut, desc = mutate(data, rng)
        p = tmp_path / f"m{i:04d}.bin"
        p.write_bytes(mut)
        files.append(p)
        what[str(p)] = f"mutant {i} of {name}: {desc}"
    results = run_files(files, timeout_s=5.0)
    bad = [r for r in results
           if r["outcome"] in ("crash", "hang") or (r["peak_rss_mb"] or 0) > RSS_MB]
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("ok", "error", "crash", "hang")}
    print(f"fuzz seed {SEED}: {N} mutants of {len(bases)} samples -> {counts}")
    if bad:
        lines = [f"{what[r['path']]} [{r['path']}] -> {r['outcome']} ({r['peak_rss_mb']} MB): "
                 f"{r['detail'][-600:]}" for r in bad[:5]]
        pytest.fail(f"seed {SEED}: {len(bad)} bad mutants; first ones:\n" + "\n".join(lines))
