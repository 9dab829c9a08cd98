"""The congestion-window estimate from packets (the ``source = "estimate"`` rows of :mod:`.cwnd`).

A sender that is cwnd-limited keeps one congestion window of data outstanding: each
ACK frees room and the sender fills it at once. So after the segments an ACK releases,
``pipe = snd_nxt − snd_una − SACKed`` *is* cwnd. tracekit measures that pipe at every
data segment and corrects it where the sender is not cwnd-limited:

1. **Loss events.** A retransmission starts a loss event unless one is under way: an
   event lasts until the cumulative ACK passes its *recovery point* (the highest byte
   sent before it, RFC 6582 "recover"), so NewReno partial-ACK and SACK retransmissions
   of one window count once. A retransmission after no new ACK for at least one minimum
   RTT, and not sent at the instant an ACK arrived, is a **timeout** and always starts a
   new event — a Reno recovery that stalls ends in one, and the simulators cut cwnd
   twice (FORMATS.md §2.1: 66 → 33 → 1). A retransmitted SYN is a loss too (cwnd starts
   at 1 segment, ssthresh 2 segments, RFC 5681).
2. **snd_nxt restarts at each event**: go-back-N senders (timeouts, Tahoe's fast
   retransmit) resend from snd_una, so the pipe uses the highest byte sent since.
3. **Fast recovery or restart.** A fast-retransmit event is a Reno-style *recovery*
   (estimate = ssthresh, phase ``recovery``: ns-2 keeps the dupACK inflation out of
   ``cwnd_``, PRR converges to it) unless the sender shows go-back-N: it resends old
   data beyond the first hole, contiguously, before any new data (a SACK sender skips
   the SACKed segments). When it sends nothing at all until the event ends, the burst
   the ending ACK releases decides: Tahoe sends ~2 segments, Reno resumes at ssthresh.
4. **ssthresh** = half the estimate just before the event (with SACK information, half
   the un-SACKed flight if smaller: RFC 5681 eq. 4's FlightSize, as ns-3 does), rounded
   down to whole segments, at least 2 MSS (ns-2 and Linux keep whole segments).
5. **Not measurements of the window**: segments sent on duplicate ACKs (RFC 3042 limited
   transmit, dupACK inflation) are skipped; the segments one ACK releases count as one
   burst (a capture sees them spaced by the serialisation time).
6. **Smoothing**: a causal max filter over two minimum RTTs (queueing and delayed ACKs
   stretch the RTT), restarted at every event start and end so that no pre-loss window
   is carried across a reduction.
7. **Congestion avoidance** grows cwnd smoothly while the pipe can only step by whole
   segments: between two one-segment steps the estimate is interpolated linearly.

Python loops run over directions with retransmissions and over loss events only; every
per-packet step is a polars/numpy column operation. The estimate needs the sender's
own view (its segments when sent, ACKs when they reach it): ACKs observed elsewhere
(e.g. at the receiver) make the pipe lag by a one-way delay.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from tracekit.schema import ACK, SYN

KEYS = ["flow", "dir"]
#: A data segment sent within this long after an ACK arrived was clocked by it.
ACK_CLOCKED_S = 1e-3
#: Width of the max filter, in minimum RTTs (an RTT with queueing and delayed ACKs is longer).
FILTER_RTTS = 2.0
ROW_SCHEMA = {"flow": pl.UInt32(), "dir": pl.Int8(), "time": pl.Float64(), "cwnd_bytes": pl.Float64(),
              "ssthresh_bytes": pl.Float64(), "phase": pl.String()}
EP_SCHEMA = {"flow": pl.UInt32(), "dir": pl.Int8(), "start": pl.Float64(), "end": pl.Float64(),
             "kind": pl.String(), "recovery": pl.Boolean(), "ssthresh_bytes": pl.Float64()}


def _min_rtt(data: pl.DataFrame, acks: pl.DataFrame) -> pl.DataFrame:
    """Per (flow, dir): the smallest time from a first transmission to the first ACK covering it."""
    left = data.filter(~pl.col("_retx")).select(*KEYS, "time", "seq_end").sort("seq_end")
    right = acks.select(*KEYS, pl.col("time").alias("_tack"), pl.col("_una").alias("seq_end")).sort(
        "seq_end", maintain_order=True)
    if left.is_empty() or right.is_empty():
        return pl.DataFrame(schema={"flow": pl.UInt32(), "dir": pl.Int8(), "min_rtt": pl.Float64()})
    j = left.join_asof(right, on="seq_end", by=KEYS, strategy="forward", check_sortedness=False)
    rtt = j.filter(pl.col("_tack") > pl.col("time")).group_by(KEYS).agg(
        (pl.col("_tack") - pl.col("time")).min().alias("min_rtt"))
    return rtt


def _events(pk: pl.DataFrame, flight: pl.DataFrame, retrans: pl.DataFrame, dirs: pl.DataFrame
            ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Data rows (with una, hi_before, retransmission marks) and the ACK stream per data direction."""
    tcp = pk.filter((pl.col("proto") == "tcp") & pl.col("flow").is_not_null())
    tcp = tcp.sort("time", "frame", maintain_order=True).with_row_index("_ord")
    data = tcp.filter(pl.col("payload") > 0).join(dirs.select(KEYS), on=KEYS).select(
        *KEYS, "_ord", "time", "frame", "seq", (pl.col("seq") + pl.col("payload").cast(pl.Int64)).alias("seq_end"))
    flags = pl.col("flags").fill_null(ACK)
    acks = tcp.filter(pl.col("ack").is_not_null() & ((flags & ACK) != 0)).select(
        "flow", (1 - pl.col("dir")).cast(pl.Int8).alias("dir"), "_ord", "time", "ack").join(dirs.select(KEYS), on=KEYS)
    big_neg = -(1 << 62)
    acks = acks.sort(*KEYS, "_ord").with_columns(
        _una=pl.col("ack").cum_max().over(KEYS)).with_columns(
        _new=pl.col("_una") > pl.col("_una").shift(1).over(KEYS).fill_null(big_neg))
    # una at each data row: the highest cumulative ACK that reached the sender before it
    ev = pl.concat([
        data.with_columns(_una=pl.lit(None, pl.Int64), _tnew=pl.lit(None, pl.Float64), _dup=pl.lit(None, pl.Boolean),
                          _tack=pl.lit(None, pl.Float64), _aord=pl.lit(None, pl.UInt32)),
        acks.select(*KEYS, "_ord", "time", pl.lit(None, pl.UInt64).alias("frame"), pl.lit(None, pl.Int64).alias("seq"),
                    pl.lit(None, pl.Int64).alias("seq_end"), "_una",
                    pl.when("_new").then(pl.col("time")).alias("_tnew"), (~pl.col("_new")).alias("_dup"),
                    pl.col("time").alias("_tack"), pl.col("_ord").alias("_aord")),
    ], how="vertical_relaxed").sort(*KEYS, "_ord")
    ev = ev.with_columns(
        pl.col("_una").forward_fill().over(KEYS),
        pl.col("_tnew").forward_fill().over(KEYS),
        pl.col("_dup").forward_fill().over(KEYS).fill_null(False),
        pl.col("_tack").forward_fill().over(KEYS),
        pl.col("_aord").forward_fill().over(KEYS).fill_null(0),
    )
    data = ev.filter(pl.col("seq").is_not_null())
    first_seq = pl.col("seq").min().over(KEYS)
    data = data.with_columns(
        _una=pl.max_horizontal(pl.col("_una").fill_null(first_seq), first_seq),
        _hi_before=pl.col("seq_end").cum_max().shift(1).over(KEYS),
    )
    own_retx = pl.col("seq") < pl.col("_hi_before").fill_null(big_neg)
    if retrans.height:
        marked = retrans.select(*KEYS, pl.col("frame").cast(pl.UInt64), pl.lit(True).alias("_given")).unique()
        data = data.join(marked, on=[*KEYS, "frame"], how="left", maintain_order="left")
        data = data.with_columns(_retx=own_retx | pl.col("_given").fill_null(False)).drop("_given")
    else:
        data = data.with_columns(_retx=own_retx)
    # SACKed bytes above una, as the flight analysis measured them (RFC 6675 "pipe")
    if flight.height and "flight_sack_bytes" in flight.columns:
        # unacked − pipe = SACKed bytes above the cumulative ACK (flight_bytes is Wireshark's
        # figure, which already subtracts the latest ACK's SACK blocks)
        base = "unacked_bytes" if "unacked_bytes" in flight.columns else "flight_bytes"
        sacked = flight.select(*KEYS, pl.col("frame").cast(pl.UInt64),
                               (pl.col(base) - pl.col("flight_sack_bytes")).clip(lower_bound=0).alias("_sacked"))
        data = data.join(sacked.unique([*KEYS, "frame"]), on=[*KEYS, "frame"], how="left", maintain_order="left")
        data = data.with_columns(pl.col("_sacked").fill_null(0))
    else:
        data = data.with_columns(_sacked=pl.lit(0, pl.Int64))
    return data, acks


