"""The time–sequence graph (Stevens/tcptrace) of one connection direction.

Data segments are vertical bars from ``seq`` to ``seq + payload``; the reverse direction's
cumulative ACK is a step line and ACK + advertised window a second one (the sender may not
go above it); retransmissions and SACK blocks are marked. The rules of
:mod:`tracekit.reports.charts` apply (thinned data, named views, cleaned labels).
"""

from __future__ import annotations

import altair as alt
import polars as pl

from tracekit.reports._chartkit import (
    SEQ_COLORS,
    Bag,
    NoData,
    axes,
    axis_from_zero,
    has,
    in_time_order,
    layered,
    one_flow,
    stall_layer,
    unchecked,
    with_notes,
)
from tracekit.reports.downsample import MAX_POINTS, cap, minmax
from tracekit.schema import ACK


def _retrans_from_packets(data: pl.DataFrame) -> pl.DataFrame:
    """Data segments resending bytes sent before (the flows table's definition), for old analyses."""
    seq_end = pl.col("seq") + pl.col("payload").cast(pl.Int64)
    prev = seq_end.cum_max().shift(1)
    return data.filter(pl.col("seq") < prev.fill_null(-(1 << 62))).select(
        "time", "seq", pl.col("payload").cast(pl.Int64).alias("len"))


@unchecked
def time_sequence(
    packets: pl.DataFrame,
    flow: int,
    dir: int,
    *,
    retransmissions: pl.DataFrame | None = None,
    stalls: pl.DataFrame | None = None,
    title: str = "",
    name: str = "timeseq",
    time_from_zero: bool | None = None,
) -> alt.LayerChart:
    """Stevens/tcptrace time–sequence graph of one connection direction.

    Data segments are vertical bars from ``seq`` to ``seq + payload``; the
    reverse direction's cumulative ACK is a step line and ACK + advertised
    window a second one (the sender may not go above it); retransmissions
    and SACK blocks are marked.

    Args:
        packets: Packets at the vantage point (:data:`~tracekit.schema.PACKETS`).
        flow: Connection id.
        dir: The data direction (0 or 1); ACKs are read from the other one.
        retransmissions: :data:`~tracekit.schema.RETRANSMISSIONS`; when None they
            are found from the packets (bytes below the highest sequence sent).
        stalls: :data:`~tracekit.schema.STALLS`, shaded.
        title: Chart title (untrusted text is cleaned).
        name: View-name prefix (keeps specs deterministic and unique in a page).
        time_from_zero: Start the time axis at 0 (None: unless the data starts late,
            :func:`~tracekit.reports._chartkit.starts_late`).

    Returns:
        The layered chart.

    Raises:
        NoData: when the direction carried no payload with sequence numbers.
    """
    bag = Bag(name)
    need = ("flow", "dir", "time", "seq", "payload")
    if not has(packets, *need):
        raise NoData("no packets with sequence numbers")
    # each layer copies only the rows and the columns it reads (the packets carry ~30 columns, the
    # SACK lists among them): a select picks columns without copying, the filter then copies those
    pk = _Rows(packets, flow)
    data = in_time_order(pk.get((pl.col("dir") == dir) & (pl.col("payload") > 0) & pl.col("seq").is_not_null(),
                                "time", "seq", "payload"), maintain_order=True)
    if data.is_empty():
        raise NoData("this direction carried no data segments with sequence numbers")
    layers: list[alt.Chart] = []
    x0 = axis_from_zero(time_from_zero, data["time"])
    segs = minmax(data.select("time", "seq", (pl.col("seq") + pl.col("payload").cast(pl.Int64)).alias("end")),
                  "time", "end", max_points=MAX_POINTS)
    seg_rows = segs.select(pl.col("time").alias("t"), pl.col("seq").alias("y"), pl.col("end").alias("y2"),
                           pl.lit("data").alias("s"))
    layers.append(alt.Chart(bag.frame(seg_rows), name=f"{name}_data")
                  .mark_rule(strokeWidth=1.5).encode(**axes("time (s)", "relative sequence number (bytes)",
                                                                             y_from_zero=False, x_from_zero=x0),
                                                     y2=alt.Y2("y2:Q")))
    notes: list[str] = []
    layers += _ack_layers(pk, dir, name, bag, notes)
    re_ = _retransmissions(retransmissions, data, flow, dir)
    if re_.height:
        layers.append(_retrans_layer(re_, name, bag, notes))
    st = stall_layer(stalls, flow, dir, name, bag)
    if st is not None:
        layers.append(st)
    chart = layered(layers, name, title or "time–sequence", SEQ_COLORS, "relative sequence number (bytes)", bag)
    return bag.attach(with_notes(chart, notes))


class _Rows:
    """Rows of one connection of the packets, each read with only the columns asked for."""

    def __init__(self, packets: pl.DataFrame, flow: int) -> None:
        self.packets, self.flow, self.columns = packets, flow, packets.columns

    def get(self, cond: pl.Expr, *columns: str) -> pl.DataFrame:
        """The connection's rows where ``cond`` holds, with ``columns``."""
        need = dict.fromkeys(["flow", *cond.meta.root_names(), *columns])
        return self.packets.select(list(need)).filter((pl.col("flow") == self.flow) & cond).select(columns)


