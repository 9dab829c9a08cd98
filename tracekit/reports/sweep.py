"""``tracekit sweep``: a metric against a parameter over many runs (window size, delay, variant...).

Where the parameter values come from, first match wins per name:

1. ``--param 'win{window}_d{delay}.tr'``: a pattern matched against the end of
   each path (as many path components as the pattern has); ``{name}`` takes any
   text without ``/``.
2. ``--manifest runs.csv``: a CSV with a ``path`` (or ``file``) column, paths
   relative to the manifest, and one column per parameter.
3. ``run.json`` in a run directory (or beside a file), as the ns-2 sample runs
   have: its scalar values.

Values that parse as numbers are numbers. Each run is summarised by its main
connection direction, as in :mod:`tracekit.reports.compare`. The x axis is
``--x`` or the first parameter of the pattern/manifest, else the first varying
one of :data:`PREFERRED_X`; lines are per ``--by`` (default ``variant`` when
present: one line per TCP variant).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tracekit._files import neutralise
from tracekit.errors import OutputError, UsageError
from tracekit.reports import charts
from tracekit.reports.compare import load, run_metrics, tool_values
from tracekit.reports.figures import Figure

#: Metrics charted against the parameter: (key, title, y-axis format).
CHARTED = [("goodput_bps", "goodput (bit/s)", "~s"), ("transfer_s", "download time (s)", None),
           ("retrans_packets", "retransmitted packets", None), ("rtt_p50_s", "RTT median (s)", None),
           ("cwnd_reductions", "cwnd reductions in congestion avoidance", None)]
#: Metrics in the table and the CSV/JSON outputs.
#: (``transfer_s`` is the one transfer time: first SYN -> the last data byte acknowledged, as a
#: download time is measured; ``handshake_s`` its part before data flows. ``duration`` -- the
#: span of one direction's packets -- is left out: it nearly equals ``transfer_s``.)
METRICS = ["goodput_bps", "throughput_bps", "transfer_s", "handshake_s", "delivered_bytes", "retrans_packets",
           "loss_events", "rtt_p50_s", "max_cwnd_bytes", "cwnd_reductions", "flows"]
#: Parameters tried, in order, for the x axis when none is named.
PREFERRED_X = ("window_kb", "window", "window_bytes", "window_pkts", "delay", "delay_ms", "bandwidth", "rate",
               "queue_limit_pkts", "queue", "error_rate", "loss", "flows", "seed")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_MAX_SIDE_FILE = 1 << 20  # run.json / manifest: small files; a huge one is not a manifest


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: its path, parameter values and metrics."""

    path: str
    params: dict[str, Any]
    metrics: dict[str, Any]
    main: dict[str, Any] | None


@dataclass(frozen=True)
class SweepResult:
    """Runs of a sweep, sorted by (group, x).

    Attributes:
        runs: The runs.
        x: Parameter on the x axis.
        by: Parameter naming the lines (None: one line).
        params: Every parameter name seen, in first-seen order.
    """

    runs: list[SweepRun]
    x: str
    by: str | None
    params: list[str]
    metrics: list[str] = field(default_factory=lambda: list(METRICS))
    y: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        """Flat rows: ``path``, then ``param.NAME`` columns, then the metrics."""
        return [{"path": r.path, **{f"param.{k}": r.params.get(k) for k in self.params},
                 **{m: r.metrics.get(m) for m in self.metrics}} for r in self.runs]

    def to_json(self) -> str:
        """The sweep as a JSON document (strict: NaN/inf become null)."""
        from tracekit.reports.text import dumps

        return dumps({"x": self.x, "by": self.by, "params": self.params, "metrics": self.metrics,
                      "runs": [{"path": r.path, "params": r.params, "metrics": r.metrics} for r in self.runs]})

    def to_csv(self) -> str:
        """The sweep as CSV; text cells starting with ``= + - @`` TAB or CR are prefixed with ``'``.

        (Graders open these in spreadsheets; a run name such as ``=HYPERLINK(...)`` must stay
        text -- RELIABILITY.md §7.5 rule 7.)
        """
        rows = self.rows()
        buf = io.StringIO()
        header = list(rows[0]) if rows else ["path"]
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([_neutral(h) for h in header])
        for row in rows:
            w.writerow([_neutral(row[h]) for h in header])
        return buf.getvalue()


