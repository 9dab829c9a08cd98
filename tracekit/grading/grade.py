"""Grading submissions against reference runs with a rubric.

``tracekit grade --reference REF... --submissions DIR --rubric rubric.toml -o OUT/``:

1. the rubric is validated (:mod:`tracekit.grading.rubric`);
2. every reference run is read and analysed here, and each item's reference
   values are computed (:class:`Profile`) — a reference that cannot give a value
   is the instructor's problem, reported at once as a UsageError;
3. each submission is read, analysed and judged in a worker
   (:mod:`tracekit.batch.executors`: killed past ``--timeout``, capped by
   ``--max-memory``), which also renders its feedback page;
4. this process writes, inside OUT only: ``OUT/<id>/results.json`` (Gradescope),
   ``OUT/<id>/feedback.html``, ``OUT/grades.csv``, ``OUT/summary.json`` and ``OUT/index.html``
   (:mod:`tracekit.grading.outputs`), every list in student-id order, after flagging
   copied submissions (:mod:`tracekit.grading.similar`; scores untouched).

A verdict's ``output`` (the instructor's: the command's lines, ``summary.json``) states the
student's number, the reference number(s) and the tolerance; its ``feedback`` (the student's:
``results.json``, the feedback page) states the student's number in the lab's units, the outcome
and a hint, and the reference only where the item's ``show_reference`` allows
(:mod:`tracekit.grading.units`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from tracekit.errors import TracekitError, UsageError
from tracekit.grading import metrics as gm
from tracekit.grading import units as gu
from tracekit.grading.outputs import feedback_page
from tracekit.grading.rubric import Item, Rubric, Selector, Tolerance, band, score
from tracekit.grading.similar import series_digest
from tracekit.grading.units import LabUnits

if TYPE_CHECKING:
    from tracekit.analysis import Analysis
    from tracekit.grading.submissions import Submission

#: Curves drawn on every feedback page (whatever the rubric grades): key -> (metric, option overrides).
DISPLAY = {"cwnd": "cwnd_distance", "throughput": "throughput_distance"}


@dataclass
class Profile:
    """What the references say, per rubric item.

    Attributes:
        rubric: The rubric.
        references: ``{"path", "sha256", "values": {item: value}}`` per reference run.
        values: Reference values per item (seeds' values, or leave-one-out distances for curves).
        curves: Reference curves of curve items.
        display: Reference curves for the feedback charts (``cwnd``, ``throughput``), when available.
        lab: The lab's units, from the first reference run (packets of ns-2's ``packetSize_``).
    """

    rubric: Rubric
    references: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)
    curves: dict[str, gm.CurveRef] = field(default_factory=dict)
    display: dict[str, gm.CurveRef] = field(default_factory=dict)
    lab: LabUnits = field(default_factory=LabUnits)


def _display_item(metric: str) -> Item:
    return Item(name=f"_{metric}", metric=metric, points=0.0, title=metric, tolerance=Tolerance())


def build_profile(rubric: Rubric, analyses: list[Analysis], references: list[dict[str, Any]] | None = None) -> Profile:
    """Compute every item's reference values from the analysed reference runs.

    Args:
        rubric: The validated rubric.
        analyses: The reference runs, analysed (e.g. by :func:`tracekit.batch.grading.reference_profile`).
        references: Per reference run, what the summary records of it (``path``, ``sha256``, ``files``);
            default: ``path`` ``reference N``.

    Returns:
        The profile.

    Raises:
        UsageError: no reference for an item that needs one, or a reference that cannot give a value.
    """

    docs = references if references is not None else [{"path": f"reference {i + 1}"} for i in range(len(analyses))]
    refs = [str(d.get("path")) for d in docs]
    prof = Profile(rubric, references=[{**d, "series_sha256": series_digest(a), "values": {}}
                                       for d, a in zip(docs, analyses, strict=True)])
    if analyses:
        prof.lab = gu.lab_units(analyses[0].trace)
    problems: list[str] = []
    for item in rubric.items:
        if item.expected is not None:
            prof.values[item.name] = [item.expected]
            continue
        if not analyses:
            problems.append(f"item {item.name!r}: no reference run given (--reference) and no `expected` value")
            continue
        if item.tolerance.within_reference_spread and len(analyses) < 2:
            problems.append(f"item {item.name!r}: within_reference_spread needs at least 2 reference runs "
                            f"(got {len(analyses)})")
        rows: list[dict[str, Any]] = []
        for ref_path, a in zip(refs, analyses, strict=True):
            row, why = gm.select_flow(a.flows, item.selector)
            if row is None:
                problems.append(f"item {item.name!r}: reference {ref_path}: {why}")
            else:
                rows.append(row)
        if len(rows) < len(analyses):
            continue
        if item.metric in gm.CURVE_METRICS:
            curves = [gm.curve(a, item, r) for a, r in zip(analyses, rows, strict=True)]
            good = [c for c in curves if c is not None and c[0].size]
            if len(good) < len(curves):
                problems.append(f"item {item.name!r}: a reference run has no {item.metric.split('_')[0]} series")
                continue
            cref = gm.curve_reference(item, good)
            prof.curves[item.name] = cref
            prof.values[item.name] = cref.values
            continue
        vals = []
        for ref_path, a, r, doc in zip(refs, analyses, rows, prof.references, strict=True):
            got = gm.scalar(a, item, r)
            if got.value is None:
                problems.append(f"item {item.name!r}: reference {ref_path}: {got.note}")
            else:
                vals.append(got.value)
                doc["values"][item.name] = got.value
        if len(vals) == len(analyses):
            prof.values[item.name] = vals
    if problems:
        raise UsageError("the references cannot be graded with this rubric:\n  - " + "\n  - ".join(problems),
                         path=rubric.path or None, hint="fix the rubric item or pass other --reference runs")
    _display_curves(prof, analyses)
    return prof


def _display_curves(prof: Profile, analyses: list[Analysis]) -> None:
    """Reference curves of the feedback charts (largest flow), on a grid of at most ~1000 points."""
    for key, metric in DISPLAY.items():
        item = _display_item(metric)
        picked = [gm.select_flow(a.flows, Selector())[0] for a in analyses]
        curves = [gm.curve(a, item, r) if r is not None else None
                  for a, r in zip(analyses, picked, strict=True)]
        good = [c for c in curves if c is not None and c[0].size]
        if good and len(good) == len(curves):
            end = min(float(c[0][-1]) for c in good)
            step = max(0.1 if key == "cwnd" else 1.0, end / 1000)
            opts = (("grid_s", step),) if key == "cwnd" else (("bin_s", step),)
            prof.display[key] = gm.curve_reference(
                Item(item.name, metric, 0.0, metric, item.tolerance, options=opts), good)


# ---- verdicts --------------------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """The judgement of one item for one submission (JSON-ready via :meth:`to_dict`).

    ``output`` is the instructor's full text (student value, reference, tolerance, score);
    ``feedback`` is what the student reads (no reference number unless ``show_reference`` is
    ``always``), ``reference_text`` the reference part shown when the rubric allows it.
    """

    item: str
    title: str
    metric: str
    unit: str
    points: float
    score: float
    status: str  # passed | failed | error
    student: float | None
    reference: float | None
    references: list[float]
    lo: float | None
    hi: float | None
    tolerance: str
    output: str
    visibility: str
    note: str | None = None
    feedback: str = ""
    reference_text: str = ""
    show_reference: str = "after_due_date"
    display_unit: str = ""
    display_scale: float = 1.0
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (infinite bounds become null)."""
        d = dict(self.__dict__)
        for k in ("lo", "hi", "student", "reference"):
            v = d[k]
            d[k] = None if v is None or not math.isfinite(v) else round(v, 9)
        d["references"] = [round(v, 9) for v in self.references]
        return d


