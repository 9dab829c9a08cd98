"""Text plumbing shared by the ns-2 readers: lines -> a frame of fields, with every line accounted for.

ns-2 writes its traces with Tcl channels: one record per ``\\n``-terminated line, fields
separated by spaces. Student copies of those files are hostile input, so this module

* splits the bytes into fields with polars' CSV reader (every field a String, no quoting,
  invalid UTF-8 replaced) and keeps **one row per line**, blank lines included, so that
  ``line = row index + 1`` holds and every warning can name its line;
* declares one more column than the format can have, so an over-long row shows up as a
  non-null extra column instead of being silently truncated (polars pads *short* rows with
  nulls and, with ``truncate_ragged_lines``, cuts *long* ones — both must be caught by the caller);
* replaces lines longer than ``limits.max_line_bytes`` by a one-byte marker *before* polars sees
  them, so binary junk without newlines cannot make one gigantic field;
* flags an unterminated last line (a simulator killed before ``flush-trace``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from tracekit.errors import CorruptTraceError, LimitError
from tracekit.limits import Limits
from tracekit.trace import WarningLog

#: Separator that keeps each line whole (ASCII unit separator; never in a trace).
WHOLE_LINE = "\x1f"
#: Stands in for an over-long line (never a valid first field of any ns-2 format).
LONG_MARK = b"\x01"

#: Tcl's ``$ns now`` prints doubles with ``%.17g``; values built by repeated addition then show
#: binary noise such as ``0.10000000000000001`` or ``59.980000000003777``. A time token with
#: 15+ significant digits is this fingerprint (ns-3 and most tools print 6 digits).
TCL_NOISE = re.compile(rb"^\d+\.\d{12,}$")


@dataclass(frozen=True)
class TextFrame:
    """The fields of a text trace, one row per line.

    Attributes:
        fields: Columns ``c0 .. c{n}`` (String unless typed; null = absent/empty/unparsable), ``line``
            (UInt64, 1-based) and ``blank`` (Boolean: an empty line).
        n_lines: Lines in the file, counting an unterminated last line.
        truncated_line: Line number of an unterminated last line, else None.
        long_lines: 1-based numbers of lines over ``max_line_bytes`` (their fields are the marker).
    """

    fields: pl.DataFrame
    n_lines: int
    truncated_line: int | None
    long_lines: np.ndarray


def split_lines(data: bytes, ncols: int, limits: Limits, path: str,
                dtypes: dict[str, pl.DataType] | None = None, separator: str = " ") -> TextFrame:
    """Split ``data`` into space-separated fields, one row per line.

    Args:
        data: The decompressed file bytes.
        ncols: Columns to keep; one more (``c{ncols}``) is declared to detect over-long rows.
        limits: ``max_lines`` and ``max_line_bytes`` are enforced.
        path: For messages.
        dtypes: Column types (default String). With typed columns a field that does not parse
            becomes null (``ignore_errors``), which callers treat like a missing field.
        separator: Field separator (:data:`WHOLE_LINE` keeps each line in ``c0``).

    Returns:
        The :class:`TextFrame`.

    Raises:
        LimitError: more lines than ``limits.max_lines``.
        CorruptTraceError: if the CSV reader and the newline count disagree (never seen; a guard).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    ends_open = len(data) > 0 and data[-1:] != b"\n"
    n_lines = len(nl) + (1 if ends_open else 0)
    if n_lines > limits.max_lines:
        raise LimitError(f"{n_lines:,} lines, over the limit of {limits.max_lines:,}", path=path,
                         hint="raise max_lines in [limits] if this trace is genuine")
    starts = np.concatenate(([0], nl + 1))[:n_lines]
    stops = np.concatenate((nl, [len(data)]))[:n_lines] if n_lines else np.zeros(0, np.int64)
    lengths = stops - starts
    long_idx = np.flatnonzero(lengths > limits.max_line_bytes)
    if len(long_idx):
        # Cut over-long lines down to a marker before polars parses them (keeps the line count).
        parts: list[bytes] = []
        pos = 0
        for i in long_idx.tolist():
            parts.append(data[pos:int(starts[i])])
            parts.append(LONG_MARK)
            pos = int(stops[i])
        parts.append(data[pos:])
        data = b"".join(parts)
    schema: dict[str, pl.DataType] = {f"c{i}": pl.String() for i in range(ncols + 1)}
    if dtypes:
        schema.update(dtypes)
    if n_lines == 0:
        df = pl.DataFrame(schema=schema)
    else:
        df = pl.read_csv(
            data, separator=separator, has_header=False, schema=schema, quote_char=None,
            encoding="utf8-lossy", truncate_ragged_lines=True, missing_columns="insert",
            extra_columns="ignore", raise_if_empty=False, infer_schema=False, ignore_errors=bool(dtypes),
        )
    if df.height != n_lines:
        raise CorruptTraceError(
            f"could not split the file into lines ({df.height:,} rows for {n_lines:,} lines)",
            path=path, hint="unusual line endings? ns-2 writes \\n; convert the file with dos2unix")
    # Blank = empty or a lone CR; decided from the bytes, because polars also yields an all-null
    # row for some junk lines (e.g. with NUL bytes), which must count as bad, not blank.
    blank = (lengths == 0) | ((lengths == 1) & (buf[np.minimum(starts, max(len(buf) - 1, 0))] == 13))
    df = df.with_columns(
        pl.int_range(1, df.height + 1, dtype=pl.UInt64).alias("line"),
        pl.Series("blank", blank, dtype=pl.Boolean),
    )
    return TextFrame(df, n_lines, n_lines if ends_open else None, long_idx + 1)


