"""The vectorized pcap record walk (:mod:`tracekit.parsers._spec_walk`) against the plain loop.

The vectorized walk guesses where records start and proves each guess before using it; these
tests check that the offsets (and the reason and place a walk stops) are exactly the plain
loop's on real captures, on random files, and on files built to fool the guess, and that the
guess does hold on real captures (else the fast walk would silently never be used).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import craft
import numpy as np
import pytest
from conftest import SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracekit
from tracekit.parsers import _spec_walk, pcap
from tracekit.parsers.pcap import walk_records

T0 = craft.T0


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Shrink the walk's sizes so that kilobyte files take the vectorized path; count its records."""
    monkeypatch.setattr(_spec_walk, "SPACING", 256)
    monkeypatch.setattr(_spec_walk, "SCAN", 64)
    monkeypatch.setattr(_spec_walk, "MIN_WINDOW", 1024)
    monkeypatch.setattr(pcap, "_WALK_SEGMENT", 4096)
    seen = {"records": 0, "calls": 0}
    walk = _spec_walk.walk

    def counted(*a: Any, **k: Any) -> tuple[np.ndarray, int]:
        offs, nxt = walk(*a, **k)
        seen["records"] += len(offs)
        seen["calls"] += 1
        return offs, nxt

    monkeypatch.setattr(_spec_walk, "walk", counted)
    return seen


def _plain(data: Any, *args: Any, **kw: Any) -> tuple[list[int], str | None, int]:
    usable = _spec_walk.usable
    _spec_walk.usable = lambda *a: False  # type: ignore[assignment]
    try:
        offs, reason, stop = walk_records(data, *args, **kw)
    finally:
        _spec_walk.usable = usable  # type: ignore[assignment]
    return offs.tolist(), reason, stop


def _both(data: bytes, max_caplen: int = 262144, cap_at: int = 8, nanos: bool = False
          ) -> tuple[tuple[list[int], str | None, int], tuple[list[int], str | None, int]]:
    offs, reason, stop = walk_records(data, 24, "<", 16, max_caplen, cap_at, nanos=nanos)
    return (offs.tolist(), reason, stop), _plain(data, 24, "<", 16, max_caplen, cap_at, nanos=nanos)


def _little_endian_pcaps() -> list[Path]:
    out = []
    for p in sorted(SAMPLES.glob("**/*.pcap")):
        head = p.read_bytes()[:4]
        if head in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            out.append(p)
    return out


