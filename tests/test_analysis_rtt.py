"""RTT samples: data→ACK matching with Karn's rule, TCP timestamps with 32-bit wrap, RFC 6298 smoothing."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import sample
from tcpconv import P, conv, handshake

import tracekit
from tracekit import schema
from tracekit.analysis import _state
from tracekit.analysis import rtt as rtt_mod
from tracekit.analysis.rtt import rtt, smoothed

MSS = 1000


def _seq(*pkts: dict) -> pl.DataFrame:
    return rtt(conv(*pkts)).filter(pl.col("method") == "seq")


def test_schema() -> None:
    assert rtt(conv(*handshake())).schema == pl.Schema(schema.RTT)
    assert rtt(schema.empty(schema.PACKETS)).schema == pl.Schema(schema.RTT)


def test_the_ack_of_a_segment_end_closes_a_sample() -> None:
    r = _seq(*handshake(rtt=0.010), P(0.020, 0, 1, MSS, 1), P(0.050, 1, 1, 0, 1001))
    data = r.filter(pl.col("dir") == 0)
    # the SYN (SYN-ACK 10 ms later) and the segment (ACK 30 ms later)
    assert data["rtt_s"].round(6).to_list() == [0.010, 0.030]
    assert data["frame"].to_list() == [2, 5]  # the ACKs' frames
    assert r.filter(pl.col("dir") == 1)["rtt_s"].round(6).to_list() == [0.00001]  # SYN-ACK -> ACK


def test_a_delayed_ack_times_the_segment_it_ends_at() -> None:
    r = _seq(*handshake(), P(0.020, 0, 1, MSS, 1), P(0.025, 0, 1001, MSS, 1), P(0.060, 1, 1, 0, 2001))
    assert r.filter(pl.col("frame") == 6)["rtt_s"].round(6).to_list() == [0.035]


def test_acks_ending_inside_a_segment_or_repeating_give_no_sample() -> None:
    r = _seq(*handshake(), P(0.020, 0, 1, 2 * MSS, 1), P(0.050, 1, 1, 0, 1001), P(0.060, 1, 1, 0, 2001),
             P(0.061, 1, 1, 0, 2001))
    assert r.filter(pl.col("dir") == 0)["frame"].to_list() == [2, 6]


def test_karn_no_sample_for_retransmitted_segments() -> None:
    r = _seq(*handshake(), P(0.020, 0, 1, MSS, 1), P(0.300, 0, 1, MSS, 1), P(0.320, 1, 1, 0, 1001),
             P(0.330, 0, 1001, MSS, 1), P(0.360, 1, 1, 0, 2001))
    data = r.filter(pl.col("dir") == 0)
    assert data["frame"].to_list() == [2, 8]  # the SYN and the segment sent once, not the retransmitted one
    assert data["rtt_s"].round(6).to_list() == [0.010, 0.030]


def test_karn_no_sample_for_a_first_transmission_that_resends_bytes() -> None:
    # the second segment re-sends 501..1001 and adds 1001..1501 (a repacketised retransmission)
    r = _seq(*handshake(), P(0.020, 0, 1, MSS, 1), P(0.300, 0, 501, MSS, 1), P(0.320, 1, 1, 0, 1001),
             P(0.330, 1, 1, 0, 1501))
    data = r.filter(pl.col("dir") == 0)
    assert data["frame"].to_list() == [2, 6]  # the SYN and the first segment: not the ACK of the second
    assert data["rtt_s"].round(6).to_list() == [0.010, 0.300]


def test_timestamps_skip_packets_without_the_option_and_unknown_echoes() -> None:
    r = rtt(conv(
        P(0.000, 0, 1, MSS, 1),  # no timestamp option
        P(0.010, 0, 1001, MSS, 1, tsv=200, tse=7),
        P(0.030, 1, 1, 0, 1001, tsv=9, tse=150),  # echoes a TSval never seen: no sample
        P(0.045, 1, 1, 0, 2001, tsv=9, tse=200),
    )).filter(pl.col("method") == "ts")
    assert r["frame"].to_list() == [4]
    assert r["rtt_s"].round(6).to_list() == [0.035]


def test_timestamps_time_from_the_first_packet_with_the_echoed_value() -> None:
    r = rtt(conv(
        P(0.000, 0, 1, MSS, 1, tsv=100, tse=7),
        P(0.001, 0, 1001, MSS, 1, tsv=100, tse=7),
        P(0.010, 0, 2001, MSS, 1, tsv=110, tse=7),
        P(0.040, 1, 1, 0, 2001, tsv=9, tse=100),  # echoes the first segment's TSval
        P(0.050, 1, 1, 0, 3001, tsv=9, tse=110),
        P(0.051, 1, 1, 0, 3001, tsv=9, tse=110),  # duplicate: no new sample
    )).filter(pl.col("method") == "ts")
    assert r["rtt_s"].round(6).to_list() == [0.040, 0.040]


def test_timestamps_across_the_32_bit_wrap() -> None:
    top = (1 << 32) - 2
    r = rtt(conv(
        P(0.000, 0, 1, MSS, 1, tsv=top, tse=1),
        P(0.010, 0, 1001, MSS, 1, tsv=top + 1, tse=1),
        P(0.020, 0, 2001, MSS, 1, tsv=3, tse=1),  # wrapped: top + 5
        P(0.030, 1, 1, 0, 1001, tsv=2, tse=top),
        P(0.045, 1, 1, 0, 3001, tsv=2, tse=3),
    )).filter(pl.col("method") == "ts")
    assert r["rtt_s"].round(6).to_list() == [0.030, 0.025]


def test_smoothing_follows_rfc_6298() -> None:
    rs = pl.DataFrame({"_i": [5, 9], "flow": [0, 0], "dir": [0, 0], "frame": [5, 9], "time": [1.0, 2.0],
                       "rtt_s": [0.1, 0.2], "method": ["seq", "seq"]},
                      schema={"_i": pl.UInt32, **schema.RTT})
    est = smoothed(rs)
    assert est["srtt"].round(6).to_list() == [0.1, 0.1125]
    assert est["rttvar"].round(6).to_list() == [0.05, 0.0625]


def test_smoothed_rtt_matches_ns3_own_estimate() -> None:
    """ns-3 (timestamps on) feeds its RttMeanDeviation estimator with TSecr samples: so does the ``ts`` method."""
    trace = tracekit.read(sample("ns3", "dumbbell", "dumbbell.tr.gz"))
    st = _state.prepare(tracekit.analyze(trace).packets)
    rs = rtt_mod.samples(st)
    est = smoothed(rs.filter(pl.col("method") == "ts")).filter((pl.col("flow") == 0) & (pl.col("dir") == 0))
    truth = tracekit.read(sample("ns3", "dumbbell", "dumbbell-rtt.data")).samples.filter(pl.col("value") > 0)
    j = est.sort("time").join_asof(truth.sort("time").select("time", ns3="value"), on="time", tolerance=1e-6)
    j = j.drop_nulls("ns3")
    err = ((j["srtt"] - j["ns3"]).abs() / j["ns3"])
    print(f"ns-3 srtt vs tracekit (ts) over {j.height} updates: median error {err.median():.2%}, "
          f"p90 {err.quantile(0.9):.2%}")
    assert j.height >= 90
    assert err.median() < 0.02
    assert err.quantile(0.9) < 0.05


@pytest.mark.parametrize("name", ["bulk_lossy", "rwnd_limited", "stall_cut", "ipv6_bulk", "any_sll2"])
def test_linux_captures_have_both_kinds_of_samples(name: str) -> None:
    r = rtt(tracekit.read(sample("linux", f"{name}.pcap")).packets).filter(pl.col("dir") == 0)
    seq, ts = r.filter(pl.col("method") == "seq"), r.filter(pl.col("method") == "ts")
    assert seq.height > 20 and ts.height > 20
    # same path, same packets: the medians agree within a timestamp tick (1 ms on Linux) plus 20 %
    assert abs(seq["rtt_s"].median() - ts["rtt_s"].median()) <= 0.001 + 0.2 * seq["rtt_s"].median()
