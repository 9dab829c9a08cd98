"""Bytes in flight: Wireshark's definition, the SACK scoreboard, and the simulator's own ground truth."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import make_trace, sample
from polars.testing import assert_frame_equal
from tcpconv import P, conv, handshake

import tracekit
from tracekit import schema
from tracekit.analysis import _groups, _state
from tracekit.analysis import rtt as rtt_mod
from tracekit.analysis.flight import flight
from tracekit.analysis.flows import flows
from tracekit.analysis.retrans import classify
from tracekit.analysis.stalls import stalls
from tracekit.analysis.vantage import vantage

MSS = 1000


def _flight(*pkts: dict) -> pl.DataFrame:
    return flight(conv(*pkts))


def test_columns_and_dtypes_match_the_schema() -> None:
    fl = _flight(*handshake(), P(0.02, 0, 1, MSS, 1))
    assert fl.schema == pl.Schema(schema.FLIGHT)


def test_empty_and_non_tcp_inputs_give_empty_frames() -> None:
    assert flight(schema.empty(schema.PACKETS)).schema == pl.Schema(schema.FLIGHT)
    udp = conv(P(0.0, 0, 1, 100)).with_columns(proto=pl.lit("udp").cast(schema.PROTO))
    assert flight(udp).is_empty()


def test_flight_grows_with_each_segment_and_drops_with_acks() -> None:
    fl = _flight(
        *handshake(),
        P(0.020, 0, 1, MSS, 1), P(0.021, 0, 1001, MSS, 1), P(0.022, 0, 2001, MSS, 1),
        P(0.030, 1, 1, 0, 2001),
        P(0.031, 0, 3001, MSS, 1),
    )
    assert fl["flight_bytes"].to_list() == [1000, 2000, 3000, 2000]
    assert fl["unacked_bytes"].to_list() == [1000, 2000, 3000, 2000]


def test_sack_blocks_of_the_latest_ack_are_subtracted_as_wireshark_does() -> None:
    fl = _flight(
        *handshake(),
        P(0.020, 0, 1, MSS, 1), P(0.021, 0, 1001, MSS, 1), P(0.022, 0, 2001, MSS, 1), P(0.023, 0, 3001, MSS, 1),
        P(0.030, 1, 1, 0, 1001),
        P(0.031, 1, 1, 0, 1001, sack=[[2001, 3001]]),  # 1001..2001 lost
        P(0.032, 0, 4001, MSS, 1),
        P(0.033, 1, 1, 0, 1001, sack=[[2001, 4001]]),
        P(0.034, 0, 1001, MSS, 1),  # the retransmission
        P(0.040, 1, 1, 0, 5001),
        P(0.041, 0, 5001, MSS, 1, flags="FA"),  # FIN: its virtual byte is not in flight
    )
    assert fl["unacked_bytes"].to_list() == [1000, 2000, 3000, 4000, 4000, 4000, 1000]
    assert fl["flight_bytes"].to_list() == [1000, 2000, 3000, 4000, 3000, 2000, 1000]
    assert fl["flight_sack_bytes"].to_list() == [1000, 2000, 3000, 4000, 3000, 2000, 1000]


def test_state_values_are_made_once_per_frame_and_go_with_it() -> None:
    """The SACK blocks are computed once per state frame (several steps read them), are never
    handed to another frame, and are dropped when their frame dies."""
    import gc

    sack = [[[1001, 2001]]]
    st = _state.prepare(conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.03, 1, 1, 0, 1001, sack=sack[0])))
    other = _state.prepare(conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.021, 0, 1001, MSS, 1)))
    sb = _state.sack_blocks_of(st)
    assert _state.sack_blocks_of(st) is sb and sb[0].size == 1
    sb_other = _state.sack_blocks_of(other)
    assert sb_other is not sb and sb_other[0].size == 0
    # a frame seen again after another one gets its values made afresh, equal to the first ones
    again = _state.sack_blocks_of(st)
    assert again is not sb and all(a.tolist() == b.tolist() for a, b in zip(again, sb, strict=True))
    del st, sb, again
    gc.collect()
    assert not _state._LAST  # the values went with their frame


def test_the_scoreboard_remembers_blocks_the_latest_ack_no_longer_carries() -> None:
    segs = [P(0.020 + i / 1000, 0, 1 + i * MSS, MSS, 1) for i in range(7)]  # 1 .. 7001
    fl = _flight(
        *handshake(), *segs,
        # 1..1001 lost and 3001..4001 lost; the receiver reports 1001..3001, then 4001..7001 only
        P(0.030, 1, 1, 0, 1, sack=[[1001, 3001]]),
        P(0.031, 1, 1, 0, 1, sack=[[4001, 7001]]),
        P(0.032, 0, 7001, MSS, 1),
    )
    last = fl.row(-1, named=True)
    assert last["unacked_bytes"] == 8000
    assert last["flight_bytes"] == 8000 - 3000  # Wireshark: only the latest ACK's block
    assert last["flight_sack_bytes"] == 8000 - 5000  # both blocks


def test_bytes_in_flight_from_the_start_and_unknown_after_skipped_bytes() -> None:
    """Wireshark 4.0: valid from the first segment (from the sender's side only), cleared by a lost segment."""
    fl = _flight(
        P(0.0, 0, 1, MSS, None, "A"),  # capture starts mid-connection: no ACK from the peer yet
        P(0.01, 1, 1, 0, 1001),
        P(0.02, 0, 1001, MSS, 1),
        P(0.03, 0, 3001, MSS, 1),  # 2001..3001 never seen: Wireshark stops counting
        P(0.04, 0, 4001, MSS, 1),
        P(0.05, 1, 1, 0, 1001),  # ... until the peer sends again
        P(0.06, 0, 5001, MSS, 1),
    )
    # Wireshark spans lowest to highest unacked byte, holes included
    assert fl["flight_bytes"].to_list() == [1000, 1000, None, None, 5000]
    assert fl["flight_sender_only"].to_list() == [True, False, False, False, False]


@pytest.mark.parametrize("name", ["bulk_lossy", "rwnd_limited", "slow_reader", "stall_cut", "ipv6_bulk"])
def test_every_data_segment_of_a_linux_capture_has_a_row(name: str) -> None:
    trace = tracekit.read(sample("linux", f"{name}.pcap"))
    fl = flight(trace.packets)
    n_data = trace.packets.filter(pl.col("payload") > 0).height
    assert fl.height == n_data
    assert fl["flight_bytes"].null_count() < 0.01 * n_data
    assert (fl["flight_sack_bytes"] <= fl["unacked_bytes"]).all()


def test_sack_flight_matches_ns3_bytes_in_flight() -> None:
    """ns-3 traces its own TcpSocketState::m_bytesInFlight (RFC 6675 pipe): compare at every send."""
    a = tracekit.analyze(tracekit.read(sample("ns3", "dumbbell", "dumbbell.tr.gz")))
    truth = tracekit.read(sample("ns3", "dumbbell", "dumbbell-inflight.data")).samples
    # several sends and ACKs share a timestamp: the truth at a send is the range seen at that instant
    rng = truth.group_by("time").agg(pl.col("value").min().alias("lo"), pl.col("value").max().alias("hi")).sort("time")
    mine = a.flight.filter(pl.col("flow") == 0).sort("time").join_asof(rng, on="time", tolerance=1e-6)
    assert mine["lo"].null_count() == 0
    mss = 1448
    near = ((mine["flight_sack_bytes"] >= mine["lo"] - mss) & (mine["flight_sack_bytes"] <= mine["hi"] + mss)).mean()
    inside = ((mine["flight_sack_bytes"] >= mine["lo"]) & (mine["flight_sack_bytes"] <= mine["hi"])).mean()
    print(f"ns-3 BytesInFlight vs flight_sack_bytes over {mine.height} sends: {inside:.1%} inside, "
          f"{near:.1%} within 1 MSS")
    # ns-3's pipe also drops segments it has marked lost (RFC 6675), tracekit's does not: only
    # during recovery can the two differ
    assert near >= 0.98
    assert inside >= 0.95


def test_flight_of_a_trace_with_only_a_syn() -> None:
    tr = make_trace(conv(P(0.0, 0, 0, 0, None, "S")))
    assert flight(tr.packets).is_empty()


def _state_frames(pk: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Every frame built on the per-packet state (flows reads the state's columns too)."""
    st = _state.prepare(pk)
    rs = rtt_mod.samples(st)
    rt = classify(st, rs)
    fl = flight(pk, state=st)
    sl = stalls(pk, state=st, rtt_samples_df=rs, retrans=rt)
    fd = flows(pk, parts={"state": st, "rtt_samples": rs, "retrans": rt, "flight": fl, "stalls": sl})
    return {"rtt": rs, "retrans": rt, "flight": fl, "stalls": sl, "flows": fd,
            "smoothed": rtt_mod.smoothed(rs)}


def _zero_window_conversation() -> pl.DataFrame:
    return conv(
        *handshake(), P(0.02, 0, 1, MSS, 1), P(0.021, 0, 1001, MSS, 1),
        P(0.05, 1, 1, 0, 2001, win=0),
        P(0.30, 0, 2001, 1, 1), P(0.60, 0, 2001, 1, 1), P(1.2, 0, 2001, 1, 1),  # zero-window probes
        P(1.21, 1, 1, 0, 2001, win=0), P(1.5, 1, 1, 0, 2001, win=8000),
        P(1.51, 0, 2001, MSS, 1), P(1.52, 0, 3001, MSS, 1), P(1.6, 1, 1, 0, 2001),
        P(1.61, 1, 1, 0, 2001, sack=[[3001, 4001]]), P(1.62, 1, 1, 0, 2001, sack=[[3001, 4001]]),
        P(1.8, 0, 2001, MSS, 1), P(1.9, 1, 1, 0, 4001), P(5.0, 0, 4000, 0, 1),  # keep-alive
    )


@pytest.mark.parametrize("name", ["linux/bulk_lossy.pcap", "ns3/dumbbell/dumbbell-2-2.pcap", "ns2/dumbbell/out.tr.gz",
                                  "linux/slow_reader.pcap", "zero_window"])
def test_every_code_path_of_the_state_gives_the_same_frames(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """32- or 64-bit state, per-group or offset scans: the same frames.

    The big-capture fast paths (32-bit arrays, loops over a few directions, chunks) and the
    general ones must agree; the samples cover holes (dumbbell-2-2), SACK, duplicate ACKs,
    keep-alives and several flows.
    """
    pk = (
        _zero_window_conversation()
        if name == "zero_window"
        else vantage(tracekit.read(sample(*name.split("/"))).packets)
    )
    assert _state.prepare(pk)["nxt"].dtype == pl.Int32  # small traces take the 32-bit path
    ref = _state_frames(pk)
    monkeypatch.setattr(_state, "_narrow", lambda src, ln: (np.int64, _groups.MISSING))
    assert _state.prepare(pk)["nxt"].dtype == pl.Int64
    alt = _state_frames(pk)
    for k, v in ref.items():
        assert_frame_equal(alt[k], v, check_exact=True)
    if name == "zero_window":  # the three probes, the keep-alive and the two duplicate ACKs were seen
        st = _state.prepare(pk)
        assert (st["zwp"].sum(), st["keepalive"].sum(), st["dup"].sum()) == (3, 1, 2)


def test_core_refuses_bad_sack_blocks_with_an_error() -> None:
    """SACK blocks on rows that do not exist or out of row order: a ValueError, never a crash."""
    from tracekit import _core

    n = 2
    cols = (np.zeros(n, np.uint32), np.zeros(n, np.int8), np.zeros(n, np.int64), np.ones(n, np.uint32),
            np.zeros(n, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.uint8))
    one = np.ones(1, np.int64)
    with pytest.raises(ValueError, match="SACK block rows"):
        _core.tcp_flight_sack(*cols, np.array([5], np.int64), one, one)
    with pytest.raises(ValueError, match="SACK block rows"):
        _core.tcp_flight_sack(*cols, np.array([1, 0], np.int64), np.ones(2, np.int64), np.ones(2, np.int64))
    with pytest.raises(ValueError, match="column bits"):
        _core.tcp_flight_sack(*cols[:6], np.zeros(3, np.uint8), one[:0], one[:0], one[:0])
