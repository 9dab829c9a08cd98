"""The flows table, the vantage point (simulators and captures) and the Analysis object."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import make_events, make_trace, need_tool, sample
from polars.testing import assert_frame_equal
from tcpconv import P, conv, handshake

import tracekit
from tracekit import schema
from tracekit.analysis import Analysis, analyze, default_bin
from tracekit.analysis.flows import COLUMNS
from tracekit.analysis.vantage import vantage
from tracekit.errors import UsageError

MSS = 1000


@pytest.fixture(scope="module")
def lossy() -> Analysis:
    return analyze(tracekit.read(sample("linux", "bulk_lossy.pcap")))


def test_analysis_is_frozen_with_every_frame(lossy: Analysis) -> None:
    names = {f.name for f in dataclasses.fields(Analysis) if not f.name.startswith("_")}
    # views: every capture's flow rows (issue 17 point 3: flows keeps one row per connection)
    # reductions: the cwnd reductions behind flows' loss_events, kept for the account in words
    assert names == {"trace", "packets", "flows", "flight", "cwnd", "rtt", "retransmissions", "stalls", "queue",
                     "fairness", "views", "reductions"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        lossy.flows = pl.DataFrame()  # type: ignore[misc]
    for name, cols in [("flight", schema.FLIGHT), ("rtt", schema.RTT), ("retransmissions", schema.RETRANSMISSIONS),
                       ("stalls", schema.STALLS), ("cwnd", schema.CWND), ("queue", schema.QUEUE),
                       ("fairness", schema.FAIRNESS), ("reductions", schema.REDUCTIONS)]:
        assert getattr(lossy, name).schema == pl.Schema(cols), name
    assert set(lossy.frames()) == {"flows", "flight", "cwnd", "rtt", "retransmissions", "stalls", "queue",
                                   "fairness", "throughput", "views"}


def test_throughput_bins(lossy: Analysis) -> None:
    tp = lossy.throughput()
    assert tp.schema == pl.Schema(schema.THROUGHPUT)
    if tp.height:  # part B's analysis present
        assert tp["bin_s"].unique().to_list() == [lossy.default_bin_s]
        assert lossy.throughput(0.1)["bin_s"].unique().to_list() == [0.1]
    with pytest.raises(UsageError):
        lossy.throughput(0)


def test_default_bin_is_round_and_gives_about_a_hundred_bins() -> None:
    assert default_bin(1.2947) == 0.02
    assert default_bin(60) == 1.0
    assert default_bin(7.5) == 0.1
    assert default_bin(0.0) == 1.0
    assert default_bin(0.01) == 0.001


def test_flows_columns(lossy: Analysis) -> None:
    assert lossy.flows.columns == COLUMNS
    row = lossy.flows.row(0, named=True)
    assert (row["flow"], row["dir"], row["sport"], row["dport"]) == (0, 0, 40000, 5001)


def test_linux_transfer_facts(lossy: Analysis) -> None:
    row = lossy.flows.row(0, named=True)
    assert row["vantage_point"] == "sender" and lossy.trace.meta["vantage_point"] == "sender"
    assert row["window_scaling"] is True
    assert row["init_window_segments"] == 10 and row["init_window_bytes"] == 10 * 1448  # Linux IW10
    assert row["retrans_packets"] == row["retrans_fast"] + row["retrans_rto"] + row["retrans_spurious"] > 0
    assert row["retrans_bytes"] == row["retrans_packets"] * 1448
    assert row["loss_rate"] == pytest.approx(row["retrans_packets"] / row["data_packets"])
    assert row["drops"] is None  # captures do not record drops
    assert 0 < row["rtt_min_s"] <= row["rtt_p50_s"] <= row["rtt_p95_s"]
    assert row["rtt_samples"] > 100 and row["rtt_method"] == "seq"
    assert row["dup_acks"] > 0 and row["flight_max_bytes"] >= row["flight_mean_bytes"] > 0
    assert row["stall_count"] == 0 and row["stall_time_s"] == 0
    assert row["limited_cwnd_share"] + row["limited_rwnd_share"] + row["limited_app_share"] == pytest.approx(1)
    assert row["transfer_s"] <= row["duration"]
    for m in ("mathis_bps", "padhye_bps", "window_limited_bps"):
        assert row[m] > 0


def test_transfer_time_and_initial_window_of_a_small_transfer() -> None:
    pk = conv(*handshake(), P(0.02, 0, 1, MSS, 1), P(0.021, 0, 1001, MSS, 1), P(0.03, 1, 1, 0, 1001),
              P(0.031, 0, 2001, 500, 1), P(0.04, 1, 1, 0, 2001), P(0.05, 1, 1, 0, 2501))
    row = analyze(make_trace(pk)).flows.row(0, named=True)
    # first SYN (0) -> the ACK of the last data byte (0.05); the handshake part: SYN -> first data (0.02)
    assert row["transfer_s"] == pytest.approx(0.05) and row["handshake_s"] == pytest.approx(0.02)
    # goodput: the 2500 bytes the ACKs cover, over the SYN (start) -> that ACK
    assert (row["delivered_bytes"], row["goodput_source"]) == (2500, "ack")
    assert row["goodput_bps"] == pytest.approx(2500 * 8 / 0.05)
    assert (row["init_window_bytes"], row["init_window_segments"]) == (2000, 2)
    assert row["unique_bytes"] == 2500 and row["retrans_packets"] == 0 and row["loss_rate"] == 0
    assert row["loss_events"] == 0 and row["loss_event_rate"] == 0
    assert row["mathis_bps"] is None  # no loss: the model has no prediction


def test_no_tcp_no_flows() -> None:
    a = analyze(make_trace(schema.empty(schema.PACKETS)))
    assert a.flows.is_empty() and a.flows.columns == COLUMNS
    assert a.trace.meta["vantage_point"] is None


def test_json_document_carries_the_vantage_point(lossy: Analysis) -> None:
    from tracekit.reports import text

    doc = json.loads(text.dumps(text.summary(lossy)))
    assert doc["trace"]["vantage_point"] == "sender"
    assert doc["flows"][0]["vantage_point"] == "sender"


def test_ns2_vantage_is_the_senders_first_link() -> None:
    """ns-2 logs + - r on every link: data as enqueued on 0->1 (by the agent), ACKs as received back at node 0."""
    trace = tracekit.read(sample("ns2", "lab_lossy", "out.tr"))
    v = vantage(trace.packets)
    seen = v.group_by("dir", "event", "link").len().sort("dir", "event").rows()
    # the error model drops at the head of 0->1 before the enqueue trace: those sends are kept as drops
    assert seen == [
        (0, "enqueue", "0->1", seen[0][3]),
        (0, "drop", "0->1", seen[1][3]),
        (1, "recv", "1->0", seen[2][3]),
    ]
    raw = trace.packets
    assert seen[0][3] == raw.filter((pl.col("event") == "enqueue") & (pl.col("link") == "0->1")).height
    assert seen[2][3] == raw.filter((pl.col("event") == "recv") & (pl.col("link") == "1->0")).height
    a = analyze(trace)
    row = a.flows.row(0, named=True)
    assert row["vantage_point"] == "sender"
    assert row["drops"] == raw.filter(pl.col("event") == "drop").height
    assert row["loss_rate"] == pytest.approx(row["drops"] / row["data_packets"])
    # RTT at the sender: 2 x 100 ms propagation + the transmissions at 1 Mb/s: 40-byte SYN and
    # SYN-ACK for the smallest sample, a 540-byte segment and its 40-byte ACK for the typical one
    assert row["rtt_min_s"] == pytest.approx(0.2 + 2 * 40 * 8 / 1e6, abs=1e-6)
    assert row["rtt_p50_s"] == pytest.approx(0.2 + (540 + 40) * 8 / 1e6, abs=1e-6)


def test_ns2_multi_hop_dumbbell_uses_each_senders_access_link() -> None:
    a = analyze(tracekit.read(sample("ns2", "dumbbell")))
    links = a.packets.filter(pl.col("dir") == 0).group_by("flow").agg(pl.col("link").unique()).sort("flow")
    for flow, ls in links.rows():
        assert len(ls) == 1, (flow, ls)
    assert set(a.flows["vantage_point"]) == {"sender"}


def test_ns3_vantage_per_flow() -> None:
    """ns-3 traced n0's device (flow 0's sender) but not n1's: flow 1 is seen at router n2, in the middle."""
    a = analyze(tracekit.read(sample("ns3", "dumbbell", "dumbbell.tr.gz")))
    assert a.flows.select("flow", "vantage_point").rows() == [(0, "sender"), (1, "middle")]
    assert a.trace.meta["vantage_point"] == "mixed"


