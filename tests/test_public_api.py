"""The public surface is a tested contract (as httpx's test_exported_members)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
from conftest import sample

import tracekit


def test_all_is_sorted_and_exported() -> None:
    """`__all__` is sorted and every name in it resolves."""
    assert tracekit.__all__ == sorted(tracekit.__all__)
    for name in tracekit.__all__:
        assert getattr(tracekit, name) is not None, name


def test_public_names_match_all() -> None:
    """Nothing public is exported without being listed (modules and typing aside)."""
    public = {n for n in dir(tracekit) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(tracekit, n)).__name__ == "module"}
    assert public - modules - {"annotations", "TYPE_CHECKING", "Any"} <= set(tracekit.__all__)


def test_import_and_help_do_not_load_polars() -> None:
    """`import tracekit` and `tracekit --help` stay light: no polars, numpy or altair."""
    code = (
        "import sys; import tracekit.cli.main as c\n"
        "from click.testing import CliRunner\n"
        "r = CliRunner().invoke(c.main, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = [m for m in ('polars', 'numpy', 'altair', 'dpkt') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"heavy modules imported by --help: {out.stdout}"


def test_python_dash_m() -> None:
    """`python -m tracekit --help` works."""
    out = subprocess.run([sys.executable, "-m", "tracekit", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "analyze" in out.stdout


def test_command_exits_with_everything_written(tmp_path: Path) -> None:
    """`run()` ends with its output flushed, files closed and atexit functions run; exit codes
    are the ones click and sys.exit give."""
    out = tmp_path / "out"
    marker = tmp_path / "atexit"
    code = (
        "import atexit, pathlib, sys\n"
        f"atexit.register(pathlib.Path({os.fspath(marker)!r}).write_text, 'ran')\n"
        "from tracekit.cli.main import run\n"
        "sys.argv = ['tracekit'] + sys.argv[1:]\n"
        "run()\n"
        "print('not reached')\n"
    )
    cap = sample("linux", "slow_reader.pcap")
    ok = subprocess.run([sys.executable, "-c", code, "analyze", "--json", "--export", os.fspath(out), os.fspath(cap)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)  # the whole document arrived (a lost buffer would cut it short)
    assert doc["flows"] and "not reached" not in ok.stdout
    assert marker.read_text() == "ran"
    assert pl.read_parquet(out / "flows.parquet").height == len(doc["flows"])
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture at all")
    marker.unlink()
    err = subprocess.run([sys.executable, "-c", code, "analyze", os.fspath(bad)], capture_output=True, text=True)
    assert err.returncode == 1 and "bad.pcap" in err.stderr and marker.read_text() == "ran"
    usage = subprocess.run([sys.executable, "-c", code, "analyze", "--no-such-option"], capture_output=True, text=True)
    assert usage.returncode == 2 and "no-such-option" in usage.stderr
