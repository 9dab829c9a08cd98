""":mod:`tracekit._jsontext` writes ``json.dumps(obj, indent=2, allow_nan=False, ...)``'s text, byte for byte.

Compared with ``json.dumps`` itself: on every sample's ``analyze --json`` document (the stream's for the
captures, the frames path's for simulator traces, runs and kernel logs), on hypothesis' nested values
(edge floats, huge ints, surrogates and control characters, empty containers, keys that are not text,
objects for ``default``, subclasses, tables of rows with the same keys), with each option the callers
use, and on the errors. The writer itself (``_Writer``) is checked too, so that no case passes only
through the fallback to ``json.dumps``.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import CAPTURES, SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracekit import _jsontext, pipeline
from tracekit._shared import json_safe
from tracekit.reports import text
from tracekit.streamed import summary_document

#: (name, options): ``reports.text.dumps`` (clean, default=str), a plain call, grading's and batch's.
OPTIONS: list[tuple[str, dict[str, Any]]] = [
    ("clean", {"clean": True}),
    ("plain", {}),
    ("utf8", {"ensure_ascii": False, "default": None}),
]


def _reference(obj: Any, *, ensure_ascii: bool = True, default: Callable[[Any], Any] | None = str,
               clean: bool = False) -> str:
    return json.dumps(json_safe(obj) if clean else obj, indent=2, allow_nan=False, ensure_ascii=ensure_ascii,
                      default=default)


def _writer(obj: Any, *, ensure_ascii: bool = True, default: Callable[[Any], Any] | None = str,
            clean: bool = False) -> str:
    """The writer without the fallback to ``json.dumps``."""
    return _jsontext._Writer(ensure_ascii=ensure_ascii, default=default, clean=clean).text(obj, 0)


def _check(obj: Any, **options: Any) -> None:
    """Same text as json.dumps, from the writer and from ``dumps``; or, where json.dumps raises, the same
    error (type and message) from ``dumps`` and an error from the writer."""
    try:
        want = _reference(obj, **options)
    except (ValueError, TypeError, RecursionError) as err:
        with pytest.raises(type(err), match=re.escape(str(err))):
            _jsontext.dumps(obj, **options)
        with pytest.raises((ValueError, TypeError, RecursionError)):
            _writer(obj, **options)
        return
    assert _writer(obj, **options) == want
    assert _jsontext.dumps(obj, **options) == want


# --- the samples' documents -------------------------------------------------------------------------

#: Inputs the stream does not read (simulator traces, runs, tool series, kernel logs), through the frames
#: path: flows, views of several captures, tool_metrics and the kernel block.
KERNEL = "linux/kernel_truth/bottleneck_reno"
FRAMES_INPUTS: list[tuple[str, tuple[str, ...]]] = [
    ("ns2/lab_reno", ()), ("ns2/dumbbell", ()), ("ns3/dumbbell", ()), ("opnet/tcp_reno_tab.txt", ()),
    ("opnet/tcp_reno_unicode.txt", ()), ("netsim/Packet_Trace_ftp_tcp.csv", ()),
    (f"{KERNEL}.pcap", (f"{KERNEL}.nstat", f"{KERNEL}.ss.gz")),
]


def _check_document(doc: dict[str, Any]) -> None:
    want = _reference(doc, clean=True)
    assert text.dumps(doc) == want
    assert _writer(doc, clean=True) == want
    cleaned = json_safe(doc)
    assert _writer(cleaned, ensure_ascii=False, default=None) == _reference(cleaned, ensure_ascii=False, default=None)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_capture_documents(path: Path) -> None:
    doc = summary_document(str(path))
    if doc is None:  # the stream refuses it: the frames path's document
        doc = text.summary(pipeline.load(str(path), keep_per_packet=False))
    _check_document(doc)


@pytest.mark.parametrize(("name", "kernel"), FRAMES_INPUTS, ids=[n for n, _ in FRAMES_INPUTS])
def test_frames_documents(name: str, kernel: tuple[str, ...]) -> None:
    an = pipeline.load(str(SAMPLES / name), keep_per_packet=False, kernel=[SAMPLES / k for k in kernel])
    _check_document(text.summary(an))


# --- edge values ------------------------------------------------------------------------------------


class Thing:
    """An object json cannot write: ``default=str`` writes its text."""

    def __str__(self) -> str:
        return "thing \u00e9\n"


class Color(str):
    """A str subclass whose ``str()`` is not its value (a key cleaned by ``str(key)``), like a str Enum's."""

    def __str__(self) -> str:
        return "Color.RED"


