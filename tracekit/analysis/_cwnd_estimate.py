"""The congestion-window estimate from packets (the ``source = "estimate"`` rows of :mod:`.cwnd`).

A sender that is cwnd-limited keeps one congestion window of data outstanding: each
ACK frees room and the sender fills it at once. So after the segments an ACK releases,
``pipe = snd_nxt − snd_una − SACKed`` *is* cwnd. tracekit measures that pipe at every
data segment and corrects it where the sender is not cwnd-limited:

1. **Loss events.** A retransmission starts a loss event unless one is under way: an
   event lasts until the cumulative ACK passes its *recovery point* (the highest byte
   sent before it, RFC 6582 "recover"), so NewReno partial-ACK and SACK retransmissions
   of one window count once. A **timeout** always starts a new event — a Reno recovery
   that stalls ends in one, and the simulators cut cwnd twice (samples/ns2/lab_reno/Window.tr:
   66 → 33 → 1). Which re-sends are timeouts is the retransmission analysis' judgement
   (:func:`tracekit.analysis.retrans.timeout_resends`: the first re-send of each ``rto``
   episode, RFC 6298 §5 with RTO ≥ the sender's floor, 200 ms for Linux ``TCP_RTO_MIN`` and
   ns-2 ``minrto_``, 1 s for ns-3), never a rule of its own: a silence of one minimum RTT is
   no timer expiry where the RTT is µs (veth, a local bridge) and the RTO is 200 ms.
   A retransmitted SYN is a loss too (cwnd starts at 1 segment, ssthresh 2 segments, RFC 5681).
2. **snd_nxt restarts at each event**: go-back-N senders (timeouts, Tahoe's fast
   retransmit) resend from snd_una, so the pipe uses the highest byte sent since; data
   SACKed above that restarted snd_nxt is no part of the pipe (RFC 6675 §2: it counts
   octets between HighACK and HighData), so only the SACKed bytes below it leave it.
   After a **timeout** every segment outstanding and not SACKed is lost (RFC 5681 §3.1,
   Linux ``tcp_enter_loss``/``tcp_timeout_mark_lost``) and out of RFC 6675 §4's pipe until
   re-sent: the pipe is what was sent since (new or re-sent), not a hole not re-sent yet.
3. **Fast recovery or restart.** A fast-retransmit event is a Reno-style *recovery*
   (estimate = ssthresh, phase ``recovery``: ns-2 keeps the dupACK inflation out of
   ``cwnd_``, PRR converges to it) unless the sender shows go-back-N: it resends old
   data beyond the first hole, contiguously, before any new data (a SACK sender skips
   the SACKed segments). When it sends nothing at all until the event ends, the burst
   the ending ACK releases decides: Tahoe sends ~2 segments, Reno resumes at ssthresh —
   unless that burst is application-limited (step 5): it then tells neither, and the event
   stays a recovery. After a recovery, rows that read no window yet keep its ssthresh.
4. **ssthresh** = half the estimate just before the event (with SACK information, half
   the un-SACKed flight if smaller: RFC 5681 eq. 4's FlightSize, as ns-3 does), rounded
   down to whole segments, at least 2 MSS (ns-2 and Linux keep whole segments).
5. **Not measurements of the window**: segments sent on duplicate ACKs (RFC 3042 limited
   transmit, dupACK inflation) are skipped, and so are **application-limited** bursts: the
   burst ended at HighData, an ACK then covered all of it, and nothing new left within
   ``ACK_CLOCKED_S`` (1 ms) of the latest ACK: the sender had nothing more to send (RFC 7661 §4
   validates no window then; Linux grows cwnd only when ``tcp_is_cwnd_limited``). So is a
   burst that starts from an **empty pipe** (everything sent before was ACKed) after an idle
   shorter than ``RESTART_S`` (200 ms), however soon after the ACK: outside a loss event cwnd falls
   only after an idle of one RTO (RFC 5681 §4.1, Linux ``tcp_cwnd_restart``), and a
   cwnd-limited sender whose pipe empties sends its whole window on that ACK, so the burst is
   what the application had given (a write's tail, a write once the socket buffer drained),
   a lower bound of cwnd (not at a loss event's start or end). While no
   other burst is in the filter window the estimate keeps its value (raised where such a
   pipe is higher). The segments one ACK releases count as one burst (a capture sees them
   spaced by the serialisation time). The two rules on application-limited bursts and
   timeouts need the sender's own view: a direction where no segment left within 100 µs of
   the ACK that released it (a capture a link away) keeps the plain pipe.
6. **Smoothing**: a causal max filter over two minimum RTTs (queueing and delayed ACKs
   stretch the RTT), restarted at every event start and end so that no pre-loss window
   is carried across a reduction.
7. **Congestion avoidance** grows cwnd smoothly while the pipe can only step by whole
   segments: between two one-segment steps the estimate is interpolated linearly.

The input rows are built by the core one packet at a time (:mod:`._cwnd_rows`: every direction
one contiguous run of rows, ``tracekit._core.cwnd_rows``, src/state/cwnd/rows.rs); everything
after runs in the Rust core in one call (``tracekit._core.cwnd_estimate``,
src/state/cwnd/estimate.rs): the loss events and their go-back-N verdicts (episodes.rs, steps
1 and 3), the pipe and its filter (pipe.rs, steps 2, 5 and 6), recoveries and ssthresh
(recoveries.rs, steps 3 and 4), the phases (step 7), each direction a stretch of rows at a time,
cut at the loss events that start once the one before has ended (stretch.rs: the same values as
one pass); this module builds the frames. The
estimate needs the sender's own view (its segments when sent, ACKs when they reach it): ACKs
observed elsewhere (e.g. at the receiver) make the pipe lag by a one-way delay.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from tracekit import _core, schema
from tracekit.analysis._cwnd_rows import Rows, build
from tracekit.analysis._cwnd_seg import as_bool, as_f64, as_i64

ROW_SCHEMA = {"flow": pl.UInt32(), "dir": pl.Int8(), "time": pl.Float64(), "cwnd_bytes": pl.Float64(),
              "ssthresh_bytes": pl.Float64(), "source": schema.CWND_SOURCE, "phase": schema.PHASE}
EP_SCHEMA = {"flow": pl.UInt32(), "dir": pl.Int8(), "start": pl.Float64(), "end": pl.Float64(),
             "kind": pl.String(), "recovery": pl.Boolean(), "ssthresh_bytes": pl.Float64()}


class Core(NamedTuple):
    """The estimate's frames (see :func:`estimate`) and each loss event's first row (``first``: in
    ``episodes``' order, its ``"syn"`` rows excepted; rows of :class:`Rows`)."""

    rows: pl.DataFrame
    episodes: pl.DataFrame
    first: np.ndarray


def _enum(codes: np.ndarray, dtype: pl.Enum, name: str) -> pl.Series:
    """An Enum column from its category numbers (``codes``: uint8, each < the number of categories)."""
    s = pl.Series(name, codes, dtype=pl.UInt8)
    try:
        return s.cat.to(dtype)  # the codes are the physical values: no strings are made
    except (AttributeError, pl.exceptions.PolarsError):  # (``cat.to`` is marked unstable in polars 2.1)
        return s.replace_strict(list(range(len(dtype.categories))), dtype.categories.to_list(), return_dtype=dtype)


def _events(r: Rows, ev: tuple[np.ndarray, ...], hold_backoff: bool = True) -> pl.DataFrame:
    """The loss events' frame from the core's per-event columns (direction, first row, end, timeout,
    recovery, ssthresh), then one ``"syn"`` event per direction whose SYN was retransmitted: its
    ssthresh 2 MSS on ns-2 (``hold_backoff`` False), none on a capture's stack, which starts its data
    with no ssthresh (``ssthresh_at_start`` in src/state/cwnd/estimate.rs)."""
    d, first, end, to, rec, st = ev
    counts = r.hi - r.lo
    syn = np.flatnonzero(r.syn_lost & (counts > 0))
    return pl.DataFrame(
        {
            "flow": np.concatenate([r.flow[d], r.flow[syn]]),
            "dir": np.concatenate([r.dir[d], r.dir[syn]]),
            "start": np.concatenate([r.time[first], r.syn_t[syn]]),
            # (an event the cumulative ACK never ended: no end)
            "end": pl.Series(np.concatenate([end, r.time[r.lo[syn]]]), dtype=pl.Float64).scatter(
                np.flatnonzero(np.isposinf(end)), None),
            "kind": np.concatenate([np.where(to, "rto", "fast"), np.full(syn.size, "syn")]).astype(str),
            "recovery": np.concatenate([rec, np.zeros(syn.size, dtype=bool)]),
            "ssthresh_bytes": np.concatenate([st, np.full(syn.size, np.nan) if hold_backoff else 2.0 * r.mss[syn]]),
        },
        schema=EP_SCHEMA,
    )


_A = np.ndarray
#: ``tracekit._core.cwnd_estimate``'s column arguments (see :func:`core_args`).
CoreArgs = tuple[tuple[_A, _A, _A, _A, _A, _A, _A], tuple[_A, _A, _A, _A, _A], tuple[_A, _A, _A], tuple[_A, _A],
                 tuple[_A, _A, _A, _A, _A, _A, _A]]


def core_args(r: Rows) -> CoreArgs:
    """The columns of ``r`` as ``tracekit._core.cwnd_estimate`` takes them (rows, SACK marks,
    retransmissions, ACKs, directions), each contiguous and of its dtype."""
    i, f, b = as_i64, as_f64, as_bool
    return (
        (f(r.time), i(r.seq_end), i(r.pay), i(r.una), b(r.dup), b(r.new_ack), f(r.ack_t)),
        (i(r.sack_at), i(r.sack_val), i(r.sack_pos), i(r.seg_rows), i(r.seg_at)),
        (i(r.retx_rows), i(r.retx_hi), b(r.retx_timeout)),
        (f(r.a_time), i(r.a_una)),
        (i(r.lo), i(r.hi), i(r.alo), i(r.ahi), f(r.mss), f(r.min_rtt), b(r.syn_lost)),
    )


def run_core(r: Rows, hold_backoff: bool = True) -> Core:
    """The estimate from ``r`` in one core call (``tracekit._core.cwnd_estimate``; see the module
    docstring), and its frames. Frees the sequence columns of ``r``.

    Args:
        r: The estimate's inputs (:func:`tracekit.analysis._cwnd_rows.build`).
        hold_backoff: A backed-off expiry holds ssthresh (RFC 5681 §3.1: Linux, ns-3); False for ns-2.
    """
    est, st, codes, ev = _core.cwnd_estimate(*core_args(r), hold_backoff)
    gone = np.empty(0, dtype=np.int64)  # (nothing after needs them per row)
    r.seq_end = r.pay = r.una = r.sack_pos = r.seg_rows = r.seg_at = gone
    r.dup = r.new_ack = np.empty(0, dtype=bool)
    r.ack_t = np.empty(0)
    counts = r.hi - r.lo
    rows = pl.DataFrame([
        pl.Series("flow", np.repeat(r.flow, counts), dtype=pl.UInt32),
        pl.Series("dir", np.repeat(r.dir, counts), dtype=pl.Int8),
        pl.Series("time", r.time), pl.Series("cwnd_bytes", est),
        pl.Series("ssthresh_bytes", st, nan_to_null=True),
        pl.select(pl.repeat("estimate", est.size, dtype=schema.CWND_SOURCE).alias("source")).to_series(),
        _enum(codes, schema.PHASE, "phase"),
    ])
    return Core(rows, _events(r, ev, hold_backoff), ev[1])


def estimate(pk: pl.DataFrame, flight: pl.DataFrame, retrans: pl.DataFrame, dirs: pl.DataFrame, *,
             sacked_at: np.ndarray | None = None,
             timeouts: pl.DataFrame | None = None, hold_backoff: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Estimate cwnd at every data segment of every data direction (see the module docstring).

    Args:
        pk: Packets at the sender's vantage point.
        flight: The flight frame (only its SACK accounting is used; may be empty).
        retrans: The retransmissions frame (its frames are marked as retransmissions; may be empty).
        dirs: Data directions ``flow, dir, mss`` (from :func:`tracekit.analysis.cwnd.data_directions`).
        sacked_at: Per flight row, from when its segment counts as SACKed
            (:func:`tracekit.analysis.flight.flight_and_sacks`; None: not known).
        timeouts: ``flow, dir, frame`` of the re-sends the retransmission timer sent
            (:func:`tracekit.analysis.retrans.timeout_resends`; None: no timeouts).
        hold_backoff: A backed-off expiry holds ssthresh (RFC 5681 §3.1: Linux, ns-3); False for ns-2,
            which halves it at every expiry.

    Returns:
        (rows, episodes): rows with ``flow, dir, time, cwnd_bytes, ssthresh_bytes, source, phase``
        (``source = "estimate"``, by flow, dir and time: the order of :data:`tracekit.schema.CWND`);
        episodes with ``flow, dir, start, end, kind, recovery, ssthresh_bytes``.
    """
    empty = pl.DataFrame(schema=ROW_SCHEMA), pl.DataFrame(schema=EP_SCHEMA)
    if pk.is_empty() or dirs.is_empty():
        return empty
    r = build(pk, flight, retrans, dirs, sacked_at, timeouts)
    if r is None:
        return empty
    out = run_core(r, hold_backoff)
    return out.rows, out.episodes
