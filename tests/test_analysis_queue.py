"""Queue length from enqueue/dequeue/drop events, against the simulators' own queue monitors."""

from __future__ import annotations

import polars as pl
import pytest
from anb_data import ns2_run, run_json
from conftest import make_events, sample

import tracekit
from tracekit import schema
from tracekit.analysis.queue import queue

LAB_RUNS = ["lab_reno", "lab_tahoe", "lab_lossy", "grading/ref_seed1", "grading/submissions/queue"]


@pytest.mark.parametrize("run", LAB_RUNS)
def test_ns2_queue_bounds_and_drops(run: str) -> None:
    """Never negative, never above the queue limit, and the drops are the trace's ``d`` events."""
    t, an = ns2_run(run)
    limit = run_json(run)["queue_limit_pkts"]
    q = an.queue
    per_link = q.group_by("link").agg(pl.col("packets").min().alias("min"), pl.col("packets").max().alias("max"),
                                      pl.col("bytes").min().alias("bmin"), pl.col("drops").last().alias("drops"))
    d_events = t.packets.filter(pl.col("event") == "drop").group_by("link").len()
    print(run, per_link.sort("link").rows(), "d events:", d_events.rows(), "limit", limit)
    assert (per_link["min"] >= 0).all() and (per_link["bmin"] >= 0).all()
    assert (per_link["max"] <= limit).all()
    bottleneck = per_link.filter(pl.col("link") == "0->1").row(0, named=True)
    assert bottleneck["drops"] == d_events.filter(pl.col("link") == "0->1")["len"][0]
    if t.packets.filter(pl.col("event") == "drop").height and run != "grading/ref_seed1":
        assert bottleneck["max"] == limit  # tail drops happen when the queue is full
    # WindowMon.tr's queue column: the flow's packets queued at each sample instant
    mon = t.samples.filter(pl.col("metric") == "queue").select("time", pl.col("value").alias("mon")).sort("time")
    at = mon.join_asof(q.filter(pl.col("link") == "0->1").sort("time").select("time", "packets"), on="time")
    assert (at["packets"] == at["mon"]).all()
    print(run, "WindowMon queue vs ours:", at.select("time", "mon", "packets").rows()[:8])


def test_lab_lossy_error_model_drops_leave_the_queue_alone() -> None:
    """ErrorModel losses are ``d`` lines without a ``+``: counted as drops, not taken off the queue."""
    t, an = ns2_run("lab_lossy")
    pk = t.packets.filter(pl.col("link") == "0->1")
    enq = pk.filter(pl.col("event") == "enqueue").select("pkt_id").unique()
    drops = pk.filter(pl.col("event") == "drop")
    queued = drops.join(enq, on="pkt_id", how="semi").height
    assert (queued, drops.height - queued) == (13, 15)  # samples/ns2/README.md
    q = an.queue.filter(pl.col("link") == "0->1")
    # the queue at the end: every enqueue is dequeued or tail-dropped, so it equals the packets still waiting
    deq = pk.filter(pl.col("event") == "dequeue").height
    assert q["packets"][-1] == enq.height - deq - queued
    assert q["drops"][-1] == 28


def test_dumbbell_matches_the_queue_monitor() -> None:
    """The r0->r1 queue (packets and bytes) equals queue.tr at every one of its 3446 lines."""
    t, an = ns2_run("dumbbell")
    ours = an.queue.filter(pl.col("link") == "4->5")
    mon_p = t.samples.filter(pl.col("metric") == "queue").sort("time", maintain_order=True)
    mon_b = t.samples.filter(pl.col("metric") == "queue_bytes").sort("time", maintain_order=True)
    assert ours.height == mon_p.height == 3446
    assert ours["packets"].to_list() == mon_p["value"].cast(pl.Int64).to_list()
    assert ours["bytes"].to_list() == mon_b["value"].cast(pl.Int64).to_list()
    # the trace rounds times to 1 µs, the monitor prints them unrounded
    assert (ours["time"] - mon_p["time"]).abs().max() <= 1e-6 + 1e-12
    assert ours["drops"][-1] == t.packets.filter((pl.col("event") == "drop") & (pl.col("link") == "4->5")).height == 81


def test_ns3_device_queue() -> None:
    """ns-3 drops before enqueue (no ``+``, no packet id): 19 drops, never more than the 10-packet queue."""
    t = tracekit.read(sample("ns3", "dumbbell", "dumbbell.tr.gz"))
    q = queue(t.packets)
    bott = q.filter(pl.col("link") == "2/2")
    assert bott["drops"][-1] == 19
    assert bott["packets"].min() >= 0 and bott["packets"].max() == 10
    assert q.filter(pl.col("link") != "2/2")["drops"].max() == 0


def test_tail_drop_rule_on_hand_made_events() -> None:
    """``+`` then ``d`` of the same packet leaves the queue; a ``d`` with no ``+`` does not; a ``-`` with no
    ``+`` neither."""
    ev = make_events(
        event=["enqueue", "enqueue", "drop", "drop", "dequeue", "dequeue", "dequeue"],
        pkt_id=[1, 2, 2, 3, 1, 9, 4],
        size=[100, 200, 200, 300, 100, 50, 10],
        link=["0->1"] * 7, node=["0"] * 7,
    )
    q = queue(ev)
    assert q.columns == list(schema.QUEUE)
    assert q["packets"].to_list() == [1, 2, 1, 1, 0, 0, 0]
    assert q["bytes"].to_list() == [100, 300, 100, 100, 0, 0, 0]
    assert q["drops"].to_list() == [0, 0, 1, 2, 2, 2, 2]
    # without packet ids (ns-3 ASCII): +1/-1, drops never enqueued
    q2 = queue(ev.with_columns(pkt_id=pl.lit(None, pl.Int64)).head(5))
    assert q2["packets"].to_list() == [1, 2, 2, 2, 1]


def test_captures_have_no_queue() -> None:
    assert queue(make_events(n=5)).is_empty()
    assert queue(schema.empty(schema.PACKETS)).schema == pl.Schema(schema.QUEUE)
