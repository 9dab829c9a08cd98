"""Self-contained, offline HTML reports built from tracekit's own small template.

Why not ``chart.save("x.html")`` or ``vl_convert.vegalite_to_html``: both load
Vega from a CDN unless told otherwise, and neither escapes the spec for the
``<script>`` context -- a student's flow label ``</script><script>…`` would run
(docs/security.md rules 1-5). Here:

* the Vega/Vega-Lite/vega-embed bundle (``vl_convert.javascript_bundle()``) is
  inlined once per page: no network request at all;
* all specs sit in one ``<script type="application/json">`` block written by
  :func:`script_json` (``<``, ``>``, ``&``, U+2028/2029 as ``\\uXXXX``), so no
  data value can end the script element;
* every other text goes through :func:`html.escape`;
* a Content-Security-Policy meta tag allows nothing but inline scripts (Vega
  compiles its expressions with ``Function``, hence ``'unsafe-eval'``), inline
  styles and ``data:`` images.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit._core import linktypes
from tracekit._files import write_atomic, write_output
from tracekit.errors import OutputError
from tracekit.reports._chartkit import safe_label, spec
from tracekit.reports.answers import explain_html, lab_flows, tool_table_html
from tracekit.reports.datasets import FrameRows, Rows
from tracekit.reports.figures import FLOW_KINDS, figures, flow_labels
from tracekit.reports.kernel import kernel_html
from tracekit.reports.markup import cell as cell  # re-exported: the pages build on them
from tracekit.reports.markup import esc as esc
from tracekit.reports.markup import table as table

if TYPE_CHECKING:
    from tracekit.analysis import Analysis
    from tracekit.reports.figures import Figure

CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
       "img-src data:; base-uri 'none'; form-action 'none'")
_KEY = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
#: Flow-table columns shown on the page, in order, when the analysis provides them: the main
#: ones fit a 1280-px window; the others are one click away (``<details>``).
FLOW_COLUMNS = [
    ("flow", "flow"), ("dir", "dir"), ("label", "connection"),
    ("packets", "packets"), ("unique_bytes", "bytes"), ("retrans_packets", "retransmitted"),
    ("goodput_bps", "goodput"), ("transfer_s", "transfer s"), ("rtt_p50_s", "RTT p50 s"),
    ("max_cwnd_bytes", "max cwnd bytes"), ("max_cwnd_packets", "max cwnd packets"), ("data_pps", "packets/s"),
    ("stall_time_s", "stalled s"),
]
MORE_FLOW_COLUMNS = [
    ("flow", "flow"), ("dir", "dir"), ("retrans_fast", "fast retx"), ("retrans_rto", "RTO retx"),
    ("throughput_bps", "throughput"), ("handshake_s", "handshake s"), ("mathis_bps", "Mathis model"),
    ("padhye_bps", "Padhye model"), ("window_limited_bps", "window limit"),
    ("kernel_cwnd_err_p50", "cwnd estimate vs kernel (median error)"),
]

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;
padding:12px 24px;color:#222}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px;display:block;overflow-x:auto;max-width:100%}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top}
td.t{overflow-wrap:break-word;max-width:320px}details{margin:0 0 12px}summary{cursor:pointer;color:#1f4e8c}
th{background:#f4f4f4}td.t,th.t{text-align:left}.meta td{text-align:left}.meta th{white-space:nowrap}
.chart{margin:8px 0 18px;min-height:40px}.missing{color:#777}.warn{color:#8a5300}
.note{color:#555;font-size:12px}
.explain{background:#f7f9fc;border:1px solid #dde4ee;padding:6px 14px 8px;margin:8px 0 14px}
.explain h3{margin:4px 0}.explain ul{margin:2px 0 6px;padding-left:20px}.explain p{margin:6px 0 2px}
.better,.pos{color:#006d2c}.worse,.neg{color:#a50f15}code{font-size:12px}
"""

