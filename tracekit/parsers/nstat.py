"""Kernel SNMP/netstat counter snapshots: ``nstat -az`` or ``netstat -s``, taken before and after a run.

Accepted shapes (docs/formats-kernel.md):

* ``nstat -az`` (iproute2): a ``#kernel`` line, then ``Name value rate`` lines with the
  kernel's own counter names (``TcpRetransSegs``, ``TcpExtTCPFastRetrans``, ...);
* ``netstat -s`` (net-tools): ``Tcp:`` / ``TcpExt:`` sections whose lines are either
  ``N <phrase>`` (net-tools' wording, mapped to the kernel name by :data:`PHRASES`) or
  ``Name: N`` (counters net-tools has no phrase for; named section + Name as nstat does);
* several snapshots in one file, each optionally after a ``date +%s.%N`` line; a new
  snapshot starts at a stamp, at ``#kernel``, or where a ``netstat -s`` section repeats.

The run's totals are the last snapshot minus the first (counters only grow); a file with a
single snapshot gives its values as they are (absolute counts since the network namespace
or host started, which a fresh namespace makes the run's) with a ``W-ONE-SNAPSHOT`` warning.
They go into ``meta["kernel"]["counters"]`` as tool-reported totals; there are no rows.
"""

from __future__ import annotations

import re

from tracekit._source import Source
from tracekit.errors import UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _stamps
from tracekit.parsers._text import head_text, load_text
from tracekit.trace import Trace, make_trace

NAME = "nstat"
DESCRIPTION = "nstat -az / netstat -s counter snapshots (before/after a run): the kernel's TCP totals"
DETECT = ("a '#kernel' line followed by 'Name number rate' lines (nstat), or a 'Tcp:' line at column 0 "
          "followed by indented lines such as 'N segments retransmitted' (netstat -s)")

_NSTAT_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s+(\d+)(?:\s+[\d.]+)?\s*$")
_SECTION = re.compile(r"^([A-Za-z][A-Za-z0-9]*):\s*$")
_NUM_PHRASE = re.compile(r"^\s+(\d+) (.+?)\s*$")
_NAME_NUM = re.compile(r"^\s+([A-Za-z][A-Za-z0-9_]*): (\d+)\s*$")

#: net-tools ``netstat -s`` wording -> kernel counter name (net-tools statistics.c), for the
#: sections this analysis uses; other phrases are counted in ``meta["counts"]["unmapped"]``.
PHRASES: dict[tuple[str, str], str] = {
    ("Tcp", "active connection openings"): "TcpActiveOpens",
    ("Tcp", "active connections openings"): "TcpActiveOpens",
    ("Tcp", "passive connection openings"): "TcpPassiveOpens",
    ("Tcp", "failed connection attempts"): "TcpAttemptFails",
    ("Tcp", "connection resets received"): "TcpEstabResets",
    ("Tcp", "connections established"): "TcpCurrEstab",
    ("Tcp", "segments received"): "TcpInSegs",
    ("Tcp", "segments sent out"): "TcpOutSegs",
    ("Tcp", "segments send out"): "TcpOutSegs",
    ("Tcp", "segments retransmitted"): "TcpRetransSegs",
    ("Tcp", "segments retransmited"): "TcpRetransSegs",
    ("Tcp", "bad segments received"): "TcpInErrs",
    ("Tcp", "bad segments received."): "TcpInErrs",
    ("Tcp", "resets sent"): "TcpOutRsts",
    ("TcpExt", "fast retransmits"): "TcpExtTCPFastRetrans",
    ("TcpExt", "forward retransmits"): "TcpExtTCPForwardRetrans",
    ("TcpExt", "retransmits in slow start"): "TcpExtTCPSlowStartRetrans",
    ("TcpExt", "other TCP timeouts"): "TcpExtTCPTimeouts",
    ("TcpExt", "retransmits lost"): "TcpExtTCPLostRetransmit",
    ("TcpExt", "times recovered from packet loss by selective acknowledgements"): "TcpExtTCPSackRecovery",
    ("TcpExt", "times recovered from packet loss due to fast retransmit"): "TcpExtTCPRenoRecovery",
    ("TcpExt", "timeouts after SACK recovery"): "TcpExtTCPSackFailures",
    ("TcpExt", "timeouts after reno fast retransmit"): "TcpExtTCPRenoFailures",
    ("TcpExt", "timeouts in loss state"): "TcpExtTCPLossFailures",
    ("TcpExt", "TCP data loss events"): "TcpExtTCPLoss",
    ("TcpExt", "classic Reno fast retransmits failed"): "TcpExtTCPRenoRecoveryFail",
    ("TcpExt", "SACK retransmits failed"): "TcpExtTCPSackRecoveryFail",
    ("TcpExt", "DSACKs received"): "TcpExtTCPDSACKRecv",
    ("TcpExt", "delayed acks sent"): "TcpExtDelayedACKs",
}