def _allowed(lo: float, hi: float, fmt: Any) -> str:
    if math.isinf(lo) and math.isinf(hi):
        return "any value"
    if math.isinf(hi):
        return f"≥ {fmt(lo)}"
    if math.isinf(lo):
        return f"≤ {fmt(hi)}"
    return f"{fmt(lo)} … {fmt(hi)}"


class _Shown(TypedDict):
    """The display fields of a :class:`Verdict` that do not depend on the student's value."""

    reference_text: str
    show_reference: str
    display_unit: str
    display_scale: float
    hint: str | None


def judge(item: Item, value: gm.Extracted, refs: list[float], lab: LabUnits | None = None) -> Verdict:
    """Turn a student value and the reference values into a verdict with its explanation.

    Numbers are shown in the item's display unit (:mod:`tracekit.grading.units`); the
    band and the score are computed in the metric's own unit.
    """
    unit = gm.unit_of(item.metric)
    disp = gu.display_for(item, lab or LabUnits())
    b = band(item, refs)
    tol = item.tolerance.describe(disp.fmt if unit else None)
    if item.direction != "both":
        tol += f", {item.direction.replace('_', ' ')}"
    seeds = ""
    if len(refs) > 1:
        label = "seeds' leave-one-out distances" if item.metric in gm.CURVE_METRICS else "seeds"
        seeds = f" ({label} " + ", ".join(disp.fmt(v, with_base=False) for v in refs) + ")"
    ref_text = f"reference {disp.fmt(b.center)}{seeds}"
    if item.metric in gm.CURVE_METRICS:
        ref_text = f"distance from the mean reference curve; reference {disp.fmt(b.center)}{seeds}"
    allowed = f"allowed {_allowed(b.lo, b.hi, disp.fmt)} ({tol})"
    if item.partial is not None:
        allowed += f"; partial credit down to 0 at {_allowed(b.zero_lo, b.zero_hi, disp.fmt)}"
    common = _Shown(reference_text=gu.sentence(f"{ref_text}; {allowed}"), show_reference=item.show_reference,
                    display_unit=disp.unit, display_scale=disp.scale, hint=gu.hint_for(item))
    if value.value is None:
        out = f"cannot evaluate: {value.note}; {ref_text}; {allowed}; score 0/{item.points:g}"
        fb = _feedback(item, disp, value, "error", None, 0.0, common["reference_text"])
        return Verdict(item.name, item.title, item.metric, unit, item.points, 0.0, "error", None, b.center, refs,
                       b.lo, b.hi, tol, out, item.visibility, value.note, fb, **common)
    pts = score(item, value.value, b)
    inside = b.lo <= value.value <= b.hi
    status = "passed" if inside and pts >= item.points else "failed"
    side = None if inside else ("low" if value.value < b.lo else "high")
    note = f" ({value.note})" if value.note else ""
    out = (f"student {disp.fmt(value.value)}{note}; {ref_text}; {allowed}; "
           f"{'inside' if inside else 'outside'} → score {pts:g}/{item.points:g}")
    fb = _feedback(item, disp, value, status, side, pts, common["reference_text"])
    return Verdict(item.name, item.title, item.metric, unit, item.points, pts, status, value.value, b.center, refs,
                   b.lo, b.hi, tol, out, item.visibility, value.note, fb, **common)


