"""Choosing the vantage point: one row per packet, as a capture at the sender would see it.

A capture already has one row per packet (``event == "capture"``); where it was taken is
*detected* (:func:`detect`). A simulator trace records a packet once per link and per
event (enqueue, dequeue, receive, drop); analyses need one observation per packet, taken
where a capture on the data sender would take it. For each connection tracekit picks:

* the **data sender** ``H``: the upstream node of the first link of the direction that
  carried more payload (ns-2 ``from`` node, ns-3 node of the device);
* its direction's events on that **first link**, the earliest event a packet has there:
  ``send``, else ``enqueue`` (ns-2 ``+``: the moment the TCP agent sends it, before the
  link's queue, so packets dropped by that queue are seen, as ``tcpdump`` would), else
  ``dequeue``, else ``recv``. Drops on that link of packets never enqueued there (ns-2
  ErrorModel losses at the link head, ns-3 queue drops, which have no ``+``) are kept too:
  the agent did send them;
* the other direction's ``recv`` events **at** ``H`` (ACK arrivals at the sender: the link's
  downstream node is ``H``); when the trace has none there, that direction's events on its
  own first link, with the same preference (RTTs then miss the return path).

Drops elsewhere are kept out of this view; the queue and loss analyses read the full trace.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.schema import RTT

#: Earliest observation of a packet on a link first.
_RANK = {"capture": 0, "send": 1, "enqueue": 2, "dequeue": 3, "recv": 4, "drop": 5}
KEYS = ["flow", "dir"]


def _ends(link: pl.Expr, node: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Upstream and downstream node of a link: ``"a->b"`` (ns-2, NetSim), else the observing node."""
    arrow = link.str.contains("->", literal=True).fill_null(False)
    parts = link.str.split("->")
    up = pl.when(arrow).then(parts.list.first()).otherwise(node)
    down = pl.when(arrow).then(parts.list.last()).otherwise(pl.lit(None, pl.String))
    return up, down


def vantage(packets: pl.DataFrame) -> pl.DataFrame:
    """Return one row per packet at the sender's vantage point (see the module docstring).

    Args:
        packets: A Trace's packets frame.

    Returns:
        The selected rows in time order (captures: unchanged).
    """
    if packets.is_empty():
        return packets
    events = set(packets["event"].unique().cast(pl.String).to_list())  # unique first: 1M-row string cast is slow
    if events <= {"capture"}:
        return packets
    rank = pl.col("event").cast(pl.String).replace_strict(_RANK, default=9, return_dtype=pl.Int8)
    up, down = _ends(pl.col("link"), pl.col("node"))
    pk = packets.with_row_index("_r").with_columns(_rank=rank, _up=up, _down=down)
    fl = pk.filter(pl.col("flow").is_not_null() & pl.col("dir").is_not_null())
    if fl.is_empty():
        return _best_events(pk, None).drop("_r", "_rank", "_up", "_down")
    size = pl.coalesce(pl.col("payload").cast(pl.Int64), pl.lit(0))
    firsts = (
        fl.sort("time", "_r")
        .group_by(KEYS)
        .agg(
            pl.col("link").first().alias("_flink"),
            pl.col("_up").first().alias("_src"),
            size.filter(pl.col("event") != "drop").sum().alias("_bytes"),
            pl.col("size").cast(pl.Int64).sum().alias("_wire"),
        )
    )
    data_dir = (
        firsts.sort("_bytes", "_wire", descending=True)
        .group_by("flow").agg(pl.col("dir").first().alias("_ddir"), pl.col("_src").first().alias("_H"))
    )
    fl = fl.join(firsts.select(*KEYS, "_flink"), on=KEYS, how="left").join(data_dir, on="flow", how="left")
    on_first = pl.col("link").eq_missing(pl.col("_flink"))
    is_data = pl.col("dir") == pl.col("_ddir")
    # data direction: its first link; drops kept only for packets never enqueued there
    enq_ids = fl.filter(is_data & on_first & (pl.col("event") == "enqueue") & pl.col("pkt_id").is_not_null()).select(
        "flow", "pkt_id", _enq=pl.lit(True)).unique()
    fl = fl.join(enq_ids, on=["flow", "pkt_id"], how="left")
    data_rows = fl.filter(is_data & on_first)
    kept_drops = data_rows.filter((pl.col("event") == "drop") & pl.col("_enq").is_null())
    data_rows = _best_events(data_rows.filter(pl.col("event") != "drop"), KEYS)
    # (polars types Series.min() as any scalar or None; _rank is an integer column, not empty here)
    if kept_drops.height and data_rows.height and data_rows["_rank"].min() <= _RANK["enqueue"]:  # type: ignore[operator]
        data_rows = pl.concat([data_rows, kept_drops])
    # other direction: arrivals at the data sender, else its own first link
    back = fl.filter(~is_data & (pl.col("event") != "drop"))
    at_h = back.filter(
        (pl.col("event") == "recv") & (pl.col("_down").eq_missing(pl.col("_H")) | (pl.col("_down").is_null()
                                                                                   & (pl.col("node") == pl.col("_H"))))
    )
    have = at_h.select(*KEYS).unique().with_columns(_have=pl.lit(True))
    rest = back.join(have, on=KEYS, how="left").filter(pl.col("_have").is_null() & on_first).drop("_have")
    back_rows = pl.concat([at_h, _best_events(rest, KEYS)]) if rest.height else at_h
    other = _best_events(pk.filter(pl.col("flow").is_null() | pl.col("dir").is_null()), None)
    cols = packets.columns
    out = pl.concat([data_rows.select(*cols, "_r"), back_rows.select(*cols, "_r"), other.select(*cols, "_r")])
    return out.sort("time", "_r").drop("_r")


