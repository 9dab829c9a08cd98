"""Benchmark: tracekit's ns-2 reader on a 1,000,000-line trace beside a plain Python line loop.

The trace is built from a real ns-2 run (``samples/ns2/dumbbell/out.tr.gz``: 4 TCP flows, 3 hops,
Reno/NewReno/Sack1/Tahoe, drops) by repeating it with shifted times, packet uids and agent ports,
so each copy is 4 new connections later in time (the file is monotonic, like a long real run).
It is written once to ``bench/data/`` (git-ignored) and reused.

Both parsers run in the same process on the same bytes-on-disk; each is timed best-of-N
(``time.perf_counter``), after one untimed warm-up of tracekit (imports, polars thread pool).

    python bench/bench_ns2.py            # prints the table and appends it to bench/README.md
    python bench/bench_ns2.py --no-append --repeat 5
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "samples" / "ns2" / "dumbbell" / "out.tr.gz"
DATA = ROOT / "bench" / "data" / "ns2_1M.tr"
README = ROOT / "bench" / "README.md"
TARGET_LINES = 1_000_000
SECTION = "## ns-2 parsing"


def make_trace(path: Path = DATA, lines: int = TARGET_LINES) -> Path:
    """Write the benchmark trace (skipped when it already has the right number of lines)."""
    if path.exists() and path.stat().st_size > 0:
        with open(path, "rb") as fh:
            if sum(1 for _ in fh) == lines:
                return path
    src = gzip.decompress(SOURCE.read_bytes()).decode().splitlines()
    rows = [ln.split(" ") for ln in src]
    span = max(float(r[1]) for r in rows)
    uid_step = max(int(r[11]) for r in rows) + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    out: list[str] = []
    k = 0
    while len(out) < lines:
        for r in rows:
            if len(out) == lines:
                break
            f = list(r)
            f[1] = f"{float(r[1]) + k * span:.15g}"
            # a new agent port per copy: every copy is four new connections
            f[8] = f"{r[8].rsplit('.', 1)[0]}.{k}"
            f[9] = f"{r[9].rsplit('.', 1)[0]}.{k}"
            f[11] = str(int(r[11]) + k * uid_step)
            out.append(" ".join(f))
        k += 1
    path.write_text("\n".join(out) + "\n")
    return path


def baseline(path: Path) -> int:
    """The plain Python parser a student would write: split each line, convert the numbers."""
    ev, t, frm, to, ptype, size, flags, fid, src, dst, seq, uid = ([] for _ in range(12))
    with open(path, "rb") as fh:
        for line in fh:
            f = line.split()
            if len(f) < 12:
                continue
            ev.append(f[0])
            t.append(float(f[1]))
            frm.append(int(f[2]))
            to.append(int(f[3]))
            ptype.append(f[4])
            size.append(int(f[5]))
            flags.append(f[6])
            fid.append(int(f[7]))
            src.append(f[8])
            dst.append(f[9])
            seq.append(int(f[10]))
            uid.append(int(f[11]))
    return len(t)


def run_tracekit(path: Path) -> int:
    """``tracekit.read`` (sniffing, parsing, flows, TCP numbers, schema check); returns the rows."""
    import tracekit

    return int(tracekit.read(path).packets.height)


def timed(fn: Callable[[Path], int], path: Path, repeat: int) -> tuple[list[float], list[float], int]:
    """Run ``fn(path)`` ``repeat`` times: (wall seconds, CPU seconds of all threads, rows)."""
    wall, cpu, n = [], [], 0
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        n = fn(path)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu, n


def main(argv: list[str] | None = None) -> int:
    """Build the trace if needed, time both parsers, print (and append) the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per parser (best is reported)")
    ap.add_argument("--no-append", action="store_true", help="do not append the results to bench/README.md")
    ap.add_argument("--only-tracekit", action="store_true", help=argparse.SUPPRESS)  # child run, prints JSON
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    path = make_trace()
    if args.only_tracekit:
        run_tracekit(path)
        wall, cpu, n = timed(run_tracekit, path, args.repeat)
        print(json.dumps({"wall": wall, "cpu": cpu, "rows": n}))
        return 0
    mb = path.stat().st_size / 1e6
    run_tracekit(path)  # warm-up: imports and polars' thread pool
    tk, tk_cpu, n_tk = timed(run_tracekit, path, args.repeat)
    py, py_cpu, n_py = timed(baseline, path, args.repeat)
    # the same with polars on one thread (a separate process: the pool size is fixed at import)
    child = subprocess.run([sys.executable, __file__, "--only-tracekit", "--repeat", str(args.repeat)],
                           capture_output=True, text=True, check=True, env={**os.environ, "POLARS_MAX_THREADS": "1"})
    one = json.loads(child.stdout.strip().splitlines()[-1])
    import polars as pl

    rows = [
        ("tracekit.read (polars CSV + expressions)", min(tk), statistics.median(tk), min(tk_cpu), n_tk),
        ("tracekit.read, polars on 1 thread", min(one["wall"]), statistics.median(one["wall"]), min(one["cpu"]),
         one["rows"]),
        ("plain Python loop (split + int/float)", min(py), statistics.median(py), min(py_cpu), n_py),
    ]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    env = (
        f"{date.today()} · {platform.python_implementation()} {platform.python_version()} · polars {pl.__version__}"
        f" · {os.cpu_count()} CPUs shared with other jobs (1-min load average {load:.1f} at the end)"
        f" · {platform.machine()}"
    )
    table = [
        f"`{path.relative_to(ROOT)}`: {n_py:,} lines, {mb:.1f} MB; {args.repeat} runs each — {env}",
        "",
        "| parser | best wall s | median wall s | CPU s (all threads) | lines/s (best) | rows |",
        "|---|---|---|---|---|---|",
    ]
    for label, best, med, cpu, n in rows:
        table.append(f"| {label} | {best:.3f} | {med:.3f} | {cpu:.3f} | {n_py / best:,.0f} | {n:,} |")
    table.append(
        f"| ratio (loop / tracekit) | {min(py) / min(tk):.1f}x | {statistics.median(py) / statistics.median(tk):.1f}x"
        f" | {min(py_cpu) / min(tk_cpu):.1f}x | | |"
    )
    text = "\n".join(table)
    print(text)
    print(f"target < 1 s for tracekit: {'met' if min(tk) < 1.0 else 'NOT met'}")
    if not args.no_append:
        _append(text)
    return 0


