"""Per-direction connection summary: the ``flows`` frame (one row per (flow, dir) that carried data).

Definitions (docs/analysis.md has the full list):

* a *data segment* is a TCP segment with payload > 0;
* ``retrans_packets``/``retrans_bytes``: the rows of the ``retransmissions`` frame
  (Wireshark's detection, out-of-order segments excluded); only the bytes that had been sent
  before count as retransmitted; ``retrans_fast``/``retrans_rto``/``retrans_spurious`` by kind;
* ``unique_bytes``: highest sequence end minus lowest data sequence;
* ``throughput_bps``: every byte on the wire in that direction (``size``) × 8 ÷ duration;
* ``delivered_bytes``: payload the receiver got (``goodput_source`` says how it is known):
  ``receive`` — the unique payload of the simulator's receive events at the destination node
  (ns-2 ``r`` lines whose node is the packet's destination); ``ack`` — the data bytes the
  receiver's cumulative ACKs cover (highest ACK − first data byte, at most the data sent);
  ``sent`` — no ACK of data was seen (a one-way capture): the unique bytes sent, an upper bound;
* ``goodput_bps``: ``delivered_bytes`` × 8 ÷ (the last delivery — the receive event, else the
  ACK covering it — minus ``start``); ``sent``: unique bytes × 8 ÷ duration. Never above the
  bottleneck's payload rate: every delivered byte crossed it after ``start``;
* ``handshake_rtt_s``: SYN → the initiator's ACK of the SYN-ACK (Wireshark's
  ``tcp.analysis.initial_rtt``), on both directions' rows;
* ``transfer_s``: the connection's first SYN (the first data byte of the direction where no
  SYN was seen) → the first ACK of the direction's last data byte, as an FTP download time
  is measured; null when that ACK was not seen;
* ``handshake_s``: the part of ``transfer_s`` before data flows: first SYN → the direction's
  first data byte (the handshake, plus the request where the peer asks first); null without SYN;
* ``init_window_bytes``/``init_window_segments``: data sent before the first ACK of data;
* ``window_scaling``: both SYN and SYN-ACK carried the window-scale option (RFC 7323);
* ``rtt_*``: over the direction's ``seq`` RTT samples (``ts`` ones when there are none;
  ``rtt_method`` says which), zero samples (same timestamp) left out;
* ``dup_acks``: duplicate ACKs (Wireshark's rule) the other side sent about this data;
* ``flight_max_bytes``/``flight_mean_bytes``: over the ``flight_bytes`` of the data segments;
* ``max_cwnd_bytes``, ``cwnd_source``, ``loss_events``: from the cwnd analysis; a reduction
  counts as a loss event only with a retransmission or drop next to it
  (:func:`tracekit.analysis.cwnd.reductions`);
* ``stall_count``/``stall_time_s``: the ``stalls`` frame;
* ``limited_rwnd_share``/``limited_cwnd_share``/``limited_app_share``: each data segment
  stands for the time until the next one; it is *rwnd-limited* when the data outstanding
  after it plus one MSS exceeds the receiver's window, else *app-limited* when the next data
  came more than one srtt later and everything sent had been acknowledged by then (the
  sender had nothing to send), else *cwnd-limited* (sending as the ACK clock allows,
  including loss recovery and timeouts);
* ``drops``/``loss_rate``: the *packet* loss rate: simulator traces: ``drop`` events of the
  direction ÷ data segments sent; captures (no drops recorded): non-spurious retransmissions
  ÷ data segments;
* ``loss_event_rate``: ``loss_events`` ÷ data segments sent — the *loss-event* rate: all the
  packets lost in one window (one cwnd reduction) are one event;
* ``mathis_bps``/``padhye_bps``: the models of :mod:`tracekit.models` for ``loss_event_rate``
  (both models' ``p`` is the loss-event probability: Mathis et al. §2, Padhye et al. §2.1 — a
  burst of drops in one window costs one halving), the largest segment sent as MSS,
  ``rtt_mean_s`` and (Padhye) RTO = max(0.2 s, srtt + 4·rttvar) at the end and the largest
  advertised window; null without a loss event; ``window_limited_bps``: largest advertised
  window ÷ ``rtt_mean_s``;
* ``vantage_point``: ``sender``, ``receiver`` or ``middle`` (:func:`tracekit.analysis.vantage.detect`);
* ``capture``, ``connection``, ``views``, ``goodput_capture``: null here, filled by
  :func:`tracekit.analysis.connections.one_per_connection`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis import _dirstats
from tracekit.analysis import _flowstats as _np
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import KEYS, at, prepare

FLOW_KEYS = KEYS
RTO_MIN_S = 0.2


def with_seq_end(pk: pl.DataFrame) -> pl.DataFrame:
    """Add ``seq_end`` (seq + payload) and ``prev_max_end`` (highest end sent before, per direction)."""
    return pk.with_columns(seq_end=pl.col("seq") + pl.col("payload").cast(pl.Int64)).with_columns(
        prev_max_end=pl.col("seq_end").cum_max().shift(1).over(FLOW_KEYS)
    )


def basic(pk: pl.DataFrame, dirs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Counts, bytes, endpoints and window scaling per direction with payload (no sequence state).

    The per-packet rules run in the compiled core's per-direction accumulator
    (:func:`tracekit.analysis._dirstats.of_packets`, ``src/state/dirstats.rs``).

    Args:
        pk: Packets at the vantage point.
        dirs: :func:`tracekit.analysis._dirstats.of_packets` of ``pk``, if at hand.

    Returns:
        One row per (flow, dir) that carried payload: endpoints, start/end, packet and byte
        counts, ``unique_bytes``, ``mss``/``wscale``/``window_scaling``, throughput and goodput
        (and ``_smss``, the largest payload, ``_syn_t``, the connection's first SYN, and
        ``_hs_rtt``, its handshake RTT: :func:`tracekit.analysis.rtt.handshake`).
    """
    d = _dirstats.of_packets(pk) if dirs is None else dirs
    duration = pl.col("end") - pl.col("start")
    return d.filter(pl.col("data_bytes") > 0).select(
        *FLOW_KEYS, "src", "dst", "sport", "dport", "start", "end", "packets", "data_packets", "data_bytes",
        "wire_bytes", "unique_bytes", "mss", "wscale", "_smss", "window_scaling", "_syn_t",
        _hs_rtt="hs_rtt",
    ).with_columns(duration=duration).with_columns(
        unique_bytes=pl.col("unique_bytes").fill_null(0),
        throughput_bps=pl.when(pl.col("duration") > 0).then(pl.col("wire_bytes") * 8 / pl.col("duration")),
        goodput_bps=pl.when(pl.col("duration") > 0).then(pl.col("unique_bytes") * 8 / pl.col("duration")),
    )


