"""Reports in a real browser: headless Chromium, file://, no network.

Each page is opened twice: ``--dump-dom`` after a virtual-time budget (the DOM
after Vega ran: every chart div must hold a non-empty SVG and be marked
rendered; the console, logged to stderr, must be silent) and ``--screenshot``
(a PNG that must not be blank). Networking is unavailable: a dead proxy and a
resolver that maps every host to nothing, besides the page's own CSP.
"""

from __future__ import annotations

import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import need_tool, sample
from report_data import XSS_IMG, XSS_SCRIPT, png_pixels, synthetic

from tracekit.reports.html import page, write_report

pytestmark = pytest.mark.slow

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0",
         # no network at all: every proxied request fails and every name resolves to nothing
         "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]


def chromium(url: str, tmp: Path, *extra: str) -> tuple[str, str]:
    exe = need_tool("chromium")
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    proc = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=15000", *extra, url],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def console_lines(stderr: str) -> list[str]:
    """Messages the page wrote to the console (Chromium logs them as ``INFO:CONSOLE``)."""
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


class _Dom(HTMLParser):
    """Collects chart divs, SVG sizes per chart, the title and any <img>."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, dict[str, Any]] = {}
        self.stack: list[str | None] = []
        self.title = ""
        self._in_title = False
        self.imgs: list[dict[str, str | None]] = []
        self.body: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        current = next((c for c in reversed(self.stack) if c), None)
        if tag == "div" and (a.get("id") or "").startswith("chart-"):
            key = str(a["id"])[6:]
            self.charts[key] = {"rendered": a.get("data-rendered"), "error": a.get("data-error"), "svg": 0,
                                "marks": 0}
            current = key
        if tag == "body":
            self.body = a
        if tag == "title":
            self._in_title = True
        if tag == "img":
            self.imgs.append(a)
        if current and tag == "svg":
            self.charts[current]["svg"] += 1
        if current and tag in ("path", "rect", "line", "text", "circle"):
            self.charts[current]["marks"] += 1
        if tag not in ("meta", "link", "br", "img", "input", "hr", "col", "wbr", "source"):
            self.stack.append(current)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag not in ("meta", "link", "br", "img", "input", "hr", "col", "wbr", "source") and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def open_page(path: Path, tmp: Path) -> tuple[_Dom, list[str]]:
    dom_text, err = chromium(path.as_uri(), tmp, "--dump-dom")
    dom = _Dom()
    dom.feed(dom_text)
    return dom, console_lines(err)


def assert_all_rendered(dom: _Dom, console: list[str], expected: int) -> None:
    assert not console, console
    assert len(dom.charts) == expected
    assert dom.body.get("data-charts") == str(expected)
    for key, c in dom.charts.items():
        assert c["error"] is None, (key, c["error"])
        assert c["rendered"] == "1" and c["svg"] >= 1 and c["marks"] > 20, (key, c)


def assert_not_blank(png: Path) -> None:
    width, height, colours = png_pixels(png)
    assert width >= 800 and height >= 600
    assert len(colours) > 50, f"screenshot looks blank ({len(colours)} distinct pixel values)"


def test_harness_sees_console_errors_and_failed_charts(tmp_path: Path) -> None:
    """The checks can fail: a console message and a chart Vega rejects are both caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(page("bad", '<div class="chart" id="chart-x"></div>', {"x": {"mark": "no-such-mark"}}))
    dom, console = open_page(bad, tmp_path)
    assert console and dom.charts["x"]["error"]
    with pytest.raises(AssertionError):
        assert_all_rendered(dom, console, 1)


def test_report_renders_every_chart_offline(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    import tracekit

    real = tracekit.analyze(tracekit.read(sample("linux", "bulk_lossy.pcap")))
    write_report([real, synthetic()], out)
    text = out.read_text(encoding="utf-8")
    expected = len(re.findall(r'<div class="chart" id="chart-', text))
    assert expected >= 12
    dom, console = open_page(out, tmp_path)
    assert_all_rendered(dom, console, expected)
    shot = tmp_path / "report.png"
    chromium(out.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1150,1500")
    assert_not_blank(shot)


def test_injection_does_not_run(tmp_path: Path) -> None:
    """Labels, link names, file name and a CSV-header warning carry script payloads; none runs."""
    warn = [{"code": "W-UNKNOWN-COLUMN", "message": f"ignored column {XSS_SCRIPT}{XSS_IMG}", "count": 1,
             "line": 1, "offset": None, "frame": None}]
    hostile = synthetic(n=400, src=XSS_SCRIPT, dst=XSS_IMG, link=XSS_SCRIPT, path=f"{XSS_IMG}{XSS_SCRIPT}.csv",
                        warnings=warn)
    out = tmp_path / "x.html"
    write_report([hostile], out)
    text = out.read_text(encoding="utf-8")
    expected = len(re.findall(r'<div class="chart" id="chart-', text))
    dom, console = open_page(out, tmp_path)
    # the page title shows the (escaped) file name, payload text included; a script that ran
    # would have replaced the whole title with "pwned-…"
    assert not dom.title.startswith("pwned") and dom.title.startswith("tracekit report")
    assert not dom.imgs, dom.imgs
    assert_all_rendered(dom, console, expected)


def test_compare_and_sweep_pages_render(tmp_path: Path) -> None:
    from tracekit import pipeline
    from tracekit.reports import compare, sweep

    runs = [sample("ns2", "lab_reno"), sample("linux", "bulk_lossy.pcap")]
    cmp_page = tmp_path / "compare.html"
    compare.write(compare.compare([(str(p), pipeline.load(p)) for p in runs]), cmp_page)
    sw_page = tmp_path / "sweep.html"
    got = pipeline.sweep_inputs(sorted(sample("ns2", "sweep").glob("win*")))
    sweep.write(sweep.sweep(got.runs, first=got.first), sw_page)
    for p in (cmp_page, sw_page):
        expected = len(re.findall(r'<div class="chart" id="chart-', p.read_text(encoding="utf-8")))
        assert expected >= 1
        dom, console = open_page(p, tmp_path)
        assert_all_rendered(dom, console, expected)