@pytest.mark.parametrize("path", _little_endian_pcaps(), ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_same_offsets_as_the_plain_walk_on_every_sample(path: Path, small: dict[str, int]) -> None:
    data = path.read_bytes()
    nanos = data[:4] == b"\x4d\x3c\xb2\xa1"
    fast, plain = _both(data, nanos=nanos)
    assert fast == plain
    # the guesses hold on real captures: nearly every record is proven by the vectorized walk, but
    # for the one a call may leave to the plain loop at its segment's end (which counts on a file of
    # a few dozen records, like samples/ns3/fragments/short-0-0.pcap: 48 of 57 in 8 calls)
    assert small["records"] >= 0.9 * len(plain[0]) - small["calls"], (small, len(plain[0]))


def test_a_real_capture_reads_the_same_through_either_walk(small: dict[str, int]) -> None:
    path = SAMPLES / "linux" / "bulk_lossy.pcap"
    fast = tracekit.read(path)
    assert small["records"] > 0.9 * fast.meta["counts"]["records"]
    usable = _spec_walk.usable
    try:
        _spec_walk.usable = lambda *a: False  # type: ignore[assignment]
        plain = tracekit.read(path)
    finally:
        _spec_walk.usable = usable  # type: ignore[assignment]
    assert fast.packets.equals(plain.packets) and fast.meta == plain.meta


def test_default_sizes_on_a_megabyte_file(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = [bytes([i % 251]) * (60 + (i * 37) % 1400) for i in range(1200)]
    data = craft.pcap(frames)
    assert len(data) > 2 * _spec_walk.MIN_WINDOW
    proven: list[int] = []
    walk = _spec_walk.walk

    def counted(*a: Any, **k: Any) -> tuple[np.ndarray, int]:
        offs, nxt = walk(*a, **k)
        proven.append(len(offs))
        return offs, nxt

    monkeypatch.setattr(_spec_walk, "walk", counted)
    fast, plain = _both(data)
    assert fast == plain and plain[1] is None
    assert sum(proven) > len(frames) // 2  # the default sizes do take the vectorized walk


def _record(sec: int, frac: int, body: bytes, cap: int | None = None, orig: int | None = None) -> bytes:
    cap = len(body) if cap is None else cap
    return struct.pack("<IIII", sec, frac, cap, len(body) if orig is None else orig) + body


def _fake_header(draw: Any) -> bytes:
    """Bytes that look like a record header (within the day, small lengths): bait for the guess."""
    cap = draw(st.integers(1, 200))
    return struct.pack("<IIII", T0 + draw(st.integers(-10, 10)), draw(st.integers(0, 999_999)), cap,
                       cap + draw(st.integers(0, 50)))


@st.composite
def _files(draw: Any) -> bytes:
    """A pcap whose record bodies are zeros, random bytes or fake headers, with damage at the end."""
    out = [craft.pcap([])]
    for i in range(draw(st.integers(20, 120))):
        kind = draw(st.sampled_from(["zeros", "random", "bait", "empty"]))
        if kind == "zeros":
            body = bytes(draw(st.integers(0, 200)))
        elif kind == "random":
            body = draw(st.binary(min_size=0, max_size=200))
        elif kind == "bait":
            body = b"".join(_fake_header(draw) for _ in range(draw(st.integers(1, 6))))
            body += bytes(draw(st.integers(0, 3)))
        else:
            body = b""
        sec = T0 + i if draw(st.integers(0, 30)) else draw(st.integers(0, 2**32 - 1))  # now and then far off
        out.append(_record(sec, draw(st.integers(0, 999_999)), body))
    tail = draw(st.sampled_from(["none", "cut", "huge-caplen", "garbage"]))
    data = b"".join(out)
    if tail == "cut":
        data = data[: len(data) - draw(st.integers(1, 30))]
    elif tail == "huge-caplen":
        data += _record(T0, 0, b"x" * 40, cap=10**7)
    elif tail == "garbage":
        data += draw(st.binary(min_size=1, max_size=300))
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=_files(), cap_at=st.sampled_from([8, 12]), max_caplen=st.sampled_from([262144, 150]))
def test_same_result_as_the_plain_walk_on_any_file(small: dict[str, int], data: bytes, cap_at: int,
                                                   max_caplen: int) -> None:
    fast, plain = _both(data, max_caplen=max_caplen, cap_at=cap_at)
    assert fast == plain


def test_a_wrong_guess_is_caught_and_the_plain_walk_takes_over(small: dict[str, int]) -> None:
    # Every body is a run of fake headers: walkers that start on one follow a chain that the
    # previous walker never lands on, so those guesses are refused.
    bait = struct.pack("<IIII", T0, 5, 16, 16) * 40
    recs = [_record(T0 + i, i, bait[: 16 * (1 + i % 40)] + b"\x07" * (i % 5)) for i in range(200)]
    data = craft.pcap([]) + b"".join(recs)
    fast, plain = _both(data)
    assert fast == plain and plain[1] is None
    assert len(plain[0]) == 200 and small["calls"] > 0


def test_only_native_order_and_16_byte_headers_take_the_vectorized_walk() -> None:
    native = "<" if np.little_endian else ">"
    other = ">" if native == "<" else "<"
    assert _spec_walk.usable(native, 16, 8) and _spec_walk.usable(native, 16, 12)
    assert not _spec_walk.usable(other, 16, 8)
    assert not _spec_walk.usable(native, 24, 8)  # Kuznetzov's longer record header


@pytest.mark.parametrize("at", [0, 6, 7, 8, 13, 18])
def test_a_step_over_the_maximum_is_found_across_chunk_edges(at: int) -> None:
    h = np.arange(20, dtype=np.int64) * 100
    h[at + 1:] += 10_000  # one step of 10,100 between h[at] and h[at + 1]
    for chunk in (1, 3, 7, 8, 64):
        assert pcap._first_step_over(h, 1000, chunk) == at
    assert pcap._first_step_over(np.arange(20, dtype=np.int64) * 100, 1000, 7) is None
    assert pcap._first_step_over(np.zeros(1, dtype=np.int64), 1000) is None