def _neutral(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return ""
    return "" if v is None else neutralise(v)


def _value(text: str) -> Any:
    """A parameter value: int or float when it parses as one, else the text."""
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        f = float(t)
        return f if math.isfinite(f) else t
    except ValueError:
        return t


def compile_pattern(pattern: str) -> tuple[re.Pattern[str], list[str]]:
    """Turn ``win{window}_d{delay}.tr`` into a regex with one group per ``{name}``.

    Raises:
        UsageError: for no placeholder, a bad or repeated name, or an unbalanced brace.
    """
    names: list[str] = []
    out = []
    pos = 0
    for m in re.finditer(r"\{([^{}]*)\}", pattern):
        lit = pattern[pos:m.start()]
        if "{" in lit or "}" in lit:
            raise UsageError(f"--param {pattern!r}: unbalanced brace", hint="e.g. --param 'win{window}_d{delay}.tr'")
        name = m.group(1)
        if not _NAME.match(name):
            raise UsageError(f"--param {pattern!r}: {{{name}}} is not a parameter name (letters, digits, _)")
        if name in names:
            raise UsageError(f"--param {pattern!r}: {{{name}}} appears twice")
        names.append(name)
        out.append(re.escape(lit) + f"(?P<{name}>[^/]+?)")
        pos = m.end()
    tail = pattern[pos:]
    if "{" in tail or "}" in tail:
        raise UsageError(f"--param {pattern!r}: unbalanced brace", hint="e.g. --param 'win{window}_d{delay}.tr'")
    if not names:
        raise UsageError(f"--param {pattern!r} has no {{name}} placeholder", hint="e.g. --param 'win{window}.tr'")
    return re.compile("".join(out) + re.escape(tail)), names


def params_from_pattern(path: str, regex: re.Pattern[str], pattern: str) -> dict[str, Any]:
    """Match the last components of ``path`` against the pattern.

    Raises:
        UsageError: when the path does not match.
    """
    depth = pattern.count("/") + 1
    parts = Path(path).as_posix().rstrip("/").split("/")
    tail = "/".join(parts[-depth:])
    m = regex.fullmatch(tail)
    if m is None:
        raise UsageError(
            f"{path!r} does not match --param {pattern!r} (compared with {tail!r})",
            hint="the pattern describes the end of each path, e.g. 'win{window}' for run dirs win8/ win16/",
        )
    return {k: _value(v) for k, v in m.groupdict().items()}


def read_manifest(path: str | Path) -> dict[str, dict[str, Any]]:
    """Map each run path (resolved against the manifest's folder) to its parameters.

    Raises:
        UsageError: unreadable file, no path column, short rows, repeated paths.
    """
    p = Path(path)
    try:
        if p.stat().st_size > _MAX_SIDE_FILE:
            raise UsageError("manifest is larger than 1 MiB", path=str(p))
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the manifest: {exc}", path=str(p)) from None
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise UsageError(f"manifest is not valid CSV: {exc}", path=str(p)) from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise UsageError("manifest is empty", path=str(p), hint="first line: path,PARAM1,PARAM2,...")
    header = [h.strip() for h in rows[0]]
    lower = [h.lower() for h in header]
    col = next((lower.index(n) for n in ("path", "file") if n in lower), None)
    if col is None:
        raise UsageError("manifest has no 'path' (or 'file') column", path=str(p), line=1,
                         hint="first line: path,PARAM1,PARAM2,...")
    names = [h for i, h in enumerate(header) if i != col]
    if any(not n for n in names) or len(set(names)) < len(names):
        raise UsageError("manifest has an empty or repeated column name", path=str(p), line=1)
    out: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise UsageError(f"row has {len(row)} fields, the header {len(header)}", path=str(p), line=n)
        run = row[col].strip()
        if not run:
            raise UsageError("row has an empty path", path=str(p), line=n)
        key = str((p.parent / run).resolve())
        if key in out:
            raise UsageError(f"{run!r} is listed twice", path=str(p), line=n)
        out[key] = {h: _value(v) for h, v, i in zip(header, row, range(len(row)), strict=True) if i != col}
    if not out:
        raise UsageError("manifest lists no runs", path=str(p), hint="one line per run after the header")
    return out


def params_from_run_json(path: str | Path) -> dict[str, Any]:
    """Scalar values of ``run.json`` in a run directory (or beside a file); {} when absent or unusable."""
    p = Path(path)
    f = (p if p.is_dir() else p.parent) / "run.json"
    try:
        if not f.is_file() or f.stat().st_size > _MAX_SIDE_FILE:
            return {}
        doc = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    if not isinstance(doc, dict):
        return {}
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)) and math.isfinite(v) or isinstance(v, str) and len(v) <= 64:
            out[str(k)] = v
    return out


