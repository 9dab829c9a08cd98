"""Loading bytes: compression by magic, caps against bombs, damaged streams."""

from __future__ import annotations

import bz2
import gzip
import time
import zlib
from pathlib import Path

import pytest

import tracekit
from tracekit import _source
from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import Limits


def test_gzip_bz2_roundtrip(tmp_path: Path) -> None:
    raw = b"hello " * 1000
    for kind, data in (("gzip", gzip.compress(raw)), ("bz2", bz2.compress(raw))):
        got = _source.load(data)
        assert got.compression == kind and got.data == raw


def test_concatenated_gzip_members() -> None:
    data = gzip.compress(b"a" * 10) + gzip.compress(b"b" * 10)
    assert _source.load(data).data == b"a" * 10 + b"b" * 10


def test_gzip_bomb_refused_fast(tmp_path: Path) -> None:
    """A ~200 KB gzip that inflates to 200 MiB is refused with a limit error within 2 s."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    # a valid pcap header, then 200 MiB of zeros (= millions of zero-length records)
    header = bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000")
    chunk = bytes(1 << 20)
    parts = [comp.compress(header)] + [comp.compress(chunk) for _ in range(200)]
    parts.append(comp.flush())
    bomb = tmp_path / "bomb.pcap.gz"
    bomb.write_bytes(b"".join(parts))
    assert bomb.stat().st_size < 400_000
    t = time.monotonic()
    with pytest.raises(LimitError, match="decompressed size exceeds"):
        tracekit.read(bomb)
    assert time.monotonic() - t < 2.0  # acceptance bound from the issue, not a benchmark


def test_truncated_gzip_is_corrupt(tmp_path: Path) -> None:
    data = gzip.compress(bytes(range(256)) * 4000)
    p = tmp_path / "cut.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptTraceError, match="ends early"):
        _source.load(p)


def test_hard_cap_and_input_size(tmp_path: Path) -> None:
    data = gzip.compress(bytes(1 << 20))
    with pytest.raises(LimitError):
        _source.load(data, Limits(max_decompressed_bytes=1000))
    p = tmp_path / "big.bin"
    p.write_bytes(b"x" * 2000)
    with pytest.raises(LimitError, match="over the limit"):
        _source.load(p, Limits(max_input_bytes=1000))


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(UnknownFormatError, match="no such file"):
        _source.load(tmp_path / "nope.pcap")
    with pytest.raises(UnknownFormatError, match="directory"):
        _source.load(tmp_path)


def test_limits_from_toml(tmp_path: Path) -> None:
    cfg = tmp_path / "tracekit.toml"
    cfg.write_text("[limits]\nmax_caplen = 1000\n")
    assert Limits.from_toml(cfg).max_caplen == 1000
    cfg.write_text("[limits]\nmax_bogus = 1\n")
    with pytest.raises(tracekit.UsageError, match="unknown limit"):
        Limits.from_toml(cfg)
