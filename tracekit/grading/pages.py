"""The two grading pages: a student's ``feedback.html`` and the instructor's ``index.html``.

Both are built like the reports (:func:`tracekit.reports.html.page`: escaped text,
script-safe chart JSON, inlined Vega, CSP).

* The feedback page is for the student: items with ``visibility = "hidden"`` are
  left off, numbers are in the lab's units, and no reference number appears unless
  an item says ``show_reference = "always"``. The reference curves (mean and the
  seeds' band) are drawn under the student's own only when every item shows its
  reference: a reference cwnd curve would give the reference's maximum away.
* The index page is for the instructor: every submission in id order with its
  score per item, the copies flagged (``similar_to``), errors and warnings, and
  the references' values and hashes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit.grading.units import Display
from tracekit.reports.charts import HEIGHT, WIDTH, safe_label
from tracekit.reports.html import chart_spec, esc, page

if TYPE_CHECKING:
    from tracekit.grading.grade import Profile

_COLORS = {"student": "#d62728", "reference mean": "#1f77b4", "reference seeds (min–max)": "#aec7e8"}
_TITLES = {"cwnd": "Congestion window", "throughput": "Goodput"}


def _disp(v: dict[str, Any]) -> Display:
    return Display(v.get("display_unit") or v["unit"], v["unit"], float(v.get("display_scale") or 1.0))


def overlay_chart(key: str, unit: str, grid: list[float], mean: list[float] | None, lo: list[float] | None,
                  hi: list[float] | None, student: list[float] | None) -> Any:
    """The student's curve, over the seeds' min–max band and the reference mean when they are given."""
    import altair as alt


    # a step drawn "after" each point needs one more point to show the last step's width
    end = grid[-1] + (grid[-1] - grid[-2] if len(grid) > 1 else 1.0)
    ext = [*grid, end]
    lines = []
    if mean is not None:
        lines += [{"t": round(t, 4), "y": round(y, 3), "s": "reference mean"}
                  for t, y in zip(ext, [*mean, mean[-1]], strict=True)]
    if student is not None:
        lines += [{"t": round(t, 4), "y": round(y, 3), "s": "student"}
                  for t, y in zip(ext, [*student, student[-1]], strict=True)]
    shown = [k for k in _COLORS if mean is not None or k == "student"]
    color = alt.Color("s:N", scale=alt.Scale(domain=shown, range=[_COLORS[k] for k in shown]), title=None,
                      legend=alt.Legend(orient="top"))
    x = alt.X("t:Q", title="time since the flow's first packet (s)")
    interp: Any = "step-after"
    fmt = "~s" if unit in ("bytes", "bit/s") else ",~f"
    line = (alt.Chart(alt.Data(values=lines), name=f"{key}_lines")
            .mark_line(interpolate=interp, strokeWidth=1.5)
            .encode(x=x, y=alt.Y("y:Q", title=unit, axis=alt.Axis(format=fmt)), color=color,
                    strokeDash=alt.StrokeDash("s:N", legend=None, scale=alt.Scale(
                        domain=[k for k in ("reference mean", "student") if k in shown],
                        range=[d for k, d in (("reference mean", [5, 3]), ("student", [1, 0])) if k in shown]))))
    if mean is None or lo is None or hi is None:
        return line.properties(title=_TITLES[key], width=WIDTH, height=HEIGHT)
    band = [{"t": round(t, 4), "lo": round(a, 3), "hi": round(b, 3)}
            for t, a, b in zip(ext, [*lo, lo[-1]], [*hi, hi[-1]], strict=True)]
    area = (alt.Chart(alt.Data(values=band), name=f"{key}_band")
            .transform_calculate(s="'reference seeds (min–max)'")
            .mark_area(opacity=0.35, interpolate=interp)
            .encode(x=x, y=alt.Y("lo:Q", title=unit, axis=alt.Axis(format=fmt)), y2="hi:Q", color=color))
    return alt.layer(area, line).properties(title=_TITLES[key], width=WIDTH, height=HEIGHT)


def _chart_unit(key: str, profile: Profile) -> tuple[str, float]:
    """The unit and scale of a display curve: packets and packets/s where the lab counts packets."""
    size = profile.lab.packet_bytes if profile.lab.counts_packets else None
    if key == "cwnd":
        return ("packets", 1.0 / size) if size else ("bytes", 1.0)
    return ("packets/s", 1.0 / (8.0 * size)) if size else ("bit/s", 1.0)


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else ""


def _ref_cell(v: dict[str, Any]) -> str:
    show = v.get("show_reference", "after_due_date")
    if show == "always":
        return _disp(v).fmt(v["reference"], with_base=False)
    return "after the due date" if show == "after_due_date" else "not shown"


def feedback_page(res: dict[str, Any], profile: Profile, curves: dict[str, list[float]]) -> str:
    """The student's feedback page: score, each item's feedback and hint, warnings, their curves."""

    sid = res["id"]
    got, top = f"{res['score']:g}", f"{res['max_score']:g}"
    parts = [f"<h1>Feedback — {esc(sid)}</h1>",
             f"<p>Rubric <b>{esc(profile.rubric.name)}</b>. "
             f"Score <b data-score=\"{esc(res['score'])}\">{esc(got)}</b> / {esc(top)}.</p>"]
    if res.get("original") and res["original"] != sid:
        parts.append(f"<p>Submitted as <code>{esc(safe_label(res['original']))}</code>.</p>")
    if res.get("error"):
        msg = res["error"].get("student") or res["error"].get("message")
        parts.append(f'<p class="warn" id="error">Your submission could not be graded. {esc(msg)}</p>')
    notes = [f"<li class=\"warn\">{esc(w.get('student') or w.get('message'))}</li>" for w in res.get("warnings") or []]
    notes += [f"<li class=\"warn\">ignored <code>{esc(r['member'])}</code> in your zip: {esc(r['reason'])}</li>"
              for r in res.get("rejected") or []]
    if notes:
        parts.append(f"<h2>Problems with your files</h2><ul id=\"warnings\">{''.join(notes)}</ul>")
    rows = []
    for v in res["verdicts"]:
        if v["visibility"] == "hidden":
            continue
        pts = f"{v['score']:g} / {v['points']:g}"
        rows.append(f'<tr data-item="{esc(v["item"])}" data-status="{esc(v["status"])}">'
                    f'<td class="t">{esc(v["title"])}</td>'
                    f'<td>{esc(_disp(v).fmt(v["student"]))}</td><td>{esc(_ref_cell(v))}</td>'
                    f'<td>{esc(pts)}</td><td class="t">{esc(v.get("feedback") or v["output"])}</td></tr>')
    parts.append("<h2>Items</h2><table id=\"verdicts\"><thead><tr><th class=\"t\">item</th><th>you</th>"
                 "<th>reference</th><th>score</th><th class=\"t\">feedback</th>"
                 f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    if any(v.get("show_reference") == "after_due_date" for v in res["verdicts"] if v["visibility"] != "hidden"):
        parts.append('<p class="note">Reference values are shown after the due date.</p>')
    reveal = all(it.show_reference == "always" for it in profile.rubric.items)
    specs: dict[str, dict[str, Any]] = {}
    for key, ref in profile.display.items():
        unit, k = _chart_unit(key, profile)
        grid = ref.grid.tolist()
        mine = [y * k for y in curves[key]] if key in curves else None
        refs: tuple[list[float] | None, list[float] | None, list[float] | None] = (
            ((ref.mean * k).tolist(), (ref.lo * k).tolist(), (ref.hi * k).tolist()) if reveal else (None, None, None))
        if mine is None and not reveal:
            continue
        specs[key] = chart_spec(overlay_chart(key, unit, grid, *refs, mine))
        missing = "" if mine is not None else f'<p class="missing">your run has no {esc(key)} series to compare</p>'
        what = "you vs the reference" if reveal else "your run"
        parts.append(f'<h2>{esc(_TITLES[key])}: {what}</h2>'
                     f'<div class="chart" id="chart-{key}" data-kind="{key}"></div>{missing}')
    return page(f"tracekit feedback — {sid}", "\n".join(parts), specs)


def index_page(doc: dict[str, Any], profile: Profile) -> str:
    """The instructor's page: every submission in id order, scores per item, copies, errors, references."""

    items = profile.rubric.items
    c = doc["counts"]
    parts = [f"<h1>Grades — {esc(profile.rubric.name)}</h1>",
             f"<p>{c['submissions']} submission(s): {c['graded']} graded, {c['errors']} not readable, "
             f"<b>{c['flagged_similar']} flagged as similar</b>. tracekit {esc(doc['tracekit_version'])}, "
             f"rubric sha256 <code>{esc(profile.rubric.sha256[:16])}…</code>.</p>"]
    head = "".join(f'<th title="{esc(it.title)}">{esc(it.name)}</th>' for it in items)
    rows = []
    for r in doc["submissions"]:
        by = {v["item"]: v for v in r["verdicts"]}
        cells = "".join(f'<td class="{"" if by[it.name]["status"] == "passed" else "neg"}" '
                        f'title="{esc(by[it.name]["output"])}">'
                        f'{_num(by[it.name]["score"])}</td>' if it.name in by else "<td></td>" for it in items)
        sim = "<br>".join(esc(("reference " + s["reference"]) if "reference" in s else s["id"]) + ": " + esc(s["why"])
                          for s in r.get("similar_to") or [])
        issues = [str((r.get("error") or {}).get("student") or "")] + [str(w.get("student") or w.get("code"))
                                                                       for w in r.get("warnings") or []]
        issues = [x.split(" Hint: ")[0] for x in issues]  # the instructor needs what, not the student's hint
        link = f'<a href="{esc(r["feedback"])}">{esc(r["id"])}</a>' if r.get("feedback") else esc(r["id"])
        rows.append(f'<tr data-id="{esc(r["id"])}"><td class="t">{link}</td><td class="t">{esc(r["status"])}</td>'
                    f'<td>{_num(r["score"])} / {_num(r["max_score"])}</td>{cells}'
                    f'<td class="t warn" data-col="similar_to">{sim}</td>'
                    f'<td class="t">{"<br>".join(esc(x) for x in issues if x)}</td></tr>')
    parts.append('<h2>Submissions</h2><table id="grades"><thead><tr><th class="t">id</th><th class="t">status</th>'
                 f'<th>score</th>{head}<th class="t">similar to</th><th class="t">problems</th></tr></thead>'
                 f"<tbody>{''.join(rows)}</tbody></table>")
    refs = []
    for it in doc["rubric"]["items"]:
        v = next((x for r in doc["submissions"] for x in r["verdicts"] if x["item"] == it["name"]), None)
        d = _disp(v) if v else None
        vals = ", ".join(d.fmt(x) if d else f"{x:g}" for x in it["reference_values"])
        refs.append(f'<tr><td class="t">{esc(it["name"])}</td><td class="t">{esc(it["title"])}</td>'
                    f'<td class="t">{esc(it["metric"])}</td><td>{_num(it["points"])}</td>'
                    f'<td class="t">{esc(vals)}</td><td class="t">{esc(it["show_reference"])}</td></tr>')
    parts.append('<h2>Items and reference values</h2><table id="items"><thead><tr><th class="t">item</th>'
                 '<th class="t">title</th><th class="t">metric</th><th>points</th><th class="t">reference</th>'
                 f'<th class="t">student sees reference</th></tr></thead><tbody>{"".join(refs)}</tbody></table>')
    files = "".join(f'<tr><td class="t" title="{esc(ref["path"])}">{esc(Path(ref["path"]).name)}</td><td class="t">'
                    + "<br>".join(f"{esc(n)} <code>{esc(h[:16])}…</code>" for n, h in (ref.get("files") or {}).items())
                    + "</td></tr>" for ref in doc["references"])
    parts.append('<h2>References</h2><table id="references" class="meta"><thead><tr><th class="t">run</th>'
                 f'<th class="t">files (sha256)</th></tr></thead><tbody>{files}</tbody></table>')
    return page(f"tracekit grades — {profile.rubric.name}", "\n".join(parts), {})