_EMBED = """
(function () {
  var specs = JSON.parse(document.getElementById("tk-specs").textContent);
  var keys = Object.keys(specs), pending = [];
  keys.forEach(function (key) {
    var el = document.getElementById("chart-" + key);
    if (!el) { return; }
    pending.push(vegaEmbed(el, specs[key], {renderer: "svg", actions: false, mode: "vega-lite"})
      .then(function () { el.setAttribute("data-rendered", "1"); })
      .catch(function (err) {
        el.setAttribute("data-error", String(err));
        el.textContent = "chart failed: " + err;
        console.error("tracekit chart " + key + ": " + err);
      }));
  });
  Promise.all(pending).then(function () {
    document.body.setAttribute("data-charts", String(pending.length));
  });
})();
"""


def script_json(obj: Any) -> str:
    """JSON that cannot end or escape a ``<script>`` element (docs/security.md rule 1).

    Raises:
        ValueError: on NaN/inf (invalid JSON; charts map them to null first).
    """
    text = _dumps(obj)
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                        ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, escaped)
    return text


def _dumps(obj: Any) -> str:
    """``json.dumps(obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"))``, with the JSON text
    a chart's datasets already carry (:class:`~tracekit.reports.datasets.Rows`) put in as it is.

    Only dicts with text keys are walked (the page's specs, each spec, its ``datasets``); anything
    else is encoded by ``json.dumps`` as before, so the page is the same text, byte for byte.
    """
    if isinstance(obj, Rows | FrameRows) and obj.json is not None:
        return obj.json
    if isinstance(obj, FrameRows):  # no text (a few rows, other types): json.dumps of its rows
        return _encode(obj.rows())
    if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        return "{" + ",".join(f"{_encode(k)}:{_dumps(v)}" for k, v in obj.items()) + "}"
    return _encode(obj)


def _encode(obj: Any) -> str:
    return json.dumps(obj, allow_nan=False, ensure_ascii=False, separators=(",", ":"))


def _vl_version() -> str | None:
    import altair as alt
    import vl_convert as vlc

    m = re.match(r"v?(\d+\.\d+)", alt.SCHEMA_VERSION)
    return m.group(1) if m and m.group(1) in vlc.get_vegalite_versions() else None


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """The Vega + Vega-Lite + vega-embed JavaScript bundle, ready to inline in a ``<script>``.

    Building it takes vl-convert ~2.5 s, so it is cached in memory and on disk
    (``$XDG_CACHE_HOME/tracekit/``, keyed by the vl-convert and Vega-Lite versions).
    A cache that cannot be written is simply not used.
    """
    import vl_convert as vlc

    vl = _vl_version()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracekit"
    # the .pyi of vl_convert lacks __version__ and marks snippet required (the module defaults it to None)
    cache = base / f"vega-bundle-{vlc.__version__}-{vl or 'latest'}.js"  # type: ignore[attr-defined]
    try:
        text = cache.read_text(encoding="utf-8")
        if "window.vegaEmbed=" in text:
            return _script_safe_js(text)
    except (OSError, UnicodeDecodeError):
        pass
    text = vlc.javascript_bundle(vl_version=vl) if vl else vlc.javascript_bundle()  # type: ignore[call-arg]
    with contextlib.suppress(OSError):
        write_atomic(cache, text.encode("utf-8"))
    return _script_safe_js(text)


def _script_safe_js(js: str) -> str:
    # The HTML parser ends a script at "</script" and changes state at "<!--" whatever the JS
    # means; in the bundle these can only occur inside string literals, where "<\/" and "<\!"
    # are the same characters to JavaScript. (vl-convert 1.9's bundle contains neither.)
    js = re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)
    return js.replace("<!--", "<\\!--")


def page(title: str, body: str, specs: dict[str, dict[str, Any]]) -> str:
    """Wrap body HTML and chart specs into one self-contained page.

    Args:
        title: Page title (escaped here).
        body: Trusted HTML built with :func:`esc` around every untrusted value.
        specs: Vega-Lite specs by chart key; each renders into ``<div id="chart-KEY">``.

    Returns:
        The HTML text.
    """
    for key in specs:
        if not _KEY.match(key):
            raise ValueError(f"chart key {key!r} is not a safe id")
    scripts = ""
    if specs:
        scripts = (f'<script type="application/json" id="tk-specs">{script_json(specs)}</script>\n'
                   f"<script>{vega_bundle()}</script>\n<script>{_EMBED}</script>\n")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="tracekit">\n'
        f"<title>{esc(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"{body}\n{scripts}</body>\n</html>\n"
    )