RED = Color("red")


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    def __repr__(self) -> str:  # json writes float.__repr__, not this
        return "ratio"


class Items(list[Any]):
    pass


class Table(dict[Any, Any]):
    pass


class Backwards(list[Any]):
    """Iterates backwards: json (and json_safe) iterate, the C encoder would read the items in place."""

    def __iter__(self) -> Any:
        return iter(list(super().__iter__())[::-1])


class Ghost(list[Any]):
    """Empty by its length, not by iterating (json_safe iterates it; json.dumps asks its length)."""

    def __len__(self) -> int:
        return 0


EDGE_FLOATS = [0.0, -0.0, 1e-7, 1e16, 5e-324, 1.7976931348623157e308, -1.5, 0.1, 2.9999900000000004, 1e-05,
               123456789.125, 1e22]
EDGE_STRINGS = ["", "a", "é", "\u2028", "\U0001f600", "\ud800", "a\udfffb", "\x00\x1f\x7f", "\n\r\t\"\\/",
                "%s %% %(x)s", "}" + ",\n  {", "\": {", "\": ["]
EDGE_INTS = [0, -1, 1, 4095, 4096, -4096, 2**63, -(2**64), 10**30, True, False]


@pytest.mark.parametrize(("name", "options"), OPTIONS, ids=[n for n, _ in OPTIONS])
def test_edge_values(name: str, options: dict[str, Any]) -> None:
    scalars: list[Any] = [*EDGE_FLOATS, *EDGE_STRINGS, *EDGE_INTS, None, Level.HIGH, Ratio(0.5), RED]
    for v in scalars:
        _check(v, **options)
        _check([v], **options)
        _check({"k": v}, **options)
    values: list[Any] = [
        scalars, {str(i): v for i, v in enumerate(scalars)}, [], {}, [[]], [{}], {"a": []}, {"a": {}},
        (1, 2.5, "x"), [(1,), [2, [3, [4, {}]]]], Items([1, Items([2])]), Table(a=1, b=Table(c=[1])),
        {1: "int", 2.5: "float", None: "none", "s": "str"}, {True: "bool", -0.0: "zero"},
        {1: "a", "1": "b"}, {RED: 1, "x": [1]}, {Level.HIGH: 1.5},
        [Thing(), Fraction(1, 3), {"t": Thing()}], {"nested": {"deep": [{"x": None}] * 5}},
        [{"a": 1, "b": 2.5}] * 3 + [{"b": 2.5, "a": 1}], [{"a": i, "b": {"c": i}} for i in range(6)],
        [{"a": 1}, {}, {"a": 2}, {"a": 3}, {"a": 4}], [{"%": "%s", "b": "%%"} for _ in range(5)],
        [{"a": float("nan") if i == 3 else 1.5, "b": [i]} for i in range(6)],
        [{"v": {"x": float("inf")}} for _ in range(5)], [{"k": Thing()} for _ in range(5)],
        [{RED: 1} for _ in range(5)], [{1: "a"} for _ in range(5)], [{"v": {1: "a"}} for _ in range(5)],
        [{"v": [1, {"w": [2]}]} for _ in range(5)], [{"v": {}} for _ in range(5)], [[1, 2]] * 5,
        [{"a": 4096 - i, "b": 4095 + i} for i in range(5)], [{"red": 1}] * 4 + [{RED: 2}],
        [{"red": 1}] * 4 + [{Thing(): 2}], Backwards([1, 2, [3, 4]]), [Backwards([{"a": 1}] * 5)],
        Ghost([1, 2]), {"g": Ghost([{"a": 1}])},
        # repeated numbers are formatted once per column: 0.0 and -0.0 are equal, their texts are not
        [{"z": -0.0 if i == 7 else 0.0, "w": -0.0, "x": float(i % 2), "i": 10**6 + i % 3} for i in range(20)],
        [{"z": 0.0 if i == 7 else -0.0, "w": 1e300 * (i % 2)} for i in range(20)],
    ]
    for v in values:
        _check(v, **options)


