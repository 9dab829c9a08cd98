"""``analyze --json`` from the stream (:func:`tracekit.streamed.summary_document`) is the frames path's document.

For every sample pcap/pcapng (and damaged copies) the stream's document equals
:func:`tracekit.reports.text.summary` of :func:`tracekit.pipeline.load`, value for value, key order
and JSON bytes included, with and without a link rate; the command line takes it for a plain
capture without importing polars or numpy, and reads everything else through the frames path.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CAPTURES, SAMPLES, damaged_captures

from tracekit import pipeline
from tracekit.reports import text
from tracekit.streamed import summary_document


def _frames_document(path: Path, link_rate: str | None = None) -> dict[str, object]:
    an = pipeline.load(str(path), keep_per_packet=False)
    return text.summary(an, link_bps=pipeline.link_rate(an, link_rate))


def _assert_same(path: Path, link_rate: str | None = None) -> bool:
    """False when the stream does not answer for the file (the frames path reads it)."""
    got = summary_document(str(path), link_rate=link_rate)
    if got is None:
        return False
    want = _frames_document(path, link_rate)
    assert got == want
    assert text.dumps(got) == text.dumps(want)  # key order and number types too
    return True


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_document(path: Path) -> None:
    _assert_same(path)


def test_stream_document_answers_most_samples() -> None:
    """The stream answers for the sample captures (a refusal would silently send them all to the frames path)."""
    answered = sum(summary_document(str(p)) is not None for p in CAPTURES)
    assert answered >= 0.9 * len(CAPTURES)


def test_stream_document_with_a_link_rate() -> None:
    for p in CAPTURES[:8]:
        _assert_same(p, "10Mbit/s")


def test_stream_document_on_damaged_captures(tmp_path: Path) -> None:
    compared = sum(_assert_same(p) for p in damaged_captures(tmp_path, 20261127))
    assert compared >= 5


def test_a_compressed_capture_goes_to_the_frames_path(tmp_path: Path) -> None:
    gz = tmp_path / "c.pcap.gz"
    gz.write_bytes(gzip.compress(CAPTURES[0].read_bytes()))
    assert summary_document(str(gz)) is None


_CLI = """
import sys, json
from tracekit.cli.main import main
try:
    main(["analyze", "--json", *sys.argv[1:]], standalone_mode=False)
finally:
    print("HEAVY", sorted(m for m in ("polars", "numpy", "pyarrow") if m in sys.modules), file=sys.stderr)
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CLI, *args], capture_output=True, text=True, check=True)


def test_cli_json_of_a_capture_imports_neither_polars_nor_numpy() -> None:
    path = CAPTURES[0]
    r = _cli(str(path))
    assert "HEAVY []" in r.stderr
    assert json.loads(r.stdout) == json.loads(text.dumps(_frames_document(path)))


def test_cli_json_of_several_files_mixes_the_paths(tmp_path: Path) -> None:
    """A plain capture from the stream and a compressed one from the frames path, in one array."""
    gz = tmp_path / "c.pcap.gz"
    gz.write_bytes(gzip.compress(CAPTURES[1].read_bytes()))
    r = _cli(str(CAPTURES[1]), str(gz))
    a, b = json.loads(r.stdout)
    assert "'polars'" in r.stderr
    named = {"capture": None, "goodput_capture": None}  # (the labels the file's name gives)
    assert [{**f, **named} for f in a["flows"]] == [{**f, **named} for f in b["flows"]]
    assert a["explain"] == b["explain"]


def _pcapng_from(pcap: Path, out: Path, application: str) -> Path:
    """``pcap`` rewritten as a pcapng (microsecond stamps) whose section header names ``application``."""
    import struct

    data = pcap.read_bytes()
    magic, _, _, _, _, snaplen, link = struct.unpack("<IHHiIII", data[:24])
    assert magic == 0xA1B2C3D4  # (a little-endian microsecond pcap)

    def block(kind: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    app = application.encode()
    opts = struct.pack("<HH", 4, len(app)) + app + b"\0" * (-len(app) % 4) + struct.pack("<HH", 0, 0)
    blocks = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + opts),
              block(1, struct.pack("<HHI", link, 0, snaplen))]
    at = 24
    while at + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack("<IIII", data[at:at + 16])
        stamp = sec * 1_000_000 + usec
        blocks.append(block(6, struct.pack("<IIIII", 0, stamp >> 32, stamp & 0xFFFFFFFF, incl, orig)
                            + data[at + 16:at + 16 + incl]))
        at += 16 + incl
    out.write_bytes(b"".join(blocks))
    return out


def test_a_capture_made_by_ns3_takes_its_minimum_rto(tmp_path: Path) -> None:
    """A pcapng whose section header names ns-3 is judged with ns-3's 1 s floor, as the frames path judges
    it (the stream runs again with that floor), and ``--rto-floor`` wins over the stack's."""
    src = SAMPLES / "linux" / "stall_cut.pcap"  # (timeouts whose kind the floor changes)
    ns3 = _pcapng_from(src, tmp_path / "ns3.pcapng", "ns-3")
    doc = summary_document(str(ns3))
    assert doc is not None and doc["trace"]["rto_floor_s"] == 1.0
    assert doc == _frames_document(ns3)
    linux = summary_document(str(src))
    assert linux is not None and linux["flows"] != doc["flows"]  # (the floor matters on this capture)
    given = summary_document(str(ns3), rto_floor_s=0.2)
    want = text.summary(an := pipeline.load(str(ns3), rto_floor_s=0.2, keep_per_packet=False),
                        link_bps=pipeline.link_rate(an))
    assert given == want