def figures_html(figs: list[Figure], specs: dict[str, dict[str, Any]]) -> list[str]:
    """HTML parts for a run of figures: each drawn chart, then one list of the charts not drawn and why."""
    parts: list[str] = []
    missing = []
    for fig in figs:
        if fig.present:
            parts.append(figure_html(fig, fig.key, specs))
        else:
            missing.append(f"<li>{esc(fig.title)}: {esc(fig.reason)}</li>")
    if missing:
        parts.append(f'<h3>Charts not drawn</h3><ul class="missing">{"".join(missing)}</ul>')
    return parts


def figure_html(fig: Figure, key: str, specs: dict[str, dict[str, Any]]) -> str:
    """The chart ``<div>`` (its spec added to ``specs``) or the reason it is missing."""
    if not fig.present:
        return f'<p class="missing" data-missing="{esc(fig.kind)}">{esc(fig.title)}: not drawn — {esc(fig.reason)}</p>'
    specs[key] = spec(fig.chart, lazy=True)  # the page needs only the datasets' text
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in fig.notes)
    return f'<div class="chart" id="chart-{key}" data-kind="{esc(fig.kind)}"></div>{notes}'


def chart_spec(chart: Any) -> dict[str, Any]:
    """The Vega-Lite dict of a chart (schema validation skipped: the golden tests validate)."""

    return spec(chart)


#: Words for the units a reader records in ``meta["units"]`` (its keys are tracekit's own).
_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "bytes": "bytes", "packets": "packets", "bps": "bit/s",
               "pps": "packets/s"}
#: Words for the reader's counters in ``meta["counts"]``, in the order shown.
_COUNT_WORDS = {"records": "records read", "events": "packet events", "samples": "samples", "series": "series",
                "malformed": "malformed", "blank": "blank lines", "skipped": "skipped", "truncated": "truncated"}


def run_name(analysis: Analysis) -> str:
    """What the run is called: its folder for a run directory, else its file (the name, not one file in a run)."""
    m = analysis.trace.meta
    if m.get("dir"):
        return str(m["dir"])
    paths = [str(p) for p in m.get("paths", [])]
    return paths[0] if len(paths) == 1 else ", ".join(paths) or "(bytes)"


def _started(m: dict[str, Any]) -> str | None:
    """The capture's first packet as an ISO date (UTC); None for simulators, whose clock starts at 0."""
    import datetime as dt

    t0 = m.get("t0_ns")
    if not isinstance(t0, int) or t0 < 315_532_800 * 10**9:  # before 1980: a simulation clock, not a date
        return None
    when = dt.datetime.fromtimestamp(t0 / 1e9, tz=dt.UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d} UTC"


def _linktypes(m: dict[str, Any]) -> str | None:
    lts = m.get("linktypes")
    if not lts:
        return None
    names = linktypes()  # LINKTYPE_* names of tcpdump.org, from the capture decoder's own table
    return ", ".join(f"{names.get(int(lt), 'link type')} ({int(lt)})" for lt in lts)


def _units(m: dict[str, Any]) -> str | None:
    units = m.get("units")
    if not isinstance(units, dict) or not units:
        return None
    return "; ".join(f"{k}: {_UNIT_WORDS.get(str(v), str(v))}" for k, v in units.items())


def _counts(m: dict[str, Any]) -> str | None:
    counts = m.get("counts")
    if not isinstance(counts, dict):
        return None
    shown = [f"{counts[k]:,} {w}" for k, w in _COUNT_WORDS.items() if isinstance(counts.get(k), int) and counts[k]]
    return ", ".join(shown) or None


