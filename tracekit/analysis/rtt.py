"""Round-trip time samples: the ``rtt`` frame (:data:`tracekit.schema.RTT`).

Two methods, both sorted look-ups per direction (no loop over packets); ``dir`` is the direction whose data
(or timestamps) the sample measures, ``frame``/``time`` are those of the ACK that closed it:

* ``seq`` — as Wireshark's ``tcp.analysis.ack_rtt``: an ACK that raises the cumulative
  ACK to exactly the end of a segment (SYN and FIN count one byte) closes a sample,
  RTT = ACK time − that segment's time. Unlike Wireshark (which then times the *first*
  transmission), Karn's rule applies: no sample when the segment ending there was sent more
  than once before the ACK, or re-sent bytes already sent. ACKs that end inside a segment
  or beyond the segments seen give no sample (as in Wireshark and tcptrace).
* ``ts`` — from TCP timestamps (RFC 7323): an ACK that raises the cumulative ACK and echoes
  TSecr = *v* closes a sample from the first packet of the other direction that carried
  TSval = *v*. 32-bit wrap is undone by unwrapping TSval per direction and placing each
  TSecr in the 2^32 epoch nearest to the latest TSval sent before it. Timestamp clocks tick
  every 1–10 ms and the receiver echoes the *oldest* unacknowledged TSval (delayed ACKs), so
  ``ts`` samples can exceed ``seq`` ones by a tick plus the delayed-ACK wait.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.analysis._groups import MISSING, Segments
from tracekit.analysis._state import Ints, at, pick, prepare, row_index, segments, take
from tracekit.schema import RTT, empty

TWO32 = 1 << 32
HALF = 1 << 31
#: RFC 6298 gains for the smoothed RTT and its variation.
ALPHA, BETA = 1 / 8, 1 / 4
_SCHEMA = {"_i": pl.UInt32(), **RTT}


def _by_direction(sg: Segments, acks: pl.DataFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per direction the ACKs of ``acks`` (a ``g`` column) are about: (its rows in packet order, those ACKs'
    indices)."""
    ag = acks["g"].to_numpy()
    out = []
    for h in np.unique(ag).tolist():
        j = sg.find(int(h) ^ 1)
        if j is not None:
            out.append((sg.rows(j), np.flatnonzero(ag == h)))
    return out


