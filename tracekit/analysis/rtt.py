"""Round-trip time samples: the ``rtt`` frame (:data:`tracekit.schema.RTT`).

Two methods, both joins (no loop over packets); ``dir`` is the direction whose data
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

from tracekit.analysis._groups import MISSING, Grouped
from tracekit.analysis._state import KEYS, at, grouped, pick, prepare
from tracekit.schema import RTT, empty

TWO32 = 1 << 32
HALF = 1 << 31
_K = 1 << 44
#: RFC 6298 gains for the smoothed RTT and its variation.
ALPHA, BETA = 1 / 8, 1 / 4
_SCHEMA = {"_i": pl.UInt32(), **RTT}


def _lookup(keys_g: np.ndarray, keys_v: np.ndarray, q_g: np.ndarray, q_v: np.ndarray) -> np.ndarray:
    """Position of (q_g, q_v) among rows sorted by (keys_g, keys_v) with unique keys, else -1."""
    if len(keys_g) == 0 or len(q_g) == 0:
        return np.full(len(q_g), -1, dtype=np.int64)
    key = keys_g.astype(np.int64) * _K + keys_v
    q = q_g.astype(np.int64) * _K + np.clip(q_v, -(1 << 43), (1 << 43) - 1)
    k = np.searchsorted(key, q, side="left")
    kk = np.minimum(k, len(key) - 1)
    return np.where((k < len(key)) & (key[kk] == q), kk, -1)


def _seq_samples(st: pl.DataFrame) -> pl.DataFrame:
    # the first transmission of every end (``adv`` rows: strictly increasing ends per direction)
    # (a first transmission that partly re-sends bytes sent before is ambiguous too: Karn)
    segs = pick(st, pl.col("adv") & ~pl.col("keepalive"), "g", "end", "_i", "time",
                s_re=pl.col("nxt").is_not_null() & (pl.col("seq") < pl.col("nxt")))
    sg = Grouped(segs["g"].to_numpy())
    s_g, s_end, s_i, s_t, s_re = (sg.take(segs[c].to_numpy()) for c in ("g", "end", "_i", "time", "s_re"))
    acks = pick(st, pl.col("new_ack"), "_i", "g", "frame", "time", "ack")
    pos = _lookup(s_g, s_end, acks["g"].to_numpy() ^ 1, acks["ack"].to_numpy())
    ok = pos >= 0
    m = acks.filter(pl.Series(ok)).with_columns(
        s_i=pl.Series(s_i[pos[ok]]), s_time=pl.Series(s_t[pos[ok]]), s_re=pl.Series(s_re[pos[ok]]),
    ).filter((pl.col("s_i") < pl.col("_i")) & ~pl.col("s_re"))
    # Karn: another transmission ending there before the ACK
    re = pick(st, pl.col("is_seg") & ~pl.col("adv") & ~pl.col("keepalive") & ~pl.col("zwp"), "g", "end", "_i"
              ).group_by("g", "end").agg(pl.col("_i").min().alias("r_first"))
    m = m.with_columns(dg=(pl.col("g") ^ 1)).join(re, left_on=["dg", "ack"], right_on=["g", "end"], how="left")
    m = m.filter(pl.col("r_first").is_null() | (pl.col("r_first") > pl.col("_i")))
    return m.select(
        "_i", (pl.col("dg") // 2).cast(pl.UInt32).alias("flow"), (pl.col("dg") % 2).cast(pl.Int8).alias("dir"),
        "frame", "time", (pl.col("time") - pl.col("s_time")).alias("rtt_s"), method=pl.lit("seq"),
    )


def _ts_samples(st: pl.DataFrame) -> pl.DataFrame:
    gp = grouped(st)
    raw = st["ts_val"].cast(pl.Int64).fill_null(MISSING).to_numpy()
    v = gp.take(raw)
    has = v != MISSING
    if not has.any():
        return pl.DataFrame(schema=_SCHEMA)
    # unwrap TSval per direction: a drop by more than 2^31 is a wrap
    last = gp.ffill_index(has)
    prev_pos = gp.shift1(last, -1)
    prev = np.where(prev_pos >= 0, v[np.maximum(prev_pos, 0)], MISSING)
    step = np.where(has & (prev != MISSING), ((v - prev) < -HALF).astype(np.int64) - ((v - prev) > HALF), 0)
    tsv = np.where(has, v + gp.cumsum(step) * TWO32, MISSING)
    hi = gp.cummax(tsv)
    prev_hi = gp.shift1(hi)
    first = has & ((prev_hi == MISSING) | (tsv > prev_hi))  # first packet sending this TSval
    f_g, f_v, f_t, f_i = gp.take(st["g"].to_numpy())[first], tsv[first], gp.take(st["time"].to_numpy())[first], \
        gp.order[first]
    hi_f = gp.back(hi)  # latest unwrapped TSval of each row's direction
    acks = pick(st, pl.col("new_ack") & pl.col("ts_ecr").is_not_null() & (pl.col("ts_ecr") != 0),
                "_i", "g", "frame", "time", "r_i", ecr=pl.col("ts_ecr").cast(pl.Int64))
    r_i = acks["r_i"].fill_null(-1).to_numpy()
    ref = np.where(r_i >= 0, hi_f[np.maximum(r_i, 0)], MISSING)
    ecr = acks["ecr"].to_numpy()
    ecr = np.where(ref != MISSING, ecr + np.floor_divide(ref - ecr + HALF, TWO32) * TWO32, ecr)
    pos = _lookup(f_g, f_v, acks["g"].to_numpy() ^ 1, ecr)
    ok = pos >= 0
    m = acks.filter(pl.Series(ok)).with_columns(
        t_sent=pl.Series(f_t[pos[ok]]), t_i=pl.Series(f_i[pos[ok]]), dg=pl.col("g") ^ 1,
    ).filter(pl.col("t_i") < pl.col("_i"))
    return m.select(
        "_i", (pl.col("dg") // 2).cast(pl.UInt32).alias("flow"), (pl.col("dg") % 2).cast(pl.Int8).alias("dir"),
        "frame", "time", (pl.col("time") - pl.col("t_sent")).alias("rtt_s"), method=pl.lit("ts"),
    )


def samples(st: pl.DataFrame) -> pl.DataFrame:
    """RTT samples with the closing ACK's row ``_i`` (the ``rtt`` frame plus ``_i``), sorted by method and ``_i``."""
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    parts = [p for p in (_seq_samples(st), _ts_samples(st)) if p.height]
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
    has_seq = rs.group_by(KEYS).agg((pl.col("method") == "seq").any().alias("_has_seq"))
    use = rs.join(has_seq, on=KEYS).filter(
        (pl.col("method") == "seq") | ~pl.col("_has_seq")
    ).sort("_i")
    srtt = pl.col("rtt_s").ewm_mean(alpha=ALPHA, adjust=False).over(KEYS)
    use = use.with_columns(srtt=srtt).with_columns(
        _dev=(pl.col("rtt_s") - pl.col("srtt").shift(1).over(KEYS)).abs().fill_null(pl.col("rtt_s") / 2)
    )
    return use.with_columns(rttvar=pl.col("_dev").ewm_mean(alpha=BETA, adjust=False).over(KEYS)).select(
        "_i", *KEYS, "time", "srtt", "rttvar"
    )


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
    n = st.height
    if est.is_empty() or rows.is_empty():
        return rows.with_columns(srtt=pl.lit(None, pl.Float64), rttvar=pl.lit(None, pl.Float64))
    s = np.full(n, np.nan)
    v = np.full(n, np.nan)
    ix = est["_i"].to_numpy().astype(np.int64)
    s[ix] = est["srtt"].to_numpy()
    v[ix] = est["rttvar"].to_numpy()
    gp = grouped(st)
    p = gp.ffill_index(gp.take(~np.isnan(s)))
    src = np.where(p >= 0, gp.order[np.maximum(p, 0)], -1)
    last = gp.back(src)  # per row: the latest sample row of its own direction at or before it
    r = rows["r_i"].fill_null(-1).to_numpy()
    j = np.where(r >= 0, last[np.maximum(r, 0)], -1)
    return rows.with_columns(
        srtt=pl.Series(np.where(j >= 0, s[np.maximum(j, 0)], np.nan)).fill_nan(None),
        rttvar=pl.Series(np.where(j >= 0, v[np.maximum(j, 0)], np.nan)).fill_nan(None),
    )


def with_srtt(st: pl.DataFrame, rs: pl.DataFrame) -> pl.DataFrame:
    """``st`` with ``srtt``/``rttvar``: each row's direction's smoothed RTT as of that row (:func:`at_rows`)."""
    return at_rows(st, smoothed(rs), st.select("_i", "r_i")).select("srtt", "rttvar").pipe(
        lambda x: pl.concat([st, x], how="horizontal"))


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
    # the initiator's first ACK after the SYN-ACK: its first packet after it (r_i points at the SYN-ACK or later)
    ack3 = (
        pick(st, (pl.col("dir") == 0) & ~pl.col("syn") & pl.col("has_ack") & pl.col("r_i").is_not_null(),
             "flow", "r_i", "time")
        .join(synack, on="flow").filter(pl.col("r_i") >= pl.col("_sa_i"))
        .group_by("flow").agg(pl.col("time").min().alias("_ack3"))
    )
    return syn.join(ack3, on="flow").select("flow", (pl.col("_ack3") - pl.col("_syn")).alias("hs_rtt")).filter(
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
