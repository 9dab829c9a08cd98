"""Retransmissions: which segments (Wireshark's rules), their kind, duplicate ACKs, simulator ground truth."""

from __future__ import annotations

import polars as pl
from conftest import sample
from tcpconv import P, conv, handshake

import tracekit
from tracekit import schema
from tracekit.analysis import _state
from tracekit.analysis.retrans import dup_acks, retransmissions

MSS = 1000


def _window(n: int, t0: float = 0.020, step: float = 0.001) -> list[dict]:
    return [P(t0 + i * step, 0, 1 + i * MSS, MSS, 1) for i in range(n)]


def test_schema_and_empty() -> None:
    assert retransmissions(schema.empty(schema.PACKETS)).schema == pl.Schema(schema.RETRANSMISSIONS)
    assert retransmissions(conv(*handshake(), *_window(3))).is_empty()


def test_three_duplicate_acks_make_a_fast_retransmission() -> None:
    pk = conv(
        *handshake(), *_window(5),
        P(0.050, 1, 1, 0, 1001),
        P(0.051, 1, 1, 0, 1001), P(0.052, 1, 1, 0, 1001), P(0.053, 1, 1, 0, 1001),
        P(0.0531, 0, 1001, MSS, 1),
    )
    r = retransmissions(pk)
    assert r.select("frame", "seq", "len", "kind").rows() == [(13, 1001, MSS, "fast")]
    assert dup_acks(_state.prepare(pk)).rows() == [(0, 0, 3)]


def test_a_window_update_is_not_a_duplicate_ack() -> None:
    pk = conv(*handshake(), *_window(2), P(0.05, 1, 1, 0, 1001), P(0.06, 1, 1, 0, 1001, win=30000),
              P(0.07, 1, 1, 0, 1001, win=30000))
    assert dup_acks(_state.prepare(pk)).rows() == [(0, 0, 1)]


def test_a_silence_without_acks_makes_an_rto_and_the_rest_of_its_recovery_too() -> None:
    pk = conv(
        *handshake(), *_window(4),
        P(0.050, 1, 1, 0, 1001),
        P(0.450, 0, 1001, MSS, 1),  # 400 ms of silence: the timer
        P(0.480, 1, 1, 0, 2001),
        P(0.4801, 0, 2001, MSS, 1), P(0.4802, 0, 3001, MSS, 1),  # slow start re-sends the rest
        P(0.510, 1, 1, 0, 4001, sack=None),
        P(0.5101, 0, 4001, MSS, 1),  # new data
    )
    r = retransmissions(pk)
    assert r.select("seq", "kind").rows() == [(1001, "rto"), (2001, "rto"), (3001, "rto")]


def test_sack_evidence_makes_retransmissions_fast_without_three_dupacks() -> None:
    pk = conv(
        *handshake(), *_window(4),
        P(0.050, 1, 1, 0, 1001, sack=[[2001, 3001]]),
        P(0.051, 0, 1001, MSS, 1),
    )
    assert retransmissions(pk)["kind"].to_list() == ["fast"]


def test_already_acknowledged_data_is_a_spurious_retransmission() -> None:
    pk = conv(*handshake(), *_window(2), P(0.050, 1, 1, 0, 2001), P(0.300, 0, 1, MSS, 1))
    assert retransmissions(pk).select("seq", "kind").rows() == [(1, "spurious")]


def test_a_dsack_for_the_retransmission_makes_it_spurious() -> None:
    pk = conv(
        *handshake(), *_window(3),
        P(0.400, 0, 1, MSS, 1),  # RTO although nothing was lost: the ACKs were only late
        P(0.410, 1, 1, 0, 3001),
        P(0.420, 1, 1, 0, 3001, sack=[[1, 1001]]),  # D-SACK: 1..1001 arrived twice
    )
    assert retransmissions(pk).select("seq", "kind").rows() == [(1, "spurious")]


def test_keepalives_and_zero_window_probes_are_not_retransmissions() -> None:
    pk = conv(
        *handshake(), *_window(2),
        P(0.05, 1, 1, 0, 2001, win=0),
        P(0.30, 0, 2001, 1, 1), P(0.60, 0, 2001, 1, 1), P(1.2, 0, 2001, 1, 1),  # 1-byte probes
        P(1.21, 1, 1, 0, 2001, win=0),
        P(5.0, 0, 2000, 0, 1),  # keep-alive: 0 bytes at nextseq - 1
    )
    assert retransmissions(pk).is_empty()


