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
import numpy.typing as npt
import polars as pl

from tracekit import schema
from tracekit.analysis._groups import MISSING, Segments
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
    flow, dirs = cols["flow"].to_numpy(), cols["dir"].to_numpy()
    sg, rows = _groups(cols, flow, dirs)
    lengths = sg.ends - sg.starts
    seq = cols["seq"].to_numpy()[rows]
    pay = cols["payload"].to_numpy()[rows].astype(np.int64)
    new = _new_payload(sg, seq, pay, lengths)
    del seq, pay
    k = cols["k"].to_numpy()[rows]
    kmin, length = _bin_ranges(sg, k, b)
    base = np.concatenate([[0], np.cumsum(length)[:-1]])
    # each row's slot in the output grid: its group's first bin + its bin's offset
    slot = k - np.repeat(kmin - base, lengths)
    keep = k != MISSING
    del k
    if not keep.all():
        slot, new = slot[keep], new[keep]
    total = int(length.sum())
    size = cols["size"].to_numpy()[rows]
    nbytes = np.bincount(slot, weights=size if keep.all() else size[keep], minlength=total)
    del size
    good = np.bincount(slot, weights=new, minlength=total)
    npk = np.bincount(slot, minlength=total)
    first = rows[sg.starts]  # frame row of each group's first packet
    grid_g = np.repeat(np.arange(len(lengths)), length)
    grid_k = np.arange(total) - np.repeat(base, length) + np.repeat(np.where(length > 0, kmin, 0), length)
    out = pl.DataFrame({
        "flow": flow[first][grid_g], "dir": dirs[first][grid_g],
        "time": origin + grid_k.astype(np.float64) * b,
        "bin_s": np.full(total, b),
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
    wanted = [
        "flow", "dir", "time", "frame",
        pl.col("size").fill_null(0), pl.col("payload").fill_null(0), pl.col("seq").fill_null(MISSING),
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


def _groups(cols: pl.DataFrame, flow: np.ndarray, dirs: np.ndarray) -> tuple[Segments, np.ndarray]:
    """The rows grouped by direction, each group in capture order (time, then frame).

    Returns:
        (the groups, the frame row of every grouped row).
    """
    key = flow.astype(np.int64)
    key *= 256
    key += dirs
    key += 128  # dir is an Int8
    key = _dense(key)
    order = _time_order(cols["time"].to_numpy(), cols["frame"].to_numpy())
    if order is not None:
        key = key[order]
    sg = Segments(key)
    del key
    return sg, (sg.order if order is None else order[sg.order])


def _bin_ranges(sg: Segments, k: np.ndarray, b: float) -> tuple[np.ndarray, np.ndarray]:
    """Each group's first bin and number of bins (0: every time was absurd), within :data:`MAX_BINS`.

    Raises:
        LimitError: if a group spans more than :data:`MAX_BINS` bins, or none has a bin.
    """
    kmin = np.minimum.reduceat(np.where(k == MISSING, np.iinfo(np.int64).max, k), sg.starts)
    kmax = np.maximum.reduceat(k, sg.starts)  # MISSING (absurd times) is below every bin
    present = kmax != MISSING  # a group whose every time was absurd has no bins
    if not present.any():
        raise LimitError(f"unbounded throughput bins of {b:g} s in one flow, over the limit of {MAX_BINS:,}",
                         hint="choose a larger bin, or check the trace's times")
    nbins = int((kmax - kmin)[present].max())
    if nbins > MAX_BINS:
        # a tiny bin over a long trace: refuse rather than allocate
        raise LimitError(f"{nbins} throughput bins of {b:g} s in one flow, over the limit of {MAX_BINS:,}",
                         hint="choose a larger bin, or check the trace's times")
    return kmin, np.where(present, kmax - kmin + 1, 0)


def _dense(key: np.ndarray) -> np.ndarray:
    """Dense ranks 0..n-1 of ``key`` preserving its order (a group id that sorts like the key)."""
    lo = int(key.min())
    if int(key.max()) - lo < (1 << 22):  # counting, linear time
        seen = np.zeros(int(key.max()) - lo + 1, dtype=np.int64)
        at: npt.NDArray[np.int64] = key - lo
        seen[at] = 1
        return (np.cumsum(seen) - 1)[at]
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def _time_order(time: np.ndarray, frame: np.ndarray) -> np.ndarray | None:
    """Row order by (time, frame), stable; None when the rows are already in it (the usual case)."""
    n = len(time)
    if n < 2:
        return None
    dt = np.diff(time)
    if (dt > 0).all() or ((dt > 0) | ((dt == 0) & (np.diff(frame.astype(np.int64)) >= 0))).all():
        return None
    return np.lexsort((frame, time))


def _new_payload(sg: Segments, seq: np.ndarray, payload: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """New payload bytes of every row (grouped order): the part above the highest end seen before it.

    A direction's first data segment counts from the direction's lowest data sequence number;
    a row without ``seq`` (UDP) counts its whole payload; pure ACKs count 0 and do not reset
    the running highest end.
    """
    # in place where possible: each full-length temporary is ~9 MB of fresh pages per 1M rows
    nodata = payload <= 0
    nodata |= seq == MISSING
    end: npt.NDArray[np.int64] = seq + payload
    np.putmask(end, nodata, MISSING)
    low = np.minimum.reduceat(np.where(nodata, np.iinfo(np.int64).max, seq), sg.starts)
    prev = sg.cummax(end, shift=True)  # MISSING (below every end) where nothing was sent before
    # a direction's first data row (the only data row with nothing before it) counts from its lowest seq
    first = np.flatnonzero((prev == MISSING) & ~nodata)
    prev[first] = low[np.searchsorted(sg.starts, first, side="right") - 1]
    np.subtract(end, prev, out=end)  # no overflow: both are MISSING or real ends (< 2^62) here
    np.maximum(end, 0, out=end)
    np.putmask(end, nodata, 0)
    np.copyto(end, payload, where=seq == MISSING)
    return end.astype(np.float64)


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
