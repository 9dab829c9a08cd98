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
* ``handshake_rtt_s``: the last SYN → the initiator's ACK of the SYN-ACK (Wireshark's
  ``tcp.analysis.initial_rtt``, from its most recent SYN), on both directions' rows;
* ``transfer_s``: the connection's first SYN (the first data byte of the direction where no
  SYN was seen) → the first ACK of the direction's last data byte, as an FTP download time
  is measured; null when that ACK was not seen;
* ``handshake_s``: the part of ``transfer_s`` before data flows: first SYN → the direction's
  first data byte (the handshake, plus the request where the peer asks first); null without SYN;
* ``data_start``: when the direction's first data byte was sent (``start`` is its first packet,
  a SYN where one was seen: the first flight comes a round trip later, or a timeout later where
  the SYN was lost);
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

from dataclasses import dataclass
from typing import Any

import polars as pl

from tracekit import _flowrows
from tracekit.analysis import _dirstats
from tracekit.analysis import _flowdirs as _fd
from tracekit.analysis import _flowstats as _np
from tracekit.analysis._state import KEYS, prepare

FLOW_KEYS = KEYS


def with_seq_end(pk: pl.DataFrame) -> pl.DataFrame:
    """Add ``seq_end`` (seq + payload) and ``prev_max_end`` (highest end sent before, per direction)."""
    return pk.with_columns(seq_end=pl.col("seq") + pl.col("payload").cast(pl.Int64)).with_columns(
        prev_max_end=pl.col("seq_end").cum_max().shift(1).over(FLOW_KEYS)
    )


#: Column order of the flows frame.
COLUMNS = _flowrows.COLUMNS


@dataclass
class Directions:
    """The flows rows before the cwnd analysis: one record per direction that carried data.

    Attributes:
        rows: One :data:`tracekit._flowrows.Row` per (flow, dir), the inputs of the
            models (``_smss``, ``srtt``, ``rttvar``) among their values.
        schema: The polars type of each column the records carry.
        full: The connection state was there, so the summary's columns were computed and
            :func:`finish` applies the cwnd stats and the models; False: counts and rates only.
    """

    rows: list[_flowrows.Row]
    schema: dict[str, pl.DataType]
    full: bool


def directions(pk: pl.DataFrame, *, all_packets: pl.DataFrame | None = None, parts: dict[str, Any] | None = None
               ) -> Directions:
    """One record per direction with payload, every flows column but the cwnd ones and the models.

    The per-packet rules ran in the compiled core's per-direction accumulators
    (``src/state/dirstats.rs``: counts, bytes, endpoints, window scaling, the handshake RTT;
    ``src/state/flowstats``: ACK timing, windows, limits, and RTT, retransmission, flight and
    stall summaries; ``src/state/flowdirs.rs``: a simulator's received bytes and drops, the
    duplicate ACKs, the last smoothed RTT) return per-direction arrays, which
    :mod:`tracekit.analysis._flowdirs` puts into one record per direction by position (no
    join); the arithmetic on them is :mod:`tracekit._flowrows`, in plain Python.

    Args:
        pk: Packets at the vantage point (:func:`tracekit.analysis.vantage.vantage`).
        all_packets: The trace's full packets frame (simulator ``drop`` and receive events); ``pk`` when None.
        parts: Frames already computed by :func:`tracekit.analysis.analyze` — ``dirstats``
            (:func:`tracekit.analysis._dirstats.of_packets`), ``state``, ``rtt_samples``,
            ``retrans`` (with ``_i``), ``flight``, ``stalls``, ``vantage``, ``smoothed``
            (:func:`tracekit.analysis.rtt.smoothed` of the samples) — each computed here when missing.

    Returns:
        The :class:`Directions`, for :func:`finish`.
    """

    parts = dict(parts or {})
    dirs = parts.get("dirstats")
    rows, schema = _fd.base(_dirstats.of_packets(pk) if dirs is None else dirs)
    schema.update(_COMPUTED)
    st = parts.get("state")
    st = prepare(pk) if st is None else st
    if not rows or st.is_empty():
        return Directions([_flowrows.rates(r) for r in rows], schema, full=False)
    p = _parts(pk, st, parts)
    allp = pk if all_packets is None else all_packets
    simulator = allp.height > 0 and bool((allp["event"] != "capture").any())
    # the core's per-direction outputs, into the records by position
    key, cols = _np.stats(st, p["smoothed"])
    _fd.put(rows, key, cols)
    schema.update(_np.SCHEMA, max_rwnd_bytes=st["win"].dtype)
    key, cols, types = _fd.summary(st, p["rtt_samples"], p["retrans"], p["flight"], p["stalls"])
    _fd.put(rows, key, cols)
    schema.update(types)
    vp = p["vantage"]
    at_flow = dict(zip(vp["flow"].to_list(), vp["vantage_point"].to_list(), strict=True))
    for r in rows:
        r["vantage_point"] = at_flow.get(r["flow"])
    _fd.put_aligned(rows, _fd.core_values(rows, allp, st, p["smoothed"], simulator=simulator))
    rows = [_flowrows.derived(r, simulator=simulator) for r in rows]
    return Directions(rows, schema, full=True)


