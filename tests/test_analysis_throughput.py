"""Throughput/goodput bins (totals, the lab monitor's own rates) and Jain's fairness index."""

from __future__ import annotations

import polars as pl
import pytest
from anb_data import ns2_run, ns3_sender
from conftest import make_events, sample

import tracekit
from tracekit import schema
from tracekit.analysis import analyze, default_bin
from tracekit.analysis.fairness import fairness
from tracekit.analysis.throughput import throughput
from tracekit.errors import LimitError, UsageError


def _totals(tp: pl.DataFrame) -> pl.DataFrame:
    return tp.group_by("flow", "dir").agg(
        (pl.col("throughput_bps") * pl.col("bin_s") / 8).sum().round(6).alias("wire"),
        (pl.col("goodput_bps") * pl.col("bin_s") / 8).sum().round(6).alias("good"),
        (pl.col("packets_per_s") * pl.col("bin_s")).sum().round(6).alias("pkts"),
    )


@pytest.mark.parametrize("source", ["linux", "slow_reader", "ns3", "lab_lossy", "dumbbell"])
@pytest.mark.parametrize("bin_s", [None, 0.05, 1.0])
def test_totals_equal_wire_and_unique_bytes(source: str, bin_s: float | None) -> None:
    """Summed over the bins, every direction gives exactly its wire bytes, unique bytes and packets.

    slow_reader's sender sends pure ACKs between its data segments (zero-window waits): they
    must not reset the running highest sequence end (a regression once counted 5x the bytes).
    """
    if source == "linux":
        an = analyze(tracekit.read(sample("linux", "bulk_lossy.pcap")))
    elif source == "slow_reader":
        an = analyze(tracekit.read(sample("linux", "slow_reader.pcap")))
    elif source == "ns3":
        an = ns3_sender()[1]
    else:
        an = ns2_run(source)[1]
    tp = throughput(an.packets, bin_s)
    got = _totals(tp).join(an.flows.select("flow", "dir", "wire_bytes", "unique_bytes", "packets"), on=["flow", "dir"])
    assert got.height == an.flows.height >= 1
    assert (got["wire"] == got["wire_bytes"]).all()
    assert (got["good"] == got["unique_bytes"]).all()
    assert (got["pkts"] == got["packets"]).all()
    if an.flows["retrans_bytes"].sum() > 0:  # retransmissions are on the wire, not in the goodput
        data = got.filter(pl.col("good") > 0)
        assert (data["wire"] > data["good"]).all()


@pytest.mark.parametrize("run", ["lab_reno", "lab_tahoe", "lab_lossy"])
def test_departures_match_windowmon(run: str) -> None:
    """Packets dequeued on n0->n1 per 1-s bin ending at each WindowMon.tr sample = its ``tput`` column."""
    t, _ = ns2_run(run)
    departures = t.packets.filter((pl.col("event") == "dequeue") & (pl.col("link") == "0->1"))
    tp = throughput(departures, 1.0, origin=0.1)  # the monitor samples at 1.1, 2.1, … (docs/formats-ns2.md)
    mon = t.samples.filter(pl.col("metric") == "throughput_pps").select(
        (pl.col("time") - 1.0).round(6).alias("bin"), pl.col("value").alias("tput"))
    j = mon.join(tp.select(pl.col("time").round(6).alias("bin"), "packets_per_s"), on="bin", how="left")
    print(run, j.rows()[:6], "…")
    assert j.height == 19
    assert (j["packets_per_s"] == j["tput"]).all()


def test_bins_grid_zeros_and_edges() -> None:
    """Empty bins are zeros; a packet on a bin edge belongs to the bin starting there."""
    pk = make_events(time=[0.0, 0.05, 0.35, 1.1], seq=[1, 1449, 2897, 1], payload=[1448, 1448, 1448, 1448],
                     size=[1500] * 4)
    tp = throughput(pk, 0.1)
    assert tp.columns == list(schema.THROUGHPUT)
    assert tp["time"].round(6).to_list() == [round(0.1 * k, 6) for k in range(12)]
    assert tp["packets_per_s"].to_list() == [20.0, 0, 0, 10.0] + [0.0] * 7 + [10.0]
    # the last packet re-sends bytes 1..1449: on the wire, not new
    assert tp["goodput_bps"].to_list()[-1] == 0.0 and tp["throughput_bps"].to_list()[-1] == 1500 * 8 / 0.1
    edge = throughput(make_events(time=[1.0999999999999999, 2.1], payload=[1, 1], seq=[1, 2]), 1.0, origin=0.1)
    assert edge["time"].round(6).to_list() == [1.1, 2.1] and edge["packets_per_s"].to_list() == [1.0, 1.0]


def test_rows_without_a_connection_count_nowhere() -> None:
    """Rows with no flow or direction (ARP, ICMP, …) are left out: the bins are those of the
    connection's rows alone (the frame then goes through the filtered query, not the shared
    columns of an all-connection frame)."""
    pk = make_events(time=[0.0, 0.05, 0.12, 0.2], seq=[1, 1449, 2897, 4345], payload=[1448] * 4, size=[1500] * 4)
    stray = make_events(time=[0.07, 0.35], flow=[None, None], dir=[None, None], proto=["other"] * 2,
                        seq=[None, None], ack=[None, None], payload=[None, None], size=[60, 60])
    mixed = pl.concat([pk, stray]).sort("time")
    alone = throughput(pk, 0.1)
    assert alone["packets_per_s"].to_list() == [20.0, 10.0, 10.0]
    assert throughput(mixed, 0.1).equals(alone)


