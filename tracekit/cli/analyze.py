"""The ``tracekit`` command: a thin click layer over the library.

Each command parses its arguments, calls the library, and prints. A
:class:`~tracekit.errors.TracekitError` becomes one line on stderr and exit 1
(``--debug`` shows the traceback). Heavy libraries (polars, altair) are
imported inside the commands so that ``tracekit --help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from tracekit.errors import TracekitError

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """Runs commands with TracekitError turned into one clear line and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except TracekitError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"tracekit: error: {exc}", err=True)
            ctx.exit(1)


def _limits(config: str | None) -> Any:
    """Limits from --config (or ./tracekit.toml), then any --limit NAME=VALUE overrides."""
    from tracekit.limits import DEFAULT, Limits

    if config:
        limits = Limits.from_toml(config)
    elif Path("tracekit.toml").is_file():
        limits = Limits.from_toml("tracekit.toml")
    else:
        limits = DEFAULT
    ctx = click.get_current_context(silent=True)
    overrides = ctx.meta.get("tracekit.limits", {}) if ctx else {}
    return limits.replace(**overrides) if overrides else limits


def _store_limits(ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> None:
    from tracekit.errors import UsageError

    out: dict[str, float | int] = {}
    for v in values:
        name, sep, num = v.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = int(num) if num.strip().lstrip("-").isdigit() else float(num)
        except ValueError:
            raise UsageError(f"--limit takes NAME=NUMBER, got {v!r}", hint="see docs/limits.md") from None
    ctx.meta.setdefault("tracekit.limits", {}).update(out)


def guard_output(path: str | Path | None, force: bool) -> None:
    """Refuse to overwrite an existing output file unless --force was given.

    Raises:
        OutputError: when ``path`` exists and ``force`` is false.
    """
    from tracekit.errors import OutputError

    if path is not None and Path(path).exists() and not force:
        raise OutputError("output exists", path=str(path), hint="pass --force to overwrite it")


def read_options(f: F) -> F:
    """The options every command that reads traces shares."""
    f = click.option(
        "--format", "fmt", metavar="NAME", help="Reader to use instead of detecting it (see `tracekit formats`)."
    )(f)
    f = click.option("--strict", is_flag=True, help="Turn warnings (truncated files, bad lines) into errors.")(f)
    f = click.option("--config", type=click.Path(dir_okay=False), help="TOML file with a [limits] table.")(f)
    f = click.option("--limit", "limit_overrides", multiple=True, metavar="NAME=VALUE", expose_value=False,
                     callback=_store_limits, is_eager=True,
                     help="Override one limit (docs/limits.md), e.g. --limit max_packets=1e8. Repeatable.")(f)
    return f


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tracekit")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Analyse TCP in packet captures and simulator traces.

    Reads pcap/pcapng captures, ns-2, ns-3, OPNET, NetSim and Flent files into
    one schema and reports flows, congestion window, RTT, retransmissions,
    stalls, throughput and goodput.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


@main.command()
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
    import tracekit
    from tracekit.reports import answers, text

    limits = _limits(config)
    reported = 0
    guard_output(report, force)
    options: dict[str, Any] = {}
    if maps:
        from tracekit.parsers.opnet import parse_map_option

        options["mapping"] = parse_map_option(list(maps))
    docs: list[Any] = []
    analyses = []
    console = None
    if not as_json:  # rich only for the table (44 ms of imports a JSON run does not need)
        from rich.console import Console

        # rich wraps at 80 columns when not on a terminal; a flows table needs more
        console = Console(width=None if sys.stdout.isatty() else 160)
    for i, f in enumerate(files):
        trace = tracekit.read(f, fmt, strict=strict, limits=limits, **options)
        if kernel_logs:
            from tracekit.kernel import attach

            trace = attach(trace, [tracekit.read(k, strict=strict, limits=limits) for k in kernel_logs])
        analysis = tracekit.analyze(trace, rto_floor_s=rto_floor)
        if export_dir:
            # one folder per input; the index keeps names apart without building paths from file content
            out = Path(export_dir) if len(files) == 1 else Path(export_dir) / f"{i:03d}"
            text.export(analysis, out)
        if report:
            analyses.append(analysis)
        link = answers.link_rate_for(analysis, link_rate)
        reported += _answer(analysis, f, link, console, as_json=as_json, explain=explain, docs=docs)
    if report:
        from tracekit.reports.html import write_report

        write_report(analyses, Path(report), link_rate=link_rate)
    if not reported:
        from tracekit.errors import NothingToAnalyzeError

        raise NothingToAnalyzeError("nothing to analyze: no TCP connection carried data and no tool-reported series",
                                    path=", ".join(files), hint="see `tracekit formats` for what each reader takes")
    if as_json:
        click.echo(text.dumps(docs[0] if len(docs) == 1 else docs))


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
        click.echo(f"tracekit: {path}: no TCP connection carried data ({why})", err=True)
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


@main.command()
def formats() -> None:
    """List the readers and how each is detected from a file's content."""
    from tracekit.parsers import available

    for r in available():
        click.echo(f"{r.name:14s} {r.description}")
        click.echo(f"{'':14s}   detected by: {r.detect}")


def run() -> None:
    """Entry point that also maps Ctrl-C to exit 130."""
    try:
        main(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("tracekit: interrupted", err=True)
        sys.exit(130)

# Commands defined in their own modules (each imports only click at module level).
from tracekit.grade_commands import batch, check, grade  # noqa: E402
from tracekit.reports.commands import compare, report, sweep  # noqa: E402

for _cmd in (report, compare, sweep, grade, check, batch):
    main.add_command(_cmd)