def _append(table: str) -> None:
    """Append this run under the "ns-2 parsing" section (created at the end of the file if missing)."""
    old = README.read_text() if README.exists() else "# Benchmarks\n"
    intro = (
        f"\n{SECTION}\n\n"
        "`python bench/bench_ns2.py` builds a 1,000,000-line ns-2 normal trace from the real dumbbell run "
        "(`samples/ns2/dumbbell/out.tr.gz`, repeated with shifted times, uids and agent ports; written to "
        "`bench/data/`, git-ignored) and times `tracekit.read` on it beside a plain Python line loop "
        "(`line.split()` + `int`/`float` per field, into lists) in the same process. tracekit's number "
        "includes everything `read` does: flows, TCP byte numbers, warnings and the schema check. "
        "Target: under 1 s. A second row runs tracekit with polars on one thread (`POLARS_MAX_THREADS=1`, "
        "in a child process). The machine is shared, so wall times vary with the load; the CPU column "
        "(process time of all threads) is the steadier measure of work. Each run appends its table here.\n"
    )
    if SECTION not in old:
        old = old.rstrip("\n") + "\n" + intro
    # insert at the end of this section, before whatever section another bench appended after it
    start = old.index(SECTION)
    nxt = old.find("\n## ", start + len(SECTION))
    end = len(old) if nxt < 0 else nxt + 1
    README.write_text(old[:end].rstrip("\n") + "\n\n" + table + "\n" + ("\n" + old[end:] if nxt >= 0 else ""))


if __name__ == "__main__":
    raise SystemExit(main())
