"""The ``flows`` list of ``analyze --json`` from the stream (:func:`tracekit._streamflows.flows`) equals the frames
path's (:func:`tracekit.reports.text.summary`'s), value for value and byte for byte, without polars or numpy.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import CAPTURES, SAMPLES, damaged_captures
from test_stream_summary import _without_handshake

import tracekit
from tracekit import _core
from tracekit._streamflows import flows
from tracekit.errors import TracekitError
from tracekit.reports.answers import json_flows
from tracekit.reports.text import _clean, summary
from tracekit.streamed import trace_meta


def _assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    got = _clean(got)
    assert [(r["flow"], r["dir"]) for r in got] == [(r["flow"], r["dir"]) for r in want]
    for g, w in zip(got, want, strict=True):
        assert list(g) == list(w), (g["flow"], g["dir"])
        for k in w:
            # the JSON's bytes: 1 and 1.0, None and 0 differ
            assert json.dumps(g[k]) == json.dumps(w[k]), (g["flow"], g["dir"], k, g[k], w[k])
    assert got == want
    assert json.dumps(got) == json.dumps(want)


def _check(path: Path, out: dict[str, Any]) -> int:
    """The stream's flows equal ``analyze --json``'s; the rows compared."""
    want = summary(tracekit.analyze(tracekit.read(path)))["flows"]
    _assert_same(flows(out, trace_meta(out, str(path))), want)
    return len(want)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_flows_equal_the_json(path: Path) -> None:
    try:
        out = _core.stream_summary(path)
    except TracekitError:
        pytest.skip("the stream refuses it (tests/test_stream_summary.py checks why)")
    _check(path, out)


def test_stream_flows_on_damaged_captures(tmp_path: Path) -> None:
    """The damaged copies of tests/test_stream_summary.py (same seed): still the JSON's flows."""
    compared = 0
    for p in damaged_captures(tmp_path, 20261127):
        try:
            out = _core.stream_summary(p)
        except TracekitError:
            continue
        _check(p, out)
        compared += 1
    assert compared >= 15, compared


@pytest.mark.parametrize("name", ["linux/bulk_lossy.pcap", "linux/kernel_truth/outage_reno.pcap"])
def test_stream_flows_without_a_handshake(tmp_path: Path, name: str) -> None:
    p = tmp_path / "mid.pcap"
    _without_handshake(SAMPLES / name, p)
    assert _check(p, _core.stream_summary(p)) > 0


def test_no_data_no_flows(tmp_path: Path) -> None:
    """Handshakes and UDP only: no direction carried TCP data, and both paths give no rows."""
    def record(t: int, ip: bytes) -> bytes:
        frame = b"\x00" * 6 + b"\x11" * 6 + b"\x08\x00" + ip
        return struct.pack("<IIII", t, 0, len(frame), len(frame)) + frame

    def ipv4(proto: int, l4: bytes) -> bytes:
        return struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0x4000, 64, proto, 0, bytes([10, 0, 0, 1]),
                           bytes([10, 0, 0, 2])) + l4

    syn = struct.pack(">HHIIBBHHH", 40000, 80, 1000, 0, 5 << 4, 0x02, 65535, 0, 0)
    udp = struct.pack(">HHHH", 5000, 53, 8 + 50, 0) + b"q" * 50
    p = tmp_path / "nodata.pcap"
    p.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + record(1, ipv4(6, syn))
                  + record(2, ipv4(17, udp)))
    out = _core.stream_summary(p)
    assert _check(p, out) == 0 and flows(out, trace_meta(out, str(p))) == []


def test_lab_units_are_one_rule() -> None:
    """Where the meta knows the segment size (ns-2; no capture does), both paths add the same lab units."""
    path = SAMPLES / "linux" / "bulk_lossy.pcap"
    an = tracekit.analyze(tracekit.read(path))
    an = dataclasses.replace(an, trace=an.trace.with_meta(segment_size=1000))
    want = _clean(json_flows(an))
    assert want and all(r["max_cwnd_packets"] is not None and r["data_pps"] for r in want)
    out = _core.stream_summary(path)
    _assert_same(flows(out, {**trace_meta(out, str(path)), "segment_size": 1000}), want)


def test_reductions_counted_in_congestion_avoidance_only() -> None:
    """A capture with losses: some directions count cwnd reductions, and only those after congestion
    avoidance began (the stream's ``_ca_start``)."""
    path = SAMPLES / "linux" / "bulk_lossy.pcap"
    out = _core.stream_summary(path)
    got = flows(out, trace_meta(out, str(path)))
    assert any((r["cwnd_reductions"] or 0) > 0 for r in got)
    assert all(r["cwnd_reductions"] is None or r["cwnd_reductions"] <= r["loss_events"] for r in got)


def test_stream_flows_import_neither_polars_nor_numpy() -> None:
    code = (
        "import sys\n"
        "from tracekit import _core\n"
        "from tracekit._streamflows import flows\n"
        "from tracekit.streamed import trace_meta\n"
        f"p = {str(SAMPLES / 'linux' / 'bulk_lossy.pcap')!r}\n"
        "out = _core.stream_summary(p)\n"
        "rows = flows(out, trace_meta(out, p))\n"
        "assert rows and rows[0]['src'] and rows[0]['cwnd_reductions'] is not None, rows\n"
        "print(sorted(m for m in ('polars', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
