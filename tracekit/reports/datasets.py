"""A chart's datasets as JSON-ready rows and as the JSON text of those rows.

Kept apart from :mod:`tracekit.reports._chartkit`: polars writes each dataset's text in one pass
over its columns (:func:`records`); a page needs only that text, so :class:`FrameRows` makes the
row dicts only for a caller that reads them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any

import numpy as np
import polars as pl

__all__ = ["FrameRows", "Rows", "frame_rows", "records"]


class Rows(list[dict[str, Any]]):
    """A dataset's rows (what altair, the specs and the tests see) with their JSON text, ``json``.

    The text is written by polars from the frame the rows come from, in one pass over its
    columns: a page (:func:`tracekit.reports.html.script_json`) puts it in as it is, instead of
    encoding every row dict again value by value (~50,000 rows and 0.1 s a large capture's page).
    It is the text ``json.dumps`` gives for the rows (:func:`_json_rows`); None when it could not be
    made. Rows are built once and never changed (the text would no longer match).
    """

    __slots__ = ("json",)

    def __init__(self, rows: list[dict[str, Any]], json: str | None = None) -> None:
        super().__init__(rows)
        self.json = json


#: Column types whose JSON polars writes as ``json.dumps`` does (checked by the tests): not Float32
#: (Python widens it to a double first), not dates or lists.
_JSON_SAME = (pl.Float64, pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64,
              pl.String, pl.Boolean, pl.Null)

#: Below this many rows ``json.dumps`` of the dicts costs less than the polars calls (~0.1 ms).
_JSON_MIN_ROWS = 64


def _json_rows(df: pl.DataFrame, row: Callable[[int], dict[str, Any]]) -> str | None:
    """``json.dumps(rows, separators=(",", ":"), ensure_ascii=False)`` of the rows ``df.to_dicts()``, from polars
    (None for a few rows: :data:`_JSON_MIN_ROWS`); ``row(i)`` gives row ``i`` as a dict.

    polars writes numbers, strings (the same escapes), nulls and booleans as Python does, but a
    float below 1e-4 positionally (``0.000074``, Python ``7.4e-05``): the few rows holding one (the
    first times of a series) are written by ``json.dumps``, the runs between them by polars. None for
    other column types, and when such rows are many (a LAN's RTTs): ``json.dumps`` writes it all.
    """
    if not df.height:
        return "[]"
    schema = df.schema
    if df.height < _JSON_MIN_ROWS or any(dtype not in _JSON_SAME for dtype in schema.values()):
        return None
    tiny = np.zeros(df.height, dtype=bool)
    for name, dtype in schema.items():
        if dtype == pl.Float64:
            a = df[name].to_numpy()  # nulls are NaN here, and NaN is not tiny
            tiny |= (np.abs(a) < 1e-4) & (a != 0)
    picks = np.flatnonzero(tiny).tolist()
    if not picks:
        return df.write_json()
    if len(picks) * 8 > df.height:
        return None
    parts, start = [], 0
    for i in [*picks, df.height]:
        if i > start:  # polars' rows start..i, without the brackets
            parts.append(df.slice(start, i - start).write_json()[1:-1])
        if i < df.height:
            parts.append(json.dumps(row(i), ensure_ascii=False, separators=(",", ":")))
        start = i + 1
    return "[" + ",".join(parts) + "]"


def _rounded(df: pl.DataFrame, digits: dict[str, int] | None) -> pl.DataFrame:
    """``df`` with its floats rounded (``digits`` per column, default 6) and NaN/inf as null (invalid JSON)."""
    digits = digits or {}
    exprs = []
    for name, dtype in df.schema.items():
        if dtype.is_float():
            col = pl.col(name)
            exprs.append(
                pl.when(col.is_finite()).then(col.round(digits.get(name, 6))).otherwise(None).alias(name)
            )
    return df.with_columns(exprs) if exprs else df


def _dicts(df: pl.DataFrame) -> list[dict[str, Any]]:
    """``df.to_dicts()`` made column by column: one list per column, the dicts zipped in C (polars
    builds each row's dict in Python: twice the time for the same dicts)."""
    cols = [c.to_list() for c in df.iter_columns()]
    return list(map(dict, map(zip, repeat(df.columns), zip(*cols, strict=True))))


def records(df: pl.DataFrame, digits: dict[str, int] | None = None) -> Rows:
    """Rows as JSON-ready dicts: floats rounded, NaN/inf -> null (invalid JSON otherwise), with their JSON text.

    Args:
        df: A small frame (already thinned).
        digits: Decimal places per float column (default 6).

    Returns:
        One dict per row (a :class:`Rows`).
    """
    out = _rounded(df, digits)
    rows = _dicts(out)
    return Rows(rows, _json_rows(out, rows.__getitem__))


class FrameRows:
    """A chart's dataset kept as its (rounded) frame and JSON text; the row dicts are made on first use.

    A page needs only the text (:func:`tracekit.reports.html.script_json` puts it in as it is), so
    :meth:`Bag.frame` stores this instead of :func:`records`' dicts: a large capture's page would
    otherwise build ~50,000 dicts it never reads, and the cyclic garbage collector, which tracks every
    dict until a full collection, would walk them again and again while the page is built.
    Everything else sees the same rows: :func:`spec` hands out :meth:`rows` (a :class:`Rows`), and
    altair's own ``to_dict`` reads them by iteration.
    """

    __slots__ = ("_rows", "frame", "json")

    def __init__(self, frame: pl.DataFrame, json: str | None) -> None:
        self.frame = frame
        self.json = json
        self._rows: Rows | None = None

    def rows(self) -> Rows:
        """The rows as :func:`records` gives them (made once)."""
        if self._rows is None:
            self._rows = Rows(_dicts(self.frame), self.json)
        return self._rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows())

    def __len__(self) -> int:
        return self.frame.height

    def __eq__(self, other: object) -> bool:
        return self.rows() == (other.rows() if isinstance(other, FrameRows) else other)

    __hash__ = None  # type: ignore[assignment]  # compared by value, like the list it stands for


def frame_rows(df: pl.DataFrame, digits: dict[str, int] | None = None) -> FrameRows:
    """:func:`records` without the dicts: the rounded frame and its JSON text (:class:`FrameRows`)."""
    out = _rounded(df, digits)
    return FrameRows(out, _json_rows(out, lambda i: out.row(i, named=True)))
