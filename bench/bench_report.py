"""Report size and time on the 1M-packet bench capture (``bench/data/big.pcap``, from make_capture.sh).

Reads and analyses the capture once (timed apart: that is the analyze benchmark's
business), then times ``write_report`` -- chart building, downsampling, spec
serialisation and the page write -- and reports the page size. Targets: the report
written in under 5 s, the page under 5 MB. The Vega bundle is built once beforehand
(vl-convert takes ~2.5 s the first time; tracekit caches it on disk), and a
second row includes that cold start. Appends its table to bench/README.md.

Usage: python bench/bench_report.py [CAPTURE] [--no-append]
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    """Run the benchmark; print (and append) a Markdown table."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    capture = Path(args[0]) if args else HERE / "data" / "big.pcap"
    if not capture.exists():
        print(f"{capture} is missing: run bench/make_capture.sh (as root) first", file=sys.stderr)
        return 2
    import tracekit
    from tracekit.reports import html

    t0 = time.perf_counter()
    analysis = tracekit.analyze(tracekit.read(capture))
    t_analyze = time.perf_counter() - t0
    packets = analysis.packets.height
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, cold in (("warm bundle cache", False), ("cold bundle (built by vl-convert)", True)):
            if cold:
                html.vega_bundle.cache_clear()
                os.environ["XDG_CACHE_HOME"] = tmp  # an empty cache: the bundle is rebuilt
            else:
                html.vega_bundle()
            out = Path(tmp) / "report.html"
            c0, t0 = time.process_time(), time.perf_counter()
            html.write_report([analysis], out)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            size = out.stat().st_size
            charts = out.read_text(encoding="utf-8").count('<div class="chart" id="chart-')
            rows.append((label, wall, cpu, size, charts))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = [
        f"\n### {time.strftime('%Y-%m-%d %H:%M')} — `{capture.name}`, {packets:,} packets, "
        f"{analysis.flows.height} data directions (read + analyze {t_analyze:.1f} s, peak RSS {rss:.0f} MiB)\n",
        "| report | wall s | CPU s | page MB | charts | target |",
        "|---|---|---|---|---|---|",
    ]
    for label, wall, cpu, size, charts in rows:
        ok = "ok" if wall < 5 and size < 5e6 else "MISSED (< 5 s, < 5 MB)"
        lines.append(f"| {label} | {wall:.2f} | {cpu:.2f} | {size / 1e6:.2f} | {charts} | {ok} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if "--no-append" not in sys.argv:
        with open(HERE / "README.md", "a", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
