"""Benchmark: ``tracekit analyze --json`` beside ``tcptrace -l -r`` and tshark, on a capture and on
one four times its size (the targets of the compiled core, issue 21).

Captures (git-ignored, made by ``bench/make_capture.sh``; see bench/README.md):

* ``bench/data/big.pcap``: >= 1M packets;
* ``bench/data/big4.pcap``: the same setup with four times the bytes (>= 4M packets).

For each capture, ``--pairs`` rounds run ``tracekit analyze --json`` and ``tcptrace -l -r`` (and,
unless ``--no-one-thread``, ``analyze --json`` on one thread) back to back, the order rotating
from round to round, so that a slow minute of the shared host falls on every side of a round.
Each command is a child process of a tiny wrapper that reports its wall time,
CPU time and peak RSS (``getrusage(RUSAGE_CHILDREN)``), so every number belongs to one command.
tshark (``-T fields -e tcp.analysis.bytes_in_flight``: its full TCP analysis) takes ~1 min a run on
the 1M capture, so it runs ``--tshark-runs`` times (default 1), on each capture. Then
``tracekit report`` on the 1M capture, ``--report-runs`` times.

    .venv/bin/python bench/bench_core.py                       # prints the markdown table
    .venv/bin/python bench/bench_core.py --pairs 5 --tshark-runs 1 --report-runs 3

Quote medians and ratios; the table states the host's load and the runs behind every median.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
TRACEKIT = [sys.executable, "-m", "tracekit"]

# Runs argv with stdout discarded, then prints the child's wall/CPU/peak RSS as JSON on stderr.
_WRAPPER = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    t = time.perf_counter()
    rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"rc": rc, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
                      "rss_mb": ru.ru_maxrss / 1024}), file=sys.stderr)
""")


def measure(argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall s, CPU s and peak RSS MiB of one run of ``argv`` (raises if it fails); ``env`` adds variables."""
    res = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})})
    out: dict[str, float] = json.loads(res.stderr.strip().splitlines()[-1])
    if out["rc"] != 0:
        raise SystemExit(f"failed ({out['rc']}): {' '.join(argv)}")
    return out


def packets(path: Path) -> int:
    """Packets in a capture, by ``capinfos -c -M`` (raw count)."""
    res = subprocess.run(["capinfos", "-c", "-M", "-T", str(path)], capture_output=True, text=True, check=True)
    return int(res.stdout.strip().splitlines()[-1].split("\t")[-1])


#: ``analyze --json`` on one thread: the batches of connections one at a time (the least memory).
ONE_THREAD = {"POLARS_MAX_THREADS": "1", "RAYON_NUM_THREADS": "1"}


def pairs(path: Path, n: int, one_thread: bool) -> dict[str, list[dict[str, float]]]:
    """``n`` rounds of analyze --json and tcptrace (and analyze on one thread) on ``path``, the order rotating."""
    analyze = [*TRACEKIT, "analyze", "--json", str(path)]
    cmds: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "analyze": (analyze, None), "tcptrace": (["tcptrace", "-l", "-r", str(path)], None)}
    if one_thread:
        cmds["analyze1"] = (analyze, ONE_THREAD)
    out: dict[str, list[dict[str, float]]] = {name: [] for name in cmds}
    measure(analyze)  # untimed: bytecode, page cache
    names = list(cmds)
    for i in range(n):
        for name in names[i % len(names):] + names[:i % len(names)]:
            out[name].append(measure(*cmds[name]))
    return out


def med(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def row(label: str, runs: list[dict[str, float]], size_mb: float) -> str:
    return (f"| {label} | {med(runs, 'wall'):.2f} | {min(r['wall'] for r in runs):.2f} | {len(runs)} | "
            f"{med(runs, 'cpu'):.2f} | {med(runs, 'rss_mb'):.0f} | {med(runs, 'rss_mb') / size_mb:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=Path, default=DATA / "big.pcap")
    ap.add_argument("--large", type=Path, default=DATA / "big4.pcap")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--tshark-runs", type=int, default=1)
    ap.add_argument("--report-runs", type=int, default=3)
    ap.add_argument("--tshark-large", action=argparse.BooleanOptionalAction, default=True,
                    help="run tshark on the 4x capture too (~5 min a run)")
    ap.add_argument("--one-thread", action=argparse.BooleanOptionalAction, default=True,
                    help="also time analyze --json with POLARS_MAX_THREADS=1 RAYON_NUM_THREADS=1")
    args = ap.parse_args()
    for tool in ("tcptrace", "tshark", "capinfos"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is missing (apt-get install tcptrace tshark)")
    lines = [f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC — CPython {platform.python_version()}, "
             f"{os.cpu_count()} CPUs (shared), load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", "",
             "| command | median wall s | best wall s | runs | median CPU s | peak RSS MiB | RSS / file |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    summary: dict[str, dict[str, float]] = {}
    for label, path in (("1x", args.small), ("4x", args.large)):
        size_mb = path.stat().st_size / 2**20
        n = packets(path)
        res = pairs(path, args.pairs, args.one_thread)
        runs = args.tshark_runs if label == "1x" or args.tshark_large else 0
        ts = [measure(["tshark", "-r", str(path), "-T", "fields", "-e", "tcp.analysis.bytes_in_flight"])
              for _ in range(runs)]
        lines.append(f"| **{label}: {path.name}, {n:,} packets, {size_mb:.0f} MiB** | | | | | | |")
        lines += [row("tracekit analyze --json", res["analyze"], size_mb),
                  *([row("tracekit analyze --json, one thread", res["analyze1"], size_mb)] if args.one_thread else []),
                  row("tcptrace -l -r", res["tcptrace"], size_mb),
                  *([row("tshark (bytes in flight)", ts, size_mb)] if ts else [])]
        ratios = [a["wall"] / t["wall"] for a, t in zip(res["analyze"], res["tcptrace"], strict=True)]
        summary[label] = {"analyze": med(res["analyze"], "wall"), "tcptrace": med(res["tcptrace"], "wall"),
                          "ratio": statistics.median(ratios), "rss": med(res["analyze"], "rss_mb"),
                          "size": size_mb, "packets": n}
    with tempfile.TemporaryDirectory() as tmp:
        rep = [measure([*TRACEKIT, "report", str(args.small), "-o", f"{tmp}/r.html", "--force"])
               for _ in range(args.report_runs)]
    s, b = summary["1x"], summary["4x"]
    lines += ["", f"* analyze / tcptrace, pair by pair (median): 1x {s['ratio']:.2f}, 4x {b['ratio']:.2f} "
              "(target <= 1 on both)",
              f"* scaling: {b['packets'] / s['packets']:.2f}x the packets cost {b['analyze'] / s['analyze']:.2f}x "
              "the time (target <= 4.4x)",
              f"* memory: peak RSS 4x / 1x = {b['rss'] / s['rss']:.2f} (target <= 1.2); "
              f"4x RSS / 1x file = {b['rss'] / s['size']:.2f} (target <= 0.5)"]
    if rep:
        lines.append(f"* tracekit report on the 1x capture: median {med(rep, 'wall'):.2f} s of {len(rep)} "
                     "(target < 2 s)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
