"""Wall-clock stamps written beside kernel snapshots (``ss`` logs, ``nstat``/``netstat -s`` files).

Two spellings are accepted, on a line of their own (``date +%s.%N`` before a block, also as a
comment ``# t=STAMP``) or as a prefix of every line (moreutils ``ts '%.s'`` / ``ts '%F %.T'``):

* UNIX epoch seconds with up to 9 decimals (``1795654961.871165893``);
* ISO-8601 date and time (``2026-11-26 01:02:03.123456``, ``T`` allowed), with an optional
  zone (``Z``, ``+0100``, ``+01:00``); a stamp without a zone is read as UTC, because the
  reader cannot know the recording machine's zone (docs/formats-kernel.md).

Stamps are kept as integer nanoseconds: a float64 epoch holds only ~0.2 µs.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_EPOCH = r"(?P<s>\d{9,11})(?:\.(?P<f>\d{1,9}))?"
_ISO = (r"(?P<d>\d{4}-\d{2}-\d{2})[ T](?P<t>\d{2}:\d{2}:\d{2})(?:[.,](?P<fi>\d{1,9}))?"
        r"(?:\s?(?P<z>Z|[+-]\d{2}:?\d{2}))?")
#: A stamp alone on its line, or as a shell comment ``# t=STAMP`` (``printf "# t=%s\n"
#: "$EPOCHREALTIME"``, as samples/linux/make_kernel_truth.sh writes before each poll).
ALONE = re.compile(rf"^\s*(?:#\s*t=\s*)?(?:{_EPOCH}|{_ISO})\s*$")
#: A stamp at the start of a line, then one space (``ts``) and the line as the tool printed it.
PREFIX = re.compile(rf"^(?:{_EPOCH}|{_ISO}) ")


def stamp_ns(m: re.Match[str]) -> int | None:
    """Nanoseconds since 1970 of a matched stamp (None for an impossible date)."""
    if m.group("s") is not None:
        frac = (m.group("f") or "").ljust(9, "0")
        return int(m.group("s")) * 1_000_000_000 + int(frac)
    try:
        zone = m.group("z")
        when = datetime.fromisoformat(f"{m.group('d')}T{m.group('t')}")
        if zone and zone != "Z":
            zone = zone if ":" in zone else f"{zone[:3]}:{zone[3:]}"
            when = datetime.fromisoformat(f"{m.group('d')}T{m.group('t')}{zone}")
        else:
            when = when.replace(tzinfo=UTC)
    except ValueError:
        return None
    frac = (m.group("fi") or "").ljust(9, "0")
    return int(when.timestamp()) * 1_000_000_000 + int(frac)


def split_prefix(line: str) -> tuple[int | None, str]:
    """(stamp in ns or None, the rest of the line) for a ``ts``-prefixed line; (None, line) otherwise."""
    m = PREFIX.match(line)
    if m is None:
        return None, line
    return stamp_ns(m), line[m.end():]


def alone(line: str) -> int | None:
    """The stamp of a line that holds nothing else, or None."""
    m = ALONE.match(line)
    return stamp_ns(m) if m is not None else None
