"""The account in words from the streamed summary (:mod:`tracekit._streamexplain`) equals the frames path's.

For every sample pcap/pcapng the stream accepts (and damaged copies of them), the sentences
:func:`tracekit._streamexplain.explain_from_stream` makes of ``_core.stream_summary``'s output are
those :func:`tracekit.explain.explain` makes of ``tracekit.analyze(tracekit.read(path))``, values bit
for bit, with and without a link rate; both feed the same rules (:mod:`tracekit.explain_account`).
Making them imports neither polars nor numpy. The sums the rules make in the frames path's order
(:func:`tracekit.explain_rules.polars_sum`, :func:`~tracekit.explain_rules.numpy_sum`) equal polars'
and numpy's.
"""

from __future__ import annotations

import json
import math
import random
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import CAPTURES, SAMPLES, damaged_captures

import tracekit
from tracekit import _core
from tracekit._streamexplain import _facts, explain_from_stream
from tracekit.errors import TracekitError
from tracekit.explain import explain
from tracekit.explain_parts import Parts
from tracekit.explain_rules import jain, numpy_sum, polars_sum
from tracekit.reports.answers import lab_flows
from tracekit.streamed import trace_meta


def _bits(v: Any) -> Any:
    """A sentence's values with every float as its bits (NaN equals NaN, -0.0 differs from 0.0)."""
    if isinstance(v, float):
        return ("f", struct.pack("<d", v))
    if isinstance(v, dict):
        return {k: _bits(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_bits(x) for x in v]
    return v


def _assert_same(path: Path) -> bool:
    """False when the stream refuses the file (the frames path's sentences are then not compared)."""
    try:
        out = _core.stream_summary(path)
    except TracekitError:
        return False
    an = tracekit.analyze(tracekit.read(path))
    meta, rows = trace_meta(out, str(path)), lab_flows(an).to_dicts()
    for link in (None, 1e6):
        got = [s.to_dict() for s in explain_from_stream(out, meta, rows, link_bps=link)]
        want = [s.to_dict() for s in explain(an, link_bps=link)]
        assert got == want
        assert _bits(got) == _bits(want)
    return True


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_explain(path: Path) -> None:
    _assert_same(path)


def test_stream_explain_on_damaged_captures(tmp_path: Path) -> None:
    compared = 0
    for p in damaged_captures(tmp_path, 20261129):
        compared += _assert_same(p)
    assert compared >= 15, compared


def test_times_going_back_are_told_with_their_largest_step(tmp_path: Path) -> None:
    """Three records of a sample stamped back by 40 µs, 2 ms and 300 µs: the account says how often
    and, in the reader's words, the largest step and its frame (``warn_time_back``), not "numbers may
    be affected" (``warn_other``), alike on both paths."""
    data = bytearray((SAMPLES / "linux" / "bulk_lossy.pcap").read_bytes())
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    starts, at = [], 24
    while at + 16 <= len(data):
        starts.append(at)
        at += 16 + struct.unpack(order + "I", data[at + 8:at + 12])[0]
    for k, back_us in ((40, 40), (500, 2000), (900, 300)):
        sec, frac = struct.unpack(order + "II", data[starts[k - 1]:starts[k - 1] + 8])
        v = sec * 1_000_000 + frac - back_us  # (the sample's stamps are in microseconds)
        struct.pack_into(order + "II", data, starts[k], v // 1_000_000, v % 1_000_000)
    p = tmp_path / "back.pcap"
    p.write_bytes(bytes(data))
    assert _assert_same(p)
    told = {s.kind: s for s in explain(tracekit.analyze(tracekit.read(p)))}
    assert "warn_other" not in told
    s = told["warn_time_back"]
    assert s.values["count"] == 3 and s.values["frame"] == 501
    assert "the largest step back is 2 ms, at frame 501." in s.text


def test_stream_explain_imports_neither_polars_nor_numpy() -> None:
    path = SAMPLES / "linux" / "stall_cut.pcap"
    rows = lab_flows(tracekit.analyze(tracekit.read(path))).to_dicts()
    code = (
        "import json, sys\n"
        "from tracekit import _core\n"
        "from tracekit._streamexplain import explain_from_stream\n"
        "from tracekit.streamed import trace_meta\n"
        f"p = {str(path)!r}\n"
        "out = _core.stream_summary(p)\n"
        f"rows = json.loads({json.dumps(rows)!r})\n"
        "told = explain_from_stream(out, trace_meta(out, p), rows, link_bps=1e6)\n"
        "assert any(s.kind.startswith('loss_') for s in told), told\n"
        "print(sorted(m for m in ('polars', 'numpy') if m in sys.modules))\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "[]", got.stdout + got.stderr


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100, 127, 128, 129, 255, 256, 300, 1000, 3000])
def test_sums_in_the_frames_paths_order(n: int) -> None:
    rng = random.Random(n)
    xs = [rng.uniform(-1, 1) * 10 ** rng.randint(-8, 8) for _ in range(n)]
    s = pl.Series(xs, dtype=pl.Float64)
    assert struct.pack("<d", polars_sum(xs)) == struct.pack("<d", float(s.sum()))
    assert struct.pack("<d", numpy_sum(xs)) == struct.pack("<d", float(np.array(xs).sum()))
    g = [abs(x) + 1.0 for x in xs]
    if len(g) >= 2:
        a = np.array(g)
        assert jain(g) == float(a.sum() ** 2 / (a.size * (a**2).sum()))
    assert not math.isnan(polars_sum(xs))


def _inputs_equal(path: Path) -> None:
    """The stream's account inputs per data direction equal the frames' (every direction, told or not):
    the retransmissions' count, times and kinds, the stalls with their causes, the other direction's zero windows."""
    try:
        out = _core.stream_summary(path)
    except TracekitError:
        return
    an = tracekit.analyze(tracekit.read(path))
    parts = Parts(an)
    facts = _facts(out)
    for f, d in zip(out["flow"], out["dir"], strict=True):
        x, want = facts(f, d), parts.facts(f, d)
        r, w = x.resent, want.resent
        assert (r.n, r.fast, r.rto) == (w.n, w.fast, w.rto), (path, f, d)
        assert _bits([r.t0, r.t1]) == _bits([w.t0, w.t1]), (path, f, d)
        assert set(r.told) <= set(w.told), (path, f, d)  # (the stream keeps those inside the loss windows)
        assert _bits(x.stalls) == _bits(want.stalls), (path, f, d)
        assert _bits(list(x.zero_ads)) == _bits(list(want.zero_ads)), (path, f, d)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_account_inputs(path: Path) -> None:
    _inputs_equal(path)


def _handshakes_with_data(path: Path, sizes: list[int]) -> None:
    """A pcap of one connection per size: SYN, SYN-ACK, then an ACK carrying that many bytes (10 µs apart)."""
    def packet(t: float, src: bytes, dst: bytes, ports: tuple[int, int], seq: int, ack: int, flags: int,
               data: bytes = b"") -> bytes:
        tcp = struct.pack(">HHIIBBHHH", ports[0], ports[1], seq, ack, 5 << 4, flags, 65535, 0, 0) + data
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
        frame = b"\x00" * 6 + b"\x11" * 6 + b"\x08\x00" + ip + tcp
        us = round(t * 1e6)
        return struct.pack("<IIII", us // 1_000_000, us % 1_000_000, len(frame), len(frame)) + frame

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    client = bytes([10, 0, 0, 1])
    for i, n in enumerate(sizes):
        server, sport, t = bytes([10, 1, 0, i]), 2000 + i, i * 1e-3
        out += [packet(t, client, server, (sport, 80), 1000, 0, 0x02),
                packet(t + 1e-5, server, client, (80, sport), 5000, 1001, 0x12),
                packet(t + 2e-5, client, server, (sport, 80), 1001, 5001, 0x18, b"x" * n)]
    path.write_bytes(b"".join(out))


def test_many_directions_tell_the_largest_and_count_the_rest(tmp_path: Path) -> None:
    """Over :data:`MAX_TOLD` data directions: the largest told one by one in flow order, the rest in one
    sentence with their bytes; the stream's account is the frames path's."""
    from tracekit.explain_account import MAX_TOLD

    n = MAX_TOLD + 12
    sizes = [(k * 37) % 997 + 1 for k in range(n)]
    p = tmp_path / "many.pcap"
    _handshakes_with_data(p, sizes)
    assert _assert_same(p)
    story = explain(tracekit.analyze(tracekit.read(p)))
    told = [s.flow for s in story if s.kind == "overview"]
    largest = sorted(range(n), key=lambda k: (-sizes[k], k))[:MAX_TOLD]
    assert told == sorted(largest)
    (more,) = [s for s in story if s.kind == "directions_more"]
    rest = sum(sizes) - sum(sizes[k] for k in largest)
    assert more.values["count"] == n - MAX_TOLD and more.values["unique_bytes"] == rest
    assert more.values["share"] == pytest.approx(rest / sum(sizes))
    assert f"{n - MAX_TOLD} more data directions" in more.text
    # Jain's index still covers every direction
    (fair,) = [s for s in story if s.kind == "fairness"]
    assert fair.values["flows"] == n