def _best_events(df: pl.DataFrame, keys: list[str] | None) -> pl.DataFrame:
    """Keep the rows of the best-ranked event (per group, or overall)."""
    if df.is_empty():
        return df
    best = pl.col("_rank").min() if keys is None else pl.col("_rank").min().over(keys)
    return df.filter((pl.col("_rank") == best) & (pl.col("event") != "drop"))


def detect(pk: pl.DataFrame, rtt_samples: pl.DataFrame | None = None) -> pl.DataFrame:
    """Where the packets of each connection were observed: ``sender``, ``receiver`` or ``middle``.

    From the handshake when it was seen: at the initiator the SYN-ACK comes one RTT after the
    SYN and the initiator's ACK right after it; at the responder the other way round; in the
    middle both take part of the RTT. The side whose answer took under a tenth of SYN→ACK (or
    under 0.5 ms) is next to the vantage point; when neither is, it is in the ``middle``. When
    both answered within 0.5 ms (a path of tens of microseconds: both are host delays), the IP
    TTLs tell where they can: a side whose packets carry an initial TTL (64, 128, 255) while the
    other side's carry lowered ones was captured next to its host (each router lowers it); where
    they do not, a median data→ACK delay of 2 ms or more (the ACKs come from afar, behind a
    queue) makes it ``sender``, else the handshake's answer stands. Without a handshake: a median
    data→ACK delay under 2 ms means the ACKs were sent right here (``receiver``), else ``sender``.
    ``sender``/``receiver`` refer to the direction that carried more payload (the initiator's on
    a tie). The rules run in the compiled core
    (``src/state/vantage.rs``: one accumulator per connection, fed the packets in order; the
    handshake is timed from the flags alone, so traces without ACK numbers get one too).

    Args:
        pk: Packets at the vantage point.
        rtt_samples: The ``rtt`` frame, for connections without a handshake.

    Returns:
        ``flow, vantage_point`` (null when the flow carried no TCP data).
    """
    known = pl.col("flow").is_not_null() & pl.col("dir").is_not_null()
    c = pk.select(
        flow=pl.col("flow").cast(pl.UInt32).fill_null(0), dir=pl.col("dir").cast(pl.Int8).fill_null(0),
        keep=((pl.col("proto") == "tcp") & known).fill_null(False), time=pl.col("time").cast(pl.Float64),
        payload=pl.col("payload").cast(pl.UInt32).fill_null(0), flags=pl.col("flags").cast(pl.UInt8).fill_null(0),
    )
    rs = rtt_samples if rtt_samples is not None else pl.DataFrame(schema=RTT)
    # (a capture's TTLs; a simulator's trace has none: 0 is unknown to the core)
    known_ttl = "ttl" in pk.columns and pk["ttl"].null_count() < pk.height
    ttl = pk["ttl"].cast(pl.UInt8).fill_null(0).to_numpy() if known_ttl else np.zeros(0, np.uint8)
    flows, codes = _core.tcp_vantage(
        c["flow"].to_numpy(), c["dir"].to_numpy(), c["keep"].to_numpy(), c["time"].to_numpy(),
        c["payload"].to_numpy(), c["flags"].to_numpy(), ttl,
        rs["flow"].cast(pl.UInt32).to_numpy(), rs["dir"].cast(pl.Int8).to_numpy(),
        rs["rtt_s"].cast(pl.Float64).fill_null(0.0).to_numpy(),
        ((rs["method"] == "seq") & rs["rtt_s"].is_not_null()).fill_null(False).to_numpy())
    return pl.DataFrame({"flow": pl.Series(flows, dtype=pl.UInt32),
                         "vantage_point": pl.Series(_POINTS[codes].tolist(), dtype=pl.String)})


#: The core's vantage point codes (0, 1, 2; -1 = none, the last entry).
_POINTS = np.array(["sender", "receiver", "middle", None], dtype=object)
