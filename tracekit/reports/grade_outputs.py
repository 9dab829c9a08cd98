"""Outputs of grading: Gradescope ``results.json``, the feedback page, ``grades.csv``, ``summary.json``.

``results.json`` follows Gradescope's specification (ECOSYSTEM.md §1.1, schema in
``tests/data/gradescope_results.schema.json``): one test per rubric item with
``name``, ``number``, ``score``, ``max_score``, ``status``, ``output`` and
``visibility``; top-level ``output_format: "text"`` because outputs carry strings
from the student's files; strict JSON (``allow_nan=False``); written atomically.

The feedback page is built like the reports (:func:`tracekit.reports.html.page`:
escaped text, script-safe chart JSON, inlined Vega, CSP) and overlays the
student's cwnd and throughput curves on the reference mean and the seeds' band.
Items with ``visibility = "hidden"`` are left off the page (it is meant for students).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit.errors import OutputError
from tracekit.reports.grade_metrics import fmt_value

if TYPE_CHECKING:
    from tracekit.reports.grade import Profile

SCHEMA_VERSION = 1
_COLORS = {"student": "#d62728", "reference mean": "#1f77b4", "reference seeds (min–max)": "#aec7e8"}
_TITLES = {"cwnd": ("Congestion window", "bytes"), "throughput": ("Goodput", "bit/s")}


def _version() -> str:
    from tracekit import __version__

    return __version__


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


def results_json(res: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """The Gradescope ``results.json`` document of one submission."""
    tests = []
    for i, v in enumerate(res["verdicts"], 1):
        tests.append({
            "number": str(i),
            "name": v["title"],
            "score": v["score"],
            "max_score": v["points"],
            # an explicit status: a 0-point item still shows red when its check fails
            "status": "passed" if v["status"] == "passed" else "failed",
            "output": v["output"],
            "visibility": v["visibility"],
            "tags": [v["metric"]],
        })
    lines = [f"Graded with rubric {profile.rubric.name!r} against {len(profile.references)} reference run(s)."]
    if res.get("error"):
        lines.append(f"Could not grade the submission: {res['error'].get('message')}")
    for w in res.get("warnings") or []:
        lines.append(f"Warning {w.get('code')}: {w.get('message')}")
    for r in res.get("rejected") or []:
        lines.append(f"Ignored archive member {r['member']!r}: {r['reason']}")
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
    return json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def write_submission(outdir: Path, res: dict[str, Any], profile: Profile, page: str | None, *, single: bool) -> None:
    """Write ``results.json`` and ``feedback.html`` of one submission (``OUT/<id>/``, or ``OUT/`` if single)."""
    from tracekit.batch import write_file
    from tracekit.reports.submissions import output_path

    if single:
        root = outdir.resolve()
        targets = (root / "results.json", root / "feedback.html")
    else:
        targets = (output_path(outdir, res["id"], "results.json"), output_path(outdir, res["id"], "feedback.html"))
    write_file(targets[0], dumps(results_json(res, profile)))
    if page is not None:
        write_file(targets[1], page)
    res["results"] = str(targets[0].relative_to(outdir.resolve()))
    res["feedback"] = str(targets[1].relative_to(outdir.resolve())) if page is not None else None


# ---- grades.csv and summary.json -------------------------------------------------------------------------------


def write_summary(outdir: Path, profile: Profile, results: list[dict[str, Any]], rejected: list[dict[str, str]],
                  executor: str, started: float, interrupted: bool) -> dict[str, Any]:
    """Write ``grades.csv`` and ``summary.json``; return the summary document."""
    from tracekit.batch import csv_text, write_file

    names = [it.name for it in profile.rubric.items]
    rows = []
    for r in results:
        row: dict[str, Any] = {"id": r["id"], "original": r["original"], "status": r["status"],
                               "score": r["score"], "max_score": r["max_score"]}
        for v in r["verdicts"]:
            row[v["item"]] = v["score"]
        row["warnings"] = ";".join(str(w.get("code")) for w in r.get("warnings") or [])
        row["error"] = (r.get("error") or {}).get("message")
        rows.append(row)
    write_file(outdir / "grades.csv",
               csv_text(rows, ["id", "original", "status", "score", "max_score", *names, "warnings", "error"]))
    items = []
    for it in profile.rubric.items:
        items.append({"name": it.name, "title": it.title, "metric": it.metric, "points": it.points,
                      "visibility": it.visibility, "direction": it.direction,
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
                   "errors": sum(r["status"] != "graded" for r in results), "rejected_members": len(rejected)},
        "rejected": rejected,
        "submissions": results,
        "run": {"executor": executor, "started": round(started, 3), "elapsed_s": round(time.time() - started, 3)},
    }
    write_file(outdir / "summary.json", dumps(doc))
    return doc


# ---- feedback page -----------------------------------------------------------------------------------------------


def overlay_chart(key: str, grid: list[float], mean: list[float], lo: list[float], hi: list[float],
                  student: list[float] | None) -> Any:
    """Student vs reference: the seeds' min–max band, the reference mean, the student's curve."""
    import altair as alt

    from tracekit.reports.charts import HEIGHT, WIDTH

    title, unit = _TITLES[key]
    band = [{"t": round(t, 4), "lo": round(a, 3), "hi": round(b, 3)} for t, a, b in zip(grid, lo, hi, strict=True)]
    lines = [{"t": round(t, 4), "y": round(y, 3), "s": "reference mean"} for t, y in zip(grid, mean, strict=True)]
    if student is not None:
        lines += [{"t": round(t, 4), "y": round(y, 3), "s": "student"} for t, y in zip(grid, student, strict=True)]
    color = alt.Color("s:N", scale=alt.Scale(domain=list(_COLORS), range=list(_COLORS.values())), title=None,
                      legend=alt.Legend(orient="top"))
    x = alt.X("t:Q", title="time since the flow's first packet (s)")
    interp: Any = "step-after"
    area = (alt.Chart(alt.Data(values=band), name=f"{key}_band")
            .transform_calculate(s="'reference seeds (min–max)'")
            .mark_area(opacity=0.35, interpolate=interp)
            .encode(x=x, y=alt.Y("lo:Q", title=unit, axis=alt.Axis(format="~s")), y2="hi:Q", color=color))
    line = (alt.Chart(alt.Data(values=lines), name=f"{key}_lines")
            .mark_line(interpolate=interp, strokeWidth=1.5)
            .encode(x=x, y=alt.Y("y:Q", title=unit), color=color,
                    strokeDash=alt.StrokeDash("s:N", legend=None,
                                              scale=alt.Scale(domain=["reference mean", "student"],
                                                              range=[[5, 3], [1, 0]]))))
    return alt.layer(area, line).properties(title=title, width=WIDTH, height=HEIGHT)


def feedback_page(res: dict[str, Any], profile: Profile, curves: dict[str, list[float]]) -> str:
    """The student's feedback page: score, each verdict with its numbers, warnings, overlay charts."""
    from tracekit.reports.charts import safe_label
    from tracekit.reports.html import chart_spec, esc, page

    sid = res["id"]
    got, top = f"{res['score']:g}", f"{res['max_score']:g}"
    parts = [f"<h1>Feedback — {esc(sid)}</h1>",
             f"<p>Rubric <b>{esc(profile.rubric.name)}</b>, {len(profile.references)} reference run(s). "
             f"Score <b data-score=\"{esc(res['score'])}\">{esc(got)}</b> / {esc(top)}.</p>"]
    if res.get("original") and res["original"] != sid:
        parts.append(f"<p>Submitted as <code>{esc(safe_label(res['original']))}</code>.</p>")
    if res.get("error"):
        parts.append(f'<p class="warn">Could not grade this submission: {esc(res["error"].get("message"))}</p>')
    notes = [f"<li class=\"warn\"><code>{esc(w.get('code'))}</code> {esc(w.get('message'))}</li>"
             for w in res.get("warnings") or []]
    notes += [f"<li class=\"warn\">ignored archive member <code>{esc(r['member'])}</code>: {esc(r['reason'])}</li>"
              for r in res.get("rejected") or []]
    if notes:
        parts.append(f"<h2>Warnings</h2><ul>{''.join(notes)}</ul>")
    rows = []
    for v in res["verdicts"]:
        if v["visibility"] == "hidden":
            continue
        unit = v["unit"]
        pts = f"{v['score']:g} / {v['points']:g}"
        rows.append(f'<tr data-item="{esc(v["item"])}" data-status="{esc(v["status"])}">'
                    f'<td class="t">{esc(v["title"])}</td><td>{esc(fmt_value(v["student"], unit))}</td>'
                    f'<td>{esc(fmt_value(v["reference"], unit))}</td>'
                    f'<td class="t">{esc(v["tolerance"])}</td>'
                    f'<td>{esc(pts)}</td>'
                    f'<td class="t">{esc(v["output"])}</td></tr>')
    parts.append("<h2>Items</h2><table id=\"verdicts\"><thead><tr><th class=\"t\">item</th><th>you</th>"
                 "<th>reference</th><th class=\"t\">tolerance</th><th>score</th><th class=\"t\">details</th>"
                 f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    specs: dict[str, dict[str, Any]] = {}
    for key, ref in profile.display.items():
        grid = ref.grid.tolist()
        chart = overlay_chart(key, grid, ref.mean.tolist(), ref.lo.tolist(), ref.hi.tolist(), curves.get(key))
        specs[key] = chart_spec(chart)
        missing = "" if key in curves else f'<p class="missing">your run has no {esc(key)} series to compare</p>'
        parts.append(f'<h2>{esc(_TITLES[key][0])}: you vs the reference</h2>'
                     f'<div class="chart" id="chart-{key}" data-kind="{key}"></div>{missing}')
    return page(f"tracekit feedback — {sid}", "\n".join(parts), specs)
