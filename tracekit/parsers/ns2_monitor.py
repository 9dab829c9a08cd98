"""ns-2 monitor files: what Tcl procs, agent variable traces and queue monitors print over time.

Kinds (recognised by column count and value shapes, never by file name — students rename files):

==============  =====================================  ==============================================
kind            line                                   written by
==============  =====================================  ==============================================
``window``      ``time cwnd``                          tpWindow lab ``plotWindow`` (Window.tr), 0.02 s
``windowmon``   ``time drops  droprate tput queue      tpWindow lab ``plotTPut`` (WindowMon.tr), 1 s
                avgtput``
``tcpudpmon``   ``time droprate tput drops pktsd``     tp_TCPUDP lab (TCPUDPMon*.tr), 0.1 s
``fairnessmon`` ``time pktsd tput``                    tp_fairness lab (fairnessMon*.tr), 5 s
``agent``       ``time saddr sport daddr dport var     ``$tcp attach $f; $tcp trace cwnd_`` (padded
                value``                                ``%-8.5f %-2d …``), one line per change
``queue``       ``q -t T -s S -d D -l BYTES -p PKTS``  QueueMonitor ``$qm trace $f``
==============  =====================================  ==============================================

The lab files print ``$ns now`` with Tcl's ``%.17g`` after repeated ``now + step``, so their times
drift (``59.980000000003777``); they are snapped back to the sampling grid. Metric names, units and
sources are listed in docs/formats-ns2.md; packets/s become bit/s when the data packet size is
known (option ``packet_size``, else found in an ns-2 trace beside the file, e.g. the run's ``out.tr``).
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tracekit._source import Source, compression_of, load
from tracekit.errors import CorruptTraceError, UnknownFormatError, UsageError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._ns2_text import TCL_NOISE, bad_line_warning, first_lines, line_ranges, tokens
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "ns2-monitor"
DESCRIPTION = "ns-2 monitor files: Window.tr, WindowMon.tr, TCPUDPMon, fairnessMon, cwnd_ agent trace, q -t"
DETECT = (
    "space-separated text where at least 90% of the first 60 lines are: `q -t T -s N -d N -l N -p N` "
    "(queue monitor); or `time saddr sport daddr dport name_ value` (agent variable trace, name ends "
    "in `_`); or numbers only, same count per line, times on a regular grid, and: 6 columns "
    "(cumulative integer drops, ratio 0..1, rate, integer queue, rate = WindowMon.tr), 5 columns "
    "(ratio, rate, cumulative drops, cumulative departures = TCPUDPMon), or 2/3 columns only with "
    "Tcl's %.17g time noise such as 0.10000000000000001 (Window.tr / fairnessMon); ns-3 `time value` "
    "files (6-digit times, event-driven) do not match"
)

KINDS = ("window", "windowmon", "tcpudpmon", "fairnessmon", "agent", "queue")
_NUM = re.compile(rb"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_QUEUE = re.compile(rb"^q -t \S+ -s -?\d+ -d -?\d+ -l -?\d+ -p -?\d+ *$")
_AGENT = re.compile(rb"^ *\d+\.\d+ +-?\d+ +-?\d+ +-?\d+ +-?\d+ +[A-Za-z][A-Za-z0-9_]*_ +-?[0-9.eE+-]+ *$")
#: Columns of each numeric kind, in file order (names as in the lab scripts).
COLUMNS = {
    "window": ("time", "cwnd"),
    "windowmon": ("time", "drops", "droprate", "tput", "queue", "avgtput"),
    "tcpudpmon": ("time", "droprate", "tput", "drops", "pktsd"),
    "fairnessmon": ("time", "pktsd", "tput"),
}
#: column -> (metric, unit); ``*_pps`` columns also get a bit/s twin when the packet size is known.
METRICS = {
    "cwnd": ("cwnd", "packets"),
    "drops": ("drops", "count"),
    "droprate": ("drop_rate", "ratio"),
    "tput": ("throughput_pps", "pps"),
    "queue": ("queue", "packets"),
    "avgtput": ("avg_throughput_pps", "pps"),
    "pktsd": ("departures", "count"),
}
#: agent variable -> (metric, unit). rtt_/srtt_/rttvar_ are printed in seconds by TcpAgent::traceVar.
AGENT_VARS = {
    "cwnd_": ("cwnd", "packets"), "ssthresh_": ("ssthresh", "packets"), "rtt_": ("rtt", "s"),
    "srtt_": ("srtt", "s"), "rttvar_": ("rttvar", "s"), "rto_": ("rto", "s"), "dupacks_": ("dupacks", "count"),
    "t_seqno_": ("next_seq", "packets"), "maxseq_": ("max_seq", "packets"), "ack_": ("acked_seq", "packets"),
    "ncwndcuts_": ("cwnd_cuts", "count"), "backoff_": ("rto_backoff", "1"), "awnd_": ("awnd", "packets"),
}
_SAMPLE_COLS = ["time", "flow", "node", "metric", "value", "unit", "source"]


# ---- detection -----------------------------------------------------------------------------------

def _numeric_kind(lines: list[bytes]) -> str | None:
    """The numeric kind of these lines, or None (see :data:`DETECT`)."""
    if len(lines) < 2 or any(b"\t" in ln for ln in lines):
        return None
    toks = [ln.split() for ln in lines]
    counts = [len(t) for t in toks]
    n = max(set(counts), key=counts.count)
    # a few damaged lines must not hide the kind (they become W-BADLINE when read)
    rows = [t for t in toks if len(t) == n and all(_NUM.match(x) for x in t)]
    if n not in (2, 3, 5, 6) or len(rows) * 10 < len(lines) * 9 or len(rows) < 2:
        return None
    v = np.array([[float(x) for x in t] for t in rows])
    d = np.diff(v[:, 0])
    step = float(np.median(d)) if len(d) else 0.0
    # a regular sampling grid (skipped damaged lines leave gaps of whole steps)
    k = np.round(d / step) if step > 0 else d
    if not (np.isfinite(v).all() and step > 0 and (k >= 1).all()
            and np.abs(d - k * step).max() <= 1e-6 * max(1.0, v[-1, 0])):
        return None
    tcl = any(TCL_NOISE.match(t[0]) for t in rows)

    def cum(c: int) -> bool:
        return bool((v[:, c] >= 0).all() and (np.diff(v[:, c]) >= 0).all() and (v[:, c] == np.round(v[:, c])).all())

    def ratio(c: int) -> bool:
        return bool(((v[:, c] >= 0) & (v[:, c] <= 1)).all())

    def nonneg(c: int) -> bool:
        return bool((v[:, c] >= 0).all())

    if (n == 6 and cum(1) and ratio(2) and nonneg(3) and nonneg(4) and (v[:, 4] == np.round(v[:, 4])).all()
            and nonneg(5)):
        return "windowmon"
    if n == 5 and ratio(1) and nonneg(2) and cum(3) and cum(4):
        return "tcpudpmon"
    if n == 3 and tcl and cum(1) and nonneg(2):
        return "fairnessmon"
    if n == 2 and tcl and nonneg(1):
        return "window"
    return None


def kind_of(head: bytes) -> str | None:
    """Which monitor kind ``head`` (the first bytes of a file) holds, or None."""
    lines = first_lines(head)
    if not lines:
        return None
    most = len(lines) * 9
    if sum(1 for ln in lines if _QUEUE.match(ln)) * 10 >= most:
        return "queue"
    if sum(1 for ln in lines if _AGENT.match(ln)) * 10 >= most:
        return "agent"
    return _numeric_kind(lines)


def sniff(head: bytes) -> bool:
    """True when ``head`` is one of the ns-2 monitor kinds (see :data:`DETECT`)."""
    return kind_of(head) is not None


# ---- reading -------------------------------------------------------------------------------------

def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    kind: str | None = None,
    packet_size: int | None = None,
    window: float | None = None,
    siblings: bool = True,
) -> Trace:
    """Read an ns-2 monitor file into ``samples``.

    Args:
        source: Path, bytes or binary stream.
        limits: Resource limits.
        strict: Turn warnings (bad lines, truncated last line) into errors.
        name: Name for messages when ``source`` is bytes.
        kind: Force a kind (one of :data:`KINDS`) instead of detecting it.
        packet_size: On-the-wire bytes per data packet, to turn packets/s into bit/s (the lab: 540).
        window: The TCP ``window_`` the script capped Window.tr's cwnd at (else guessed, see docs).
        siblings: When reading a path without ``packet_size``, look for an ns-2 packet trace in the
            same directory and take its data packet size.

    Returns:
        A Trace with samples only.

    Raises:
        UnknownFormatError: empty or not a monitor file.
        CorruptTraceError: no line of the detected kind is valid.
        UsageError: an unknown ``kind``.
    """
    loaded = load(source, limits)
    data, path = loaded.data, name or loaded.path
    log = WarningLog(path, strict)
    if not data:
        raise UnknownFormatError("empty file (0 bytes)", path=path, hint="the monitor file was not written")
    if kind is not None and kind not in KINDS:
        raise UsageError(f"unknown ns-2 monitor kind {kind!r}; choose one of {', '.join(KINDS)}")
    kind = kind or kind_of(data[:64 * 1024])
    if kind is None:
        raise UnknownFormatError("not an ns-2 monitor file (see `tracekit formats`)", path=path, line=1,
                                 hint="force a kind with kind='window'/'windowmon'/…, or pick another format")
    meta: dict[str, Any] = {"format": NAME, "tool": "ns-2", "paths": [path], "compression": loaded.compression,
                            "kind": kind}
    f, tf = tokens(data, limits, path)
    if kind == "queue":
        samples, bad = _queue(f)
    elif kind == "agent":
        samples, bad = _agent(f)
    else:
        if kind != "window":
            if packet_size is not None:
                meta["packet_size_from"] = "option"
            elif siblings and isinstance(source, (str, os.PathLike)):
                first, _bad = _numeric(f, kind, None, {}, None)
                packet_size, meta["packet_size_from"] = sibling_packet_size(Path(source), departures(first, kind))
            meta["packet_size"] = packet_size
        samples, bad = _numeric(f, kind, packet_size, meta, window)
    # the unterminated last line (killed simulator) is dropped, not trusted
    if tf.truncated_line is not None:
        samples = samples.filter(pl.col("_line") != tf.truncated_line)
        bad = bad[bad != tf.truncated_line]
    lines_ok = samples["_line"].n_unique() if samples.height else 0
    if lines_ok == 0 and len(bad):
        raise CorruptTraceError(
            f"no valid {kind} line in the file; {len(bad):,} malformed (lines {line_ranges(bad)})",
            path=path, line=int(bad[0]), hint=f"expected lines like: {_EXAMPLES[kind]}")
    bad_line_warning(log, bad, f"not a {kind} line ({_EXAMPLES[kind]})", tf.n_lines)
    if tf.truncated_line is not None:
        log.add("W-TRUNCATED", f"last line {tf.truncated_line:,} has no end of line; dropped it",
                line=tf.truncated_line)
    if samples.is_empty():
        log.add("W-EMPTY", "the monitor file holds no samples")
    meta["units"] = {"time": "s (simulation clock)", **_UNITS.get(kind, {})}
    meta["counts"] = {"records": tf.n_lines, "samples": samples.height, "malformed": len(bad),
                      "blank": int(tf.fields["blank"].sum())}
    return make_trace(None, samples.select(_SAMPLE_COLS), meta, log)


_EXAMPLES = {
    "window": "`0.10000000000000001 1`",
    "windowmon": "`1.1000000000000001 0  0.0 7.0 0 11.666666666666664`",
    "tcpudpmon": "`0.5 0.0 10.0 0 1`",
    "fairnessmon": "`5.0999999999999996 1200 230.0`",
    "agent": "`0.10000  0  0  1  0  cwnd_ 1.000`",
    "queue": "`q -t 0.105032 -s 4 -d 5 -l 40 -p 1`",
}
_UNITS = {
    "window": {"cwnd": "packets (segments)"},
    "windowmon": {"tput": "packets/s over the last 1 s", "avgtput": "packets/s since 0.5 s",
                  "drops": "packets, cumulative", "droprate": "cumulative ratio", "queue": "packets"},
    "tcpudpmon": {"tput": "packets/s over the last sampling interval", "drops": "packets, cumulative",
                  "pktsd": "packets, cumulative", "droprate": "cumulative ratio"},
    "fairnessmon": {"tput": "packets/s over the last sampling interval", "pktsd": "packets, cumulative"},
    "agent": {"cwnd_": "packets", "ssthresh_": "packets", "rtt_": "s", "srtt_": "s", "rttvar_": "s"},
    "queue": {"-l": "bytes", "-p": "packets"},
}


def _numbers(f: pl.DataFrame, n: int) -> tuple[pl.DataFrame, np.ndarray]:
    """Lines of exactly ``n`` finite numbers -> columns v0..v{n-1}; the line numbers of the others."""
    vals = [pl.col("f").list.get(i, null_on_oob=True).cast(pl.Float64, strict=False).alias(f"v{i}") for i in range(n)]
    g = f.select("line", "blank", "nf", *vals)
    ok = (pl.col("nf") == n) & pl.all_horizontal([pl.col(f"v{i}").is_finite() for i in range(n)]).fill_null(False)
    good = g.filter(ok)
    bad = g.filter(~ok & ~pl.col("blank"))["line"].to_numpy()
    return good, bad


def snap_times(t: pl.Series) -> tuple[pl.Series, float | None]:
    """Snap Tcl-accumulated sample times back to their grid (``t0 + k*step``), when they are on one.

    ``$ns at [expr $now+$time]`` adds the step in binary floating point, so after a minute the
    times are off by ~4e-12 s (``59.980000000003777``). Only snapped when every time is within
    1 µs of the grid; otherwise the times are kept (rounded to 1 ns).
    """
    if t.len() < 2:
        return t.round(9), None
    step = round(float(np.median(np.diff(t.to_numpy()))), 6)
    if step <= 0:
        return t.round(9), None
    t0 = round(float(t[0]), 6)
    k = ((t - t0) / step).round(0)
    grid = t0 + k * step
    if float((t - grid).abs().max()) > 1e-6:  # type: ignore[arg-type]
        return t.round(9), None
    return grid.round(9), step


def _long(df: pl.DataFrame, columns: dict[str, str], scale: dict[str, float] | None = None) -> pl.DataFrame:
    """Wide (time + value columns) -> the samples' long rows, one metric per column."""
    parts = []
    for col, src in columns.items():
        metric, unit = METRICS[src]
        parts.append(df.select(
            "time", "_line", pl.col(col).alias("value"),
            metric=pl.lit(metric), unit=pl.lit(unit), source=pl.lit(src)))
        if scale and src in scale:
            parts.append(df.select(
                "time", "_line", (pl.col(col) * scale[src]).alias("value"),
                metric=pl.lit(metric.removesuffix("_pps")), unit=pl.lit("bps"), source=pl.lit(src)))
    out = pl.concat(parts) if parts else pl.DataFrame()
    return out.with_columns(flow=pl.lit(None, pl.UInt32), node=pl.lit(None, pl.String))


