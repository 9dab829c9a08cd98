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
from conftest import CAPTURES, SAMPLES, damaged_captures

import tracekit
from tracekit import _core, _flowrows
from tracekit.analysis._groups import MISSING
from tracekit.analysis.retrans import RTO_FLOORS_S
from tracekit.errors import TracekitError, UnknownFormatError
from tracekit.parsers._address import address_text

#: The flows columns the stream gives.
COLUMNS = [
    "packets", "data_packets", "data_bytes", "wire_bytes", "unique_bytes", "start", "end", "mss", "wscale",
    "handshake_rtt_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s", "rtt_samples", "rtt_method",
    "retrans_packets", "retrans_bytes", "retrans_fast", "retrans_rto", "retrans_spurious",
    "flight_max_bytes", "flight_mean_bytes",
    "stall_count", "stall_time_s",
    "max_rwnd_bytes", "init_window_bytes",
    "init_window_segments", "dup_acks", "vantage_point", "window_scaling", "src", "sport", "dst", "dport",
    "cwnd_source", "loss_events",
]
#: The flows columns ``tracekit._flowrows`` computes from the stream's raw inputs (the limit shares and the
#: largest cwnd: the stream's own, left out away from the sender by ``_flowrows.with_models``).
DERIVED = ["duration", "transfer_s", "handshake_s", "throughput_bps", "goodput_bps", "delivered_bytes",
           "goodput_source", "loss_rate", "loss_event_rate", "mathis_bps", "padhye_bps", "window_limited_bps",
           "limited_cwnd_share", "limited_rwnd_share", "limited_app_share", "max_cwnd_bytes"]
#: The records' inputs the stream gives (``_flowrows.transfer_and_goodput``).
INPUTS = ["_data_t0", "_acked_t", "_ack_t", "_ack_bytes", "_syn_t"]
#: The models' inputs (``_flowrows.with_models``): the stream's names, and the records'.
MODEL_INPUTS = {"loss_events": "loss_events", "_smss": "_smss", "rtt_mean_s": "rtt_mean_s", "_srtt": "srtt",
                "_rttvar": "rttvar", "max_rwnd_bytes": "max_rwnd_bytes"}
#: What the stream refuses, as its message says it.
REASONS: tuple[str, ...] = ()


def _none(v: object) -> object:
    """The stream's stand-ins (-1, NaN, 0 samples) as the frame's nulls."""
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _missing(v: object) -> object:
    """The core's stand-ins (NaN, MISSING) as None, as ``tracekit.analysis._flowdirs`` turns them."""
    return None if v == MISSING else _none(v)


def _addresses(s: dict[str, object], end: str) -> list[str]:
    """The stream's raw addresses as the frame's text (the reader's one formatting function)."""
    v6, hi, lo = (s[f"_{end}_{k}"] for k in ("v6", "hi", "lo"))  # type: ignore[attr-defined]
    return [address_text(not a, b, c) for a, b, c in zip(v6, hi, lo, strict=True)]


def _streamed(s: dict[str, object]) -> pl.DataFrame:
    cols = {k: _addresses(s, k) if k in ("src", "dst") else s[k] for k in ["flow", "dir", *COLUMNS]}
    return pl.DataFrame(cols).with_columns(
        pl.col("flow").cast(pl.UInt32), pl.col("dir").cast(pl.Int8),
        *[pl.col(c).replace(-1, None) for c in ("mss", "wscale", "flight_max_bytes")],
        *[pl.col(c).fill_nan(None) for c in ("handshake_rtt_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s",
                                             "flight_mean_bytes")],
        pl.when(pl.col("rtt_samples") > 0).then(pl.col("rtt_samples")).alias("rtt_samples"),
        *[pl.col(c).replace(MISSING, None) for c in ("max_rwnd_bytes", "init_window_bytes", "init_window_segments")],
    ).sort("flow", "dir")


def _records(s: dict[str, object]) -> pl.DataFrame:
    """The stream's columns and inputs as flows records, through the frames path's ``_flowrows`` arithmetic."""
    keys = ["flow", "dir", "start", "end", "wire_bytes", "unique_bytes", "data_packets", "retrans_packets",
            "retrans_spurious", "vantage_point", *_flowrows.LIMIT_SHARES, "max_cwnd_bytes", "cwnd_source", *INPUTS]
    cols = {k: [_missing(v) for v in s[k]] for k in keys}  # type: ignore[attr-defined]
    cols.update({r: [_missing(v) for v in s[k]] for k, r in MODEL_INPUTS.items()})  # type: ignore[attr-defined]
    rows = [{k: cols[k][i] for k in cols} for i in range(len(cols["flow"]))]
    rows = [_flowrows.loss_rate(_flowrows.transfer_and_goodput(_flowrows.rates(r)), simulator=False) for r in rows]
    rows = _flowrows.with_models(rows)
    return pl.DataFrame({c: [r[c] for r in rows] for c in ["flow", "dir", *DERIVED]},
                        schema_overrides={"flow": pl.UInt32, "dir": pl.Int8}).sort("flow", "dir")


