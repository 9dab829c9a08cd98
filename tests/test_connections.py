"""One connection counted once in a run directory with several captures (issue 17 point 3).

Real data: the ns-3.37 dumbbell (``samples/ns3/dumbbell``: 2 connections, pcaps of three
devices and the ASCII trace of the same devices) and the 10-flow ns-3.37 dumbbell
(``samples/ns3/dumbbell10``, ``make_dumbbell10.sh``: pcaps at the first sender, both
bottleneck devices and the first receiver). The independent truth is FlowMonitor's own
per-flow counters (``flowmon.xml`` of the same run) and the run's parameters (``run.json``).
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import sample

import tracekit
from tracekit.analysis.connections import one_per_connection
from tracekit.cli.main import main

#: PPP header bytes per frame of an ns-3 point-to-point pcap (FlowMonitor counts IP bytes).
PPP = 2
#: IPv4 + TCP header bytes of an ns-3 data segment with timestamps (20 + 20 + 12).
HEADERS = 52


def _run(name: str) -> tuple[tracekit.Analysis, list[dict], dict]:
    d = sample("ns3", name)
    an = tracekit.analyze(tracekit.read(d))
    fm = tracekit.read(d / "flowmon.xml").meta["flowmon"]
    # data flows: the BulkSend direction (source port 49153, ns-3's first ephemeral port)
    data = [f for f in fm if f["sport"] == 49153]
    return an, data, json.loads((d / "run.json").read_text())


def _bottleneck_bps(run: dict) -> float:
    b = run["bottleneck"]
    return float(b.get("rate_bps") or int(b["bandwidth"].removesuffix("Mbps")) * 1_000_000)


@pytest.mark.parametrize("name", ["dumbbell", "dumbbell10"])
def test_flows_are_the_connections(name: str) -> None:
    """One flows row per FlowMonitor data flow, with the same 4-tuple; Jain's index over that many."""
    an, data, _ = _run(name)
    got = sorted((r["src"], r["sport"], r["dst"], r["dport"]) for r in an.flows.iter_rows(named=True))
    assert got == sorted((f["src"], f["sport"], f["dst"], f["dport"]) for f in data)
    assert an.flows["connection"].n_unique() == len(data)
    overall = an.fairness.filter(pl.col("time").is_null())
    assert overall["flows"].to_list() == [len(data)]
    # every capture that saw a connection is a view of it; each row names its file and vantage
    assert an.views.height > an.flows.height
    assert an.views["capture"].null_count() == 0 and an.flows["capture"].null_count() == 0
    assert an.flows["vantage_point"].null_count() == 0
    per_conn = an.views.group_by("connection").agg(pl.col("capture").n_unique().alias("n"), pl.len().alias("rows"))
    assert (per_conn["n"] == per_conn["rows"]).all()  # never two views from the same file


@pytest.mark.parametrize("name", ["dumbbell", "dumbbell10"])
def test_no_connection_goodput_exceeds_the_bottleneck(name: str) -> None:
    an, data, run = _run(name)
    rate = _bottleneck_bps(run)
    # at most 1448 payload bytes of each 1448 + 52 + 2 on the bottleneck's wire
    payload_rate = rate * 1448 / (1448 + HEADERS + PPP)
    assert (an.flows["goodput_bps"] <= payload_rate).all()
    # and together: the bytes the connections delivered fit in the run's time (they were
    # counted 4 and 2 times before, one row per capture)
    span = float(an.flows["end"].max() - an.flows["start"].min())
    delivered = an.views.filter(pl.col("used_for").is_in(["goodput", "all"]))["unique_bytes"].sum()
    assert delivered * 8 / span <= payload_rate


@pytest.mark.parametrize("name", ["dumbbell", "dumbbell10"])
def test_goodput_comes_from_the_receivers_side(name: str) -> None:
    """The goodput view saw what FlowMonitor counted as received (±1 packet still on the last
    hop when the run stopped); the sender-side row of flow 1 saw what FlowMonitor counted as sent."""
    an, data, _ = _run(name)
    fm = {(f["src"], f["sport"]): f for f in data}
    rx = an.views.filter(pl.col("used_for") == "goodput")
    assert rx.height == len(data)
    for r in rx.iter_rows(named=True):
        f = fm[(r["src"], r["sport"])]
        assert abs(r["packets"] - f["rxPackets"]) <= 1, r["src"]
        assert abs(r["wire_bytes"] - PPP * r["packets"] - f["rxBytes"]) <= 1500, r["src"]
        row = an.flows.filter(pl.col("connection") == r["connection"]).row(0, named=True)
        # what the receiver side got, over the time from the sender side's first packet to the
        # receiver side's last delivery (a capture behind a loss misses the connection's start)
        got_t = r["start"] + r["delivered_bytes"] * 8 / r["goodput_bps"]
        assert row["goodput_bps"] == pytest.approx(r["delivered_bytes"] * 8 / (got_t - row["start"]))
        assert row["goodput_bps"] <= r["goodput_bps"] * (1 + 1e-12) and row["goodput_capture"] == r["capture"]
        assert row["capture"] != r["capture"]
    first = an.flows.filter(pl.col("src") == "10.1.1.1").row(0, named=True)
    assert first["vantage_point"] == "sender" and first["capture"].endswith("-0-0.pcap")
    assert first["packets"] == fm[("10.1.1.1", 49153)]["txPackets"]