def _numeric(f: pl.DataFrame, kind: str, packet_size: int | None, meta: dict[str, Any],
             window: float | None) -> tuple[pl.DataFrame, np.ndarray]:
    names = COLUMNS[kind]
    good, bad = _numbers(f, len(names))
    good = good.rename({f"v{i}": n for i, n in enumerate(names)}).rename({"line": "_line"})
    t, step = snap_times(good["time"])
    good = good.with_columns(t.alias("time"))
    meta["time_grid_s"] = step
    scale = {"tput": packet_size * 8.0, "avgtput": packet_size * 8.0} if packet_size else None
    if kind == "window" and good.height:
        meta.update(_cwnd_cap(good, window, step))
    return _long(good, {n: n for n in names[1:]}, scale), bad


def _cwnd_cap(good: pl.DataFrame, window: float | None, step: float | None) -> dict[str, Any]:
    """Window.tr prints ``$windowSize`` whenever cwnd >= window_: record that cap.

    Without the ``window`` option the cap is guessed: the largest value, when it is a whole number
    held for at least 1 s of consecutive samples (ns-2's cwnd_ keeps growing past window_, so a
    long flat top at the maximum is the clip; slow-start steps last one RTT, congestion avoidance
    changes every ACK).
    """
    cw = good["cwnd"]
    top = float(cw.max())  # type: ignore[arg-type]
    if window is not None:
        return {"cwnd_cap": float(window), "cwnd_cap_from": "option", "cwnd_max": top}
    at_top = (cw == top).to_numpy().astype(np.int8)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], at_top, [0]))))
    longest = int((edges[1::2] - edges[0::2]).max()) if len(edges) else 0
    capped = top == round(top) and longest * (step or 0.0) >= 1.0
    return {"cwnd_cap": top if capped else None, "cwnd_cap_from": "guess" if capped else None, "cwnd_max": top}


