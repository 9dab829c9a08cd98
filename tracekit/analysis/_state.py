"""Per-packet TCP sequence state shared by the analyses (flight, RTT, retransmissions, stalls).

:func:`prepare` turns the vantage-point packets into one frame with a row per TCP packet
(``_i`` = its row number) and the state Wireshark's ``tcp_analyze_sequence_number`` keeps per
direction, computed with segmented cumulative operations (:mod:`tracekit.analysis._groups`)
instead of a loop. Columns (per direction = per (flow, dir), in packet order):

* ``g``: the direction's group id (``2·flow + dir``); ``_go``: row numbers in grouped order (all
  rows of ``g`` = 0, then ``g`` = 1, …, each in packet order); ``len``: payload bytes; ``end``:
  ``seq + len`` plus one for SYN/FIN (Wireshark's *nextseq*: SYN and FIN occupy one sequence
  number); ``dend``: ``seq + len``.
* ``nxt``: the highest ``end`` sent before this packet (Wireshark's ``fwd->nextseq``;
  zero-window probes do not advance it, as in Wireshark).
* ``hi_dend``: the highest data end sent up to and including this packet; ``new``: a data
  segment that raises it (new data); ``adv``: a segment (data, SYN or FIN) whose ``end``
  exceeds ``nxt`` — the first transmission of its end, so ``end`` strictly increases over the
  ``adv`` rows of a direction.
* ``gap``: the packet starts above ``nxt`` (bytes before it were never seen here);
  ``gap_i``: the row of the direction's latest ``gap`` packet so far.
* ``keepalive``, ``zwp``: Wireshark's keep-alive and zero-window-probe rules.
* ``dup``: Wireshark's duplicate-ACK rule (``tcp.analysis.duplicate_ack``); ``hi_ack``: the
  highest ACK this direction has sent; ``new_ack``: the packet raises it.
* ``r_i``: the row of the *other* direction's latest packet before this one (null before
  it sends); ``r_*``: that packet's ``time``, ``ack`` (Wireshark's ``rev->lastack``),
  ``hi_ack`` (so ``r_hi_ack`` is the highest cumulative ACK received so far), ``win``,
  ``sack_sum`` (bytes in its SACK blocks, which Wireshark subtracts from bytes in flight),
  ``dupnum`` (duplicate ACKs since that direction's ACK last changed) and ``sack_ev`` (a SACK
  block above the ACK was seen since then).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.analysis._groups import MISSING, Grouped, gather, other_index
from tracekit.schema import ACK, FIN, RST, SYN

KEYS = ["flow", "dir"]


def other_side(st: pl.DataFrame, cols: dict[str, pl.Expr], *, ack_only: bool = False) -> pl.DataFrame:
    """Columns of some rows, labelled with the direction they concern (the other one).

    Args:
        st: A prepared frame (any subset of rows with ``_i``, ``flow``, ``dir``).
        cols: Output name -> expression evaluated on those rows.
        ack_only: Only rows carrying the ACK flag.

    Returns:
        A frame ``_i, flow, dir, <cols>`` where ``dir`` is the other direction.
    """
    return pick(st, pl.col("has_ack") if ack_only else pl.lit(True), "_i", "flow",
                (1 - pl.col("dir")).cast(pl.Int8).alias("dir"), *[e.alias(n) for n, e in cols.items()])


def pick(df: pl.DataFrame, cond: pl.Expr, *cols: str | pl.Expr, **named: pl.Expr) -> pl.DataFrame:
    """The rows of ``df`` where ``cond`` holds, with only the given columns.

    Lazy, so only those columns are filtered: an eager ``filter`` copies every column of the
    state frame (its SACK lists too) before a later ``select`` drops them.
    """
    return df.lazy().filter(cond).select(*cols, **named).collect()


def grouped(st: pl.DataFrame) -> Grouped:
    """The rows of a prepared frame in grouped order (reusing the order :func:`prepare` stored)."""
    gid = st["g"].to_numpy()
    return Grouped(gid, st["_go"].to_numpy() if "_go" in st.columns else None)


def _i64(s: pl.Series) -> np.ndarray:
    """A nullable integer column as int64 with :data:`MISSING` for null."""
    return s.cast(pl.Int64).fill_null(MISSING).to_numpy()


def at(st: pl.DataFrame, idx: pl.Series | np.ndarray, col: str) -> pl.Series:
    """``st[col]`` at row numbers ``idx`` (null where ``idx`` is null or -1)."""
    ix = idx.fill_null(-1).to_numpy() if isinstance(idx, pl.Series) else idx
    ix = np.asarray(ix, dtype=np.int64)
    ok = ix >= 0
    vals = st[col].gather(pl.Series(np.where(ok, ix, 0), dtype=pl.UInt32)) if st.height else st[col].clear(len(ix))
    return vals.set(pl.Series(~ok), None) if (~ok).any() else vals  # type: ignore[arg-type]


def prepare(pk: pl.DataFrame) -> pl.DataFrame:
    """Build the per-packet sequence state of every TCP connection (see the module docstring).

    Args:
        pk: Packets at the vantage point, in capture (or time) order.

    Returns:
        One row per TCP packet with a known flow, direction and sequence number.
    """
    flags = pl.col("flags").fill_null(0).cast(pl.Int64)
    st = (
        pk.lazy().filter(
            (pl.col("proto") == "tcp") & pl.col("flow").is_not_null() & pl.col("dir").is_not_null()
            & pl.col("seq").is_not_null()
        )
        .select(
            "flow", "dir", "frame", "time", "seq", "ack", "win", "sack", "ts_val", "ts_ecr", "mss",
            pl.col("payload").fill_null(0).cast(pl.Int64).alias("len"),
            flags.alias("flags"),
        )
        .with_row_index("_i")
        .collect()
    )
    sk = pl.col("sack").list.eval(pl.element().arr.last() - pl.element().arr.first()).list.sum()
    above = pl.col("sack").list.eval(pl.element().arr.last()).list.max()
    st = st.with_columns(
        g=(pl.col("flow").cast(pl.UInt32) * 2 + pl.col("dir").cast(pl.UInt32)),
        syn=(pl.col("flags") & SYN) != 0,
        fin=(pl.col("flags") & FIN) != 0,
        rst=(pl.col("flags") & RST) != 0,
        has_ack=((pl.col("flags") & ACK) != 0) & pl.col("ack").is_not_null(),
        dend=pl.col("seq") + pl.col("len"),
        end=pl.col("seq") + pl.col("len") + ((pl.col("flags") & (SYN | FIN)) != 0).cast(pl.Int64),
        sack_sum=sk.fill_null(0),
        sack_above=(above.fill_null(-1) > pl.col("ack").fill_null(1 << 62)),
    ).with_columns(is_seg=(pl.col("len") > 0) | pl.col("syn") | pl.col("fin"))
    if st.is_empty():
        return st.with_columns(
            [pl.lit(None, pl.Int64).alias(c) for c in ("nxt", "hi_dend", "hi_ack", "gap_i", "r_i", "r_ack", "r_hi_ack",
                                                        "r_win", "r_sack_sum", "r_dupnum", "_go")]
            + [pl.lit(None, pl.Boolean).alias(c) for c in ("gap", "keepalive", "zwp", "dup", "new", "new_ack", "adv",
                                                            "r_sack_ev")]
            + [pl.lit(None, pl.Float64).alias("r_time")]
        ).drop("sack_sum", "sack_above")
    g = Grouped(st["g"].to_numpy())
    r_i = other_index(st["flow"].to_numpy().astype(np.int64), st["dir"].to_numpy().astype(np.int64))
    T = g.take  # noqa: N806 - frame order -> grouped order
    seq, ln, end, dend = (T(st[c].to_numpy()) for c in ("seq", "len", "end", "dend"))
    ack, win = T(_i64(st["ack"])), T(_i64(st["win"]))
    syn, fin, rst = (T(st[c].to_numpy()) for c in ("syn", "fin", "rst"))
    sfr = syn | fin | rst
    # pass 1: Wireshark's nextseq from every packet (pure ACKs have end == seq and do not move it)
    nxt1 = g.shift1(g.cummax(end))
    ka1 = (ln <= 1) & (seq == nxt1 - 1) & ~sfr & (nxt1 != MISSING)
    r_win = gather(g.back(win), r_i)
    # Zero-window probes (1 byte at nextseq while the peer's window is 0) do not advance nextseq
    # in Wireshark, so the next probe at the same seq is a probe again, not a retransmission.
    cand = (ln == 1) & (T(r_win) == 0)
    nxt_nc = g.shift1(g.cummax(np.where(cand, MISSING, end)))
    zwp = cand & (seq == nxt_nc) & (nxt_nc != MISSING)
    eff = np.where(zwp, seq, end)
    hi_end = g.cummax(eff)
    nxt = g.shift1(hi_end)
    hi_dend = g.cummax(np.where(ln > 0, dend, MISSING))
    prev_hd = g.shift1(hi_dend)
    new = (ln > 0) & ((prev_hd == MISSING) | (dend > prev_hd))
    gap = (nxt != MISSING) & (seq > nxt) & ~rst
    keepalive = (ln <= 1) & (seq == nxt - 1) & ~(syn | fin | rst) & (nxt != MISSING)
    # Wireshark's duplicate ACK: no payload, same non-zero window, seq and ACK as this
    # direction's previous packet, not a keep-alive ACK, no SYN/FIN/RST. Simulator traces carry
    # no window: the window conditions then do not apply.
    prev_ack, prev_win = g.shift1(ack), g.shift1(win)
    r_ka = T(gather(g.back(ka1), r_i, False))
    win_ok = (win == MISSING) | ((win != 0) & (win == prev_win))
    dup = ((ln == 0) & win_ok & (seq == nxt) & (nxt != MISSING) & (ack == prev_ack) & (ack != MISSING)
           & ~sfr & ~r_ka)
    changed = ack != prev_ack
    dupnum = g.cumsum(dup.astype(np.int64), starts=changed)
    sack_ev = g.cumsum(T(st["sack_above"].to_numpy()).astype(np.int64), starts=changed) > 0
    has_ack = T(st["has_ack"].to_numpy())
    hi_ack = g.cummax(np.where(has_ack, ack, MISSING))
    prev_hi_ack = g.shift1(hi_ack)
    new_ack = has_ack & (ack != MISSING) & ((prev_hi_ack == MISSING) | (ack > prev_hi_ack))
    adv = T(st["is_seg"].to_numpy()) & ((nxt == MISSING) | (eff > nxt))
    gp_pos = g.ffill_index(gap)
    gap_i = np.where(gp_pos >= 0, g.order[np.maximum(gp_pos, 0)], MISSING)
    B = g.back  # noqa: N806 - grouped order -> frame order
    own = {"nxt": B(nxt), "hi_dend": B(hi_dend), "hi_ack": B(hi_ack), "gap_i": B(gap_i)}
    flags_own = {"gap": B(gap), "keepalive": B(keepalive), "zwp": B(zwp), "dup": B(dup), "new": B(new),
                 "new_ack": B(new_ack), "adv": B(adv)}
    time = st["time"].to_numpy()
    rev = {
        "r_ack": gather(B(ack), r_i), "r_hi_ack": gather(own["hi_ack"], r_i), "r_win": B(T(r_win)),
        "r_sack_sum": gather(st["sack_sum"].to_numpy().astype(np.int64), r_i), "r_dupnum": gather(B(dupnum), r_i),
    }
    raw = pl.DataFrame({
        **own, **flags_own, **rev,
        "_go": g.order.astype(np.int64),
        "r_i": r_i.astype(np.int64),
        "r_time": np.where(r_i >= 0, time[np.maximum(r_i, 0)], np.nan),
        "r_sack_ev": gather(B(sack_ev), r_i, False),
    })
    nulls = [pl.when(pl.col(c) != MISSING).then(pl.col(c)).alias(c) for c in (*own, *rev)]
    return pl.concat([st.drop("sack_sum", "sack_above"), raw], how="horizontal").with_columns(
        *nulls,
        r_i=pl.when(pl.col("r_i") >= 0).then(pl.col("r_i")),
        r_time=pl.col("r_time").fill_nan(None),
    )


def holes(st: pl.DataFrame) -> pl.DataFrame:
    """Byte ranges skipped when a later segment arrived first: ``g, h_lo, h_hi, h_i, h_time`` sorted by (g, h_lo).

    A direction's holes never overlap (they open above the highest byte seen so far).
    """
    return pick(st, pl.col("gap"), "g", h_lo=pl.col("nxt"), h_hi=pl.col("seq"), h_i=pl.col("_i"),
                h_time=pl.col("time")).sort("g", "h_lo")


def find_hole(hl: pl.DataFrame, g: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Index into ``hl`` (from :func:`holes`) of the hole of group ``g`` containing ``value``, else -1."""
    if hl.is_empty() or len(g) == 0:
        return np.full(len(g), -1, dtype=np.int64)
    key = hl["g"].to_numpy().astype(np.int64) * (1 << 44) + hl["h_lo"].to_numpy()
    q = g.astype(np.int64) * (1 << 44) + np.clip(value, -(1 << 43), (1 << 43) - 1)
    j = np.searchsorted(key, q, side="right") - 1
    jj = np.maximum(j, 0)
    ok = (j >= 0) & (hl["g"].to_numpy()[jj] == g) & (value < hl["h_hi"].to_numpy()[jj])
    return np.where(ok, j, -1)


def first_fill(st: pl.DataFrame, hl: pl.DataFrame) -> pl.DataFrame:
    """First row of each (g, seq) among the segments that start inside a hole: ``g, seq, f_i``."""
    segs = pick(st, pl.col("is_seg"), "_i", "g", "seq")
    j = find_hole(hl, segs["g"].to_numpy(), segs["seq"].to_numpy())
    inside = segs.filter(pl.Series(j >= 0))
    return inside.group_by("g", "seq").agg(pl.col("_i").min().alias("f_i"))