@pytest.mark.parametrize(("name", "where"), [("dumbbell-0-0.pcap", "sender"), ("dumbbell-2-2.pcap", "middle"),
                                             ("dumbbell-3-0.pcap", "middle")])
def test_capture_vantage_detected_from_the_handshake(name: str, where: str) -> None:
    a = analyze(tracekit.read(sample("ns3", "dumbbell", name)))
    assert set(a.flows["vantage_point"]) == {where}


def test_receiver_side_capture() -> None:
    """The same connection seen from the receiver: swap what each side would see (ACKs leave at once)."""
    pk = conv(P(0.0, 0, 0, 0, None, "S"), P(0.00001, 1, 0, 0, 1, "SA"), P(0.02, 0, 1, 0, 1, "A"),
              P(0.03, 0, 1, MSS, 1), P(0.03001, 1, 1, 0, 1001))
    assert analyze(make_trace(pk)).flows["vantage_point"].to_list() == ["receiver"]


def _bridged_capture(ack_delay_us: int) -> bytes:
    """A bulk sender on a bridged path (TTL 64 both ways) whose handshake is a race of two hosts:
    the SYN-ACK 20 µs after the SYN, the initiator's ACK 38 µs after it (as `bench/make_capture.sh`'s
    first flow), then 40 data segments, each ACKed ``ack_delay_us`` later."""
    from craft import T0, ether, pcap
    from scapy.layers.inet import IP, TCP

    c, s = IP(src="10.213.0.1", dst="10.213.0.2", ttl=64), IP(src="10.213.0.2", dst="10.213.0.1", ttl=64)
    pkts = [(0, c / TCP(sport=41000, dport=5002, flags="S", seq=1000)),
            (20, s / TCP(sport=5002, dport=41000, flags="SA", seq=5000, ack=1001)),
            (58, c / TCP(sport=41000, dport=5002, flags="A", seq=1001, ack=5001))]
    for i in range(40):
        t = 1000 + 500 * i
        pkts.append((t, c / TCP(sport=41000, dport=5002, flags="A", seq=1001 + 1000 * i, ack=5001) / (b"x" * 1000)))
        pkts.append((t + ack_delay_us, s / TCP(sport=5002, dport=41000, flags="A", seq=5001, ack=2001 + 1000 * i)))
    pkts.sort(key=lambda tp: tp[0])
    return pcap([ether(p) for _, p in pkts], ts=[(T0 + t // 1_000_000, t % 1_000_000) for t, _ in pkts])


@pytest.mark.parametrize(("ack_delay_us", "where"), [(6000, "sender"), (50, "receiver")])
def test_a_handshake_of_host_delays_defers_to_the_ack_delays(tmp_path: Path, ack_delay_us: int, where: str) -> None:
    """Where both handshake delays are host delays and the TTLs are the same (a bridge), the
    responder answering first does not make a capture the receiver's when every data segment's ACK
    comes 6 ms later (the queue of the path, seen at the sender); ACKs 50 µs after their data leave
    the handshake's answer. The frames path and the stream agree."""
    from tracekit.streamed import summary_document

    path = tmp_path / "bridged.pcap"
    path.write_bytes(_bridged_capture(ack_delay_us))
    assert analyze(tracekit.read(path)).flows["vantage_point"].to_list() == [where]
    doc = summary_document(str(path))
    assert doc is not None and [f["vantage_point"] for f in doc["flows"]] == [where]


def test_tcptrace_initial_window_agrees() -> None:
    tool = need_tool("tcptrace")
    import subprocess

    out = subprocess.run([tool, "-l", "-n", str(sample("linux", "bulk_lossy.pcap"))], capture_output=True, text=True,
                         check=True).stdout
    iw = [ln.split()[2] for ln in out.splitlines() if ln.strip().startswith("initial window:") and "bytes" in ln]
    row = analyze(tracekit.read(sample("linux", "bulk_lossy.pcap"))).flows.row(0, named=True)
    assert int(iw[0]) == row["init_window_bytes"]


def _random_frame(rng: np.random.Generator, n: int) -> pl.DataFrame:
    """A schema-valid packets frame with hostile values: nulls, huge and negative numbers, disorder."""
    def nullable(vals: list, p: float) -> list:
        return [None if rng.random() < p else v for v in vals]

    seq = (rng.choice([0, 1, 1449, -5, 2**40, 2**62], n) if rng.random() < 0.3
           else np.cumsum(rng.integers(0, 3000, n))).tolist()
    cols = {
        "time": (np.sort(rng.random(n) * 5) if rng.random() < 0.7 else rng.random(n) * 5).tolist(),
        "flow": nullable([int(x) for x in rng.integers(0, 3, n)], 0.05),
        "dir": nullable([int(x) for x in rng.integers(0, 2, n)], 0.05),
        "seq": nullable([int(x) for x in seq], 0.05),
        "payload": [int(x) for x in rng.choice([0, 0, 1, 1448, 100], n)],
        "ack": nullable([int(x) for x in np.cumsum(rng.integers(0, 3000, n))], 0.2),
        "flags": [int(x) for x in rng.integers(0, 256, n)],
        "win": nullable([int(x) for x in rng.choice([0, 1000, 65535, 2**30], n)], 0.1),
        "sack": [
            None
            if rng.random() < 0.7
            else [
                [int(a), int(a + b)]
                for a, b in zip(rng.integers(-100, 10000, 3), rng.integers(-500, 5000, 3), strict=False)
            ][: int(rng.integers(0, 4))]
            for _ in range(n)
        ],
        "ts_val": nullable([int(x) for x in rng.integers(0, 2**32, n)], 0.3),
        "ts_ecr": nullable([int(x) for x in rng.integers(0, 2**32, n)], 0.3),
    }
    if rng.random() < 0.3:  # simulator-like events on links
        cols["event"] = [str(x) for x in rng.choice(["enqueue", "dequeue", "recv", "drop", "send"], n)]
        cols["link"] = [str(x) for x in rng.choice(["0->1", "1->0", "1->2"], n)]
        cols["pkt_id"] = [int(x) for x in rng.integers(0, 50, n)]
    return make_events(n, **cols)


def test_any_schema_valid_frame_is_analysed_without_error() -> None:
    """Hostile but schema-valid input: every analysis returns its declared frame, nothing raises."""
    rng = np.random.default_rng(20261121)
    for _ in range(25):
        pk = _random_frame(rng, int(rng.integers(1, 150)))
        a = analyze(make_trace(pk))
        for name, cols in [("flight", schema.FLIGHT), ("rtt", schema.RTT), ("retransmissions", schema.RETRANSMISSIONS),
                           ("stalls", schema.STALLS)]:
            assert getattr(a, name).schema == pl.Schema(cols), name
        assert a.flows.columns == COLUMNS


def test_huge_flow_ids_give_the_same_analysis() -> None:
    """Flow ids near 2^32 (hand-built frames) are analysed like small ones (direction ids are 32-bit inside)."""
    from dataclasses import replace

    from polars.testing import assert_frame_equal

    t = tracekit.read(sample("linux", "bulk_lossy.pcap"))
    shift = (1 << 32) - 10
    big = replace(t, packets=t.packets.with_columns((pl.col("flow").cast(pl.Int64) + shift).cast(pl.UInt32)))
    a, b = tracekit.analyze(t), tracekit.analyze(big)
    for name, df in a.frames().items():
        other = b.frames()[name]
        if "flow" in df.columns:
            other = other.with_columns((pl.col("flow").cast(pl.Int64) - shift).cast(pl.UInt32))
        assert_frame_equal(df, other, check_exact=False, rel_tol=1e-12)
    assert b.flows["flow"].min() >= shift and b.packets["flow"].min() >= shift


def test_limited_shares_do_not_depend_on_the_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core adds the shares' times block by block (flowstats.rs): tiny blocks give the same shares."""
    from polars.testing import assert_frame_equal

    from tracekit.analysis import _flowstats

    cols = ["flow", "dir", "limited_cwnd_share", "limited_rwnd_share", "limited_app_share"]
    for name in ("bulk_lossy.pcap", "rwnd_limited.pcap", "slow_reader.pcap"):
        t = tracekit.read(sample("linux", name))
        ref = tracekit.analyze(t).flows.select(cols)
        monkeypatch.setattr(_flowstats, "_BLOCK", 7)
        got = tracekit.analyze(t).flows.select(cols)
        monkeypatch.undo()
        assert_frame_equal(got, ref, rel_tol=1e-12)
        assert ref["limited_cwnd_share"].is_not_null().all()


@pytest.mark.parametrize("name", ["bulk_lossy", "stall_cut"])
def test_per_direction_summaries_are_polars_aggregates_of_the_frames(name: str) -> None:
    """The core's per-direction accumulators (src/state/flowstats/summary.rs) give, bit for bit,
    what polars' own group-by aggregates give over the rtt, retransmissions, flight and stalls
    frames: mean as polars sums, percentiles with its linear interpolation."""
    an = analyze(tracekit.read(sample("linux", f"{name}.pcap")))
    keys = ["flow", "dir"]
    seq = pl.col("method") == "seq"
    rtt = (an.rtt.filter(pl.col("rtt_s") > 0).filter(seq | ~seq.any().over(keys)).group_by(keys).agg(
        rtt_min_s=pl.col("rtt_s").min(), rtt_mean_s=pl.col("rtt_s").mean(), rtt_p50_s=pl.col("rtt_s").median(),
        rtt_p95_s=pl.col("rtt_s").quantile(0.95, "linear"), rtt_samples=pl.len().cast(pl.Int64),
        rtt_method=pl.col("method").first()))
    kinds = [(pl.col("kind") == k).sum().cast(pl.Int64).alias(f"retrans_{k}") for k in ("fast", "rto", "spurious")]
    rt = an.retransmissions.group_by(keys).agg(pl.len().cast(pl.Int64).alias("retrans_packets"), *kinds)
    fl = an.flight.group_by(keys).agg(flight_max_bytes=pl.col("flight_bytes").max(),
                                         flight_mean_bytes=pl.col("flight_bytes").mean())
    sl = an.stalls.group_by(keys).agg(stall_count=pl.len().cast(pl.Int64), stall_time_s=pl.col("duration").sum())
    want = an.flows.select(keys)
    for part in (rtt, rt, fl, sl):
        want = want.join(part, on=keys, how="left", maintain_order="left")
    want = want.with_columns(pl.col("retrans_packets", "retrans_fast", "retrans_rto", "retrans_spurious",
                                    "stall_count").fill_null(0), pl.col("stall_time_s").fill_null(0.0))
    assert want["rtt_samples"].min() > 100 and want["retrans_packets"].sum() > 0
    assert want["stall_count"].sum() > 0 or name != "stall_cut"
    assert_frame_equal(an.flows.select(want.columns), want)


@pytest.mark.parametrize("rel", [("kernel", "bbr", "capture.pcap"), ("kernel_truth", "shaper_gso_bbr.pcap")])
def test_a_sub_millisecond_handshake_takes_the_ttl(rel: tuple[str, ...]) -> None:
    """Both captures were taken in the sender's namespace (their ss/nstat logs are the sender's), behind
    a router: the sender's packets carry TTL 64, the receiver's 63. The handshake's two delays are host
    delays of 20-40 us each, and the shorter was the responder's, which once called the data flow
    ``receiver`` (and hid its window and recoveries); both the frames path and the stream now say
    ``sender``."""
    from tracekit.streamed import summary_document

    p = sample("linux", *rel)
    an = analyze(tracekit.read(p))
    pk = an.packets
    assert pk.filter(pl.col("dir") == 0)["ttl"].unique().to_list() == [64]
    assert pk.filter(pl.col("dir") == 1)["ttl"].unique().to_list() == [63]
    assert set(an.flows["vantage_point"]) == {"sender"} and an.trace.meta["vantage_point"] == "sender"
    doc = summary_document(str(p))
    assert doc is not None and {f["vantage_point"] for f in doc["flows"]} == {"sender"}
    assert not [s for s in doc["explain"] if s["kind"] in ("losses_far", "warn_vantage")]


def test_simulator_packets_have_no_ttl() -> None:
    pk = tracekit.read(sample("ns2", "lab_reno")).packets
    assert "ttl" in pk.columns and pk["ttl"].null_count() == pk.height