def _assert_equal(path: Path, s: dict[str, object]) -> None:
    want = tracekit.analyze(tracekit.read(path)).flows.sort("flow", "dir").select("flow", "dir", *COLUMNS, *DERIVED)
    got, derived = _streamed(s), _records(s)
    assert got["flow"].to_list() == want["flow"].to_list() and got["dir"].to_list() == want["dir"].to_list()
    for c in COLUMNS:
        # bit-identical floats: compared as Python values, never within a tolerance
        assert [_none(v) for v in got[c].to_list()] == want[c].to_list(), c
    for c in DERIVED:
        assert derived[c].to_list() == want[c].to_list(), c


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_stream_equals_flows(path: Path) -> None:
    try:
        s = _core.stream_summary(path)
    except TracekitError as e:
        assert e.path == str(path) and str(path) in str(e)
        assert any(r in e.message for r in REASONS), e.message
        return
    _assert_equal(path, s)


def test_rto_floor_is_a_parameter() -> None:
    """The default is Linux's floor, what ``rto_floor`` takes for a pcap capture; another floor changes kinds only.

    ``outage_reno.pcap`` has timeouts: under a floor no timer can reach they become fast re-sends.
    """
    path = SAMPLES / "linux" / "kernel_truth" / "outage_reno.pcap"
    s = _core.stream_summary(path)
    assert s["retrans_rto"] == \
        _core.stream_summary(path, rto_floor_s=RTO_FLOORS_S["linux"])["retrans_rto"]
    assert sum(s["retrans_rto"]) > 0
    a, b = _core.stream_summary(path, rto_floor_s=0.0), _core.stream_summary(path, rto_floor_s=1e9)
    assert a["retrans_packets"] == b["retrans_packets"]
    assert sum(b["retrans_rto"]) == 0 < sum(a["retrans_rto"])


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


def _without_handshake(src: Path, dst: Path) -> None:
    """``src`` (a pcap file) without its SYN packets: a capture started mid-connection."""
    import struct

    syn = set(tracekit.read(src).packets.filter((pl.col("flags") & 0x02) != 0)["frame"].to_list())
    data = src.read_bytes()
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, at, frame = [data[:24]], 24, 0
    while at + 16 <= len(data):
        caplen = struct.unpack(order + "I", data[at + 8:at + 12])[0]
        frame += 1
        if frame not in syn:
            out.append(data[at:at + 16 + caplen])
        at += 16 + caplen
    dst.write_bytes(b"".join(out))


@pytest.mark.parametrize("name", ["linux/bulk_lossy.pcap", "linux/slow_reader.pcap", "linux/ipv6_bulk.pcap",
                                  "linux/kernel_truth/outage_reno.pcap"])
def test_stream_equals_flows_without_a_handshake(tmp_path: Path, name: str) -> None:
    """Without a handshake the vantage point comes from the median of the data direction's ``seq``
    RTT samples (kept by the values at its ranks, ``flowstats/ranks.rs``), and the RTT method,
    window scales and the rest from what the stream finds mid-connection: still the flows frame's."""
    p = tmp_path / "mid.pcap"
    _without_handshake(SAMPLES / name, p)
    s = _core.stream_summary(p)
    assert any(v is not None for v in s["vantage_point"])
    _assert_equal(p, s)


def test_stream_sums_as_the_frames_path_cuts() -> None:
    """The stream adds the limit shares in the blocks and batches the frames path uses, so that
    they round alike (``src/stream/fstats.rs``): its constants are the Python ones."""
    from tracekit.analysis import _batches, _flowstats

    assert _core.STREAM_SUM_BLOCK == _flowstats._BLOCK
    assert _core.STREAM_BATCH_ROWS == _batches.BATCH_ROWS


def test_stream_equals_flows_on_damaged_captures(tmp_path: Path) -> None:
    """Sample captures with one byte in 2,000 changed past the file header (odd flags, numbers,
    lengths and options): whatever both accept, the stream still equals the flows frame."""
    compared = 0
    for p in damaged_captures(tmp_path, 20261127):
        try:
            s = _core.stream_summary(p)
        except TracekitError:
            continue
        _assert_equal(p, s)
        compared += 1
    assert compared >= 15, compared


@pytest.mark.parametrize("name", ["linux/kernel_truth/outage_reno.pcap", "linux/bulk_lossy.pcap"])
def test_stream_equals_flows_when_times_go_back(tmp_path: Path, name: str) -> None:
    """Fifteen records stamped 1 ms before the record before them (W-NONMONOTONIC): the cwnd estimate
    reads each direction in capture order (time, then frame), as ``_cwnd_rows`` sorts it; the stream
    hands its batches to the same step (``src/stream/cwnd.rs``), so its loss events are still the frame's."""
    import random
    import struct

    data = bytearray((SAMPLES / name).read_bytes())
    order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    starts, at = [], 24
    while at + 16 <= len(data):
        starts.append(at)
        at += 16 + struct.unpack(order + "I", data[at + 8:at + 12])[0]
    for k in random.Random(1).sample(range(2, len(starts)), 15):
        sec, frac = struct.unpack(order + "II", data[starts[k - 1]:starts[k - 1] + 8])
        v = sec * 1_000_000 + frac - 1000  # (microsecond stamps in both samples)
        struct.pack_into(order + "II", data, starts[k], v // 1_000_000, v % 1_000_000)
    p = tmp_path / "back.pcap"
    p.write_bytes(bytes(data))
    s = _core.stream_summary(p)
    assert "W-NONMONOTONIC" in [w[0] for w in s["warnings"]]
    assert sum(s["loss_events"]) > 0
    _assert_equal(p, s)
