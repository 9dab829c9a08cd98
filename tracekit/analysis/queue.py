"""Queue length per link over time, from a simulator's enqueue/dequeue/drop events: the ``queue`` frame.

Every ``enqueue`` adds the packet to its link's queue; a ``dequeue`` (start of
transmission) removes it; a ``drop`` removes it **only if that same packet** (same
``pkt_id``) was enqueued on that link and not yet dequeued:

* ns-2 tail drops print ``+`` then ``d`` with the same uid and no ``-`` (docs/formats-ns2.md "Drops"),
  RED's drops likewise: the packet did enter the queue trace, so it leaves it;
* ns-2 ErrorModel losses (``$ns lossmodel``) and ns-3 device-queue drops are ``d`` lines
  with no ``+`` before them: the packet never joined the queue, the length is unchanged.

Dequeues are matched the same way, so a trace that starts with packets already queued
never shows a negative length. Events without a ``pkt_id`` (ns-3 ASCII has none) fall
back to +1 per enqueue, −1 per dequeue, 0 per drop, ns-3's convention. ``drops`` counts
every drop event on the link, cumulatively. Events at the same time keep file order
(ns-2 writes them in causal order).
"""

from __future__ import annotations

import polars as pl

from tracekit import schema

_QUEUE_EVENTS = ("enqueue", "dequeue", "drop")


def queue(all_packets: pl.DataFrame) -> pl.DataFrame:
    """Queue length (packets, bytes) and cumulative drops per link after every queue event.

    Args:
        all_packets: A Trace's full packets frame (every event, every link).

    Returns:
        A :data:`tracekit.schema.QUEUE` frame, one row per enqueue/dequeue/drop event, sorted by
        link and time. Empty for captures (no queue events).
    """
    if all_packets.is_empty() or all_packets["link"].null_count() == all_packets.height:
        return schema.empty(schema.QUEUE)  # captures: no link, no queue (and no 1M-row string cast)
    ev = all_packets.filter(pl.col("event").cast(pl.String).is_in(_QUEUE_EVENTS) & pl.col("link").is_not_null())
    # only links whose queue is traced: a link with drops but no enqueue has no queue to follow
    ev = ev.filter((pl.col("event") == "enqueue").any().over("link"))
    if ev.is_empty():
        return schema.empty(schema.QUEUE)
    ev = ev.select("link", "time", "frame", pl.col("event").cast(pl.String), pl.col("size").cast(pl.Int64), "pkt_id")
    ev = ev.sort("link", "time", "frame", maintain_order=True).with_row_index("_r")
    enq, deq, drop = (pl.col("event") == e for e in _QUEUE_EVENTS)
    # per packet and link: is the packet in this queue just before this event?
    per_pkt = ["link", "pkt_id"]
    keyed = ev.filter(pl.col("pkt_id").is_not_null()).sort("link", "pkt_id", "_r").with_columns(
        _in=(enq.cast(pl.Int64) - (deq | drop).cast(pl.Int64)).cum_sum().shift(1, fill_value=0).over(per_pkt),
    ).select("_r", "_in")
    ev = ev.join(keyed, on="_r", how="left")
    in_queue = pl.col("_in") >= 1
    delta = (
        pl.when(enq).then(1)
        .when(pl.col("pkt_id").is_null()).then(pl.when(deq).then(-1).otherwise(0))
        .when((deq | drop) & in_queue).then(-1)
        .otherwise(0)
    )
    ev = ev.sort("_r").with_columns(_d=delta.cast(pl.Int64))
    out = ev.select(
        "link", "time",
        pl.col("_d").cum_sum().over("link").alias("packets"),
        (pl.col("_d") * pl.col("size").fill_null(0)).cum_sum().over("link").alias("bytes"),
        drop.cast(pl.Int64).cum_sum().over("link").alias("drops"),
    )
    return schema.conform(out, schema.QUEUE)
