"""Stalls and their causes, against causes injected into real Linux transfers."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import sample
from tcpconv import P, conv, handshake

import tracekit
from tracekit import _core, schema
from tracekit.analysis._state import prepare
from tracekit.analysis.stalls import MIN_STALL_S, stalls

MSS = 1000


def test_schema_and_empty() -> None:
    assert stalls(schema.empty(schema.PACKETS)).schema == pl.Schema(schema.STALLS)
    assert stalls(conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.03, 1, 1, 0, 1001))).is_empty()


def test_idle_sender_with_everything_acked_is_app_limited() -> None:
    s = stalls(conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.03, 1, 1, 0, 1001),
                    P(2.0, 0, 1001, MSS, 1), P(2.01, 1, 1, 0, 2001)))
    assert s.select("start", "end", "cause").rows() == [(0.02, 2.0, "app_limited")]


def test_sequence_numbers_beyond_32_bits_give_the_same_stall() -> None:
    """Above 2^30 the state keeps 64-bit columns (prepare); the core reads either width."""
    base = 1 << 31
    pk = conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.03, 1, 1, 0, 1001),
              P(2.0, 0, 1001, MSS, 1), P(2.01, 1, 1, 0, 2001)).with_columns(
        seq=pl.col("seq") + base, ack=pl.col("ack") + base)
    assert prepare(pk).schema["hi_dend"] == pl.Int64
    assert stalls(pk).select("start", "end", "cause").rows() == [(0.02, 2.0, "app_limited")]


def test_bad_columns_raise_value_error_in_the_core() -> None:
    one, none = np.zeros(1, np.uint32), np.zeros(0, np.uint32)
    f, i = np.zeros(1), np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="rto_rows"):
        _core.tcp_stalls(one, f, i, i, i, i, np.zeros(1, bool), none, np.array([7], np.uint32), none,
                         np.zeros(0), none, np.zeros(0, np.int8), np.zeros(0))


def test_pauses_below_the_threshold_are_not_stalls() -> None:
    pk = conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.03, 1, 1, 0, 1001),
              P(0.02 + MIN_STALL_S * 0.9, 0, 1001, MSS, 1), P(0.02 + MIN_STALL_S, 1, 1, 0, 2001))
    assert stalls(pk).is_empty()


def test_zero_window_during_the_pause() -> None:
    s = stalls(conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.03, 1, 1, 0, 1001, win=0),
                    P(1.0, 1, 1, 0, 1001, win=8000), P(1.001, 0, 1001, MSS, 1), P(1.01, 1, 1, 0, 2001)))
    assert s["cause"].to_list() == ["zero_window"]


def test_full_receive_window_is_rwnd_limited() -> None:
    s = stalls(conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.021, 0, 1001, MSS, 1), P(0.03, 1, 1, 0, 1, win=2000),
                    P(1.5, 1, 1, 0, 2001, win=2000), P(1.501, 0, 2001, MSS, 1)))
    assert s["cause"].to_list() == ["rwnd_limited"]


def test_a_lost_tail_recovered_by_timeout_is_an_rto_stall() -> None:
    s = stalls(conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.021, 0, 1001, MSS, 1), P(0.03, 1, 1, 0, 1001),
                    P(1.0, 0, 1001, MSS, 1), P(1.01, 1, 1, 0, 2001)))
    assert s.select("start", "end", "cause").rows() == [(0.021, 1.01, "rto")]


def test_stall_cut_one_rto_stall_over_the_cut() -> None:
    """The bottleneck was cut for ~1.5 s (times in stall_cut.json): one stall, ended by a timeout."""
    cut = json.loads(sample("linux", "stall_cut.json").read_text())
    s = stalls(tracekit.read(sample("linux", "stall_cut.pcap")).packets)
    print(
        f"cut {cut['cut_start_rel']:.3f}-{cut['cut_end_rel']:.3f} s; stalls: {s.select('start', 'end', 'cause').rows()}"
    )
    over = s.filter((pl.col("start") < cut["cut_end_rel"]) & (pl.col("end") > cut["cut_start_rel"]))
    assert s.height == over.height == 1
    row = over.row(0, named=True)
    assert row["cause"] == "rto"
    # it starts when the last new data left before the cut, and ends after the cut ended
    assert cut["cut_start_rel"] - 0.5 < row["start"] < cut["cut_start_rel"] + 0.5
    assert row["end"] > cut["cut_end_rel"]


def test_slow_reader_zero_window_stalls() -> None:
    s = stalls(tracekit.read(sample("linux", "slow_reader.pcap")).packets)
    print(f"slow_reader: {s.height} stalls, {s['duration'].sum():.2f} s, causes {s['cause'].unique().to_list()}")
    assert s.height >= 3
    assert set(s["cause"]) == {"zero_window"}


def test_rwnd_limited_is_limited_by_the_receive_window_most_of_the_time() -> None:
    a = tracekit.analyze(tracekit.read(sample("linux", "rwnd_limited.pcap")))
    row = a.flows.filter(pl.col("dir") == 0).row(0, named=True)
    print(f"rwnd_limited: rwnd {row['limited_rwnd_share']:.1%}, cwnd {row['limited_cwnd_share']:.1%}, "
          f"app {row['limited_app_share']:.1%}; stalls {a.stalls.height}")
    assert row["limited_rwnd_share"] > 0.5
    assert set(a.stalls["cause"]) <= {"rwnd_limited"}


def test_bulk_lossy_recovers_without_stalls() -> None:
    """Losses recovered by SACK within a few RTTs are not stalls."""
    assert stalls(tracekit.read(sample("linux", "bulk_lossy.pcap")).packets).is_empty()
