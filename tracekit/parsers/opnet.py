"""OPNET / Riverbed Modeler statistics exported to a spreadsheet: a time column plus one column per statistic.

The GUI's "Export Graph Data to Spreadsheet" writes a tab-separated table whose
header row names each statistic by its full path (``Campus.Client.TCP Connection.
Congestion Window Size (bytes)``); statistics sampled at different times share
the time column and leave **blank cells** where they have no sample. Students then
re-save it from Excel, so the reader accepts: tab / ``;`` / ``,`` delimiters,
decimal commas, thousands separators, a UTF-8 BOM, UTF-16 ("Unicode text"),
Windows-1252, CRLF, quoted cells.

Statistics are mapped to metrics by name (:data:`STATISTICS`); a user mapping
(``mapping={"*pattern*": "metric"}``, a TOML ``[opnet.map]`` table via ``map_file=``,
or ``--map 'pattern=metric'`` on the command line) takes precedence. Unknown columns
are kept as metrics named by their header, unit ``"1"``.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path
from typing import Any

import polars as pl

from tracekit._source import Source, load
from tracekit.errors import UnknownFormatError, UsageError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._text import (
    check_lines,
    decode_text,
    field_counts,
    first_bad,
    head_text,
    lines_of,
    nonfinite,
    numbers,
    read_table,
    sniff_delimiter,
    split_header,
    uses_decimal_comma,
)
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "opnet"
DESCRIPTION = "OPNET/Riverbed Modeler statistics exported to a spreadsheet (tab/;/, delimited, UTF-8/UTF-16)"
DETECT = ("a delimited table (tab, ';' or ',') whose first header cell is a time column and another header "
          "cell names an OPNET statistic (TCP Connection, Congestion Window Size (bytes), Traffic Received "
          "(bytes/sec), Object/Global Statistics, ...)")

#: Statistic name (matched case-insensitively in the statistic part of a header, i.e. after the
#: object path) -> (metric, unit, scale to schema units, whole name only). Checked in order.
#: The generic "Delay (sec)" must be the whole statistic name ("Queuing Delay (sec)" is another one).
STATISTICS: tuple[tuple[str, str, str, float, bool], ...] = (
    ("congestion window size (bytes)", "cwnd", "bytes", 1.0, False),
    ("sent segment sequence number", "seq", "bytes", 1.0, False),
    ("received segment ack number", "ack", "bytes", 1.0, False),
    ("segment round trip time (sec)", "rtt", "s", 1.0, False),
    ("retransmission count", "retransmissions", "count", 1.0, False),
    ("flight size (bytes)", "inflight", "bytes", 1.0, False),
    ("traffic received (bytes/sec)", "throughput_received", "bps", 8.0, False),
    ("traffic sent (bytes/sec)", "throughput_sent", "bps", 8.0, False),
    ("traffic received (bits/sec)", "throughput_received", "bps", 1.0, False),
    ("traffic sent (bits/sec)", "throughput_sent", "bps", 1.0, False),
    ("download response time (sec)", "download_time", "s", 1.0, False),
    ("segment delay (sec)", "segment_delay", "s", 1.0, True),
    ("delay (sec)", "delay", "s", 1.0, True),
)
#: Units found in parentheses at the end of a statistic name -> (unit, scale).
HEADER_UNITS: dict[str, tuple[str, float]] = {
    "bytes": ("bytes", 1.0), "sec": ("s", 1.0), "seconds": ("s", 1.0), "s": ("s", 1.0),
    "bytes/sec": ("bps", 8.0), "bits/sec": ("bps", 1.0), "packets/sec": ("pps", 1.0), "packets": ("packets", 1.0),
}
_DEFAULT_UNITS = {metric: (unit, scale) for _n, metric, unit, scale, _w in STATISTICS}
# Statistic groups that end the object path in a header ("<object path>.<group>.<statistic>").
_GROUPS = {"tcp connection", "tcp", "ftp", "client ftp", "server ftp", "ethernet", "ip", "point-to-point",
           "http", "client http", "link", "queue"}
_TIME_HEAD = re.compile(r"^\s*(?:sim(?:ulation)?[\s_]*)?time\b", re.I)
_TIME_UNITS = {"sec": 1.0, "s": 1.0, "seconds": 1.0, "ms": 1e-3, "min": 60.0, "minutes": 60.0, "hour": 3600.0,
               "hours": 3600.0, "hr": 3600.0}
_MARKERS = ("tcp connection", "object statistics", "global statistics", " <-> ") + tuple(
    s[0] for s in STATISTICS if not s[4])
# Spreadsheet filters sometimes appended to a statistic name.
_FILTER = re.compile(r"\s*[\[(](?:as is|average|time[_ ]average|sample[_ ]sum|sum|max|min)[\])]\s*$", re.I)
_METRIC_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_map_option(values: list[str]) -> dict[str, str]:
    """Turn ``--map 'pattern=metric'`` values into a mapping (later entries win).

    Raises:
        UsageError: an entry without ``=``, an empty pattern, or a metric that is not an identifier.
    """
    out: dict[str, str] = {}
    for v in values:
        pattern, eq, metric = v.rpartition("=")
        pattern, metric = pattern.strip(), metric.strip()
        if not eq or not pattern:
            raise UsageError(f"--map {v!r}: expected 'pattern=metric', e.g. '*Congestion Window*=cwnd'")
        if not _METRIC_NAME.match(metric):
            raise UsageError(f"--map {v!r}: metric {metric!r} must be a name like cwnd or rtt")
        out[pattern] = metric
    return out


def load_map_file(path: str | Path) -> dict[str, str]:
    """Read the ``[opnet.map]`` table (``"pattern" = "metric"``) of a TOML file.

    Raises:
        UsageError: unreadable TOML, a missing table, or non-string entries.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read the mapping file: {exc}", path=str(path)) from None
    table = data.get("opnet", {}).get("map") if isinstance(data.get("opnet"), dict) else None
    if not isinstance(table, dict):
        raise UsageError("no [opnet.map] table", path=str(path),
                         hint='write e.g. [opnet.map]\n"*Congestion Window*" = "cwnd"')
    bad = [k for k, v in table.items() if not isinstance(v, str) or not _METRIC_NAME.match(v)]
    if bad:
        raise UsageError(f"[opnet.map] entries must map a pattern to a metric name: {bad[:5]}", path=str(path))
    return {str(k): str(v) for k, v in table.items()}


