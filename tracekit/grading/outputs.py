"""Outputs of grading: Gradescope ``results.json``, ``grades.csv``, ``summary.json`` (pages: tracekit.grading.pages).

``results.json`` follows Gradescope's specification
(https://gradescope-autograders.readthedocs.io/en/latest/specs/; schema in
``tests/data/gradescope_results.schema.json``): one test per
rubric item with ``name``, ``number``, ``score``, ``max_score``, ``status``,
``output`` (the student's feedback) and ``visibility``, plus a 0-point reference test
per ``after_due_date`` item; top-level ``output_format: "text"`` because outputs carry
strings from the student's files; strict JSON (``allow_nan=False``); written atomically.
``grades.csv`` and ``summary.json`` are the instructor's and keep every number.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit import __version__, _jsontext
from tracekit._files import csv_text, write_output
from tracekit.errors import OutputError
from tracekit.grading.pages import feedback_page, index_page
from tracekit.grading.similar import describe
from tracekit.grading.submissions import output_path

if TYPE_CHECKING:
    from tracekit.grading.grade import Profile

SCHEMA_VERSION = 1


def _version() -> str:
    return __version__


def _write(path: Path, text: str) -> None:
    write_output(path, text, hint="choose another -o folder (Docker: run with -u $(id -u):$(id -g))")


def prepare(outdir: Path) -> None:
    """Create the output folder, failing early (and clearly) when it is not writable.

    Raises:
        OutputError: naming the folder.
    """
    import tempfile

    try:
        outdir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=outdir, prefix=".tracekit-probe-"):
            pass
    except OSError as exc:
        raise OutputError(f"the output folder is not writable: {exc.strerror or exc}", path=str(outdir),
                          hint="choose another -o folder (Docker: run with -u $(id -u):$(id -g))") from None


# ---- Gradescope ------------------------------------------------------------------------------------------------


def _ref_visibility(item_visibility: str) -> str:
    """When a reference-values test shows: after the due date, or later if the item itself is later."""
    return item_visibility if item_visibility in ("hidden", "after_published") else "after_due_date"


def results_json(res: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """The Gradescope ``results.json`` document of one submission.

    One test per item carries the score and the student's feedback (``visibility`` of the
    item, default visible) with no reference number unless the item says ``show_reference =
    "always"``. For ``after_due_date`` items a second, 0-point test carries the reference
    values with ``visibility: "after_due_date"`` (Gradescope's per-test visibility hides a
    whole test, so a number cannot be hidden inside a visible one).
    """
    tests = []
    later = False
    for i, v in enumerate(res["verdicts"], 1):
        tests.append({
            "number": str(i),
            "name": v["title"],
            "score": v["score"],
            "max_score": v["points"],
            # an explicit status: a 0-point item still shows red when its check fails
            "status": "passed" if v["status"] == "passed" else "failed",
            "output": v.get("feedback") or v["output"],
            "visibility": v["visibility"],
            "tags": [v["metric"]],
        })
        if v.get("show_reference", "after_due_date") == "after_due_date" and v.get("reference_text"):
            later = True
            tests.append({"number": f"{i}.1", "name": f"{v['title']} (reference values)", "score": 0.0,
                          "max_score": 0.0, "status": "passed", "output": v["reference_text"],
                          "visibility": _ref_visibility(v["visibility"]), "tags": [v["metric"], "reference"]})
    lines = [f"Graded with rubric {profile.rubric.name!r} against {len(profile.references)} reference run(s)."]
    if res.get("error"):
        lines.append("Your submission could not be graded. " + str(res["error"].get("student")
                                                                   or res["error"].get("message")))
    for w in res.get("warnings") or []:
        lines.append(str(w.get("student") or f"Warning {w.get('code')}: {w.get('message')}"))
    for r in res.get("rejected") or []:
        lines.append(f"Ignored {r['member']!r} in your zip: {r['reason']}.")
    if later:
        lines.append("Reference values appear after the due date.")
    return {
        "score": res["score"],
        "execution_time": res.get("elapsed_s", 0.0),
        # outputs quote the student's own file names and warnings: never let Gradescope render them as HTML
        "output": "\n".join(lines),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "tracekit_version": _version(),
            "submission_id": res["id"],
            "rubric_sha256": profile.rubric.sha256,
            "reference_sha256": [r["sha256"] for r in profile.references],
        },
    }


def dumps(doc: Any) -> str:
    """Strict JSON text (NaN/inf are refused, not written)."""
    return _jsontext.dumps(doc, ensure_ascii=False, default=None) + "\n"  # json.dumps(indent=2)'s text


def write_submission(outdir: Path, res: dict[str, Any], profile: Profile, page: str | None, *, single: bool) -> None:
    """Write ``results.json`` and ``feedback.html`` of one submission (``OUT/<id>/``, or ``OUT/`` if single)."""

    if single:
        root = outdir.resolve()
        targets = (root / "results.json", root / "feedback.html")
    else:
        targets = (output_path(outdir, res["id"], "results.json"), output_path(outdir, res["id"], "feedback.html"))
    _write(targets[0], dumps(results_json(res, profile)))
    if page is not None:
        _write(targets[1], page)
    res["results"] = str(targets[0].relative_to(outdir.resolve()))
    res["feedback"] = str(targets[1].relative_to(outdir.resolve())) if page is not None else None


# ---- grades.csv and summary.json -------------------------------------------------------------------------------


def write_summary(outdir: Path, profile: Profile, results: list[dict[str, Any]], rejected: list[dict[str, str]],
                  executor: str, started: float, interrupted: bool) -> dict[str, Any]:
    """Write ``grades.csv`` and ``summary.json``; return the summary document."""

    names = [it.name for it in profile.rubric.items]
    rows = []
    for r in results:
        row: dict[str, Any] = {"id": r["id"], "original": r["original"], "status": r["status"],
                               "score": r["score"], "max_score": r["max_score"]}
        for v in r["verdicts"]:
            row[v["item"]] = v["score"]
        row["warnings"] = ";".join(str(w.get("code")) for w in r.get("warnings") or [])
        row["error"] = (r.get("error") or {}).get("message")
        row["similar_to"] = describe(r.get("similar_to") or [])
        rows.append(row)
    _write(outdir / "grades.csv", csv_text(rows, ["id", "original", "status", "score", "max_score", *names,
                                                      "warnings", "error", "similar_to"]))
    items = []
    for it in profile.rubric.items:
        items.append({"name": it.name, "title": it.title, "metric": it.metric, "points": it.points,
                      "visibility": it.visibility, "direction": it.direction, "unit": it.unit,
                      "show_reference": it.show_reference, "hint": it.hint,
                      "tolerance": {"abs": it.tolerance.abs, "rel": it.tolerance.rel,
                                    "within_reference_spread": it.tolerance.within_reference_spread},
                      "partial": None if it.partial is None else {"abs": it.partial.abs, "rel": it.partial.rel},
                      "reference_values": [round(v, 9) for v in profile.values[it.name]]})
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tracekit_version": _version(),
        "rubric": {"name": profile.rubric.name, "path": profile.rubric.path, "sha256": profile.rubric.sha256,
                   "max_score": profile.rubric.max_score, "items": items},
        "references": profile.references,
        "interrupted": interrupted,
        "counts": {"submissions": len(results), "graded": sum(r["status"] == "graded" for r in results),
                   "errors": sum(r["status"] != "graded" for r in results), "rejected_members": len(rejected),
                   "flagged_similar": sum(bool(r.get("similar_to")) for r in results)},
        "lab_units": {"counts_packets": profile.lab.counts_packets, "packet_bytes": profile.lab.packet_bytes},
        "rejected": rejected,
        "submissions": results,
        "run": {"executor": executor, "started": round(started, 3), "elapsed_s": round(time.time() - started, 3)},
    }
    _write(outdir / "summary.json", dumps(doc))
    _write(outdir / "index.html", index_page(doc, profile))
    return doc


__all__ = ["feedback_page", "index_page", "results_json", "write_submission", "write_summary"]
