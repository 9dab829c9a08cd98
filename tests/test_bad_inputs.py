"""Every bad input of tests/badinputs.py gets its documented outcome, fast and within memory.

The cases come from ``tests/badinputs.py``. Each is read in a bounded worker
subprocess (``tests/fuzz_worker.py``): the outcome must be the documented one
(OK, a named warning, or a named error), within 5 s, under 500 MB peak RSS.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from badinputs import Case, cases
from robust import run_files

CASES = cases()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    d = tmp_path_factory.mktemp("bad")
    paths = []
    for c in CASES:
        p = d / f"{c.name}.bin"
        p.write_bytes(c.data)
        paths.append(p)
    return {Path(r["path"]).stem: r for r in run_files(paths, timeout_s=5.0)}


def test_there_are_at_least_50_cases() -> None:
    assert len(CASES) >= 50
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_documented_outcome(case: Case, outcomes: dict[str, dict]) -> None:
    r = outcomes[case.name]
    assert r["outcome"] in ("ok", "error"), f"{case.row}: {r['outcome']}: {r['detail'][-800:]}"
    assert r["seconds"] < 5.0
    assert r["peak_rss_mb"] < 500.0
    if case.expect == "ok":
        assert r["outcome"] == "ok", f"{case.row}: expected OK, got {r['detail']}"
    elif case.expect.startswith("W-"):
        assert r["outcome"] == "ok", f"{case.row}: expected {case.expect}, got {r['detail']}"
        assert case.expect in r["detail"].split(","), f"{case.row}: warnings were {r['detail']!r}"
    else:
        assert r["outcome"] == "error", f"{case.row}: expected {case.expect}, got OK ({r['detail']})"
        assert r["detail"].startswith(case.expect + ":"), f"{case.row}: {r['detail']}"
        # every refusal names the file
        assert f"{case.name}.bin" in r["detail"]


# ---- filesystem and environment --------------------------------------------------------------------

def test_odd_paths_work_on_the_command_line(tmp_path: Path) -> None:
    """Spaces, unicode and a leading dash in names: paths pass through untouched."""
    import shutil

    from click.testing import CliRunner
    from conftest import sample

    from tracekit.cli.main import main

    d = tmp_path / "dir with space ü"
    d.mkdir()
    p = d / "-odd näme.pcap"
    shutil.copy(sample("linux", "slow_reader.pcap"), p)
    r = CliRunner().invoke(main, ["analyze", "--json", "--", str(p)])
    assert r.exit_code == 0, r.output
    assert '"format": "pcap"' in r.output


def test_unwritable_output_is_one_clear_error(tmp_path: Path) -> None:
    """An export folder that cannot be created gives E-OUTPUT naming it, exit 1."""
    from click.testing import CliRunner
    from conftest import sample

    from tracekit.cli.main import main

    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    r = CliRunner().invoke(main, ["analyze", str(sample("linux", "slow_reader.pcap")), "--export",
                                  str(blocker / "sub")])
    assert r.exit_code == 1
    assert "cannot write" in r.output and "a_file" in r.output


def test_existing_output_needs_force(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from conftest import sample

    from tracekit.cli.main import main

    out = tmp_path / "r.html"
    out.write_text("keep me")
    src = str(sample("linux", "slow_reader.pcap"))
    r = CliRunner().invoke(main, ["report", src, "-o", str(out)])
    assert r.exit_code == 1 and "output exists" in r.output
    assert out.read_text() == "keep me"
    r = CliRunner().invoke(main, ["report", src, "-o", str(out), "--force"])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_run_directory_does_not_follow_links_out(tmp_path: Path) -> None:
    """A symlink in a run directory pointing outside it is skipped with a warning."""
    import shutil

    from conftest import sample

    import tracekit

    outside = tmp_path / "outside.pcap"
    shutil.copy(sample("linux", "slow_reader.pcap"), outside)
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(sample("linux", "any_sll.pcap"), run / "mine.pcap")
    (run / "escape.pcap").symlink_to(outside)
    tr = tracekit.read(run)
    assert tr.meta["paths"] == [str(run / "mine.pcap")]
    assert any("link out of the directory" in w["message"] for w in tr.warnings)
