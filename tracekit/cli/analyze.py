"""The ``analyze`` and ``formats`` commands: read, analyse and print.

Only click is imported at module level; the library is imported inside each
command so that ``tracekit --help`` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from tracekit.cli.options import guard_output, load_limits, read_options


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (an array for several files).")
@click.option("--export", "export_dir", type=click.Path(file_okay=False), help="Write every frame as parquet into DIR.")
@click.option("--report", "report", type=click.Path(dir_okay=False),
              help="Also write one HTML report of all FILEs to this file.")
@click.option("--map", "maps", multiple=True, metavar="PATTERN=METRIC",
              help="OPNET exports: map statistic headers matching PATTERN (glob) to METRIC. Repeatable.")
@click.option("--force", is_flag=True, help="Overwrite an existing --report file.")
@click.option("--rto-floor", "rto_floor", type=click.FloatRange(min=0.0), metavar="SECONDS",
              help="Sender's minimum RTO for telling timeouts (default: by the trace's stack, Linux/ns-2 0.2, ns-3 1).")
@click.option("--kernel", "kernel_logs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="The sender kernel's view beside each FILE: an ss -tin log or nstat snapshots. Repeatable.")
@click.option("--explain", "explain", is_flag=True, help="Also print what happened, in words (docs/explain.md).")
@click.option("--link-rate", "link_rate", metavar="RATE",
              help="Bottleneck rate for goodput comparisons, e.g. 1Mbit/s (default: the run's run.json).")
@read_options
def analyze(files: tuple[str, ...], as_json: bool, export_dir: str | None, report: str | None,
            maps: tuple[str, ...], force: bool, rto_floor: float | None, kernel_logs: tuple[str, ...],
            explain: bool, link_rate: str | None, fmt: str | None, strict: bool, config: str | None) -> None:
    """Per-flow summary of each FILE (a capture, a simulator trace or a run directory).

    \b
    Example:
        tracekit analyze samples/linux/bulk_lossy.pcap
        tracekit analyze run_dir/ --json
        tracekit analyze capture.pcap --kernel ss.log --kernel nstat.log
        tracekit analyze samples/ns2/lab_tahoe --explain
    """
    from tracekit.reports import text

    limits = load_limits(config)
    reported = 0
    guard_output(force, report)
    options: dict[str, Any] = {}
    if maps:
        from tracekit.parsers.opnet import parse_map_option

        options["mapping"] = parse_map_option(list(maps))
    docs: list[Any] = []
    analyses, links = [], []
    console = None
    if not as_json:  # rich only for the table (44 ms of imports a JSON run does not need)
        from rich.console import Console

        # rich wraps at 80 columns when not on a terminal; a flows table needs more
        console = Console(width=None if sys.stdout.isatty() else 160)
    # a plain capture's --json comes from the stream alone (no polars, memory by connection): same document
    streamed = as_json and not (export_dir or report or kernel_logs or maps or fmt or strict or config)
    if report:  # altair imports on the other core while the captures are read (tracekit.cli.warm)
        from tracekit import pipeline  # first: the warm thread starts after the command's heavy imports
        from tracekit.cli.warm import warm

        warm()
    for i, f in enumerate(files):
        if streamed and (got := _streamed(f, link_rate, rto_floor, docs)) is not None:
            reported += got
            continue
        from tracekit import pipeline

        # the summary and the table never read the per-packet flight and rtt frames; --export and --report do
        analysis = pipeline.load(f, format=fmt, strict=strict, limits=limits, kernel=kernel_logs,
                                 rto_floor_s=rto_floor, keep_per_packet=bool(export_dir or report), **options)
        if export_dir:
            # one folder per input; the index keeps names apart without building paths from file content
            out = Path(export_dir) if len(files) == 1 else Path(export_dir) / f"{i:03d}"
            text.export(analysis, out)
        link = pipeline.link_rate(analysis, link_rate)
        if report:
            analyses.append(analysis)
            links.append(link)
        reported += _answer(analysis, f, link, console, as_json=as_json, explain=explain, docs=docs)
    if report:
        from tracekit.reports.html import write_report

        write_report(analyses, Path(report), link_rates=links)
    if not reported:
        from tracekit.errors import NothingToAnalyzeError

        raise NothingToAnalyzeError("nothing to analyze: no TCP connection carried data and no tool-reported series",
                                    path=", ".join(files), hint="see `tracekit formats` for what each reader takes")
    if as_json:
        click.echo(text.dumps(docs[0] if len(docs) == 1 else docs))


def _no_data(path: str, why: str) -> None:
    """Say on stderr that an input had no connection that carried data (and what it had instead)."""
    click.echo(f"tracekit: {path}: no TCP connection carried data ({why})", err=True)


def _streamed(path: str, link_rate: str | None, rto_floor: float | None, docs: list[Any]) -> int | None:
    """``--json`` for one plain pcap/pcapng from the stream (:func:`tracekit.streamed.summary_document`):
    1 when it reported, 0 when the capture has no connection, None when the frames path must read it."""
    from tracekit.streamed import summary_document

    doc = summary_document(path, link_rate=link_rate, rto_floor_s=rto_floor)
    if doc is None:
        return None
    if not doc["flows"]:
        _no_data(path, "nothing to analyze")
        return 0
    docs.append(doc)
    return 1


def _answer(analysis: Any, path: str, link: float | None, console: Any, *, as_json: bool, explain: bool,
            docs: list[Any]) -> int:
    """Print (or collect for --json) one input's answers; 1 when something was reported, else 0.

    An input with neither a data-carrying connection nor a tool-reported series says so on stderr.
    """
    from tracekit.explain import explain as account
    from tracekit.explain import summaries
    from tracekit.reports import answers, text
    from tracekit.reports.toolmetrics import summarise

    metrics = summarise(analysis.trace)
    has_flows = bool(analysis.flows.height)
    if not has_flows:
        why = "tool-reported series only" if metrics else "nothing to analyze"
        _no_data(path, why)
    if not (has_flows or metrics):
        return 0
    if as_json:
        docs.append(text.summary(analysis, link_bps=link))
        return 1
    text.print_table(analysis, console)
    sentences = account(analysis, link_bps=link)
    answers.print_summaries(summaries(analysis, sentences, link_bps=link), console)
    if metrics:
        answers.print_tool_table(metrics, analysis, console)
    if explain:
        answers.print_explain(sentences, console)
    return 1


@click.command()
def formats() -> None:
    """List the readers and how each is detected from a file's content."""
    from tracekit.parsers import available

    for r in available():
        click.echo(f"{r.name:14s} {r.description}")
        click.echo(f"{'':14s}   detected by: {r.detect}")
