"""Grading runs: reference runs and submissions read and analysed, judged by :mod:`tracekit.grading`.

``tracekit grade --reference REF... --submissions DIR --rubric rubric.toml -o OUT/`` (the steps are
told in :mod:`tracekit.grading.grade`): the references are read and analysed here
(:func:`reference_profile`), each submission is read, analysed and judged in a worker
(:func:`grade_submission`, run by :mod:`tracekit.batch.executors`: killed past ``--timeout``,
capped by ``--max-memory``), and the outputs are written by :mod:`tracekit.grading.outputs`.
``tracekit check`` judges one item on one run (:func:`check`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tracekit._files import content_hash, file_sha256
from tracekit.analysis import analyze
from tracekit.batch.executors import Outcome, Task, make_executor
from tracekit.batch.handins import read_run, read_submission
from tracekit.batch.submissions import discover, single
from tracekit.batch.traces import worker_limits
from tracekit.errors import TracekitError, UsageError
from tracekit.grading import outputs as go
from tracekit.grading import units as gu
from tracekit.grading.grade import (
    NOT_READ,
    Profile,
    Verdict,
    base_result,
    build_profile,
    evaluate,
    failed_result,
    student_curves,
    unreadable,
)
from tracekit.grading.outputs import feedback_page
from tracekit.grading.rubric import Rubric
from tracekit.grading.similar import fingerprint, flag
from tracekit.grading.submissions import Discovery, Submission
from tracekit.limits import DEFAULT, Limits
from tracekit.pipeline import load, sniff


def path_files(path: str) -> dict[str, str]:
    """sha256 per trace file of a reference run (a file, or a folder's recognised trace files)."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(c for c in p.iterdir() if c.is_file() and not c.name.startswith("."))
    out = {}
    for f in files:
        if p.is_dir() and sniff(f) is None:
            continue
        out[f.name] = file_sha256(f)
    return out


def reference_profile(rubric: Rubric, references: list[str], *, limits: Limits = DEFAULT) -> Profile:
    """Read and analyse the reference runs and compute every item's reference values.

    Raises:
        UsageError: an item without a usable reference. TracekitError: a reference that cannot be read.
    """
    analyses = [load(r, limits=limits) for r in references]
    docs = [{"path": str(r), "sha256": content_hash(Path(r)), "files": path_files(r)} for r in references]
    return build_profile(rubric, analyses, docs)


# ---- one submission (runs in a worker) -------------------------------------------------------------------------


def grade_submission(sub: Submission, profile: Profile, limits: Limits = DEFAULT,
                     strict: bool = False) -> dict[str, Any]:
    """Read, analyse and judge one submission; never raises for a bad submission.

    Returns:
        The result dict (``id``, ``status``, ``score``, ``verdicts``, ``warnings``, ...) with the
        rendered feedback page under ``page``.
    """
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
        analysis = analyze(trace)
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
    started = time.time()
    refs = list(references) or list(rubric.references)
    profile = reference_profile(rubric, refs, limits=limits)
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

    tasks = [Task(s.id, "tracekit.batch.grading:grade_submission", (s, profile, wl, strict))
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
    item = rubric.item(item_name)
    sub_rubric = Rubric(rubric.name, (item,), rubric.references, rubric.sha256, rubric.path)
    refs = list(references) or list(rubric.references)
    if item.expected is not None:
        refs = []
    profile = reference_profile(sub_rubric, refs, limits=limits)
    trace, _ = read_submission(single(target), limits, strict)
    profile.lab = profile.lab if refs else gu.lab_units(trace)
    return evaluate(analyze(trace), profile, [item])[0]