def _chain(seq_end: np.ndarray, hi: np.ndarray, una: np.ndarray, retx: np.ndarray, timeout: np.ndarray,
           t_ack: np.ndarray, una_ack: np.ndarray) -> list[tuple[int, float, int, bool]]:
    """Loss events of one direction: (start row, end time, recovery point, timeout?).

    Loops over loss events only (never over packets): each step jumps with searchsorted.
    """
    cand = np.flatnonzero(retx & (seq_end > una))
    if cand.size == 0:
        return []
    una_c = una[cand]
    to_c = timeout[cand]
    # next timeout-like candidate at or after each position (cand.size: none)
    m = cand.size
    marks = np.where(to_c, np.arange(m), m)
    nxt_to = np.append(np.minimum.accumulate(marks[::-1])[::-1], m)
    out: list[tuple[int, float, int, bool]] = []
    pos = 0
    while pos < m:
        i = int(cand[pos])
        rp = int(max(hi[i], seq_end[i]))
        k = int(np.searchsorted(una_ack, rp, side="left"))
        end = float(t_ack[k]) if k < t_ack.size else math.inf
        out.append((i, end, rp, bool(to_c[pos])))
        p1 = max(int(np.searchsorted(una_c, rp, side="left")), pos + 1)
        pos = min(p1, int(nxt_to[pos + 1]))
    return out