def _agent(f: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    g = f.select(
        "line", "blank", "nf",
        time=pl.col("f").list.get(0, null_on_oob=True).cast(pl.Float64, strict=False),
        sa=pl.col("f").list.get(1, null_on_oob=True), sp=pl.col("f").list.get(2, null_on_oob=True),
        da=pl.col("f").list.get(3, null_on_oob=True), dp=pl.col("f").list.get(4, null_on_oob=True),
        var=pl.col("f").list.get(5, null_on_oob=True),
        value=pl.col("f").list.get(6, null_on_oob=True).cast(pl.Float64, strict=False),
    )
    ints = pl.all_horizontal([pl.col(c).cast(pl.Int64, strict=False).is_not_null() for c in ("sa", "sp", "da", "dp")])
    ok = ((pl.col("nf") == 7) & ints & pl.col("time").is_finite() & pl.col("value").is_finite()
          & pl.col("var").str.contains(r"^[A-Za-z][A-Za-z0-9_]*_$")).fill_null(False)
    good = g.filter(ok)
    bad = g.filter(~ok & ~pl.col("blank"))["line"].to_numpy()
    known = pl.DataFrame({"var": list(AGENT_VARS), "metric": [m for m, _ in AGENT_VARS.values()],
                          "unit": [u for _, u in AGENT_VARS.values()]})
    out = good.join(known, on="var", how="left", maintain_order="left").select(
        "time", pl.col("line").alias("_line"), "value",
        metric=pl.coalesce("metric", pl.col("var").str.strip_suffix("_")),
        unit=pl.coalesce("unit", pl.lit("1")),
        source=pl.col("var"),
        # the agent's connection, as the packet trace names its endpoints: "0.0->6.0"
        node=pl.concat_str([pl.col("sa"), pl.lit("."), pl.col("sp"), pl.lit("->"), pl.col("da"), pl.lit("."),
                            pl.col("dp")]),
        flow=pl.lit(None, pl.UInt32),
    )
    return out, bad


def _queue(f: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    def get(i: int) -> pl.Expr:
        return pl.col("f").list.get(i, null_on_oob=True)

    g = f.select(
        "line", "blank", "nf",
        tags=pl.concat_str([get(i) for i in (0, 1, 3, 5, 7, 9)], separator=" "),
        time=get(2).cast(pl.Float64, strict=False),
        s=get(4).cast(pl.Int64, strict=False), d=get(6).cast(pl.Int64, strict=False),
        b=get(8).cast(pl.Float64, strict=False), p=get(10).cast(pl.Float64, strict=False),
    )
    ok = ((pl.col("nf") == 11) & (pl.col("tags") == "q -t -s -d -l -p") & pl.col("time").is_finite()
          & pl.col("s").is_not_null() & pl.col("d").is_not_null() & pl.col("b").is_finite() & pl.col("p").is_finite()
          ).fill_null(False)
    good = g.filter(ok).with_columns(
        node=pl.concat_str([pl.col("s").cast(pl.String), pl.lit("->"), pl.col("d").cast(pl.String)]))
    bad = g.filter(~ok & ~pl.col("blank"))["line"].to_numpy()
    base = good.select("time", pl.col("line").alias("_line"), "node", flow=pl.lit(None, pl.UInt32))
    out = pl.concat([
        base.with_columns(value=good["p"], metric=pl.lit("queue"), unit=pl.lit("packets"), source=pl.lit("-p")),
        base.with_columns(value=good["b"], metric=pl.lit("queue_bytes"), unit=pl.lit("bytes"), source=pl.lit("-l")),
    ])
    return out, bad


def departures(samples: pl.DataFrame, kind: str) -> pl.DataFrame:
    """(time, cumulative departed packets ``d``) per sample, from the monitor itself.

    WindowMon.tr has no departure column, but the lab computes ``avgtput = pdepartures_/(now - 0.5)``
    (FTP starts at 0.5 s), so ``avgtput * (now - 0.5)`` gives it back; the other kinds print ``pktsd``.
    """
    if kind == "windowmon":
        s = samples.filter(pl.col("source") == "avgtput", pl.col("unit") == "pps").with_columns(
            d=(pl.col("value") * (pl.col("time") - 0.5)).round(0))
    else:
        s = samples.filter(pl.col("source") == "pktsd").with_columns(d=pl.col("value"))
    return s.select("time", pl.col("d").cast(pl.Int64)).sort("time")


#: Files of a folder looked at for a sibling trace (a monitor saved in a crowded folder stays cheap).
_MAX_SIBLINGS = 200


def sibling_packet_size(path: Path, deps: pl.DataFrame) -> tuple[int | None, str | None]:
    """The packet size of the monitored flow, from an ns-2 normal trace beside ``path``.

    Students keep several runs' files in one folder, so a sibling trace is only trusted when it is
    the same run: one (link, fid) of it must have exactly the monitor's cumulative departures
    (``-`` events) at every sample time its first 256 KiB cover (at least 3 samples, the last
    with 10+ departures).

    Args:
        path: The monitor file.
        deps: (time, cumulative departures ``d``) from :func:`departures`.

    Returns:
        (most common size of that flow's departures in bytes, the file it came from), or (None, None).
    """
    from tracekit.parsers._ns2_text import split_lines
    from tracekit.parsers.ns2 import _DTYPES
    from tracekit.parsers.ns2 import sniff as ns2_sniff

    try:
        entries = sorted(p for p in path.parent.iterdir() if p.is_file() and p != path and not p.name.startswith("."))
    except OSError:
        return None, None
    for p in entries[:_MAX_SIBLINGS]:
        try:
            if not ns2_sniff(_head(p, 64 * 1024)):
                continue
            head = _head(p, 256 * 1024)
        except OSError:
            continue
        head = head[: head.rfind(b"\n") + 1]
        f = split_lines(head, 16, DEFAULT, p.name, _DTYPES).fields.filter(pl.col("c1").is_not_null())
        if f.height == 0:
            continue
        covered = deps.filter(pl.col("time") < f["c1"].max())
        if covered.height < 3 or int(covered["d"][-1]) < 10:
            continue  # too little overlap to tell one run from another
        t = covered["time"].to_numpy()
        want = covered["d"].to_numpy()
        deq = f.filter(pl.col("c0") == "-")
        for (_a, _b, _fid), g in deq.group_by("c2", "c3", "c7"):
            times = np.sort(g["c1"].to_numpy())
            # a departure at exactly the sample time may run before or after the sampling proc
            le = np.searchsorted(times, t, side="right")
            lt = np.searchsorted(times, t, side="left")
            if bool(((le == want) | (lt == want)).all()):
                return int(g["c5"].mode().max()), p.name  # type: ignore[arg-type]
    return None, None


def _head(p: Path, n: int) -> bytes:
    """Up to ``n`` bytes of a file's (decompressed) content."""
    with open(p, "rb") as fh:
        raw = fh.read(n)
    kind = compression_of(raw[:8])
    if kind is None:
        return raw
    if kind == "gzip":
        try:
            return zlib.decompressobj(47).decompress(raw, n)
        except zlib.error:
            return b""
    from tracekit.parsers import head_of

    return head_of(raw)
