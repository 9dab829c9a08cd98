"""Grading rubrics: the TOML file, its validation, and the tolerance arithmetic of a verdict.

A rubric is a list of items; each names a metric, which flow it is about, a
tolerance, points, optional partial credit, a Gradescope visibility and what the
student reads (``unit``, ``hint``, ``show_reference``: display only, never the
score). The format is documented with a complete example in ``docs/grading.md``.

Tolerance semantics (the rule of ``numpy.testing.assert_allclose``, docs/grading.md "Tolerances"):

* the *margin* is ``abs + rel × |reference|``, where the reference is the mean of
  the reference runs' values (or the item's fixed ``expected`` value);
* plain tolerance: the student passes when ``|student − reference| ≤ margin``;
* ``within_reference_spread = true``: the allowed band is
  ``[min(references) − margin, max(references) + margin]`` — the spread of the
  reference seeds, widened by the margin;
* ``direction = "at_least"`` / ``"at_most"`` drop the upper / lower bound;
* ``partial`` is a second, wider margin: credit falls linearly from full at the
  edge of the tolerance band to zero at the edge of the partial band.

Everything here is pure (no I/O but :func:`load_rubric`); verdicts are computed
from plain numbers so that they can be shown, checked and tested.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit.errors import UsageError
from tracekit.grading.metrics import metric_problem
from tracekit.grading.units import unit_problem

#: Submission ids, item names and other names that end up in file paths or CSV headers.
ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
#: When the student may see an item's reference values (the instructor's outputs always have them).
SHOW_REFERENCE = ("never", "after_due_date", "always")
DIRECTIONS = ("both", "at_least", "at_most")
DISTANCES = ("nrmse", "nmae")
#: Item keys that tune how a series metric is computed (see tracekit.grading.metrics).
OPTION_KEYS = {
    "bin_s": float,  # throughput bin width (s)
    "grid_s": float,  # resampling step of a curve comparison (s)
    "start_s": float,  # curve comparison window, relative to the flow's first packet
    "end_s": float,
    "distance": str,  # nrmse | nmae
    "series": str,  # throughput curve: "throughput" or "goodput"
    "min_drop": float,  # cwnd_backoff: a reduction counts when cwnd falls by more than this fraction
}
_ITEM_KEYS = {"name", "title", "metric", "points", "flow", "tolerance", "partial", "direction",
              "visibility", "expected", "description", "unit", "hint", "show_reference", *OPTION_KEYS}
_TOL_KEYS = {"abs", "rel", "within_reference_spread"}


def valid_id(text: str) -> bool:
    """True for names safe as a file name or CSV header: ``^[A-Za-z0-9._-]{1,64}$``, not only dots."""
    return bool(ID_RE.match(text)) and text.strip(".") != ""


@dataclass(frozen=True)
class Tolerance:
    """A margin ``abs + rel × |reference|``, around the reference or around the seeds' spread."""

    abs: float = 0.0
    rel: float = 0.0
    within_reference_spread: bool = False

    def margin(self, center: float) -> float:
        """The allowed deviation for a reference value ``center``."""
        return self.abs + self.rel * abs(center)

    def describe(self, unit_fmt: Any = None) -> str:
        """Words for the tolerance, e.g. ``±10 %`` or ``within the reference spread ± 0.5``."""
        parts = []
        if self.abs:
            parts.append(unit_fmt(self.abs) if unit_fmt else f"{self.abs:g}")
        if self.rel:
            parts.append(f"{self.rel * 100:g} %")
        margin = " + ".join(parts) if parts else "0"
        return f"within the reference spread ± {margin}" if self.within_reference_spread else f"± {margin}"


@dataclass(frozen=True)
class Selector:
    """Which connection direction an item is about.

    ``kind`` is ``largest`` (most unique bytes), ``port`` (either endpoint's port),
    ``label`` (the flows frame's ``label`` column, else ``src:sport → dst:dport``)
    or ``id`` (explicit ``flow`` and ``dir``).
    """

    kind: str = "largest"
    port: int | None = None
    label: str | None = None
    flow: int | None = None
    dir: int | None = None

    def describe(self) -> str:
        """Words for the selection, for verdict texts."""
        if self.kind == "port":
            return f"the largest flow on port {self.port}"
        if self.kind == "label":
            return f"the flow labelled {self.label!r}"
        if self.kind == "id":
            return f"flow {self.flow} direction {self.dir}"
        return "the largest flow"


