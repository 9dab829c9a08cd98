"""Report size and time on the 1M-packet bench capture (``bench/data/big.pcap``, from make_capture.sh).

Reads and analyses the capture once (timed apart: that is the analyze benchmark's
business), then times ``write_report`` -- chart building, downsampling, spec
serialisation and the page write -- and reports the page size. Targets: the report
written in under 5 s, the page under 5 MB. The Vega bundle is built once beforehand
(vl-convert takes ~2.5 s the first time; tracekit caches it on disk), and a
second row includes that cold start. Appends its table to bench/README.md.

``--stages`` first prints where one ``tracekit report`` spends its time, in this fresh process,
as the command pays it: the imports, read, analyse, then the first (cold) report build cut into the
account in words, the charts, their specs, the page text and the write; with the time the cyclic
garbage collector took in each stage (``gc.callbacks``).

Usage: python bench/bench_report.py [CAPTURE] [--no-append] [--stages]
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


class _Clock:
    """Wall time and garbage-collector time of successive stages."""

    def __init__(self) -> None:
        self.gc_s, self._gc_start = 0.0, 0.0
        self.stages: list[tuple[str, float, float]] = []
        self._t, self._gc = time.perf_counter(), 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_s += time.perf_counter() - self._gc_start

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.stages.append((name, now - self._t, self.gc_s - self._gc))
        self._t, self._gc = now, self.gc_s


def _stages(capture: Path, clock: _Clock) -> str:
    """The cold report of ``capture`` in stages (the CLI's steps, :func:`tracekit.reports.html.render_report`'s
    parts one by one), as a Markdown table."""
    from tracekit import pipeline
    from tracekit.analysis import analyze
    from tracekit.reports import answers, html
    from tracekit.reports._chartkit import spec
    from tracekit.reports.figures import figures

    clock.lap("imports (tracekit, polars, numpy, altair)")
    trace = pipeline.read(str(capture))
    clock.lap("read")
    analysis = analyze(trace)
    rate = pipeline.link_rate(analysis)
    clock.lap("analyze")
    answers.explain_html(analysis, rate, "")
    clock.lap("account in words (explain)")
    figs = figures(analysis, link_rate_bps=rate)
    clock.lap("charts (figures: frames, thinning, altair)")
    specs = {f.key: spec(f.chart, lazy=True) for f in figs if f.present}
    clock.lap("chart specs (altair to_dict)")
    text = html.page("x", "", specs)
    clock.lap("page text (specs' JSON, Vega bundle)")
    with tempfile.TemporaryDirectory() as tmp:
        html.write_text(Path(tmp) / "report.html", text)
    clock.lap("write")
    total = sum(s for _, s, _ in clock.stages)
    lines = ["| stage (cold, one process) | wall s | of which GC s |", "|---|---:|---:|"]
    lines += [f"| {name} | {s:.2f} | {g:.2f} |" for name, s, g in clock.stages]
    lines.append(f"| total | {total:.2f} | {clock.gc_s:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Run the benchmark; print (and append) a Markdown table."""
    clock = _Clock()
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    capture = Path(args[0]) if args else HERE / "data" / "big.pcap"
    if not capture.exists():
        print(f"{capture} is missing: run bench/make_capture.sh (as root) first", file=sys.stderr)
        return 2
    staged = _stages(capture, clock) if "--stages" in sys.argv else ""
    if staged:
        print(staged)
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
    text = "\n".join(lines) + "\n" + (f"\n{staged}" if staged else "")
    print(text)
    if "--no-append" not in sys.argv:
        with open(HERE / "README.md", "a", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