def _meta_rows(analysis: Analysis) -> list[tuple[str, Any]]:
    """The report header: for people (ISO dates, link-type names, units in words), no raw epochs or dicts."""
    tr = analysis.trace
    m = tr.meta
    fmt = m.get("format")
    formats = ", ".join(dict.fromkeys(str(f) for f in m.get("formats", []))) if fmt == "dir" else fmt
    rows: list[tuple[str, Any]] = [
        ("run", run_name(analysis)),
        ("files", ", ".join(str(p) for p in m.get("paths", []))),
        ("made by", f"{m.get('tool') or 'unknown tool'}, read as {formats or 'unknown format'}"),
        ("first packet", _started(m)),
        ("link types", _linktypes(m)),
        ("size", f"{tr.packets.height:,} packet events ({analysis.packets.height:,} analysed), "
                 f"{tr.samples.height:,} tool-reported samples"),
        ("reader counts", _counts(m)),
        ("segment size", f"{m['segment_size']:,} bytes" if isinstance(m.get("segment_size"), int) else None),
        ("units in the source", _units(m)),
        ("units shown", "seconds, bytes, bit/s (converted by the reader)"),
    ]
    if m.get("vantage_point"):
        rows.append(("vantage point", m["vantage_point"]))
    return [(k, v) for k, v in rows if v not in (None, "")]


