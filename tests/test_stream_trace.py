"""``analyze --json``'s ``trace`` block from the streamed summary (:mod:`tracekit.streamed`) equals the frames path's.

For every sample pcap/pcapng the stream accepts (and damaged copies of them: the warnings), the block
:func:`tracekit.streamed.trace_block` makes of ``_core.stream_summary``'s output is the one
:func:`tracekit.reports.text.summary` makes of ``tracekit.analyze(tracekit.read(path))``, keys in the same
order; and making it imports neither polars nor numpy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CAPTURES, SAMPLES, damaged_captures

import tracekit
from tracekit import _core
from tracekit.errors import TracekitError
from tracekit.reports.text import _clean, summary
from tracekit.streamed import trace_block


def _assert_same(path: Path) -> bool:
    """False when the stream refuses the file (the frames path's block is then not compared)."""
    try:
        out = _core.stream_summary(path)
    except TracekitError:
        return False
    got = _clean(trace_block(out, str(path)))
    want = summary(tracekit.analyze(tracekit.read(path)))["trace"]
    assert got == want
    assert list(got) == list(want)  # (the JSON's key order too)
    return True


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_trace_block(path: Path) -> None:
    _assert_same(path)


def test_stream_trace_block_on_damaged_captures(tmp_path: Path) -> None:
    """Sample captures with one byte in 2,000 changed past the file header: the warnings (codes, counts,
    locations) and counts are still the reader's."""
    compared, warned = 0, 0
    for p in damaged_captures(tmp_path, 20261128):
        if _assert_same(p):
            compared += 1
            warned += bool(tracekit.read(p).warnings)
    assert compared >= 15 and warned >= 5, (compared, warned)


def test_trace_block_imports_neither_polars_nor_numpy() -> None:
    code = (
        "import sys\n"
        "from tracekit import _core\n"
        "from tracekit.streamed import trace_block\n"
        f"b = trace_block(_core.stream_summary({str(CAPTURES[0])!r}), 'x')\n"
        "assert b['packets'] > 0, b\n"
        "print(sorted(m for m in ('polars', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
