"""TCP analyses: pure functions over a Trace's polars frames, gathered in :class:`Analysis`.

One analysis per module, each a pure function (no I/O, no plotting) returning a frame
declared in :mod:`tracekit.schema`; :func:`analyze` runs them all, sharing the per-packet
sequence state (:mod:`tracekit.analysis._state`) so that the work is done once:

* :mod:`.vantage` — one row per packet as seen at the data sender (simulators), and where a
  capture was taken;
* :mod:`.flight`, :mod:`.rtt`, :mod:`.retrans`, :mod:`.stalls`, :mod:`.flows`;
* :mod:`.cwnd`, :mod:`.throughput`, :mod:`.queue`, :mod:`.fairness` and :mod:`tracekit.models`.

Definitions of every column: docs/analysis.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import NamedTuple

import polars as pl

from tracekit._shared import trace_vantage
from tracekit.analysis import _batches, _dirstats, _state
from tracekit.analysis import connections as _connections
from tracekit.analysis import cwnd as _cwnd
from tracekit.analysis import fairness as _fairness
from tracekit.analysis import queue as _queue
from tracekit.analysis import retrans as _retrans
from tracekit.analysis import rtt as _rtt
from tracekit.analysis import throughput as _throughput
from tracekit.analysis.flight import flight as _flight
from tracekit.analysis.flight import flight_and_sacks as _flight_and_sacks
from tracekit.analysis.flows import columns as _flows_columns
from tracekit.analysis.flows import directions as _flows_directions
from tracekit.analysis.flows import finish as _flows_finish
from tracekit.analysis.stalls import stalls as _stalls
from tracekit.analysis.throughput import default_bin
from tracekit.analysis.vantage import detect, vantage
from tracekit.errors import UsageError
from tracekit.trace import Trace

__all__ = ["Analysis", "analyze", "default_bin"]


def _bin(pk: pl.DataFrame, bin_s: float | None) -> float:
    """``bin_s`` checked, or :func:`default_bin` of the packets' time span.

    Raises:
        UsageError: if ``bin_s`` is not a positive number.
    """
    if bin_s is None:
        if pk.is_empty():
            return 1.0
        return default_bin(float(pk["time"].max() - pk["time"].min()))  # type: ignore[operator,arg-type]
    try:
        b = float(bin_s)
    except (TypeError, ValueError):
        b = float("nan")
    if not math.isfinite(b) or b <= 0:
        raise UsageError(f"throughput bin must be a positive number of seconds, not {bin_s!r}")
    return b


@dataclass(frozen=True)
class Analysis:
    """Everything tracekit reconstructs from one trace (frames declared in :mod:`tracekit.schema`).

    ``queue`` and ``fairness`` are made on first access, and so are a large trace's ``flight``
    and ``rtt`` when :func:`analyze` was told not to keep them: the summary, the table and the
    account in words never read them, and per-packet frames are most of an analysis' memory.

    Attributes:
        trace: The analysed trace (``meta["vantage_point"]`` added: where it was observed).
        packets: The packet events at the vantage point (one row per packet).
        flows: One row per connection direction that carried data (docs/analysis.md).
        flight: Bytes in flight at each data segment (:data:`tracekit.schema.FLIGHT`).
        cwnd: Congestion window, traced or estimated (:data:`tracekit.schema.CWND`).
        rtt: RTT samples (:data:`tracekit.schema.RTT`).
        retransmissions: Retransmitted segments with their kind (:data:`tracekit.schema.RETRANSMISSIONS`).
        stalls: Intervals without new data, with their cause (:data:`tracekit.schema.STALLS`).
        queue: Queue length per link over time, simulators (:data:`tracekit.schema.QUEUE`).
        fairness: Jain's index over the connections (:data:`tracekit.schema.FAIRNESS`).
        views: Every capture's flow rows, when a run directory sees a connection from several
            captures (:mod:`tracekit.analysis.connections`); ``flows`` has one row per
            connection direction, from the capture nearest the sender.
        reductions: The cwnd reductions of each direction's chosen series, those counted as
            loss events marked (:data:`tracekit.schema.REDUCTIONS`); None when not computed.
    """

    trace: Trace
    packets: pl.DataFrame
    flows: pl.DataFrame
    flight: pl.DataFrame
    cwnd: pl.DataFrame
    rtt: pl.DataFrame
    retransmissions: pl.DataFrame
    stalls: pl.DataFrame
    queue: pl.DataFrame
    fairness: pl.DataFrame
    views: pl.DataFrame = field(default_factory=pl.DataFrame)
    reductions: pl.DataFrame | None = None
    #: How to make the frames given as :data:`_LATER` on first access, by name (a maker may make several).
    _makers: dict[str, Callable[[Analysis], dict[str, pl.DataFrame]]] = field(default_factory=dict, repr=False,
                                                                               compare=False)
    _throughput: dict[float, pl.DataFrame] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in self._makers:  # not set: __getattr__ makes them when first read
            object.__delattr__(self, name)

    def __getattr__(self, name: str) -> pl.DataFrame:
        makers: dict[str, Callable[[Analysis], dict[str, pl.DataFrame]]] = self.__dict__.get("_makers") or {}
        if name not in makers:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        made = makers[name](self)
        for k, v in made.items():
            makers.pop(k, None)
            object.__setattr__(self, k, v)
        return made[name]

    @property
    def default_bin_s(self) -> float:
        """The throughput bin used when none is given: :func:`default_bin` of the packets' time span."""
        return _bin(self.packets, None)

    def throughput(self, bin_s: float | None = None) -> pl.DataFrame:
        """Throughput and goodput per direction in bins of ``bin_s`` seconds (:data:`tracekit.schema.THROUGHPUT`).

        Args:
            bin_s: Bin width in seconds; chosen from the duration (about 100 bins) when None.

        Returns:
            The ``throughput`` frame.

        Raises:
            UsageError: if ``bin_s`` is not a positive number.
        """
        b = _bin(self.packets, bin_s)
        if b not in self._throughput:
            self._throughput[b] = _throughput.throughput(self.packets, b)
        return self._throughput[b]

    def frames(self) -> dict[str, pl.DataFrame]:
        """Every analysis frame by name (throughput at the default bin), for export."""
        return {
            "flows": self.flows, "flight": self.flight, "cwnd": self.cwnd, "rtt": self.rtt,
            "retransmissions": self.retransmissions, "stalls": self.stalls, "queue": self.queue,
            "fairness": self.fairness, "throughput": self.throughput(), "views": self.views,
        }

    @property
    def extra(self) -> dict[str, pl.DataFrame]:
        """The frames beyond ``flows`` (kept for writers that iterate ``analysis.extra``)."""
        return {k: v for k, v in self.frames().items() if k != "flows"}


