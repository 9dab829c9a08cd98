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

import numpy as np
import polars as pl

from tracekit import schema
from tracekit.analysis import default_bin
from tracekit.analysis._groups import MISSING, Grouped
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
    cols = rows.select(
        pl.col("flow").cast(pl.Int64), pl.col("dir").cast(pl.Int64), "time", "frame",
        pl.col("size").cast(pl.Int64).fill_null(0),
        pl.col("payload").cast(pl.Int64).fill_null(0).alias("payload"),
        pl.col("seq").fill_null(MISSING),
        # round before floor: a packet stamped exactly on a bin edge (1.1 with origin 0.1)
        # must not fall into the previous bin through binary rounding; an absurd time
        # (a damaged trace's 1e179 s) becomes null and is left out
        ((pl.col("time") - origin) / b).round(9).floor().cast(pl.Int64, strict=False).fill_null(MISSING).alias("k"),
    )
    key = _dense(cols["flow"].to_numpy() * 256 + (cols["dir"].to_numpy() + 128))  # dir is an Int8
    order = _time_order(cols["time"].to_numpy(), cols["frame"].to_numpy())
    gp = Grouped(key[order], order=np.argsort(key[order], kind="stable"))
    order = order[gp.order]  # frame rows in grouped order (group, then time, then frame)
    col = {c: cols[c].to_numpy()[order] for c in ("flow", "dir", "size", "payload", "seq", "k")}
    new = _new_payload(gp, col["seq"], col["payload"])
    keep = col["k"] != MISSING
    if not keep.any():
        raise LimitError(f"unbounded throughput bins of {b:g} s in one flow, over the limit of {MAX_BINS:,}",
                         hint="choose a larger bin, or check the trace's times")
    g = gp.rank[keep]
    k = col["k"][keep]
    ng = int(gp.rank[-1]) + 1
    kmin = np.full(ng, np.iinfo(np.int64).max)
    kmax = np.full(ng, np.iinfo(np.int64).min)
    _seg_extreme(kmin, g, k, np.minimum)
    _seg_extreme(kmax, g, k, np.maximum)
    present = kmax >= kmin  # a group whose every time was absurd has no bins
    span = int((kmax - kmin)[present].max())
    if span > MAX_BINS:
        # a tiny bin over a long trace: refuse rather than allocate
        raise LimitError(f"{span} throughput bins of {b:g} s in one flow, over the limit of {MAX_BINS:,}",
                         hint="choose a larger bin, or check the trace's times")
    length = np.where(present, kmax - kmin + 1, 0)
    base = np.concatenate([[0], np.cumsum(length)[:-1]])
    slot = base[g] + (k - kmin[g])
    total = int(length.sum())
    nbytes = np.bincount(slot, weights=col["size"][keep], minlength=total)
    good = np.bincount(slot, weights=new[keep], minlength=total)
    npk = np.bincount(slot, minlength=total)
    first = np.flatnonzero(gp.first)  # grouped-order row of each group's first packet
    grid_g = np.repeat(np.arange(ng), length)
    grid_k = np.arange(total) - np.repeat(base, length) + np.repeat(kmin * present, length)
    out = pl.DataFrame({
        "flow": col["flow"][first][grid_g], "dir": col["dir"][first][grid_g],
        "time": origin + grid_k.astype(np.float64) * b,
        "bin_s": np.full(total, b),
        "throughput_bps": nbytes * 8.0 / b,
        "goodput_bps": good * 8.0 / b,
        "packets_per_s": npk.astype(np.float64) / b,
    })
    return schema.conform(out, schema.THROUGHPUT)


def _dense(key: np.ndarray) -> np.ndarray:
    """Dense ranks 0..n-1 of ``key`` preserving its order (a group id that sorts like the key)."""
    lo = int(key.min())
    if int(key.max()) - lo < (1 << 22):  # counting, linear time
        seen = np.zeros(int(key.max()) - lo + 1, dtype=np.int64)
        seen[key - lo] = 1
        return (np.cumsum(seen) - 1)[key - lo]
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def _time_order(time: np.ndarray, frame: np.ndarray) -> np.ndarray:
    """Row order by (time, frame), stable; the identity when the rows are already in it (the usual case)."""
    n = len(time)
    if n < 2:
        return np.arange(n)
    dt = np.diff(time)
    if ((dt > 0) | ((dt == 0) & (np.diff(frame.astype(np.int64)) >= 0))).all():
        return np.arange(n)
    return np.lexsort((frame, time))


def _new_payload(gp: Grouped, seq: np.ndarray, payload: np.ndarray) -> np.ndarray:
    """New payload bytes of every row (grouped order): the part above the highest end seen before it.

    A direction's first data segment counts from the direction's lowest data sequence number;
    a row without ``seq`` (UDP) counts its whole payload; pure ACKs count 0 and do not reset
    the running highest end.
    """
    data = (payload > 0) & (seq != MISSING)
    end = np.where(data, seq + payload, MISSING)
    low_of = np.full(int(gp.rank[-1]) + 1 if gp.n else 0, np.iinfo(np.int64).max)
    _seg_extreme(low_of, gp.rank[data], seq[data], np.minimum)
    prev = gp.shift1(gp.cummax(end))
    ref = np.where(prev == MISSING, low_of[gp.rank], prev)
    new = np.where(data, np.clip(end - ref, 0, None), 0)
    return np.where(seq == MISSING, payload, new).astype(np.float64)


def _seg_extreme(acc: np.ndarray, g: np.ndarray, x: np.ndarray, op: np.ufunc) -> None:
    """``acc[g] = op(acc[g], x)`` for sorted group ids ``g`` (one reduceat instead of ufunc.at)."""
    if not len(g):
        return
    starts = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
    acc[g[starts]] = op(acc[g[starts]], op.reduceat(x, starts))