def model_inputs(basic_df: pl.DataFrame, est: pl.DataFrame) -> pl.DataFrame:
    """What the models need beyond the flows columns: ``flow, dir, _smss, srtt, rttvar`` (at the end).

    Small (a row per direction), so :func:`tracekit.analysis.analyze` keeps it while the
    per-packet state is freed, and the models run once the loss events are known
    (:func:`with_cwnd_stats`).
    """
    last = est.sort("_i").group_by(KEYS).agg(pl.col("srtt").last(), pl.col("rttvar").last())
    return basic_df.select(*KEYS, "_smss").join(last, on=KEYS, how="left")


def _models(out: pl.DataFrame, inputs: pl.DataFrame) -> pl.DataFrame:
    """Loss-event rate, then Mathis, Padhye and window-limit predictions next to the measured goodput."""
    out = out.drop([c for c in ("_smss", "srtt", "rttvar") if c in out.columns]).join(
        inputs, on=KEYS, how="left", maintain_order="left")
    if "loss_events" not in out.columns:
        out = out.with_columns(loss_events=pl.lit(None, pl.Int64))
    out = out.with_columns(loss_event_rate=pl.when(pl.col("data_packets") > 0).then(
        pl.col("loss_events").cast(pl.Float64) / pl.col("data_packets")))
    try:
        from tracekit import models
    except ImportError:  # pragma: no cover - tracekit.models is part of the package
        return out.with_columns(mathis_bps=pl.lit(None, pl.Float64), padhye_bps=pl.lit(None, pl.Float64),
                                window_limited_bps=pl.lit(None, pl.Float64))
    p = out["loss_event_rate"].cast(pl.Float64).to_numpy()
    mss = out["_smss"].cast(pl.Float64).to_numpy()
    rtt = out["rtt_mean_s"].cast(pl.Float64).to_numpy()
    rto = out.select(pl.max_horizontal(pl.lit(RTO_MIN_S), pl.col("srtt") + 4 * pl.col("rttvar"))).to_series()
    wmax = out["max_rwnd_bytes"].cast(pl.Float64).to_numpy()
    with np.errstate(all="ignore"):
        ok = (p > 0) & (rtt > 0) & np.isfinite(p) & np.isfinite(rtt)
        ps, rs = np.where(ok, p, 0.5), np.where(ok, rtt, 1.0)
        ma = np.where(ok, models.mathis(ps, mss, rs), np.nan)
        wm = np.where(np.isfinite(wmax), wmax, np.nan)
        pa = np.where(ok & np.isfinite(rto.to_numpy()),
                      models.padhye(ps, mss, rs, np.nan_to_num(rto.to_numpy(), nan=1.0),
                                    wmax_bytes=np.where(np.isfinite(wm), wm, 1e12)), np.nan)
        wl = np.where(
            (rtt > 0) & np.isfinite(wm), models.window_limited(np.nan_to_num(wm), np.where(rtt > 0, rtt, 1.0)), np.nan
        )
    def clean(a: np.ndarray) -> pl.Series:
        return pl.Series(a, dtype=pl.Float64).fill_nan(None)

    return out.with_columns(mathis_bps=clean(ma), padhye_bps=clean(pa), window_limited_bps=clean(wl))