def analyze(trace: Trace, *, bin_s: float | None = None, rto_floor_s: float | None = None,
            keep_per_packet: bool = True) -> Analysis:
    """Run every analysis on a trace.

    A large capture's per-packet state is built for one batch of whole connections at a time
    (:func:`tracekit.analysis._batches.batches`), the batches on every core; the frames are the
    same as in one piece.

    Args:
        trace: A validated Trace.
        bin_s: Throughput bin for the fairness index (default: :func:`default_bin` of the duration).
        rto_floor_s: The sender's minimum RTO in seconds, which a retransmission must wait at
            least to count as a timeout (default: by the stack that made the trace, 0.2 for
            Linux captures and ns-2, 1.0 for ns-3; :func:`tracekit.analysis.retrans.rto_floor`).
            The analysed trace's meta says which applied (``rto_floor_s``, ``rto_floor_from``).
        keep_per_packet: Keep the ``flight`` and ``rtt`` frames. When False (``analyze --json``
            and the table, which never read them) a large trace's are dropped once the flows and
            cwnd are known, and made again on first access (same frames, about half an analysis'
            time): the frames most of an analysis' memory goes to are not held.

    Returns:
        The Analysis.

    Raises:
        UsageError: for a bad ``bin_s`` or ``rto_floor_s``.
    """
    if rto_floor_s is not None and not (isinstance(rto_floor_s, (int, float)) and 0 <= rto_floor_s < math.inf):
        raise UsageError(f"rto_floor_s must be a number of seconds >= 0, not {rto_floor_s!r}")
    floor_s, floor_from = _retrans.rto_floor(trace.meta, rto_floor_s)
    big = _big_flow_ids(trace)
    if big is not None:
        return _with_flow_ids(analyze(_renumbered(trace, big), bin_s=bin_s, rto_floor_s=rto_floor_s,
                                      keep_per_packet=keep_per_packet), trace, big)
    pk = vantage(trace.packets)
    b = _bin(pk, bin_s)
    keep = keep_per_packet or pk.height < 2 * _batches.BATCH_ROWS  # a small trace's frames cost little
    drops = _drops(trace.packets)  # once: a filter over every packet, not one per batch
    # the per-packet state (several times the packets' own size) lives for one batch of connections at a time
    per = _batches.merged(_batches.in_order(lambda part: _per_connection(part, trace, floor_s, keep=keep, drops=drops),
                                            _batches.batches(pk, trace)))
    flows_df, views = _connections.one_per_connection(per.flows, pk, trace.meta)
    where = trace_vantage(flows_df["vantage_point"].unique().to_list())
    makers: dict[str, Callable[[Analysis], dict[str, pl.DataFrame]]] = {
        "queue": _queue_of, "fairness": partial(_fairness_of, b)}
    if per.flight is None:
        makers.update(dict.fromkeys(("flight", "rtt"), partial(_flight_and_rtt, trace)))
    return Analysis(
        trace=trace.with_meta(vantage_point=where, rto_floor_s=floor_s, rto_floor_from=floor_from),
        packets=pk, flows=flows_df, flight=_or_later(per.flight), cwnd=per.cwnd, rtt=_or_later(per.rtt),
        retransmissions=per.retrans, stalls=per.stalls, queue=_LATER, fairness=_LATER, views=views,
        reductions=per.reductions, _makers=makers,
    )