def _choose_x(runs: list[SweepRun], names: list[str], first: list[str], x: str | None) -> str:
    if x is not None:
        if x not in names:
            raise UsageError(f"--x {x!r} is not a parameter of these runs", hint=f"parameters: {', '.join(names)}")
        return x
    if first:
        return first[0]
    varying = [n for n in names if len({json.dumps(r.params.get(n)) for r in runs}) > 1]
    for n in PREFERRED_X:
        if n in varying:
            return n
    numeric = [n for n in varying if all(isinstance(r.params.get(n), (int, float)) for r in runs)]
    if numeric:
        return numeric[0]
    raise UsageError("cannot tell which parameter the runs vary",
                     hint="give --param 'win{window}', --manifest runs.csv or --x NAME")


def sweep(
    paths: Sequence[str | Path] = (),
    *,
    param: str | None = None,
    manifest: str | Path | None = None,
    x: str | None = None,
    by: str | None = None,
    fmt: str | None = None,
    strict: bool = False,
    limits: Any = None,
    y: Sequence[str] = (),
) -> SweepResult:
    """Read every run, attach its parameters and metrics.

    Args:
        paths: Runs (files or run directories); with a manifest, they select from it (default: all).
        param: Path pattern with ``{name}`` placeholders.
        manifest: CSV mapping paths to parameter values.
        x: Parameter for the x axis.
        by: Parameter naming the lines (default ``variant`` when there is one).
        fmt: Force a reader.
        strict: Turn reader warnings into errors.
        limits: Resource limits.
        y: Tool-reported metrics to chart and tabulate, ``NAME[:STAT]`` (e.g. ``download_response_time``).

    Returns:
        The sweep, runs sorted by (group, x); metrics no run has are left out, and runs without
        packets (OPNET, NetSim tables) get their tool-reported metrics instead.

    Raises:
        UsageError: bad pattern, manifest or parameter names, or no runs.
        TracekitError: when a run cannot be read.
    """
    regex, first = compile_pattern(param) if param else (None, [])
    table = read_manifest(manifest) if manifest else None
    if table is not None:
        header_order = list(next(iter(table.values()), {}))
        first = first or header_order
        if paths:
            chosen = [str(p) for p in paths]
            missing = [p for p in chosen if str(Path(p).resolve()) not in table]
            if missing:
                raise UsageError(f"{missing[0]!r} is not in the manifest", path=str(manifest))
        else:
            chosen = list(table)
    else:
        chosen = [str(p) for p in paths]
    if not chosen:
        raise UsageError("no runs given", hint="tracekit sweep RUN... --param 'win{window}' -o sweep.html")
    runs = []
    tool_keys: dict[str, None] = {}
    for p in chosen:
        params = params_from_run_json(p)
        if table is not None:
            params.update(table[str(Path(p).resolve())])
        if regex is not None and param is not None:
            params.update(params_from_pattern(p, regex, param))
        analysis = load(p, fmt=fmt, strict=strict, limits=limits)
        main, metrics = run_metrics(analysis)
        metrics.update({k: v for k, v in tool_values(analysis, y).items() if not k.startswith("_unit.")})
        if main is None:  # nothing from packets: the tool's own metrics, by name (mean)
            extra = {k: v for k, v in _tool_means(analysis).items() if k not in metrics}
            tool_keys.update(dict.fromkeys(extra))
            metrics.update(extra)
        runs.append(SweepRun(p, params, metrics, main))
    names = list(dict.fromkeys(k for r in runs for k in r.params))
    x_name = _choose_x(runs, names, first, x)
    if by is not None and by not in names:
        raise UsageError(f"--by {by!r} is not a parameter of these runs", hint=f"parameters: {', '.join(names)}")
    by_name = by if by is not None else ("variant" if "variant" in names and x_name != "variant" else None)

    def order(r: SweepRun) -> tuple[str, int, Any, str]:
        v = r.params.get(x_name)
        num = isinstance(v, (int, float))
        return (str(r.params.get(by_name, "")) if by_name else "", 0 if num else 1, v if num else 0, str(v))

    shown = [m for m in METRICS if m != "flows" and any(r.metrics.get(m) is not None for r in runs)]
    tools = [k for k in tool_keys if k not in y]
    columns = shown + list(y) + tools + ["flows"]
    return SweepResult(sorted(runs, key=order), x_name, by_name, names, columns, list(y) + tools)


