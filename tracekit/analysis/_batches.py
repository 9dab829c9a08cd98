"""A large capture's per-packet analysis in batches of whole connections, on every core.

Every per-packet rule is per connection (RFC 9293 keeps TCP state per connection; so do
Wireshark's ``tcp_analyze_sequence_number`` and the core's passes), so a batch of whole
connections yields exactly the whole trace's rows for them. :func:`batches` cuts a capture
into such batches (each batch's rows placed by one counting sort in the core, then taken
out of the packets), :func:`in_order` runs them on a few threads (the core's passes and
polars' queries release the GIL), and :func:`merged` puts their frames back into the whole
trace's order. Only :data:`BATCH_ROWS` packets' state per thread is alive at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from tracekit import _core
from tracekit.trace import Trace

T = TypeVar("T")
R = TypeVar("R")
P = TypeVar("P", bound=NamedTuple)

#: Packet columns no per-connection analysis reads (simulator packet ids, capture lengths, tunnels):
#: left out of the batches' copies.
NOT_PER_CONNECTION = ["pkt_id", "pkt_seq", "ptype", "caplen", "tunnel", "outer_src", "outer_dst"]

#: Packets per batch of connections (:func:`batches`); smaller traces are analysed in one piece.
BATCH_ROWS = 1 << 18


def batches(pk: pl.DataFrame, trace: Trace) -> Iterator[pl.DataFrame]:
    """``pk`` as batches of whole connections in ascending flow order, each about :data:`BATCH_ROWS` packets.

    Only a plain capture is split: every row a captured TCP segment of a connection (with a
    direction and a sequence number), ``frame`` strictly increasing (record numbers: the
    batches' rows go back into packet order by it), no tool or kernel series beside it.
    Anything else, or a small trace, is one batch: ``pk`` itself. Each batch is copied out
    only when asked for, so a consumer that holds few at a time holds little.
    """
    if pk.height < 2 * BATCH_ROWS or not trace.samples.is_empty() or trace.meta.get("kernel"):
        yield pk
        return
    ok = pk.select(
        pl.col("frame").is_not_null().all().alias("numbered"), (pl.col("frame") > pl.col("frame").shift(1)).all(),
        pl.col("flow").is_not_null().all(),
        ((pl.col("event") == "capture") & (pl.col("proto") == "tcp") & pl.col("dir").is_not_null()
         & pl.col("seq").is_not_null()).all().alias("tcp"),
    ).row(0)
    rows = _batch_rows(pk["flow"]) if all(ok) else []
    if len(rows) < 2:
        yield pk
        return
    cols = pk.select(pl.exclude(NOT_PER_CONNECTION))  # no copy: the take below copies only these
    rows.reverse()  # popped from the end: each batch's row numbers are let go once it is cut
    while rows:
        yield cols[pl.Series(rows.pop())]  # a take of these rows from every column (faster than a gather expression)


def _batch_rows(flow: pl.Series) -> list[npt.NDArray[np.integer[Any]]]:
    """Each batch's row numbers in row order, batches of whole flows in ascending flow order.

    A batch ends where the running count of packets by flow passes a multiple of
    :data:`BATCH_ROWS`. One counting sort in the core (``_core.group_rows``) places every row
    once, where a filter per batch would scan every packet for each batch (batches × packets).
    """
    ids = flow.to_numpy()  # no copy (no nulls: checked)
    top = int(ids.max())
    if top < 2 * len(ids) + 1024:  # readers number connections 0, 1, 2, ...: a dense count
        counts = np.bincount(ids)
        code = ids
    else:  # sparse ids (a frame built by hand): their ranks
        uniq, inv = np.unique(ids, return_inverse=True)
        counts, code = np.bincount(inv), inv
        del uniq
    present = np.flatnonzero(counts)
    if len(present) < 2:
        return []
    ends = np.cumsum(counts[present]) // BATCH_ROWS
    batch = np.zeros(len(counts), np.int32)  # flow -> its batch number
    batch[present[1:]] = np.cumsum(ends[1:] != ends[:-1])
    nb = int(batch[present[-1]]) + 1
    idx, per = _core.group_rows(np.ones(len(ids), bool), batch[code], nb)
    del code
    bounds = np.cumsum(per).tolist()
    dtype = np.uint32 if len(ids) < 1 << 32 else np.int64  # polars' row numbers are 32-bit (half the memory)
    return [idx[lo:hi].astype(dtype) for lo, hi in zip([0, *bounds[:-1]], bounds, strict=True)]


def threads() -> int:
    """How many batches run at once: polars' own thread count (``POLARS_MAX_THREADS`` lowers both)."""
    return max(1, pl.thread_pool_size())


def in_order(fn: Callable[[T], R], items: Iterable[T], workers: int | None = None) -> list[R]:
    """``fn`` of every item, in the items' order, on ``workers`` threads (default :func:`threads`).

    At most ``workers`` items are in flight: the next item is drawn from ``items`` (a batch is
    copied out then) only when a thread is about to be free, so memory stays that of
    ``workers`` batches. Threads pay off because the work is in the core's passes and polars'
    queries, which both release the GIL. An exception of ``fn`` is raised here, after the
    items in flight have finished.
    """
    n = threads() if workers is None else workers
    if n <= 1:
        out0: list[R] = []
        for x in items:
            out0.append(fn(x))
            del x  # let go of this item before the next is drawn (a batch is copied out then)
        return out0
    out: list[R] = []
    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(n, thread_name_prefix="tracekit-batch") as pool:
        for x in items:
            pending.append(pool.submit(fn, x))
            del x  # the thread holds the batch; it is freed when fn is done with it
            if len(pending) >= n:
                out.append(pending.popleft().result())
        out.extend(f.result() for f in pending)
    return out


def merged(parts: list[P]) -> P:
    """The batches' frames as the whole trace's (``parts`` is emptied as they are used).

    Per-packet rows go back into packet order: ascending ``frame`` (see :func:`batches`),
    RTT samples by method first as :func:`tracekit.analysis.rtt.samples` orders them; rows
    per direction (flows, cwnd, stalls, reductions) are already in flow order, the batches'.
    """
    if len(parts) == 1:
        return parts.pop()
    first = parts[0]
    by_name = {name: [getattr(p, name) for p in parts] for name in first._fields}
    parts.clear()
    out: dict[str, Any] = {name: None if parts_of[0] is None else stacked(parts_of, ORDER.get(name))
                           for name, parts_of in by_name.items()}
    return first._replace(**out)


#: How the per-packet frames are ordered (:func:`merged`): packet order, RTT samples by method first.
ORDER: dict[str, list[pl.Expr | str]] = {
    "flight": ["frame"], "retrans": ["frame"], "rtt": [pl.col("method") != "seq", "frame"]}


def stacked(frames: list[pl.DataFrame], by: list[pl.Expr | str] | None) -> pl.DataFrame:
    """The frames one under the other (rows sorted stably by ``by`` when given), in one chunk.

    Built a column at a time, each part's column let go as the whole's is made, so only one
    column is ever held twice (a sort or concat of the frames would hold all of them twice).
    Frames already in order one after the other are not sorted again. One chunk because the
    summary's per-direction queries on the ``cwnd`` of four batches left in four chunks took
    1.6 s against 1.1 s (big.pcap), far more than the copy. ``frames`` is emptied.
    """
    if by is not None:
        # each part is already in this order (its own rows in packet order), so numpy's stable
        # sort (a merge of the runs) is the cheap way to interleave them
        keys = [(pl.col(k) if isinstance(k, str) else k).alias(f"_k{i}") for i, k in enumerate(by)]
        kf = pl.concat([f.select(keys) for f in frames])
        arrays = [kf.get_column(f"_k{i}").to_numpy() for i in range(len(by))]
        del kf
        idx = None if _ascending(arrays) else pl.Series(np.lexsort(arrays[::-1]))
        del arrays
    else:
        idx = None
    return _columnwise(frames, idx)


def _ascending(keys: list[npt.NDArray[Any]]) -> bool:
    """Whether the rows are already in ascending order of the keys (the first key first), ties allowed.

    Batches whose connections do not overlap in time come back in order: no sort is needed.
    A null (NaN or None) compares as out of order, so such keys are sorted as before.
    """
    n = len(keys[0])
    if n < 2:
        return True
    ok = np.ones(n - 1, bool)  # rows i, i+1 in order by the keys from the current one on
    for k in reversed(keys):
        if k.dtype == object:
            return False
        a, b = k[:-1], k[1:]
        ok = (a < b) | ((a == b) & ok)
    return bool(ok.all())


def _columnwise(frames: list[pl.DataFrame], idx: pl.Series | None) -> pl.DataFrame:
    """The frames' rows one under the other, or in the order ``idx`` (their row numbers so), in one chunk."""
    # the parts as lists of columns: a part's column is let go as soon as the whole's is made
    # (DataFrame.drop would run a query per column and part)
    parts: list[list[pl.Series | None]] = [list(f.get_columns()) for f in frames]
    frames.clear()
    cols = []
    for j in range(len(parts[0])):
        col = pl.concat([c for p in parts if (c := p[j]) is not None], rechunk=False)
        for p in parts:
            p[j] = None
        cols.append(col.rechunk() if idx is None else col.gather(idx))
        del col
    return pl.DataFrame(cols)
