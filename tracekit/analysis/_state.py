"""Per-packet TCP sequence state shared by the analyses (flight, RTT, retransmissions, stalls).

:func:`prepare` turns the vantage-point packets into one frame with a row per TCP packet
(``_i`` = its row number) and the state Wireshark's ``tcp_analyze_sequence_number`` keeps per
direction, computed by the compiled core (``src/state/seq.rs``: one streaming pass in packet
order, a state machine per direction, each rule citing ``packet-tcp.c``). Columns (per
direction = per (flow, dir), in packet order):

* the packet columns ``flow, dir, frame, time, seq, ack, win, sack, ts_val, ts_ecr`` (shared
  with the packets frame, not copied, when every packet is a TCP one);
* ``g``: the direction's group id (``2·flow + dir``, UInt32); ``len``: payload bytes; ``dend``:
  ``seq + len``; ``syn``, ``has_ack`` (ACK flag and an ACK number).
  A segment's *end* (Wireshark's *nextseq*) is ``dend`` plus one for SYN/FIN: they occupy one
  sequence number.
* ``nxt``: the highest end sent before this packet (Wireshark's ``fwd->nextseq``;
  zero-window probes do not advance it, as in Wireshark).
* ``hi_dend``: the highest data end sent up to and including this packet.
* ``_f``: the packet's TCP flags byte (UInt8, 0 for none); ``_b``: its state bits, one byte
  in the one layout of ``src/state/seq.rs`` (``GAP``, ``KEEPALIVE``, ``ZWP``, ``DUP``,
  ``NEW``, ``NEW_ACK``, ``ADV``, ``STRAY``, documented there). Both are internal: the core's
  later passes (``tcp_rtt``, ``tcp_flight_sack``, ``tcp_retrans``) take them unchanged and
  decode them with seq.rs's constants; no frame carries them.
* the bits Python reads, as boolean columns: ``gap``, the packet starts above ``nxt`` (bytes
  before it were never seen here); ``keepalive``, ``zwp``: Wireshark's keep-alive and
  zero-window-probe rules; ``dup``: Wireshark's duplicate-ACK rule
  (``tcp.analysis.duplicate_ack``); ``new_ack``: the packet raises the highest ACK its
  direction has sent.
* ``r_i``: the row of the *other* direction's latest packet before this one (null before
  it sends; UInt32); ``r_hi_ack``: the highest ACK that direction had sent by then (the
  highest cumulative ACK received so far); ``r_win``: that packet's window.

``dend``, ``nxt``, ``hi_dend``, ``r_hi_ack`` and ``r_win`` are Int32 when every sequence, ACK
and window value of the trace lies within ±2^30 (relative numbers: transfers below 1 GiB per
direction), else Int64; :class:`Ints` reads them as int64.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis._groups import MISSING
from tracekit.schema import ACK, SYN

_T = TypeVar("_T")

KEYS = ["flow", "dir"]
#: Packet columns the state frame carries over unchanged.
_PACKET_COLS = ["flow", "dir", "frame", "time", "seq", "ack", "win", "sack", "ts_val", "ts_ecr"]
#: Boolean state columns: name -> its bit in ``_b`` (``src/state/seq.rs``: GAP, KEEPALIVE, ZWP, DUP, NEW_ACK).
_BOOLS = {"gap": 1 << 0, "keepalive": 1 << 1, "zwp": 1 << 2, "dup": 1 << 3, "new_ack": 1 << 5}


def pick(df: pl.DataFrame, cond: pl.Expr, *cols: str | pl.Expr, **named: pl.Expr) -> pl.DataFrame:
    """The rows of ``df`` where ``cond`` holds, with only the given columns.

    Lazy, so only those columns are filtered: an eager ``filter`` copies every column of the
    state frame (its SACK lists too) before a later ``select`` drops them.
    """
    return df.lazy().filter(cond).select(*cols, **named).collect()


class Ints:
    """An integer column of a prepared frame, read at rows as int64 numpy with a stand-in for null.

    Nulls are filled once with a value of the column's own width (the narrow state columns
    never hold the 32-bit extremes: see :func:`prepare`; row numbers stay below 2^32 - 1), so
    reading many row sets costs one gather each.
    """

    def __init__(self, st: pl.DataFrame | pl.Series, name: str | None = None) -> None:
        s = st if isinstance(st, pl.Series) else st[name]  # type: ignore[index]  # a frame comes with its column name
        self.nulls = bool(s.null_count())
        self.narrow = s.dtype == pl.Int32 or (s.dtype == pl.UInt32 and s.name == "r_i")
        self.stand_in = (-(1 << 31) if s.dtype == pl.Int32 else (1 << 32) - 1) if self.narrow else MISSING
        self.x = (s.fill_null(self.stand_in) if self.nulls else s).to_numpy()

    def at(self, rows: np.ndarray | slice, fill: int = MISSING) -> np.ndarray:
        """The values at ``rows`` (a new int64 array), ``fill`` for null."""
        x = self.x[rows].astype(np.int64)
        if self.nulls and self.stand_in != fill:
            x[x == self.stand_in] = fill
        return x


def at(st: pl.DataFrame, idx: pl.Series | np.ndarray, col: str) -> pl.Series:
    """``st[col]`` at row numbers ``idx`` (null where ``idx`` is null or -1)."""
    ix = idx.fill_null(-1).to_numpy() if isinstance(idx, pl.Series) else idx
    ix = np.asarray(ix, dtype=np.int64)
    ok = ix >= 0
    vals = st[col].gather(pl.Series(np.where(ok, ix, 0), dtype=pl.UInt32)) if st.height else st[col].clear(len(ix))
    return vals.set(pl.Series(~ok), None) if (~ok).any() else vals


def sack_blocks(sack: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The SACK blocks of a ``sack`` column: row, left edge, right edge and order within the row.

    Only rows with blocks are touched (the list column is never evaluated per row).

    Returns:
        ``rows`` (ascending, one entry per block), ``left`` and ``right`` (int64,
        :data:`MISSING` where null) and ``k`` (0 for a row's first block, 1 for its second, …).
    """
    lens = sack.list.len()
    rows = (lens > 0).arg_true()
    if not len(rows):
        z = np.zeros(0, np.int64)
        return z, z, z, z
    ex = sack.gather(rows).explode()
    left = ex.arr.first().fill_null(MISSING).to_numpy()
    right = ex.arr.last().fill_null(MISSING).to_numpy()
    cnt = lens.gather(rows).to_numpy().astype(np.int64)
    owner = np.repeat(rows.to_numpy().astype(np.int64), cnt)
    k = np.arange(len(owner)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return owner, left, right, k


#: Values made from the last state frame (its grouped order, its SACK blocks), kept while it
#: lives: (a weak reference to the frame, the values by name).
_LAST: list[tuple[weakref.ref[pl.DataFrame], dict[str, Any]]] = []


def _memo(st: pl.DataFrame, key: str, make: Callable[[], _T]) -> _T:
    """``make()``, computed once per state frame and name while the frame lives.

    One frame at a time (the analysis in progress): a new frame replaces the kept values, and
    they go with the frame. Replacing the entry drops its weak reference, whose callback then
    never runs, so a dying old frame cannot clear a newer frame's values.
    """
    last = _LAST[-1] if _LAST else None
    if last is None or last[0]() is not st:
        last = (weakref.ref(st, lambda _r: _LAST.clear()), {})
        _LAST[:] = [last]
    values = last[1]
    if key not in values:
        values[key] = make()
    kept: _T = values[key]
    return kept


def sack_blocks_of(st: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sack_blocks` of ``st["sack"]``, computed once per state frame.

    Retransmissions (twice) and flight read the blocks of the same frame; they are kept (see
    :func:`_memo`) instead of exploding the list column three times.
    """
    return _memo(st, "sack_blocks", lambda: sack_blocks(st["sack"]))


def _empty(st: pl.DataFrame) -> pl.DataFrame:
    """The state of no packets (same columns and dtypes as :func:`prepare` gives a small trace)."""
    i32, u32 = pl.Int32, pl.UInt32
    types = {"len": pl.Int64, "g": u32, "dend": i32, "nxt": i32, "hi_dend": i32, "r_i": u32, "r_hi_ack": i32,
             "r_win": i32, "_f": pl.UInt8, "_b": pl.UInt8,
             **dict.fromkeys(("syn", "has_ack", *_BOOLS), pl.Boolean)}
    return st.select("_i", *_PACKET_COLS).with_columns(pl.lit(None, t).alias(c) for c, t in types.items())


def _narrow(src: pl.DataFrame, ln: pl.Series) -> tuple[type, int]:
    """The integer dtype for sequence state and its "missing" stand-in: int32 when every value fits.

    Sequence numbers are relative, so within a few hundred MB per direction they fit in 32
    bits; half-width arrays halve the memory traffic of the scans. Kept to +-2^30 so that sums
    of two values (``seq + len``, ``hi_dend - ack``) cannot overflow either.
    """
    lim = 1 << 30
    lo = min(src["seq"].min() or 0, src["ack"].min() or 0, src["win"].min() or 0)
    hi = max((src["seq"].max() or 0) + (ln.max() or 0) + 1, src["ack"].max() or 0,  # type: ignore[operator]
             src["win"].max() or 0)
    if -lim < lo and hi < lim:  # type: ignore[operator]
        return np.int32, -(1 << 31)
    return np.int64, MISSING


def prepare(pk: pl.DataFrame) -> pl.DataFrame:
    """Build the per-packet sequence state of every TCP connection (see the module docstring).

    The per-direction rules run in the compiled core (``tracekit._core.tcp_state``, Rust
    ``src/state/seq.rs``): one pass over the packets in order, a state per direction.

    Args:
        pk: Packets at the vantage point, in capture (or time) order.

    Returns:
        One row per TCP packet with a known flow, direction and sequence number.
    """
    keep = (pl.col("proto") == "tcp") & pl.col("flow").is_not_null() & pl.col("dir").is_not_null() \
        & pl.col("seq").is_not_null()
    cols = [*_PACKET_COLS, "payload", "flags"]
    mask = pk.select(keep.alias("k"))["k"]
    # every row kept (the usual capture): select only, so the columns are shared, not copied
    src = pk.select(cols) if mask.all() else pk.lazy().filter(keep).select(cols).collect()
    ln_s = src["payload"].fill_null(0).cast(pl.Int64).alias("len")
    base = src.drop("payload", "flags").with_row_index("_i")
    if base.is_empty():
        return _empty(base)
    it: type[pl.DataType] = pl.Int32 if _narrow(src, ln_s)[0] is np.int32 else pl.Int64
    flags = src["flags"].fill_null(0).cast(pl.UInt8)
    flow = src["flow"].cast(pl.UInt32).to_numpy()
    i64 = pl.Int64
    nxt, hi_dend, bits, r_i, r_hi_ack, r_win = _core.tcp_state(
        flow, src["dir"].cast(pl.Int8).to_numpy(), src["seq"].cast(i64).to_numpy(),
        src["payload"].fill_null(0).cast(pl.UInt32).to_numpy(), flags.to_numpy(),
        src["ack"].cast(i64).fill_null(MISSING).to_numpy(), src["win"].cast(i64).fill_null(MISSING).to_numpy())
    g = flow * np.uint32(2)
    np.add(g, src["dir"].to_numpy(), out=g, casting="unsafe")
    # the core's int64 columns (MISSING: none) become nullable columns of the chosen width in one
    # step each, and each int64 array goes as soon as it is read: no narrowed numpy copy between
    raw = {"len": ln_s, "g": pl.Series(g), "dend": (src["seq"].cast(i64) + ln_s).cast(it)}
    raw["nxt"], raw["hi_dend"] = _narrowed(nxt, it), _narrowed(hi_dend, it)
    del nxt, hi_dend
    # r_i: -1 where the other direction has not sent yet (rows < 2^32: only -1 becomes null)
    raw["r_i"] = pl.Series(r_i).cast(pl.UInt32, strict=False)
    del r_i
    raw["r_hi_ack"], raw["r_win"] = _narrowed(r_hi_ack, it), _narrowed(r_win, it)
    del r_hi_ack, r_win
    raw["_f"], raw["_b"] = flags, pl.Series(bits)
    del bits, flags
    f, b = pl.col("_f"), pl.col("_b")
    state = pl.DataFrame([v.alias(k) for k, v in raw.items()])
    del raw
    return pl.concat([base, state], how="horizontal").with_columns(
        syn=(f & SYN) != 0, has_ack=((f & ACK) != 0) & pl.col("ack").is_not_null(),
        **{name: (b & bit) != 0 for name, bit in _BOOLS.items()},
    )


def _narrowed(x: np.ndarray, it: type[pl.DataType]) -> pl.Series:
    """An int64 state column of the core (:data:`MISSING` for none) as a nullable column of dtype ``it``.

    Polars reads the core's array without copying; to Int32 a non-strict cast is the whole
    step (only :data:`MISSING` lies outside the range :func:`_narrow` checked, and it becomes null).
    """
    s = pl.Series(x)
    if it == pl.Int32:
        return s.cast(pl.Int32, strict=False)
    return pl.select(pl.when(pl.lit(s) != MISSING).then(pl.lit(s))).to_series()
