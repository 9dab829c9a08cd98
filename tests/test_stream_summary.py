"""The streamed summary (``tracekit._core.stream_summary``, ``src/stream/``) equals the flows frame.

The stream reads a pcap or pcapng file in bounded batches and keeps only per-connection state; every
column it gives must be the one :func:`tracekit.analyze` computes from the packet columns, on
every sample capture it accepts. A capture it does not accept raises a ``TracekitError``
that names the file and the reason.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from conftest import SAMPLES

import tracekit
from tracekit import _core
from tracekit.errors import TracekitError, UnknownFormatError

#: The flows columns the stream gives.
COLUMNS = [
    "packets", "data_packets", "data_bytes", "wire_bytes", "unique_bytes", "start", "end", "mss", "wscale",
    "handshake_rtt_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s", "rtt_samples", "rtt_method",
]
#: What the stream refuses, as its message says it.
REASONS = ("IP length runs beyond its frame",)
CAPTURES = sorted(p for p in SAMPLES.rglob("*") if p.suffix in (".pcap", ".pcapng"))


def _none(v: object) -> object:
    """The stream's stand-ins (-1, NaN, 0 samples) as the frame's nulls."""
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _streamed(s: dict[str, object]) -> pl.DataFrame:
    cols = {k: s[k] for k in ["flow", "dir", *COLUMNS]}
    return pl.DataFrame(cols).with_columns(
        pl.col("flow").cast(pl.UInt32), pl.col("dir").cast(pl.Int8),
        *[pl.col(c).replace(-1, None) for c in ("mss", "wscale")],
        *[pl.col(c).fill_nan(None) for c in ("handshake_rtt_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s")],
        pl.when(pl.col("rtt_samples") > 0).then(pl.col("rtt_samples")).alias("rtt_samples"),
    ).sort("flow", "dir")


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_equals_flows(path: Path) -> None:
    try:
        s = _core.stream_summary(path)
    except TracekitError as e:
        assert e.path == str(path) and str(path) in str(e)
        assert any(r in e.message for r in REASONS), e.message
        return
    want = tracekit.analyze(tracekit.read(path)).flows.sort("flow", "dir").select("flow", "dir", *COLUMNS)
    got = _streamed(s)
    assert got["flow"].to_list() == want["flow"].to_list() and got["dir"].to_list() == want["dir"].to_list()
    for c in COLUMNS:
        # bit-identical floats: compared as Python values, never within a tolerance
        assert [_none(v) for v in got[c].to_list()] == want[c].to_list(), c


def test_most_samples_stream() -> None:
    accepted = 0
    for p in CAPTURES:
        try:
            _core.stream_summary(p)
            accepted += 1
        except TracekitError:
            pass
    assert accepted >= len(CAPTURES) - 2


@pytest.mark.parametrize("name", ["plain_v6.snoop", "tso_v4.erf"])
def test_other_containers_are_refused_by_name(name: str) -> None:
    path = SAMPLES / "field" / name
    with pytest.raises(UnknownFormatError, match="not a pcap file") as e:
        _core.stream_summary(path)
    assert e.value.path == str(path)


def test_missing_file_is_a_tracekit_error(tmp_path: Path) -> None:
    with pytest.raises(TracekitError, match="cannot read file"):
        _core.stream_summary(tmp_path / "absent.pcap")