def _header_unit(header: str) -> tuple[str, float] | None:
    m = re.search(r"\(([^()]+)\)\s*(?:<->.*)?$", header) or re.search(r"\(([^()]+)\)", header)
    return HEADER_UNITS.get(m.group(1).strip().lower()) if m else None


def _node(prefix: str) -> str | None:
    """The object path in front of a statistic: drop the statistic group and the Object/Global prefix."""
    parts = [p.strip() for p in prefix.strip(" .|").split(".") if p.strip()]
    if parts and parts[0].lower() in ("object statistics", "global statistics"):
        if parts[0].lower() == "global statistics":
            return None
        parts = parts[1:]
    while parts and parts[-1].lower() in _GROUPS:
        parts = parts[:-1]
    return ".".join(parts) or None


def _glob(pattern: str) -> str:
    """A pattern without wildcards matches anywhere in the header."""
    return pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"


def classify(header: str, mapping: dict[str, str]) -> dict[str, Any]:
    """Decide metric, unit, scale and node of one statistic column.

    Args:
        header: The column's full header text.
        mapping: User patterns (glob, case-insensitive) -> metric; the first match wins.

    Returns:
        ``{"header", "metric", "unit", "scale", "node", "mapped_by"}``.
    """
    low = " ".join(header.lower().split())
    path_part = re.split(r"\s<->\s", header, maxsplit=1)[0]  # "<stat> <-> <peer>" for connection statistics
    cut = path_part.rfind(".") + 1
    stat = " ".join(_FILTER.sub("", path_part[cut:]).lower().split())
    builtin = next(((name, m, u, sc) for name, m, u, sc, whole in STATISTICS
                    if (stat == name if whole else name in stat)), None)
    node = _node(path_part[:cut]) if cut else None
    for pattern, metric in mapping.items():
        if fnmatch.fnmatchcase(low, _glob(" ".join(pattern.lower().split()))):
            unit, scale = _header_unit(header) or _DEFAULT_UNITS.get(metric, ("1", 1.0))
            return {"header": header, "metric": metric, "unit": unit, "scale": scale, "node": node, "mapped_by": "user"}
    if builtin:
        return {"header": header, "metric": builtin[1], "unit": builtin[2], "scale": builtin[3], "node": node,
                "mapped_by": "builtin"}
    return {"header": header, "metric": header, "unit": "1", "scale": 1.0, "node": node, "mapped_by": "unknown"}


def _header_line(lines: pl.Series) -> int:
    """Index of the first non-blank line."""
    nonblank = lines.str.strip_chars() != ""
    return int(nonblank.arg_true()[0]) if nonblank.any() else -1


def sniff(head: bytes) -> bool:
    """True for a spreadsheet export with a time column and OPNET statistic names."""
    text = head_text(head)
    for line in text.splitlines():
        if line.strip():
            header = line
            break
    else:
        return False
    sep = sniff_delimiter(header)
    cells = split_header(header, sep)
    if len(cells) < 2 or not _TIME_HEAD.match(cells[0]):
        return False
    low = " ".join(" ".join(cells[1:]).lower().split())
    return any(k in low for k in _MARKERS)


