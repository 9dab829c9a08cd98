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

The per-packet pass (capture order per direction, new payload, the sums per bin) runs in the
compiled core (``src/state/bins.rs``); this module computes the bin numbers and builds the frame.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from tracekit import _core, schema
from tracekit.analysis._groups import MISSING
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
    keyed = pl.col("flow").is_not_null() & pl.col("dir").is_not_null()
    # only the columns used, filtered lazily: an eager filter would copy all of the packets frame
    span = pk.lazy().filter(keyed).select(pl.len().alias("n"), (pl.col("time").max() - pl.col("time").min()).alias("s"))
    n, span_s = span.collect().row(0)
    if not n:
        return schema.empty(schema.THROUGHPUT)
    if bin_s is None:
        bin_s = default_bin(float(span_s))
    if not (isinstance(bin_s, (int, float)) and math.isfinite(bin_s) and bin_s > 0):
        raise UsageError(f"throughput bin must be a positive number of seconds, not {bin_s!r}")
    b = float(bin_s)
    cols = _columns(pk, b, origin, keyed, every_row=n == pk.height)
    c = {name: cols[name].to_numpy() for name in cols.columns}
    refused, flow, dirs, kmin, nbins, nbytes, good, npk = _core.throughput_bins(
        c["flow"], c["dir"], c["time"], c["frame"], c["size"], c["payload"], c["seq"], c["k"], MAX_BINS)
    del c
    if refused:
        # a tiny bin over a long trace: refuse rather than allocate
        what = "unbounded" if refused < 0 else str(refused)
        raise LimitError(f"{what} throughput bins of {b:g} s in one flow, over the limit of {MAX_BINS:,}",
                         hint="choose a larger bin, or check the trace's times")
    grid_g = np.repeat(np.arange(len(nbins)), nbins)
    base = np.cumsum(nbins) - nbins
    grid_k = np.arange(len(npk)) - np.repeat(base, nbins) + np.repeat(kmin, nbins)
    out = pl.DataFrame({
        "flow": flow[grid_g], "dir": dirs[grid_g],
        "time": origin + grid_k.astype(np.float64) * b,
        "bin_s": np.full(len(npk), b),
        "throughput_bps": nbytes * 8.0 / b,
        "goodput_bps": good * 8.0 / b,
        "packets_per_s": npk.astype(np.float64) / b,
    })
    return schema.conform(out, schema.THROUGHPUT)


def _columns(pk: pl.DataFrame, b: float, origin: float, keyed: pl.Expr, every_row: bool) -> pl.DataFrame:
    """The packets' columns the bins need (rows with a flow and dir), with ``k``: each one's bin number.

    Args:
        every_row: Every row of ``pk`` has a flow and dir.
    """
    wanted = [  # in the dtypes of the core's throughput_bins
        pl.col("flow").cast(pl.UInt32), pl.col("dir").cast(pl.Int8), pl.col("time").cast(pl.Float64),
        pl.col("frame").cast(pl.UInt64), pl.col("size").fill_null(0).cast(pl.UInt32),
        pl.col("payload").fill_null(0).cast(pl.UInt32), pl.col("seq").fill_null(MISSING).cast(pl.Int64),
        # round before floor: a packet stamped exactly on a bin edge (1.1 with origin 0.1)
        # must not fall into the previous bin through binary rounding; an absurd time
        # (a damaged trace's 1e179 s) becomes null and is left out
        ((pl.col("time") - origin) / b).round(9).floor().cast(pl.Int64, strict=False).fill_null(MISSING).alias("k"),
    ]
    # Every row keyed (the usual trace): an eager select shares the plain columns with ``pk``
    # and gives one chunk per column. The lazy query's streaming engine returns about a
    # dozen chunks, and each column's to_numpy then copies them into one array (~50 MB of fresh
    # memory and ~10 ms on a million packets).
    return pk.select(wanted) if every_row else pk.lazy().filter(keyed).select(wanted).collect()


def default_bin(duration_s: float) -> float:
    """A round throughput bin (1, 2 or 5 × 10^k s) giving about 100 bins over ``duration_s`` (at least 1 ms)."""
    if not math.isfinite(duration_s) or duration_s <= 0:
        return 1.0
    raw = max(duration_s / 100.0, 1e-3)
    exp = math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10**exp >= raw * 0.999:
            return float(f"{m * 10**exp:.3g}")
    return float(10 ** (exp + 1))  # pragma: no cover - the loop always returns