#: Column order of the flows frame.
COLUMNS = [
    "flow", "dir", "src", "sport", "dst", "dport", "vantage_point", "start", "end", "duration", "transfer_s",
    "handshake_s", "packets", "data_packets", "data_bytes", "unique_bytes", "delivered_bytes", "wire_bytes",
    "init_window_bytes", "init_window_segments", "retrans_packets", "retrans_bytes", "retrans_fast", "retrans_rto",
    "retrans_spurious", "dup_acks", "drops", "loss_rate", "loss_event_rate", "throughput_bps", "goodput_bps",
    "goodput_source", "mathis_bps", "padhye_bps",
    "window_limited_bps", "handshake_rtt_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s", "rtt_samples",
    "rtt_method", "flight_max_bytes", "flight_mean_bytes", "max_cwnd_bytes", "cwnd_source", "loss_events",
    "stall_count", "stall_time_s", "limited_cwnd_share", "limited_rwnd_share", "limited_app_share", "mss",
    "wscale", "window_scaling", "max_rwnd_bytes",
    # filled by tracekit.analysis.connections (one row per connection when several captures saw it)
    "capture", "connection", "views", "goodput_capture",
]


def flows(pk: pl.DataFrame, *, all_packets: pl.DataFrame | None = None, parts: dict[str, Any] | None = None
          ) -> pl.DataFrame:
    """Summarise every TCP connection direction that carried data (see the module docstring).

    Args:
        pk: Packets at the vantage point (:func:`tracekit.analysis.vantage.vantage`).
        all_packets: The trace's full packets frame (simulator ``drop`` events); ``pk`` when None.
        parts: Frames already computed by :func:`tracekit.analysis.analyze` — ``state``,
            ``rtt_samples``, ``retrans`` (with ``_i``), ``flight``, ``stalls``, ``cwnd_stats``,
            ``vantage``, ``smoothed`` (:func:`tracekit.analysis.rtt.smoothed` of the samples),
            ``basic`` (:func:`basic`, with the handshake RTT), ``inputs`` (:func:`model_inputs`)
            — each computed here when missing.

    Returns:
        One row per (flow, dir) with payload, columns in :data:`COLUMNS` order.
    """
    from tracekit.analysis import retrans as _re

    parts = dict(parts or {})
    out = parts.get("basic")
    out = basic(pk) if out is None else out
    st = parts.get("state")
    st = prepare(pk) if st is None else st
    if out.is_empty() or st.is_empty():
        return _finish(out)
    p = _parts(pk, st, parts)
    rs, est = p["rtt_samples"], p["smoothed"]
    out = (
        out.rename({"_hs_rtt": "handshake_rtt_s"})
        .join(_np.stats(st, est), on=KEYS, how="left")
        .join(_summary(st, rs, p["retrans"], p["flight"], p["stalls"]), on=KEYS, how="left")
        .join(_re.dup_acks(st), on=KEYS, how="left")
        .join(p["vantage"], on="flow", how="left")
        .with_columns(
            pl.col("retrans_packets", "retrans_bytes", "retrans_fast", "retrans_rto", "retrans_spurious",
                   "stall_count").fill_null(0),
            pl.col("stall_time_s").fill_null(0.0),
            pl.col("dup_acks").fill_null(0).cast(pl.Int64),
        )
    )
    cs = parts.get("cwnd_stats")
    if cs is not None and cs.height:
        out = out.join(cs.select([c for c in ("flow", "dir", "max_cwnd_bytes", "cwnd_source", "loss_events")
                                  if c in cs.columns]), on=KEYS, how="left")
    allp = pk if all_packets is None else all_packets
    out = _loss_rate(_transfer_and_goodput(out, allp), allp)
    inputs = parts.get("inputs")
    return _finish(_models(out, model_inputs(out, est) if inputs is None else inputs))


