"""Choosing the vantage point: one row per packet, as a capture at the sender would see it.

A capture already has one row per packet (``event == "capture"``). A simulator
trace records a packet once per link and per event (enqueue, dequeue, receive,
drop); analyses need one observation per packet, taken where the sender puts
it on the wire. tracekit uses, for each connection direction, the events on the
*sender's first link* (the link whose upstream node is the packet's source node):
``dequeue`` events there when the trace has them (the moment the packet starts
transmission), else ``enqueue``, else ``send``; traces with only ``recv`` events
(NetSim) use the first hop's receptions. Drops are kept out of this view; the
queue and loss analyses read them from the full trace.
"""

from __future__ import annotations

import polars as pl

_PREFERENCE = ("capture", "dequeue", "enqueue", "send", "recv")


def vantage(packets: pl.DataFrame) -> pl.DataFrame:
    """Return one row per packet at the sender's vantage point (see the module docstring).

    Args:
        packets: A Trace's packets frame.

    Returns:
        The selected rows in time order.
    """
    if packets.is_empty():
        return packets
    events = set(packets["event"].cast(pl.String).unique().to_list())
    if events == {"capture"}:
        return packets
    pk = packets.filter(pl.col("event") != "drop")
    if pk.is_empty():
        return pk
    # the sender's first link of each (flow, dir): the link of the direction's first event
    first_link = (
        pk.filter(pl.col("flow").is_not_null())
        .group_by("flow", "dir")
        .agg(pl.col("link").sort_by("time").first().alias("_first_link"))
    )
    pk = pk.join(first_link, on=["flow", "dir"], how="left", maintain_order="left")
    pk = pk.filter(pl.col("_first_link").is_null() | (pl.col("link") == pl.col("_first_link")) | pl.col("link").is_null())
    have = set(pk["event"].cast(pl.String).unique().to_list())
    for ev in _PREFERENCE:
        if ev in have:
            return pk.filter(pl.col("event") == ev).drop("_first_link").sort("time", maintain_order=True)
    return pk.drop("_first_link")