def _go_back_n(seq: np.ndarray, seq_end: np.ndarray, una: np.ndarray, rp: int) -> bool | None:
    """Is a fast-retransmit episode a Tahoe-style restart (True) or a fast recovery (False)?

    Rows are the episode's data segments, the fast retransmission first. A go-back-N
    sender (cwnd = 1, then slow start from snd_una) resends old data beyond the first
    hole (``una < seq < rp``) before it sends new data (``seq ≥ rp``), and always
    contiguously from ``max(snd_una, last sent)``. A Reno/NewReno sender retransmits only
    at snd_una (one segment per partial ACK) and sends new data on dupACK inflation; a
    SACK sender repairs holes above snd_una but *skips* the segments the receiver SACKed.

    Returns:
        None when the episode shows neither (only the fast retransmission was sent:
        a single loss, or a Reno sender stalled by the receiver window).
    """
    rest_seq, rest_una = seq[1:], una[1:]
    if rest_seq.size == 0:
        return None
    new = np.flatnonzero(rest_seq >= rp)
    stop = int(new[0]) if new.size else rest_seq.size
    beyond = (rest_seq[:stop] < rp) & (rest_seq[:stop] > rest_una[:stop])
    if not beyond.any():
        return False if new.size or stop else None
    # up to and including the first new segment: a SACK sender jumps over SACKed data
    upto = min(stop + 1, rest_seq.size)
    skipped = rest_seq[:upto] > np.maximum(seq_end[:upto], rest_una[:upto])
    return not bool(skipped.any())