#: Stands for a frame made on first access (:attr:`Analysis._makers`).
_LATER = pl.DataFrame()


def _or_later(df: pl.DataFrame | None) -> pl.DataFrame:
    return _LATER if df is None else df


def _queue_of(an: Analysis) -> dict[str, pl.DataFrame]:
    return {"queue": _queue.queue(an.trace.packets)}


def _fairness_of(bin_s: float, an: Analysis) -> dict[str, pl.DataFrame]:
    """Jain's index over the throughput in bins of ``bin_s`` of the connections' chosen views, of the
    directions that compete for the path (:func:`tracekit.analysis.fairness.competing`)."""
    goodput = _connections.goodput_rows(an.views).join(_fairness.competing(an.flows, an.views), on=["flow", "dir"],
                                                       how="semi")
    return {"fairness": _fairness.fairness(an.throughput(bin_s).join(goodput, on=["flow", "dir"], how="semi"))}


class _PerConnection(NamedTuple):
    """The frames the per-packet sequence state yields for some connections (the state itself is gone)."""

    flows: pl.DataFrame
    flight: pl.DataFrame | None
    cwnd: pl.DataFrame
    rtt: pl.DataFrame | None
    retrans: pl.DataFrame
    stalls: pl.DataFrame
    reductions: pl.DataFrame


