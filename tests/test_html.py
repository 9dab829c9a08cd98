"""The offline HTML report: self-contained, script-safe, escaped, atomic; images; the `report` command."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from conftest import sample
from report_data import XSS_IMG, XSS_SCRIPT, synthetic

from tracekit.cli.main import main
from tracekit.errors import OutputError
from tracekit.reports import html as H
from tracekit.reports.html import render_report, script_json, write_report


@pytest.fixture(scope="module")
def hostile() -> Any:
    warn = [{"code": "W-BAD-HEADER", "message": f"unknown column {XSS_SCRIPT}", "count": 1, "line": 1,
             "offset": None, "frame": None}]
    return synthetic(n=300, src=XSS_SCRIPT, dst=XSS_IMG, link=XSS_IMG, path=f"{XSS_IMG}.csv", warnings=warn)


def _specs(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="tk-specs">(.*?)</script>', page, re.S)
    assert m, "no spec block"
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def _without_bundle(page: str) -> str:
    """The page minus the inlined Vega bundle (whose string templates legitimately mention <img ...>)."""
    bundle = H.vega_bundle()
    assert page.count(bundle) == 1
    return page.replace(bundle, "BUNDLE")


def test_script_json_cannot_end_a_script() -> None:
    text = script_json({"a": "</script><!-- & \u2028\u2029 >"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028\u2029 >"}
    with pytest.raises(ValueError):
        script_json({"x": float("nan")})


def _plain_script_json(obj: Any) -> str:
    """script_json as json.dumps alone writes it (a dataset's rows encoded value by value)."""
    text = json.dumps(obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                        ("\u2029", "\\u2029")):
        text = text.replace(ch, escaped)
    return text


def test_dataset_json_text_is_json_dumps_of_its_rows() -> None:
    """The JSON a chart's dataset carries (written by polars) is json.dumps' text of its rows: every
    control character, markup and line separator in strings, floats of every size (below 1e-4
    Python writes an exponent), integers to 2^64, nulls, NaN and infinities (null)."""
    from tracekit.reports._chartkit import records

    rng = np.random.default_rng(4)
    text = "".join(chr(i) for i in range(0x20)) + "\x7f/\\\"\u2028\u2029é😀" + XSS_SCRIPT
    n = 20_000
    floats = rng.standard_normal(n) * 10.0 ** rng.integers(-9, 22, n)
    floats[:6] = [0.0, -0.0, 7.4e-05, 1e-4, 1e16, float("nan")]
    floats[6:9] = [float("inf"), -1e-7, 123456.789]
    df = pl.DataFrame({"t": floats, "y": rng.integers(-(2**62), 2**62, n), "s": [text, None] * (n // 2),
                       "u": pl.Series(rng.integers(0, 2**63, n), dtype=pl.UInt64) * 2, "b": [True, None] * (n // 2)})
    plain = df.filter((pl.col("t").abs() >= 1e-4) | (pl.col("t") == 0) | pl.col("t").is_nan())  # no float < 1e-4
    few = pl.concat([df.head(3), plain.head(500), df.slice(3, 5), plain.tail(500)])  # a few rows below 1e-4
    assert records(plain.head(7)).json is None  # a few rows: json.dumps writes them
    for frame, digits in ((few, None), (few, {"t": 3}), (plain, None), (plain.head(100), {"t": 1})):
        rows = records(frame, digits)
        assert rows.json is not None
        assert rows.json == json.dumps(list(rows), allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    assert records(df.head(0)).json == "[]"
    assert records(df).json in (None, json.dumps(list(records(df)), ensure_ascii=False, separators=(",", ":")))
    assert records(df.select(pl.col("t").cast(pl.Float32))).json is None  # Python widens a float32 first
    specs = {"a": {"mark": "line", "datasets": {"d0": records(df.head(500)), "d1": [{"x": text}]}}, "b": [1.5]}
    assert script_json(specs) == _plain_script_json(specs)


def test_page_specs_are_json_dumps_text(hostile: Any) -> None:
    """The spec block of a page (datasets spliced in as text) is byte for byte what json.dumps writes."""
    from tracekit import analyze, read
    from tracekit.reports.figures import figures

    for analysis in (analyze(read(sample("linux/bulk_lossy.pcap"))), hostile):
        specs = {f.key: H.chart_spec(f.chart) for f in figures(analysis) if f.present}
        assert specs
        assert script_json(specs) == _plain_script_json(specs)


def test_payloads_never_appear_unescaped(hostile: Any) -> None:
    full, drawn = render_report([hostile])
    assert drawn
    page = _without_bundle(full)
    for payload in (XSS_SCRIPT, XSS_IMG, "<script>alert(1)", "<img src=x", "onerror=\"document"):
        assert payload not in page
    # exactly tracekit's own script elements: specs, bundle, embed code
    assert page.count("<script") == 3 and page.lower().count("</script") == 3
    assert "<img" not in page
    # the payload is still there, as data, once the JSON is parsed
    assert "</script><script>document.title" in json.dumps(_specs(page), ensure_ascii=False)
    assert "&lt;/script&gt;" in page  # the warning and title, HTML-escaped


def test_page_is_offline_with_csp(hostile: Any) -> None:
    page = _without_bundle(render_report([hostile])[0])
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)\s*=""", page, re.I)
    assert "cdn.jsdelivr" not in page and "unpkg.com" not in page
    assert "window.vegaEmbed=" in H.vega_bundle() and page.count("BUNDLE") == 1  # inlined once


def test_every_chart_has_a_div_and_spec() -> None:
    page, drawn = render_report([synthetic()])
    specs = _specs(page)
    assert set(specs) == {k for k, _ in drawn}
    for key in specs:
        assert f'id="chart-{key}"' in page
    assert 'id="flows"' in page and 'data-col="goodput_bps"' in page


def test_several_traces_get_distinct_keys() -> None:
    page, drawn = render_report([synthetic(), synthetic(n=500)])
    keys = [k for k, _ in drawn]
    assert len(keys) == len(set(keys)) and any(k.startswith("r1-") for k in keys)


def test_missing_charts_are_listed_with_reasons() -> None:
    import types

    full = synthetic()
    bare = types.SimpleNamespace(trace=full.trace, packets=full.packets, flows=full.flows)
    page, _ = render_report([bare])
    assert "Charts not drawn" in page and "no RTT samples" in page


def test_write_is_atomic_and_readable(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "r.html"
    write_report([synthetic(n=200)], out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert out.stat().st_mode & stat.S_IROTH  # not mkstemp's 0600
    assert not list(out.parent.glob(".*tmp"))


def test_unwritable_output_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError):
        write_report([synthetic(n=200)], tmp_path)  # a directory
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError):
        write_report([synthetic(n=200)], blocker / "r.html")


def test_png_and_svg_export(tmp_path: Path) -> None:
    write_report([synthetic(n=300)], tmp_path / "r.html", png_dir=tmp_path / "png", svg_dir=tmp_path / "svg")
    pngs = sorted(p.name for p in (tmp_path / "png").iterdir())
    svgs = sorted(p.name for p in (tmp_path / "svg").iterdir())
    assert "timeseq-flow0.png" in pngs and len(pngs) == len(svgs) >= 8
    assert (tmp_path / "png" / pngs[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "svg" / svgs[0]).read_text()


def test_hostile_file_name_never_names_an_image(tmp_path: Path, hostile: Any) -> None:
    write_report([hostile], tmp_path / "r.html", png_dir=tmp_path / "png")
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+\.png", p.name) for p in (tmp_path / "png").iterdir())


def test_bundle_is_script_safe() -> None:
    js = H.vega_bundle()
    assert "</script" not in js.lower() and "<!--" not in js
    assert H._script_safe_js('x="</script>";y="<!--"') == 'x="<\\/script>";y="<\\!--"'


def test_report_command(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["report", str(sample("linux", "bulk_lossy.pcap")), "-o", str(out),
                                    "--svg", str(tmp_path / "svg")])
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert "bulk_lossy.pcap" in page and "timeseq-flow0" in _specs(page)
    assert (tmp_path / "svg" / "timeseq-flow0.svg").exists()


def test_report_command_errors_are_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(main, ["report", str(sample("linux", "bulk_lossy.pcap")), "-o", str(blocker / "r.html")])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.startswith("tracekit: error:") and str(blocker) in res.output


def test_help_stays_light() -> None:
    import subprocess
    import sys

    code = ("import sys, tracekit.cli.main; bad = [m for m in ('altair', 'polars', 'vl_convert') if m in sys.modules];"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
