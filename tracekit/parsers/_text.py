"""Helpers shared by the text and CSV readers (ns-3 ASCII/series, OPNET, NetSim, Flent, FlowMonitor).

Everything here works on whole columns: a file becomes one polars ``String`` series
of lines (split in Rust), numbers are parsed with ``str`` expressions, and CSV
tables are read by polars' CSV reader with every column as ``String`` so that
the readers decide what a cell means (decimal commas, blanks, junk).
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from typing import Any

import polars as pl

from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import Limits
from tracekit.trace import WarningLog

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

#: A decimal number as C's ``%g`` or Python's ``repr`` print it (no thousands separators).
NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"


def bom_encoding(data: bytes) -> str | None:
    """The encoding a byte-order mark at the start of ``data`` announces, or None."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc
    return None


def head_text(head: bytes) -> str:
    """Decode the first bytes of a file for sniffing: BOM-aware, never raises.

    A UTF-16 head is cut to an even length (the 64 KiB head may end inside a code unit);
    other bytes are read as UTF-8 with replacement characters.
    """
    enc = bom_encoding(head)
    if enc in ("utf-16-le", "utf-16-be"):
        body = head[2:]
        return body[: len(body) // 2 * 2].decode(enc, errors="replace")
    if enc == "utf-8-sig":
        head = head[3:]
    return head.decode("utf-8", errors="replace")


def decode_text(data: bytes, path: str, log: WarningLog, *, fallback: str = "cp1252") -> tuple[str, str]:
    """Decode a whole text file: BOM first, then UTF-8, then a legacy 8-bit code page.

    Excel's "Unicode text" export is UTF-16 with a BOM (polars would return garbage
    column names for it without an error, so it is transcoded here); Windows tools
    and Excel re-saves write Windows-1252; NetSim's own scripts read its traces as
    latin-1.

    Args:
        data: The file's (decompressed) bytes.
        path: The file name for messages.
        log: Receives ``W-ENCODING`` when the fallback code page is used.
        fallback: The 8-bit encoding tried when the bytes are not UTF-8.

    Returns:
        (text, encoding used).

    Raises:
        CorruptTraceError: a UTF-16 file with an odd byte count or unpaired surrogates.
        UnknownFormatError: binary content (NUL bytes in a file that is not UTF-16).
    """
    enc = bom_encoding(data)
    if enc in ("utf-16-le", "utf-16-be"):
        try:
            return data[2:].decode(enc), enc
        except UnicodeDecodeError as exc:
            raise CorruptTraceError(f"damaged {enc.upper()} text: {exc.reason}", path=path,
                                    offset=exc.start + 2,
                                    hint="re-export the file, or re-save it as UTF-8 text") from None
    body = data[3:] if enc == "utf-8-sig" else data
    nul = body.find(b"\x00", 0, 1 << 20)
    if nul >= 0:
        raise UnknownFormatError("binary content (NUL bytes) in a text file", path=path, offset=nul,
                                 hint="is this a UTF-16 file without a byte-order mark? re-save it as UTF-8")
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        log.add("W-ENCODING", f"not UTF-8 (first bad byte at offset {exc.start}); decoded as {fallback}",
                offset=exc.start + (3 if enc else 0))
        return body.decode(fallback, errors="replace"), fallback


def load_text(source: Any, limits: Limits, name: str | None,
              strict: bool) -> tuple[str, str, WarningLog, str | None]:
    """Load a small text log whole: its decoded text, display path, a warning log and its compression.

    For readers that walk a log line by line in Python (ss, nstat): the line limit is checked
    before any parsing, so a huge file is refused at once.

    Raises:
        LimitError: more lines than ``limits.max_lines``.
        TracekitError: as :func:`tracekit._source.load` (missing file, limits).
    """
    from tracekit._source import load

    loaded = load(source, limits)
    path = name or loaded.path
    log = WarningLog(path, strict)
    text, _enc = decode_text(loaded.data, path, log)
    if text.count("\n") > limits.max_lines:
        raise LimitError(f"more than {limits.max_lines:,} lines", path=path,
                         hint="raise max_lines in [limits] if the file is genuine")
    return text, path, log, loaded.compression


def lines_of(text: str) -> pl.Series:
    """Split text into a ``String`` series of lines: ``\\n``, ``\\r\\n`` and lone ``\\r`` all end a line.

    The result keeps empty lines, so that index ``i`` is line ``i + 1`` of the file. A
    final newline does not produce an extra empty line. (``str.split`` runs in C and is
    3x faster here than polars' ``str.split`` + ``explode``.)
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return pl.Series("line", text.split("\n"), dtype=pl.String)


def check_lines(lines: pl.Series, path: str, limits: Limits, log: WarningLog) -> pl.Series:
    """Enforce ``max_lines`` and ``max_line_bytes``; return a mask of lines short enough to parse.

    Raises:
        LimitError: more lines than ``max_lines``.
    """
    if lines.len() > limits.max_lines:
        raise LimitError(f"{lines.len():,} lines, over the limit of {limits.max_lines:,}", path=path,
                         hint="raise max_lines in [limits] if the file is genuine")
    ok = lines.str.len_bytes() <= limits.max_line_bytes
    bad = int((~ok).sum())
    if bad:
        first = int((~ok).arg_true()[0]) + 1
        log.add("W-LONGLINE", f"{bad:,} line(s) longer than {limits.max_line_bytes:,} bytes skipped",
                count=bad, line=first)
    return ok


def first_bad(mask: pl.Series) -> int:
    """1-based index of the first True in ``mask`` (callers check that there is one)."""
    return int(mask.arg_true()[0]) + 1


def sniff_delimiter(header: str) -> str:
    """Pick the delimiter of a table from its header line: tab, then ``;``, then ``,``.

    Tab wins whenever present (OPNET's export and Excel's "Unicode text" are
    tab-separated and their cells may contain commas); ``;`` (European Excel) wins
    over ``,`` because statistic names may contain commas but never semicolons.
    Quoted text is ignored when counting.
    """
    bare = re.sub(r'"[^"]*"', "", header)
    if "\t" in bare:
        return "\t"
    if bare.count(";") >= 1 and bare.count(";") >= bare.count(","):
        return ";"
    if "," in bare:
        return ","
    return ";" if ";" in bare else ","


def split_header(header: str, sep: str) -> list[str]:
    """The cells of one header line (quotes removed, surrounding blanks stripped)."""
    row = next(csv.reader([header], delimiter=sep, quotechar='"'), [])
    return [c.strip() for c in row]


def unique_names(headers: list[str]) -> list[str]:
    """Header cells made unique and non-empty (``column 3``, ``Delay #2``), for column names."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for i, h in enumerate(headers):
        base = h or f"column {i + 1}"
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base} #{seen[base]}"
        while name in out:
            name += "'"
        out.append(name)
    return out


def read_table(text: str, sep: str, path: str, *, line0: int = 1) -> pl.DataFrame:
    """Read a delimited table whose first line is the header, every cell as ``String``.

    Columns are renamed ``c0``, ``c1``, ... (callers map them through :func:`split_header`,
    since headers may be empty or repeated). Rows longer than the header are cut (the
    caller counts them with :func:`field_counts`); short rows come back padded with nulls.

    Args:
        text: The table, header first.
        sep: The delimiter.
        path: The file name for messages.
        line0: The file line number of the header (for messages).

    Raises:
        CorruptTraceError: when polars cannot parse the table (e.g. an unterminated quote).
    """
    try:
        df = pl.read_csv(io.BytesIO(text.encode("utf-8")), separator=sep, quote_char='"', has_header=True,
                         infer_schema=False, truncate_ragged_lines=True, raise_if_empty=False)
    except (pl.exceptions.PolarsError, ValueError) as exc:
        msg = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise CorruptTraceError(f"the table cannot be parsed: {msg}", path=path, line=line0,
                                hint="check the delimiter and quotes; re-export the table") from None
    return df.rename({c: f"c{i}" for i, c in enumerate(df.columns)})


def field_counts(lines: pl.Series, sep: str) -> pl.Series:
    """Fields per line, counted on lines without quotes (null for quoted or empty lines)."""
    plain = ~lines.str.contains('"', literal=True) & (lines.str.strip_chars() != "")
    return (
        pl.select(pl.when(plain).then(lines.str.count_matches(sep, literal=True) + 1)).to_series()
    )


def to_number(expr: pl.Expr, *, decimal_comma: bool = False) -> pl.Expr:
    """Parse a ``String`` column as Float64; blanks and junk become null.

    Handles spreadsheet spellings: surrounding blanks, (non-breaking) space and
    apostrophe thousands separators, a decimal comma (``0,0123``) when the file uses
    one, and thousands commas (``1,234.5``) otherwise.
    """
    e = expr.str.strip_chars().str.replace_all(r"[\u00a0\u202f' ]", "")
    if decimal_comma:
        # "1.234,5" -> "1234.5": with a decimal comma a dot can only group thousands
        e = e.str.replace_all(r"\.(\d{3})", "$1").str.replace(",", ".", literal=True)
    else:
        e = pl.when(e.str.contains(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")).then(
            e.str.replace_all(",", "", literal=True)).otherwise(e)
    return e.cast(pl.Float64, strict=False)


def numbers(s: pl.Series, *, decimal_comma: bool = False) -> pl.Series:
    """Float64 from a ``String`` series: a plain cast when it reads every non-empty cell, else :func:`to_number`.

    The plain cast is several times faster and covers what tools write; the spreadsheet
    clean-up runs only on columns that need it (a loop over columns, never over rows).
    """
    if not decimal_comma:
        direct = s.cast(pl.Float64, strict=False)
        empty = int((s.is_null() | (s.str.len_bytes() == 0)).sum())
        if direct.null_count() == empty:
            return direct
    return pl.select(to_number(pl.lit(s), decimal_comma=decimal_comma)).to_series().alias(s.name)


def uses_decimal_comma(values: pl.DataFrame, sep: str) -> bool:
    """True when numeric-looking cells use a decimal comma (only possible when ``sep`` is not ``,``)."""
    if sep == "," or values.width == 0:
        return False
    cells = pl.concat([values[c].drop_nulls() for c in values.columns]).head(20000)
    comma = int(cells.str.contains(r"^\s*[+-]?\d+,\d+([eE][+-]?\d+)?\s*$").sum())
    point = int(cells.str.contains(r"^\s*[+-]?\d*\.\d+([eE][+-]?\d+)?\s*$").sum())
    return comma > point


def nonfinite(values: pl.Series) -> int:
    """How many non-null values are NaN or infinite."""
    return int((values.is_not_null() & ~values.is_finite()).sum())
