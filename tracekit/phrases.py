"""The one table of phrases :mod:`tracekit.explain` may say (documented in docs/explain.md).

Each phrase is a format string whose fields are filled with numbers formatted by
:mod:`tracekit.numfmt`; no other text reaches a sentence.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

#: Every phrase tracekit can say, by kind. ``{name}`` fields are numbers formatted with units.
TEMPLATES: dict[str, str] = {
    "overview": "Flow {flow} direction {dir}: {bytes} of data from {start} to {end} ({duration}), goodput {goodput}.",
    "directions_more": "{count} more data directions ({bytes}, {share} of the data) are not told one by one, only the "
                       "{told} largest: the flows list has every one.",
    "start_ws": "First flight at {time}: {first}; window scaling on (shift {wscale}), "
                "largest advertised window {rwnd}.",
    "start_nows": "First flight at {time}: {first}; window scaling off, "
                  "largest advertised window {rwnd}.",
    "start_iw": "First flight at {time}: {first}.",
    "cc_bbr": "The sender ran {cc} (its kernel's log): BBR paces at its estimate of the bottleneck rate and keeps "
              "cwnd near twice the bandwidth-delay product, and a loss does not halve it, so the slow starts and "
              "recoveries below read what was in flight, not BBR's own states (Startup, Drain, ProbeBW, ProbeRTT).",
    "syn_resent": "The {syn} went unanswered and was first sent again at {time}, after a retransmission "
                  "timeout: the first data left at {first}, {delay} after the connection's first SYN.",
    "slow_start_loss": "cwnd grew in slow start {from_part}to {cwnd} by {time}; "
                       "a loss ended slow start at {end}.",
    "slow_start_cut": "cwnd grew in slow start {from_part}to {cwnd} by {time}; "
                      "a cwnd reduction without loss evidence ended slow start at {end}.",
    "slow_start_ca": "cwnd grew in slow start {from_part}to {cwnd} by {time}, "
                     "then congestion avoidance from {end}.",
    "slow_start_open": "cwnd grew in slow start {from_part}to {cwnd} by {time} "
                       "and was still in slow start at {end}.",
    "loss_fast_recovery": "Loss event at {time}: {retrans} retransmitted{dropped}; recovered by fast recovery "
                          "({change}).",
    "loss_timeout": "Loss event at {time}: {retrans} retransmitted{dropped}; recovered by a retransmission timeout "
                    "and slow start ({change}).",
    "loss_tahoe": "Loss event at {time}: {retrans} retransmitted{dropped}; fast retransmit, then slow start "
                  "({change}, as Tahoe does).",
    "losses_far": "{retrans} retransmitted from {time} to {end} ({fast} fast, {rto} after a timeout); the "
                  "packets were seen away from the sender ({where}), so its window and recoveries are not told.",
    "loss_other": "Loss event at {time}: {retrans} retransmitted{dropped}; {change}.",
    "reduction_spurious": "cwnd reduction at {time} ({change}) on {retrans} re-sent, none of "
                          "them needed: the receiver already had the data, so this is no loss event.",
    "reduction_no_loss": "cwnd reduction at {time} ({change}) with no loss evidence "
                         "({retrans} retransmitted{dropped}), so this is no loss event.",
    "reduction_syn": "cwnd reduction at {time} ({change}) after a lost SYN ({retrans} re-sent before the "
                     "first data): a sender whose SYN was lost starts from one segment (RFC 5681 §3.1), "
                     "and no data was lost.",
    "window_unfilled": "The sender never had a full segment ({mss}) in flight (at most {largest}): its window "
                       "estimate shows what the application wrote, not cwnd, so no window events are told.",
    "losses_more": "{count} more loss events from {time} to {end}.",
    "reductions_more": "{count} more cwnd reductions without loss evidence from {time} to {end}.",
    "limit_cwnd": "Limited by the congestion window {cwnd_share} of the time "
                  "(receive window {rwnd_share}, application {app_share}, nothing {none_share}).",
    "limit_rwnd": "Limited by the advertised receive window {rwnd_share} of the time "
                  "(congestion window {cwnd_share}, application {app_share}, nothing {none_share}).",
    "limit_app": "Limited by the application (nothing to send) {app_share} of the time "
                 "(congestion window {cwnd_share}, receive window {rwnd_share}, nothing {none_share}).",
    "limit_none": "No window held the sender back for most of the transfer ({none_share} of the time; "
                  "congestion window {cwnd_share}, receive window {rwnd_share}, application {app_share}).",
    "limit_unseen": "What held the sender back is not told: the packets were seen at the receiver, which sees "
                    "neither the sender's window in flight nor its ACK clock.",
    "stall_rto": "A {duration} stall at {time}: a retransmission timeout fired in it, and new data went out "
                 "again at {end}.",
    "stall_zero_window": "A {duration} stall at {time}: the receiver advertised a zero window until {end}.",
    "stall_rwnd_limited": "A {duration} stall at {time}: the receive window was full until {end}.",
    "stall_app_limited": "A {duration} stall at {time}: the sender had nothing to send until {end}.",
    "stall_unknown": "A {duration} stall at {time} of unknown cause, until {end}.",
    "stalls_more": "{count} more stalls from {time} to {end}, {duration} in all.",
    "zero_window": "The receiver advertised a zero window {count} times from {time} to {end}; "
                   "{stalls} stalls waited {duration} in all for it to open.",
    "goodput_link": "Goodput {goodput} = {share} of the {link} link.",
    "models": "Loss rate {loss_rate}: Mathis predicts {mathis}, PFTK {padhye} (measured goodput {goodput}).",
    "model_mathis": "Loss rate {loss_rate}: Mathis predicts {mathis} (measured goodput {goodput}).",
    "warn_truncated": "The file is truncated ({count} cut records): the account stops at {end}.",
    "warn_headers_only": "Only headers were captured ({share} of the data segments cut short at {time}): "
                         "bytes come from the length fields.",
    "warn_vantage": "The packets were seen at {count} kinds of vantage point{where}: a segment may be counted at "
                    "each, and only a sender's view tells its window.",
    "warn_time_back": "Reader warning ({count}×): {message}. A time measured across such a step (an RTT sample, "
                      "a gap, a rate bin) can be off by up to its size.",
    "warn_other": "The reader reported {count} warnings (see the warnings list); numbers up to {end} may be affected.",
    "fairness": "Jain's fairness index over the {flows} data directions from {time} to {end}: {jain} "
                "(1 = equal shares; lowest {low}, highest {high}){left}.",
    "fairness_tool": "The tool's own per-flow throughput at {time} gives Jain's index {jain} over {flows} "
                     "data flows (lowest {low}, highest {high}).",
    "no_data": "No TCP connection carried data in this trace ({packets} packet events).",
    "summary": "flow {flow}.{dir}: goodput {goodput}{link_part}; {limit_part}; {losses}, {stalls}.",
}
#: Optional pieces of a phrase, also fixed text.
CLAUSES: dict[str, str] = {
    "dropped": ", {drops} dropped in the network",
    "link_part": " ({share} of {link})",
    "limit_cwnd": "cwnd-limited {share}",
    "limit_rwnd": "receive-window-limited {share}",
    "limit_app": "application-limited {share}",
    "limit_none": "not window-limited {share}",
    "limit_unseen": "limit not seen at the receiver",
    "cwnd_fell": "cwnd {before} → {after}",
    "cwnd_held": "ssthresh set, cwnd stayed at {before}",
    "cwnd_rose": "ssthresh set while cwnd rose from {before} to {after}",
    "from_part": "from {from_cwnd} ",
    "cwnd_rwnd": "at least {cwnd} (the receiver's whole advertised window held the flight)",
    "first_iw": "initial window {iw} ({iw_bytes})",
    "first_short": "{iw_bytes}, less than one full segment ({mss}): the sender had no more to send, so the "
                   "initial window is not seen",
    "first_rwnd": "{iw} ({iw_bytes}), the receiver's whole advertised window ({rwnd}), so the initial window "
                  "is not seen",
    "first_receiver": "{iw} ({iw_bytes}) reached the receiver before its first ACK: counted at the receiver, "
                      "this depends on how soon it acknowledges (at once on Linux), not on the sender's initial "
                      "window",
    "fairness_left": "; left out as application-limited: {names}",
}
@dataclass(frozen=True)
class Sentence:
    """One sentence of the account (JSON: ``{time, kind, text, values}`` plus ``flow``, ``dir``)."""

    kind: str
    text: str
    time: float | None = None
    flow: int | None = None
    dir: int | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"flow": self.flow, "dir": self.dir, "time": self.time, "kind": self.kind, "text": self.text,
                "values": self.values}


def say(kind: str, shown: dict[str, str], values: dict[str, Any], *, time: float | None = None,
        flow: int | None = None, dir: int | None = None) -> Sentence:
    """Fill template ``kind`` with the already formatted ``shown`` texts."""
    return Sentence(kind, TEMPLATES[kind].format(**shown), _clean(time), flow, dir,
                    {k: _clean(v) for k, v in values.items()})


def _clean(v: Any) -> Any:
    """A value as plain Python (NaN and infinities: None). numpy's scalars only when numpy is loaded
    (a value cannot be one otherwise): the streamed account (:mod:`tracekit._streamexplain`) never loads it."""
    np = sys.modules.get("numpy")
    if isinstance(v, float) or (np is not None and isinstance(v, np.floating)):
        return float(v) if math.isfinite(v) else None
    if np is not None and isinstance(v, np.integer):
        return int(v)
    return v


