"""ns-3 time series written by the tutorial and example programs: cwnd, ssthresh, RTT, RTO, ...

Three layouts, all ``Time::GetSeconds()`` printed with C++'s default 6 significant digits:

* ``sixth.cc`` (``sixth.cwnd``): ``time<TAB>old<TAB>new`` - congestion window in bytes;
* ``fifth.cc`` standard output: ``time<TAB>cwnd`` lines with ``RxDrop at <time>`` lines between;
* ``tcp-variants-comparison.cc`` (``<prefix>[-flow<i>]-cwnd.data``, ``-ssth``, ``-rtt``, ``-rto``,
  ``-inflight``, ``-next-tx``, ``-next-rx``): ``time value`` with one space; the cwnd, ssthresh,
  RTT and RTO files start with the literal line ``0.0 <old value>``.

The content says which layout a file has but not always which variable it holds, so the
file name is used as a hint (``-rtt.data`` -> rtt) and ``metric=`` forces it.
"""

from __future__ import annotations

import os
import re

import polars as pl

from tracekit._source import Source, describe, load
from tracekit.errors import CorruptTraceError, UnknownFormatError, UsageError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._text import NUMBER, check_lines, decode_text, head_text, lines_of
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "ns3-series"
DESCRIPTION = "ns-3 cwnd/ssthresh/RTT/RTO/inflight series (sixth.cwnd, fifth stdout, tcp-variants-comparison *.data)"
DETECT = ("every line is 'time<TAB>value[<TAB>value]' or 'RxDrop at time' (tab = ns-3), or 'time value' "
          "with one space where every time has at most 6 significant digits, times never decrease, and the "
          "first line is the literal '0.0 <value>' or every value is an integer and one is >= 500 (bytes)")

#: metric -> (unit, file-name patterns that hint at it). Checked in order.
METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "next_tx": ("bytes", (r"next-?tx",)),
    "next_rx": ("bytes", (r"next-?rx",)),
    "ssthresh": ("bytes", (r"ssth",)),
    "inflight": ("bytes", (r"in-?flight",)),
    "rto": ("s", (r"rto",)),
    "rtt": ("s", (r"rtt",)),
    "cwnd": ("bytes", (r"cwnd", r"cong")),
}
# ns-3 initialises SlowStartThreshold to UINT32_MAX ("infinite" until the first loss).
_SSTHRESH_UNSET = 4294967295.0
# tcp-variants-comparison writes "0.0 <old value>" before the first change; for these variables
# the old value 0 means "not set yet", not a measurement.
_PLACEHOLDER_ZERO = ("rtt", "rto", "ssthresh")

_TAB = rf"^({NUMBER})\t({NUMBER})(?:\t({NUMBER}))?$"
_SPACE = rf"^({NUMBER}) ({NUMBER})$"
_DROP = rf"^RxDrop at ({NUMBER})$"
_INT = r"^[+-]?\d+$"


def _sig_digits(tok: pl.Expr) -> pl.Expr:
    """Significant digits of a printed number (``0.581299`` -> 6, ``0.10000000000000001`` -> 17)."""
    return (tok.str.replace(r"[eE].*$", "").str.replace_all(r"[+\-.]", "")
            .str.strip_chars_start("0").str.len_chars())


def _looks_like(lines: pl.Series) -> str | None:
    """Which ns-3 layout ``lines`` (non-empty, complete) have: ``"tab"``, ``"space"`` or None."""
    df = pl.DataFrame({"l": lines})
    tab = df.select(m=pl.col("l").str.extract_groups(_TAB), d=pl.col("l").str.contains(_DROP))
    ok_tab = tab["m"].struct.field("1").is_not_null()
    if bool((ok_tab | tab["d"]).all()) and bool(ok_tab.any()):
        ncols = tab["m"].struct.field("3").is_not_null().filter(ok_tab)
        times = tab["m"].struct.field("1").filter(ok_tab)
        if ncols.n_unique() == 1 and bool((pl.select(_sig_digits(pl.lit(times))).to_series() <= 6).all()):
            return "tab"
        return None
    sp = df.select(m=pl.col("l").str.extract_groups(_SPACE)).unnest("m")
    if sp["1"].null_count():
        return None
    t = sp["1"]
    if not bool((pl.select(_sig_digits(pl.lit(t))).to_series() <= 6).all()):
        return None  # %.17g times ("0.10000000000000001"): ns-2's $ns now, not ns-3
    tf = t.cast(pl.Float64, strict=False)
    if tf.null_count() or (tf.len() > 1 and bool((tf.diff().drop_nulls() < 0).any())):
        return None
    if lines[0].startswith("0.0 "):
        return "space"
    v = sp["2"]
    if bool(v.str.contains(_INT).all()) and (v.cast(pl.Float64, strict=False).max() or 0) >= 500:  # type: ignore[operator]
        return "space"
    return None