def estimate(pk: pl.DataFrame, flight: pl.DataFrame, retrans: pl.DataFrame, dirs: pl.DataFrame
             ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Estimate cwnd at every data segment of every data direction (see the module docstring).

    Args:
        pk: Packets at the sender's vantage point.
        flight: The flight frame (only its SACK accounting is used; may be empty).
        retrans: The retransmissions frame (its frames are marked as retransmissions; may be empty).
        dirs: Data directions ``flow, dir, mss`` (from :func:`tracekit.analysis.cwnd.data_directions`).

    Returns:
        (rows, episodes): rows with ``flow, dir, time, cwnd_bytes, ssthresh_bytes, phase``;
        episodes with ``flow, dir, start, end, kind, recovery, ssthresh_bytes``.
    """
    if pk.is_empty() or dirs.is_empty():
        return pl.DataFrame(schema=ROW_SCHEMA), pl.DataFrame(schema=EP_SCHEMA)
    data, acks = _events(pk, flight, retrans, dirs)
    if data.is_empty() or acks.is_empty():
        return pl.DataFrame(schema=ROW_SCHEMA), pl.DataFrame(schema=EP_SCHEMA)
    rtt = _min_rtt(data, acks)
    # a retransmitted SYN is a loss too: the transfer then starts with cwnd = 1 segment
    # and ssthresh = 2 segments (RFC 5681 eq. 4 with nothing in flight; ns-2 does exactly this)
    syn = pk.filter((pl.col("proto") == "tcp") & ((pl.col("flags").fill_null(0) & SYN) != 0)).group_by(KEYS).agg(
        (pl.len() > 1).alias("_syn_lost"), pl.col("time").max().alias("_syn_t"))
    data = (data.join(rtt, on=KEYS, how="left")
            .join(dirs.select(*KEYS, "mss"), on=KEYS, how="left")
            .join(syn, on=KEYS, how="left")
            .with_columns(pl.col("_syn_lost").fill_null(False),
                          pl.coalesce("mss", (pl.col("seq_end") - pl.col("seq")).max().over(KEYS).cast(pl.Float64))
                          .alias("mss"))
            .sort(*KEYS, "_ord"))
    data = data.with_columns(
        _timeout=pl.col("_retx") & pl.col("min_rtt").is_not_null()
        & ((pl.col("time") - pl.col("_tnew").fill_null(-math.inf)) >= pl.col("min_rtt"))
        # a send at the instant an ACK arrives was clocked by that ACK, not by the timer (fast
        # retransmits ride the third dupACK; SACK recovery resumes on dupACKs after a pause)
        & ((pl.col("time") - pl.col("_tack").fill_null(-math.inf))
           > pl.min_horizontal(pl.lit(ACK_CLOCKED_S), 0.05 * pl.col("min_rtt")))
    )
    acks = acks.sort(*KEYS, "_ord")
    n = data.height
    col = {c: data[c].to_numpy() for c in ("time", "seq", "seq_end", "_una", "_sacked", "_retx", "_timeout")}
    hi = data["_hi_before"].fill_null(-(1 << 62)).to_numpy()
    # contiguous row ranges of each direction, in the data rows and in the ACK stream
    bounds = data.with_row_index("_r").group_by(KEYS, maintain_order=True).agg(
        pl.col("_r").first().alias("lo"), (pl.col("_r").last() + 1).alias("hi"),
        pl.col("_retx").any().alias("any_retx"))
    abounds = acks.with_row_index("_r").group_by(KEYS, maintain_order=True).agg(
        pl.col("_r").first().alias("alo"), (pl.col("_r").last() + 1).alias("ahi"))
    bounds = bounds.join(abounds, on=KEYS, how="left")
    t_ack_all, una_ack_all = acks["time"].to_numpy(), acks["_una"].to_numpy()
    chains: list[tuple[int, int, list[tuple[int, float, int, bool]]]] = []
    for lo, hi_r, alo, ahi in bounds.filter("any_retx").select("lo", "hi", "alo", "ahi").iter_rows():
        # only directions with retransmissions: a Python step per loss event, none per packet
        sl = slice(lo, hi_r)
        ch = _chain(col["seq_end"][sl], hi[sl], col["_una"][sl], col["_retx"][sl], col["_timeout"][sl],
                    t_ack_all[alo:ahi], una_ack_all[alo:ahi])
        chains.append((lo, hi_r, [(i + lo, end, rp, to) for i, end, rp, to in ch]))
    start_mark = np.zeros(n, dtype=np.int64)
    bound_mark = np.zeros(n, dtype=np.int64)
    t = col["time"]
    for lo, hi_r, ch in chains:
        for i, end, _rp, _to in ch:
            start_mark[i] = bound_mark[i] = 1
            j = lo + int(np.searchsorted(t[lo:hi_r], end, side="left"))
            if j < hi_r:
                bound_mark[j] = 1
    raw, filt = _filtered_pipe(data, start_mark, bound_mark)
    est, ssth_at, in_rec, episodes = _recoveries(data, col, hi, raw, filt, chains)
    first_row = pl.col("_ord") == pl.col("_ord").min().over(KEYS)
    frame = data.select(*KEYS, "time", "mss", "_syn_lost", first_row.alias("_first")).with_columns(
        _st=pl.Series(ssth_at))
    frame = frame.with_columns(
        # a lost SYN: ssthresh 2 MSS from the first segment on (RFC 5681 eq. 4 with FlightSize 0)
        _st=pl.when(pl.col("_st").is_not_nan()).then(pl.col("_st"))
        .when(pl.col("_syn_lost") & pl.col("_first")).then(2.0 * pl.col("mss")),
    ).with_columns(_st=pl.col("_st").forward_fill().over(KEYS))
    st = frame["_st"].to_numpy().astype(float)
    ca = ~in_rec & ~np.isnan(st) & (est >= np.nan_to_num(st, nan=np.inf))
    est = _interpolate_ca(frame, est, ca)
    phase = np.where(in_rec, "recovery", np.where(ca, "congestion_avoidance", "slow_start"))
    rows = pl.DataFrame({
        "flow": data["flow"], "dir": data["dir"], "time": data["time"], "cwnd_bytes": est,
        "ssthresh_bytes": pl.Series(st).fill_nan(None), "phase": phase,
    }, schema=ROW_SCHEMA)
    syn_eps = data.filter(pl.col("_syn_lost") & first_row).select(
        *KEYS, pl.col("_syn_t").alias("start"), pl.col("time").alias("end"), pl.lit("syn").alias("kind"),
        pl.lit(False).alias("recovery"), (2.0 * pl.col("mss")).alias("ssthresh_bytes"))
    eps = pl.concat([pl.DataFrame(episodes, schema=EP_SCHEMA) if episodes else pl.DataFrame(schema=EP_SCHEMA),
                     syn_eps.cast(EP_SCHEMA)])  # type: ignore[arg-type]
    return rows, eps


def _filtered_pipe(data: pl.DataFrame, start_mark: np.ndarray, bound_mark: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pipe at each data segment (raw), and its smoothed version the estimate is built on."""
    # no RTT sample: a window of 1 µs keeps only the segments of one instant together
    w = pl.max_horizontal(pl.coalesce(FILTER_RTTS * pl.col("min_rtt"), pl.lit(1e-6)), pl.lit(1e-6))
    gg = data.with_columns(
        # running counts over all rows; together with the direction they number its epochs/segments
        _epoch=pl.Series(np.cumsum(start_mark)),
        _seg=pl.Series(np.cumsum(bound_mark)),
        # time in units of the direction's filter width, so one window size fits every direction
        # strict=False: an absurd time (a damaged trace's 1e179 s) becomes null instead of an overflow error
        _tau=(pl.col("time") / w * 1000.0).round().cast(pl.Int64, strict=False),
    ).with_columns(
        _pipe=(pl.col("seq_end").cum_max().over(*KEYS, "_epoch") - pl.col("_una") - pl.col("_sacked"))
        .clip(lower_bound=0).cast(pl.Float64),
    ).with_columns(_raw=pl.col("_pipe")).with_columns(
        # a segment sent on a duplicate ACK (RFC 3042 limited transmit, or the dupACK inflation
        # of fast recovery) may exceed cwnd: it is not a measurement of the window
        _pipe=pl.when(pl.col("_dup") & (pl.col("_epoch") == pl.col("_epoch").shift(1).over(KEYS).fill_null(-1)))
        .then(None).otherwise(pl.col("_pipe")),
    ).with_columns(
        # the segments one ACK releases leave together (a capture sees them spaced by the link's
        # serialisation time): the window is what is outstanding after the last of them
        _pipe=pl.col("_pipe").max().over(*KEYS, "_seg", "_aord"),
    ).with_columns(
        _filt=pl.col("_pipe").rolling_max_by("_tau", window_size="1000i").over(*KEYS, "_seg"),
    )
    filt = gg.select(pl.col("_filt").forward_fill().over(KEYS).fill_null(0.0))["_filt"].to_numpy()
    return gg["_raw"].to_numpy(), filt


def _recoveries(data: pl.DataFrame, col: dict[str, np.ndarray], hi: np.ndarray, raw: np.ndarray, filt: np.ndarray,
                chains: list[tuple[int, int, list[tuple[int, float, int, bool]]]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, object]]]:
    """Second pass over the loss events: recovery or restart, ssthresh, the estimate inside recoveries.

    Returns:
        (estimate, ssthresh set at each event's first row (NaN elsewhere), in-recovery mask, episodes).
    """
    t, seq, seq_end, una, sacked = col["time"], col["seq"], col["seq_end"], col["_una"], col["_sacked"]
    n = t.size
    est = filt.copy()
    ssth_at = np.full(n, np.nan)
    in_rec = np.zeros(n, dtype=bool)
    mss_all = data["mss"].to_numpy()
    min_rtt = data["min_rtt"].to_numpy()
    flows, dirs = data["flow"].to_numpy(), data["dir"].to_numpy()
    episodes: list[dict[str, object]] = []
    for lo, hi_r, ch in chains:
        mss = float(mss_all[lo])
        w_s = min_rtt[lo]
        clocked = min(ACK_CLOCKED_S, 0.05 * w_s) if w_s == w_s else ACK_CLOCKED_S  # w_s == w_s: not NaN
        tt = t[lo:hi_r]
        for k, (i, end, rp, to) in enumerate(ch):
            j_end = lo + int(np.searchsorted(tt, end, side="left"))
            pre = est[i - 1] if i > lo else filt[i]
            if sacked[i] > 0:
                # with SACK information, FlightSize (RFC 5681 eq. 4) is what is outstanding and not SACKed
                pre = min(pre, float(max(hi[i] - una[i] - sacked[i], 0)))
            s = max(math.floor(pre / 2.0 / mss) * mss, 2.0 * mss) if mss > 0 else pre / 2.0
            nxt = ch[k + 1][0] if k + 1 < len(ch) else hi_r
            last = min(j_end, nxt)
            restart = _go_back_n(seq[i:last], seq_end[i:last], una[i:last], rp)
            if restart is None and j_end < nxt:
                # nothing sent inside: the burst released by the ACK that ends the episode tells.
                # Tahoe restarts from one segment (sends ~2), Reno resumes at ssthresh.
                kb = lo + int(np.searchsorted(tt, t[j_end] + clocked, side="right")) - 1
                restart = bool(raw[min(kb, nxt - 1)] < 0.75 * s)
            recovery = (not to) and not restart
            ssth_at[i] = s
            if recovery:
                in_rec[i:last] = True
                est[i:last] = s
            episodes.append({"flow": int(flows[i]), "dir": int(dirs[i]), "start": float(t[i]),
                             "end": end if end != math.inf else None, "kind": "rto" if to else "fast",
                             "recovery": recovery, "ssthresh_bytes": s})
    return est, ssth_at, in_rec, episodes


