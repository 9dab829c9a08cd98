"""Throughput, goodput and packet rate per direction over time: the ``throughput`` frame.

Definitions (docs/analysis.md):

* bins are ``[origin + k·bin_s, origin + (k+1)·bin_s)`` on the trace's clock, the same grid
  for every direction (so that directions can be compared bin by bin); a direction has a
  row for every bin from its first packet's to its last packet's, **zeros** where it was
  silent;
* ``throughput_bps``: every byte of every packet of the direction (``size``: headers,
  retransmissions, pure ACKs) × 8 ÷ ``bin_s``;
* ``goodput_bps``: new payload × 8 ÷ ``bin_s``, where a segment's new payload is the part
  of it above the highest sequence end seen before it in that direction (the first
  segment counts from the lowest data sequence number). Over a whole direction this adds
  up to exactly ``highest end − lowest data seq`` (the flows frame's ``unique_bytes``);
  bytes below a hole are counted when the hole's upper edge is first sent. At the sender's
  vantage point this is new data *sent*; give the receiver's view to measure delivery;
* ``packets_per_s``: packets ÷ ``bin_s``. Packets without a sequence number (UDP) count
  their whole payload as new.
"""

from __future__ import annotations

import math

import polars as pl

from tracekit import schema
from tracekit.analysis import default_bin
from tracekit.errors import LimitError, UsageError

KEYS = ["flow", "dir"]


#: Most time bins one flow direction may span (a dense grid of zeros is built between them).
MAX_BINS = 10_000_000


def throughput(pk: pl.DataFrame, bin_s: float | None = None, *, origin: float = 0.0) -> pl.DataFrame:
    """Throughput, goodput and packet rate per (flow, dir) per time bin.

    Args:
        pk: Packets at one vantage point (one row per packet), e.g. ``Analysis.packets``.
        bin_s: Bin width in seconds; None picks :func:`tracekit.analysis.default_bin` of the
            packets' time span (a 1-2-5 step, at least 1 ms).
        origin: Where bin 0 starts, in the trace's seconds (e.g. 0.1 to line bins up with a
            monitor sampled at 1.1, 2.1, …).

    Returns:
        A :data:`tracekit.schema.THROUGHPUT` frame sorted by flow, dir, time.

    Raises:
        UsageError: if ``bin_s`` is not a positive, finite number.
    """
    rows = pk.filter(pl.col("flow").is_not_null() & pl.col("dir").is_not_null())
    if rows.is_empty():
        return schema.empty(schema.THROUGHPUT)
    if bin_s is None:
        span = rows.select(pl.col("time").max() - pl.col("time").min()).item()
        bin_s = default_bin(float(span))
    if not (isinstance(bin_s, (int, float)) and math.isfinite(bin_s) and bin_s > 0):
        raise UsageError(f"throughput bin must be a positive number of seconds, not {bin_s!r}")
    b = float(bin_s)
    data = pl.col("payload").fill_null(0) > 0
    seq_end = pl.col("seq") + pl.col("payload").cast(pl.Int64)
    rows = rows.sort("time", "frame", maintain_order=True).with_columns(
        _end=pl.when(data).then(seq_end),
        _low=pl.col("seq").filter(data).min().over(KEYS),
        # round before floor: a packet stamped exactly on a bin edge (1.1 with origin 0.1)
        # must not fall into the previous bin through binary rounding
        _k=((pl.col("time") - origin) / b).round(9).floor().cast(pl.Int64, strict=False),
    ).with_columns(
        _prev=pl.col("_end").cum_max().shift(1).over(KEYS),
    ).with_columns(
        _new=pl.when(pl.col("seq").is_null()).then(pl.col("payload").fill_null(0).cast(pl.Int64))
        .otherwise((pl.col("_end") - pl.coalesce("_prev", "_low")).clip(lower_bound=0).fill_null(0)),
    )
    per_bin = rows.group_by(*KEYS, "_k").agg(
        pl.col("size").cast(pl.Int64).sum().alias("_bytes"),
        pl.col("_new").sum().alias("_good"),
        pl.len().alias("_n"),
    )
    span = rows.select((pl.col("_k").max() - pl.col("_k").min()).over(KEYS).max()).item()
    if span is None or span > MAX_BINS:
        # damaged times (1e179 s) or a tiny bin over a long trace: refuse rather than allocate
        raise LimitError(f"{span if span is not None else 'unbounded'} throughput bins of {b:g} s in one flow, "
                         f"over the limit of {MAX_BINS:,}", hint="choose a larger bin, or check the trace's times")
    grid = (rows.group_by(KEYS).agg(pl.int_ranges(pl.col("_k").min(), pl.col("_k").max() + 1).first().alias("_k"))
            .explode("_k"))
    out = grid.join(per_bin, on=[*KEYS, "_k"], how="left").with_columns(
        pl.col("_bytes", "_good", "_n").fill_null(0))
    out = out.select(
        "flow", "dir",
        (origin + pl.col("_k").cast(pl.Float64) * b).alias("time"),
        pl.lit(b).alias("bin_s"),
        (pl.col("_bytes") * 8.0 / b).alias("throughput_bps"),
        (pl.col("_good") * 8.0 / b).alias("goodput_bps"),
        (pl.col("_n").cast(pl.Float64) / b).alias("packets_per_s"),
    )
    return schema.conform(out, schema.THROUGHPUT).sort(KEYS + ["time"])
