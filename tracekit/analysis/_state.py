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
  later passes take them unchanged and decode them with seq.rs's constants; no frame carries them.
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
direction), else Int64.

The core keeps the packet columns it read and the state beside the frame while it lives
(:func:`core_state`, a ``tracekit._core.TcpState``): the RTT, retransmission and stall passes
(``tcp_rtt``, ``tcp_retrans``, ``tcp_stalls``) take it instead of the frame's columns, so the
packets cross into the core once and no pass converts the frame again.
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

    The per-direction rules run in the compiled core (``tracekit._core.TcpState``, Rust
    ``src/state/seq.rs``): one pass over the packets in order, a state per direction. The core
    keeps the packet columns it read with the state (:func:`core_state`), for the later passes.

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
    base = src.drop("payload", "flags").with_row_index("_i")
    if base.is_empty():
        return _empty(base)
    narrow = _narrow(src, src["payload"])[0] is np.int32
    h = _new_core_state(src.rename({"payload": "len", "flags": "_f"}))
    g, ln, flags, bits, ints = h.columns(narrow)
    # the integer state columns: int32 when narrow, the few rows without a value set null
    state = pl.DataFrame([
        pl.Series("len", ln), pl.Series("g", g),
        *[pl.Series(name, x).scatter(none, None) if len(none) else pl.Series(name, x)
          for name, (x, none) in zip(("dend", "nxt", "hi_dend", "r_i", "r_hi_ack", "r_win"), ints, strict=True)],
        pl.Series("_f", flags), pl.Series("_b", bits)])
    del g, ln, flags, bits, ints
    f, b = pl.col("_f"), pl.col("_b")
    st = pl.concat([base, state], how="horizontal").with_columns(
        syn=(f & SYN) != 0, has_ack=((f & ACK) != 0) & pl.col("ack").is_not_null(),
        **{name: (b & bit) != 0 for name, bit in _BOOLS.items()},
    )
    _keep_core_state(st, h)
    return st


#: The core's state of each prepared frame alive (by ``id``), dropped with its frame.
_CORE: dict[int, _core.TcpState] = {}


def _keep_core_state(st: pl.DataFrame, h: _core.TcpState) -> None:
    _CORE[id(st)] = h
    weakref.finalize(st, _CORE.pop, id(st), None)


def _new_core_state(src: pl.DataFrame) -> _core.TcpState:
    """The core's state of packet columns ``flow, dir, frame, time, seq, len, _f, ack, win, ts_val, ts_ecr``.

    One ``select`` (polars converts the columns in parallel); integers the core reads as int64
    carry :data:`MISSING` for null, ``ts_ecr`` 0 (RFC 7323 §3.2: a zero TSecr echoes nothing).
    """
    i64 = pl.Int64
    cols = src.select(
        pl.col("flow").cast(pl.UInt32), pl.col("dir").cast(pl.Int8), pl.col("frame").cast(pl.UInt64),
        pl.col("time").cast(pl.Float64), pl.col("seq").cast(i64), pl.col("len").fill_null(0).cast(pl.UInt32),
        pl.col("_f").fill_null(0).cast(pl.UInt8), *[pl.col(c).cast(i64).fill_null(MISSING) for c in ("ack", "win")],
        pl.col("ts_val").cast(i64).fill_null(MISSING), pl.col("ts_ecr").cast(pl.UInt32).fill_null(0),
    )
    return _core.TcpState(*[c.to_numpy() for c in cols.get_columns()])


def core_state(st: pl.DataFrame) -> _core.TcpState:
    """The core's state of a prepared frame: the packet columns and sequence state its passes read.

    Kept from :func:`prepare` while the frame lives, so the RTT, retransmission and stall passes
    (``src/state/{rtt,retrans,stalls}.rs``) read the packets without converting the frame's
    columns again; for a frame not made by :func:`prepare` here, made from its packet columns
    (the same state: the rules read only those).
    """
    h = _CORE.get(id(st))
    if h is None:
        h = _new_core_state(st)
        _keep_core_state(st, h)
    return h