def _parts(pk: pl.DataFrame, st: pl.DataFrame, parts: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """The other analyses' frames :func:`flows` summarises: those in ``parts``, the others computed here.

    Returns:
        ``rtt_samples`` (with ``_i``), ``retrans`` (with ``_i``), ``flight``, ``stalls``,
        ``vantage`` and ``smoothed``.
    """
    from tracekit.analysis import retrans as _re
    from tracekit.analysis import rtt as _rtt
    from tracekit.analysis.flight import flight as _flight
    from tracekit.analysis.stalls import stalls as _stalls
    from tracekit.analysis.vantage import detect

    rs = parts.get("rtt_samples")
    rs = _rtt.samples(st) if rs is None else rs
    rt = parts.get("retrans")
    rt = _re.classify(st, rs) if rt is None else rt
    fl = parts.get("flight")
    fl = _flight(pk, state=st) if fl is None else fl
    sl = parts.get("stalls")
    sl = _stalls(pk, state=st, rtt_samples_df=rs, retrans=rt) if sl is None else sl
    vp = parts.get("vantage")
    vp = detect(pk, rs.drop("_i")) if vp is None else vp
    est = parts.get("smoothed")
    est = _rtt.smoothed(rs) if est is None else est
    return {"rtt_samples": rs, "retrans": rt, "flight": fl, "stalls": sl, "vantage": vp, "smoothed": est}


#: The retransmission kinds' codes in the core's ``flow_summary`` (``src/state/flowstats/summary.rs``).
_KIND_CODES = {"fast": 1, "rto": 2, "spurious": 3}


def _keys(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """A frame's ``flow`` (uint32) and ``dir`` (int8) columns, as the core's ``flow_summary`` takes them."""
    return df["flow"].cast(pl.UInt32).to_numpy(), df["dir"].cast(pl.Int8).to_numpy()


def _summary(st: pl.DataFrame, rs: pl.DataFrame, rt: pl.DataFrame, fl: pl.DataFrame, sl: pl.DataFrame
             ) -> pl.DataFrame:
    """Per direction the RTT, retransmission, flight and stall columns, in one core call.

    The per-direction accumulators are ``src/state/flowstats/summary.rs``: RTT samples above
    0 s, the ``seq`` ones where there are any (else ``ts``: ``rtt_method``), their min, mean,
    median and 95th percentile (polars' linear interpolation); retransmissions (only the bytes
    below the highest byte sent before count as re-sent, Wireshark's rule) by kind; the max and
    mean bytes in flight; the stalls' count and time.
    """
    # the part of each retransmission that had been sent before: up to the highest end sent
    # (``nxt``) and the data end of the segment
    over = (pl.min_horizontal(at(st, rt["_i"], "dend"), at(st, rt["_i"], "nxt")) - rt["seq"]).clip(lower_bound=0)
    rt_bytes = rt.select(b=over.fill_null(pl.col("len")).cast(pl.Int64))["b"].to_numpy()
    kind = rt["kind"].replace_strict(_KIND_CODES, default=0, return_dtype=pl.UInt8).to_numpy()
    d = _core.flow_summary(
        _keys(rs), rs["rtt_s"].cast(pl.Float64).fill_null(np.nan).to_numpy(), (rs["method"] == "seq").to_numpy(),
        _keys(rt), rt_bytes, kind,
        _keys(fl), fl["flight_bytes"].cast(pl.Int64).fill_null(MISSING).to_numpy(),
        _keys(sl), sl["duration"].cast(pl.Float64).to_numpy())
    key = d["key"]
    out = pl.DataFrame({
        "flow": pl.Series(key >> 1, dtype=pl.UInt32), "dir": pl.Series(key & 1, dtype=pl.Int8),
        **{f"{c}_s": d[c] for c in ("rtt_min", "rtt_mean", "rtt_p50", "rtt_p95")},
        "rtt_samples": d["rtt_n"], "_seq": d["rtt_seq"],
        "retrans_packets": d["retrans"], "retrans_bytes": d["retrans_bytes"], "retrans_fast": d["fast"],
        "retrans_rto": d["rto"], "retrans_spurious": d["spurious"],
        "flight_max_bytes": d["flight_max"], "flight_mean_bytes": d["flight_mean"],
        "stall_count": d["stalls"], "stall_time_s": d["stall_time"],
    })
    # the core's stand-ins as nulls: no RTT sample above 0, no flight value
    has_rtt, has_flight = pl.col("rtt_samples") > 0, pl.col("flight_max_bytes") != MISSING
    return out.with_columns(
        *[pl.when(has_rtt).then(pl.col(f"rtt_{q}_s")) for q in ("min", "mean", "p50", "p95")],
        pl.when(has_rtt).then(pl.col("rtt_samples")),
        rtt_method=pl.when(has_rtt).then(pl.when(pl.col("_seq")).then(pl.lit("seq")).otherwise(pl.lit("ts"))),
        flight_max_bytes=pl.when(has_flight).then(pl.col("flight_max_bytes")),
        flight_mean_bytes=pl.when(has_flight).then(pl.col("flight_mean_bytes")),
    ).drop("_seq")


def _loss_rate(out: pl.DataFrame, allp: pl.DataFrame) -> pl.DataFrame:
    """Add ``drops`` and ``loss_rate``: a simulator's drop events, else (a capture) non-spurious retransmissions."""
    sim = allp.height > 0 and bool((allp["event"] != "capture").any())
    if sim:
        drops = allp.filter(pl.col("event") == "drop").group_by(KEYS).agg(pl.len().cast(pl.Int64).alias("drops"))
        out = out.join(drops, on=KEYS, how="left").with_columns(pl.col("drops").fill_null(0))
        lost = pl.col("drops")
    else:
        out = out.with_columns(drops=pl.lit(None, pl.Int64))
        lost = pl.col("retrans_packets") - pl.col("retrans_spurious")
    return out.with_columns(loss_rate=pl.when(pl.col("data_packets") > 0).then(lost / pl.col("data_packets")))


def _received(allp: pl.DataFrame) -> pl.DataFrame:
    """``flow, dir, _rx_bytes, _rx_t``: unique payload the destination node received, and when the last came.

    Simulator traces only: receive events (ns-2 ``r``) on a link into the node the packet is
    addressed to (its ``dst`` is that node's id, as ns-2 writes addresses ``node.port``).
    """
    empty = pl.DataFrame(schema={"flow": pl.UInt32, "dir": pl.Int8, "_rx_bytes": pl.Int64, "_rx_t": pl.Float64})
    if allp.is_empty() or not (allp["event"] == "recv").any():
        return empty
    rx = allp.lazy().filter(
        (pl.col("event") == "recv") & (pl.col("payload") > 0) & pl.col("flow").is_not_null()
        & pl.col("dir").is_not_null() & pl.col("seq").is_not_null()
        & (pl.col("node") == pl.col("dst").cast(pl.String))
    ).select(*KEYS, "time", "seq", end=pl.col("seq") + pl.col("payload").cast(pl.Int64)).collect()
    if rx.is_empty():
        return empty
    # each byte range once, at its first arrival (a retransmission that fills a hole arrives after
    # higher data but delivers new bytes); the union of the ranges in sequence order
    rx = rx.group_by(*KEYS, "seq", "end").agg(pl.col("time").min()).sort(*KEYS, "seq", "end").with_columns(
        _before=pl.col("end").cum_max().shift(1).over(KEYS))
    new = (pl.col("end") - pl.max_horizontal("seq", pl.col("_before").fill_null(pl.col("seq")))).clip(lower_bound=0)
    rx = rx.with_columns(_new=new)
    return rx.group_by(KEYS).agg(pl.col("_new").sum().cast(pl.Int64).alias("_rx_bytes"),
                                 pl.col("time").filter(pl.col("_new") > 0).max().alias("_rx_t"))


def _transfer_and_goodput(out: pl.DataFrame, allp: pl.DataFrame) -> pl.DataFrame:
    """``transfer_s``, ``handshake_s``, ``delivered_bytes``, ``goodput_source`` and ``goodput_bps``.

    Definitions: the module docstring. The goodput counts what the receiver got, not the
    highest byte sent: bytes sent but lost or still in flight at the end were never delivered,
    so a sender-side count could exceed the bottleneck's rate.
    """
    out = out.join(_received(allp), on=KEYS, how="left")
    syn = pl.col("_syn_t")
    has_syn = syn.is_not_null() & (syn <= pl.col("_data_t0"))
    opened = pl.when(has_syn).then(syn).otherwise(pl.col("_data_t0"))
    ack_end = pl.coalesce("_acked_t", "_ack_t")
    source = (pl.when(pl.col("_rx_bytes").is_not_null()).then(pl.lit("receive"))
              .when(pl.col("_ack_bytes").is_not_null()).then(pl.lit("ack")).otherwise(pl.lit("sent")))
    out = out.with_columns(
        transfer_s=pl.col("_acked_t") - opened,
        handshake_s=pl.when(has_syn).then(pl.col("_data_t0") - syn),
        goodput_source=source,
        delivered_bytes=pl.coalesce("_rx_bytes", "_ack_bytes", "unique_bytes").cast(pl.Int64),
        _got_t=pl.coalesce("_rx_t", ack_end),
    )
    span = pl.col("_got_t") - pl.col("start")
    return out.with_columns(goodput_bps=pl.when(pl.col("goodput_source") == "sent").then(pl.col("goodput_bps"))
                            .when(span > 0).then(pl.col("delivered_bytes") * 8 / span))


def with_cwnd_stats(out: pl.DataFrame, cs: pl.DataFrame | None, inputs: pl.DataFrame | None = None) -> pl.DataFrame:
    """A flows frame computed without ``cwnd_stats``, with the cwnd columns filled from them.

    The same frame as passing ``parts["cwnd_stats"]`` to :func:`flows`, so that
    :func:`tracekit.analysis.analyze` can free the per-packet state before the cwnd analysis
    runs instead of holding both at once.

    Args:
        out: :func:`flows` output for a trace with TCP state.
        cs: :func:`tracekit.analysis.cwnd.flow_stats` output.
        inputs: :func:`model_inputs` of the trace (the models need the loss events; None:
            the model columns stay as they are).

    Returns:
        ``out`` with ``max_cwnd_bytes``, ``cwnd_source`` and ``loss_events`` from ``cs``, and
        ``loss_event_rate`` and the models recomputed from them.
    """
    if cs is None or not cs.height or out.is_empty():
        return out
    cols = [c for c in ("max_cwnd_bytes", "cwnd_source", "loss_events") if c in cs.columns]
    out = out.drop(cols).join(cs.select("flow", "dir", *cols), on=KEYS, how="left")
    if inputs is not None:
        out = _models(out.drop("loss_event_rate", "mathis_bps", "padhye_bps", "window_limited_bps"), inputs)
    return _finish(out)


def _finish(out: pl.DataFrame) -> pl.DataFrame:
    """Add missing columns as nulls and put them in :data:`COLUMNS` order."""
    types: dict[str, pl.DataType] = {
        "cwnd_source": pl.String(),
        "rtt_method": pl.String(),
        "vantage_point": pl.String(),
        "window_scaling": pl.Boolean(),
        "src": pl.String(),
        "dst": pl.String(),
        "goodput_source": pl.String(),
        "delivered_bytes": pl.Int64(),
        "capture": pl.String(),
        "goodput_capture": pl.String(),
        "connection": pl.Int64(),
        "views": pl.Int64(),
    }
    types.update({c: pl.Int64() for c in COLUMNS if c.endswith(("_packets", "_segments", "_count", "_samples"))
                  or c.startswith("retrans_") or c in ("loss_events", "drops", "dup_acks")})
    cols = [pl.col(c) if c in out.columns else pl.lit(None, types.get(c, pl.Float64())).alias(c) for c in COLUMNS]
    return out.select(cols).sort(KEYS)
