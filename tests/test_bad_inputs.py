"""Every row of RELIABILITY.md §7.1–7.4 gets its documented outcome, fast and within memory.

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