@dataclass(frozen=True)
class Item:
    """One rubric item (see the module docstring for the tolerance rules)."""

    name: str
    metric: str
    points: float
    title: str
    tolerance: Tolerance
    partial: Tolerance | None = None
    direction: str = "both"
    visibility: str = "visible"
    selector: Selector = field(default_factory=Selector)
    expected: float | None = None
    description: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    unit: str | None = None
    hint: str | None = None
    show_reference: str = "after_due_date"

    def option(self, key: str, default: Any = None) -> Any:
        """A metric option given on the item (``bin_s``, ``grid_s``, ...), or ``default``."""
        return dict(self.options).get(key, default)


@dataclass(frozen=True)
class Rubric:
    """A validated rubric.

    Attributes:
        name: Shown on feedback pages.
        items: The items, in file order.
        references: Reference runs named by the rubric (resolved against its folder).
        sha256: Digest of the rubric file, recorded in every output.
        path: Where it was read from.
    """

    name: str
    items: tuple[Item, ...]
    references: tuple[str, ...] = ()
    sha256: str = ""
    path: str = ""

    @property
    def max_score(self) -> float:
        """Sum of the items' points."""
        return float(sum(i.points for i in self.items))

    def item(self, name: str) -> Item:
        """The item called ``name``.

        Raises:
            UsageError: when there is none, listing the names there are.
        """
        for it in self.items:
            if it.name == name:
                return it
        raise UsageError(f"the rubric has no item {name!r}", path=self.path or None,
                         hint="items: " + ", ".join(i.name for i in self.items))


# ---- loading ----------------------------------------------------------------------------------------


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _tolerance(raw: Any, where: str, problems: list[str]) -> Tolerance | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be a table like {{ rel = 0.1 }}, got {type(raw).__name__}")
        return None
    unknown = set(raw) - _TOL_KEYS
    if unknown:
        problems.append(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_TOL_KEYS)}")
    vals = {}
    for k in ("abs", "rel"):
        if k in raw:
            n = _number(raw[k])
            if n is None or n < 0:
                problems.append(f"{where}.{k}: must be a finite number ≥ 0, got {raw[k]!r}")
                n = 0.0
            vals[k] = n
    spread = raw.get("within_reference_spread", False)
    if not isinstance(spread, bool):
        problems.append(f"{where}.within_reference_spread: must be true or false")
        spread = False
    return Tolerance(vals.get("abs", 0.0), vals.get("rel", 0.0), spread)


def _selector(raw: Any, where: str, problems: list[str]) -> Selector:
    if raw is None or raw == "largest":
        return Selector()
    if isinstance(raw, dict):
        keys = set(raw)
        if keys == {"port"} and isinstance(raw["port"], int) and 0 <= raw["port"] <= 65535:
            return Selector("port", port=raw["port"])
        if keys == {"label"} and isinstance(raw["label"], str) and raw["label"]:
            return Selector("label", label=raw["label"])
        ids_ok = all(isinstance(raw.get(k), int) and raw[k] >= 0 for k in ("flow", "dir"))
        if keys == {"flow", "dir"} and ids_ok and raw["dir"] in (0, 1):
            return Selector("id", flow=raw["flow"], dir=raw["dir"])
    problems.append(f"{where}: must be \"largest\", {{ port = N }}, {{ label = \"...\" }} or "
                    f"{{ flow = N, dir = 0|1 }}, got {raw!r}")
    return Selector()


def _options(raw: dict[str, Any], where: str, problems: list[str]) -> list[tuple[str, Any]]:
    """The series-metric options given on an item (``bin_s``, ``distance``, ...), validated."""
    options: list[tuple[str, Any]] = []
    for key, typ in OPTION_KEYS.items():
        if key not in raw:
            continue
        v = raw[key]
        if typ is float:
            n = _number(v)
            if n is None or (n <= 0 and key in ("bin_s", "grid_s")) or n < 0:
                problems.append(f"{where}.{key}: must be a positive number, got {v!r}")
                continue
            options.append((key, n))
        else:
            allowed = DISTANCES if key == "distance" else ("throughput", "goodput")
            if v not in allowed:
                problems.append(f"{where}.{key}: one of {list(allowed)}, got {v!r}")
                continue
            options.append((key, v))
    return options


