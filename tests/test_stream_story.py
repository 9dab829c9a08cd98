"""The stream's cwnd events (``_core.stream_summary``'s ``_story_*``, ``_run_*``, ``_cut_*``, ``_red_*``;
``src/stream/cwndstory.rs``) equal what the account in words reads of the frames path
(:meth:`tracekit.explain_parts.Parts.series`) and the reductions frame, bit for bit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import SAMPLES, damaged_captures
from test_stream_summary import CAPTURES, _without_handshake

import tracekit
from tracekit import _core
from tracekit.errors import TracekitError
from tracekit.explain_parts import MAX_EACH, Parts, Series


def _same(a: Any, b: Any) -> bool:
    """Equal arrays of floats, bit for bit (NaN equals NaN)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or not np.array_equal(np.isnan(x), np.isnan(y)):
        return False
    ok = ~np.isnan(x)
    return bool(np.array_equal(x[ok].view(np.uint64), y[ok].view(np.uint64)))


def _slices(counts: list[int]) -> list[slice]:
    ends = np.cumsum([0, *counts]).tolist()
    return [slice(a, b) for a, b in zip(ends[:-1], ends[1:], strict=True)]


def stream_series(s: dict[str, Any]) -> dict[tuple[int, int], dict[str, Any]]:
    """The stream's events per direction (those with a series), as flat lists sliced."""
    reds = s["_reductions"]
    runs = _slices(s["_story_runs"])
    cuts = _slices([min(n, MAX_EACH + 1) for n in reds])
    red = _slices(reds)
    out = {}
    for i, (f, d) in enumerate(zip(s["flow"], s["dir"], strict=True)):
        if s["_story_rows"][i] == 0:
            continue
        out[(f, d)] = {
            "rows": s["_story_rows"][i], "ca_start": s["_ca_start"][i],
            "losses": s["_red_t"][red[i]], "backed": s["_red_backed"][red[i]],
            **{f"run_{k}": s[f"_run_{k}"][runs[i]] for k in ("from", "top", "top_t", "end", "end_t")},
            **{f"cut_{k}": s[f"_cut_{k}"][cuts[i]] for k in ("before", "after", "phase", "tol", "prev_t")},
        }
    return out


def _assert_same_story(path: Path, s: dict[str, Any]) -> int:
    """The stream's events equal the account's and the reductions frame's; the directions compared."""
    an = tracekit.analyze(tracekit.read(path))
    parts = Parts(an)
    got = stream_series(s)
    parts.series(0, 0)  # (splits every direction's series once)
    want_keys = {k for k, v in (parts._series or {}).items() if not v.empty}
    assert set(got) == want_keys
    red = an.reductions if an.reductions is not None else pl.DataFrame(schema={"flow": pl.UInt32})
    red_by = red.partition_by("flow", "dir", as_dict=True) if red.height else {}
    for (f, d), g in got.items():
        w: Series = parts.series(f, d)
        assert g["rows"] == w.rows and w.source == "estimate", (f, d)
        assert _same(g["losses"], w.losses), (f, d)
        assert g["backed"] == (w.backed.tolist() if w.backed is not None else [True] * len(g["losses"])), (f, d)
        frame = red_by.get((f, d))
        if frame is None:
            assert g["losses"] == [], (f, d)
        else:
            assert _same(g["losses"], frame["time"].to_numpy()), (f, d)
            assert g["backed"] == frame["loss_event"].to_list(), (f, d)
        assert w.runs is not None and w.cuts is not None
        for k, a in (("from", w.runs.start), ("top", w.runs.top), ("top_t", w.runs.top_t), ("end_t", w.runs.end_t)):
            assert _same(g[f"run_{k}"], a), (f, d, k)
        assert g["run_end"] == w.runs.end.tolist(), (f, d)
        for k in ("before", "after", "tol", "prev_t"):
            assert _same(g[f"cut_{k}"], getattr(w.cuts, k)), (f, d, k)
        assert g["cut_phase"] == w.cuts.phase.tolist(), (f, d)
        if w.ca_start is None:
            assert g["ca_start"] is None, (f, d)
        else:
            assert _same([g["ca_start"]], [w.ca_start]), (f, d)
    return len(got)


def test_story_cap_is_the_accounts() -> None:
    assert _core.CWND_STORY_CAP == MAX_EACH


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_story_equals_the_accounts(path: Path) -> None:
    try:
        s = _core.stream_summary(path)
    except TracekitError:
        pytest.skip("the stream refuses it (tests/test_stream_summary.py checks why)")
    _assert_same_story(path, s)


@pytest.mark.parametrize("name", ["linux/bulk_lossy.pcap", "linux/kernel_truth/outage_reno.pcap"])
def test_stream_story_without_a_handshake(tmp_path: Path, name: str) -> None:
    p = tmp_path / "mid.pcap"
    _without_handshake(SAMPLES / name, p)
    assert _assert_same_story(p, _core.stream_summary(p)) > 0


def test_stream_story_on_damaged_captures(tmp_path: Path) -> None:
    """The damaged mutants of tests/test_stream_summary.py (same seed): the events still equal."""
    compared = 0
    for p in damaged_captures(tmp_path, 20261127):
        try:
            s = _core.stream_summary(p)
        except TracekitError:
            continue
        _assert_same_story(p, s)
        compared += 1
    assert compared >= 15, compared


def test_stream_story_when_times_go_back(tmp_path: Path) -> None:
    """Records stamped before the one before them: the estimate's rows are in capture order (time, then
    frame), so ``chosen`` keeps them as they are and the stream's events are still the account's."""
    import random
    import struct

    data = bytearray((SAMPLES / "linux/bulk_lossy.pcap").read_bytes())
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    starts, at = [], 24
    while at + 16 <= len(data):
        starts.append(at)
        at += 16 + struct.unpack(order + "I", data[at + 8:at + 12])[0]
    for k in random.Random(1).sample(range(2, len(starts)), 15):
        sec, frac = struct.unpack(order + "II", data[starts[k - 1]:starts[k - 1] + 8])
        v = sec * 1_000_000 + frac - 1000  # (microsecond stamps)
        struct.pack_into(order + "II", data, starts[k], v // 1_000_000, v % 1_000_000)
    p = tmp_path / "back.pcap"
    p.write_bytes(bytes(data))
    s = _core.stream_summary(p)
    assert "W-NONMONOTONIC" in [w[0] for w in s["warnings"]]
    assert _assert_same_story(p, s) > 0 and s["_red_t"]
