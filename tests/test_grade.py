"""Grading against references: real ns-2 lab runs, rubric validation, tolerances, outputs, zip safety."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import sample

from tracekit.batch.grading import run_grade
from tracekit.batch.handins import read_submission
from tracekit.batch.submissions import discover, member_problem
from tracekit.cli.main import main
from tracekit.errors import LimitError, UsageError
from tracekit.grading import metrics as gm
from tracekit.grading.grade import judge
from tracekit.grading.rubric import band, load_rubric, parse_rubric, score
from tracekit.grading.submissions import make_id, output_path
from tracekit.limits import Limits

GRADING = sample("ns2", "grading")
SCHEMA = json.loads((Path(__file__).parent / "data" / "gradescope_results.schema.json").read_text())
RUBRIC = GRADING / "rubric.toml"
#: What each submission's single change must break (samples/ns2/grading/*/run.json says what changed).
EXPECTED_LOST = {
    "same": set(),
    "window": {"window_cap"},
    "reno": {"tahoe_backoff"},
    "queue": {"no_buffer_overflow"},
    "truncated": {"run_length", "goodput_curve"},
}


def validate_results(doc: dict[str, Any]) -> None:
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("lab") / "grades"
    doc = run_grade([], str(GRADING / "submissions"), load_rubric(RUBRIC), out, jobs=2, timeout=120)
    return out, doc


def test_lab_each_change_loses_exactly_its_items(lab: tuple[Path, dict[str, Any]]) -> None:
    out, doc = lab
    assert [r["path"] for r in doc["references"]] == [str(GRADING / f"ref_seed{i}") for i in (1, 2, 3)]
    by_id = {s["id"]: s for s in doc["submissions"]}
    assert set(by_id) == set(EXPECTED_LOST)
    for sid, lost in EXPECTED_LOST.items():
        s = by_id[sid]
        assert s["status"] == "graded", s["error"]
        got_lost = {v["item"] for v in s["verdicts"] if v["score"] < v["points"]}
        assert got_lost == lost, (sid, [v["output"] for v in s["verdicts"]])
        assert s["score"] == 10 - 2 * len(lost)
    assert by_id["same"]["score"] == by_id["same"]["max_score"] == 10


def test_lab_truncated_is_graded_with_a_warning(lab: tuple[Path, dict[str, Any]]) -> None:
    out, doc = lab
    trunc = next(s for s in doc["submissions"] if s["id"] == "truncated")
    assert "W-TRUNCATED" in {w["code"] for w in trunc["warnings"]}
    res = json.loads((out / "truncated" / "results.json").read_text())
    # said once, for the student: the file, the line (its number is the count of lines read + 1), what happened
    lines = (GRADING / "submissions" / "truncated" / "out.tr").read_bytes().count(b"\n") + 1
    assert f"out.tr line {lines:,}: the file ends in the middle of this line" in res["output"]
    assert res["output"].count("out.tr line") == 1
    curve = next(v for v in trunc["verdicts"] if v["item"] == "goodput_curve")
    assert "covers only" in curve["output"]


def test_lab_verdicts_state_student_reference_and_tolerance(lab: tuple[Path, dict[str, Any]]) -> None:
    out, doc = lab
    window = next(s for s in doc["submissions"] if s["id"] == "window")
    cap = next(v for v in window["verdicts"] if v["item"] == "window_cap")
    # window_ 16 packets of 500 B; the seeds reach 32, 32 and ~29.2 packets
    assert cap["student"] == 16 * 500
    assert sorted(cap["references"]) == pytest.approx([14588.5, 16000, 16000], abs=1)
    # ns-2 counts the window in packets of packetSize_ (run.json: 500 B): the texts say packets, bytes beside
    assert "student 16 packets (8,000 B)" in cap["output"] and "reference 31.1 packets (15,530 B)" in cap["output"]
    assert "16 packets (8,000 B)" in cap["feedback"] and "15,530" not in cap["feedback"]
    assert "within the reference spread ± 25 %" in cap["output"] and "score 0/2" in cap["output"]
    for s in doc["submissions"]:
        for v in s["verdicts"]:
            assert v["output"].startswith("student ") and "reference" in v["output"] and "allowed" in v["output"]


def test_lab_results_json_valid_and_outputs_written(lab: tuple[Path, dict[str, Any]]) -> None:
    out, doc = lab
    for sid in EXPECTED_LOST:
        res = json.loads((out / sid / "results.json").read_text(encoding="utf-8"))
        validate_results(res)
        assert res["output_format"] == "text"
        assert [t["name"] for t in res["tests"]][0].startswith("The congestion window is capped")
        assert res["score"] == sum(t["score"] for t in res["tests"])
        assert {t["status"] for t in res["tests"]} <= {"passed", "failed"}
        page = (out / sid / "feedback.html").read_text(encoding="utf-8")
        assert 'id="chart-cwnd"' in page and 'id="chart-throughput"' in page
        assert "<script src" not in page and "cdn.jsdelivr" not in page  # self-contained
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    assert {r["id"]: float(r["score"]) for r in rows} == {s: 10 - 2 * len(v) for s, v in EXPECTED_LOST.items()}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rubric"]["max_score"] == 10 and summary["counts"]["graded"] == 5


def test_gradescope_schema_rejects_what_the_spec_forbids() -> None:
    for bad in ({"max_score": 1, "score": 1}, {"tests": [{"score": 1, "status": "ok"}]},
                {"score": 1, "visibility": "public"}, {"output": "x"}):
        with pytest.raises(jsonschema.ValidationError):
            validate_results(bad)


# ---- tolerance arithmetic and rubric validation ----------------------------------------------------------------


def _rubric(items: str, head: str = "") -> Any:
    return parse_rubric(f"[rubric]\nname = 't'\n{head}\n{items}")


def test_partial_credit_is_linear_between_the_two_tolerances() -> None:
    r = _rubric("[[items]]\nname='g'\nmetric='goodput_bps'\npoints=4\ntolerance={rel=0.1}\npartial={rel=0.3}\n")
    it = r.items[0]
    b = band(it, [100.0])
    assert (b.lo, b.hi, b.zero_lo, b.zero_hi) == pytest.approx((90, 110, 70, 130))
    assert score(it, 105, b) == 4
    assert score(it, 120, b) == pytest.approx(2)   # halfway between 110 and 130
    assert score(it, 75, b) == pytest.approx(1.0)  # 15 of the 20 below 90
    assert score(it, 131, b) == 0


def test_spread_and_direction() -> None:
    r = _rubric("[[items]]\nname='a'\nmetric='max_cwnd'\ntolerance={within_reference_spread=true, abs=1}\n"
                "direction='at_least'\n")
    b = band(r.items[0], [10.0, 14.0, 12.0])
    assert b.lo == 9 and math.isinf(b.hi)
    v = judge(r.items[0], gm.Extracted(8.5), [10.0, 14.0, 12.0])
    assert v.status == "failed" and v.score == 0 and "allowed ≥ 9 B" in v.output
    assert judge(r.items[0], gm.Extracted(1e9), [10.0, 14.0, 12.0]).status == "passed"
    none = judge(r.items[0], gm.Extracted(None, "no cwnd"), [10.0])
    assert none.status == "error" and "cannot evaluate: no cwnd" in none.output


def test_invalid_rubric_lists_every_problem() -> None:
    text = """