def _per_connection(pk: pl.DataFrame, trace: Trace, floor_s: float, *, keep: bool = True,
                    drops: pl.DataFrame | None = None) -> _PerConnection:
    """Every analysis that reads the per-packet state, for the connections whose packets ``pk`` holds.

    Each rule is per connection (RFC 9293 keeps TCP state per connection, and so do
    Wireshark's ``tcp_analyze_sequence_number`` and the core's passes), so a batch of whole
    connections (:func:`tracekit.analysis._batches.batches`) yields exactly the whole trace's rows for them.
    Unless ``keep``, the flight and RTT frames are left out once read (:func:`_flight_and_rtt`
    makes them again on demand). ``drops`` are :func:`_drops` of the trace's packets (made here when None).
    """
    st = _state.prepare(pk)
    rs = _rtt.samples(st)
    rtt_df = rs.drop("_i")
    dirs = _dirstats.of_packets(pk)  # per direction: the flows rows, the handshake RTT, cwnd's data directions
    est, hs = _rtt.smoothed(rs), _dirstats.handshake(dirs)  # shared by retransmissions, stalls and flows
    rt = _retrans.classify(st, rs, est=est, hs=hs, rto_floor_s=floor_s)
    retrans_df = rt.drop("_i", "episode")
    retrans_ep = rt.drop("_i")
    fl, sacked_at = _flight_and_sacks(pk, state=st)
    sl = _stalls(pk, state=st, rtt_samples_df=rs, retrans=rt, est=est)
    # flows: one record per direction now; the cwnd stats and the models once the loss events are known
    flow_dirs = _flows_directions(pk, all_packets=trace.packets, parts={
        "state": st, "rtt_samples": rs, "retrans": rt, "flight": fl, "stalls": sl, "vantage": detect(pk, rtt_df),
        "smoothed": est, "dirstats": dirs,
    })
    has_state = st.height > 0
    del st, rs, rt, est, hs
    # (with ``episode``: the estimate's timeouts are the retransmission analysis' own)
    cw = _cwnd.cwnd(pk, trace.samples, fl, retrans_ep, trace.meta, directions=dirs, sacked_at=sacked_at)
    del sacked_at
    if has_state:
        red, cw_stats = _cwnd.reductions_and_stats(
            cw, _loss_evidence(trace.packets, retrans_df, drops=drops),
            _flows_columns(flow_dirs, "rtt_min_s").rename({"rtt_min_s": "tol_s"}))
        flows_df = _flows_finish(flow_dirs, cw_stats)
        if trace.meta.get("kernel"):  # ss samples beside the capture: the estimate's error against them
            from tracekit.kernel import with_kernel_columns

            flows_df = with_kernel_columns(flows_df, cw, trace)
    else:
        red = _cwnd.reductions(cw)
        flows_df = _flows_finish(flow_dirs, None)
    return _PerConnection(flows_df, fl if keep else None, cw, rtt_df if keep else None, retrans_df, sl, red)