def _time_scale(header: str) -> float:
    m = re.search(r"\(([^()]+)\)", header)
    return _TIME_UNITS.get(m.group(1).strip().lower(), 1.0) if m else 1.0


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
    mapping: dict[str, str] | None = None,
    map_file: str | Path | None = None,
) -> Trace:
    """Read an OPNET/Riverbed spreadsheet export into samples.

    Args:
        source: Path, bytes or binary stream.
        limits: Resource limits (line length and count).
        strict: Turn warnings (bad rows, non-numeric cells, a legacy encoding) into errors.
        name: Name for messages when ``source`` is bytes.
        mapping: ``{"glob pattern": "metric"}`` applied to headers before the built-in names.
        map_file: A TOML file whose ``[opnet.map]`` table adds to ``mapping``.

    Returns:
        A trace with samples only: ``source`` = the full header, ``node`` = the object path.

    Raises:
        UsageError: a bad mapping or mapping file.
        UnknownFormatError: empty input or a table without a numeric time column.
        CorruptTraceError: a table polars cannot parse.
    """
    user = _user_mapping(mapping, map_file)
    loaded = load(source, limits)
    path = name or loaded.path
    log = WarningLog(path, strict)
    if not loaded.data.strip():
        raise UnknownFormatError("empty file", path=path, hint="export the graph data again")
    text, encoding = decode_text(loaded.data, path, log)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    h, sep, headers, table = _table(text, path, limits, log)
    cols = table.columns[:len(headers)]
    decimal_comma = uses_decimal_comma(table.select(cols[1:]), sep)
    tt = _times(table, cols, headers, h, decimal_comma, path, log)
    info = _column_info(headers, user)
    conv = _values(table, cols, tt, info, decimal_comma, log)
    colmeta = pl.DataFrame({
        "col": [str(i) for i in range(len(info))],
        "metric": [c["metric"] for c in info], "unit": [c["unit"] for c in info],
        "source": [c["source"] for c in info], "node": [c["node"] for c in info],
    }, schema={"col": pl.String, "metric": pl.String, "unit": pl.String, "source": pl.String, "node": pl.String})
    samples = (
        conv.unpivot(index="time", variable_name="col")
        .filter(pl.col("value").is_not_null() & pl.col("value").is_finite())
        .join(colmeta, on="col", how="left", maintain_order="left")
        .drop("col")
    )
    if samples.height == 0:
        log.add("W-EMPTY", "the table holds no values")
    unknown = [c["header"] for c in info if c["mapped_by"] == "unknown"]
    if unknown:
        log.add("W-UNMAPPED", f"{len(unknown)} column(s) not recognised, kept under their header name "
                f"(unit '1'): {', '.join(unknown[:3])}", count=len(unknown),
                hint="map them with --map 'pattern=metric' or an [opnet.map] table")
    meta = {
        "format": NAME,
        "tool": "opnet",
        "paths": [path],
        "compression": loaded.compression,
        "encoding": encoding,
        "delimiter": sep,
        "decimal_comma": decimal_comma,
        "columns": [{k: c[k] for k in ("header", "metric", "unit", "node", "mapped_by")} for c in info],
        "units": {c["metric"]: c["header"] for c in info if c["mapped_by"] != "unknown"} | {"time": headers[0]},
        "time_origin": "simulation start",
        "counts": {"rows": table.height, "columns": len(headers)},
    }
    return make_trace(None, samples, meta, log)


def _user_mapping(mapping: dict[str, str] | None, map_file: str | Path | None) -> dict[str, str]:
    """The user's header patterns -> metric: ``mapping`` over the ``map_file``'s ``[opnet.map]`` table.

    Raises:
        UsageError: an entry whose metric is not a metric name.
    """
    user = dict(mapping or {})
    if map_file is not None:
        user = {**load_map_file(map_file), **user}
    for pattern, metric in user.items():
        if not isinstance(pattern, str) or not isinstance(metric, str) or not _METRIC_NAME.match(metric):
            raise UsageError(f"bad OPNET mapping entry {pattern!r}: {metric!r} (expected a metric name)")
    return user


