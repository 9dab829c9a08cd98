"""Peak RSS and wall time of the streamed summary (``_core.stream_summary``) against ``tcptrace -l -r``.

Issue 21: the summary from per-connection state, so that memory does not grow with the file.
Each command runs in its own child process (``os.wait4`` gives its peak RSS and CPU time); the
stream and tcptrace alternate, the order flipping every round, and medians are quoted. The
stream's child loads the compiled core alone (no polars, no numpy: the result is plain lists), so
its RSS is the interpreter's plus the stream's.

Files: ``bench/data/big.pcap`` and ``bench/data/big4.pcap`` when present (``bench/make_capture.sh``);
without them (or with ``--synth N``) a synthetic capture of N copies of a sample connection,
each copy on its own port pair and after the one before, is written to ``bench/data/`` first.

    .venv/bin/python bench/bench_stream.py --pairs 5
    .venv/bin/python bench/bench_stream.py --synth 300 --synth 1200 --pairs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
SEED = ROOT / "samples" / "linux" / "kernel_truth" / "outage_reno.pcap"
CORE = ROOT / "tracekit" / "_core.abi3.so"

#: The child that streams: the core loaded on its own, `stream_summary` run once.
STREAM = f"""
import importlib.machinery, importlib.util, sys
spec = importlib.util.spec_from_file_location("_core", {str(CORE)!r})
core = importlib.util.module_from_spec(spec); spec.loader.exec_module(core)
core.stream_summary(sys.argv[1])
"""


def synth(copies: int) -> Path:
    """``copies`` copies of :data:`SEED` (Ethernet/IPv4), copy k's ports moved by 7·k, its times after copy k−1's."""
    out = DATA / f"synth{copies}.pcap"
    if out.exists():
        return out
    data = SEED.read_bytes()
    head, recs, p = data[:24], [], 24
    while p + 16 <= len(data):
        sec, usec, cap, orig = struct.unpack_from("<IIII", data, p)
        recs.append((sec * 1_000_000 + usec, orig, bytearray(data[p + 16:p + 16 + cap])))
        p += 16 + cap
    span = recs[-1][0] - recs[0][0] + 1_000_000
    DATA.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:
        f.write(head)
        for k in range(copies):
            for t, orig, frame in recs:
                pkt = bytearray(frame)
                if len(pkt) >= 38 and pkt[12:14] == b"\x08\x00" and pkt[23] == 6:
                    l4 = 14 + (pkt[14] & 0x0F) * 4
                    if len(pkt) >= l4 + 4:
                        sp, dp = struct.unpack_from(">HH", pkt, l4)
                        struct.pack_into(">HH", pkt, l4, (sp + 7 * k) % 65536, (dp + 7 * k) % 65536)
                ts = t + k * span
                f.write(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(pkt), orig))
                f.write(pkt)
    return out


def measure(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one child running ``argv``."""
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(argv[0], argv)
    _, status, ru = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"{argv}: exit status {status}")
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def bench(path: Path, pairs: int) -> list[str]:
    """Table rows of the stream and tcptrace on ``path``, ``pairs`` alternating rounds."""
    cmds = {"stream_summary": [sys.executable, "-c", STREAM, str(path)],
            "tcptrace -l -r": ["/usr/bin/tcptrace", "-l", "-r", str(path)]}
    got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cmds}
    for i in range(pairs):
        for name in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
            got[name].append(measure(cmds[name]))
    size = path.stat().st_size / 2**20
    rows = [f"| **{path.name}, {size:.0f} MiB** | | | | |"]
    for name, runs in got.items():
        wall, cpu, rss = (statistics.median(r[j] for r in runs) for j in range(3))
        rows.append(f"| {name} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {rss / size:.2f}x |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--synth", type=int, action="append", help="copies of the seed connection (repeatable)")
    a = ap.parse_args()
    files = [DATA / n for n in ("big.pcap", "big4.pcap") if (DATA / n).exists()]
    if a.synth or not files:
        files += [synth(n) for n in (a.synth or [300, 1200])]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}, {a.pairs} pairs")
    print("| command | median wall s | median CPU s | peak RSS MiB | RSS / file |")
    print("|---|---:|---:|---:|---:|")
    for f in files:
        print("\n".join(bench(f, a.pairs)), flush=True)


if __name__ == "__main__":
    main()