def analysis_section(analysis: Analysis, prefix: str, specs: dict[str, dict[str, Any]],
                     *, max_flows: int, link_rate_bps: float | None = None) -> tuple[str, list[Figure]]:
    """The HTML of one analysed trace: what happened in words, metadata, warnings, flows table,
    tool-reported series, charts, missing charts."""

    tr = analysis.trace
    parts = [f"<h2>{esc(run_name(analysis))}</h2>", explain_html(analysis, link_rate_bps, prefix)]
    parts.append('<table class="meta"><tbody>' + "".join(
        f"<tr><th class=\"t\">{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in _meta_rows(analysis))
        + "</tbody></table>")
    if tr.warnings:
        items = "".join(
            f"<li class=\"warn\"><code>{esc(w.get('code'))}</code> {esc(w.get('message'))} "
            f"(×{esc(w.get('count', 1))}{', line ' + esc(w['line']) if w.get('line') else ''}"
            f"{', byte ' + esc(w['offset']) if w.get('offset') is not None else ''})</li>"
            for w in tr.warnings)
        parts.append(f"<h3>Warnings</h3><ul>{items}</ul>")
    flows = flow_labels(lab_flows(analysis))
    cols = [(k, h) for k, h in FLOW_COLUMNS if k in flows.columns]
    more = [(k, h) for k, h in MORE_FLOW_COLUMNS if k in flows.columns]
    if flows.height:
        rows = flows.to_dicts()
        parts.append("<h3>Flows</h3>" + table(cols, rows, table_id=f"{prefix}flows"))
        if len(more) > 2:
            parts.append("<details><summary>more columns: retransmission kinds, throughput, handshake, models"
                         f"</summary>{table(more, rows, table_id=f'{prefix}flows-more')}</details>")
    else:
        parts.append('<h3>Flows</h3><p class="missing">no TCP connection carried data</p>')
    if tr.meta.get("kernel"):  # ss / nstat beside the capture
        parts.append(kernel_html(analysis))
    parts.append(tool_table_html(analysis, prefix))
    figs = figures(analysis, max_flows=max_flows, link_rate_bps=link_rate_bps)
    missing: list[str] = []
    current: tuple[int | None, int | None] | None = None
    for fig in figs:
        if not fig.present:
            missing.append(f"<li>{esc(fig.title)}: {esc(fig.reason)}</li>")
            continue
        if fig.kind in FLOW_KINDS and (fig.flow, fig.dir) != current:
            current = (fig.flow, fig.dir)
            label = fig.title.split(" · ", 1)[-1]
            parts.append(f"<h3>Flow {esc(fig.flow)} direction {esc(fig.dir)}: {esc(label)}</h3>")
        elif fig.kind not in FLOW_KINDS and current != (None, None):
            current = (None, None)
            parts.append("<h3>Whole trace</h3>")
        parts.append(figure_html(fig, prefix + fig.key, specs))
    if missing:
        parts.append(f'<h3>Charts not drawn</h3><ul class="missing">{"".join(missing)}</ul>')
    return "\n".join(parts), figs


def render_report(analyses: Sequence[Analysis], *, max_flows: int = 6,
                  link_rates: Sequence[float | None] | None = None) -> tuple[str, list[tuple[str, Figure]]]:
    """Build the report page for one or more analysed traces.

    ``link_rates`` gives each trace's bottleneck rate in bit/s (None: unknown), e.g. from
    :func:`tracekit.pipeline.link_rate`: it is drawn on the throughput charts and used by the account.

    Returns:
        The HTML text and the drawn figures with their page keys (for image export).
    """
    specs: dict[str, dict[str, Any]] = {}
    sections, drawn = [], []
    for i, analysis in enumerate(analyses):
        prefix = f"r{i}-" if len(analyses) > 1 else ""
        rate = link_rates[i] if link_rates is not None else None
        body, figs = analysis_section(analysis, prefix, specs, max_flows=max_flows, link_rate_bps=rate)
        sections.append(f'<section id="trace-{i}">{body}</section>')
        drawn += [(prefix + f.key, f) for f in figs if f.present]

    names = [safe_label(run_name(a)) for a in analyses]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    title = f"tracekit report — {shown}" if shown else "tracekit report"
    header = f"<h1>{esc(title)}</h1>"
    return page(title, header + "\n".join(sections), specs), drawn


def write_text(path: Path, text: str) -> None:
    """Write a page atomically (temp file + ``os.replace``), errors as :class:`OutputError`."""
    path = Path(path)
    if path.is_dir():
        raise OutputError("is a directory, not a file", path=str(path), hint="give a file name, e.g. report.html")
    write_output(path, text, what="cannot write the report", hint="choose a writable location with -o")


def export_images(figs: Sequence[tuple[str, Figure]], *, png_dir: Path | None = None,
                  svg_dir: Path | None = None, scale: float = 2.0) -> list[Path]:
    """Write each chart as ``KEY.png`` / ``KEY.svg`` through vl-convert (no browser, no network).

    File names come from the chart keys (tracekit's own ``[A-Za-z0-9_-]`` ids), never from
    names in the input. ``allowed_base_urls=[]`` forbids any data URL in the specs.

    Returns:
        The files written.

    Raises:
        OutputError: when a folder or file cannot be written.
    """
    import vl_convert as vlc

    written: list[Path] = []
    for folder, ext in ((png_dir, "png"), (svg_dir, "svg")):
        if folder is None:
            continue
        folder = Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the image folder: {exc.strerror or exc}", path=str(folder),
                              hint="choose a writable folder") from None
        for key, fig in figs:
            if not _KEY.match(key):
                raise ValueError(f"chart key {key!r} is not a safe file name")
            spec = chart_spec(fig.chart)
            data = (vlc.vegalite_to_png(spec, scale=scale, allowed_base_urls=[]) if ext == "png"
                    else vlc.vegalite_to_svg(spec, allowed_base_urls=[]).encode("utf-8"))
            out = folder / f"{key}.{ext}"
            try:
                write_atomic(out, data)
            except OSError as exc:
                raise OutputError(f"cannot write an image: {exc.strerror or exc}", path=str(out),
                                  hint="choose a writable folder") from None
            written.append(out)
    return written


def write_report(analyses: list[Analysis], path: Path, *, png_dir: Path | None = None,
                 svg_dir: Path | None = None, max_flows: int = 6,
                 link_rates: Sequence[float | None] | None = None) -> None:
    """Write one self-contained HTML report for the analysed traces (and optionally images).

    Args:
        analyses: One Analysis per trace; all go on the same page.
        path: The HTML file to write (atomically).
        png_dir: Also write every chart as PNG into this folder.
        svg_dir: Also write every chart as SVG into this folder.
        max_flows: Connection directions charted one by one per trace.
        link_rates: Each trace's bottleneck rate in bit/s (:func:`tracekit.pipeline.link_rate`), or None.

    Raises:
        OutputError: when an output cannot be written.
    """
    text, drawn = render_report(analyses, max_flows=max_flows, link_rates=link_rates)
    write_text(Path(path), text)
    if png_dir is not None or svg_dir is not None:
        export_images(drawn, png_dir=png_dir, svg_dir=svg_dir)