def test_default_bin_and_bad_bins() -> None:
    pk = make_events(time=[0.0, 20.0], seq=[1, 1449])
    tp = throughput(pk)
    assert tp["bin_s"][0] == default_bin(20.0) == 0.2
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(UsageError):
            throughput(pk, bad)
    assert throughput(schema.empty(schema.PACKETS)).schema == pl.Schema(schema.THROUGHPUT)



def test_capture_order_and_the_bin_limit() -> None:
    """Rows listed out of time order are binned in capture order (time, then frame), as the
    sorted trace is; a bin grid over the limit, or no bin time at all, is refused."""
    pk = analyze(tracekit.read(sample("linux", "bulk_lossy.pcap"))).packets
    shuffled = pk.sample(fraction=1.0, shuffle=True, seed=7)
    assert throughput(shuffled, 0.05).equals(throughput(pk, 0.05))
    two = make_events(time=[0.0, 20.0], seq=[1, 1449], payload=[1448, 1448])
    with pytest.raises(LimitError, match="20000000 throughput bins"):
        throughput(two, 1e-6)
    absurd = make_events(time=[1e300, 2e300], seq=[1, 1449], payload=[1448, 1448])
    with pytest.raises(LimitError, match="unbounded"):
        throughput(absurd, 1.0)

# ---- fairness ----------------------------------------------------------------------------------


def _tp(rates: dict[int, list[float]], bin_s: float = 1.0) -> pl.DataFrame:
    rows = [{"flow": f, "dir": 0, "time": i * bin_s, "bin_s": bin_s, "throughput_bps": r, "goodput_bps": r,
             "packets_per_s": 1.0} for f, rs in rates.items() for i, r in enumerate(rs)]
    acks = [{"flow": f, "dir": 1, "time": 0.0, "bin_s": bin_s, "throughput_bps": 1e3, "goodput_bps": 0.0,
             "packets_per_s": 1.0} for f in rates]  # ACK directions carry no data: not counted
    return schema.conform(pl.DataFrame(rows + acks), schema.THROUGHPUT)


def test_jain_equal_flows_and_one_hog() -> None:
    equal = fairness(_tp({0: [5e6, 5e6], 1: [5e6, 5e6], 2: [5e6, 5e6]}))
    assert equal.columns == list(schema.FAIRNESS)
    assert equal["jain"].to_list() == [1.0, 1.0, 1.0] and equal["flows"].to_list() == [3, 3, 3]
    assert equal["time"].to_list() == [0.0, 1.0, None]
    hog = fairness(_tp({0: [8e6], 1: [0.0], 2: [0.0], 3: [0.0]}))
    # flows 1-3 sent nothing at all: only one data direction remains
    assert hog["jain"].to_list() == [1.0, 1.0]
    hog = fairness(_tp({0: [8e6, 8e6], 1: [0.0, 1.0], 2: [0.0, 1.0], 3: [0.0, 1.0]}))
    assert hog["jain"][0] == pytest.approx(0.25) and hog["flows"][0] == 4
    two = fairness(_tp({0: [3e6], 1: [1e6]}))
    assert two["jain"][0] == pytest.approx(16 / (2 * 10))  # (x1+x2)^2 / (2(x1^2+x2^2))


def test_jain_all_idle_is_undefined() -> None:
    f = fairness(_tp({0: [1e6, 0.0], 1: [1e6, 0.0]}))
    assert f["jain"].to_list() == [1.0, None, 1.0]
    assert fairness(schema.empty(schema.THROUGHPUT)).is_empty()


def test_dumbbell_fairness_is_sane() -> None:
    """Four TCP variants with different RTTs on one 1.5 Mb/s bottleneck: unequal, but far from one hog."""
    _, an = ns2_run("dumbbell")
    f = an.fairness
    overall = f.filter(pl.col("time").is_null()).row(0, named=True)
    per_bin = f.filter(pl.col("time").is_not_null()).drop_nulls("jain")
    print("dumbbell overall", overall, "per-bin median", per_bin["jain"].median())
    assert overall["flows"] == 4 and 0.5 < overall["jain"] < 0.95
    assert ((per_bin["jain"] >= 1 / per_bin["flows"] - 1e-12) & (per_bin["jain"] <= 1 + 1e-12)).all()
    assert per_bin.filter(pl.col("time") > 2.0)["flows"].min() == 4  # all four run after 1.6 s


def test_application_limited_directions_are_left_out_of_fairness() -> None:
    """An iperf3 capture: one bulk transfer and the control connection's two directions (a few hundred
    bytes, application-limited over 99 % of the time). Jain's index is over the bulk direction alone,
    in the frame and in the account, where it was 0.334 "over the 3 data directions"."""
    from tracekit._shared import competes
    from tracekit.explain import explain
    from tracekit.explain_account import fairness as told

    an = analyze(tracekit.read(sample("linux", "kernel", "cubic", "capture.pcap")))
    shares = dict(zip(an.flows["flow"].to_list(), an.flows["limited_app_share"].to_list(), strict=False))
    idle = [r for r in an.flows.iter_rows(named=True) if not competes(r["limited_app_share"])]
    assert {(r["flow"], r["dir"]) for r in idle} == {(0, 0), (0, 1)} and shares[1] < 0.5
    assert set(an.fairness["flows"].to_list()) == {1}
    assert not [s for s in explain(an) if s.kind == "fairness"]
    # beside ns-3's ten competing directions, the control connection's rows are named as left out
    db = analyze(tracekit.read(sample("ns3", "dumbbell10")))
    rows = sorted(db.flows.to_dicts() + idle, key=lambda r: (r["flow"], r["dir"]))
    (s,) = told(rows)
    assert s.values["flows"] == db.flows.height and s.values["left_out"] == 2
    assert s.text.endswith("; left out as application-limited: 0.0, 0.1.")
    assert s.values["jain"] == pytest.approx(told(db.flows.to_dicts())[0].values["jain"])
