"""Batch scaling: 200 small traces with ``--jobs 2`` against the sum of single-trace times ÷ 2.

Usage: ``python bench/bench_batch.py [--n 200] [--jobs 2]``

1. copies ``--n`` small real samples (8 formats, cycled) into ``bench/data/batch/traces`` (git-ignored);
2. times each trace alone, in this process, after a warm-up: read + analyse + render the report
   (``tracekit.batch.traces.process_trace``, what a worker does per trace) — the "single-trace times";
3. times ``run_batch(..., jobs=N)`` into a fresh folder: worker start-up, hashing, pipes and the
   parent's writes included;
4. prints both, the target ``1.3 × sum ÷ jobs`` and a markdown row for ``bench/README.md``.

The machine is shared, so wall times move with its load; CPU seconds are printed beside them.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.fspath(ROOT))

SAMPLES = [
    "samples/ns2/sweep/win8/out.tr",
    "samples/ns2/sweep/win16",
    "samples/ns3/dumbbell/dumbbell-0-0.pcap",
    "samples/ns2/dumbbell/cwnd.tr",
    "samples/ns3/dumbbell/dumbbell.cwnd",
    "samples/ns3/dumbbell/flowmon.xml",
    "samples/opnet/tcp_reno_tab.txt",
    "samples/netsim/Application_Metrics_v14.csv",
]


def cpu() -> float:
    """CPU seconds of this process and its finished children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()

    from tracekit.batch.traces import process_trace, run_batch

    data = ROOT / "bench" / "data" / "batch"
    traces = data / "traces"
    shutil.rmtree(data, ignore_errors=True)
    traces.mkdir(parents=True)
    paths = []
    for i in range(args.n):
        src = ROOT / SAMPLES[i % len(SAMPLES)]
        dst = traces / f"t{i:03d}-{src.name}"
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy(src, dst)
        paths.append(dst)

    process_trace(os.fspath(paths[0]))  # warm-up: imports, the Vega bundle cache
    load0 = os.getloadavg()[0]
    single = []
    c0 = cpu()
    for p in paths:
        t0 = time.perf_counter()
        process_trace(os.fspath(p))
        single.append(time.perf_counter() - t0)
    single_cpu = cpu() - c0
    total = sum(single)

    load1 = os.getloadavg()[0]
    c0 = cpu()
    t0 = time.perf_counter()
    res = run_batch([traces], data / "out", jobs=args.jobs)
    wall = time.perf_counter() - t0
    batch_cpu = cpu() - c0
    ok = sum(e["status"] == "ok" for e in res.entries)
    target = 1.3 * total / args.jobs
    ratio = wall / (total / args.jobs)
    load2 = os.getloadavg()[0]
    print(f"{args.n} traces ({ok} ok), {len(SAMPLES)} formats; cores: {os.cpu_count()}; "
          f"1-min load average {load0:.1f} / {load1:.1f} / {load2:.1f} (start / between / end)")
    print(f"single-trace times: sum {total:.1f} s (median {sorted(single)[len(single) // 2] * 1000:.0f} ms, "
          f"CPU {single_cpu:.1f} s)")
    print(f"batch --jobs {args.jobs}: {wall:.1f} s wall (CPU incl. workers {batch_cpu:.1f} s); "
          f"ideal sum/{args.jobs} = {total / args.jobs:.1f} s; ratio {ratio:.2f} (target ≤ 1.30): "
          f"{'PASS' if wall <= target else 'FAIL'}")
    print("markdown row:")
    verdict = "pass" if wall <= target else "FAIL"
    print(f"| {time.strftime('%Y-%m-%d')} | {args.n} | {args.jobs} | {total:.1f} | {wall:.1f} | {ratio:.2f} | "
          f"{verdict} | {load0:.1f} / {load1:.1f} / {load2:.1f} | Python {platform.python_version()}, "
          f"{os.cpu_count()} cores (shared) |")


if __name__ == "__main__":
    main()
