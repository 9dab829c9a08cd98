"""``batch --scheduler``: the same tasks on a dask.distributed cluster give the same summary.json."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import sample

from tracekit.batch.traces import VOLATILE
from tracekit.cli.main import main

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


def _stable(doc: dict[str, Any]) -> dict[str, Any]:
    """The summary without its volatile parts (the run block, timings, cache flags)."""
    doc = dict(doc)
    doc.pop("run")
    doc["traces"] = [{k: v for k, v in e.items() if k not in VOLATILE} for e in doc["traces"]]
    return doc


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", processes=True,
                                  dashboard_address=None) as c:
        yield c


def test_scheduler_run_matches_local_run(tmp_path: Path, cluster: Any) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(sample("ns2", "sweep", "win8", "out.tr"), traces / "win8.tr")
    shutil.copytree(sample("ns2", "sweep", "win16"), traces / "win16")
    shutil.copy(sample("ns3", "dumbbell", "dumbbell-0-0.pcap"), traces / "ns3.pcap")
    shutil.copy(sample("ns3", "dumbbell", "dumbbell.cwnd"), traces / "dumbbell.cwnd")
    (traces / "broken.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + b"\x00" * 7)
    runner = CliRunner()
    local = runner.invoke(main, ["batch", os.fspath(traces), "-o", os.fspath(tmp_path / "local"), "-j", "2",
                                 "--no-progress"])
    assert local.exit_code == 4, local.output
    remote = runner.invoke(main, ["batch", os.fspath(traces), "-o", os.fspath(tmp_path / "dask"),
                                  "--scheduler", cluster.scheduler_address, "--no-progress"])
    assert remote.exit_code == 4, remote.output
    a = json.loads((tmp_path / "local" / "summary.json").read_text())
    b = json.loads((tmp_path / "dask" / "summary.json").read_text())
    assert b["run"]["executor"].startswith("dask scheduler tcp://127.0.0.1:")
    assert _stable(a) == _stable(b)
    assert b["counts"] == {"ok": 4, "failed": 1, "cached": 0, "not_run": 0}
    for e in b["traces"]:
        if e["status"] == "ok":
            assert (tmp_path / "dask" / e["report"]).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_unreachable_scheduler_is_a_usage_error(tmp_path: Path) -> None:
    traces = tmp_path / "t"
    traces.mkdir()
    shutil.copy(sample("ns2", "sweep", "win8", "out.tr"), traces / "a.tr")
    res = CliRunner().invoke(main, ["batch", os.fspath(traces), "-o", os.fspath(tmp_path / "o"),
                                    "--scheduler", "tcp://127.0.0.1:9", "--no-progress"])
    assert res.exit_code == 1 and "cannot reach the dask scheduler" in res.output


def test_grade_on_the_cluster_gives_the_same_grades(tmp_path: Path, cluster: Any) -> None:
    grading = sample("ns2", "grading")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("reno", "truncated"):
        shutil.copytree(grading / "submissions" / name, subs / name)
    args = ["grade", "--rubric", os.fspath(grading / "rubric.toml"), "--submissions", os.fspath(subs), "-q"]
    runner = CliRunner()
    local = runner.invoke(main, [*args, "-o", os.fspath(tmp_path / "local"), "-j", "1"])
    remote = runner.invoke(main, [*args, "-o", os.fspath(tmp_path / "dask"), "--scheduler", cluster.scheduler_address])
    assert local.exit_code == remote.exit_code == 0, remote.output
    a = (tmp_path / "local" / "grades.csv").read_text()
    assert a == (tmp_path / "dask" / "grades.csv").read_text()
    assert "reno,reno,graded,8.0" in a and "truncated,truncated,graded,6.0" in a
