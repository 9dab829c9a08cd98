"""The public surface is a tested contract (as httpx's test_exported_members)."""

from __future__ import annotations

import os
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


def test_command_tunes_its_own_process_only() -> None:
    """The `tracekit` command sets polars' allocator and the GC threshold before polars loads;
    importing the library (tracekit.cli included) changes neither; a user's allocator setting wins."""
    code = (
        "import gc, os, sys\n"
        "before = gc.get_threshold(), os.environ.get('_RJEM_MALLOC_CONF')\n"
        "import tracekit, tracekit.cli as c\n"
        "assert (gc.get_threshold(), os.environ.get('_RJEM_MALLOC_CONF')) == before\n"
        "sys.argv = ['tracekit', 'formats']\n"
        "try:\n"
        "    c.run()\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(os.environ['_RJEM_MALLOC_CONF'], gc.get_threshold()[0], file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    # (polars puts its own decay settings first and appends what it finds: the last one wins)
    conf, threshold = out.stderr.split()[-2:]
    assert conf.split(",")[-1] == "narenas:1" and threshold == "100000"
    env["_RJEM_MALLOC_CONF"] = "narenas:2"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stderr.split()[-2].split(",")[-1] == "narenas:2"
