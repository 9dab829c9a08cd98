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
    from tracekit.limits import DEFAULT, Limits

    if config:
        return Limits.from_toml(config)
    if Path("tracekit.toml").is_file():
        return Limits.from_toml("tracekit.toml")
    return DEFAULT


def read_options(f: F) -> F:
    """The options every command that reads traces shares."""
    f = click.option("--format", "fmt", metavar="NAME", help="Reader to use instead of detecting it (see `tracekit formats`).")(f)
    f = click.option("--strict", is_flag=True, help="Turn warnings (truncated files, bad lines) into errors.")(f)
    f = click.option("--config", type=click.Path(dir_okay=False), help="TOML file with a [limits] table.")(f)
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
@click.option("--report", "report", type=click.Path(dir_okay=False), help="Also write an HTML report to this file.")
@read_options
def analyze(files: tuple[str, ...], as_json: bool, export_dir: str | None, report: str | None,
            fmt: str | None, strict: bool, config: str | None) -> None:
    """Per-flow summary of each FILE (a capture, a simulator trace or a run directory).

    \b
    Example:
        tracekit analyze samples/linux/bulk_lossy.pcap
        tracekit analyze run_dir/ --json
    """
    from rich.console import Console

    import tracekit
    from tracekit.reports import text

    limits = _limits(config)
    docs = []
    console = Console()
    for i, f in enumerate(files):
        trace = tracekit.read(f, fmt, strict=strict, limits=limits)
        analysis = tracekit.analyze(trace)
        if export_dir:
            out = Path(export_dir) if len(files) == 1 else Path(export_dir) / f"{i:03d}-{Path(f).name}"
            text.export(analysis, out)
        if report:
            from tracekit.reports.html import write_report

            write_report([analysis], Path(report))
        if as_json:
            docs.append(text.summary(analysis))
        else:
            text.print_table(analysis, console)
    if as_json:
        click.echo(text.dumps(docs[0] if len(docs) == 1 else docs))


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
