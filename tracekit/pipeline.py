"""Reading and analysing files: the one place that turns paths into Traces and Analyses.

Everything above this module (reports, grading, batch) works on :class:`~tracekit.analysis.Analysis`
and :class:`~tracekit.trace.Trace` objects; the command line and the batch runners call
:func:`load` (or :func:`read`) here. Beside the traces themselves this module reads the small files
that describe a run: ``run.json`` (its parameters, e.g. the bottleneck rate) and a sweep's
manifest CSV, and it names a sweep's runs from their paths (``--param 'win{window}'``).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracekit import _runinfo
from tracekit._source import NamedBytes
from tracekit.analysis import analyze
from tracekit.errors import UsageError
from tracekit.kernel import attach, combine_run
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers import _NOT_TRACES, sniff
from tracekit.parsers import read as _read

if TYPE_CHECKING:
    from tracekit.analysis import Analysis
    from tracekit.trace import Trace

__all__ = ["NOT_TRACES", "NamedBytes", "SweepInputs", "combine", "compile_pattern", "link_rate", "load",
           "params_from_pattern", "params_from_run_json", "read", "read_manifest", "run_json", "sniff",
           "sweep_inputs"]

#: File suffixes of a run folder that are never traces (scripts, notes, parameters, plots).
NOT_TRACES = _NOT_TRACES
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def read(source: Any, *, format: str | None = None, limits: Limits | None = None, strict: bool = False,
         **options: Any) -> Trace:
    """Read a file, a run directory, bytes or a stream into a Trace (the reader sniffed unless ``format``)."""
    return _read(source, format, limits=limits or DEFAULT, strict=strict, **options)  # type: ignore[no-any-return]


def load(path: str | Path, *, format: str | None = None, limits: Limits | None = None, strict: bool = False,
         kernel: Sequence[str | Path] = (), rto_floor_s: float | None = None, keep_per_packet: bool = True,
         **options: Any) -> Analysis:
    """Read and analyse one input exactly as ``tracekit analyze`` does.

    Args:
        path: A capture, a simulator trace or a run directory.
        format: Reader name; detected from the content when omitted.
        limits: Resource limits (default :data:`tracekit.limits.DEFAULT`).
        strict: Reader warnings become errors.
        kernel: ``ss -tin`` logs or nstat snapshots of the sender, lined up with the capture.
        rto_floor_s: The sender's minimum RTO (default: by the trace's stack).
        keep_per_packet: False: a large trace's ``flight`` and ``rtt`` are made on first access
            (:func:`tracekit.analysis.analyze`), for callers that read only the summary.
        **options: Reader options (e.g. OPNET's ``mapping``).

    Raises:
        TracekitError: when the input cannot be read.
    """
    trace = read(str(path), format=format, limits=limits, strict=strict, **options)
    if kernel:
        trace = attach(trace, [read(str(k), limits=limits, strict=strict) for k in kernel])
    return analyze(trace, rto_floor_s=rto_floor_s, keep_per_packet=keep_per_packet)


def combine(traces: list[Trace], *, path: str, skipped: list[str] | None = None) -> Trace:
    """The traces of one run's files as one Trace (ss/nstat files attached to the capture)."""
    return combine_run(traces, path=path, skipped=skipped)


# ---- run.json: a run's parameters ------------------------------------------------------------------------------


def run_json(path: str | Path) -> dict[str, Any] | None:
    """``run.json`` of a run directory (or beside a file) as a dict; None when absent or unusable."""
    p = Path(path)
    return _runinfo.json_file((p if p.is_dir() else p.parent) / "run.json")


def link_rate(analysis: Analysis, given: str | None = None) -> float | None:
    """The bottleneck rate in bit/s: ``--link-rate`` when given, else the run's ``run.json``
    (:func:`tracekit._runinfo.link_rate`, which the streamed summary also reads).

    Raises:
        UsageError: for a ``--link-rate`` that is not a rate.
    """
    return _runinfo.link_rate(analysis.trace.meta, given)


# ---- a sweep's runs and their parameters ------------------------------------------------------------------------


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
        if p.stat().st_size > _runinfo.MAX_SIDE_FILE:
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
    doc = run_json(path)
    if doc is None:
        return {}
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)) and math.isfinite(v) or isinstance(v, str) and len(v) <= 64:
            out[str(k)] = v
    return out


@dataclass(frozen=True)
class SweepInputs:
    """The runs of a sweep as read: ``(path, parameters, analysis)`` each, and the parameter names
    of the pattern or manifest in their order (the default x axis is the first)."""

    runs: list[tuple[str, dict[str, Any], Analysis]]
    first: list[str]


def sweep_inputs(paths: Sequence[str | Path] = (), *, param: str | None = None, manifest: str | Path | None = None,
                 format: str | None = None, strict: bool = False, limits: Limits | None = None) -> SweepInputs:
    """Read every run of a sweep with its parameters; first match wins per name:

    1. ``param``: a pattern such as ``'win{window}_d{delay}.tr'`` matched against the end of each path;
    2. ``manifest``: a CSV with a ``path`` column, paths relative to it, one column per parameter;
    3. ``run.json`` in a run directory (or beside a file): its scalar values.

    Args:
        paths: Runs (files or run directories); with a manifest, they select from it (default: all).

    Raises:
        UsageError: bad pattern or manifest, or no runs. TracekitError: a run that cannot be read.
    """
    regex, first = compile_pattern(param) if param else (None, [])
    table = read_manifest(manifest) if manifest else None
    if table is not None:
        first = first or list(next(iter(table.values()), {}))
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
    for p in chosen:
        params = params_from_run_json(p)
        if table is not None:
            params.update(table[str(Path(p).resolve())])
        if regex is not None and param is not None:
            params.update(params_from_pattern(p, regex, param))
        runs.append((p, params, load(p, format=format, strict=strict, limits=limits)))
    return SweepInputs(runs, first)
