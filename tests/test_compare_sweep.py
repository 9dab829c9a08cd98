"""`tracekit compare` and `tracekit sweep`: the page tables carry the same numbers as `analyze --json`."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import sample

from tracekit import pipeline
from tracekit.cli.main import main
from tracekit.errors import UsageError
from tracekit.reports import compare as cmp
from tracekit.reports import sweep as sw

WINDOWS = [8, 16, 24, 32, 48, 64]


def _loaded(*paths: Path) -> list[tuple[str, Any]]:
    """(path, analysis) per run, as `tracekit compare` reads them."""
    return [(str(p), pipeline.load(p)) for p in paths]


def _sweep(paths: Sequence[Path] = (), *, manifest: Path | None = None, x: str | None = None) -> sw.SweepResult:
    """Runs and parameters read as `tracekit sweep` reads them, then swept."""
    got = pipeline.sweep_inputs(paths, manifest=manifest)
    return sw.sweep(got.runs, first=got.first, x=x)


class _Cells(HTMLParser):
    """Every <td> with data attributes: (table id, attrs)."""

    def __init__(self) -> None:
        super().__init__()
        self.table: str | None = None
        self.cells: list[tuple[str | None, dict[str, str | None]]] = []
        self.row_param: dict[str, Any] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.table = a.get("id")
        if tag == "td":
            self.cells.append((self.table, a))


def cells(page: str) -> list[tuple[str | None, dict[str, str | None]]]:
    p = _Cells()
    p.feed(page)
    return p.cells


def analyze_json(path: Path | str) -> dict[str, Any]:
    res = CliRunner().invoke(main, ["analyze", str(path), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)  # type: ignore[no-any-return]


def main_row(doc: dict[str, Any]) -> dict[str, Any]:
    """The direction with the most unique bytes (compare's and sweep's main connection)."""
    return sorted(doc["flows"], key=lambda f: (-(f.get("unique_bytes") or 0), f["flow"], f["dir"]))[0]


def close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)


# ---- compare --------------------------------------------------------------------------------------

RUNS = [("ns2", "lab_reno"), ("ns3", "dumbbell", "dumbbell-0-0.pcap"), ("linux", "bulk_lossy.pcap")]


def test_compare_three_formats_matches_analyze_json(tmp_path: Path) -> None:
    paths = [sample(*r) for r in RUNS]
    out = tmp_path / "compare.html"
    res = CliRunner().invoke(main, ["compare", *map(str, paths), "-o", str(out),
                                    "--label", f"ns-2={paths[0]}", "--json", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    docs = [analyze_json(p) for p in paths]
    assert {d["trace"]["format"] for d in docs} >= {"dir", "pcap"}
    found = 0
    for table, a in cells(page):
        if table != "metrics" or "data-v" not in a or a.get("data-delta"):
            continue
        i = int(a["data-run"] or 0)
        key = a["data-col"]
        assert key is not None
        want = len(docs[i]["flows"]) if key == "flows" else (
            None if key == "packets" else main_row(docs[i]).get(key))
        if key == "packets":
            continue
        assert close(float(a["data-v"] or "nan"), want), (RUNS[i], key, a["data-v"], want)
        found += 1
    assert found >= 3 * 8
    assert "ns-2" in page  # the --label
    summary = json.loads((tmp_path / "c.json").read_text())
    ref, other = summary["runs"][0]["metrics"]["goodput_bps"], summary["runs"][2]["metrics"]["goodput_bps"]
    assert close(summary["runs"][2]["delta"]["goodput_bps"]["abs"], other - ref)
    assert close(summary["runs"][2]["delta"]["goodput_bps"]["rel"], (other - ref) / ref)


def test_compare_units_are_common(tmp_path: Path) -> None:
    """ns-2 counts packets of 500 B; after the readers everything is bytes, seconds and bit/s."""
    result = cmp.compare(_loaded(sample("ns2", "lab_reno"), sample("linux", "bulk_lossy.pcap")))
    ns2, linux = (r.metrics for r in result.runs)
    assert ns2["delivered_bytes"] % 500 == 0 and ns2["goodput_bps"] > 1e5  # bytes and bit/s, not packets
    assert 0 < linux["goodput_bps"] < 1e9 and linux["transfer_s"] < 60


@pytest.mark.parametrize("bad", ["noequals", "=path", "name="])
def test_bad_label_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError):
        cmp.parse_labels([bad])


def test_compare_needs_two_runs() -> None:
    with pytest.raises(UsageError):
        cmp.compare(_loaded(sample("linux", "bulk_lossy.pcap")))


# ---- sweep ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep_dirs() -> list[Path]:
    dirs = [sample("ns2", "sweep", f"win{w}") for w in WINDOWS]
    return dirs


def test_sweep_over_ns2_windows_matches_analyze_json(tmp_path: Path, sweep_dirs: list[Path]) -> None:
    out, csv_out, json_out = tmp_path / "sweep.html", tmp_path / "s.csv", tmp_path / "s.json"
    res = CliRunner().invoke(main, ["sweep", *map(str, reversed(sweep_dirs)), "--param", "win{window_kb}",
                                    "-o", str(out), "--csv", str(csv_out), "--json", str(json_out)])
    assert res.exit_code == 0, res.output
    docs = {w: main_row(analyze_json(d)) for w, d in zip(WINDOWS, sweep_dirs, strict=True)}
    page = out.read_text(encoding="utf-8")
    rows: list[dict[str, Any]] = []
    for table, a in cells(page):
        if table != "sweep":
            continue
        if a.get("data-param") == "window_kb":
            rows.append({})
        if rows and "data-v" in a and a.get("data-col"):
            rows[-1][a["data-col"]] = float(a["data-v"] or "nan")
        if rows and a.get("data-param") == "window_kb":
            rows[-1]["window"] = float(a["data-v"] or "nan")
    assert [r["window"] for r in rows] == WINDOWS  # sorted by the parameter
    for r in rows:
        want = docs[int(r["window"])]
        for key in ("goodput_bps", "throughput_bps", "handshake_s", "delivered_bytes", "retrans_packets",
                    "transfer_s"):
            if key in want and want[key] is not None:
                assert close(r[key], want[key]), (r["window"], key)
    # the same numbers in CSV and JSON
    table = list(csv.DictReader(io.StringIO(csv_out.read_text())))
    assert [int(t["param.window_kb"]) for t in table] == WINDOWS
    assert all(close(float(t["goodput_bps"]), docs[w]["goodput_bps"]) for t, w in zip(table, WINDOWS, strict=True))
    doc = json.loads(json_out.read_text())
    assert doc["x"] == "window_kb" and len(doc["runs"]) == 6
    # goodput rises with the window while the window limits it (8 -> 24 KB), as the lab expects
    g = [docs[w]["goodput_bps"] for w in WINDOWS]
    assert g[0] < g[1] < g[2]


def test_sweep_reads_run_json(sweep_dirs: list[Path]) -> None:
    result = _sweep(sweep_dirs)
    assert result.x == "window_kb" and result.by == "variant"
    assert [r.params["window_kb"] for r in result.runs] == WINDOWS
    assert {r.params["variant"] for r in result.runs} == {"Tahoe"}


def test_sweep_manifest(tmp_path: Path, sweep_dirs: list[Path]) -> None:
    man = tmp_path / "runs.csv"
    lines = ["path,window,variant"] + [f"{d},{w * 1024},Tahoe" for w, d in zip(WINDOWS, sweep_dirs, strict=True)]
    man.write_text("\n".join(lines) + "\n")
    result = _sweep(manifest=man)
    assert result.x == "window" and [r.params["window"] for r in result.runs] == [w * 1024 for w in WINDOWS]


@pytest.mark.parametrize("pattern", ["win", "win{", "win{a}{a}", "win{1x}", "w}{x}"])
def test_bad_param_pattern(pattern: str) -> None:
    with pytest.raises(UsageError):
        pipeline.compile_pattern(pattern)


def test_param_pattern_matches_path_ends() -> None:
    rx, names = pipeline.compile_pattern("win{window}_d{delay}.tr")
    assert names == ["window", "delay"]
    assert pipeline.params_from_pattern("runs/win8_d100ms.tr", rx, "win{window}_d{delay}.tr") == {
        "window": 8, "delay": "100ms"}
    with pytest.raises(UsageError):
        pipeline.params_from_pattern("runs/other.tr", rx, "win{window}_d{delay}.tr")


@pytest.mark.parametrize("content,line", [("file\n", None), ("path,w\nx\n", 2), ("w,v\n1,2\n", 1),
                                          ("path,w\n,1\n", 2)])
def test_bad_manifest(tmp_path: Path, content: str, line: int | None) -> None:
    man = tmp_path / "m.csv"
    man.write_text(content)
    with pytest.raises(UsageError) as exc:
        pipeline.read_manifest(man)
    assert exc.value.path == str(man) and exc.value.line == line


def test_csv_cells_are_neutralised(tmp_path: Path, sweep_dirs: list[Path]) -> None:
    man = tmp_path / "runs.csv"
    man.write_text("path,=HYPERLINK(\"http://x\"),note\n" + "".join(
        f"{d},{w},=cmd|' /C calc'!A0\n" for w, d in zip(WINDOWS[:2], sweep_dirs[:2], strict=True)))
    result = _sweep(manifest=man, x='=HYPERLINK("http://x")')
    text = result.to_csv()
    assert "'=cmd" in text and "'=HYPERLINK" not in text.splitlines()[1]
    for row in csv.reader(io.StringIO(text)):
        assert all(not c.startswith(("=", "+", "@")) for c in row)


def test_sweep_page_escapes_manifest_headers(tmp_path: Path, sweep_dirs: list[Path]) -> None:
    evil = "</script><script>alert(1)</script>"
    man = tmp_path / "runs.csv"
    man.write_text(f'path,"{evil}"\n' + "".join(f"{d},{w}\n" for w, d in zip(WINDOWS, sweep_dirs, strict=True)))
    page = sw.render(_sweep(manifest=man))
    body = page.split('<script type="application/json"')[0]
    assert evil not in page and "&lt;/script&gt;" in body