def tokens(data: bytes, limits: Limits, path: str) -> tuple[pl.DataFrame, TextFrame]:
    """Whole lines split on runs of whitespace: ``line``, ``blank``, ``text``, ``f`` (List[String]), ``nf``.

    For formats that pad with spaces (Tcl ``puts "$a $b  $c"``, the agent trace's ``%-8.5f``)
    or need regexes over the whole line (wireless traces). A line holding the unit-separator
    byte used to keep lines whole gets ``nf = -1`` (never valid).
    """
    tf = split_lines(data, 1, limits, path, separator=WHOLE_LINE)
    df = tf.fields.select(
        "line", "blank",
        text=pl.col("c0"),
        f=pl.col("c0").str.extract_all(r"[^ \t\r]+"),
        _split=pl.col("c1").is_not_null(),
    ).with_columns(
        f=pl.col("f").fill_null([]),
    ).with_columns(
        nf=pl.when(pl.col("_split")).then(-1).otherwise(pl.col("f").list.len().cast(pl.Int32)),
    ).drop("_split")
    return df, tf


def first_lines(head: bytes, n: int = 60) -> list[bytes]:
    """The first ``n`` complete, non-blank lines of a sniffing head (the cut-off last line is dropped)."""
    lines = head.split(b"\n")
    if len(head) >= 1024 and not head.endswith(b"\n"):
        lines = lines[:-1]  # cut by the 64 KiB head, not by the file
    out = []
    for ln in lines:
        ln = ln.rstrip(b"\r")
        if ln.strip():
            out.append(ln)
            if len(out) >= n:
                break
    return out


def line_ranges(lines: np.ndarray, limit: int = 5) -> str:
    """Format a few 1-based line numbers for a message: ``12, 40, 41 …``."""
    shown = ", ".join(f"{int(x):,}" for x in lines[:limit])
    return shown + (" …" if len(lines) > limit else "")


def bad_line_warning(log: WarningLog, bad: np.ndarray, what: str, total: int) -> None:
    """Add one W-BADLINE warning for the 1-based line numbers in ``bad`` (no-op when empty)."""
    if not len(bad):
        return
    first = int(bad[0])
    log.add(
        "W-BADLINE",
        f"{len(bad):,} of {total:,} line(s) skipped: {what} (lines {line_ranges(bad)})",
        count=len(bad), line=first,
        hint="the file was edited or damaged there; the other lines were read")