def _flight_and_rtt(trace: Trace, an: Analysis) -> dict[str, pl.DataFrame]:
    """The ``flight`` and ``rtt`` frames, made again batch by batch as :func:`_per_connection` made them."""
    def one(part: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        st = _state.prepare(part)
        return _flight(part, state=st), _rtt.samples(st).drop("_i")

    parts = _batches.in_order(one, _batches.batches(an.packets, trace))
    flight, rtt = [p[0] for p in parts], [p[1] for p in parts]
    parts.clear()
    if len(flight) == 1:
        return {"flight": flight[0], "rtt": rtt[0]}
    order = _batches.ORDER
    return {"flight": _batches.stacked(flight, order["flight"]), "rtt": _batches.stacked(rtt, order["rtt"])}


def _loss_evidence(packets: pl.DataFrame, retrans: pl.DataFrame, *, drops: pl.DataFrame | None = None) -> pl.DataFrame:
    """``flow, dir, time`` of every data retransmission and simulator drop of data: what backs a loss event.

    ``drops`` are :func:`_drops` of ``packets`` when already made (one filter over all packets, not one per batch).

    A lost SYN is left out: it lowers the initial window (RFC 6298 §5.7) before any data
    flows, so it is no loss event of the transfer. So is a ``spurious`` re-send: the receiver
    had the data (a D-SACK reported it twice, RFC 2883, or the cumulative ACK already covered
    it), so nothing was lost; a sender that sees the D-SACKs undoes the reduction (RFC 3708,
    RFC 2883 §4; Linux ``tcp_try_undo_dsack`` restores cwnd once every re-send of the episode
    is D-SACKed), so a reduction backed only by such re-sends is no loss event.
    """
    real = (retrans["len"] > 0) & (retrans["kind"] != "spurious").fill_null(True) if "kind" in retrans.columns \
        else retrans["len"] > 0
    cols = retrans.select("flow", "dir", "time")
    return pl.concat([cols.filter(real), (_drops(packets) if drops is None else drops).cast(cols.schema)])


def _drops(packets: pl.DataFrame) -> pl.DataFrame:
    """``flow, dir, time`` of every simulator drop of a data segment (loss evidence, :func:`_loss_evidence`)."""
    return packets.lazy().filter((pl.col("event") == "drop") & pl.col("flow").is_not_null()
                                 & (pl.col("payload") > 0)).select("flow", "dir", "time").collect()


#: Flow ids from this on are renumbered for the analysis (direction ids ``2·flow + dir`` are 32-bit).
_FLOW_ID_LIMIT = 1 << 30


def _big_flow_ids(trace: Trace) -> pl.Series | None:
    """The sorted distinct flow ids of a trace whose ids are too large for the analyses, else None.

    Readers number connections 0, 1, 2, …; only frames built by hand carry ids like 2^31.
    """
    tops = [f.max() for f in (trace.packets["flow"], trace.samples["flow"]) if f.len()]
    if not any(t is not None and t >= _FLOW_ID_LIMIT for t in tops):  # type: ignore[operator]
        return None
    ids = pl.concat([trace.packets["flow"], trace.samples["flow"]]).drop_nulls().unique().sort()
    return ids


def _renumbered(trace: Trace, ids: pl.Series) -> Trace:
    """``trace`` with flow ids replaced by their rank among ``ids`` (order kept)."""
    dense = pl.Series(range(len(ids)), dtype=pl.UInt32)
    to = pl.col("flow").replace_strict(ids, dense, default=None, return_dtype=pl.UInt32)
    return replace(trace, packets=trace.packets.with_columns(to), samples=trace.samples.with_columns(to))


def _with_flow_ids(an: Analysis, trace: Trace, ids: pl.Series) -> Analysis:
    """The analysis of a renumbered trace with the original flow ids put back."""
    dense = pl.Series(range(len(ids)), dtype=pl.UInt32)
    back = pl.col("flow").replace_strict(dense, ids, default=None, return_dtype=pl.UInt32)

    def fix(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(back) if "flow" in df.columns else df

    def later(name: str) -> Callable[[Analysis], dict[str, pl.DataFrame]]:
        return lambda _: {name: fix(getattr(an, name))}

    an.fairness  # noqa: B018  (its throughput is the renumbered trace's, kept below)
    lazy = [name for name in ("flight", "rtt", "queue", "fairness") if name in an._makers]

    return Analysis(
        trace=replace(an.trace, packets=trace.packets, samples=trace.samples), packets=fix(an.packets),
        flows=fix(an.flows), cwnd=fix(an.cwnd), retransmissions=fix(an.retransmissions), stalls=fix(an.stalls),
        views=fix(an.views), reductions=None if an.reductions is None else fix(an.reductions),
        **{name: _LATER if name in lazy else fix(getattr(an, name)) for name in ("flight", "rtt", "queue", "fairness")},
        _makers={name: later(name) for name in lazy},
        _throughput={k: fix(v) for k, v in an._throughput.items()},
    )
