"""What a student reads about one rubric item: the lab's units, the item's wording and its hint.

Scores are always computed in the metric's own unit (bytes for a congestion
window, bit/s for goodput, see :func:`tracekit.grading.metrics.unit_of`),
so a rubric's tolerances mean the same whatever unit its feedback is shown in.
This module only decides how a number is *shown*:

* an item's ``unit`` (``packets``, ``bytes``, ``pps``, ``bit/s``, ``s``), else
* the lab's unit: when the reference's simulator counts the window in packets
  (ns-2's ``Agent/TCP`` keeps ``cwnd_`` in packets of ``packetSize_`` bytes, and
  ``Window.tr`` prints it as such), byte quantities are shown in packets of that
  size with the bytes beside them: ``16 packets (8,000 B)``.

The default hints name the lab setting that most often moves a built-in metric
(the table is :data:`DEFAULT_HINTS`, documented in docs/grading.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracekit.errors import UnknownFormatError
from tracekit.grading.metrics import fmt_value, unit_of

if TYPE_CHECKING:
    from tracekit.errors import TracekitError
    from tracekit.grading.rubric import Item
    from tracekit.grading.submissions import Submission
    from tracekit.trace import Trace

#: Units an item may be shown in, and the metric units each can be converted from.
UNITS: dict[str, tuple[str, ...]] = {
    "packets": ("bytes", "count"),
    "bytes": ("bytes",),
    "pps": ("bit/s",),
    "bit/s": ("bit/s",),
    "s": ("s",),
}

#: metric -> the hint shown when an item on it fails (unless the item has its own ``hint``).
DEFAULT_HINTS: dict[str, str] = {
    "max_cwnd": "check the advertised window (`$tcp set window_`): it caps the congestion window.",
    "min_cwnd_after_first_loss": "check the TCP variant (`Agent/TCP` is Tahoe, `Agent/TCP/Reno` is Reno).",
    "cwnd_backoff": "check the TCP variant: Tahoe (`Agent/TCP`) restarts from one segment after a loss, "
                    "Reno (`Agent/TCP/Reno`) halves its window.",
    "loss_events": "check the error model's rate and the queue limit (`$ns queue-limit`).",
    "queue_drops": "check the queue limit (`$ns queue-limit $n0 $n1 N`): a short queue overflows.",
    "first_loss_s": "check the error model and the queue limit: they decide when the first packet is lost.",
    "download_time_s": "check the link's bandwidth and delay (`duplex-link`) and the amount of data sent.",
    "duration": "check that the run reaches its end (`$ns at T \"finish\"`) and that `finish` flushes and "
                "closes the trace files.",
    "cwnd_distance": "check the TCP variant, the window and the link settings against the lab handout.",
    "throughput_distance": "check the link's bandwidth and delay, the window and the run's length.",
    "goodput_bps": "check the link's bandwidth and delay and the advertised window (`window_`).",
    "throughput_bps": "check the link's bandwidth and delay and the advertised window (`window_`).",
    "retrans_packets": "check the error model's rate and the queue limit: every loss is retransmitted.",
}

#: metric -> how the student's value is named in the feedback sentence.
PHRASES: dict[str, str] = {
    "max_cwnd": "your congestion window never exceeded",
    "min_cwnd_after_first_loss": "after the first loss your congestion window fell to",
    "cwnd_backoff": "after a loss your window became (after ÷ before)",
    "loss_events": "your run lost",
    "queue_drops": "the queue dropped",
    "first_loss_s": "your first loss happened at",
    "download_time_s": "your download took",
    "duration": "your trace covers",
    "cwnd_distance": "your congestion-window curve is this far from the reference curve:",
    "throughput_distance": "your goodput curve is this far from the reference curve:",
    "goodput_bps": "your goodput was",
    "throughput_bps": "your throughput was",
}


def unit_problem(metric: str, unit: str) -> str | None:
    """Why ``metric`` cannot be shown in ``unit``, or None."""
    if unit not in UNITS:
        return f"one of {list(UNITS)}, got {unit!r}"
    base = unit_of(metric)
    if base and base not in UNITS[unit]:
        return f"{metric} is measured in {base}; it can be shown in " + \
            (", ".join(u for u, b in UNITS.items() if base in b) or f"{base} only")
    return None


@dataclass(frozen=True)
class LabUnits:
    """How the lab counts: in packets of ``packet_bytes`` (ns-2) or in bytes (captures)."""

    counts_packets: bool = False
    packet_bytes: float | None = None


def lab_units(trace: Trace) -> LabUnits:
    """The reference trace's own unit: packets when its tool counts cwnd in packets and the size is known."""
    seg = trace.meta.get("segment_size")
    units = dict(trace.meta.get("units") or {})
    for part in trace.meta.get("parts") or []:
        units.update(part.get("units") or {})
    packets = str(units.get("cwnd", "")).startswith("packets") or trace.meta.get("tool") == "ns-2"
    if isinstance(seg, (int, float)) and seg > 0 and packets:
        return LabUnits(True, float(seg))
    return LabUnits(False, float(seg) if isinstance(seg, (int, float)) and seg > 0 else None)