def _feedback(item: Item, disp: gu.Display, value: gm.Extracted, status: str, side: str | None, pts: float,
              reference_text: str) -> str:
    """The student's sentence(s): their value, the outcome, the score, the reference if allowed, the hint."""
    text = gu.student_line(item, disp, value.value, value.note, status, side)
    text += f" Score {pts:g}/{item.points:g}."
    if item.show_reference == "always":
        text += " " + reference_text[0].upper() + reference_text[1:]
    return gu.with_hint(text, item, status)


def evaluate(analysis: Analysis, profile: Profile, items: list[Item] | None = None) -> list[Verdict]:
    """Judge every rubric item (or ``items``) on one analysed submission."""
    verdicts = []
    for item in items or list(profile.rubric.items):
        refs = profile.values[item.name]
        row, why = gm.select_flow(analysis.flows, item.selector)
        if row is None:
            got = gm.Extracted(None, why)
        elif item.metric in gm.CURVE_METRICS:
            got = gm.curve_value(item, profile.curves[item.name], gm.curve(analysis, item, row))
        else:
            try:
                got = gm.scalar(analysis, item, row)
            except TracekitError as exc:
                got = gm.Extracted(None, str(exc))
        verdicts.append(judge(item, got, refs, profile.lab))
    return verdicts


def student_curves(analysis: Analysis, profile: Profile) -> dict[str, list[float]]:
    """The student's display curves on the reference grids (for the feedback charts)."""
    out: dict[str, list[float]] = {}
    row, _ = gm.select_flow(analysis.flows, Selector())
    if row is None:
        return out
    for key, ref in profile.display.items():
        metric = DISPLAY[key]
        step = float(ref.grid[1] - ref.grid[0]) if ref.grid.size > 1 else 1.0
        opts = (("grid_s", step),) if key == "cwnd" else (("bin_s", step),)
        c = gm.curve(analysis, Item(f"_{metric}", metric, 0.0, metric, Tolerance(), options=opts), row)
        if c is not None and c[0].size:
            out[key] = gm.resample(c[0], c[1], ref.grid, step=ref.step).tolist()
    return out


#: What each item says when the whole submission could not be read (the reason is said once, on top).
NOT_READ = "your submission could not be read (the reason is given once, above the items)"
def base_result(sub: Submission, profile: Profile) -> dict[str, Any]:
    """The fields every submission result has, before grading."""
    return {"id": sub.id, "original": sub.original, "status": "error", "score": 0.0,
            "max_score": profile.rubric.max_score, "verdicts": [], "warnings": [], "rejected": list(sub.notes),
            "trace": None, "error": None, "elapsed_s": 0.0, "files": [], "fingerprint": None, "similar_to": []}


def unreadable(profile: Profile, reason: str) -> list[Verdict]:
    """Zero-score verdicts for a submission that could not be read or graded."""
    return [judge(it, gm.Extracted(None, reason), profile.values[it.name], profile.lab)
            for it in profile.rubric.items]


def failed_result(sub: Submission, profile: Profile, error: dict[str, Any]) -> dict[str, Any]:
    """The result of a submission whose worker failed (timeout, memory, crash)."""

    res = base_result(sub, profile)
    why = {"timeout": "grading your submission", "memory": "grading your submission"}.get(
        str(error.get("kind")), "grading your submission failed:")
    res["error"] = {**error, "student": gu.sentence(f"{why} {error.get('message')}") +
                    " Your instructor can see this in the grades."}
    res["verdicts"] = [v.to_dict() for v in unreadable(profile, NOT_READ)]
    res["page"] = feedback_page(res, profile, {})
    return res
