"""Batch analysis: many traces of mixed formats, broken and hanging ones, caching, Ctrl-C, outputs."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, sample

from tracekit._files import content_hash, csv_text, neutralise
from tracekit.batch.executors import LocalExecutor, Task
from tracekit.batch.traces import report_name, run_batch
from tracekit.cli.main import main

#: Small real samples of different formats (file or run directory) the batch must analyse.
GOOD = [
    ("ns2", sample("ns2", "sweep", "win8", "out.tr")),
    ("dir", sample("ns2", "sweep", "win16")),
    ("pcap", sample("ns3", "dumbbell", "dumbbell-0-0.pcap")),
    ("ns2-monitor", sample("ns2", "dumbbell", "cwnd.tr")),
    ("ns3-series", sample("ns3", "dumbbell", "dumbbell.cwnd")),
    ("flowmon", sample("ns3", "dumbbell", "flowmon.xml")),
    ("opnet", sample("opnet", "tcp_reno_tab.txt")),
    ("netsim", sample("netsim", "Application_Metrics_v14.csv")),
]
INIT = "batch_fakes:install"


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy(src, dst)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """40 traces: 37 good ones of 8 formats, 2 corrupt, 1 that hangs its reader; batch run once."""
    root = tmp_path_factory.mktemp("mixed")
    traces = root / "traces"
    traces.mkdir()
    expected: dict[str, str] = {}
    for i in range(37):
        fmt, src = GOOD[i % len(GOOD)]
        dst = traces / f"t{i:02d}-{src.name}"
        _copy(src, dst)
        expected[os.fspath(dst)] = fmt
    (traces / "cut.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + b"\x00" * 7)  # pcap header cut short
    (traces / "=cmd.tr").write_bytes(b"\x00\x01 garbage that no reader knows\n" * 10)
    pidfile = root / "hang.pid"
    (traces / "stuck.tr").write_text(f"TRACEKIT-HANG {pidfile}\n")
    out = root / "out"
    result = run_batch([traces], out, jobs=2, timeout=20, initializer=INIT)
    assert result.exit_code == 4
    return traces, out, expected


def test_mixed_batch_37_reports_3_failures(mixed: tuple[Path, Path, dict[str, str]]) -> None:
    traces, out, expected = mixed
    doc = json.loads((out / "summary.json").read_text())
    entries = {e["path"]: e for e in doc["traces"]}
    assert len(entries) == 40 and doc["counts"]["ok"] == 37 and doc["counts"]["failed"] == 3
    for path, fmt in expected.items():
        e = entries[path]
        assert e["status"] == "ok", e
        assert e["format"] == fmt
        assert (out / e["report"]).is_file()
    assert len(list((out / "reports").glob("*.html"))) == 37
    failed = {Path(p).name: e["error"] for p, e in entries.items() if e["status"] == "failed"}
    assert set(failed) == {"cut.pcap", "=cmd.tr", "stuck.tr"}
    assert failed["cut.pcap"]["code"] in ("E-CORRUPT", "E-FORMAT") and "cut.pcap" in failed["cut.pcap"]["message"]
    assert failed["=cmd.tr"]["code"] == "E-FORMAT"
    assert failed["stuck.tr"]["kind"] == "timeout" and "20 s" in failed["stuck.tr"]["message"]


def test_hung_worker_was_killed(mixed: tuple[Path, Path, dict[str, str]]) -> None:
    traces, _, _ = mixed
    pid = int((traces.parent / "hang.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_index_and_csv(mixed: tuple[Path, Path, dict[str, str]]) -> None:
    _, out, _ = mixed
    index = (out / "index.html").read_text(encoding="utf-8")
    assert index.count('data-status="ok"') == 37 and index.count('data-status="failed"') == 3
    assert index.count('<a href="reports/') == 37
    rows = list(csv.DictReader((out / "summary.csv").open(encoding="utf-8")))
    assert len(rows) == 40
    cmd = next(r for r in rows if r["path"].endswith("=cmd.tr"))
    assert cmd["status"] == "failed" and cmd["error"]
    assert neutralise("=1+1") == "'=1+1" and neutralise("-2") == "'-2" and neutralise("\tx") == "'\tx"
    assert csv_text([{"a": "@SUM(A1)"}], ["a"]).splitlines()[1] == "'@SUM(A1)"


def test_rerun_skips_unchanged_traces(mixed: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    traces, _, _ = mixed
    small = tmp_path / "small"
    small.mkdir()
    for name in ("t00-out.tr", "t03-cwnd.tr", "t04-dumbbell.cwnd"):
        shutil.copy(traces / name, small / name)
    out = tmp_path / "out"
    first = run_batch([small], out, jobs=1)
    assert [e["cached"] for e in first.entries] == [False] * 3
    again = run_batch([small], out, jobs=1)
    assert [e["cached"] for e in again.entries] == [True] * 3
    with open(small / "t03-cwnd.tr", "a") as fh:
        fh.write("9.90000  0  0  6  0  cwnd_ 2.000 \n")
    changed = {Path(e["path"]).name: e["cached"] for e in run_batch([small], out, jobs=1).entries}
    assert changed == {"t00-out.tr": True, "t03-cwnd.tr": False, "t04-dumbbell.cwnd": True}
    forced = run_batch([small], out, jobs=1, force=True)
    assert not any(e["cached"] for e in forced.entries)


def test_memory_cap_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    (d / "hog.tr").write_text("TRACEKIT-HOG\n")
    shutil.copy(sample("ns2", "sweep", "win8", "out.tr"), d / "ok.tr")
    res = run_batch([d], tmp_path / "out", jobs=1, timeout=120, max_memory=int(2.5 * (1 << 30)), initializer=INIT)
    by = {Path(e["path"]).name: e for e in res.entries}
    assert by["ok.tr"]["status"] == "ok"
    assert by["hog.tr"]["status"] == "failed"
    assert "memory" in json.dumps(by["hog.tr"]["error"]).lower()


def test_executor_reports_crashes_and_keeps_going() -> None:
    got = {}
    ex = LocalExecutor(1, timeout=60)
    ex.run([Task("a", "os:_exit", (3,)), Task("b", "math:sqrt", (16.0,)), Task("c", "math:sqrt", ("x",))],
           lambda o: got.__setitem__(o.key, o))
    assert got["a"].error["kind"] == "crash" and "status 3" in got["a"].error["message"]
    assert got["b"].ok and got["b"].value == 4.0
    assert got["c"].error["kind"] == "exception" and "TypeError" in got["c"].error["message"]


def test_ctrl_c_writes_what_finished_and_exits_130(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    for i in range(40):
        shutil.copy(sample("ns2", "sweep", "win8", "out.tr"), d / f"r{i:02d}.tr")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.fspath(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tracekit", "batch", os.fspath(d), "-o", os.fspath(out),
                             "-j", "1", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        for _ in range(1200):  # wait (up to ~2 min) until at least one report is written
            if (out / "reports").is_dir() and any((out / "reports").glob("*.html")):
                break
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    doc = json.loads((out / "summary.json").read_text())
    assert doc["interrupted"] is True
    assert 1 <= doc["counts"]["ok"] < 40 and doc["counts"]["not_run"] == 40 - doc["counts"]["ok"]
    assert all(e["status"] == "ok" for e in doc["traces"])
    assert b"interrupted" in err


def test_cli_batch_exit_codes(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(sample("ns2", "sweep", "win8", "out.tr"), d / "a.tr")
    ok = CliRunner().invoke(main, ["batch", os.fspath(d), "-o", os.fspath(tmp_path / "o1"), "-j", "1",
                                   "--no-progress"])
    assert ok.exit_code == 0, ok.output
    (d / "b.pcap").write_bytes(b"\xd4\xc3\xb2\xa1")
    bad = CliRunner().invoke(main, ["batch", os.fspath(d), "-o", os.fspath(tmp_path / "o2"), "-j", "1",
                                    "--no-progress", "--max-memory", "3G"])
    assert bad.exit_code == 4
    assert "1 analysed" in bad.output and "failed" in bad.output and "b.pcap" in bad.output
    usage = CliRunner().invoke(main, ["batch", os.fspath(d), "-o", os.fspath(tmp_path / "o3"),
                                      "--max-memory", "lots"])
    assert usage.exit_code == 2


def test_names_and_hashes(tmp_path: Path) -> None:
    assert report_name(Path("../../x/<evil> name.pcap")).startswith("evil_name.pcap-")
    assert report_name(Path("a/x.pcap")) != report_name(Path("b/x.pcap"))
    d = tmp_path / "run"
    d.mkdir()
    (d / "out.tr").write_text("x")
    h1 = content_hash(d)
    (d / "Window.tr").write_text("y")
    assert content_hash(d) != h1


def test_a_worker_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    from tracekit.errors import TracekitError

    with pytest.raises(TracekitError, match="could not start"):
        LocalExecutor(1, initializer="batch_fakes:no_such_function").run([Task("a", "math:sqrt", (4.0,))],
                                                                           lambda o: None)
