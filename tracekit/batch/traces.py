"""Batch analysis: a report per trace, an index page, ``summary.json`` / ``summary.csv``.

Each trace is read, analysed and rendered in a worker (:mod:`tracekit.batch.executors`):
a corrupt file, a hang past the timeout or a worker over its memory cap is
recorded as failed with its reason and the batch goes on. The parent process
alone writes files, all inside the output folder. Re-running into the same
folder skips traces whose content (sha256) and tracekit version are unchanged
(``force=True`` redoes them). Ctrl-C writes what finished, then
``KeyboardInterrupt`` propagates (the CLI exits 130).

Layout of the output folder::

    OUT/index.html           one row per trace, links to the reports
    OUT/summary.json         schema_version 1; "run" holds the volatile fields (times, executor)
    OUT/summary.csv          the same rows, spreadsheet-safe
    OUT/reports/NAME.html    one self-contained report per trace
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracekit import __version__, _jsontext, numfmt
from tracekit._files import content_hash, csv_text, safe_join, write_output
from tracekit.batch.executors import Outcome, Task, make_executor
from tracekit.errors import OutputError, UsageError
from tracekit.limits import DEFAULT, Limits
from tracekit.pipeline import link_rate, load
from tracekit.reports.html import esc, page, render_report

SCHEMA_VERSION = 1
#: Fields of an entry that change from run to run (ignored when comparing summaries).
VOLATILE = ("elapsed_s", "cached")
CSV_COLUMNS = ("path", "status", "format", "tool", "packets", "flows", "goodput_bps", "retrans_packets",
               "warning_count", "warnings", "report", "error", "sha256")


def _version() -> str:
    return __version__


# ---- inputs ---------------------------------------------------------------------------------------------------


def expand(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[dict[str, Any]]]:
    """The traces named by the arguments, in order, and the entries refused up front.

    A file is one trace. A directory is a folder of traces: each file in it is a
    trace and each subdirectory a run directory (its files read together as one
    trace). Hidden names are skipped; links pointing out of the folder are refused.
    """
    out: list[Path] = []
    refused: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(p: Path) -> None:
        key = os.fspath(p)
        if key not in seen:
            seen.add(key)
            out.append(p)

    for arg in paths:
        p = Path(arg)
        if not p.exists():
            raise UsageError("no such file or directory", path=str(p))
        if p.is_file():
            add(p)
            continue
        root = p.resolve()
        for child in sorted(p.iterdir()):
            if child.name.startswith("."):
                continue
            if not child.resolve().is_relative_to(root):
                refused.append(_failed(child, {"kind": "error", "message": "a link pointing out of the folder"}))
                continue
            if child.is_file() or child.is_dir():
                add(child)
    return out, refused


def report_name(path: Path) -> str:
    """A safe, stable file name for a trace's report: cleaned stem + 8 hex digits of the path."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", path.name).strip("._-")[:48] or "trace"
    digest = hashlib.sha256(os.fspath(path).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{stem}-{digest}.html"


# ---- the task (runs in a worker) ----------------------------------------------------------------------------


def process_trace(path: str, limits: Limits = DEFAULT, strict: bool = False) -> dict[str, Any]:
    """Read, analyse and render one trace; return its summary row and the report's HTML.

    Raises:
        TracekitError: when the trace cannot be read (the executor records it as failed).
    """
    analysis = load(path, strict=strict, limits=limits)
    trace = analysis.trace
    flows = analysis.flows
    row: dict[str, Any] = {
        "format": trace.meta.get("format"),
        "tool": trace.meta.get("tool"),
        "packets": trace.packets.height,
        "flows": flows.height,
        "goodput_bps": None,
        "retrans_packets": None,
        "warnings": sorted({str(w.get("code")) for w in trace.warnings}),
        "warning_count": int(sum(int(w.get("count") or 1) for w in trace.warnings)),
    }
    if flows.height:
        size = "unique_bytes" if "unique_bytes" in flows.columns else flows.columns[0]
        top = flows.sort(size, descending=True, nulls_last=True).row(0, named=True)
        g = top.get("goodput_bps")
        row["goodput_bps"] = float(g) if isinstance(g, (int, float)) and g == g else None
        if "retrans_packets" in flows.columns:
            row["retrans_packets"] = int(flows["retrans_packets"].fill_null(0).sum())
    html, _ = render_report([analysis], link_rates=[link_rate(analysis)])
    return {"row": row, "html": html}


# ---- the runner ---------------------------------------------------------------------------------------------


def worker_limits(limits: Limits, max_memory: int | None) -> Limits:
    """Limits for a worker with an address-space cap: inputs above half the cap are refused.

    A worker could not analyse a file that large anyway (reading and analysing need several
    times the file's size), so it is refused up front with a clear limit error.
    """
    if not max_memory:
        return limits
    return limits.replace(max_input_bytes=min(limits.max_input_bytes, max(64 << 20, max_memory // 2)))


def _failed(path: Path, error: dict[str, Any]) -> dict[str, Any]:
    return {"path": os.fspath(path), "status": "failed", "error": error}


#: What a failed write of the batch's outputs suggests.
WRITABLE = "choose a writable folder (Docker: -u $(id -u):$(id -g))"


def write_json(path: Path, doc: Any) -> None:
    """Strict JSON (no NaN), written atomically."""
    write_output(path, _jsontext.dumps(doc, ensure_ascii=False, default=None) + "\n")  # json.dumps(indent=2)


def write_file(path: Path, text: str) -> None:
    """Text written atomically, errors as OutputError."""
    write_output(path, text, hint=WRITABLE)


def _previous(out: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        return {e["path"]: e for e in doc.get("traces", []) if isinstance(e, dict) and "path" in e}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


@dataclass
class BatchResult:
    """What a batch produced."""

    out: Path
    entries: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> int:
        """Entries that failed."""
        return sum(e["status"] == "failed" for e in self.entries)

    @property
    def exit_code(self) -> int:
        """0 all fine · 4 some traces failed · 130 interrupted."""
        return 130 if self.interrupted else (4 if self.failed else 0)


def _progress(enabled: bool, total: int) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, disable=not enabled, transient=False)


def _plan(inputs: list[Path], outdir: Path, previous: dict[str, dict[str, Any]],
          entries: dict[str, dict[str, Any]], *, version: str, limits: Limits, strict: bool) -> list[Task]:
    """The tasks to run: every input but those whose report is current (same content and version).

    Fills ``entries`` with a cached entry per reused report and a pending one per task.
    """
    tasks: list[Task] = []
    for p in inputs:
        key = os.fspath(p)
        digest = content_hash(p)
        name = report_name(p)
        old = previous.get(key)
        if (old and old.get("status") == "ok" and old.get("sha256") == digest
                and old.get("tracekit_version") == version and (outdir / "reports" / name).is_file()):
            entries[key] = {**old, "cached": True}
            continue
        entries[key] = {"path": key, "status": "pending", "sha256": digest, "tracekit_version": version,
                        "report": f"reports/{name}"}
        tasks.append(Task(key, "tracekit.batch.traces:process_trace", (key, limits, strict)))
    return tasks


def run_batch(paths: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str], *, jobs: int | None = None,
              timeout: float | None = None, max_memory: int | None = None, scheduler: str | None = None,
              force: bool = False, limits: Limits = DEFAULT, strict: bool = False, progress: bool = False,
              initializer: str | None = None) -> BatchResult:
    """Analyse every trace into ``out`` (see the module docstring for the layout).

    Args:
        paths: Files and folders of traces.
        out: Output folder (created).
        jobs: Local worker processes (default: the cores available).
        timeout: Seconds per trace (default ``limits.timeout_s``); the worker is killed past it.
        max_memory: Address space per worker in bytes (default ``limits.max_memory_bytes``).
        scheduler: ``tcp://host:port`` of a dask scheduler to run on instead.
        force: Redo traces whose content and tracekit version are unchanged.
        limits: Reader limits.
        strict: Turn reader warnings into failures.
        progress: Show a progress bar on stderr.
        initializer: ``"module:function"`` run in each local worker (tests).

    Returns:
        The entries, in input order (failed ones with ``error``).

    Raises:
        UsageError: a missing input. OutputError: the folder cannot be written.
        KeyboardInterrupt: after writing what finished.
    """
    outdir = Path(out)
    try:
        (outdir / "reports").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder: {exc.strerror or exc}", path=str(outdir),
                          hint="choose a writable folder with -o") from None
    inputs, refused = expand(paths)
    version = _version()
    previous = {} if force else _previous(outdir)
    entries: dict[str, dict[str, Any]] = {e["path"]: e for e in refused}
    order = [e["path"] for e in refused] + [os.fspath(p) for p in inputs]
    started = time.time()
    timeout = limits.timeout_s if timeout is None else timeout
    max_memory = limits.max_memory_bytes if max_memory is None else max_memory
    limits = worker_limits(limits, max_memory)
    tasks = _plan(inputs, outdir, previous, entries, version=version, limits=limits, strict=strict)
    result = BatchResult(outdir)
    executor = make_executor(jobs, scheduler=scheduler, timeout=timeout, max_memory=max_memory,
                             initializer=initializer)

    def done(o: Outcome) -> None:
        e = entries[o.key]
        e["elapsed_s"] = round(o.elapsed_s, 3)
        e["cached"] = False
        if o.ok:
            write_file(safe_join(outdir, e["report"]), o.value["html"])
            e.update(o.value["row"], status="ok", error=None)
        else:
            e.update(status="failed", error=o.error, report=None)
        bar.advance(task_id)

    with _progress(progress, len(tasks)) as bar:
        task_id = bar.add_task("analysing", total=len(tasks))
        try:
            executor.run(tasks, done)
        except KeyboardInterrupt:
            result.interrupted = True
        finally:
            if scheduler:
                executor.shutdown()
    result.entries = [entries[k] for k in order if entries[k]["status"] != "pending"]
    write_outputs(result, executor.describe(), started, pending=sum(e["status"] == "pending" for e in entries.values()))
    if result.interrupted:
        raise KeyboardInterrupt
    return result


def write_outputs(result: BatchResult, executor: str, started: float, pending: int = 0) -> None:
    """Write summary.json, summary.csv and index.html for the finished entries."""
    out = result.out
    counts = {s: sum(e["status"] == s for e in result.entries) for s in ("ok", "failed")}
    counts["cached"] = sum(bool(e.get("cached")) for e in result.entries)
    counts["not_run"] = pending
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tracekit_version": _version(),
        "interrupted": result.interrupted,
        "counts": counts,
        "traces": result.entries,
        "run": {"executor": executor, "started": round(started, 3), "elapsed_s": round(time.time() - started, 3)},
    }
    write_json(out / "summary.json", doc)
    write_file(out / "summary.csv", csv_text(result.entries, CSV_COLUMNS))
    write_file(out / "index.html", index_page(result.entries, counts, result.interrupted))


def index_page(entries: list[dict[str, Any]], counts: dict[str, int], interrupted: bool) -> str:
    """The index: one row per trace with a link to its report or the reason it failed."""
    rows = []
    for e in entries:
        if e["status"] == "ok" and e.get("report"):
            link = f'<a href="{esc(e["report"])}">report</a>'
            why = ""
        else:
            link = ""
            err = e.get("error") or {}
            why = f'<span class="warn">{esc(err.get("kind", "failed"))}: {esc(err.get("message", ""))}</span>'
        warn = ", ".join(e.get("warnings") or [])
        rows.append(
            f'<tr data-status="{esc(e["status"])}"><td class="t">{esc(e["path"])}</td>'
            f'<td class="t">{esc(e.get("format") or "")}</td><td>{esc(numfmt.cell(e.get("flows"), "flows"))}</td>'
            f'<td>{esc(numfmt.cell(e.get("goodput_bps"), "goodput_bps"))}</td>'
            f'<td>{esc(numfmt.cell(e.get("retrans_packets"), "retrans_packets"))}</td>'
            f'<td class="t">{esc(warn)}</td><td class="t">{link}{why}</td></tr>')
    head = "".join(f'<th{" class=t" if h in ("trace", "format", "warnings", "report") else ""}>{h}</th>'
                   for h in ("trace", "format", "flows", "goodput", "retransmissions", "warnings", "report"))
    note = "<p class=\"warn\">Interrupted: only the traces that finished are listed.</p>" if interrupted else ""
    body = (f"<h1>tracekit batch</h1>{note}<p>{counts['ok']} analysed ({counts['cached']} unchanged since the "
            f"last run), {counts['failed']} failed.</p>"
            f"<table id=\"batch\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return page("tracekit batch", body, {})
