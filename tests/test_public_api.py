"""The public surface is a tested contract (as httpx's test_exported_members)."""

from __future__ import annotations

import subprocess
import sys

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
        "import sys; import tracekit.cli as c\n"
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
