"""Per-direction connection summary: the ``flows`` frame.

Definitions (docs/analysis.md has the full list):

* a *data segment* is a TCP segment with payload > 0;
* ``retrans_packets``/``retrans_bytes``: data segments whose bytes were (at least partly)
  sent before in that direction (``seq`` below the highest ``seq + payload`` seen so far);
  only the overlapping bytes count as retransmitted;
* ``unique_bytes``: highest sequence end minus lowest data sequence;
* ``throughput_bps``: every byte on the wire in that direction (``size``) × 8 ÷ duration;
* ``goodput_bps``: unique payload bytes × 8 ÷ duration;
* ``handshake_rtt_s``: SYN → the initiator's ACK of the SYN-ACK (Wireshark's
  ``tcp.analysis.initial_rtt``), on both directions' rows.
"""

from __future__ import annotations

import polars as pl

from tracekit.schema import ACK, SYN

FLOW_KEYS = ["flow", "dir"]


def with_seq_end(pk: pl.DataFrame) -> pl.DataFrame:
    """Add ``seq_end`` (seq + payload) and ``prev_max_end`` (highest end sent before, per direction)."""
    return pk.with_columns(seq_end=pl.col("seq") + pl.col("payload").cast(pl.Int64)).with_columns(
        prev_max_end=pl.col("seq_end").cum_max().shift(1).over(FLOW_KEYS)
    )


def flows(pk: pl.DataFrame) -> pl.DataFrame:
    """Summarise every TCP connection direction that carried data.

    Args:
        pk: Packets at the vantage point (:func:`tracekit.analysis.vantage.vantage`).

    Returns:
        One row per (flow, dir) with payload.
    """
    tcp = pk.filter((pl.col("proto") == "tcp") & pl.col("flow").is_not_null())
    tcp = with_seq_end(tcp)
    data = pl.col("payload") > 0
    overlap = (pl.min_horizontal("seq_end", "prev_max_end") - pl.col("seq")).clip(lower_bound=0)
    is_re = data & (pl.col("seq") < pl.col("prev_max_end").fill_null(-(1 << 62)))
    summary = tcp.group_by(FLOW_KEYS).agg(
        pl.col("src").first().cast(pl.String),
        pl.col("dst").first().cast(pl.String),
        pl.col("sport").first(),
        pl.col("dport").first(),
        pl.col("time").min().alias("start"),
        pl.col("time").max().alias("end"),
        pl.len().alias("packets"),
        data.sum().alias("data_packets"),
        pl.col("payload").cast(pl.Int64).sum().alias("data_bytes"),
        pl.col("size").cast(pl.Int64).sum().alias("wire_bytes"),
        (pl.col("seq_end").filter(data).max() - pl.col("seq").filter(data).min()).alias("unique_bytes"),
        is_re.sum().alias("retrans_packets"),
        overlap.filter(is_re).sum().alias("retrans_bytes"),
        pl.col("mss").drop_nulls().first().alias("mss"),
        pl.col("wscale").drop_nulls().first().alias("wscale"),
    )
    summary = summary.filter(pl.col("data_bytes") > 0)
    # handshake: SYN (initiator) -> first ACK from the initiator after the SYN-ACK
    flags = pl.col("flags").fill_null(0)
    syn_t = tcp.filter((pl.col("dir") == 0) & ((flags & (SYN | ACK)) == SYN)).group_by("flow").agg(
        pl.col("time").min().alias("_syn"))
    synack_t = tcp.filter((pl.col("dir") == 1) & ((flags & (SYN | ACK)) == (SYN | ACK))).group_by("flow").agg(
        pl.col("time").min().alias("_synack"))
    ack_t = (
        tcp.filter((pl.col("dir") == 0) & ((flags & (SYN | ACK)) == ACK))
        .join(synack_t, on="flow")
        .filter(pl.col("time") >= pl.col("_synack"))
        .group_by("flow")
        .agg(pl.col("time").min().alias("_ack3"))
    )
    hs = syn_t.join(synack_t, on="flow").join(ack_t, on="flow").select(
        "flow", (pl.col("_ack3") - pl.col("_syn")).alias("handshake_rtt_s"))
    duration = pl.col("end") - pl.col("start")
    out = (
        summary.join(hs, on="flow", how="left")
        .with_columns(duration=duration)
        .with_columns(
            unique_bytes=pl.col("unique_bytes").fill_null(0),
            throughput_bps=pl.when(pl.col("duration") > 0).then(pl.col("wire_bytes") * 8 / pl.col("duration")),
            goodput_bps=pl.when(pl.col("duration") > 0).then(pl.col("unique_bytes") * 8 / pl.col("duration")),
        )
        .sort(FLOW_KEYS)
    )
    order = ["flow", "dir", "src", "sport", "dst", "dport", "start", "end", "duration", "packets",
             "data_packets", "data_bytes", "unique_bytes", "wire_bytes", "retrans_packets", "retrans_bytes",
             "throughput_bps", "goodput_bps", "handshake_rtt_s", "mss", "wscale"]
    return out.select(order)