def test_at_the_receiver_a_hole_filled_at_once_is_reordering_and_later_a_retransmission() -> None:
    # receiver-side view: data arrive (dir 0), ACKs leave (dir 1); RTT 10 ms (handshake)
    hs = [P(0.0, 0, 0, 0, None, "S"), P(0.0001, 1, 0, 0, 1, "SA"), P(0.0101, 0, 1, 0, 1, "A")]
    pk = conv(
        *hs,
        P(0.020, 0, 1, MSS, 1), P(0.021, 0, 2001, MSS, 1),  # 1001..2001 missing
        P(0.0211, 1, 1, 0, 1001, sack=[[2001, 3001]]),
        P(0.0215, 0, 1001, MSS, 1),  # 0.5 ms later: overtaken, not lost
        P(0.030, 0, 3001, MSS, 1), P(0.031, 0, 5001, MSS, 1),  # 4001..5001 missing
        P(0.0311, 1, 1, 0, 4001, sack=[[5001, 6001]]),
        P(0.045, 0, 4001, MSS, 1),  # 14 ms later: re-sent by the sender
    )
    r = retransmissions(pk)
    assert r["seq"].to_list() == [4001]


def test_ns3_every_queue_drop_is_retransmitted_once() -> None:
    """ns-3's trace records each drop at the bottleneck: the sender's capture must show one retransmission each."""
    ascii_trace = tracekit.read(sample("ns3", "dumbbell", "dumbbell.tr.gz"))
    drops = ascii_trace.packets.filter((pl.col("event") == "drop") & (pl.col("flow") == 0) & (pl.col("payload") > 0))
    sender = retransmissions(tracekit.read(sample("ns3", "dumbbell", "dumbbell-0-0.pcap")).packets)
    print(f"ns-3 flow 0: {drops.height} drops, {sender.height} retransmissions at the sender")
    assert sender.height == drops.height == 12
    assert sorted(sender["seq"].to_list()) == sorted(drops["seq"].to_list())
    assert set(sender["kind"]) == {"fast"}  # NewReno + SACK recovered every loss without a timeout
    # after the bottleneck (router n3's capture) the same 19 drops of both flows are re-sent
    after = retransmissions(tracekit.read(sample("ns3", "dumbbell", "dumbbell-3-0.pcap")).packets)
    all_drops = ascii_trace.packets.filter((pl.col("event") == "drop") & (pl.col("payload") > 0)).height
    assert after.height == all_drops == 19


def test_ns2_retransmissions_are_the_segments_sent_twice() -> None:
    """Independent count from the raw ns-2 lines: a data packet entering link 0->1 with a seqno seen before."""
    path = sample("ns2", "lab_lossy", "out.tr")
    seen: set[int] = set()
    enq: set[int] = set()
    again = 0
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if f[4] != "tcp" or (f[2], f[3]) != ("0", "1") or int(f[5]) <= 40:
                continue
            # a '+' (sent), or a 'd' with no '+' (lost at the link head by the error model)
            if f[0] == "+" or (f[0] == "d" and int(f[11]) not in enq):
                seqno = int(f[10])
                again += seqno in seen
                seen.add(seqno)
            if f[0] == "+":
                enq.add(int(f[11]))
    r = retransmissions(tracekit.analyze(tracekit.read(path)).packets)
    print(f"ns-2 lab_lossy: {again} data packets re-sent (trace), {r.height} retransmissions (tracekit)")
    assert r.height == again


def test_the_core_rejects_columns_of_unequal_length() -> None:
    """Bad input to the compiled pass is a ValueError naming the column, never a panic."""
    import numpy as np
    import pytest

    from tracekit import _core

    i64, z, u8 = np.zeros(2, np.int64), np.zeros(0, np.int64), np.zeros(2, np.uint8)
    with pytest.raises(ValueError, match="time"):
        _core.tcp_retrans(np.zeros(2, np.uint32), np.zeros(2, np.int8), np.zeros(1), i64, i64, i64, i64, i64,
                          u8, u8, np.zeros(0, np.uint32), np.zeros(0), z, z, z, np.zeros(0, np.uint32),
                          np.zeros(0), 0.2)
    with pytest.raises(ValueError, match="flags"):
        _core.tcp_retrans(np.zeros(2, np.uint32), np.zeros(2, np.int8), np.zeros(2), i64, i64, i64, i64, i64,
                          u8[:1], u8, np.zeros(0, np.uint32), np.zeros(0), z, z, z, np.zeros(0, np.uint32),
                          np.zeros(0), 0.2)
