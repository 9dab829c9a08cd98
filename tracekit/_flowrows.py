"""The flows summary's per-direction arithmetic, in plain Python over one record per direction.

A *record* is a ``dict`` of one connection direction's accumulated values (the columns of
:mod:`tracekit.analysis.flows`, plus the inputs named with a leading ``_``); ``None`` stands
for a missing value. Units: bytes, seconds, bits per second. No polars and no numpy here, so
that the summary can be computed from per-direction accumulators alone (issue 21);
:func:`tracekit.analysis.flows.directions` builds the records and
:func:`tracekit.analysis.flows.finish` makes the frame; :mod:`tracekit._streamflows` builds the
same records from ``_core.stream_summary``. The definitions are the flows module's docstring
(docs/analysis.md has the full list). The rest of a row of ``analyze --json``'s ``flows`` is
here too, for both paths: the column order (:data:`COLUMNS`), the labels of a connection one
capture saw (:func:`capture_name`, :func:`one_view`), the lab units (:func:`lab_units`) and the
cwnd reductions in congestion avoidance (:func:`reductions_in_ca`, :func:`with_reductions`).
The module sits beside ``tracekit/analysis/``, not in it: importing that package loads polars.

Every rule here reproduces the former polars expressions bit for bit: an integer count is
divided as a float (``int / float`` and ``int / int`` are correctly rounded in Python as in
polars for counts below 2^53), and a comparison with a missing value is false.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tracekit import models

#: One connection direction's values by column name.
Row = dict[str, Any]

#: Column order of the flows frame (:mod:`tracekit.analysis.flows`).
COLUMNS = [
    "flow", "dir", "src", "sport", "dst", "dport", "vantage_point", "start", "end", "duration", "transfer_s",
    "handshake_s", "data_start", "packets", "data_packets", "data_bytes", "unique_bytes", "delivered_bytes",
    "wire_bytes", "init_window_bytes", "init_window_segments", "retrans_packets", "retrans_bytes", "retrans_fast",
    "retrans_rto", "retrans_spurious", "dup_acks", "drops", "loss_rate", "loss_event_rate", "throughput_bps",
    "goodput_bps", "goodput_source", "mathis_bps", "padhye_bps",
    "window_limited_bps", "handshake_rtt_s", "rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s", "rtt_samples",
    "rtt_method", "flight_max_bytes", "flight_mean_bytes", "max_cwnd_bytes", "cwnd_source", "loss_events",
    "stall_count", "stall_time_s", "limited_cwnd_share", "limited_rwnd_share", "limited_app_share", "mss",
    "wscale", "window_scaling", "max_rwnd_bytes",
    # filled by tracekit.analysis.connections (one row per connection when several captures saw it)
    "capture", "connection", "views", "goodput_capture",
]

#: The smallest RTO the Padhye model is given (RFC 6298 §2.4 rounds up to 1 s; Linux uses 200 ms).
RTO_MIN_S = 0.2

#: Counts that are 0 (not missing) for a direction without any (a direction the core's summary
#: has no entry for gets None).
ZERO_COUNTS = ("retrans_packets", "retrans_bytes", "retrans_fast", "retrans_rto", "retrans_spurious", "stall_count",
               "dup_acks")


def rate_bps(nbytes: int | None, seconds: float | None) -> float | None:
    """``nbytes × 8 ÷ seconds`` in bits per second; None without bytes or unless ``seconds > 0``."""
    if nbytes is None or seconds is None or not seconds > 0:
        return None
    return nbytes * 8 / seconds


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _first(*values: Any) -> Any:
    """The first value that is not None (SQL ``coalesce``)."""
    for v in values:
        if v is not None:
            return v
    return None


def rates(r: Row) -> Row:
    """``duration`` (end − start), ``throughput_bps`` (wire bytes) and ``goodput_bps`` (unique bytes) over it.

    ``unique_bytes`` is 0 when not known. The goodput here is the ``sent`` one, replaced by
    :func:`transfer_and_goodput` where the receiver's side is known.
    """
    r["duration"] = d = _sub(r["end"], r["start"])
    r["unique_bytes"] = _first(r.get("unique_bytes"), 0)
    r["throughput_bps"] = rate_bps(r["wire_bytes"], d)
    r["goodput_bps"] = rate_bps(r["unique_bytes"], d)
    return r


def transfer_and_goodput(r: Row) -> Row:
    """``transfer_s``, ``handshake_s``, ``data_start``, ``goodput_source``, ``delivered_bytes`` and ``goodput_bps``.

    Inputs: ``_syn_t`` (the connection's first SYN), ``_data_t0`` (the direction's first data
    byte), ``_acked_t`` (the first ACK of its last data byte), ``_ack_t``/``_ack_bytes`` (the
    highest cumulative ACK of data and the bytes it covers), ``_rx_t``/``_rx_bytes`` (a
    simulator's receive events at the destination), ``unique_bytes``, ``start`` and the ``sent``
    goodput of :func:`rates`. The goodput counts what the receiver got, over the time until the
    last delivery: bytes lost or still in flight at the end were never delivered.
    """
    syn, t0 = r.get("_syn_t"), r.get("_data_t0")
    has_syn = syn is not None and t0 is not None and syn <= t0
    r["transfer_s"] = _sub(r.get("_acked_t"), syn if has_syn else t0)
    r["handshake_s"] = _sub(t0, syn) if has_syn else None
    r["data_start"] = t0
    rx, ack = r.get("_rx_bytes"), r.get("_ack_bytes")
    r["goodput_source"] = "receive" if rx is not None else ("ack" if ack is not None else "sent")
    r["delivered_bytes"] = _first(rx, ack, r["unique_bytes"])
    if r["goodput_source"] != "sent":
        got_t = _first(r.get("_rx_t"), r.get("_acked_t"), r.get("_ack_t"))
        r["goodput_bps"] = rate_bps(r["delivered_bytes"], _sub(got_t, r["start"]))
    return r


def _per_packet(n: int | None, packets: int | None) -> float | None:
    return None if n is None or packets is None or not packets > 0 else float(n) / float(packets)


def loss_rate(r: Row, *, simulator: bool) -> Row:
    """``drops`` and ``loss_rate``: lost data segments ÷ data segments sent.

    Lost: a simulator's ``drop`` events of the direction (``drops``, 0 when none); in a capture
    (no drops recorded, ``drops`` None) the non-spurious retransmissions.
    """
    if simulator:
        r["drops"] = lost = _first(r.get("drops"), 0)
    else:
        r["drops"] = None
        lost = r["retrans_packets"] - r["retrans_spurious"]
    r["loss_rate"] = _per_packet(lost, r["data_packets"])
    return r


def loss_event_rate(r: Row) -> float | None:
    """``loss_events`` ÷ data segments sent: the loss-*event* rate (one cwnd reduction, one event)."""
    return _per_packet(r.get("loss_events"), r["data_packets"])


def rto_s(srtt: float | None, rttvar: float | None) -> float:
    """The RTO at the end: ``max(0.2 s, srtt + 4·rttvar)`` (RFC 6298 §2.3); 0.2 s without an estimate."""
    v = None if srtt is None or rttvar is None else srtt + 4 * rttvar
    return v if v is not None and v > RTO_MIN_S else RTO_MIN_S


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _number(x: float | None) -> float | None:
    """None for a missing or NaN result."""
    return None if x is None or math.isnan(x) else float(x)


def model_rates(p: float | None, mss: float | None, rtt: float | None, rto: float, wmax: float | None
                ) -> tuple[float | None, float | None, float | None]:
    """``mathis_bps, padhye_bps, window_limited_bps`` of one direction (:mod:`tracekit.models`).

    Args:
        p: The loss-event rate (both models' ``p``: Mathis et al. §2, Padhye et al. §2.1).
        mss: The largest segment sent, bytes.
        rtt: The mean RTT, seconds.
        rto: :func:`rto_s`.
        wmax: The largest advertised window, bytes.

    Returns:
        Mathis and Padhye (None unless ``p`` and ``rtt`` are above 0; Padhye's window 10^12
        bytes when none is known) and the window limit ``wmax × 8 ÷ rtt`` (None without both).
    """
    m = math.nan if mss is None else float(mss)
    ok = _finite(p) and _finite(rtt) and p > 0 and rtt > 0  # type: ignore[operator]
    w = float(wmax) if wmax is not None and math.isfinite(wmax) else None
    mathis = models.mathis(p, m, rtt) if ok else None
    padhye = models.padhye(p, m, rtt, rto, wmax_bytes=1e12 if w is None else w) if ok and math.isfinite(rto) \
        else None
    limited = models.window_limited(w, rtt) if w is not None and rtt is not None and rtt > 0 else None
    return _number(mathis), _number(padhye), _number(limited)


def with_models(rows: Iterable[Row]) -> list[Row]:
    """``loss_event_rate``, ``mathis_bps``, ``padhye_bps`` and ``window_limited_bps`` of every record.

    Inputs: ``loss_events``, ``data_packets``, ``_smss``, ``rtt_mean_s``, ``srtt``/``rttvar`` (the
    smoothed RTT at the end) and ``max_rwnd_bytes``. Runs once per batch of directions, when the
    loss events are known, after the answers that cannot be read away from the sender are left
    out (:func:`far_window`, :func:`sender_limits`). None at the receiver, whose RTT samples are
    its own ACK delays.
    """
    out = list(rows)
    for r in out:
        sender_limits(far_window(r))
        r["loss_event_rate"] = p = loss_event_rate(r)
        if r.get("vantage_point") == "receiver":
            # the RTT samples there time the receiver's own ACKs (µs), not the path's round trip: Mathis
            # predicted 28.2 Gbit/s for a 1.14 Gbit/s transfer from a 3 µs "RTT" (docs/analysis.md)
            r["mathis_bps"] = r["padhye_bps"] = r["window_limited_bps"] = None
            continue
        r["mathis_bps"], r["padhye_bps"], r["window_limited_bps"] = model_rates(
            p, r.get("_smss"), r.get("rtt_mean_s"), rto_s(r.get("srtt"), r.get("rttvar")), r.get("max_rwnd_bytes"))
    return out


#: Vantage points whose cwnd estimate is not the sender's window (the account's ``explain_rules.FAR`` reads
#: these and names them).
FAR = ("middle", "receiver")


def far_window(r: Row) -> Row:
    """``max_cwnd_bytes`` left out (None) where it would be an estimate made away from the sender.

    The estimate reads the window as what is outstanding after an ACK releases segments; away from
    the sender the capture sees those segments and ACKs a part of a round trip late, so the flight
    it reads is a fraction of the window: ns-3's ``dumbbell10`` flow 0 estimates 34,752 B at its
    sender, 14,480 B and 5,792 B at the two routers and 5,792 B at its receiver. A tool's own cwnd
    trace (``cwnd_source`` ``trace``) is the sender's wherever the packets were seen.
    """
    if r.get("vantage_point") in FAR and r.get("cwnd_source") == "estimate":
        r["max_cwnd_bytes"] = None
    return r


def with_zero_counts(r: Row) -> Row:
    """The :data:`ZERO_COUNTS` and ``stall_time_s`` as 0 where the core had no entry for the direction."""
    for c in ZERO_COUNTS:
        if r.get(c) is None:
            r[c] = 0
    if r.get("stall_time_s") is None:
        r["stall_time_s"] = 0.0
    return r


#: The time shares of what held a sender back (:mod:`tracekit.analysis.flows`).
LIMIT_SHARES = ("limited_cwnd_share", "limited_rwnd_share", "limited_app_share")


def sender_limits(r: Row) -> Row:
    """The limit shares left out (None) where the packets were seen at the receiver.

    Each data segment's time is judged against the sender's window (the bytes unacknowledged plus
    one segment) and its ACK clock (a gap longer than the smoothed RTT with everything
    acknowledged: nothing to send). At the receiver the unacknowledged bytes are what arrived and
    is not ACKed yet, not what the sender has in flight, and the RTT samples time the receiver's
    own ACKs (microseconds), so every pause between arrivals reads as "nothing to send": the same
    bulk transfers, 99.6–99.9 % cwnd-limited in the sender's capture, read 45–54 % application-limited
    in the receiver's (docs/analysis.md).
    """
    if r.get("vantage_point") == "receiver":
        for c in LIMIT_SHARES:
            r[c] = None
    return r


def derived(r: Row, *, simulator: bool) -> Row:
    """Every column of one record computed from its accumulated values, the models excepted.

    :func:`rates`, :func:`with_zero_counts`, :func:`transfer_and_goodput`, then :func:`loss_rate`
    (:func:`with_models` runs once the loss events are known).
    """
    return loss_rate(transfer_and_goodput(with_zero_counts(rates(r))), simulator=simulator)


def capture_name(paths: Iterable[object]) -> str | None:
    """The ``capture`` of a trace read from ``paths`` (its ``meta["paths"]``): the file names, comma-separated."""
    return ", ".join(os.path.basename(str(p)) or str(p) for p in paths) or None


def one_view(flow: int, capture: str | None) -> tuple[int, int, str | None]:
    """``connection``, ``views`` and ``goodput_capture`` of a row when one capture saw every connection.

    The connection is the flow, seen once, its goodput its own capture's
    (:func:`tracekit.analysis.connections.one_per_connection` matches several captures' rows).
    """
    return flow, 1, capture


#: Columns :func:`lab_units` adds, after :data:`COLUMNS`.
LAB_COLUMNS = ("max_cwnd_packets", "data_pps")


def lab_segment(meta: dict[str, Any]) -> Any:
    """The segment size the lab units divide by (``meta["segment_size"]``: ns-2, or a reader that knows it)."""
    return meta.get("segment_size") or None


def lab_units(r: Row, segment_size: float) -> Row:
    """``max_cwnd_packets`` (the largest cwnd ÷ the segment size) and ``data_pps``.

    ``data_pps`` = data segments sent (retransmissions included, as a monitor at the link counts
    them) ÷ the direction's duration (None unless above 0); the lab's bit/s with headers is
    ``throughput_bps``, without them ``goodput_bps`` (payload, each byte once).
    """
    cwnd, n, d = r.get("max_cwnd_bytes"), r.get("data_packets"), r.get("duration")
    r["max_cwnd_packets"] = None if cwnd is None else float(cwnd) / float(segment_size)
    r["data_pps"] = None if n is None or d is None or not d > 0 else float(n) / d
    return r


def reductions_in_ca(rows: int, losses: Sequence[float], ca_start: float | None, end: float | None) -> int | None:
    """cwnd reductions (loss events) once congestion avoidance has begun, up to ``end`` (the last data).

    Args:
        rows: How many rows the direction's cwnd series has (0: none, and the answer is None).
        losses: The series' reduction times.
        ca_start: The first congestion-avoidance row's time (None: never, and the answer is 0).
        end: The direction's last data; None: no bound.

    Returns:
        The reductions with ``ca_start < time <= end`` (:func:`tracekit.explain.cwnd_reductions`
        says why: docs/explain.md).
    """
    if rows == 0:
        return None
    if ca_start is None:
        return 0
    stop = math.inf if end is None else end
    return sum(1 for t in losses if ca_start < t <= stop)


def with_reductions(r: Row, count: Callable[[int, int, float | None], int | None]) -> Row:
    """``cwnd_reductions`` of an ``analyze --json`` flows row: ``count(flow, dir, end)`` where the
    direction sent unique bytes, else None."""
    sent = (r.get("unique_bytes") or 0) > 0
    r["cwnd_reductions"] = count(int(r["flow"]), int(r["dir"]), r.get("end")) if sent else None
    return r