def _tool_means(analysis: Any) -> dict[str, Any]:
    """Each tool-reported metric of a run without packets, by its metric name (mean over its series)."""
    from tracekit.reports.toolmetrics import summarise, value

    ms = summarise(analysis.trace)
    return {m.metric: value(ms, m.metric, "mean") for m in ms if re.fullmatch(r"[a-z][a-z0-9_]{0,40}", m.metric)}


def figures(result: SweepResult) -> list[Figure]:
    """Metric-against-parameter charts (one per charted metric), or why each is missing."""
    xs = [r.params.get(result.x) for r in result.runs]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs)
    out = []
    charted = [(y, charts.safe_label(y), None) for y in result.y] + [c for c in CHARTED if c[0] in result.metrics]
    for key, title, fmt in charted:
        ys = [r.metrics.get(key) for r in result.runs]
        df = pl.DataFrame({
            "x": ([float(v) for v in xs if isinstance(v, (int, float))] if numeric
                  else [charts.safe_label(v) for v in xs]),
            "y": [float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None for v in ys],
            "group": [str(r.params.get(result.by, "")) if result.by else "" for r in result.runs],
            "path": [r.path for r in result.runs],
        }, schema={"x": pl.Float64 if numeric else pl.String, "y": pl.Float64, "group": pl.String, "path": pl.String})
        fig_key = "sweep-" + re.sub(r"[^A-Za-z0-9-]", "-", key)
        name = f"{title} vs {charts.safe_label(result.x)}"
        try:
            chart = charts.sweep_chart(df, x_title=result.x, y_title=title, title=name,
                                       name=fig_key.replace("-", "_"), numeric_x=numeric, y_format=fmt)
            out.append(Figure(key, fig_key, name, chart=chart))
        except charts.NoData as why:
            out.append(Figure(key, fig_key, name, reason=str(why)))
    return out


def render(result: SweepResult) -> str:
    """The sweep page: charts of each metric against the parameter, and the table of runs."""
    from tracekit.reports import html as H

    # x, the line parameter, and up to three more that vary (constant ones are in the CSV/JSON)
    varying = [n for n in result.params if n not in (result.x, result.by)
               and len({json.dumps(r.params.get(n), default=str) for r in result.runs}) > 1]
    shown = [result.x] + ([result.by] if result.by else []) + varying[:3]
    parts = [f"<h1>tracekit sweep — {H.esc(charts.safe_label(result.x))}</h1>"]
    specs: dict[str, dict[str, Any]] = {}
    parts.extend(H.figures_html(list(figures(result)), specs))
    titles = dict(H.FLOW_COLUMNS + H.MORE_FLOW_COLUMNS) | {
        "flows": "data directions", "cwnd_reductions": "cwnd reductions in CA", "delivered_bytes": "delivered bytes",
        "loss_events": "loss events"}
    head = ("<th class=\"t\">run</th>" + "".join(f'<th data-param="{H.esc(n)}">{H.esc(charts.safe_label(n))}</th>'
                                               for n in shown)
            + "".join(f"<th>{H.esc(titles.get(m, m))}</th>" for m in result.metrics))
    rows = []
    for r in result.runs:
        cells = [H.cell(charts.safe_label(r.path), "path")]
        cells += [H.cell(r.params.get(n), "").replace("<td", f'<td data-param="{H.esc(n)}"', 1) for n in shown]
        cells += [H.cell(r.metrics.get(m), m) for m in result.metrics]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    parts.append(f'<h2>Runs</h2><table id="sweep"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return H.page(f"tracekit sweep — {charts.safe_label(result.x)}", "\n".join(parts), specs)


def write(result: SweepResult, path: Path | None = None, *, csv_path: Path | None = None,
          json_path: Path | None = None) -> None:
    """Write the page and/or the CSV and JSON tables, each atomically.

    Raises:
        OutputError: when an output cannot be written.
    """
    from tracekit._files import write_atomic
    from tracekit.reports.html import write_text

    if path is not None:
        write_text(Path(path), render(result))
    for out, text in ((csv_path, result.to_csv), (json_path, result.to_json)):
        if out is None:
            continue
        try:
            write_atomic(Path(out), text().encode("utf-8"))
        except OSError as exc:
            raise OutputError(f"cannot write: {exc.strerror or exc}", path=str(out),
                              hint="choose a writable location") from None
