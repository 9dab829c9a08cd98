"""Flent data files (``*.flent.gz``, ``.flent``, ``.flent.bz2``): every series as samples.

One JSON document (``flent/resultset.py``, ``doc/data-format.rst``)::

    {"metadata": {..., "SERIES_META": {series: {"UNITS": "Mbits/s", ...}}, "T0": "2017-...Z"},
     "raw_values": {series: [{"t": <epoch s>, "val": .., "tcp_cwnd": .., ...}, ...]},
     "results": {series: [v0, v1, ...]},      # aligned with x_values, null = no data
     "version": 4, "x_values": [0.0, 0.2, ...]}   # seconds relative to T0

``results`` are flent's resampled series on ``x_values``; ``raw_values`` are the
measurements at their own (absolute) times and are read too with ``raw=True``.
Versions up to 4 are read (older files lack ``raw_values``); newer ones are refused.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import polars as pl

from tracekit._source import Source, load
from tracekit.errors import CorruptTraceError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._text import bom_encoding, head_text
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "flent"
DESCRIPTION = "Flent data file (.flent.gz/.flent/.flent.bz2, format versions 1-4): throughput, ping, TCP cwnd/RTT"
DETECT = ('decompressed text starts with "{" and holds "metadata" or "results" together with '
          '"x_values", "FLENT_VERSION", "SERIES_META", "BATCH_NAME" or "DATA_FILENAME"')
# flent writes sorted keys: "metadata" comes first and its first keys are BATCH_*, DATA_FILENAME,
# EGRESS_INFO (which can be long), FAILED_RUNNERS, FLENT_VERSION, ...; any of them marks the file.
_MARKERS = ('"x_values"', '"FLENT_VERSION"', '"SERIES_META"', '"BATCH_NAME"', '"DATA_FILENAME"')

#: Newest data-file version this reader understands (flent's FILEFORMAT_VERSION).
MAX_VERSION = 4

# SERIES_META UNITS -> (scale to schema units, unit)
_UNITS: dict[str, tuple[float, str]] = {
    "Mbits/s": (1e6, "bps"), "Mbit/s": (1e6, "bps"), "Kbits/s": (1e3, "bps"), "Gbits/s": (1e9, "bps"),
    "bits/s": (1.0, "bps"), "ms": (1e-3, "s"), "s": (1.0, "s"), "bytes": (1.0, "bytes"),
    "packets": (1.0, "packets"), "pkts": (1.0, "packets"),
}
# Socket-stats children flent adds under a stream ("TCP upload::1::tcp_cwnd"): (metric, scale, unit).
# Linux reports cwnd in packets (segments) and RTT in ms (ss -i).
_TCP_CHILD: dict[str, tuple[str, float, str]] = {
    "tcp_cwnd": ("cwnd", 1.0, "packets"),
    "tcp_rtt": ("rtt", 1e-3, "s"),
    "tcp_rtt_var": ("rttvar", 1e-3, "s"),
    "tcp_pacing_rate": ("pacing_rate", 1e6, "bps"),
    "tcp_delivery_rate": ("delivery_rate", 1e6, "bps"),
}
_HOST_SERIES = re.compile(r"^(cpu_stats|qdisc_stats)_(.+?)(?:::(.+))?$")


def sniff(head: bytes) -> bool:
    """True for a Flent JSON document (see :data:`DETECT`)."""
    text = head_text(head).lstrip()
    if not text.startswith("{"):
        return False
    return ('"metadata"' in text or '"results"' in text) and any(k in text for k in _MARKERS)


def _classify(series: str, units: str | None) -> tuple[str, float, str, str | None]:
    """(metric, scale, unit, node) of a series from its name and SERIES_META UNITS."""
    child = series.rsplit("::", 1)[-1] if "::" in series else None
    if child in _TCP_CHILD:
        metric, scale, unit = _TCP_CHILD[child]
        return metric, scale, unit, None
    host = _HOST_SERIES.match(series)
    if host:
        kind, node, key = host.group(1), host.group(2), host.group(3) or "value"
        if kind == "cpu_stats":
            # per-CPU utilisation (cpu0, cpu1, ...) and the load average share one metric per kind
            return ("cpu_load" if key == "load" else "cpu_usage", 1.0, "ratio", node)
        return (f"qdisc_{key}", 1.0, "1", node)
    scale, unit = _UNITS.get(units or "", (1.0, "1"))
    lower = series.lower()
    if unit == "bps":
        metric = "throughput"
    elif units == "ms" and lower.startswith("ping"):
        metric = "ping_rtt"
    elif unit == "s":
        metric = "latency"
    else:
        return (series, 1.0, "1", None)
    if lower.endswith(" avg"):
        metric += "_avg"
    elif lower.endswith(" sum") or lower.endswith(" totals"):
        metric += "_sum"
    return (metric, scale, unit, None)


def _epoch(t0: Any) -> float | None:
    """metadata T0 (``2017-02-21T20:55:11.677001Z``) as UNIX seconds, or None."""
    if not isinstance(t0, str):
        return None
    try:
        when = datetime.fromisoformat(t0.replace("Z", "+00:00"))
        # flent writes UTC; a zone-less stamp must not be read in the local time zone
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def _numbers(values: list[Any]) -> pl.Series:
    """A JSON list as Float64: numbers kept, numeric strings parsed (old files), anything else null."""
    try:
        return pl.Series(values, dtype=pl.Float64, strict=False)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        return pl.Series([v if isinstance(v, (int, float)) else None for v in values], dtype=pl.Float64)


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    raw: bool = False,
) -> Trace:
    """Read a Flent data file.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (the decompression cap bounds the JSON size).
        strict: Turn warnings (series of the wrong length, non-numeric values) into errors.
        name: Name for messages when ``source`` is bytes.
        raw: Also read ``raw_values`` (measurement times, relative to T0; source ``"<series> [raw]"``).

    Returns:
        A trace with samples only; ``meta["flent"]`` holds the metadata (NAME, TITLE, T0, HOSTS, ...).

    Raises:
        UnknownFormatError: empty input, not a Flent document, or a newer format version.
        CorruptTraceError: invalid JSON or a document without ``x_values``/``results``.
    """
    loaded = load(source, limits)
    path = name or loaded.path
    log = WarningLog(path, strict)
    doc = _document(loaded.data, path)
    version = doc.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptTraceError(f"'version' is {version!r}, not an integer", path=path)
    if version > MAX_VERSION:
        raise UnknownFormatError(f"Flent data format version {version} is newer than this reader ({MAX_VERSION})",
                                 path=path, hint="upgrade tracekit")
    x = doc.get("x_values")
    results = doc.get("results")
    meta_in = m if isinstance(m := doc.get("metadata"), dict) else {}
    if not isinstance(x, list) or not isinstance(results, dict):
        raise CorruptTraceError("no 'x_values' list / 'results' object: not a complete Flent data file", path=path,
                                hint="was it written by flent? try opening it with flent --gui")
    if version < 3:
        log.add("W-VERSION", f"old Flent data format version {version} (read as version 3)")
    series_meta = m if isinstance(m := meta_in.get("SERIES_META"), dict) else {}
    xs = _numbers(x)
    frames = _result_frames(xs, results, series_meta, log)
    t0 = _epoch(meta_in.get("T0"))
    raw_count = 0
    if raw:
        raw_values = m if isinstance(m := doc.get("raw_values"), dict) else {}
        if t0 is None and raw_values:
            log.add("W-BADVALUE", "metadata T0 is missing or not ISO-8601: raw values not read")
        if t0 is not None:
            raw_count = _raw_frames(raw_values, t0, series_meta, frames)
    samples = pl.concat(frames, how="vertical_relaxed") if frames else None
    if samples is not None:
        # flent leaves null where a series has no data (start/end gaps); NaN/inf are not data either
        samples = samples.filter(pl.col("value").is_not_null() & pl.col("value").is_finite()
                                 & pl.col("time").is_not_null() & pl.col("time").is_finite())
    if samples is None or samples.height == 0:
        log.add("W-EMPTY", "the Flent file holds no data points")
    keep = ("NAME", "TITLE", "NOTE", "TIME", "T0", "LENGTH", "TOTAL_LENGTH", "STEP_SIZE", "HOST", "HOSTS",
            "LOCAL_HOST", "FLENT_VERSION", "KERNEL_NAME", "KERNEL_RELEASE", "IP_VERSION", "DATA_FILENAME",
            "BATCH_NAME", "BATCH_TITLE", "TEST_PARAMETERS", "FAILED_RUNNERS", "SERIES_META")
    meta = {
        "format": NAME,
        "tool": "flent",
        "paths": [path],
        "compression": loaded.compression,
        "version": version,
        "flent": {k: meta_in.get(k) for k in keep if k in meta_in},
        "t0_ns": int(t0 * 1e9) if t0 is not None else None,
        "segment_size": _segment_size(series_meta),
        "units": {"throughput": "Mbits/s", "ping_rtt": "ms", "rtt": "ms", "cwnd": "packets", "time": "s"},
        "time_origin": "metadata T0",
        "counts": {"series": len(results), "x_values": xs.len(), "raw_points": raw_count},
    }
    return make_trace(None, samples, meta, log)


def _document(data: bytes, path: str) -> dict[str, Any]:
    """The file's JSON object (a UTF-8 byte-order mark skipped).

    Raises:
        UnknownFormatError: empty input, or JSON that is not an object.
        CorruptTraceError: not UTF-8, invalid or too deeply nested JSON.
    """
    if not data.strip():
        raise UnknownFormatError("empty file", path=path, hint="flent did not write its data file")
    if bom_encoding(data) == "utf-8-sig":
        data = data[3:]
    try:
        doc = json.loads(data)
    except UnicodeDecodeError as exc:
        raise CorruptTraceError(f"not UTF-8 text ({exc.reason})", path=path, offset=exc.start,
                                hint="a damaged or non-Flent file") from None
    except json.JSONDecodeError as exc:
        raise CorruptTraceError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno, offset=exc.pos,
                                hint="the file is damaged or cut short (a partial .flent.gz?)") from None
    except RecursionError:
        raise CorruptTraceError("JSON nests too deeply", path=path) from None
    if not isinstance(doc, dict):
        raise UnknownFormatError("the JSON document is not an object, so not a Flent file", path=path)
    return doc


def _result_frames(xs: pl.Series, results: dict[str, Any], series_meta: dict[str, Any],
                   log: WarningLog) -> list[pl.DataFrame]:
    """One samples frame per ``results`` series on the ``x_values`` grid (``xs``).

    A series of the wrong length is cut or padded with nulls (W-BADSERIES); non-numeric values
    become nulls (W-BADVALUE).
    """
    n = xs.len()
    frames = []
    bad_len = 0
    bad_vals = 0
    for series, values in results.items():  # one iteration per series, not per point
        if not isinstance(values, list):
            bad_len += 1
            continue
        if len(values) != n:
            bad_len += 1
            values = values[:n] + [None] * max(0, n - len(values))
        vals = _numbers(values)
        bad_vals += vals.null_count() - values.count(None)
        sm = m if isinstance(m := series_meta.get(series), dict) else {}
        metric, scale, unit, node = _classify(
            str(series), sm.get("UNITS") if isinstance(sm.get("UNITS"), str) else None
        )
        frames.append(pl.DataFrame({"time": xs, "value": vals * scale}).with_columns(
            metric=pl.lit(metric), unit=pl.lit(unit), source=pl.lit(str(series)), node=pl.lit(node, pl.String)))
    if bad_len:
        log.add("W-BADSERIES", f"{bad_len} series do not have one value per x_value (cut or padded)", count=bad_len)
    if bad_vals:
        log.add("W-BADVALUE", f"{bad_vals} non-numeric value(s) in results (left out)", count=bad_vals)
    return frames


def _raw_frames(raw_values: dict[str, Any], t0: float, series_meta: dict[str, Any],
                frames: list[pl.DataFrame]) -> int:
    """Append a samples frame per key of every ``raw_values`` series to ``frames`` (times relative to T0).

    Returns:
        The number of raw points read.
    """
    raw_count = 0
    for series, points in raw_values.items():
        if not isinstance(points, list) or not points:
            continue
        rows = pl.DataFrame([p for p in points if isinstance(p, dict)], infer_schema_length=None, strict=False)
        if "t" not in rows.columns:
            continue
        rt = rows["t"].cast(pl.Float64, strict=False) - t0
        sm = m if isinstance(m := series_meta.get(series), dict) else {}
        units = sm.get("UNITS") if isinstance(sm.get("UNITS"), str) else None
        for key in rows.columns:
            if key in ("t", "seq", "dur"):
                continue
            label = str(series) if key == "val" else f"{series}::{key}"
            metric, scale, unit, node = _classify(label, units if key == "val" else None)
            frames.append(pl.DataFrame({"time": rt, "value": rows[key].cast(pl.Float64, strict=False) * scale})
                          .with_columns(metric=pl.lit(metric), unit=pl.lit(unit),
                                        source=pl.lit(f"{label} [raw]"), node=pl.lit(node, pl.String)))
        raw_count += rows.height
    return raw_count


def _segment_size(series_meta: dict[str, Any]) -> int | None:
    """The TCP MSS the series' metadata give, when they all agree (None: none or several)."""
    mss = {sm.get("TCP_MSS") for sm in series_meta.values() if isinstance(sm, dict) and sm.get("TCP_MSS")}
    if len(mss) != 1:
        return None
    try:
        one = next(iter(mss))
        return int(one) if isinstance(one, (int, float, str)) else None
    except (TypeError, ValueError):
        return None
