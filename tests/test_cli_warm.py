"""`tracekit.cli.warm`: the chart library imported on a thread while a report's captures are read.

Two importing threads can deadlock only when each holds a module the other wants, so what the
thread imports must share no module with what reading and analysing a capture import lazily.
Both sets are measured here, each in a fresh interpreter, on a real capture.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracekit.cli.main import main
from tracekit.cli.warm import CHARTS, warm

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "linux" / "bulk_lossy.pcap"


def _new_modules(code: str) -> set[str]:
    """The modules that ``code`` imports in a fresh interpreter after ``tracekit.pipeline``."""
    prog = (
        "import json, sys\nimport tracekit.pipeline\nbefore = set(sys.modules)\n"
        f"{code}\nprint(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, check=True, timeout=300)
    return set(json.loads(out.stdout))


def test_warmed_imports_share_no_module_with_reading_and_analysing() -> None:
    charts = _new_modules("\n".join(f"import {m}" for m in CHARTS))
    reading = _new_modules(f"tracekit.pipeline.load({str(SAMPLE)!r})")
    assert "altair" in charts and reading, (charts, reading)
    assert not charts & reading, sorted(charts & reading)
    tops = {m.split(".")[0] for m in charts}
    assert not tops & {"tracekit", "polars", "numpy"}, sorted(tops)


def test_warm_imports_and_leaves_a_failure_to_the_command() -> None:
    sys.modules.pop("tabnanny", None)  # a standard module nothing here imports
    t = warm(("tracekit_no_such_module", "tabnanny"))  # the first fails: swallowed, the next still runs
    t.join(timeout=60)
    assert not t.is_alive()
    assert "tabnanny" in sys.modules and "tracekit_no_such_module" not in sys.modules


@pytest.mark.parametrize("command", [["report", "-o"], ["analyze", "--report"]])
def test_report_with_the_warm_thread_writes_the_same_page(tmp_path: Path, command: list[str]) -> None:
    """The commands (warmed) and the library call (not) write the same page."""
    from tracekit import pipeline
    from tracekit.reports.html import write_report

    cli_out, lib_out = tmp_path / "cli.html", tmp_path / "lib.html"
    r = CliRunner().invoke(main, [command[0], str(SAMPLE), command[1], str(cli_out)])
    assert r.exit_code == 0, r.output
    an = pipeline.load(str(SAMPLE))
    write_report([an], lib_out, link_rates=[pipeline.link_rate(an)])
    assert cli_out.read_bytes() == lib_out.read_bytes()