@dataclass(frozen=True)
class Display:
    """How an item's numbers are shown: ``unit`` and the factor from the metric's unit (``base``)."""

    unit: str
    base: str
    scale: float = 1.0

    def fmt(self, value: float | None, *, with_base: bool = True) -> str:
        """``16 packets (8,000 B)``; plain :func:`fmt_value` when no conversion applies."""
        if value is None or self.unit == self.base or not math.isfinite(value):
            return fmt_value(value, self.base)
        if self.scale == 1.0:
            return f"{fmt_value(value, self.base)} {self.unit}"
        shown = value * self.scale
        num = f"{shown:,.0f}" if abs(shown - round(shown)) < 0.05 else f"{shown:,.1f}"
        text = f"{num} {self.unit}"
        return f"{text} ({fmt_value(value, self.base)})" if with_base else text


def display_for(item: Item, lab: LabUnits) -> Display:
    """The unit an item is shown in: its ``unit``, else packets where the lab counts packets."""
    base = unit_of(item.metric)
    unit = item.unit or ("packets" if lab.counts_packets and base == "bytes" else base)
    size = lab.packet_bytes
    if unit == "packets" and base == "bytes" and size:
        return Display("packets", base, 1.0 / size)
    if unit == "pps" and base == "bit/s" and size:
        return Display("pps", base, 1.0 / (8.0 * size))
    if unit == "packets" and base == "count":
        return Display("packets", base, 1.0)
    return Display(base, base)


def hint_for(item: Item) -> str | None:
    """The item's own hint, else the metric's default one (None for metrics without one)."""
    return item.hint or DEFAULT_HINTS.get(item.metric)


def sentence(text: str) -> str:
    """Text ending a sentence (so that a following ``Hint:`` starts a new one)."""
    text = text.strip()
    if not text:
        return text
    first = text.split(None, 1)[0]
    if "." not in first.rstrip(".:") and "`" not in first and "_" not in first:
        text = text[0].upper() + text[1:]  # not a file name such as out.tr
    return text if text[-1] in ".!?" else text + "."


def student_line(item: Item, disp: Display, value: float | None, note: str | None, status: str,
                 side: str | None) -> str:
    """What the student reads: their value in the lab's unit, the outcome, no reference number.

    ``side`` is ``"low"`` / ``"high"`` when the value is outside the allowed range.
    """
    if value is None:
        return sentence(f"this item could not be evaluated: {note or 'no value'}")
    phrase = PHRASES.get(item.metric, f"your {item.metric.replace('_', ' ')}:")
    text = sentence(f"{phrase} {disp.fmt(value)}" + (f" ({note})" if note else ""))
    if status == "passed":
        return text + " That is within the tolerance."
    where = {"low": "below", "high": "above"}.get(side or "", "outside")
    return text + f" That is {where} the allowed range."


def with_hint(text: str, item: Item, status: str) -> str:
    """``text`` followed by the item's hint when the item did not pass."""
    hint = hint_for(item)
    if status == "passed" or not hint:
        return sentence(text)
    return f"{sentence(text)} Hint: {sentence(hint)}"


# ---- reader warnings and errors, for a student ------------------------------------------------------

#: Hints that talk to a command-line user, not to a student handing in a lab.
_CLI_ADVICE = re.compile(r"--|tracekit |\bpass the\b|\[limits\]|report it|rerun|run with", re.IGNORECASE)
#: code -> (what the student reads after "FILE line N:", hint) for the warnings a lab run typically has.
_STUDENT_WARNINGS = {
    "W-TRUNCATED": ("the file ends in the middle of this line{detail}, so the trace stops early and the rest of "
                    "the run is missing",
                    "let the simulation reach its end, and flush and close the trace file in your `finish` "
                    "procedure (`$ns flush-trace`, `close $f`)."),
    "W-BADLINE": ("{count} line(s) could not be read{detail}; they were skipped",
                  "hand in the trace file as the simulator wrote it, without editing it."),
}


def _where(file: str | None, line: int | None) -> str:
    if not file:
        return ""
    return f"{file} line {line:,}: " if line else f"{file}: "


def student_warning(w: dict[str, Any]) -> str:
    """A reader warning phrased for a student: ``out.tr line 1,798: the file ends ... Hint: ...``."""
    detail = f" ({w['detail']})" if w.get("detail") else ""
    known = _STUDENT_WARNINGS.get(str(w.get("code")))
    if known:
        text = known[0].format(detail=detail, count=f"{w.get('count') or 1:,}")
        return f"{sentence(_where(w.get('file'), w.get('line')) + text)} Hint: {known[1]}"
    return sentence(_where(w.get("file"), w.get("line")) + str(w.get("message")))


def student_error(exc: TracekitError, sub: Submission) -> str:
    """An error phrased for the student: the file (relative to the submission), the line, what is wrong.

    Location first, then one sentence, then ``Hint:`` when the hint is about the lab rather
    than about the command line.
    """

    path = str(exc.path or "")
    if path == sub.path and sub.kind == "file":
        path = path.replace("\\", "/").rsplit("/", 1)[-1]  # the file the student handed in
    for prefix in (sub.path.rstrip("/") + "/", f"{sub.id}:"):
        if path.startswith(prefix):
            path = path[len(prefix):]
    if path in (sub.id, sub.path):
        path = ""
    name = path.rsplit("/", 1)[-1] if path else None
    where = _where(name, exc.line)
    if name and not exc.line and exc.offset is not None:
        where = f"{name} byte {exc.offset:,}: "
    text = sentence(where + exc.message)
    if exc.hint and not _CLI_ADVICE.search(exc.hint):
        text += f" Hint: {sentence(exc.hint)}"
    elif isinstance(exc, UnknownFormatError):
        text += " Hint: hand in the trace files your simulation wrote (out.tr, Window.tr) or your capture " \
                "(.pcap or .pcapng)."
    return text