def sniff(head: bytes) -> bool:
    """True for an ns-3 series file (see :data:`DETECT`)."""
    text = head_text(head)
    if not text.strip() or "\x00" in text:
        return False
    cut = not text.endswith("\n")
    lines = lines_of(text)
    if cut and lines.len() > 1:
        lines = lines.head(-1)  # the head may end inside a line
    lines = lines.filter(lines.str.strip_chars() != "").head(400)
    return lines.len() > 0 and _looks_like(lines) is not None


def metric_hint(path: str) -> str | None:
    """The metric a file name suggests (``x-rtt.data`` -> ``"rtt"``), or None."""
    base = os.path.basename(path).lower()
    for metric, (_unit, pats) in METRICS.items():
        if any(re.search(p, base) for p in pats):
            return metric
    return None


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    metric: str | None = None,
) -> Trace:
    """Read one ns-3 series file into samples.

    Args:
        source: Path, bytes or binary stream.
        limits: Resource limits (line length and count).
        strict: Turn warnings (bad lines, unknown metric) into errors.
        name: Name for messages (and the metric hint) when ``source`` is bytes.
        metric: Force the metric (one of :data:`METRICS`) instead of guessing it from the file name.

    Returns:
        A trace with samples only (``metric``/``unit`` per :data:`METRICS`; ``drops`` for
        fifth's ``RxDrop`` lines, cumulative).

    Raises:
        UsageError: an unknown ``metric``.
        UnknownFormatError: empty input.
        CorruptTraceError: no line has the layout of an ns-3 series.
    """
    if metric is not None and metric not in METRICS:
        raise UsageError(f"unknown ns-3 series metric {metric!r}; choose one of {', '.join(METRICS)}")
    loaded = load(source, limits)
    path = name or loaded.path
    log = WarningLog(path, strict)
    if not loaded.data.strip():
        raise UnknownFormatError("empty file", path=path, hint="the series was not written (no trace callback fired?)")
    text, _enc = decode_text(loaded.data, path, log)
    lines = lines_of(text)
    ok = check_lines(lines, path, limits, log)
    df, layout, good, is_drop = _series_lines(text, lines, ok, path, log)
    samples, three = _values(df, layout, good, log)
    fifth = bool(is_drop.any())
    chosen, how = _choose_metric(metric, path, fifth, three, log)
    unit = METRICS[chosen][0]
    counts: dict[str, int] = {"lines": int(lines.len())}
    if chosen == "ssthresh":
        unset = samples["value"] == _SSTHRESH_UNSET
        if unset.any():
            counts["ssthresh_unset"] = int(unset.sum())
            samples = samples.filter(~unset)
    if (chosen in _PLACEHOLDER_ZERO and layout == "space" and samples.height and df["line"][0].startswith("0.0 ")
            and samples["time"][0] == 0.0 and samples["value"][0] == 0.0):
        counts["placeholder"] = 1
        samples = samples.slice(1)
    base = os.path.basename(path) if path and not path.startswith("<") else (path or describe(source))
    samples = samples.with_columns(metric=pl.lit(chosen), unit=pl.lit(unit), source=pl.lit(base))
    if fifth:
        drops = df.filter(is_drop).select(
            time=pl.col("drop").cast(pl.Float64, strict=False),
            value=pl.int_range(1, pl.len() + 1).cast(pl.Float64),
            metric=pl.lit("drops"), unit=pl.lit("count"), source=pl.lit("RxDrop"),
        ).filter(pl.col("time").is_finite())
        samples = pl.concat([samples, drops]).sort("time", maintain_order=True)
    # (an ssthresh series of ns-3's unset marker only is a run without a loss, not an empty file)
    if samples.height == 0 and not counts.get("ssthresh_unset"):
        log.add("W-EMPTY", "the series holds no samples")
    meta = {
        "format": NAME,
        "tool": "ns-3",
        "paths": [path],
        "compression": loaded.compression,
        "layout": {"tab": "fifth" if fifth else ("sixth" if three else "tab"),
                   "space": "tcp-variants-comparison"}[layout],
        "metric": chosen,
        "metric_from": how,
        "units": {chosen: unit, "time": "s"},
        "time_precision": "6 significant digits (C++ default stream precision)",
        "time_origin": "simulation start",
        "counts": counts,
    }
    return make_trace(None, samples, meta, log)