def finish(d: Directions, cwnd_stats: pl.DataFrame | None = None) -> pl.DataFrame:
    """The flows frame: ``d`` with the cwnd columns and the models, in :data:`COLUMNS` order.

    Args:
        d: :func:`directions`.
        cwnd_stats: :func:`tracekit.analysis.cwnd.flow_stats` (``max_cwnd_bytes``,
            ``cwnd_source``, ``loss_events`` per direction); None: those columns stay null.

    Returns:
        One row per (flow, dir) with payload. The loss-event rate and the models
        (:func:`tracekit._flowrows.with_models`) run here, once for all of ``d``.
    """
    schema, rows = dict(d.schema), d.rows
    if d.full:
        if cwnd_stats is not None and cwnd_stats.height:
            cols = [c for c in _CWND_COLUMNS if c in cwnd_stats.columns]
            schema.update({c: cwnd_stats.schema[c] for c in cols})
            by_key = {(r[0], r[1]): r[2:] for r in cwnd_stats.select(*KEYS, *cols).iter_rows()}
            none = (None,) * len(cols)
            for r in rows:
                r.update(zip(cols, by_key.get((r["flow"], r["dir"]), none), strict=True))
        rows = _flowrows.with_models(rows)
    return pl.DataFrame([pl.Series(c, [r.get(c) for r in rows], dtype=schema.get(c) or _TYPES.get(c, pl.Float64()))
                         for c in COLUMNS]).sort(KEYS)


def columns(d: Directions, *names: str) -> pl.DataFrame:
    """``flow, dir`` and the named columns of :func:`directions`' records, by (flow, dir)."""
    cols = [*KEYS, *names]
    return pl.DataFrame([pl.Series(c, [r.get(c) for r in d.rows], dtype=d.schema.get(c) or _TYPES.get(c, pl.Float64()))
                         for c in cols]).sort(KEYS)


def flows(pk: pl.DataFrame, *, all_packets: pl.DataFrame | None = None, parts: dict[str, Any] | None = None
          ) -> pl.DataFrame:
    """Summarise every TCP connection direction that carried data (see the module docstring).

    :func:`directions`, then :func:`finish` with ``parts["cwnd_stats"]`` (:func:`tracekit.analysis.cwnd.flow_stats`).

    Returns:
        One row per (flow, dir) with payload, columns in :data:`COLUMNS` order.
    """
    return finish(directions(pk, all_packets=all_packets, parts=parts), (parts or {}).get("cwnd_stats"))


#: The columns :func:`finish` takes from the cwnd stats.
_CWND_COLUMNS = ("max_cwnd_bytes", "cwnd_source", "loss_events")

#: The type of each column :func:`directions` does not carry (Float64 for the others).
_TYPES: dict[str, pl.DataType] = {
    **{c: pl.String() for c in ("cwnd_source", "rtt_method", "vantage_point", "src", "dst", "goodput_source",
                                 "capture", "goodput_capture")},
    "window_scaling": pl.Boolean(), "connection": pl.Int64(), "views": pl.Int64(),
    "delivered_bytes": pl.Int64(),
    **{c: pl.Int64() for c in COLUMNS if c.endswith(("_packets", "_segments", "_count", "_samples"))
       or c.startswith("retrans_") or c in ("loss_events", "drops", "dup_acks")},
}


#: The types of the columns :mod:`._flowrows` computes.
_COMPUTED: dict[str, pl.DataType] = {
    **{c: pl.Float64() for c in ("duration", "throughput_bps", "goodput_bps", "transfer_s", "handshake_s", "data_start",
                                 "loss_rate", "loss_event_rate", "mathis_bps", "padhye_bps", "window_limited_bps")},
    "goodput_source": pl.String(), "delivered_bytes": pl.Int64(), "drops": pl.Int64(), "dup_acks": pl.Int64(),
}


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