def _interpolate_ca(frame: pl.DataFrame, est: np.ndarray, ca: np.ndarray) -> np.ndarray:
    """Spread congestion-avoidance growth between the whole-segment steps the pipe shows.

    In congestion avoidance cwnd grows by ~1 MSS per RTT, smoothly, but a sender only
    fills whole segments: the pipe steps up by one segment when cwnd passes the next
    multiple. Between two such steps tracekit interpolates linearly in time (the last
    stretch of a run, with no next step, keeps its value). Rows are sorted by direction.
    """
    n = est.size
    if n < 2:
        return est
    t = frame["time"].to_numpy()
    mss = frame["mss"].to_numpy().astype(float)
    grp = frame.select(pl.struct(KEYS).rank("dense").alias("g"))["g"].to_numpy()
    idx = np.arange(n)
    # a run: consecutive rows of one direction with the same value and CA state
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (est[1:] != est[:-1]) | (ca[1:] != ca[:-1]) | (grp[1:] != grp[:-1])
    run_start = np.maximum.accumulate(np.where(new_run, idx, 0))
    nxt_start = np.minimum.accumulate(np.where(new_run, idx, n)[::-1])[::-1]
    nxt = np.append(nxt_start[1:], n)  # first row of the next run
    j = np.minimum(nxt, n - 1)
    step = est[j] - est
    ok = ca & (nxt < n) & ca[j] & (grp[j] == grp) & (step > 0) & (step <= 1.01 * mss)
    t0 = t[run_start]
    span = t[j] - t0
    frac = np.where(ok & (span > 0), (t - t0) / np.where(span > 0, span, 1.0), 0.0)
    return np.where(ok, est + step * frac, est)