def _item(raw: Any, idx: int, defaults: dict[str, Any], known_metric: Any, problems: list[str]) -> Item | None:
    where = f"items[{idx}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be a table ([[items]])")
        return None
    name = raw.get("name")
    if isinstance(name, str) and valid_id(name):
        where = f"item {name!r}"
    else:
        problems.append(f"{where}.name: required, letters/digits/._- only (≤ 64), got {name!r}")
        name = f"item{idx + 1}"
    unknown = set(raw) - _ITEM_KEYS
    if unknown:
        problems.append(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_ITEM_KEYS)}")
    metric = raw.get("metric")
    if not isinstance(metric, str) or not metric:
        problems.append(f"{where}.metric: required (a flows column or a series metric)")
        metric = ""
    else:
        why = known_metric(metric)
        if why:
            problems.append(f"{where}.metric: {why}")
    points = _number(raw.get("points", 1))
    if points is None or points < 0:
        problems.append(f"{where}.points: must be a finite number ≥ 0, got {raw.get('points')!r}")
        points = 0.0
    tol = _tolerance(raw["tolerance"], f"{where}.tolerance", problems) if "tolerance" in raw else None
    if tol is None:
        if "tolerance" not in raw:
            problems.append(f"{where}.tolerance: required, e.g. {{ rel = 0.1 }} or "
                            "{ within_reference_spread = true, rel = 0.1 }")
        tol = Tolerance()
    partial = None
    if "partial" in raw:
        partial = _tolerance(raw["partial"], f"{where}.partial", problems)
        if partial is not None:
            if "within_reference_spread" not in raw["partial"]:
                partial = Tolerance(partial.abs, partial.rel, tol.within_reference_spread)
            if partial.within_reference_spread != tol.within_reference_spread:
                problems.append(f"{where}.partial: within_reference_spread must match the tolerance's")
            if partial.abs < tol.abs or partial.rel < tol.rel or (partial.abs, partial.rel) == (tol.abs, tol.rel):
                problems.append(f"{where}.partial: must be wider than the tolerance (abs and rel ≥ the "
                                "tolerance's, one of them larger)")
    direction = raw.get("direction", "both")
    if direction not in DIRECTIONS:
        problems.append(f"{where}.direction: one of {list(DIRECTIONS)}, got {direction!r}")
        direction = "both"
    visibility = raw.get("visibility", defaults.get("visibility", "visible"))
    if visibility not in VISIBILITIES:
        problems.append(f"{where}.visibility: one of {list(VISIBILITIES)}, got {visibility!r}")
        visibility = "visible"
    expected = None
    if "expected" in raw:
        expected = _number(raw["expected"])
        if expected is None:
            problems.append(f"{where}.expected: must be a finite number, got {raw['expected']!r}")
        elif tol.within_reference_spread:
            problems.append(f"{where}: `expected` is one value; within_reference_spread needs reference runs")
    options = _options(raw, where, problems)
    title = raw.get("title", name)
    if not isinstance(title, str):
        problems.append(f"{where}.title: must be text")
        title = str(name)
    desc = raw.get("description")
    unit, hint, show = _display_keys(raw, where, metric, defaults, problems)
    return Item(
        name=str(name), metric=metric, points=float(points), title=title.strip()[:200] or str(name),
        tolerance=tol, partial=partial, direction=direction, visibility=visibility,
        selector=_selector(raw.get("flow", defaults.get("flow")), f"{where}.flow", problems),
        expected=expected, description=desc if isinstance(desc, str) else None, options=tuple(options),
        unit=unit, hint=hint, show_reference=show,
    )


def _display_keys(raw: dict[str, Any], where: str, metric: str, defaults: dict[str, Any],
                  problems: list[str]) -> tuple[str | None, str | None, str]:
    """``unit``, ``hint`` and ``show_reference`` of an item (what the student reads, not the score)."""

    unit = raw.get("unit")
    if unit is not None:
        why = unit_problem(metric, unit) if isinstance(unit, str) else "must be text"
        if why:
            problems.append(f"{where}.unit: {why}")
            unit = None
    hint = raw.get("hint")
    if hint is not None and (not isinstance(hint, str) or not hint.strip()):
        problems.append(f"{where}.hint: must be non-empty text")
        hint = None
    show = raw.get("show_reference", defaults.get("show_reference", "after_due_date"))
    if show not in SHOW_REFERENCE:
        problems.append(f"{where}.show_reference: one of {list(SHOW_REFERENCE)}, got {show!r}")
        show = "after_due_date"
    return unit, hint.strip()[:500] if isinstance(hint, str) else None, show