def _seq_samples(st: pl.DataFrame, sg: Segments) -> pl.DataFrame:
    acks = pick(st, pl.col("new_ack"), "_i", "g", "frame", "time", "ack")
    av = acks["ack"].to_numpy()
    s_i = np.full(acks.height, -1, dtype=np.int64)
    adv = (st["adv"] & ~st["keepalive"]).to_numpy()
    dend = st["dend"].to_numpy()
    sf = st.select(pl.arg_where(pl.col("syn") | pl.col("fin")))[:, 0].to_numpy()
    for rows, q in _by_direction(sg, acks):
        # the first transmission of every end (``adv`` rows: strictly increasing ends per direction)
        rows = rows[adv[rows]]
        end = dend[rows].astype(np.int64)
        k = np.searchsorted(rows, sf)
        hit = k < len(rows)
        hit[hit] = rows[k[hit]] == sf[hit]
        end[k[hit]] += 1  # SYN and FIN occupy one sequence number
        k = np.searchsorted(end, av[q], side="left")
        ok = k < len(end)
        ok[ok] = end[k[ok]] == av[q[ok]]
        s_i[q[ok]] = rows[k[ok]]
    ok = s_i >= 0
    s_i = s_i[ok]
    # (a first transmission that partly re-sends bytes sent before is ambiguous too: Karn)
    s_re = st["seq"].to_numpy()[s_i] < take(st, "nxt", s_i)
    m = acks.filter(pl.Series(ok)).with_columns(
        s_i=pl.Series(s_i.astype(np.uint32)), s_time=pl.Series(st["time"].to_numpy()[s_i]), s_re=pl.Series(s_re),
    ).filter((pl.col("s_i") < pl.col("_i")) & ~pl.col("s_re"))
    # Karn: another transmission ending there before the ACK
    re = pick(st, pl.col("is_seg") & ~pl.col("adv") & ~pl.col("keepalive") & ~pl.col("zwp"), "g", "_i",
              end=pl.col("dend") + (pl.col("syn") | pl.col("fin")).cast(pl.Int64)
              ).group_by("g", "end").agg(pl.col("_i").min().alias("r_first"))
    m = m.with_columns(dg=(pl.col("g") ^ 1)).join(re, left_on=["dg", "ack"], right_on=["g", "end"], how="left")
    m = m.filter(pl.col("r_first").is_null() | (pl.col("r_first") > pl.col("_i")))
    return m.select(
        "_i", (pl.col("dg") // 2).cast(pl.UInt32).alias("flow"), (pl.col("dg") % 2).cast(pl.Int8).alias("dir"),
        "frame", "time", (pl.col("time") - pl.col("s_time")).alias("rtt_s"), method=pl.lit("seq"),
    )


def _unwrap(v: np.ndarray) -> np.ndarray:
    """One direction's TSvals (in order) unwrapped: a drop by more than 2^31 is a wrap."""
    if not len(v) or int(v.max()) - int(v.min()) <= HALF:
        return v  # no two of them are 2^31 apart: no step anywhere
    d = v[1:] - v[:-1]
    step = (d < -HALF).astype(np.int64) - (d > HALF)
    out: np.ndarray = v + np.r_[0, np.cumsum(step)] * TWO32  # (np.r_ is typed as returning Any)
    return out


def _ts_samples(st: pl.DataFrame, sg: Segments) -> pl.DataFrame:
    ts = st["ts_val"]
    if ts.null_count() == st.height:
        return pl.DataFrame(schema=_SCHEMA)
    acks = pick(st, pl.col("new_ack") & pl.col("ts_ecr").is_not_null() & (pl.col("ts_ecr") != 0),
                "_i", "g", "frame", "time", "r_i", ecr=pl.col("ts_ecr").cast(pl.Int64))
    r_i = row_index(acks["r_i"])
    ecr_raw = acks["ecr"].to_numpy()
    t_i = np.full(acks.height, -1, dtype=np.int64)
    has_all = ts.is_not_null().to_numpy() if ts.null_count() else None
    v_all = ts.fill_null(0).to_numpy() if ts.null_count() else ts.to_numpy()
    for rows, q in _by_direction(sg, acks):
        v = v_all[rows]
        has = None if has_all is None else has_all[rows]
        if has is not None and has.all():
            has = None
        if has is None and (not len(v) or int(v.max()) - int(v.min()) <= HALF):
            tsv = v  # every packet has a TSval and none wraps: stay 32-bit
        else:
            tsv = np.full(len(rows), MISSING, dtype=np.int64)
            valid = slice(None) if has is None else has
            tsv[valid] = _unwrap(v[valid].astype(np.int64))
        del v
        hi = np.maximum.accumulate(tsv)
        # first packet sending this TSval: above every earlier one (MISSING: no TSval)
        first = np.empty(len(rows), dtype=bool)
        first[:1] = True if has is None else has[:1]
        np.greater(tsv[1:], hi[:-1], out=first[1:])
        if has is not None:
            first &= has
        f_rows, f_v = rows[first], tsv[first].astype(np.int64)  # (f_v strictly increasing)
        del tsv, first
        # place each TSecr in the 2^32 epoch nearest to the latest TSval sent before it (the ACK's r_i)
        r = r_i[q]
        p = np.searchsorted(rows, r)
        ref = np.where(r >= 0, hi[np.minimum(p, len(rows) - 1)], MISSING)
        ecr = ecr_raw[q]
        ecr = np.where(ref != MISSING, ecr + np.floor_divide(ref - ecr + HALF, TWO32) * TWO32, ecr)
        k = np.searchsorted(f_v, ecr, side="left")
        ok = k < len(f_v)
        ok[ok] = f_v[k[ok]] == ecr[ok]
        t_i[q[ok]] = f_rows[k[ok]]
    ok = t_i >= 0
    t_i = t_i[ok]
    m = acks.filter(pl.Series(ok)).with_columns(
        t_sent=pl.Series(st["time"].to_numpy()[t_i]), t_i=pl.Series(t_i), dg=pl.col("g") ^ 1,
    ).filter(pl.col("t_i") < pl.col("_i"))
    return m.select(
        "_i", (pl.col("dg") // 2).cast(pl.UInt32).alias("flow"), (pl.col("dg") % 2).cast(pl.Int8).alias("dir"),
        "frame", "time", (pl.col("time") - pl.col("t_sent")).alias("rtt_s"), method=pl.lit("ts"),
    )


def samples(st: pl.DataFrame) -> pl.DataFrame:
    """RTT samples with the closing ACK's row ``_i`` (the ``rtt`` frame plus ``_i``), sorted by method and ``_i``."""
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    sg = segments(st)
    parts = [p for p in (_seq_samples(st, sg), _ts_samples(st, sg)) if p.height]
    if not parts:
        return pl.DataFrame(schema=_SCHEMA)
    out = pl.concat([p.select(list(_SCHEMA)).cast(_SCHEMA) for p in parts])  # type: ignore[arg-type]
    return out.filter(pl.col("rtt_s") >= 0).sort("method", "_i")


def smoothed(rs: pl.DataFrame) -> pl.DataFrame:
    """RFC 6298 smoothed RTT and RTT variation after each sample, per direction.

    Uses the ``seq`` samples of a direction, or its ``ts`` samples when it has no ``seq`` ones.

    Args:
        rs: Samples from :func:`samples` (with ``_i``).

    Returns:
        ``_i, flow, dir, time, srtt, rttvar`` sorted by ``_i``.
    """
    if rs.is_empty():
        return pl.DataFrame(schema={"_i": pl.UInt32, "flow": pl.UInt32, "dir": pl.Int8, "time": pl.Float64,
                                    "srtt": pl.Float64, "rttvar": pl.Float64})
    gid = rs["flow"].to_numpy().astype(np.int64) * 2 + rs["dir"].to_numpy()
    is_seq = (rs["method"] == "seq").to_numpy()
    use = np.flatnonzero(is_seq | ~np.isin(gid, gid[is_seq]))
    ii = rs["_i"].to_numpy()
    # per direction in sample order: one RFC 6298 recursion each (polars' ewm kernel, as ``over`` runs it)
    use = use[np.lexsort((ii[use], gid[use]))]
    gu = gid[use]
    cut = np.flatnonzero(np.r_[True, gu[1:] != gu[:-1], True])
    r = rs["rtt_s"].to_numpy()[use]
    srtt = np.empty_like(r)
    dev = np.empty_like(r)
    for a, b in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=False):
        srtt[a:b] = pl.Series(r[a:b]).ewm_mean(alpha=ALPHA, adjust=False).to_numpy()
        dev[a] = r[a] / 2
        dev[a + 1:b] = np.abs(r[a + 1:b] - srtt[a:b - 1])
        dev[a:b] = pl.Series(dev[a:b]).ewm_mean(alpha=BETA, adjust=False).to_numpy()
    back = np.argsort(ii[use], kind="stable")
    use = use[back]
    return pl.DataFrame({
        "_i": ii[use], "flow": rs["flow"].to_numpy()[use], "dir": rs["dir"].to_numpy()[use],
        "time": rs["time"].to_numpy()[use], "srtt": srtt[back], "rttvar": dev[back],
    })


def at_rows(st: pl.DataFrame, est: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """The smoothed RTT of each row's direction as of that row (latest sample before it).

    Samples sit on the ACK rows of the other direction; ``r_i`` (that direction's latest
    packet) finds the latest one without a join.

    Args:
        st: Prepared state.
        est: :func:`smoothed` output.
        rows: Rows of ``st`` (with ``_i`` and ``r_i``).

    Returns:
        ``rows`` with ``srtt`` and ``rttvar`` (null before the first sample).
    """
    if "srtt" in st.columns:
        ix = rows["_i"]
        return rows.with_columns(srtt=at(st, ix, "srtt"), rttvar=at(st, ix, "rttvar"))
    if est.is_empty() or rows.is_empty():
        return rows.with_columns(srtt=pl.lit(None, pl.Float64), rttvar=pl.lit(None, pl.Float64))
    j = _latest_sample(st, est, rows["r_i"].fill_null(st.height).to_numpy())  # -1: none: the NaN appended below
    return rows.with_columns(
        srtt=pl.Series(np.append(est["srtt"].to_numpy(), np.nan)[j]).fill_nan(None),
        rttvar=pl.Series(np.append(est["rttvar"].to_numpy(), np.nan)[j]).fill_nan(None),
    )


def srtt_at(st: pl.DataFrame, est: pl.DataFrame, rows: np.ndarray) -> np.ndarray:
    """:func:`at_rows`' ``srtt`` alone, as float64 numpy (NaN before a direction's first sample).

    Args:
        st: Prepared state.
        est: :func:`smoothed` output.
        rows: Row numbers of ``st``.

    Returns:
        One value per entry of ``rows``.
    """
    if "srtt" in st.columns:
        return at(st, rows, "srtt").fill_null(np.nan).to_numpy()
    if est.is_empty() or not len(rows):
        return np.full(len(rows), np.nan)
    j = _latest_sample(st, est, Ints(st, "r_i").at(rows, fill=st.height))
    srtt: np.ndarray = np.append(est["srtt"].to_numpy(), np.nan)[j]  # (indexing by an int array: Any to numpy)
    return srtt


def _latest_sample(st: pl.DataFrame, est: pl.DataFrame, r: np.ndarray) -> np.ndarray:
    """Per entry of ``r`` (rows of ``st``; ``st.height``: none), the row of ``est`` of the latest
    sample at or before it in that row's direction, else -1.

    A direction's samples sit on its ACK rows (unique rows: one method per direction). Few
    queries: with ``est`` keyed by (group of the sample row, row), a sorted look-up each.
    """
    n = st.height
    si = est["_i"].to_numpy().astype(np.int64)
    if len(r) * 8 < n:
        g = st["g"].to_numpy()
        key = (g[si].astype(np.int64) << 32) | si
        ko = np.argsort(key, kind="stable")
        key = key[ko]
        rr = np.minimum(r, n - 1).astype(np.int64)
        gr = g[rr].astype(np.int64)
        j = np.searchsorted(key, (gr << 32) | rr, side="right") - 1
        ok = (r < n) & (j >= 0) & ((key[np.maximum(j, 0)] >> 32) == gr)
        return np.where(ok, ko[np.maximum(j, 0)], -1)
    # many queries: for every row, the latest sample row at or before it in its direction (a
    # running maximum of the sample rows, in grouped order where a direction's rows ascend),
    # then the sample's position in ``est``; the spare slot at the end answers "none"
    sg = segments(st)
    o = sg.order
    it = np.int32 if n < (1 << 31) else np.int64
    pos = np.full(n + 1, -1, dtype=it)
    pos[si] = np.arange(len(si), dtype=it)  # sample row -> its row in ``est``
    mark = np.full(n, -1, dtype=it)
    mark[si] = si
    latest = sg.cummax(mark[o], missing=-1)  # grouped order; -1 until a direction's first sample
    del mark
    at_row = np.empty(n + 1, dtype=it)
    at_row[o] = pos[latest]  # (-1 reads the spare slot: no sample yet)
    at_row[n] = -1
    latest_at: np.ndarray = at_row[r]  # (indexing by an int array: Any to numpy's stubs)
    return latest_at


def with_srtt(st: pl.DataFrame, rs: pl.DataFrame) -> pl.DataFrame:
    """The state for the analyses that need the smoothed RTT per row: ``st`` itself.

    :func:`at_rows` finds each row's latest sample from the row's ``r_i`` on demand (one
    gather per direction with samples), which costs less than two Float64 columns over every
    packet; kept so that callers need not know.

    Args:
        st: Prepared state.
        rs: RTT samples (:func:`samples`), unused.

    Returns:
        ``st``, unchanged.
    """
    return st


def handshake(st: pl.DataFrame) -> pl.DataFrame:
    """Per flow, SYN → the initiator's first ACK after the SYN-ACK (Wireshark's ``tcp.analysis.initial_rtt``).

    Wherever the packets were observed, this spans exactly one full round trip.

    Returns:
        ``flow, hs_rtt`` for flows whose three handshake packets were all seen.
    """
    pure_syn = pl.col("syn") & ~pl.col("has_ack")
    syn = pick(st, (pl.col("dir") == 0) & pure_syn, "flow", "time").group_by("flow").agg(
        pl.col("time").min().alias("_syn"))
    synack = pick(st, (pl.col("dir") == 1) & pl.col("syn") & pl.col("has_ack"), "flow", "_i").group_by("flow").agg(
        pl.col("_i").min().alias("_sa_i"))
    # the initiator's first ACK after the SYN-ACK: among its packets after it (those whose r_i
    # points at the SYN-ACK or later), the earliest ACK without SYN
    sg = segments(st)
    ok = (st["has_ack"] & ~st["syn"]).to_numpy()
    t = st["time"].to_numpy()
    flows, ack3 = [], []
    for f, sa in synack.iter_rows():
        j = sg.find(2 * f)
        if j is None:
            continue
        rows = sg.rows(j)
        after = rows[np.searchsorted(rows, sa, side="right"):]
        after = after[ok[after]]
        if after.size:
            flows.append(f)
            ack3.append(np.fmin.reduce(t[after]))  # (polars' min: NaN only when all are)
    a3 = pl.DataFrame({"flow": pl.Series(flows, dtype=pl.UInt32), "_ack3": pl.Series(ack3, dtype=pl.Float64)})
    return syn.join(a3, on="flow").select("flow", (pl.col("_ack3") - pl.col("_syn")).alias("hs_rtt")).filter(
        pl.col("hs_rtt") >= 0)


def rtt(pk: pl.DataFrame, *, state: pl.DataFrame | None = None) -> pl.DataFrame:
    """RTT samples of every connection direction by both methods (see the module docstring).

    Args:
        pk: Packets at the vantage point.
        state: The prepared frame of ``pk`` (:func:`tracekit.analysis._state.prepare`), if at hand.

    Returns:
        The ``rtt`` frame (:data:`tracekit.schema.RTT`).
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(RTT)
    return samples(st).drop("_i")
