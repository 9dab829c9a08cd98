"""What students and instructors read back from grading, on the worked example of docs/grading.md.

samples/ns2/feedback/ (made by samples/ns2/make_feedback_example.sh with ns-2.35): one reference run
and four students — alice ran the reference's own command, bob used window_ 16, carol copied bob's
folder, dave's out.tr is cut in the middle of a line. Expected numbers come from the simulator's own
files (Window.tr, run.json) or from the files' bytes, never from tracekit.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import need_tool, sample

import tracekit
from tracekit.batch.grading import run_grade
from tracekit.errors import UsageError
from tracekit.grading.rubric import load_rubric, parse_rubric

EXAMPLE = sample("ns2", "feedback")
SUBS = EXAMPLE / "submissions"
RUBRIC = EXAMPLE / "rubric.toml"
SCHEMA = json.loads((Path(__file__).parent / "data" / "gradescope_results.schema.json").read_text())


def max_window_packets(run: Path) -> float:
    """The largest cwnd ns-2 printed into Window.tr ("time cwnd" per line, in packets)."""
    return max(float(line.split()[1]) for line in (run / "Window.tr").read_text().splitlines() if line.strip())


def packet_bytes(run: Path) -> int:
    return int(json.loads((run / "run.json").read_text())["packet_size_bytes"])


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("feedback") / "grades"
    seen: list[str] = []
    doc = run_grade([], str(SUBS), load_rubric(RUBRIC), out, jobs=2, timeout=120,
                    on_result=lambda r: seen.append(r["id"]))
    doc["_seen"] = seen
    return out, doc


def results(out: Path, sid: str) -> dict[str, Any]:
    return json.loads((out / sid / "results.json").read_text(encoding="utf-8"))


def test_gradescope_json_is_valid_and_hides_reference_values(graded: tuple[Path, dict[str, Any]]) -> None:
    out, doc = graded
    ref_pk = max_window_packets(EXAMPLE / "ref")
    ref_text = f"{ref_pk:,.0f} packets ({ref_pk * packet_bytes(EXAMPLE / 'ref'):,.0f} B)"
    bob = results(out, "bob")
    jsonschema.validate(bob, SCHEMA, cls=jsonschema.Draft202012Validator)
    by_num = {t["number"]: t for t in bob["tests"]}
    # the window item: score visible, no reference number in it; the reference values wait for the due date
    assert by_num["1"]["visibility"] == "visible" and by_num["1"]["max_score"] == 2
    assert ref_text not in by_num["1"]["output"] and f"{ref_pk:,.0f} packets" not in by_num["1"]["output"]
    assert by_num["1.1"]["visibility"] == "after_due_date" and ref_text in by_num["1.1"]["output"]
    assert by_num["1.1"]["max_score"] == 0
    # show_reference = "always": in the visible test; "never": nowhere in what the student gets
    ref_duration = next(r for r in doc["references"])["values"]["run_length"]
    assert f"{ref_duration:.4g} s" in by_num["2"]["output"] and "2.1" not in by_num
    assert "3.1" not in by_num
    visible = " ".join(t["output"] for t in bob["tests"] if t["visibility"] == "visible") + bob["output"]
    assert ref_text not in visible
    page = (out / "bob" / "feedback.html").read_text(encoding="utf-8")
    assert ref_text not in page and "reference mean" not in page  # no reference curve either
    # the instructor keeps everything
    summary = json.loads((out / "summary.json").read_text())
    item = next(i for i in summary["rubric"]["items"] if i["name"] == "window_cap")
    assert item["reference_values"] == [ref_pk * packet_bytes(EXAMPLE / "ref")]
    for sid in ("alice", "bob", "carol", "dave"):
        jsonschema.validate(results(out, sid), SCHEMA, cls=jsonschema.Draft202012Validator)


def test_window_feedback_is_in_packets_with_the_hint(graded: tuple[Path, dict[str, Any]]) -> None:
    out, _ = graded
    bob_pk = max_window_packets(SUBS / "bob")
    text = results(out, "bob")["tests"][0]["output"]
    assert f"never exceeded {bob_pk:,.0f} packets ({bob_pk * packet_bytes(SUBS / 'bob'):,.0f} B)" in text
    hint = load_rubric(RUBRIC).item("window_cap").hint
    assert hint and text.endswith("Hint: " + hint[0].upper() + hint[1:])
    before, _, _ = text.partition(" Hint: ")
    assert before.endswith(".")
    # alice passes the item: no hint
    assert "Hint:" not in results(out, "alice")["tests"][0]["output"]


def test_copies_are_flagged_and_still_scored(graded: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    out, doc = graded
    by_id = {s["id"]: s for s in doc["submissions"]}
    assert [s["id"] for s in by_id["carol"]["similar_to"]] == ["bob"]
    assert [s["id"] for s in by_id["bob"]["similar_to"]] == ["carol"]
    assert "out.tr" in by_id["carol"]["similar_to"][0]["why"]
    assert by_id["alice"]["similar_to"] == [{"reference": "ref", "why": by_id["alice"]["similar_to"][0]["why"]}]
    assert by_id["dave"]["similar_to"] == []  # another seed: its losses differ
    rows = {r["id"]: r for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert rows["carol"]["similar_to"].startswith("bob (byte-identical") and rows["dave"]["similar_to"] == ""
    assert rows["alice"]["similar_to"].startswith("reference ref")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert re.search(r'data-id="carol".*?data-col="similar_to">bob: byte-identical', index, re.S)
    # the flag never changes a score: carol graded alone (nobody to be similar to) scores the same
    alone = run_grade([], None, load_rubric(RUBRIC), tmp_path / "alone", submission=str(SUBS / "carol"), jobs=1)
    assert alone["submissions"][0]["similar_to"] == []
    assert alone["submissions"][0]["score"] == by_id["carol"]["score"] == by_id["bob"]["score"]


def _shift_times(src: Path, dst: Path, by: float) -> None:
    """Copy a run with every time moved by ``by`` seconds, each printed with its own decimals."""
    dst.mkdir(parents=True)
    for name, col in (("out.tr", 1), ("Window.tr", 0), ("WindowMon.tr", 0)):
        lines = []
        for line in (src / name).read_text().splitlines(keepends=True):
            f = line.split(" ")
            dec = max(len(f[col].split(".")[1]) if "." in f[col] else 0, 2)  # `by` has 2 decimals
            f[col] = f"{float(f[col]) + by:.{dec}f}"
            lines.append(" ".join(f))
        (dst / name).write_text("".join(lines))


def test_a_retimed_copy_is_flagged_by_its_series(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    shutil.copytree(SUBS / "bob", subs / "bob")
    _shift_times(SUBS / "bob", subs / "erin", 1.25)
    shutil.copytree(SUBS / "dave", subs / "dave")
    shutil.copy(EXAMPLE / "ref" / "out.tr", subs / "hank.tr")  # the reference's out.tr, renamed, alone
    assert (subs / "erin" / "out.tr").read_bytes() != (subs / "bob" / "out.tr").read_bytes()
    doc = run_grade([], str(subs), load_rubric(RUBRIC), tmp_path / "out", jobs=1)
    by_id = {s["id"]: s for s in doc["submissions"]}
    [sim] = by_id["erin"]["similar_to"]
    assert sim["id"] == "bob" and "after normalising times" in sim["why"]
    assert by_id["dave"]["similar_to"] == []
    assert by_id["hank"]["similar_to"] == [{"reference": "ref", "why": "byte-identical hank.tr"}]


def test_truncated_run_message_names_the_line(graded: tuple[Path, dict[str, Any]]) -> None:
    out, _ = graded
    data = (SUBS / "dave" / "out.tr").read_bytes()
    last = data.count(b"\n") + 1
    fields = len(data.rsplit(b"\n", 1)[1].split())
    res = results(out, "dave")
    want = f"out.tr line {last:,}: the file ends in the middle of this line (expected 12 columns, found {fields})"
    assert want in res["output"] and res["output"].count("out.tr line") == 1
    msg = next(line for line in res["output"].splitlines() if want in line)
    assert msg.split(" Hint: ")[0].endswith(".") and "--" not in msg
    page = (out / "dave" / "feedback.html").read_text(encoding="utf-8")
    assert f"out.tr line {last:,}" in page


def test_order_and_reproducibility(graded: tuple[Path, dict[str, Any]]) -> None:
    out, doc = graded
    ids = ["alice", "bob", "carol", "dave"]
    assert doc["_seen"] == ids  # on_result (the CLI's lines) in id order too, whatever finished first
    assert [s["id"] for s in doc["submissions"]] == ids
    assert [r["id"] for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))] == ids
    index = (out / "index.html").read_text(encoding="utf-8")
    assert [index.index(f'data-id="{i}"') for i in ids] == sorted(index.index(f'data-id="{i}"') for i in ids)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tracekit_version"] == tracekit.__version__
    assert summary["rubric"]["sha256"] == hashlib.sha256(RUBRIC.read_bytes()).hexdigest()
    [ref] = summary["references"]
    assert ref["files"] == {n: hashlib.sha256((EXAMPLE / "ref" / n).read_bytes()).hexdigest()
                            for n in ("Window.tr", "WindowMon.tr", "out.tr")}


# ---- errors a student understands ------------------------------------------------------------------------------


def _grade_one(tmp_path: Path, name: str, make: Any) -> dict[str, Any]:
    subs = tmp_path / "subs"
    subs.mkdir(exist_ok=True)
    make(subs / name)
    run_grade([], str(subs), load_rubric(RUBRIC), tmp_path / "out", jobs=1)
    return results(tmp_path / "out", Path(name).stem)


def _docx(path: Path) -> None:
    # the parts of a WordprocessingML package (ECMA-376 Part 2), in the order Word writes them; libmagic
    # (file) checks the first three members' names
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/'
                    'package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/'
                    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
        zf.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
                    'package/2006/relationships"><Relationship Id="rId1" Target="word/document.xml" Type="http://'
                    'schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/></Relationships>')
        zf.writestr("word/document.xml", '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats'
                    '.org/wordprocessingml/2006/main"><w:body/></w:document>')


def _pdf(path: Path) -> None:
    chromium = need_tool("chromium")
    html = path.with_suffix(".html")
    html.write_text("<p>lab report</p>")
    subprocess.run([chromium, "--headless", "--no-sandbox", f"--print-to-pdf={path}", html.as_uri()],
                   check=True, capture_output=True, timeout=120)
    html.unlink()


def _student_message(res: dict[str, Any]) -> str:
    lines = [x for x in res["output"].splitlines() if x.startswith("Your submission could not be graded.")]
    assert len(lines) == 1, res["output"]
    msg = lines[0]
    assert msg.split(" Hint: ")[0].endswith(".") and "--" not in msg and "pass the" not in msg
    assert all("could not be read" in t["output"] for t in res["tests"] if t["max_score"])
    return msg


@pytest.mark.parametrize(("maker", "what", "mime"), [
    (_docx, "a Word document (.docx)", "wordprocessingml"),
    (_pdf, "a PDF document", "application/pdf"),
])
def test_a_renamed_document_is_called_what_it_is(tmp_path: Path, maker: Any, what: str, mime: str) -> None:
    def make(p: Path) -> None:
        maker(p)
        got = subprocess.run(["file", "--brief", "--mime-type", str(p)], capture_output=True, text=True).stdout
        assert mime in got  # libmagic agrees on what the file is
    msg = _student_message(_grade_one(tmp_path, "eve.pcap", make))
    assert f"eve.pcap is {what}, not a packet trace." in msg and "zip" not in msg.split(" Hint:")[0]


def test_a_folder_without_traces_lists_what_it_skipped(tmp_path: Path) -> None:
    def make(p: Path) -> None:
        p.mkdir()
        _docx(p / "report.docx")
        (p / "notes.txt").write_text("my results\n")
        shutil.copy(EXAMPLE.parent / "tpwindow.tcl", p / "lab.tcl")
    msg = _student_message(_grade_one(tmp_path, "frank", make))
    assert "Your folder holds no packet trace; skipped: lab.tcl, notes.txt, report.docx (a Word document" in msg


def test_a_malformed_line_is_named(tmp_path: Path) -> None:
    def make(p: Path) -> None:
        shutil.copytree(SUBS / "bob", p)
        lines = (p / "out.tr").read_text().splitlines(keepends=True)
        lines[11] = " ".join(lines[11].split()[:7]) + "\n"  # line 12 loses its last 5 fields
        (p / "out.tr").write_text("".join(lines))
    res = _grade_one(tmp_path, "gus", make)
    assert "out.tr line 12: 1 line(s) could not be read (expected 12 columns, found 7)" in res["output"]


# ---- rubric keys -----------------------------------------------------------------------------------------------


def test_rubric_unit_hint_and_show_reference_are_validated() -> None:
    ok = parse_rubric("[[items]]\nname='w'\nmetric='max_cwnd'\nunit='packets'\nhint='check window_'\n"
                      "show_reference='always'\ntolerance={rel=0.1}\n")
    assert (ok.items[0].unit, ok.items[0].hint, ok.items[0].show_reference) == ("packets", "check window_", "always")
    assert parse_rubric("[[items]]\nname='w'\nmetric='max_cwnd'\ntolerance={rel=0.1}\n").items[0].show_reference \
        == "after_due_date"
    with pytest.raises(UsageError) as exc:
        parse_rubric("[[items]]\nname='w'\nmetric='max_cwnd'\nunit='pps'\nshow_reference='later'\nhint=''\n"
                     "tolerance={rel=0.1}\n")
    text = str(exc.value)
    assert "unit: max_cwnd is measured in bytes; it can be shown in packets, bytes" in text
    assert "show_reference: one of ['never', 'after_due_date', 'always']" in text and "hint: must be" in text