[rubric]
name = "x"
colour = "red"
[[items]]
name = "../bad"
metric = "max_cwnd"
tolerance = { rel = -1, wobble = 2 }
[[items]]
name = "dup"
metric = "No Such Metric"
tolerance = { rel = 0.2 }
partial = { rel = 0.1 }
visibility = "public"
[[items]]
name = "dup"
metric = "goodput_bps"
flow = { port = "http" }
"""
    with pytest.raises(UsageError) as e:
        parse_rubric(text)
    msg = str(e.value)
    for part in ("colour", "../bad", "rel: must be a finite number", "wobble", "No Such Metric",
                 "partial: must be wider", "visibility", "used twice", "flow", "tolerance: required"):
        assert part in msg, part


def test_spread_needs_several_references(tmp_path: Path) -> None:
    r = _rubric("[[items]]\nname='a'\nmetric='duration'\ntolerance={within_reference_spread=true, abs=1}\n")
    with pytest.raises(UsageError, match="needs at least 2 reference runs"):
        run_grade([str(GRADING / "ref_seed1")], str(GRADING / "submissions"), r, tmp_path / "o", jobs=1)


def test_expected_value_grades_a_capture_without_references(tmp_path: Path) -> None:
    # bulk_lossy.pcap: one 750,000-byte transfer; the flows table knows its goodput and retransmissions
    r = _rubric("[[items]]\nname='bytes'\nmetric='unique_bytes'\nexpected=750000\ntolerance={abs=0}\n"
                "[[items]]\nname='port'\nmetric='loss_events'\nflow={port=5001}\nexpected=29\ntolerance={abs=0}\n"
                "[[items]]\nname='nope'\nmetric='queue_drops'\nexpected=0\ntolerance={abs=0}\n")
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(sample("linux", "bulk_lossy.pcap"), subs / "alice.pcap")
    doc = run_grade([], str(subs), r, tmp_path / "o", jobs=1)
    v = {x["item"]: x for x in doc["submissions"][0]["verdicts"]}
    assert v["bytes"]["status"] == "passed" and v["bytes"]["student"] == 750000
    assert v["port"]["student"] > 0
    # a capture shows no queue: the item cannot be evaluated, and says why
    assert v["nope"]["status"] == "error" and "no queue" in v["nope"]["output"]


# ---- CLI: grade and check --------------------------------------------------------------------------------------


def test_check_exit_codes() -> None:
    runner = CliRunner()
    base = ["check", "--rubric", str(RUBRIC), "--item", "tahoe_backoff"]
    ok = runner.invoke(main, [*base[:1], str(GRADING / "submissions" / "same"), *base[1:]])
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith("PASS tahoe_backoff: After a loss your window became (after ÷ before) 0.05")
    fail = runner.invoke(main, [*base[:1], str(GRADING / "submissions" / "reno"), *base[1:]])
    assert fail.exit_code == 1 and fail.output.startswith("FAIL") and "(after ÷ before) 0.5" in fail.output
    # the student reads it (GitHub Classroom): the default hint, no reference number
    assert "Hint: Check the TCP variant" in fail.output and "reference" not in fail.output.lower()
    bad = runner.invoke(main, ["check", str(RUBRIC), "--rubric", str(RUBRIC), "--item", "tahoe_backoff"])
    assert bad.exit_code == 2 and "cannot evaluate" in bad.output
    unknown = runner.invoke(main, [*base[:1], str(GRADING / "submissions" / "same"), "--rubric", str(RUBRIC),
                                   "--item", "nope"])
    assert unknown.exit_code == 2 and "window_cap" in unknown.output


def test_grade_cli_single_submission_for_gradescope(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["grade", "--rubric", str(RUBRIC), "--submission",
                                    str(GRADING / "submissions" / "reno"), "-o", str(tmp_path / "results"),
                                    "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "reno: 8/10" in res.output and "✗ tahoe_backoff: student 0.5" in res.output
    doc = json.loads((tmp_path / "results" / "results.json").read_text())
    validate_results(doc)
    assert doc["score"] == 8
    again = CliRunner().invoke(main, ["grade", "--rubric", str(RUBRIC), "--submission",
                                      str(GRADING / "submissions" / "reno"), "-o", str(tmp_path / "results")])
    assert again.exit_code == 1 and "--force" in again.output


def test_unreadable_submission_scores_zero_and_exit_4(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    shutil.copytree(GRADING / "submissions" / "same", subs / "good")
    (subs / "junk.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + b"\x00" * 7)  # a pcap header cut short
    (subs / "=HYPERLINK(1).pcap").write_bytes(b"not a trace at all\n")
    res = CliRunner().invoke(main, ["grade", "--rubric", str(RUBRIC), "--submissions", str(subs),
                                    "-o", str(tmp_path / "out"), "-j", "2", "-q"])
    assert res.exit_code == 4, res.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    by_id = {s["id"]: s for s in summary["submissions"]}
    assert by_id["good"]["score"] == 10
    assert set(by_id) == {"good", "junk", "HYPERLINK_1"}
    for sid in ("junk", "HYPERLINK_1"):
        assert by_id[sid]["status"] == "error" and by_id[sid]["score"] == 0
        res = json.loads((tmp_path / "out" / sid / "results.json").read_text())
        validate_results(res)
        # said once, for a student: the file they handed in, where, what; no command-line advice
        msg = by_id[sid]["error"]["student"]
        assert res["output"].count(msg) == 1 and "--" not in msg and msg.split(" Hint: ")[0].endswith(".")
    # the file is 11 bytes; a pcap file header is 24 (libpcap's pcap-savefile(5))
    assert by_id["junk"]["error"]["student"].startswith("junk.pcap byte 11: truncated file header: 11 of 24 bytes.")
    # the original name is kept for the instructor, neutralised for spreadsheets
    rows = {r["id"]: r for r in csv.DictReader((tmp_path / "out" / "grades.csv").open(encoding="utf-8"))}
    assert rows["HYPERLINK_1"]["original"] == "'=HYPERLINK(1).pcap"


# ---- submissions: ids, zips, paths ---------------------------------------------------------------------------


def test_ids_are_safe_and_unique() -> None:
    taken: set[str] = set()
    ids = [make_id(n, taken) for n in ("alice.pcap", "alice.pcapng", "../../etc/passwd", "..", "<script>.tr.gz",
                                       "Émile Zola.pcap", "x" * 300)]
    assert ids[0] == "alice" and ids[1] == "alice-2" and ids[2] == "passwd"
    assert all(0 < len(i) <= 64 and all(c.isalnum() or c in "._-" for c in i) for i in ids)
    assert len(set(ids)) == len(ids)
    with pytest.raises(Exception, match="unsafe output name"):
        output_path(Path("/tmp"), "..", "results.json")


def _symlink_member(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (0o120777 << 16)
    return info


def _lab_zip(path: Path, extra: bool = True) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in ("out.tr", "Window.tr", "WindowMon.tr"):
            zf.write(GRADING / "submissions" / "same" / f, f"same/{f}")
        if extra:
            zf.writestr("../escape.pcap", sample("linux", "bulk_lossy.pcap").read_bytes())
            zf.writestr("/abs/evil.pcap", sample("linux", "bulk_lossy.pcap").read_bytes())
            zf.writestr(_symlink_member("link.pcap", "/etc/passwd"), "/etc/passwd")
            zf.writestr(_symlink_member("same/Window2.tr", "../../x"), "../../x")


def test_zip_of_submissions_is_graded_without_escaping(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    z = work / "submissions.zip"
    _lab_zip(z)
    before = files_under(tmp_path)
    out = work / "out"
    res = CliRunner().invoke(main, ["grade", "--rubric", str(RUBRIC), "--submissions", str(z), "-o", str(out),
                                    "-j", "1", "-q"])
    assert res.exit_code == 0, res.output
    created = files_under(tmp_path) - before
    assert created and all(p.is_relative_to(out) for p in created), sorted(map(str, created))
    assert not (tmp_path / "escape.pcap").exists() and not Path("/abs/evil.pcap").exists()
    summary = json.loads((out / "summary.json").read_text())
    reasons = {r["member"]: r["reason"] for r in summary["rejected"]}
    assert reasons == {"../escape.pcap": "'..' in the path", "/abs/evil.pcap": "absolute path",
                       "link.pcap": "symbolic link", "same/Window2.tr": "symbolic link"}
    assert "ignored '../escape.pcap'" in res.output
    [sub] = summary["submissions"]
    assert sub["id"] == "same" and sub["score"] == 10


def test_student_zip_reports_its_refused_members(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    inner = tmp_path / "inner.zip"
    _lab_zip(inner)
    shutil.copy(inner, subs / "bob.zip")
    found = discover(subs)
    [sub] = found.submissions
    assert (sub.id, sub.kind) == ("bob", "zip")
    trace, notes = read_submission(sub)
    assert {n["reason"] for n in notes} == {"'..' in the path", "absolute path", "symbolic link"}
    assert trace.meta["format"] == "dir" and trace.packets.height > 10000


def test_archive_caps(tmp_path: Path) -> None:
    z = tmp_path / "many.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for i in range(20):
            zf.writestr(f"s{i}.tr", b"x")
    with pytest.raises(LimitError, match="20 members"):
        discover(z, Limits(max_archive_members=10))
    # uncompressed bytes are capped, in a student's zip and in a zip inside the submissions zip
    bomb = tmp_path / "subs" / "bomb.zip"
    bomb.parent.mkdir()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("out.tr", b"\n" * (4 << 20))
    [sub] = discover(bomb.parent).submissions
    with pytest.raises(LimitError, match="uncompressed bytes"):
        read_submission(sub, Limits(max_archive_bytes=1 << 20))
    outer = tmp_path / "all.zip"
    with zipfile.ZipFile(outer, "w") as zf:
        zf.write(bomb, "bob.zip")
    [sub] = discover(outer).submissions
    assert sub.nested and sub.id == "bob"
    with pytest.raises(LimitError, match="uncompressed bytes"):
        read_submission(sub, Limits(max_archive_bytes=1 << 20))


def test_member_problem_names() -> None:
    for name, why in (("a\x00b", "NUL"), ("C:/x.pcap", "drive"), ("a/../../b", "'..'"), ("\\\\srv\\x", "absolute")):
        info = zipfile.ZipInfo("x")
        info.filename = name  # ZipInfo() itself cuts a name at NUL
        assert why in (member_problem(info) or ""), name
    assert member_problem(zipfile.ZipInfo("ok/out.tr")) is None


def test_feedback_page_escapes_student_names(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    z = subs / "carol.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("</script><script>alert(1)</script>.tr", b"not a trace\n")
        for f in ("out.tr", "Window.tr"):
            zf.write(GRADING / "submissions" / "same" / f, f)
    out = tmp_path / "out"
    run_grade([], str(subs), load_rubric(RUBRIC), out, jobs=1)
    page = (out / "carol" / "feedback.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page
    res = json.loads((out / "carol" / "results.json").read_text())
    validate_results(res)
    assert res["output_format"] == "text"
    assert not any(p for p in files_under(tmp_path) if "alert" in p.name)
    assert set(os.listdir(out)) == {"carol", "grades.csv", "summary.json", "index.html"}
    notes = json.loads((out / "summary.json").read_text())["submissions"][0]["warnings"]
    assert any(w["code"] == "W-SKIPPED-FILE" for w in notes)  # the script-named member was skipped, and said so


def test_a_hanging_submission_is_killed_and_scored_zero(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    shutil.copytree(GRADING / "submissions" / "same", subs / "ok")
    (subs / "stuck.tr").write_text("TRACEKIT-HANG\n")  # tests/batch_fakes.py: a reader that never returns
    out = tmp_path / "out"
    doc = run_grade([], str(subs), load_rubric(RUBRIC), out, jobs=2, timeout=15, initializer="batch_fakes:install")
    by_id = {s["id"]: s for s in doc["submissions"]}
    assert by_id["ok"]["score"] == 10
    stuck = by_id["stuck"]
    assert stuck["status"] == "error" and stuck["error"]["kind"] == "timeout" and stuck["score"] == 0
    res = json.loads((out / "stuck" / "results.json").read_text())
    validate_results(res)
    assert "took longer than 15 s" in res["output"]
    assert all("could not be read" in t["output"] for t in res["tests"] if t["max_score"])
    assert (out / "stuck" / "feedback.html").is_file()