def test_sender_side_row_is_the_capture_nearest_the_sender() -> None:
    """Flow 1 of the dumbbell: n0's pcap (RTT 168 ms, the full round trip) represents it, not
    the bottleneck captures (75 and 22 ms: part of the path) — ordered by when each saw the SYN."""
    an, _, _ = _run("dumbbell")
    v = an.views.filter(pl.col("src") == "10.1.1.1").sort("position")
    assert v["position"].to_list() == list(range(v.height)) and v.height == 4
    assert v["start"].is_sorted()
    assert v["rtt_p50_s"][0] == pytest.approx(v["rtt_p50_s"].max(), abs=1e-5)  # ASCII: 6 digits
    row = an.flows.filter(pl.col("src") == "10.1.1.1")
    assert row["rtt_p50_s"][0] == v["rtt_p50_s"][0]


def test_a_single_capture_names_itself_and_has_one_view() -> None:
    p = sample("ns3", "dumbbell10", "db10-11-0.pcap")
    an = tracekit.analyze(tracekit.read(p))
    assert an.flows.height == 10 and set(an.flows["capture"]) == {"db10-11-0.pcap"}
    assert an.flows["views"].to_list() == [1] * 10
    assert (an.flows["connection"] == an.flows["flow"].cast(pl.Int64)).all()
    assert an.views.select(an.flows.columns).equals(an.flows)
    doc = json.loads(CliRunner().invoke(main, ["analyze", str(p), "--json"]).output)
    assert doc["views"] == [] and len(doc["flows"]) == 10


def test_json_and_table_list_the_views() -> None:
    d = sample("ns3", "dumbbell")
    r = CliRunner().invoke(main, ["analyze", str(d), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert len(doc["flows"]) == 2 and len(doc["views"]) == 7
    assert {v["capture"] for v in doc["views"]} == {"dumbbell-0-0.pcap", "dumbbell-2-2.pcap", "dumbbell-3-0.pcap",
                                                    "dumbbell.tr.gz"}
    table = CliRunner().invoke(main, ["analyze", str(d)], terminal_width=250).output
    assert "dumbbell-0-0.pcap" in table and "vantage" in table


def test_same_run_traced_twice_is_one_connection() -> None:
    """ns-2's wireless run in the old and the new trace format: one connection, two views at the
    same place, so no view is "nearer the receiver" (the goodput stays the sender's)."""
    an = tracekit.analyze(tracekit.read(sample("ns2", "wireless")))
    assert an.flows.height == 1 and an.views.height == 2
    assert an.flows["goodput_capture"][0] == an.flows["capture"][0]


def test_reused_four_tuple_later_is_another_connection() -> None:
    """ns-3 starts every connection at ISN 0: the same 4-tuple reused after the first one ended is
    told apart by time. Built from the dumbbell10 views by shifting one capture's flow 0 later."""
    an, _, _ = _run("dumbbell10")
    fl = an.views.drop("connection", "position", "used_for")
    late = fl.with_columns(
        pl.when(pl.col("capture") == "db10-12-0.pcap")
        .then(pl.col("start") + 100)
        .otherwise(pl.col("start"))
        .alias("start"),
        pl.when(pl.col("capture") == "db10-12-0.pcap").then(pl.col("end") + 100).otherwise(pl.col("end")).alias("end"),
    )
    meta = an.trace.meta
    out, views = one_per_connection(late.drop("capture"), an.packets, meta)
    assert out.height == an.flows.height + 1
    same, _ = one_per_connection(fl.drop("capture"), an.packets, meta)
    assert same.height == an.flows.height


@pytest.mark.parametrize("name", ["dumbbell", "dumbbell10"])
def test_compare_sweep_and_grading_count_connections(name: str) -> None:
    """compare and sweep (both through ``run_metrics``) and grading's flow choice see one row per
    connection: 7 and 22 per-file flows before, FlowMonitor's 2 and 10 data flows now."""
    from tracekit.grading.metrics import select_flow
    from tracekit.grading.rubric import Selector
    from tracekit.reports.compare import run_metrics

    an, data, _ = _run(name)
    main_row, values = run_metrics(an)
    assert values["flows"] == len(data)
    assert main_row is not None and main_row["capture"] is not None
    row, why = select_flow(an.flows, Selector())
    assert why is None and row is not None and row["views"] > 1