def test_errors_are_json_dumps_errors() -> None:
    circular: list[Any] = [1]
    circular.append(circular)
    cyclic: dict[str, Any] = {}
    cyclic["self"] = [{"a": cyclic}] * 5
    cases: list[Any] = [float("nan"), [float("inf")], {"x": -float("inf")}, {float("nan"): 1}, {(1, 2): "tuple"},
                        {Thing(): 1}, [Thing()], 10**5000, [10**5000], circular, cyclic,
                        [{"a": 10**5000} for _ in range(5)], [{"a": float("nan")} for _ in range(5)]]
    for v in cases:
        for _, options in OPTIONS:
            _check(v, **options)
    with pytest.raises(ValueError, match="Out of range float"):
        _jsontext.dumps({"a": [1.0, float("nan")]})
    with pytest.raises(ValueError, match="Circular reference"):
        _jsontext.dumps(circular)
    with pytest.raises(TypeError, match="not JSON serializable"):
        _jsontext.dumps([Thing()], default=None)
    with pytest.raises(ValueError, match="Circular reference"):
        _writer(cyclic)  # the writer's own check, as json's
    assert _jsontext.dumps({"a": [1.0, float("nan")]}, clean=True) == '{\n  "a": [\n    1.0,\n    null\n  ]\n}'


def test_what_default_returns_is_not_cleaned() -> None:
    """json_safe ran before json.dumps called ``default``: its result is written as it is."""
    for default in (lambda o: float("nan"), lambda o: {True: [1.5, None]}, lambda o: [o.real] if isinstance(o, Fraction)
                    else str(o)):
        for v in ([Fraction(1, 3)], {"x": Thing()}, [{"a": Fraction(1, 2)} for _ in range(5)]):
            _check(v, clean=True, default=default)
            _check(v, default=default)


def test_many_blocks_and_a_short_last_one() -> None:
    rows = [{"i": i, "f": i / 7, "s": f"r{i}", "n": None, "b": i % 2 == 0, "m": i if i % 3 else None,
             "d": {"x": i}, "l": [i]} for i in range(10)]
    for block in (1, 3, 5, 10, 11):
        with mock.patch.object(_jsontext, "BLOCK", block):
            for _, options in OPTIONS:
                _check(rows, **options)
                _check({"rows": rows, "more": [rows, rows[:4]]}, **options)


# --- hypothesis -------------------------------------------------------------------------------------

_texts = st.text(st.characters(exclude_categories=()), max_size=6) | st.sampled_from(EDGE_STRINGS)
_floats = st.floats() | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EDGE_FLOATS)
_ints = st.integers() | st.integers(-(10**40), 10**40) | st.sampled_from(EDGE_INTS)
_scalars = st.none() | st.booleans() | _ints | _floats | _texts
_others = st.sampled_from([Thing(), Fraction(2, 3), RED, Level.HIGH, Ratio(2.5)])
_keys = _texts | _ints | _floats | st.booleans() | st.none() | st.sampled_from([RED, Level.HIGH])
#: A table column's values: one type (the mapped paths), mixed, flat dicts, or anything.
_COLUMNS = [_floats, _ints, _texts, st.none(), st.booleans(), _scalars, _scalars | _others,
            st.dictionaries(_texts, _scalars, max_size=3)]


@st.composite
def _table(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> list[dict[Any, Any]]:
    """Rows with the same keys (text, sometimes not), each key's column from one of :data:`_COLUMNS`."""
    keys = draw(st.lists(_texts | st.sampled_from([1, RED]), max_size=5, unique=True))
    kinds = [draw(st.sampled_from([*_COLUMNS, children])) for _ in keys]
    n = draw(st.integers(0, 9))
    return [{k: draw(kind) for k, kind in zip(keys, kinds, strict=True)} for _ in range(n)]


_values = st.recursive(
    _scalars | _others,
    lambda children: st.lists(children, max_size=5) | st.tuples(children, children)
    | st.dictionaries(_keys, children, max_size=5) | _table(children),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_values, option=st.sampled_from(OPTIONS), block=st.sampled_from([2, 2048]))
def test_random_values(value: Any, option: tuple[str, dict[str, Any]], block: int) -> None:
    with mock.patch.object(_jsontext, "BLOCK", block):
        _check(value, **option[1])
