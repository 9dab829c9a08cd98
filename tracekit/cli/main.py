"""The ``tracekit`` command: a thin click group over the library.

Each command parses its arguments, calls the library, and prints. A
:class:`~tracekit.errors.TracekitError` becomes one line on stderr and exit 1
(``--debug`` shows the traceback). The commands live one module per group
(:mod:`~tracekit.cli.analyze`, :mod:`~tracekit.cli.reports`, :mod:`~tracekit.cli.grading`);
each imports only click at module level and its heavy libraries (polars, altair)
inside the command, so that ``tracekit --help`` stays fast.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from tracekit.cli.analyze import analyze, formats
from tracekit.cli.grading import batch, check, grade
from tracekit.cli.reports import compare, report, sweep
from tracekit.errors import TracekitError


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


for _cmd in (analyze, formats, report, compare, sweep, grade, check, batch):
    main.add_command(_cmd)


def run() -> None:
    """Entry point that also maps Ctrl-C to exit 130."""
    try:
        main(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("tracekit: interrupted", err=True)
        sys.exit(130)