def _table(text: str, path: str, limits: Limits, log: WarningLog) -> tuple[int, str, list[str], pl.DataFrame]:
    """The header (the first non-blank line), its delimiter and the table of cells below it, as strings.

    Rows with fewer cells than the header read the missing ones as blank (W-SHORTROW); extra
    cells are ignored (W-LONGROW).

    Returns:
        (the header's line index, the delimiter, the header cells, the table).

    Raises:
        UnknownFormatError: only blank lines, or a single-column header.
    """
    lines = lines_of(text)
    check_lines(lines, path, limits, log)
    h = _header_line(lines)
    if h < 0:
        raise UnknownFormatError("the file holds only blank lines", path=path)
    header_text = lines[h]
    sep = sniff_delimiter(header_text)
    headers = split_header(header_text, sep)
    if len(headers) < 2:
        raise UnknownFormatError(f"the header has a single column (delimiter {sep!r})", path=path, line=h + 1,
                                 hint="expected a time column and statistic columns separated by tab, ';' or ','")
    body = text.split("\n", h)[-1] if h else text
    table = read_table(body, sep, path, line0=h + 1)
    ncols = len(headers)
    counts_f = field_counts(lines.slice(h + 1), sep)
    short = int((counts_f < ncols).sum())
    long = int((counts_f > ncols).sum())
    if short:
        log.add("W-SHORTROW", f"{short:,} row(s) have fewer cells than the header (missing cells read as blank)",
                count=short, line=h + 1 + first_bad((counts_f < ncols).fill_null(False)))
    if long:
        log.add("W-LONGROW", f"{long:,} row(s) have more cells than the header (extra cells ignored)",
                count=long, line=h + 1 + first_bad((counts_f > ncols).fill_null(False)))
    return h, sep, headers, table


def _times(table: pl.DataFrame, cols: list[str], headers: list[str], h: int, decimal_comma: bool, path: str,
           log: WarningLog) -> pl.DataFrame:
    """The time column in seconds, with ``_blank`` (an empty row) and ``_line`` (the file line).

    Rows without a numeric time are skipped later (W-BADLINE).

    Raises:
        UnknownFormatError: the first column holds no numbers at all.
    """
    tt = table.select(time=numbers(table[cols[0]], decimal_comma=decimal_comma) * _time_scale(headers[0]),
                      _blank=pl.all_horizontal(pl.col(cols).is_null() | (pl.col(cols).str.strip_chars() == "")),
                      _line=pl.int_range(pl.len()) + h + 2)
    bad_time = tt["time"].is_null() & ~tt["_blank"]
    if bool(bad_time.all()) and tt.height:
        raise UnknownFormatError(f"the first column {headers[0]!r} holds no numbers, so it is not a time column",
                                 path=path, line=h + 2, hint="OPNET exports start with a time column")
    if bad_time.any():
        log.add("W-BADLINE", f"{int(bad_time.sum()):,} row(s) without a numeric time (skipped)",
                count=int(bad_time.sum()), line=int(tt["_line"].filter(bad_time)[0]))
    return tt


def _column_info(headers: list[str], user: dict[str, str]) -> list[dict[str, Any]]:
    """:func:`classify` of every statistic column, with ``source``: the header, numbered when repeated."""
    info = [classify(hd or f"column {i + 2}", user) for i, hd in enumerate(headers[1:])]
    seen: dict[str, int] = {}
    for c in info:  # repeated headers stay apart in `source`
        k = seen[c["header"]] = seen.get(c["header"], 0) + 1
        c["source"] = c["header"] if k == 1 else f"{c['header']} #{k}"
    return info


def _values(table: pl.DataFrame, cols: list[str], tt: pl.DataFrame, info: list[dict[str, Any]],
            decimal_comma: bool, log: WarningLog) -> pl.DataFrame:
    """``time`` and every statistic column (named by its index) as numbers in the metric's unit.

    Cells that are not numbers are left out (W-BADVALUE), as are rows without a finite time
    and NaN/infinite values (W-NONFINITE); a time going backwards is reported (W-NONMONOTONIC).
    """
    conv = pl.DataFrame(
        [tt["time"].alias("time")]
        + [(numbers(table[c], decimal_comma=decimal_comma) * inf["scale"]).alias(str(i))
           for i, (c, inf) in enumerate(zip(cols[1:], info, strict=False))])
    junk = sum(int((conv[str(i)].is_null() & table[c].is_not_null() & (table[c].str.strip_chars() != "")).sum())
               for i, c in enumerate(cols[1:]))
    if junk:
        log.add("W-BADVALUE", f"{junk:,} cell(s) are not numbers (left out)", count=junk)
    conv = conv.filter(pl.col("time").is_not_null())
    nf = sum(nonfinite(conv[c]) for c in conv.columns)
    conv = conv.filter(pl.col("time").is_finite())
    if nf:
        log.add("W-NONFINITE", f"{nf:,} NaN/infinite value(s) left out", count=nf)
    if conv.height > 1 and bool((conv["time"].diff().drop_nulls() < 0).any()):
        log.add("W-NONMONOTONIC", "time goes backwards (row order kept)",
                count=int((conv["time"].diff().drop_nulls() < 0).sum()))
    return conv
