"""ns-2 wireless (CMU) traces, old and new (``$ns use-newtrace``) formats: agent-level TCP events.

Old format (``CMUTrace::format_mac_common`` … in trace/cmu-trace.cc), e.g.::

    s 13.635768742 _0_ AGT  --- 9 tcp 552 [0 0 0 0] ------- [0:0 1:0 32 0] [1 0] 0 0
    op time _node_ level why uid ptype size [mac] flags [src:port dst:port ttl nexthop] [seq ack] fwd optfwd

``level`` is ``%3s`` and ``why`` ``%4s`` (``---`` prints as `` ---``, hence two spaces); MAC-only
lines (RTS/CTS/ACK frames, ARP) stop earlier, CBR has ``[seq] fwd optfwd``; an optional
``[energy …]`` group follows the MAC bracket.
New format: ``op -t time -Hs … -Ni node … -Nl level -Nw why … -Is src.port -Id dst.port -It ptype
-Il size -If fid -Ii uid … -Pn tcp -Ps seq -Pa ack …`` (drops are ``d``).

tracekit keeps what TCP analysis needs: every agent-level (``AGT``) send/receive/drop (``s``→send,
``r``→recv, ``D``/``d``→drop) and the drops of TCP packets at any level (IFQ, MAC, RTR: the losses),
with the level in ``link``. Routing/MAC traffic and forwards (``f``) are counted, not kept.
``[seq ack]`` holds ns-2's packet numbers; they become bytes as for the wired trace
(:mod:`tracekit.parsers._ns2_tcp`). Note that sizes grow by the IP header on the way (an AGT
send of 552 bytes is received as 572), so payloads come from the segment size, not the line's size.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl

from tracekit._source import Source, load
from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._ns2_tcp import assign_flows, proto_class, tcp_numbers
from tracekit.parsers._ns2_text import (
    WHOLE_LINE,
    TextFrame,
    bad_line_warning,
    first_lines,
    line_ranges,
    split_lines,
)
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "ns2-wireless"
DESCRIPTION = "ns-2 wireless (CMU) trace, old `_node_ AGT` or new `-t … -Ni` format: agent-level TCP events"
DETECT = ("text where at least half of the first 60 lines (movement `M` and energy `N` lines aside) are "
          "CMU wireless events: `op time _N_ LEVEL …` (op s r f D, a node id between underscores) or "
          "`op -t time` with `-Hs`/`-Ni` tags")

_OLD_HEAD = re.compile(rb"^[srfDd] -?\d+\.\d+ _-?\d+_ \S+ +\S+ \d+ \S+ \d+")
_NEW_HEAD = re.compile(rb"^[srfdDM] -t \S+ .*-(?:Hs|Ni) ")
_OLD = (
    r"^(?P<op>[srfDd]) (?P<t>-?\d+\.\d+) _(?P<node>-?\d+)_ (?P<lvl>\S+) +(?P<why>\S+) (?P<uid>\d+) "
    r"(?P<ptype>\S+) (?P<size>\d+)"
    r"(?: \[[0-9a-fA-F]+ [0-9a-fA-F]+ [0-9a-fA-F]+ [0-9a-fA-F]+\])?(?: \[energy[^\]]*\])?"
    r"(?: \S+ \[(?P<src>-?\d+):(?P<sport>-?\d+) (?P<dst>-?\d+):(?P<dport>-?\d+) -?\d+ -?\d+\])?"
    r"(?: \[(?P<seq>-?\d+)(?: (?P<ackno>-?\d+))?\] -?\d+ -?\d+)?"
)
_NEW_KEYS = {"t": "t", "node": "Ni", "lvl": "Nl", "why": "Nw", "uid": "Ii", "ptype": "It", "size": "Il",
             "is": "Is", "id": "Id", "seq": "Ps", "ackno": "Pa"}
_EVENTS = {"s": "send", "r": "recv", "D": "drop", "d": "drop"}


def sniff(head: bytes) -> bool:
    """True when most of the first lines are CMU wireless trace events (see :data:`DETECT`)."""
    # movement (M) and energy (N) lines may open a trace (one per node): neither for nor against
    lines = [ln for ln in first_lines(head, 200) if not ln.startswith((b"M ", b"N "))][:60]
    if not lines:
        return False
    hits = sum(1 for ln in lines if _OLD_HEAD.match(ln) or _NEW_HEAD.match(ln))
    return hits >= 1 and hits * 2 >= len(lines)


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    tcp_header_bytes: int | None = None,
) -> Trace:
    """Read an ns-2 wireless trace (either format; detected per line).

    Args:
        source: Path, bytes or binary stream.
        limits: Resource limits.
        strict: Turn warnings (bad lines, truncated last line) into errors.
        name: Name for messages when ``source`` is bytes.
        tcp_header_bytes: TCP/IP header bytes of data packets at the agent (default from the trace: 40).

    Returns:
        Agent-level events of every flow, plus drops of TCP packets at any level.

    Raises:
        UnknownFormatError: empty input.
        CorruptTraceError: no line is a wireless trace event.
    """
    loaded = load(source, limits)
    data, path = loaded.data, name or loaded.path
    log = WarningLog(path, strict)
    if not data:
        raise UnknownFormatError("empty file (0 bytes)", path=path, hint="the trace was not written")
    tf = split_lines(data, 1, limits, path, separator=WHOLE_LINE)
    del data
    known, bad, skip, wformat = _lines(tf)
    ev, bad = _agent_events(known, bad, path)
    bad_line_warning(log, bad, "not a CMU wireless trace line", tf.n_lines)
    if tf.truncated_line is not None:
        log.add("W-TRUNCATED", f"last line {tf.truncated_line:,} has no end of line; dropped it",
                line=tf.truncated_line)
    drop_reasons = known.filter(pl.col("op").is_in(["D", "d"])).group_by("lvl", "why").len()
    meta: dict[str, Any] = {
        "format": NAME, "tool": "ns-2", "paths": [path], "compression": loaded.compression,
        "wireless_format": wformat,
        "units": {"time": "s (simulation clock)", "pkt_seq": "packets (ns-2 TCP seqno)", "size": "bytes"},
        "counts": {"records": tf.n_lines, "events": ev.height, "other_levels": known.height - ev.height,
                   "skipped": skip, "malformed": len(bad)},
        "drop_reasons": {f"{a} {b}": int(n) for a, b, n in drop_reasons.sort("lvl", "why").iter_rows()},
    }
    if ev.height > limits.max_packets:
        raise LimitError(f"{ev.height:,} events, over the limit of {limits.max_packets:,}", path=path)
    if ev.is_empty():
        log.add("W-EMPTY", "the trace holds no agent-level packet events")
        return make_trace(None, None, meta, log)
    ev, info = _packets(ev, limits, path, tcp_header_bytes, log)
    segs = [v["segment_size"] for v in info.values() if v.get("segment_size")]
    meta["segment_size"] = max(set(segs), key=segs.count) if segs else None
    meta["tcp_flows"] = {str(k): v for k, v in sorted(info.items())}
    return make_trace(ev, None, meta, log)


def _lines(tf: TextFrame) -> tuple[pl.DataFrame, np.ndarray, int, str]:
    """Parse every line in its format (old or new, per line).

    Args:
        tf: :func:`tracekit.parsers._ns2_text.split_lines` of the file (one whole-line field).

    Returns:
        (the lines that parsed, the malformed line numbers, the number of movement/energy lines
        skipped, ``"new"`` or ``"old"``: the format of most lines). A truncated last line is in neither.
    """
    # (a line holding the unit-separator byte lands partly in c1: it can only be junk)
    f = tf.fields.select("line", "blank", text=pl.when(pl.col("c1").is_null()).then(pl.col("c0")))
    text = pl.col("text")
    new = f.filter(text.str.contains(r"^\S -t "))
    old = f.filter(~text.str.contains(r"^\S -t ") & text.is_not_null())
    parsed = pl.concat([_old(old), _new(new)], how="diagonal_relaxed").sort("line")
    lines = f.select("line", "blank", first=text.str.slice(0, 1))
    known = parsed.filter(pl.col("ok"))
    # movement (M) and energy (N) lines are valid trace content tracekit does not use
    other = lines.join(known.select("line"), on="line", how="anti").filter(~pl.col("blank"))
    skip = other.filter(pl.col("first").is_in(["M", "N"]))
    bad = other.join(skip.select("line"), on="line", how="anti")["line"].sort().to_numpy()
    if tf.truncated_line is not None:
        known = known.filter(pl.col("line") != tf.truncated_line)
        bad = bad[bad != tf.truncated_line]
    return known, bad, skip.height, "new" if new.height > old.height else "old"


def _agent_events(known: pl.DataFrame, bad: np.ndarray, path: str) -> tuple[pl.DataFrame, np.ndarray]:
    """The events kept: agent-level sends, receives and drops, and drops of TCP packets at any level.

    Agent-level lines without the IP part cannot be placed in a flow: they join the malformed
    lines rather than being silently lost.

    Returns:
        (the events, the malformed line numbers).

    Raises:
        CorruptTraceError: no line is a wireless trace event.
    """
    is_tcp_pt = pl.col("ptype").is_in(["tcp", "ack"])
    agt = (pl.col("lvl") == "AGT") & pl.col("op").is_in(list(_EVENTS))
    keep = agt | (pl.col("op").is_in(["D", "d"]) & is_tcp_pt & pl.col("src").is_not_null())
    broken = known.filter(agt & ~pl.col("full"))["line"].to_numpy()
    if len(broken):
        bad = np.union1d(bad, broken)
    ev = known.filter(keep & pl.col("full"))
    if ev.is_empty() and len(bad) and known.height <= len(broken):
        raise CorruptTraceError(
            f"no ns-2 wireless trace event in the file; {len(bad):,} line(s) malformed (lines {line_ranges(bad)})",
            path=path, line=int(bad[0]), hint="expected CMU trace lines such as "
            "`s 13.6 _0_ AGT  --- 9 tcp 552 [0 0 0 0] ------- [0:0 1:0 32 0] [1 0] 0 0`")
    return ev, bad


def _packets(ev: pl.DataFrame, limits: Limits, path: str, tcp_header_bytes: int | None,
             log: WarningLog) -> tuple[pl.DataFrame, dict[int, dict[str, Any]]]:
    """The events as packets: flows and directions by endpoints, ns-2's packet numbers as TCP bytes.

    Events are sorted by time where a line is earlier than the one before it (W-NONMONOTONIC).

    Returns:
        (the packets, per-flow facts of :func:`tracekit.parsers._ns2_tcp.tcp_numbers`).
    """
    ev = ev.with_columns(
        frame=pl.col("line"),
        event=pl.col("op").replace_strict(_EVENTS, return_dtype=pl.String),
        link=pl.col("lvl"),
        proto=proto_class(),
        _at_src=pl.col("node") == pl.col("src"),
        _ecn=pl.lit(0, pl.UInt8),
        _ep_src=pl.concat_str([pl.col("src"), pl.lit("."), pl.col("sport").cast(pl.String)]),
        _ep_dst=pl.concat_str([pl.col("dst"), pl.lit("."), pl.col("dport").cast(pl.String)]),
    )
    combos = ev.group_by("_ep_src", "_ep_dst", "proto", "ptype").agg(
        pl.col("line").min().cast(pl.Int64).alias("_first")
    )
    combos = assign_flows(combos).select("_ep_src", "_ep_dst", "proto", "ptype", "flow", "dir")
    n_flows = combos["flow"].n_unique() - int(combos["flow"].null_count() > 0)
    if n_flows > limits.max_flows:
        raise LimitError(f"{n_flows:,} connections, over the limit of {limits.max_flows:,}", path=path,
                         hint="raise max_flows in [limits] if this trace is genuine")
    ev = ev.join(combos, on=["_ep_src", "_ep_dst", "proto", "ptype"], how="left", maintain_order="left")
    # only TCP rows with a [seq ack] group can be numbered; others keep pkt_seq null
    ev, info = tcp_numbers(ev.with_columns(proto=pl.when((pl.col("proto") == "tcp") & pl.col("pkt_seq").is_null())
                                           .then(pl.lit("other")).otherwise(pl.col("proto"))), tcp_header_bytes)
    times = ev["time"].to_numpy()
    if len(times) > 1 and bool((np.diff(times) < 0).any()):
        n_back = int((np.diff(times) < 0).sum())
        log.add("W-NONMONOTONIC", f"{n_back:,} event(s) earlier than the line before (sorted by time)", count=n_back)
        ev = ev.sort("time", maintain_order=True)
    return ev, info


def _typed(df: pl.DataFrame) -> pl.DataFrame:
    """Cast the extracted strings; ``ok`` = the line's head parsed."""
    return df.with_columns(
        time=pl.col("t").cast(pl.Float64, strict=False),
        node=pl.col("node").cast(pl.Int64, strict=False).cast(pl.String),
        size=pl.col("size").cast(pl.Int64, strict=False),
        pkt_id=pl.col("uid").cast(pl.Int64, strict=False),
        pkt_seq=pl.col("seq").cast(pl.Int64, strict=False),
        sport=pl.col("sport").cast(pl.Int32, strict=False),
        dport=pl.col("dport").cast(pl.Int32, strict=False),
    ).with_columns(
        # a valid line of any level (MAC control frames carry no IP part, some no uid/size)
        ok=(pl.col("op").is_not_null() & pl.col("time").is_finite() & (pl.col("time") >= 0)
            & pl.col("node").is_not_null() & pl.col("lvl").is_not_null()).fill_null(False),
        # what an agent-level event needs to become a packet row
        full=(pl.col("size").is_between(0, 2**32 - 1) & pl.col("pkt_id").is_not_null() & pl.col("src").is_not_null()
              & pl.col("dst").is_not_null() & pl.col("sport").is_not_null() & pl.col("dport").is_not_null()
              ).fill_null(False),
    ).select("line", "ok", "full", "op", "time", "node", "lvl", "why", "ptype", "size", "pkt_id", "pkt_seq",
             "src", "sport", "dst", "dport")


def _old(f: pl.DataFrame) -> pl.DataFrame:
    """Old CMU format lines -> typed columns (the bracket groups are optional per level)."""
    g = f.select("line", pl.col("text").str.extract_groups(_OLD).alias("m")).unnest("m")
    return _typed(g)


def _new(f: pl.DataFrame) -> pl.DataFrame:
    """New (``-t``) format lines -> typed columns, one tag at a time (robust to tag order)."""
    text = pl.col("text")
    cols = {k: text.str.extract(rf"(?:^| )-{tag} (\S+)", 1) for k, tag in _NEW_KEYS.items()}
    # transport fields only mean TCP numbers with -Pn tcp
    g = f.select("line", op=text.str.extract(r"^([srfdD]) ", 1), _is_tcp=text.str.contains(r" -Pn tcp( |$)"), **cols)
    ep = r"^(-?\d+)\.(-?\d+)$"
    g = g.with_columns(
        src=pl.col("is").str.extract(ep, 1), sport=pl.col("is").str.extract(ep, 2),
        dst=pl.col("id").str.extract(ep, 1), dport=pl.col("id").str.extract(ep, 2),
        seq=pl.when(pl.col("_is_tcp")).then(pl.col("seq")),
    )
    return _typed(g)
