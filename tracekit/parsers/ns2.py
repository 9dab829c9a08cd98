"""ns-2 "normal" wired trace (``$ns trace-all $f``, ``$ns trace-queue``): one packet event per line.

Line layout (``Trace::format()`` in ns-2.35 trace/trace.cc), fields separated by one space::

    event time from to ptype size flags fid src.port dst.port seqno uid [ackno 0xflags hlen sa_len]

* ``event``: ``+`` enqueue, ``-`` dequeue, ``r`` receive at ``to``, ``d`` drop, ``e`` RED early drop.
  Other leading characters (``v`` annotations from ``trace-annotate``, ``h``, ``m`` …) are skipped
  and counted (W-SKIPPED).
* ``time``: ``%.15g`` of the clock rounded to 1 µs (``0.5``, ``1``, ``1e-05``).
* ``from``/``to``: the *link's* end nodes, not the packet's source/destination.
* ``src``/``dst``: ``node.port``; with hierarchical addressing the node part is itself dotted,
  so it is split on the **last** dot.
* the four extra columns appear with ``Trace set show_tcphdr_ 1`` (ack number, TCP header flags in
  hex, header length, SACK block count); they are meaningful only for FullTcp.

TCP numbers are converted to bytes by :mod:`tracekit.parsers._ns2_tcp`; times stay simulation
seconds (time 0 = simulation start), so they line up with the run's ``Window.tr``/``WindowMon.tr``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl

from tracekit import schema
from tracekit._source import Source, load
from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._ns2_tcp import assign_flows, ecn_bits, proto_class, tcp_numbers
from tracekit.parsers._ns2_text import TextFrame, bad_line_warning, first_lines, line_ranges, split_lines
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "ns2"
DESCRIPTION = "ns-2 normal wired trace (trace-all / trace-queue), 12 or 16 columns, gzip ok"
DETECT = ("text whose lines have 12 (or 16, show_tcphdr_) single-space fields: event + - r d e, "
          "a number, two integer node ids, a packet type, integer size, a flag word, integer fid, "
          "two node.port addresses, integer seqno and uid; at least half of the first 60 lines")

#: event letter -> schema event ("e" is RED's early drop, not an error).
EVENTS = {"+": "enqueue", "-": "dequeue", "r": "recv", "d": "drop", "e": "drop"}
#: One event line: letter, %.15g time (``1``, ``0.5``, ``1e-05``), from, to, ptype, size, flags,
#: fid, src.port, dst.port, seqno, uid, and optionally the 4 show_tcphdr_ fields.
_LINE = re.compile(
    rb"^[-+rde] \d+(?:\.\d*)?(?:e[-+]?\d+)? -?\d+ -?\d+ \S+ \d+ \S+ -?\d+ \S+\.-?\d+ \S+\.-?\d+ -?\d+ -?\d+"
    rb"(?: -?\d+ 0x[0-9a-fA-F]+ -?\d+ -?\d+)? ?$"
)
_CAT, _I64 = pl.Categorical(), pl.Int64()
#: Typed columns: a field that does not parse becomes null and its line is reported as bad.
_DTYPES: dict[str, pl.DataType] = {
    "c0": _CAT, "c1": pl.Float64(), "c2": _I64, "c3": _I64, "c4": _CAT, "c5": _I64, "c6": _CAT,
    "c7": _I64, "c8": _CAT, "c9": _CAT, "c10": _I64, "c11": _I64,
    "c12": _I64, "c13": pl.String(), "c14": _I64, "c15": _I64, "c16": pl.String(),
}
#: Columns whose distinct combinations are few (links x endpoints x types): computed once each.
_COMBO = ["c0", "c2", "c3", "c4", "c6", "c8", "c9"]
_EP = r"^(.+)\.(-?\d+)$"


def sniff(head: bytes) -> bool:
    """True when most of the first lines are ns-2 normal-trace packet events (see :data:`DETECT`)."""
    lines = first_lines(head)
    if not lines:
        return False
    hits = sum(1 for ln in lines if _LINE.match(ln))
    return hits >= 1 and hits * 2 >= len(lines)


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    tcp_header_bytes: int | None = None,
) -> Trace:
    """Read an ns-2 normal wired trace.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (line length, lines, packets, decompressed size).
        strict: Turn warnings (bad or skipped lines, truncated last line) into errors.
        name: Name for messages when ``source`` is bytes.
        tcp_header_bytes: TCP/IP header bytes of data packets (default: from the trace, i.e. 40;
            pass 50 for runs with ``timestamps_ true``, which the trace cannot reveal).

    Returns:
        The trace: every event on every traced link, TCP numbers in bytes.

    Raises:
        UnknownFormatError: empty input.
        CorruptTraceError: no line is a valid event (the first bad line is named).
        LimitError: over ``max_lines`` or ``max_packets``.
    """
    loaded = load(source, limits)
    data, path = loaded.data, name or loaded.path
    log = WarningLog(path, strict)
    if not data:
        raise UnknownFormatError("empty file (0 bytes)", path=path,
                                 hint="the trace was not written; did the script reach flush-trace?")
    # 12-column traces (the common case) are split into 13 columns, the 13th catching extra fields;
    # show_tcphdr_ traces into 17. (Parsing 4 always-empty columns costs ~15 %.)
    ncols = 16 if _has_tcphdr(data[:65536]) else 12
    tf = split_lines(data, ncols, limits, path, {k: v for k, v in _DTYPES.items() if int(k[1:]) < ncols})
    del data
    rows, combos, counts = _classify(tf, log, path)
    if rows.height > limits.max_packets:
        raise LimitError(f"{rows.height:,} events, over the limit of {limits.max_packets:,}", path=path,
                         hint="raise max_packets in [limits] if this trace is genuine")
    meta: dict[str, Any] = {
        "format": NAME, "tool": "ns-2", "paths": [path], "compression": loaded.compression,
        "units": {"time": "s (simulation clock)", "pkt_seq": "packets (one-way TCP) or bytes (FullTcp)",
                  "size": "bytes (hdr_cmn size: payload + simulated headers)"},
        "counts": counts,
    }
    if rows.is_empty():
        log.add("W-EMPTY", "the trace holds no packet events")
        return make_trace(None, None, meta, log)
    combos = assign_flows(combos)
    n_flows = combos["flow"].n_unique() - int(combos["flow"].null_count() > 0)
    if n_flows > limits.max_flows:
        raise LimitError(f"{n_flows:,} connections, over the limit of {limits.max_flows:,}", path=path,
                         hint="raise max_flows in [limits] if this trace is genuine")
    ev = rows.join(combos.drop(_COMBO + ["_first", "_n"]), on="_h", how="left", maintain_order="left")
    ev, info = tcp_numbers(ev, tcp_header_bytes)
    times = ev["time"].to_numpy()
    back = np.flatnonzero(np.diff(times) < 0) if len(times) > 1 else np.zeros(0, np.int64)
    if len(back):
        log.add("W-NONMONOTONIC", f"{len(back):,} event(s) earlier than the line before (sorted by time, "
                "ties kept in file order)", count=len(back), line=int(ev["frame"][int(back[0]) + 1]))
        ev = ev.sort("time", maintain_order=True)
    meta.update(_tcp_meta(info))
    letters = combos.group_by("c0").agg(pl.col("_n").sum())
    meta["ns2_events"] = {str(k): int(v) for k, v in sorted(letters.iter_rows())}
    return make_trace(ev, None, meta, log)


def _has_tcphdr(head: bytes) -> bool:
    """True when the first event lines carry the 4 ``show_tcphdr_`` fields (16 fields)."""
    lines = [ln for ln in first_lines(head) if _LINE.match(ln)]
    return any(ln.rstrip(b" ").count(b" ") == 15 for ln in lines)


def _classify(tf: TextFrame, log: WarningLog, path: str) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    """Split the lines into events, skipped annotations, blank and bad lines; add the warnings.

    Returns:
        (event rows with their combo hash ``_h``, one row per distinct combo, counts for meta).
    """
    f = tf.fields
    ncols = len([x for x in f.columns if x.startswith("c")]) - 1
    c = [pl.col(f"c{i}") for i in range(ncols + 1)]
    letters0 = f["c0"].drop_nulls().unique().cast(pl.String).to_list()
    events = [x for x in letters0 if x in EVENTS]
    skippable = [x for x in letters0 if x not in EVENTS and len(x) == 1 and x.isascii() and x.isalpha()]
    if ncols == 16:
        hdr_n = pl.sum_horizontal([x.is_not_null().cast(pl.Int8) for x in c[12:16]])
        hdr_ok = (hdr_n == 0) | (
            (hdr_n == 4) & c[13].str.strip_prefix("0x").str.to_integer(base=16, strict=False).is_not_null()
        )
    else:
        hdr_ok = pl.lit(True)
    good = (
        c[0].is_in(events)
        & pl.all_horizontal([x.is_not_null() for x in c[1:12]])
        & hdr_ok & c[ncols].is_null()
        & c[1].is_finite() & (c[1] >= 0) & c[5].is_between(0, 2**32 - 1)
    )
    trunc = pl.lit(False) if tf.truncated_line is None else (pl.col("line") == tf.truncated_line)
    cls = f.select(
        "line", "blank",
        _good=good.fill_null(False) & ~trunc,
        _skip=c[0].is_in(skippable).fill_null(False) & ~trunc,
        _trunc=trunc & ~pl.col("blank"),
    )
    keep = ["line"] + [f"c{i}" for i in range(16 if ncols == 16 and f["c12"].is_not_null().any() else 12)]
    # (the common case, every line an event, needs no copy)
    rows = f.select(keep) if bool(cls["_good"].all()) else f.select(keep).filter(cls["_good"])
    # hash the categorical codes, not the strings (8x faster; equal strings share a code)
    rows = rows.with_columns(_h=pl.struct([pl.col(c).to_physical() for c in _COMBO]).hash())
    combos = _combos(rows)
    # lines whose node.port fields do not parse are bad too (checked once per combo)
    bad_ep = combos.filter(pl.col("src").is_null() | pl.col("dst").is_null() | pl.col("sport").is_null()
                           | pl.col("dport").is_null())
    bad = cls.filter(~pl.col("_good") & ~pl.col("_skip") & ~pl.col("_trunc") & ~pl.col("blank"))["line"]
    if not bad_ep.is_empty():
        ep_bad = rows.filter(pl.col("_h").is_in(bad_ep["_h"].implode()))["line"]
        rows = rows.filter(~pl.col("_h").is_in(bad_ep["_h"].implode()))
        combos = combos.join(bad_ep.select("_h"), on="_h", how="anti")
        bad = pl.concat([bad, ep_bad]).sort()
    bad_lines = bad.to_numpy()
    n_skip = int(cls["_skip"].sum())
    if rows.is_empty() and len(bad_lines):
        raise CorruptTraceError(
            f"no valid ns-2 trace event in the file; {len(bad_lines):,} line(s) malformed "
            f"(lines {line_ranges(bad_lines)})", path=path, line=int(bad_lines[0]),
            hint="expected 12 (or 16) space-separated fields: event time from to ptype size flags fid "
                 "src.port dst.port seqno uid")
    bad_line_warning(log, bad_lines, "not a 12/16-field ns-2 event (missing or extra fields, "
                     "non-numbers, over-long or binary lines)", tf.n_lines)
    if n_skip:
        first = int(cls.filter("_skip")["line"][0])
        log.add("W-SKIPPED", f"{n_skip:,} line(s) that are not packet events skipped (leading "
                f"{', '.join(repr(x) for x in sorted(skippable)[:8])}; e.g. trace-annotate lines)",
                count=n_skip, line=first)
    if tf.truncated_line is not None and bool(cls["_trunc"].any()):
        log.add("W-TRUNCATED", f"last line {tf.truncated_line:,} has no end of line (the simulator was "
                "stopped before flush-trace?); dropped it", line=tf.truncated_line)
    counts = {
        "records": tf.n_lines, "events": rows.height, "skipped": n_skip, "malformed": len(bad_lines),
        "blank": int(cls["blank"].sum()), "truncated": int(cls["_trunc"].sum()),
    }
    return _rows(rows), combos, counts


def _combos(rows: pl.DataFrame) -> pl.DataFrame:
    """Everything that depends only on (event, link, ptype, flags, endpoints), once per combination."""
    cb = rows.group_by("_h").agg(
        *[pl.col(k).first() for k in _COMBO],
        pl.col("line").min().cast(pl.Int64).alias("_first"),
        pl.len().alias("_n"),
    ).with_columns(pl.col(k).cast(pl.String) for k in ("c0", "c4", "c6", "c8", "c9"))
    frm = pl.col("c2").cast(pl.String)
    to = pl.col("c3").cast(pl.String)
    return cb.with_columns(
        event=pl.col("c0").replace_strict(EVENTS, return_dtype=pl.String).cast(schema.EVENT),
        node=pl.when(pl.col("c0") == "r").then(to).otherwise(frm),
        link=pl.concat_str([frm, pl.lit("->"), to]),
        src=pl.col("c8").str.extract(_EP, 1),
        sport=pl.col("c8").str.extract(_EP, 2).cast(pl.Int32, strict=False),
        dst=pl.col("c9").str.extract(_EP, 1),
        dport=pl.col("c9").str.extract(_EP, 2).cast(pl.Int32, strict=False),
        ptype=pl.col("c4"),
        _ecn=ecn_bits("c6"),
    ).with_columns(
        proto=proto_class(),
        _at_src=pl.col("node") == pl.col("src"),
        _ep_src=pl.concat_str([pl.col("src"), pl.lit("."), pl.col("sport").cast(pl.String)]),
        _ep_dst=pl.concat_str([pl.col("dst"), pl.lit("."), pl.col("dport").cast(pl.String)]),
    )


def _rows(rows: pl.DataFrame) -> pl.DataFrame:
    """The per-line columns (everything else comes from the combo)."""
    cols: list[pl.Expr] = [
        pl.col("_h"),
        pl.col("line").alias("frame"),
        pl.col("c1").alias("time"),
        pl.col("c5").alias("size"),
        pl.col("c10").alias("pkt_seq"),
        pl.col("c11").alias("pkt_id"),
    ]
    if "c12" in rows.columns and rows["c12"].is_not_null().any():
        cols += [
            pl.col("c12").alias("_hdr_ack"),
            pl.col("c13").str.strip_prefix("0x").str.to_integer(base=16, strict=False).alias("_hdr_flags"),
        ]
    return rows.select(cols)


def _tcp_meta(info: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """``segment_size`` (most common over TCP flows), ``packet_size`` and per-flow TCP facts."""
    segs = [v["segment_size"] for v in info.values() if v.get("segment_size")]
    pkts = [v["segment_size"] + v["header_bytes"] for v in info.values()
            if v.get("segment_size") and v.get("header_bytes") is not None]
    seg = max(set(segs), key=segs.count) if segs else None
    pkt = max(set(pkts), key=pkts.count) if pkts else None
    return {
        "segment_size": seg,
        "packet_size": pkt,
        "tcp_flows": {str(k): v for k, v in sorted(info.items())},
    }