def parse_rubric(text: str, *, path: str = "<rubric>", base: Path | None = None) -> Rubric:
    """Parse and validate rubric TOML text, reporting every problem at once.

    Args:
        text: The TOML text.
        path: Name for messages.
        base: Folder that relative ``references`` are resolved against.

    Returns:
        The validated :class:`Rubric`.

    Raises:
        UsageError: listing each problem.
    """

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"the rubric is not valid TOML: {exc}", path=path,
                         hint="see docs/grading.md for a complete example") from None
    problems: list[str] = []
    head = data.get("rubric", {})
    if not isinstance(head, dict):
        problems.append("[rubric] must be a table")
        head = {}
    unknown = set(data) - {"rubric", "items"}
    if unknown:
        problems.append(f"unknown top-level key(s) {sorted(unknown)}; allowed: rubric, items")
    unknown = set(head) - {"name", "references", "flow", "visibility", "show_reference"}
    if unknown:
        problems.append(f"[rubric]: unknown key(s) {sorted(unknown)}; allowed: name, references, flow, visibility, "
                        "show_reference")
    name = head.get("name", Path(path).stem)
    if not isinstance(name, str):
        problems.append("[rubric].name: must be text")
        name = "rubric"
    refs = head.get("references", [])
    if not isinstance(refs, list) or not all(isinstance(r, str) and r for r in refs):
        problems.append("[rubric].references: must be a list of paths")
        refs = []
    if base is not None:
        refs = [str(base / r) if not Path(r).is_absolute() else r for r in refs]
    raw_items = data.get("items")
    if not isinstance(raw_items, list) or not raw_items:
        problems.append("no [[items]]: a rubric needs at least one item")
        raw_items = []
    items = [it for i, raw in enumerate(raw_items)
             if (it := _item(raw, i, head, metric_problem, problems)) is not None]
    seen: set[str] = set()
    for it in items:
        if it.name in seen:
            problems.append(f"item {it.name!r}: the name is used twice")
        seen.add(it.name)
    if problems:
        raise UsageError("invalid rubric:\n  - " + "\n  - ".join(problems), path=path,
                         hint="see docs/grading.md for every key")
    return Rubric(name=name.strip()[:200], items=tuple(items), references=tuple(refs),
                  sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), path=path)


def load_rubric(path: str | Path) -> Rubric:
    """Read and validate a rubric file (``references`` resolve against its folder).

    Raises:
        UsageError: when the file cannot be read or is invalid.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the rubric: {exc}", path=str(p)) from None
    return parse_rubric(text, path=str(p), base=p.resolve().parent)


# ---- verdicts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Band:
    """The allowed interval for one item, and the wider zero-credit interval."""

    center: float
    lo: float
    hi: float
    zero_lo: float
    zero_hi: float


def band(item: Item, refs: list[float]) -> Band:
    """Allowed and zero-credit intervals for an item given the reference values.

    Raises:
        ValueError: when ``refs`` is empty.
    """
    if not refs:
        raise ValueError("no reference value")
    center = sum(refs) / len(refs)
    lo0, hi0 = (min(refs), max(refs)) if item.tolerance.within_reference_spread else (center, center)
    m = item.tolerance.margin(center)
    m2 = item.partial.margin(center) if item.partial is not None else m
    lo, hi, zlo, zhi = lo0 - m, hi0 + m, lo0 - m2, hi0 + m2
    if item.direction == "at_least":
        hi = zhi = math.inf
    elif item.direction == "at_most":
        lo = zlo = -math.inf
    return Band(center, lo, hi, zlo, zhi)


def score(item: Item, value: float, b: Band) -> float:
    """Points for a student value: full inside the band, linear to 0 at the partial band's edge."""
    if b.lo <= value <= b.hi:
        return item.points
    if value < b.lo:
        excess, width = b.lo - value, b.lo - b.zero_lo
    else:
        excess, width = value - b.hi, b.zero_hi - b.hi
    if width <= 0 or excess >= width:
        return 0.0
    return round(item.points * (1.0 - excess / width), 4)
