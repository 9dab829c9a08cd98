"""``json.dumps(obj, indent=2, allow_nan=False, ...)``'s text, byte for byte, without its pure-Python encoder.

With ``indent`` set, CPython's ``json`` writes through ``json.encoder._make_iterencode``, a generator
per container and several chunks per value: 200,000 rows of ``analyze --json`` took about 20 s.
This writer walks the containers in Python and leaves the values to C:

- a container of plain scalars (exact ``str``, ``int``, ``float``, ``bool``, ``None``) is one call of
  the C encoder (``json.encoder.c_make_encoder``, as ``json.dumps`` without ``indent`` uses) with
  that depth's separators, ``",\\n"`` and the indent; only its brackets get their line breaks;
- a list of dicts with the same keys (a table: ``flows``, ``explain``) is written column by column
  (``float.__repr__``, ``int.__repr__``, ``encode_basestring_ascii`` mapped over a column) and each
  row through one ``%`` template of its keys;
- everything else (subclasses, objects for ``default``, keys that are not text) follows
  ``_make_iterencode``'s rules one value at a time.

A JSON string never holds a raw line break (control characters are escaped), so the separators are
the only line breaks. Any error (NaN, a key or an object json refuses, a circular reference) is
left to ``json.dumps`` itself, run again on the object: it raises its own error, message and all
(or, were this writer ever to refuse something ``json`` takes, writes the text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import chain, repeat
from json import encoder as _encoder
from math import copysign, isfinite
from operator import not_
from typing import Any

__all__ = ["dumps"]

_NONE = type(None)
#: Types the C encoder writes exactly as ``json.dumps`` does (exact types: subclasses take the walk).
_PLAIN = frozenset({str, int, float, bool, _NONE})
_BOOL = {True: "true", False: "false"}
#: The text of the small non-negative ints (counts, directions), looked up instead of formatted.
_SMALL = [int.__repr__(i) for i in range(4096)]
#: A list of at least this many dicts is tried as a table (fewer: one dict at a time).
TABLE_MIN = 4
#: Rows written per block of a table (bounds the column texts held at once).
BLOCK = 2048
_make_encoder: Callable[..., Callable[[Any, int], list[str]]] | None = getattr(_encoder, "c_make_encoder", None)


def dumps(obj: Any, *, ensure_ascii: bool = True, default: Callable[[Any], Any] | None = str,
          clean: bool = False) -> str:
    """``json.dumps(obj, indent=2, allow_nan=False, ensure_ascii=ensure_ascii, default=default)``.

    Args:
        obj: What to write.
        ensure_ascii: As ``json.dumps``: escape all non-ASCII text as ``\\uXXXX``.
        default: As ``json.dumps``: called for an object json cannot write (its result is written).
        clean: Write ``tracekit._shared.json_safe(obj)`` instead (NaN and infinities as null, keys
            as ``str(key)``, tuples as lists), without building the copy.

    Raises:
        ValueError, TypeError, RecursionError: as ``json.dumps`` (of ``json_safe(obj)`` when ``clean``).
    """
    if _make_encoder is not None:
        try:
            return _Writer(ensure_ascii=ensure_ascii, default=default, clean=clean).text(obj, 0)
        except Exception:  # json.dumps below raises its own error for it (or writes it)
            pass
    if clean:
        from tracekit._shared import json_safe

        obj = json_safe(obj)
    return json.dumps(obj, indent=2, allow_nan=False, ensure_ascii=ensure_ascii, default=default)


def _refuse(o: Any) -> Any:
    """``json.JSONEncoder.default``: no text for this object."""
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _null(_: Any) -> str:
    return "null"


class _Writer:
    """One call's state: the options, the containers on the current path, a C encoder per depth."""

    def __init__(self, *, ensure_ascii: bool, default: Callable[[Any], Any] | None, clean: bool) -> None:
        self.string: Callable[[str], str] = _encoder.encode_basestring_ascii if ensure_ascii else \
            _encoder.encode_basestring
        self.default = _refuse if default is None else default
        self.clean = clean
        self.markers: set[int] = set()  # ids of the containers being written (json's circular check)
        self.encoders: dict[int, Callable[[Any, int], list[str]]] = {}
        self.scalar: dict[type, Callable[[Any], str]] = {
            str: self.string, int: int.__repr__, float: self.number, bool: _BOOL.__getitem__, _NONE: _null,
        }

    def number(self, v: float) -> str:
        """A float: ``float.__repr__``; NaN and infinities are null when cleaning, else json's error."""
        if isfinite(v):
            return float.__repr__(v)
        if self.clean:
            return "null"
        raise ValueError("Out of range float values are not JSON compliant")

    def text(self, o: Any, level: int) -> str:
        """A value at depth ``level`` as one string (a slot of a table)."""
        out: list[str] = []
        self.write(o, level, out)
        return out[0] if len(out) == 1 else "".join(out)

    def write(self, o: Any, level: int, out: list[str]) -> None:
        """Any value at depth ``level`` onto ``out`` (``_make_iterencode``'s ``_iterencode``, in its order)."""
        scalar = self.scalar.get(type(o))
        if scalar is not None:
            out.append(scalar(o))
        elif isinstance(o, dict):
            self.mapping(o, level, out)
        elif isinstance(o, (list, tuple)):
            self.sequence(o, level, out)
        elif isinstance(o, str):
            out.append(self.string(o))
        elif isinstance(o, int):
            out.append(int.__repr__(o))
        elif isinstance(o, float):
            out.append(self.number(o))
        else:
            mark = self.mark(o)
            clean, self.clean = self.clean, False  # default's result is written as it is (json_safe ran before)
            self.write(self.default(o), level, out)
            self.clean = clean
            self.markers.discard(mark)

    def mark(self, o: object) -> int:
        """Enter a container (or an object for ``default``): json's ValueError when it is already open."""
        mark = id(o)
        if mark in self.markers:
            raise ValueError("Circular reference detected")
        self.markers.add(mark)
        return mark

    def mapping(self, o: dict[Any, Any], level: int, out: list[str]) -> None:
        """A dict: one C call when its values are plain, else key by key."""
        if self.clean and (type(o) is not dict or not set(map(type, o)) <= {str}):
            o = {str(k): v for k, v in o.items()}  # json_safe: keys as text (a later equal key replaces the value)
        if not o:
            out.append("{}")
            return
        if type(o) is dict and set(map(type, o.values())) <= _PLAIN and (text := self.flat(o, level)) is not None:
            out.append(text)
            return
        mark = self.mark(o)
        sep = "{\n" + "  " * (level + 1)
        for k, v in o.items():
            out += (sep, self.key(k), ": ")
            self.write(v, level + 1, out)
            sep = ",\n" + "  " * (level + 1)
        out.append("\n" + "  " * level + "}")
        self.markers.discard(mark)

    def key(self, k: Any) -> str:
        """A dict key as json writes it: text, or a float, bool, None or int made text; else TypeError."""
        if isinstance(k, str):
            return self.string(k)
        if isinstance(k, float):
            if not isfinite(k):
                raise ValueError("Out of range float values are not JSON compliant")
            text = float.__repr__(k)
        elif k is True or k is False or k is None:
            text = "true" if k is True else "false" if k is False else "null"
        elif isinstance(k, int):
            text = int.__repr__(k)
        else:
            raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")
        return self.string(text)

    def sequence(self, o: list[Any] | tuple[Any, ...], level: int, out: list[str]) -> None:
        """A list or tuple: one C call when its items are plain, a table for dicts of the same keys, else
        item by item."""
        if self.clean and type(o) not in (list, tuple):
            o = list(o)  # json_safe: a list of what iterating gives
        if not o:
            out.append("[]")
            return
        inner = "\n" + "  " * (level + 1)
        if type(o) in (list, tuple):
            types = set(map(type, o))
            if types <= _PLAIN and (text := self.flat(o, level)) is not None:
                out.append(text)
                return
            if types == {dict} and len(o) >= TABLE_MIN:
                if self.table(o, level, out):
                    return
                if (texts := self.dicts(o, level + 1)) is not None:
                    out += ("[", inner, ("," + inner).join(texts), "\n" + "  " * level + "]")
                    return
        mark = self.mark(o)
        sep = "[" + inner
        for v in o:
            out.append(sep)
            self.write(v, level + 1, out)
            sep = "," + inner
        out.append("\n" + "  " * level + "]")
        self.markers.discard(mark)

    def encoder(self, level: int) -> Callable[[Any, int], list[str]]:
        """The C encoder whose items are one a line at depth ``level + 1`` (``",\\n"`` and the indent)."""
        enc = self.encoders.get(level)
        if enc is None:
            assert _make_encoder is not None
            # no circular check (it is given no container inside a container), no sorting, allow_nan=False
            enc = self.encoders[level] = _make_encoder(
                None, self.default, self.string, None, ": ", ",\n" + "  " * (level + 1), False, False, False)
        return enc

    def flat(self, o: dict[Any, Any] | list[Any] | tuple[Any, ...], level: int) -> str | None:
        """A container of plain values at depth ``level`` through the C encoder; None for a NaN to clean."""
        try:
            text = "".join(self.encoder(level)(o, 0))
        except ValueError:
            if not self.clean:
                raise
            return None  # a NaN or an infinity: the walk writes it as null
        return text[0] + "\n" + "  " * (level + 1) + text[1:-1] + "\n" + "  " * level + text[-1]

    def dicts(self, items: list[Any] | tuple[Any, ...], level: int) -> list[str] | None:
        """Dicts of plain values (any keys), each at depth ``level``, through one C call; None if some is
        empty, holds a container or a NaN to clean (or, when cleaning, has a key that is not text)."""
        if not all(items) or not set(map(type, chain.from_iterable(map(dict.values, items)))) <= _PLAIN or \
                self.clean and not set(map(type, chain.from_iterable(items))) <= {str}:
            return None
        items_sep = ",\n" + "  " * (level + 1)
        try:
            text = "".join(self.encoder(level)(items, 0))  # [{a, b}, {c}] with items_sep after each ","
        except ValueError:
            if not self.clean:
                raise
            return None
        # inside a dict of plain values a separator is followed by a key, never by "{"
        one = "{\n" + "  " * (level + 1) + "%s\n" + "  " * level + "}"
        return list(map(one.__mod__, text[2:-2].split("}" + items_sep + "{")))

    def table(self, rows: list[Any] | tuple[Any, ...], level: int, out: list[str]) -> bool:
        """Dicts with the same keys, all text, in the same order: the values column by column (a column is
        every ``len(keys)``-th value), each put in its slot of the text between the keys. False (nothing
        written) for other dicts."""
        keys = tuple(rows[0])
        if not keys or set(map(type, keys)) != {str} or set(map(tuple, rows)) != {keys} or \
                not set(map(type, chain.from_iterable(rows))) <= {str}:
            return False
        mark = self.mark(rows)
        field, inner = "\n" + "  " * (level + 2), "\n" + "  " * (level + 1)
        heads = [("{" if i == 0 else ",") + field + self.string(k) + ": " for i, k in enumerate(keys)]
        tail = inner + "}," + inner
        width, stride = len(keys), 2 * len(keys) + 1
        out.append("[" + inner)
        for start in range(0, len(rows), BLOCK):
            block = rows[start:start + BLOCK]
            values = list(chain.from_iterable(map(dict.values, block)))  # row after row, in the keys' order
            slots = [tail] * (len(block) * stride)
            for i, head in enumerate(heads):
                slots[2 * i::stride] = [head] * len(block)
                slots[2 * i + 1::stride] = self.column(values[i::width], level + 2)
            if start + BLOCK >= len(rows):
                slots[-1] = inner + "}\n" + "  " * level + "]"
            out.append("".join(slots))
        self.markers.discard(mark)
        return True

    def column(self, values: list[Any], level: int) -> list[str]:
        """One key's values in a block of rows, as text: mapped by type when they are plain."""
        types = set(map(type, values))
        if len(types) == 1:
            t = next(iter(types))
            if t is int:
                if min(values) >= 0 and max(values) < len(_SMALL):
                    return list(map(_SMALL.__getitem__, values))
                return _formatted(values, int.__repr__)
            if t is float:
                if all(map(isfinite, values)):
                    return _formatted(values, float.__repr__)
            elif t is _NONE:
                return ["null"] * len(values)
            elif t in _PLAIN:
                return list(map(self.scalar[t], values))
            elif t is dict and (texts := self.dicts(values, level)) is not None:
                return texts
        if types <= _PLAIN:
            scalar = self.scalar
            return [scalar[type(v)](v) for v in values]
        return [self.text(v, level) for v in values]


def _formatted(values: list[Any], fmt: Callable[[Any], str]) -> list[str]:
    """``fmt`` of each number; when they repeat (a column of counts, of 0.0), each distinct one formatted
    once. Equal numbers have one text, but for 0.0 and -0.0: not when a zero is negative."""
    distinct = set(values)
    if len(distinct) * 4 > len(values) or \
            0 in distinct and min(map(copysign, repeat(1.0), filter(not_, values))) < 0:
        return list(map(fmt, values))
    texts = dict(zip(distinct, map(fmt, distinct), strict=True))
    return list(map(texts.__getitem__, values))