def _series_lines(text: str, lines: pl.Series, ok: pl.Series, path: str, log: WarningLog
                  ) -> tuple[pl.DataFrame, str, pl.Series, pl.Series]:
    """Match every line against the series layouts and fifth's ``RxDrop`` lines.

    ns-3 ends every line with std::endl: a last line without one was cut short ("0.58129" may
    be what is left of "0.581299 14480"), so it is not trusted even when it parses (W-TRUNCATED).
    Other lines are skipped (W-BADLINE).

    Returns:
        (the lines with ``frame``, ``tab``/``sp`` matches and ``drop``; the layout, ``"tab"`` or
        ``"space"``; the good series lines; the RxDrop lines).

    Raises:
        CorruptTraceError: no line has a series layout.
    """
    df = pl.DataFrame({"line": lines}).with_row_index("frame", offset=1).filter(
        ok & (pl.col("line").str.strip_chars() != ""))
    df = df.with_columns(
        tab=pl.col("line").str.extract_groups(_TAB),
        sp=pl.col("line").str.extract_groups(_SPACE),
        drop=pl.col("line").str.extract(_DROP, 1),
    )
    n_tab = int(df["tab"].struct.field("1").is_not_null().sum())
    n_sp = int(df["sp"].struct.field("1").is_not_null().sum())
    layout = "tab" if n_tab >= n_sp else "space"
    if n_tab == 0 and n_sp == 0:
        first = int(df["frame"][0]) if df.height else 1
        raise CorruptTraceError("no line is 'time value' as ns-3 series write them", path=path, line=first,
                                hint="expected 'time<TAB>old<TAB>new', 'time<TAB>value' or 'time value' lines")
    m = df["tab" if layout == "tab" else "sp"].struct
    cut = not text.endswith(("\n", "\r")) and df.height > 0 and int(df["frame"][-1]) == lines.len()
    last = (df["frame"] == lines.len()) & cut
    good = m.field("1").is_not_null() & ~last
    is_drop = df["drop"].is_not_null() & ~last
    bad = ~good & ~is_drop & ~last
    if cut:
        log.add("W-TRUNCATED", "the last line has no line end: cut short, skipped", line=int(lines.len()))
    if bad.any():
        nbad = int(bad.sum())
        log.add("W-BADLINE", f"{nbad:,} line(s) are not series lines (skipped)", count=nbad,
                line=int(df["frame"].filter(bad)[0]))
    return df, layout, good, is_drop


def _values(df: pl.DataFrame, layout: str, good: pl.Series, log: WarningLog) -> tuple[pl.DataFrame, bool]:
    """``time, value`` of the good lines (a 3-column line's new value); non-finite ones left out (W-NONFINITE).

    Returns:
        (the samples, whether the file has the 3-column ``time old new`` layout).
    """
    m = df["tab" if layout == "tab" else "sp"].struct
    three = layout == "tab" and bool(m.field("3").is_not_null().any())
    value = pl.coalesce(m.field("3"), m.field("2")) if three else m.field("2")
    samples = df.select(
        time=m.field("1").cast(pl.Float64, strict=False),
        value=value.cast(pl.Float64, strict=False),
        _good=good,
    ).filter(pl.col("_good")).drop("_good")
    finite = samples["time"].is_finite() & samples["value"].is_finite()
    if not finite.all():
        log.add("W-NONFINITE", f"{int((~finite).sum())} sample(s) with an infinite/NaN time or value left out",
                count=int((~finite).sum()))
        samples = samples.filter(finite)
    return samples, three


def _choose_metric(metric: str | None, path: str, fifth: bool, three: bool, log: WarningLog) -> tuple[str, str]:
    """The metric the series holds and how it was chosen: the option, the file name, the layout or the default.

    ns-3's example programs write bare ``time value`` lines: only the file name, or the
    layout, tells which variable they trace.
    """
    if metric is not None:
        return metric, "option"
    if (hint := metric_hint(path)) is not None:
        return hint, "file name"
    if fifth or three:
        # fifth.cc prints only cwnd (with RxDrop lines); sixth.cc's 3-column file is its cwnd trace.
        return "cwnd", "layout"
    log.add("W-METRIC", "cannot tell which variable this series holds; read as cwnd (bytes)",
            hint="name the file like tcp-variants-comparison (-cwnd.data, -rtt.data, ...) or pass metric=")
    return "cwnd", "default"
