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
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from tracekit._files import content_hash
from tracekit.errors import TracekitError, UsageError
from tracekit.grading import metrics as gm
from tracekit.grading import units as gu
from tracekit.grading.rubric import Item, Rubric, Selector, band, score
from tracekit.grading.units import LabUnits
from tracekit.limits import DEFAULT, Limits

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


def path_digest(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, or of a folder's files (names and contents)."""
    return content_hash(Path(path))


def _display_item(metric: str) -> Item:
    from tracekit.grading.rubric import Tolerance

    return Item(name=f"_{metric}", metric=metric, points=0.0, title=metric, tolerance=Tolerance())


def build_profile(rubric: Rubric, references: list[str], *, limits: Limits = DEFAULT,
                  analyses: list[Analysis] | None = None) -> Profile:
    """Read the reference runs and compute every item's reference values.

    Args:
        rubric: The validated rubric.
        references: Reference run paths (files or run directories).
        limits: Reader limits.
        analyses: Already analysed references (skips reading ``references``).

    Returns:
        The profile.

    Raises:
        UsageError: no reference for an item that needs one, or a reference that cannot give a value.
        TracekitError: a reference that cannot be read.
    """
    import tracekit

    if analyses is None:
        analyses = [tracekit.analyze(tracekit.read(r, limits=limits)) for r in references]
    from tracekit.grading.similar import path_files, series_digest

    prof = Profile(rubric, references=[{"path": str(r), "sha256": path_digest(r), "files": path_files(r),
                                        "series_sha256": series_digest(a), "values": {}}
                                       for r, a in zip(references, analyses, strict=True)])
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
        for ref_path, a in zip(references, analyses, strict=True):
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
        for ref_path, a, r, doc in zip(references, analyses, rows, prof.references, strict=True):
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
        from tracekit.grading.rubric import Tolerance

        c = gm.curve(analysis, Item(f"_{metric}", metric, 0.0, metric, Tolerance(), options=opts), row)
        if c is not None and c[0].size:
            out[key] = gm.resample(c[0], c[1], ref.grid, step=ref.step).tolist()
    return out


# ---- one submission (runs in a worker) -------------------------------------------------------------------------


def grade_submission(sub: Submission, profile: Profile, limits: Limits = DEFAULT,
                     strict: bool = False) -> dict[str, Any]:
    """Read, analyse and judge one submission; never raises for a bad submission.

    Returns:
        The result dict (``id``, ``status``, ``score``, ``verdicts``, ``warnings``, ...) with the
        rendered feedback page under ``page``.
    """
    import tracekit
    from tracekit.grading.outputs import feedback_page
    from tracekit.grading.similar import fingerprint
    from tracekit.grading.submissions import read_run

    t0 = time.perf_counter()
    res = base_result(sub, profile)
    curves: dict[str, list[float]] = {}
    try:
        run = read_run(sub, limits, strict)
        trace = run.trace
        res["rejected"] = run.notes
        res["files"] = run.files
        res["warnings"] = [{k: w.get(k) for k in ("code", "message", "count", "line", "offset", "file", "detail")}
                           | {"student": gu.student_warning(w)} for w in run.warnings]
        analysis = tracekit.analyze(trace)
        res["fingerprint"] = fingerprint(run.files, analysis)
        res["trace"] = {"format": trace.meta.get("format"), "tool": trace.meta.get("tool"),
                        "packets": trace.packets.height, "flows": analysis.flows.height}
        verdicts = evaluate(analysis, profile)
        curves = student_curves(analysis, profile)
        res["status"] = "graded"
    except TracekitError as exc:
        res["error"] = {"kind": "error", **exc.to_dict(), "message": str(exc), "student": gu.student_error(exc, sub)}
        verdicts = unreadable(profile, NOT_READ)
    res["verdicts"] = [v.to_dict() for v in verdicts]
    res["score"] = round(sum(v.score for v in verdicts), 4)
    res["elapsed_s"] = round(time.perf_counter() - t0, 3)
    res["page"] = feedback_page(res, profile, curves)
    return res


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
    from tracekit.grading.outputs import feedback_page

    res = base_result(sub, profile)
    why = {"timeout": "grading your submission", "memory": "grading your submission"}.get(
        str(error.get("kind")), "grading your submission failed:")
    res["error"] = {**error, "student": gu.sentence(f"{why} {error.get('message')}") +
                    " Your instructor can see this in the grades."}
    res["verdicts"] = [v.to_dict() for v in unreadable(profile, NOT_READ)]
    res["page"] = feedback_page(res, profile, {})
    return res


# ---- the whole run ---------------------------------------------------------------------------------------------


def run_grade(references: list[str], submissions: str | None, rubric: Rubric, out: str | os.PathLike[str], *,
              submission: str | None = None, jobs: int | None = None, timeout: float | None = None,
              max_memory: int | None = None, scheduler: str | None = None, limits: Limits = DEFAULT,
              strict: bool = False, initializer: str | None = None, on_result: Any = None) -> dict[str, Any]:
    """Grade a folder/zip of submissions (or one ``submission``) and write every output into ``out``.

    Args:
        references: Reference runs (the rubric's ``references`` are used when empty).
        submissions: Folder or zip of submissions.
        rubric: The validated rubric.
        out: Output folder.
        submission: One submission instead (its results.json goes to ``out/results.json``).
        jobs, timeout, max_memory, scheduler: Executor settings (see :mod:`tracekit.batch.executors`).
        limits: Reader limits.
        strict: Reader warnings become errors.
        initializer: ``"module:function"`` run in each local worker (tests).
        on_result: Called with each result dict as it arrives (the CLI prints verdicts).

    Returns:
        The summary document (also written to ``out/summary.json``).
    """
    from tracekit.batch.executors import Outcome, Task, make_executor
    from tracekit.batch.traces import worker_limits
    from tracekit.grading import outputs as go
    from tracekit.grading.submissions import Discovery, discover, single

    started = time.time()
    refs = list(references) or list(rubric.references)
    profile = build_profile(rubric, refs, limits=limits)
    if submission is not None:
        found = Discovery([single(submission)])
    elif submissions is not None:
        found = discover(submissions, limits)
    else:
        raise UsageError("give --submissions DIR|ZIP or --submission PATH")
    outdir = Path(out)
    go.prepare(outdir)
    timeout = limits.timeout_s if timeout is None else timeout
    max_memory = limits.max_memory_bytes if max_memory is None else max_memory
    wl = worker_limits(limits, max_memory)
    by_id = {s.id: s for s in found.submissions}
    order = sorted(by_id)  # outputs follow the student id, never the order workers finish in
    results: dict[str, dict[str, Any]] = {}
    shown = [0]
    executor = make_executor(jobs, scheduler=scheduler, timeout=timeout, max_memory=max_memory,
                             initializer=initializer)

    def done(o: Outcome) -> None:
        sub = by_id[o.key]
        res = o.value if o.ok else failed_result(sub, profile, o.error or {"kind": "crash", "message": "?"})
        page = res.pop("page", None)
        go.write_submission(outdir, res, profile, page, single=submission is not None)
        results[o.key] = res
        while on_result is not None and shown[0] < len(order) and order[shown[0]] in results:
            on_result(results[order[shown[0]]])
            shown[0] += 1

    tasks = [Task(s.id, "tracekit.grading.grade:grade_submission", (s, profile, wl, strict))
             for s in found.submissions]
    interrupted = False
    try:
        executor.run(tasks, done)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if scheduler:
            executor.shutdown()
    ordered = [results[i] for i in order if i in results]
    from tracekit.grading.similar import flag

    flag(ordered, profile.references)
    doc = go.write_summary(outdir, profile, ordered, found.rejected, executor.describe(), started, interrupted)
    if interrupted:
        raise KeyboardInterrupt
    return doc


def check(target: str, rubric: Rubric, item_name: str, references: list[str], *,
          limits: Limits = DEFAULT, strict: bool = False) -> Verdict:
    """Judge one item on one file/run/zip (``tracekit check``).

    Raises:
        UsageError: unknown item or unusable references. TracekitError: unreadable target.
    """
    import tracekit
    from tracekit.grading.submissions import read_submission, single

    item = rubric.item(item_name)
    sub_rubric = Rubric(rubric.name, (item,), rubric.references, rubric.sha256, rubric.path)
    refs = list(references) or list(rubric.references)
    if item.expected is not None:
        refs = []
    profile = build_profile(sub_rubric, refs, limits=limits)
    trace, _ = read_submission(single(target), limits, strict)
    profile.lab = profile.lab if refs else gu.lab_units(trace)
    return evaluate(tracekit.analyze(trace), profile, [item])[0]