def _ack_layers(pk: _Rows, dir: int, name: str, bag: Bag, notes: list[str]) -> list[alt.Chart]:
    """The reverse direction's cumulative ACK, ACK + advertised window, and SACK blocks (capped; ``notes``
    says how many were left out). ``pk`` reads the connection's packets."""
    columns = pk.columns
    if "ack" not in columns:
        return []
    flags = pl.col("flags").fill_null(0) if "flags" in columns else pl.lit(ACK)
    is_ack = (pl.col("dir") == 1 - dir) & pl.col("ack").is_not_null() & ((flags & ACK) != 0)
    acks = in_time_order(pk.get(is_ack, *[c for c in ("time", "ack", "win") if c in columns]), maintain_order=True)
    if not acks.height:
        return []
    ack_rows = minmax(acks.select("time", "ack"), "time", "ack").select(
        pl.col("time").alias("t"), pl.col("ack").alias("y"), pl.lit("ack").alias("s"))
    layers = [alt.Chart(bag.frame(ack_rows), name=f"{name}_ack")
              .mark_line(interpolate="step-after", strokeWidth=1).encode(x=alt.X("t:Q"), y=alt.Y("y:Q"))]
    if "win" in acks.columns and acks["win"].null_count() < acks.height:
        win = acks.filter(pl.col("win").is_not_null()).select("time", (pl.col("ack") + pl.col("win")).alias("w"))
        win_rows = minmax(win, "time", "w").select(pl.col("time").alias("t"), pl.col("w").alias("y"),
                                                   pl.lit("window").alias("s"))
        layers.append(alt.Chart(bag.frame(win_rows), name=f"{name}_window")
                      .mark_line(interpolate="step-after", strokeWidth=1, strokeDash=[4, 2])
                      .encode(x=alt.X("t:Q"), y=alt.Y("y:Q")))
    if "sack" in columns:
        # only the ACKs that carry blocks are read (the SACK lists are the packets' largest column);
        # a stable sort and a filter commute, so these are the sorted ACKs' rows with blocks
        sacks = pk.get(is_ack & (pl.col("sack").list.len() > 0), "time", "sack")
        blocks = (in_time_order(sacks, maintain_order=True).explode("sack")
                  .select(pl.col("time").alias("t"), pl.col("sack").arr.get(0).alias("y"),
                          pl.col("sack").arr.get(1).alias("y2"), pl.lit("sack").alias("s")))
        blocks, left = cap(blocks)
        if left:
            notes.append(f"{left:,} SACK blocks not drawn")
        if blocks.height:
            layers.append(alt.Chart(bag.frame(blocks), name=f"{name}_sack")
                          .mark_rule(strokeWidth=3, opacity=0.6)
                          .encode(x=alt.X("t:Q"), y=alt.Y("y:Q"), y2=alt.Y2("y2:Q")))
    return layers


def _retransmissions(retransmissions: pl.DataFrame | None, data: pl.DataFrame, flow: int, dir: int
                     ) -> pl.DataFrame:
    """``time, seq, len, kind`` of the direction's retransmissions: the frame's, else (None) found
    from the data segments."""
    if retransmissions is not None and has(retransmissions, "flow", "dir", "time", "seq"):
        return one_flow(retransmissions, flow, dir).select(
            "time", "seq", (pl.col("len") if "len" in retransmissions.columns else pl.lit(0)).alias("len"),
            (pl.col("kind") if "kind" in retransmissions.columns else pl.lit(None, pl.String)).alias("kind"))
    if retransmissions is None:
        return _retrans_from_packets(data).with_columns(kind=pl.lit(None, pl.String))
    return pl.DataFrame(schema={"time": pl.Float64, "seq": pl.Int64, "len": pl.Int64, "kind": pl.String})


def _retrans_layer(re_: pl.DataFrame, name: str, bag: Bag, notes: list[str]) -> alt.Chart:
    """Retransmissions as diamonds at their sequence end (capped; ``notes`` says how many were left out)."""
    re_, left = cap(re_.sort("time"))
    if left:
        notes.append(f"{left:,} retransmission markers not drawn")
    rows = re_.select(pl.col("time").alias("t"), (pl.col("seq") + pl.col("len").fill_null(0)).alias("y"),
                      pl.col("kind").cast(pl.String).alias("kind"), pl.lit("retransmission").alias("s"))
    # altair's encode() is generated at run time and typed as returning Any: the layer is a Chart
    marks: alt.Chart = (alt.Chart(bag.frame(rows), name=f"{name}_retrans")
                        .mark_point(shape="diamond", size=40, filled=True)
                        .encode(x=alt.X("t:Q"), y=alt.Y("y:Q"), tooltip=[alt.Tooltip("t:Q", title="time (s)"),
                                                           alt.Tooltip("y:Q", title="seq end"),
                                                           alt.Tooltip("kind:N", title="kind")]))
    return marks
