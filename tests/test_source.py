"""Loading bytes: compression by magic, caps against bombs, damaged streams."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import json
import os
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest
from conftest import sample

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


def _feed(fifo: Path, data: bytes) -> threading.Event:
    """Write ``data`` into ``fifo`` from a thread, as a shell's ``<(...)`` would; set the
    returned event when done with it.

    A reader that opened the pipe a second time would wait for a writer for ever: until the
    event is set, the thread then connects to any such open at once and leaves it at end of
    file, so that the regression fails instead of hanging.
    """
    done = threading.Event()

    def write() -> None:
        # BrokenPipeError: the reader stopped at its limit
        with open(fifo, "wb") as fh, contextlib.suppress(BrokenPipeError):
            fh.write(data)
        while not done.wait(0.2):
            # non-blocking: fails at once (ENXIO) unless a reader waits in open()
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    threading.Thread(target=write, daemon=True).start()
    return done


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_read_once_and_whole(tmp_path: Path) -> None:
    """`tracekit analyze <(zcat x.pcap.gz)`: a pipe's size reads as 0 and it cannot be read
    twice (sniff, then the reader) nor mapped; it is read once into memory, decompressed as a
    file would be."""
    capture = sample("linux", "bulk_lossy.pcap")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = _feed(fifo, gzip.compress(capture.read_bytes()))
    piped = tracekit.read(fifo)
    done.set()
    direct = tracekit.read(capture)
    assert piped.meta["compression"] == "gzip"
    assert piped.packets.equals(direct.packets)
    # with the format given, no sniffing: the reader still gets the bytes, not the pipe
    done = _feed(fifo, capture.read_bytes())
    assert tracekit.read(fifo, "pcap").packets.equals(direct.packets)
    done.set()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_stops_at_the_input_limit(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = _feed(fifo, sample("linux", "bulk_lossy.pcap").read_bytes())
    with pytest.raises(LimitError, match="over the limit"):
        tracekit.read(fifo, limits=Limits(max_input_bytes=4096))
    done.set()


def test_command_reads_a_capture_from_standard_input() -> None:
    capture = sample("linux", "bulk_lossy.pcap")
    cmd = [sys.executable, "-m", "tracekit", "analyze", "--json"]
    piped = subprocess.run([*cmd, "/dev/stdin"], input=capture.read_bytes(), capture_output=True, check=False)
    direct = subprocess.run([*cmd, str(capture)], capture_output=True, check=False)
    assert piped.returncode == 0, piped.stderr
    # every flows row names the file it was read from (issue 17 point 3): "stdin" vs the path
    names = ("capture", "goodput_capture")
    cut = lambda doc: [{k: v for k, v in f.items() if k not in names} for f in json.loads(doc)["flows"]]  # noqa: E731
    assert cut(piped.stdout) == cut(direct.stdout)
    assert {json.loads(direct.stdout)["flows"][0][k] for k in names} == {"bulk_lossy.pcap"}


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_is_refused_from_its_first_bytes() -> None:
    """Not read to the end like a pipe (up to max_input_bytes, 4 GiB by default): its head
    already says it is no trace. (Read like a pipe, it would stop at this small limit instead.)"""
    with pytest.raises(UnknownFormatError, match="not a recognised trace format"):
        tracekit.read("/dev/zero", limits=Limits(max_input_bytes=1 << 20))
