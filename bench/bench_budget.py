"""Where ``tracekit analyze --json``'s CPU goes, by thread, beside tcptrace's (issue 21's time target).

The streamed summary (``src/stream/``) reads a capture twice. Each of its threads is named for
its job, so its CPU time can be told apart while it runs:

* ``tk-read-1``: pass 1's reader (file reads, the container walk, decoding);
* ``tk-read-2``: pass 2's reader (the same, and the connection numbering of every packet);
* ``tk-pass2-K``: pass 2's shards (every TCP packet through its connection's state: sequence,
  RTT, retransmissions, SACK scoreboard, bytes in flight, stalls, flow statistics, the cwnd
  estimate);
* the main thread: Python (start-up, imports, the JSON document), pass 1's numbering and scouts,
  and handing pass 2's batches to the shards.

A sampler reads every thread's CPU time (``/proc/PID/task/TID/schedstat``, nanoseconds) every
millisecond while the command runs, and keeps each thread's last reading (a thread's final
millisecond can be missed). The main thread's Python share is measured apart, as the main
thread's CPU on a small capture (``--small``, default the bundled ``bulk_lossy.pcap``: start-up,
imports and a document cost the same on any capture), and taken off the main thread's time to
give pass 1's share. tcptrace ``-l -r``'s CPU (one thread) is measured in the same rounds, the
order flipping every round. Medians of ``--runs`` rounds.

    .venv/bin/python bench/bench_budget.py                 # bench/data/big.pcap, 5 rounds
    .venv/bin/python bench/bench_budget.py CAPTURE --runs 7

Linux only (``/proc``); prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACEKIT = [sys.executable, "-m", "tracekit", "analyze", "--json"]
SMALL = ROOT / "samples" / "linux" / "bulk_lossy.pcap"

#: Thread name prefix -> the row it adds to (the main thread is the process's own name).
ROLES = {"tk-read-1": "pass 1 reader", "tk-read-2": "pass 2 reader", "tk-pass2-": "pass 2 shards"}


def _threads(pid: int) -> dict[int, tuple[str, int]]:
    """Each live thread of ``pid``: its name and CPU ns so far (threads that end meanwhile are skipped)."""
    out: dict[int, tuple[str, int]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out[int(tid)] = (name, ns)
    return out


def run_sampled(argv: list[str]) -> tuple[float, dict[str, float]]:
    """Wall s of ``argv`` and CPU s by role (``main``, :data:`ROLES`' rows, ``other`` threads)."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last: dict[int, tuple[str, int]] = {}
    while child.poll() is None:
        last.update(_threads(child.pid))
        time.sleep(0.001)
    wall = time.perf_counter() - t0
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({child.returncode})")
    by: dict[str, float] = defaultdict(float)
    for tid, (name, ns) in last.items():
        role = "main" if tid == child.pid else next(
            (r for p, r in ROLES.items() if name.startswith(p)), "other threads")
        by[role] += ns / 1e9
    return wall, by


def cpu_of(argv: list[str]) -> float:
    """CPU s (user + system) of one run of ``argv`` (a child process)."""
    before = os.times()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> int:
    """Measure and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", nargs="?", type=Path, default=ROOT / "bench" / "data" / "big.pcap")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--small", type=Path, default=SMALL)
    args = ap.parse_args()
    if not args.capture.exists():
        print(f"{args.capture} is missing: run bench/make_capture.sh (as root) first", file=sys.stderr)
        return 2
    if not Path("/proc/self/schedstat").exists():
        print("needs Linux's /proc/PID/task/TID/schedstat", file=sys.stderr)
        return 2
    tcptrace = shutil.which("tcptrace")
    big: list[dict[str, float]] = []
    small, peer, walls = [], [], []
    for i in range(args.runs):
        steps = ["tk", "peer"] if i % 2 == 0 else ["peer", "tk"]
        for step in steps:
            if step == "tk":
                wall, by = run_sampled([*TRACEKIT, str(args.capture)])
                walls.append(wall)
                big.append(by)
                small.append(run_sampled([*TRACEKIT, str(args.small)])[1]["main"])
            elif tcptrace:
                peer.append(cpu_of([tcptrace, "-l", "-r", str(args.capture)]))
    print(table(args, big, statistics.median(small), peer, walls))
    return 0


def table(args: argparse.Namespace, big: list[dict[str, float]], python_s: float, peer: list[float],
          walls: list[float]) -> str:
    """The Markdown table of the medians, and the wall each design would take on two cores."""
    med = {k: statistics.median(b.get(k, 0.0) for b in big) for k in {k for b in big for k in b}}
    p1 = med.get("pass 1 reader", 0.0) + max(med.get("main", 0.0) - python_s, 0.0)
    p2 = med.get("pass 2 reader", 0.0) + med.get("pass 2 shards", 0.0)
    rows = [("Python: start-up, imports, the JSON document (main thread, on the small capture)", python_s),
            ("pass 1 reader: file reads, container walk, decoding (`tk-read-1`)", med.get("pass 1 reader", 0.0)),
            ("pass 1: numbering and scouts, pass 2's hand-out (main thread, less Python)",
             max(med.get("main", 0.0) - python_s, 0.0)),
            ("pass 2 reader: reads, walk, decoding, numbering (`tk-read-2`)", med.get("pass 2 reader", 0.0)),
            ("pass 2 shards: every packet through its connection's state (`tk-pass2-*`)",
             med.get("pass 2 shards", 0.0))]
    if med.get("other threads", 0.0) >= 0.0005:
        rows.append(("other threads", med["other threads"]))
    total = sum(v for _, v in rows)
    lines = [f"`bench/bench_budget.py {args.capture.name} --runs {args.runs}`: medians of {len(big)} runs "
             f"(the command's wall {statistics.median(walls):.2f} s beside the sampler; {os.cpu_count()} CPUs, "
             f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())})", "",
             "| where | CPU s | share |", "|---|---:|---:|"]
    lines += [f"| {name} | {s:.3f} | {s / total:.0%} |" for name, s in rows]
    lines.append(f"| **tracekit analyze --json, every thread** | **{total:.3f}** | 100% |")
    if peer:
        lines.append(f"| tcptrace -l -r (one thread) | {statistics.median(peer):.3f} | |")
    cores = os.cpu_count() or 1
    lines += ["", f"Lower bounds of the command's wall on {cores} cores (Python's share, then no core ever idle): "
              f"both passes {python_s + (p1 + p2) / cores:.2f} s; pass 2 alone (pass 1's CPU gone) "
              f"{python_s + p2 / cores:.2f} s."]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
