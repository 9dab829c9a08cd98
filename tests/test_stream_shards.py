"""Pass 2 of the stream on several threads (``src/stream/shards.rs``) gives what one thread gives.

The connections are dealt to shards by `analyze`'s batches of connections, which exist only on
captures of at least 2 · 2^18 TCP packets, so the test writes one: copies of a sample connection,
each on its own port pair and started 20 ms after the one before, merged in time order so that the
copies overlap and every batch of rows mixes the shards' packets.
"""

from __future__ import annotations

import heapq
import math
import struct
from pathlib import Path
from typing import Any

import pytest

from tracekit import _core

SEED = Path(__file__).resolve().parent.parent / "samples" / "linux" / "kernel_truth" / "outage_reno.pcap"
#: Packets `analyze` must see before it cuts batches (``fstats::BATCH_ROWS`` · 2), and some more.
WANTED = 2 * (1 << 18) + 40_000


def _records(data: bytes) -> list[tuple[int, bytes]]:
    """A little-endian microsecond pcap's records: (time in µs, the record's bytes after its header)."""
    out, p = [], 24
    while p + 16 <= len(data):
        sec, usec, cap, _orig = struct.unpack_from("<IIII", data, p)
        out.append((sec * 1_000_000 + usec, data[p:p + 16 + cap]))
        p += 16 + cap
    return out


def _copy(recs: list[tuple[int, bytes]], k: int, shift_us: int) -> list[tuple[int, int, bytes]]:
    """Copy ``k`` of the records: times ``k · shift_us`` later, both TCP ports moved by 7 · k (Ethernet/IPv4)."""
    out = []
    for n, (t, rec) in enumerate(recs):
        b = bytearray(rec)
        t2 = t + k * shift_us
        struct.pack_into("<II", b, 0, t2 // 1_000_000, t2 % 1_000_000)
        ihl = (b[16 + 14] & 0x0F) * 4
        at = 16 + 14 + ihl
        if b[16 + 12:16 + 14] == b"\x08\x00" and b[16 + 14 + 9] == 6 and len(b) >= at + 4:
            sport, dport = struct.unpack_from(">HH", b, at)
            # the TCP checksum is not checked by the reader; the ports stay on their side
            struct.pack_into(">HH", b, at, (sport + 7 * k) & 0xFFFF, (dport + 7 * k) & 0xFFFF)
        out.append((t2, k * 10_000_000 + n, bytes(b)))
    return out


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = SEED.read_bytes()
    assert struct.unpack_from("<I", data, 0)[0] == 0xA1B2C3D4, "a little-endian µs pcap"
    recs = _records(data)
    copies = -(-WANTED // len(recs))
    out = tmp_path_factory.mktemp("shards") / "many.pcap"
    with out.open("wb") as f:
        f.write(data[:24])
        for _t, _n, rec in heapq.merge(*(_copy(recs, k, 20_000) for k in range(copies))):
            f.write(rec)
    return out


def _same(v: Any) -> Any:
    """NaN made comparable."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, list):
        return [_same(x) for x in v]
    if isinstance(v, dict):
        return {k: _same(x) for k, x in v.items()}
    return v


def test_the_capture_is_cut_in_batches(many: Path) -> None:
    one = _core.stream_summary(many, threads=1)
    assert one["packets_fed"] >= WANTED
    assert len(set(one["flow"])) >= 100  # each copy its own connection


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_any_thread_count_gives_one_threads_answer(many: Path, threads: int) -> None:
    one = _same(_core.stream_summary(many, threads=1))
    got = _same(_core.stream_summary(many, threads=threads))
    assert list(got) == list(one)
    for k in one:
        assert got[k] == one[k], k


def test_the_default_is_the_same_answer(many: Path) -> None:
    assert _same(_core.stream_summary(many)) == _same(_core.stream_summary(many, threads=1))
