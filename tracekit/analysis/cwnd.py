"""Congestion window per data direction: the simulator's own and an estimate from packets.

The ``cwnd`` frame (:data:`tracekit.schema.CWND`) holds two kinds of rows:

* ``source = "trace"``: what the tool itself reported (samples with metric ``cwnd``):
  ns-2 ``Window.tr`` / the agent's ``cwnd_`` trace (packets × segment size), ns-3
  ``CongestionWindow`` (bytes), OPNET/NetSim exports, Flent ``tcp_cwnd`` (packets × MSS).
  ``ssthresh_bytes`` comes from the tool's ssthresh samples where it has them, else it
  is inferred from the series' own multiplicative decreases (see :func:`_decrease_ssthresh`).
* ``source = "estimate"``: reconstructed from packets at every data segment the
  sender transmits (:mod:`tracekit.analysis._cwnd_estimate` explains how).

``phase`` is ``recovery`` inside a fast-recovery episode (found from the packets),
else ``slow_start`` while cwnd < ssthresh (or no ssthresh is known yet), else
``congestion_avoidance``. docs/analysis.md defines every column.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from tracekit import _core, schema
from tracekit.analysis import _dirstats, _state
from tracekit.analysis import retrans as _retrans
from tracekit.analysis import rtt as _rtt
from tracekit.analysis._cwnd_estimate import estimate
from tracekit.analysis.flight import flight_and_sacks

KEYS = ["flow", "dir"]
#: ssthresh values at or above this many bytes are a tool's "not set yet" sentinel
#: (ns-3 writes UINT32_MAX, Linux tcp_probe 2^31-1 packets).
SSTHRESH_UNSET = float(1 << 30)
#: A fall of the cwnd series by at least this fraction (over one run of decreasing
#: samples) is a multiplicative decrease; Reno halves, CUBIC keeps 70 % (the core's rule).
DECREASE = _core.CWND_DECREASE

_STATS = {"flow": pl.UInt32(), "dir": pl.Int8(), "max_cwnd_bytes": pl.Float64(), "cwnd_source": pl.String(),
          "loss_events": pl.UInt32(), "first_loss_s": pl.Float64()}
_EVENTS = {"flow": pl.UInt32(), "dir": pl.Int8(), "source": pl.String(), "time": pl.Float64(),
           "cwnd_bytes": pl.Float64(), "ssthresh_bytes": pl.Float64()}


def data_directions(pk: pl.DataFrame, meta: dict[str, Any], *, dirs: pl.DataFrame | None = None) -> pl.DataFrame:
    """The TCP directions that carry payload, with their sender address and segment size.

    ``mss`` is the MSS option of the direction's own SYN, else the simulator's segment size
    (``meta["tcp_flows"][flow]["segment_size"]`` or ``meta["segment_size"]``), else the largest
    payload seen. (RFC 9293 §3.7.1: the option bounds what the *peer* may send; the two agree
    when both SYNs carry the usual value, and a one-way capture sees only its own SYN.)

    Args:
        pk: Packets at the vantage point.
        meta: The trace's metadata.
        dirs: :func:`tracekit.analysis._dirstats.of_packets` of ``pk``, if at hand.

    Returns:
        ``flow, dir, src, dst, sport, dport, mss`` (one row per data direction).
    """
    d = _dirstats.of_packets(pk) if dirs is None else dirs
    per_flow = {int(k): v.get("segment_size") for k, v in (meta.get("tcp_flows") or {}).items()
                if str(k).isdigit() and isinstance(v, dict)}
    seg = meta.get("segment_size")
    # packets without a direction are no direction's SYN: their option is not taken
    own = pl.when(pl.col("dir").is_not_null()).then(pl.col("syn_mss").cast(pl.Float64))
    return d.filter(pl.col("data_bytes") > 0).with_columns(
        _meta=pl.col("flow").replace_strict(per_flow, default=seg, return_dtype=pl.Float64)
        if per_flow else pl.lit(seg, pl.Float64)).select(
        "flow", "dir", "src", "dst", "sport", "dport",
        pl.coalesce(own, "_meta", pl.col("_smss").cast(pl.Float64)).alias("mss"),
    ).sort(KEYS)


def _aliases(dirs: pl.DataFrame) -> pl.DataFrame:
    """The names a tool may give a data direction's sender in its samples' ``node`` column.

    The sender address alone (``0``, ``10.1.1.1``), with its port (``0.0``, ``10.1.1.1:49153``),
    or the whole connection (``0.0->6.0`` as tracekit's ns-2 agent-trace reader writes it).
    """
    src, dst = pl.col("src"), pl.col("dst")
    sp, dp = pl.col("sport").cast(pl.String), pl.col("dport").cast(pl.String)
    forms = [src, pl.concat_str(src, pl.lit("."), sp), pl.concat_str(src, pl.lit(":"), sp),
             pl.concat_str(src, pl.lit("."), sp, pl.lit("->"), dst, pl.lit("."), dp),
             pl.concat_str(src, pl.lit(":"), sp, pl.lit("->"), dst, pl.lit(":"), dp)]
    out = pl.concat([dirs.select("flow", "dir", f.alias("node")) for f in forms]).drop_nulls("node")
    # a name shared by two directions (one host sending two flows) identifies neither
    return out.filter(pl.len().over("node") == 1).unique()


def _assign(samples: pl.DataFrame, dirs: pl.DataFrame) -> pl.DataFrame:
    """Give every sample the data direction it belongs to (``flow``/``dir``; null if unknown).

    A sample with a flow keeps it (and takes that flow's data direction, or the one its
    ``node`` names within that flow: ss rows name ``local:port->peer:port``); one without
    belongs to the trace's single data direction when there is exactly one, else to the
    direction its ``node`` names (:func:`_aliases`).
    """
    first_dir = dirs.group_by("flow").agg(pl.col("dir").min())
    s = samples.join(first_dir, on="flow", how="left")
    if dirs.height == 1:
        one = dirs.row(0, named=True)
        s = s.with_columns(
            pl.when(pl.col("flow").is_null()).then(pl.lit(one["dir"], pl.Int8)).otherwise(pl.col("dir")).alias("dir"),
            pl.col("flow").fill_null(pl.lit(one["flow"], pl.UInt32)),
        )
    elif dirs.height > 1:
        names = _aliases(dirs).rename({"flow": "_f", "dir": "_d"})
        s = s.join(names, on="node", how="left").with_columns(
            pl.coalesce("flow", "_f").alias("flow"),
            pl.when(pl.col("flow").is_null() | (pl.col("flow") == pl.col("_f")).fill_null(False))
            .then(pl.col("_d")).otherwise(pl.col("dir")).alias("dir"),
        ).drop("_f", "_d")
    return s


def _in_bytes(s: pl.DataFrame, dirs: pl.DataFrame, meta: dict[str, Any]) -> pl.DataFrame:
    """Values in bytes: packet-counted series × the direction's segment size.

    A series given in both units (``combine`` adds a bytes copy) keeps its bytes rows.
    Rows that cannot be converted (no segment size known) are left out.
    """
    series = ["metric", "flow", "node", "source"]
    has_bytes = s.filter(pl.col("unit") == "bytes").select(series).unique().with_columns(_hb=pl.lit(True))
    s = s.join(has_bytes, on=series, how="left", nulls_equal=True)
    s = s.filter((pl.col("unit") == "bytes") | ((pl.col("unit") == "packets") & pl.col("_hb").is_null()))
    s = s.join(dirs.select(*KEYS, "mss"), on=KEYS, how="left")
    seg = meta.get("segment_size")
    factor = pl.when(pl.col("unit") == "bytes").then(1.0).otherwise(pl.coalesce("mss", pl.lit(seg, pl.Float64)))
    return s.with_columns(value=pl.col("value") * factor).filter(pl.col("value").is_not_null())


def _trace_rows(samples: pl.DataFrame, dirs: pl.DataFrame, meta: dict[str, Any]) -> pl.DataFrame:
    """The tool's own cwnd (and ssthresh) as CWND rows, phases not yet set."""
    out_schema = {"flow": pl.UInt32(), "dir": pl.Int8(), "time": pl.Float64(), "cwnd_bytes": pl.Float64(),
                  "ssthresh_bytes": pl.Float64(), "_series": pl.String(), "_mss": pl.Float64()}
    s = samples.filter(pl.col("metric").is_in(["cwnd", "ssthresh"]))
    if s.is_empty():
        return pl.DataFrame(schema=out_schema)
    s = _assign(s, dirs)
    if dirs.is_empty():
        # no packets to attach them to: each series the tool wrote (Flent's ``TCP upload::1``,
        # ``::2`` …, OPNET columns) becomes a flow of its own, numbered in order of appearance
        ids = s.select("source", "node").unique(maintain_order=True).with_row_index("_sid")
        s = s.join(ids, on=["source", "node"], how="left", nulls_equal=True).with_columns(
            pl.coalesce("flow", pl.col("_sid").cast(pl.UInt32)).alias("flow"),
            pl.col("dir").fill_null(pl.lit(0, pl.Int8)),
        ).drop("_sid")
    s = _in_bytes(s, dirs, meta)
    cw = s.filter((pl.col("metric") == "cwnd") & (pl.col("value") > 0) & (pl.col("value") < SSTHRESH_UNSET))
    if cw.is_empty():
        return pl.DataFrame(schema=out_schema)
    # one series per direction: the tool may write the same trace source twice (ns-3's
    # sixth.cc and tcp-variants-comparison files): keep the longest
    n = cw.group_by("flow", "dir", "source").len()
    best = n.sort("len", "source", descending=[True, False]).group_by("flow", "dir").agg(pl.col("source").first())
    cw = cw.join(best, on=["flow", "dir", "source"], nulls_equal=True).sort("flow", "dir", "time", maintain_order=True)
    seg = meta.get("segment_size")
    cw = cw.select("flow", "dir", "time", pl.col("value").alias("cwnd_bytes"), pl.col("source").alias("_series"),
                   pl.coalesce("mss", pl.lit(seg, pl.Float64)).alias("_mss"))
    st = s.filter(pl.col("metric") == "ssthresh").select(
        "flow", "dir", "time", pl.when(pl.col("value") < SSTHRESH_UNSET).then(pl.col("value")).alias("_st"))
    key = [
        pl.col("flow").cast(pl.Int64).fill_null(-1).alias("_kf"),
        pl.col("dir").cast(pl.Int64).fill_null(-1).alias("_kd"),
    ]
    cw = cw.with_columns(key).sort("time")
    if st.height:
        st = st.with_columns(key).select("_kf", "_kd", "time", "_st").sort("time")
        cw = cw.join_asof(st, on="time", by=["_kf", "_kd"], strategy="backward", check_sortedness=False)
        has_st = pl.col("_st").is_not_null().any().over("_kf", "_kd")
    else:
        cw = cw.with_columns(_st=pl.lit(None, pl.Float64))
        has_st = pl.lit(False)
    cw = cw.sort("_kf", "_kd", "time", maintain_order=True)
    cw = cw.with_columns(_inf=_decrease_ssthresh(cw, "cwnd_bytes", "_mss", ["_kf", "_kd"]))
    cw = cw.with_columns(ssthresh_bytes=pl.when(has_st).then(pl.col("_st")).otherwise(pl.col("_inf")))
    return cw.select(list(out_schema))


def _decrease_ssthresh(df: pl.DataFrame, value: str, mss: str, group: list[str]) -> pl.Series:
    """ssthresh inferred from a series' multiplicative decreases (a traced series' reductions:
    :func:`loss_events`' rule, found by the core's pass).

    At each decrease ssthresh becomes half the value before it, rounded down to whole
    segments (at least 2), as ns-2 (``int(window/2)``) and Linux (``cwnd >> 1``) do;
    null before the first decrease. ``df``'s rows are sorted by ``group`` (Int64 keys), then time.
    """
    seg = pl.col(mss).fill_null(1.0)
    prev = pl.col(value).shift(1).over(group)
    half = pl.max_horizontal((prev / 2.0 / seg).floor() * seg, 2.0 * seg)
    found = _core_pass(df.select(pl.col(group[0]).alias("flow"), pl.col(group[1]).alias("dir"), "time",
                                 pl.col(value).alias("cwnd_bytes"), source=pl.lit("trace")), None, None)
    ev = np.zeros(df.height, dtype=bool)
    ev[found[0]] = True
    d = df.select(*group, value, mss).with_columns(_ev=pl.Series(ev))
    return d.select(pl.when("_ev").then(half).forward_fill().over(group).alias("_st"))["_st"]


def _phases(rows: pl.DataFrame, episodes: pl.DataFrame) -> pl.DataFrame:
    """Set ``phase`` on trace rows: recovery inside the packets' fast-recovery episodes, else by ssthresh."""
    rec = episodes.filter(pl.col("recovery")).select(
        *KEYS, pl.col("start").alias("time"), pl.col("end").fill_null(math.inf).alias("_end")).sort("time")
    rows = rows.sort("time")
    if rec.height:
        rows = rows.join_asof(rec, on="time", by=KEYS, strategy="backward", check_sortedness=False)
        in_rec = pl.col("_end").is_not_null() & (pl.col("time") < pl.col("_end"))
    else:
        in_rec = pl.lit(False)
    st = pl.col("ssthresh_bytes")
    return rows.with_columns(phase=pl.when(in_rec).then(pl.lit("recovery"))
                             .when(st.is_null() | (pl.col("cwnd_bytes") < st)).then(pl.lit("slow_start"))
                             .otherwise(pl.lit("congestion_avoidance")))


def _timeouts(pk: pl.DataFrame, retrans: pl.DataFrame, meta: dict[str, Any]) -> pl.DataFrame:
    """The re-sends the retransmission analysis calls timeouts (:func:`tracekit.analysis.retrans.timeout_resends`).

    One timeout judgement (RFC 6298 §5 against the sender's RTO floor) for both analyses: a
    frame without ``episode`` is made again from the packets by the same rules.
    """
    if "episode" not in retrans.columns:
        # the rules read packets as they arrive: in capture order (time, then frame), as the estimate does
        st = _state.prepare(pk.sort("time", "frame", maintain_order=True, nulls_last=True))
        floor_s = meta.get("rto_floor_s")
        floor = _retrans.rto_floor(meta, float(floor_s) if isinstance(floor_s, (int, float)) else None)[0]
        retrans = _retrans.classify(st, _rtt.samples(st), rto_floor_s=floor)
    return _retrans.timeout_resends(retrans)


def cwnd(pk: pl.DataFrame, samples: pl.DataFrame, flight: pl.DataFrame, retrans: pl.DataFrame,
         meta: dict[str, Any], *, directions: pl.DataFrame | None = None,
         sacked_at: np.ndarray | None = None) -> pl.DataFrame:
    """Congestion window over time for every data direction: the tool's own and an estimate.

    Args:
        pk: Packets at the sender's vantage point (one row per packet).
        samples: The trace's samples (metric ``cwnd``/``ssthresh`` are used).
        flight: The flight frame (``flow, dir, frame, time, flight_bytes, flight_sack_bytes``).
        retrans: The retransmissions frame (``flow, dir, frame, time, seq, len, kind``), with
            ``episode`` as :func:`tracekit.analysis.retrans.classify` makes it: the estimate's
            timeouts are the re-sends that open its ``rto`` episodes. Without ``episode`` (the
            public frame), the packets are classified again with the same rules (the RTO floor
            from ``meta``: ``rto_floor_s`` as :func:`tracekit.analyze` records it, else by stack).
        meta: The trace's metadata (``segment_size``, ``tcp_flows``).
        directions: :func:`tracekit.analysis._dirstats.of_packets` of ``pk``, if at hand.
        sacked_at: Per ``flight`` row, from when its segment counts as SACKed
            (:func:`tracekit.analysis.flight.flight_and_sacks`: made from ``pk`` when None and
            ``flight`` has rows).

    Returns:
        A :data:`tracekit.schema.CWND` frame sorted by flow, dir, source, time.
    """
    if sacked_at is None and flight.height:
        sacked_at = flight_and_sacks(pk)[1]
    dirs = data_directions(pk, meta, dirs=directions)
    est, episodes = estimate(pk, flight, retrans, dirs, sacked_at=sacked_at,
                             timeouts=_timeouts(pk, retrans, meta),
                             hold_backoff=_retrans.rto_floor(meta)[1] != "ns-2")
    tr = _trace_rows(samples, dirs, meta)
    if tr.is_empty():
        # the estimate alone is already in CWND's columns and order (flow, dir, time)
        return est
    tr = _phases(tr, episodes).with_columns(source=pl.lit("trace"))
    out = pl.concat([schema.conform(tr, schema.CWND), schema.conform(est, schema.CWND)])
    return out.sort("flow", "dir", "source", "time", maintain_order=True, nulls_last=True)


def loss_events(cwnd_df: pl.DataFrame) -> pl.DataFrame:
    """Loss events (multiplicative decreases) in a cwnd frame, per flow, dir and source.

    * ``trace`` rows: every decrease of the series (a run of falling samples that loses at
      least :data:`DECREASE`) — a tool's series only falls when the sender reacts to a loss;
    * ``estimate`` rows: where the estimate sets a new ssthresh (RFC 5681 §3.2, RFC 6582 §3.2),
      enters ``recovery``, or falls to half or less outside a recovery (a timeout or Tahoe
      restart to one segment, RFC 5681 §3.1). Back-to-back timeouts that find cwnd and
      ssthresh already at their floor show nowhere in the series and count once.

    Every series of the frame (both sources); :func:`reductions` keeps each direction's chosen
    one. The rules are the core's (``tracekit._core.cwnd_reductions``, src/state/cwnd/events.rs).

    Args:
        cwnd_df: A :data:`tracekit.schema.CWND` frame.

    Returns:
        ``flow, dir, source, time, cwnd_bytes, ssthresh_bytes`` (the first row of each event).
    """
    if cwnd_df.is_empty():
        return pl.DataFrame(schema=_EVENTS)
    keys: list[pl.Expr] = [pl.col("flow").cast(pl.Int64).fill_null(-1), pl.col("dir").cast(pl.Int64).fill_null(-1),
                           pl.col("source")]
    df = cwnd_df.sort(*keys, "time", maintain_order=True)
    rows = _core_pass(df, None, None)[0]
    ev = df[rows].with_columns(pl.col("source").cast(pl.String))
    return ev.select(list(_EVENTS)).sort("flow", "dir", "source", "time", nulls_last=True)


def _core_pass(df: pl.DataFrame, evidence: pl.DataFrame | None,
               windows: pl.DataFrame | None) -> tuple[np.ndarray, ...]:
    """``tracekit._core.cwnd_reductions`` over ``df``'s series (rows with equal flow, dir and
    source contiguous, each in time order): the reductions' rows and whether each is a loss
    event, then per series its first row, largest cwnd (and whether set), loss events and the
    first one's time. Without ``evidence`` or ``windows``, every reduction is a loss event.
    """
    src = pl.col("source")
    code = (pl.when(src == "trace").then(pl.lit(_core.CWND_SOURCE_TRACE, pl.UInt8))
            .when(src == "estimate").then(pl.lit(_core.CWND_SOURCE_ESTIMATE, pl.UInt8))
            .otherwise(pl.lit(_core.CWND_SOURCE_NONE, pl.UInt8)).alias("source"))
    nan = float("nan")
    cols = df.select(
        pl.col("flow").cast(pl.Int64).fill_null(-1), pl.col("dir").cast(pl.Int64).fill_null(-129), code,
        pl.col("time").cast(pl.Float64), pl.col("cwnd_bytes").cast(pl.Float64).fill_null(nan),
        (pl.col("ssthresh_bytes") if "ssthresh_bytes" in df.columns else pl.lit(None)).cast(pl.Float64)
        .fill_null(nan).alias("ssthresh_bytes"),
        ((pl.col("phase") == "recovery") if "phase" in df.columns else pl.lit(False)).fill_null(False)
        .alias("recovery"))

    def values(name: str) -> tuple[np.ndarray, np.ndarray]:  # NaN where null, and which are set (empty: all)
        if name not in df.columns:
            set_ = np.zeros(df.height, dtype=bool)
        else:
            set_ = df[name].is_not_null().to_numpy() if df[name].null_count() else np.zeros(0, dtype=bool)
        return np.ascontiguousarray(cols[name].to_numpy(), dtype=np.float64), set_

    ev, win = _evidence_columns(evidence, windows)
    return _core.cwnd_reductions(
        cols["flow"].to_numpy(), cols["dir"].to_numpy(), cols["source"].to_numpy(),
        np.ascontiguousarray(cols["time"].to_numpy(), dtype=np.float64), *values("cwnd_bytes"),
        *values("ssthresh_bytes"), np.ascontiguousarray(cols["recovery"].to_numpy(), dtype=bool),
        ev["flow"].to_numpy(), ev["dir"].to_numpy(), ev["time"].to_numpy(),
        win["flow"].to_numpy(), win["dir"].to_numpy(), win["tol_s"].to_numpy())


def _evidence_columns(evidence: pl.DataFrame | None,
                      windows: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The loss evidence ``flow, dir, time`` and the checked directions ``flow, dir, tol_s`` as the core reads them."""
    if evidence is None or windows is None or windows.is_empty():
        no = pl.Series([], dtype=pl.Int64)
        return (pl.DataFrame({"flow": no, "dir": no, "time": no.cast(pl.Float64)}),
                pl.DataFrame({"flow": no, "dir": no, "tol_s": no.cast(pl.Float64)}))
    # keys as the directions' own types (UInt32 flow, Int8 dir); a null key matches no reduction
    w = windows.select(pl.col("flow").cast(pl.UInt32), pl.col("dir").cast(pl.Int8),
                       pl.col("tol_s").cast(pl.Float64).fill_null(0.0)).drop_nulls(["flow", "dir"])
    e = evidence.select(pl.col("flow").cast(pl.UInt32), pl.col("dir").cast(pl.Int8),
                        pl.col("time").cast(pl.Float64)).drop_nulls()
    wide = pl.col("flow", "dir").cast(pl.Int64)
    return e.with_columns(wide), w.with_columns(wide)


def chosen(cwnd_df: pl.DataFrame) -> pl.DataFrame:
    """Each direction's chosen series: the tool's (``trace`` rows) when it wrote one, else the estimate.

    Rows by direction (each one contiguous) and time, in the frame's order where times tie; the
    frame itself (no copy) when it is made of estimate rows already in that order, as :func:`cwnd`
    returns a capture's.
    """
    src = pl.col("source")
    if cwnd_df.is_empty() or cwnd_df.select((src == "estimate").fill_null(False).all()).item():
        df = cwnd_df
    else:
        has_trace = (src == "trace").fill_null(False).any().over(KEYS)
        df = cwnd_df.filter(pl.when(has_trace).then(src == "trace").otherwise(src == "estimate").fill_null(False))
    if df.height < 2:
        return df
    f = df["flow"].cast(pl.Int64).fill_null(-1).to_numpy()
    d = df["dir"].cast(pl.Int64).fill_null(-129).to_numpy()
    t = df["time"].to_numpy()
    new = (f[1:] != f[:-1]) | (d[1:] != d[:-1])
    runs = np.flatnonzero(np.r_[True, new])
    k = f[runs] * 512 + d[runs]
    ordered = (not np.isnan(t).any() and not np.any(~new & (t[1:] < t[:-1]))
               and np.unique(k).size == k.size)  # every direction one run, each in time order
    if ordered:
        return df
    return df.sort("flow", "dir", "time", maintain_order=True, nulls_last=[True, True, False])


def reductions_and_stats(cwnd_df: pl.DataFrame, evidence: pl.DataFrame | None = None,
                         windows: pl.DataFrame | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The reductions of each direction's chosen series (:func:`chosen`), which loss evidence
    backs, and per direction the largest cwnd, its source and the loss events.

    A reduction (:func:`loss_events`' rules) whose first falling sample is at ``t`` (the
    sample before it at ``t_prev``) is a loss event when the direction retransmitted, or a
    simulator dropped one of its packets, within ``[t_prev − tol, t + tol]``: a sender cuts
    cwnd at the moment it retransmits (fast retransmit, RFC 5681 §3.2; a timeout, RFC 6298
    §5.5), and ``tol`` (the direction's minimum RTT) absorbs where the packets were observed.
    A reduction without any — the restart after an idle period (RFC 5681 §4.1), ns-2's reset
    when the agent idles after the FTP ends — is not a loss: an idle restart follows at least
    one RTO of silence, longer than ``tol``, so no retransmission can lie that close to it.
    The tool's own series is preferred when the trace has one (``cwnd_source = "trace"``).

    One pass of the core over the chosen rows (``tracekit._core.cwnd_reductions``,
    src/state/cwnd/events.rs) finds all of it, the evidence walked beside each direction's rows.

    Args:
        cwnd_df: A :data:`tracekit.schema.CWND` frame.
        evidence: ``flow, dir, time`` of the retransmissions and simulator drops; None: every
            reduction is a loss event.
        windows: ``flow, dir, tol_s``: the directions whose packets were seen (their reductions
            need evidence; others, e.g. a tool's series without packets, keep every one) and
            how far from a reduction the evidence may lie.

    Returns:
        A :data:`tracekit.schema.REDUCTIONS` frame (rows by flow, dir and time) and
        ``flow, dir, max_cwnd_bytes, cwnd_source, loss_events, first_loss_s`` (one row per direction).
    """
    if cwnd_df.is_empty():
        return schema.empty(schema.REDUCTIONS), pl.DataFrame(schema=_STATS)
    df = chosen(cwnd_df)
    rows, loss, first, top, top_set, n_loss, first_loss = _core_pass(df, evidence, windows)
    red = df.select(*KEYS, "source", "time", "cwnd_bytes", "ssthresh_bytes")[rows].with_columns(
        loss_event=pl.Series(loss, dtype=pl.Boolean))
    red = schema.conform(red, schema.REDUCTIONS).sort("flow", "dir", "time", maintain_order=True, nulls_last=True)
    per = pl.DataFrame({"_top": top, "_set": top_set, "loss_events": n_loss, "_first": first_loss})
    stats = pl.concat([df.select(*KEYS, cwnd_source="source")[first], per], how="horizontal")
    stats = stats.with_columns(max_cwnd_bytes=pl.when("_set").then("_top"),
                               first_loss_s=pl.when(pl.col("loss_events") > 0).then("_first"))
    stats = stats.select([pl.col(c).cast(t) for c, t in _STATS.items()]).sort(KEYS, nulls_last=True)
    return red, stats


def reductions(cwnd_df: pl.DataFrame, evidence: pl.DataFrame | None = None,
               windows: pl.DataFrame | None = None) -> pl.DataFrame:
    """The reductions frame of :func:`reductions_and_stats`."""
    return reductions_and_stats(cwnd_df, evidence, windows)[0]


def flow_stats(cwnd_df: pl.DataFrame, evidence: pl.DataFrame | None = None,
               windows: pl.DataFrame | None = None) -> pl.DataFrame:
    """The per-direction cwnd stats of :func:`reductions_and_stats`.

    With ``evidence``, a reduction is a loss event only when loss evidence lies next to it: a
    sender also lowers cwnd without a loss — ns-2's agent restarts from one segment after an
    idle RTO once the FTP has finished (RFC 5681 §4.1's restart window), which a count of every
    reduction would take for a loss.
    """
    return reductions_and_stats(cwnd_df, evidence, windows)[1]