def sniff(head: bytes) -> bool:
    """True for nstat or netstat -s output (see :data:`DETECT`)."""
    lines = [_stamps.split_prefix(x)[1] for x in head_text(head).splitlines()[:200]]
    for i, line in enumerate(lines):
        nxt = lines[i + 1:i + 4]
        if line.strip() == "#kernel" and nxt and all(_NSTAT_LINE.match(x) for x in nxt):
            return True
        if line.rstrip() == "Tcp:" and any(_NUM_PHRASE.match(x) and "segments" in x for x in lines[i + 1:i + 12]):
            return True
    return False


class _Snapshots:
    """Snapshots as they are read: a list of (stamp ns or None, {name: value})."""

    def __init__(self) -> None:
        self.items: list[tuple[int | None, dict[str, int]]] = []
        self.stamp: int | None = None
        self.sections: set[str] = set()
        self.unmapped = 0
        self.tool: str | None = None

    def start(self) -> dict[str, int]:
        self.items.append((self.stamp, {}))
        self.stamp = None
        self.sections = set()
        return self.items[-1][1]


def _parse(text: str) -> tuple[_Snapshots, int, int | None]:
    snaps = _Snapshots()
    cur: dict[str, int] | None = None
    section: str | None = None
    bad, first_bad = 0, None
    for no, raw in enumerate(text.splitlines(), 1):
        stamp, line = _stamps.split_prefix(raw)
        if stamp is None and (alone := _stamps.alone(raw)) is not None:
            snaps.stamp, cur = alone, None
            continue
        if not line.strip():
            continue
        if line.strip() == "#kernel":
            snaps.stamp = snaps.stamp if snaps.stamp is not None else stamp
            cur, snaps.tool = snaps.start(), "nstat"
            continue
        sec = _SECTION.match(line)
        if sec:
            if cur is None or sec.group(1) in snaps.sections or snaps.tool == "nstat":
                snaps.stamp = snaps.stamp if snaps.stamp is not None else stamp
                cur, snaps.tool = snaps.start(), "netstat -s"
            section = sec.group(1)
            snaps.sections.add(section)
            continue
        if cur is None:
            bad, first_bad = bad + 1, first_bad or no
            continue
        if snaps.tool == "nstat":
            m = _NSTAT_LINE.match(line)
            if m:
                cur[m.group(1)] = int(m.group(2))
            else:
                bad, first_bad = bad + 1, first_bad or no
            continue
        m2 = _NAME_NUM.match(line)
        if m2 and section:
            cur[section + m2.group(1)] = int(m2.group(2))
            continue
        m3 = _NUM_PHRASE.match(line)
        key = PHRASES.get((section or "", m3.group(2))) if m3 else None
        if key is not None and m3 is not None:
            cur[key] = int(m3.group(1))
        else:
            snaps.unmapped += 1  # histograms, phrases without a kernel name here: not needed
    return snaps, bad, first_bad


def read(source: Source, *, limits: Limits = DEFAULT, strict: bool = False, name: str | None = None) -> Trace:
    """Read nstat / netstat -s snapshots into the run's counter totals.

    Args:
        source: Path, bytes or binary stream.
        limits: Resource limits.
        strict: Turn warnings (a single snapshot, unreadable lines, a counter that fell) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        A trace without rows; ``meta["kernel"]`` holds ``counters`` (last - first snapshot),
        ``snapshots``, ``counters_tool`` and ``interval_s`` (between the first and last stamp).

    Raises:
        UnknownFormatError: no snapshot in the file.
    """
    text, path, log, compression = load_text(source, limits, name, strict)
    snaps, bad, first_bad = _parse(text)
    items = [s for s in snaps.items if s[1]]
    if not items:
        raise UnknownFormatError("no nstat or netstat -s snapshot found", path=path,
                                 hint="record `nstat -az` (or `netstat -s`) before and after the run")
    if bad:
        log.add("W-BADLINE", f"{bad:,} line(s) are not counter lines", count=bad, line=first_bad)
    first, last = items[0][1], items[-1][1]
    if len(items) == 1:
        log.add("W-ONE-SNAPSHOT", "one snapshot only: its counters are totals since the namespace started",
                hint="take one snapshot before the run and one after")
        counters = dict(last)
    else:
        counters = {k: v - first.get(k, 0) for k, v in last.items()}
        fell = sorted(k for k, v in counters.items() if v < 0 and not k.endswith(("CurrEstab", "Forwarding")))
        if fell:
            log.add("W-COUNTER-FELL", f"{len(fell)} counter(s) are lower after than before (first {fell[0]}): "
                    "the snapshots come from different hosts or namespaces", count=len(fell))
    t_first, t_last = items[0][0], items[-1][0]
    meta = {
        "format": NAME, "tool": snaps.tool, "paths": [path], "compression": compression,
        "t0_ns": t_first,
        "kernel": {
            "counters": counters, "counters_tool": snaps.tool, "snapshots": len(items),
            "interval_s": (t_last - t_first) / 1e9 if t_first is not None and t_last is not None else None,
            "stamps_ns": [t_first, t_last],
        },
        "counts": {"snapshots": len(items), "unmapped_lines": snaps.unmapped},
    }
    return make_trace(None, None, meta, log)
