"""The ``report``, ``compare`` and ``sweep`` commands: parse options, call the library, write files.

Only click is imported at module level
(``tracekit --help`` must stay fast);
the work is done by :mod:`tracekit.reports.html`, :mod:`~tracekit.reports.compare`
and :mod:`~tracekit.reports.sweep`. Errors are :mod:`tracekit.errors` classes,
which the CLI group prints as one line (exit 1).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from tracekit.cli.options import guard_output, load_limits, read_options

F = TypeVar("F", bound=Callable[..., Any])

def _read_options(f: F) -> F:
    f = click.option("--force", is_flag=True, help="Overwrite existing output files.")(f)
    return read_options(f)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write (one self-contained page, works offline).")
@click.option("--png", "png_dir", type=click.Path(file_okay=False), help="Also write every chart as PNG into DIR.")
@click.option("--svg", "svg_dir", type=click.Path(file_okay=False), help="Also write every chart as SVG into DIR.")
@click.option("--max-flows", default=6, show_default=True, type=click.IntRange(1, 100),
              help="Connection directions charted one by one per trace (largest first).")
@_read_options
def report(files: tuple[str, ...], output: str, png_dir: str | None, svg_dir: str | None, max_flows: int,
           force: bool, fmt: str | None, strict: bool, config: str | None) -> None:
    """Write an HTML report of FILE... (time–sequence, cwnd, throughput, RTT, queue, fairness charts).

    \b
    Example:
        tracekit report samples/linux/bulk_lossy.pcap -o report.html
        tracekit report samples/ns2/lab_reno/ -o reno.html --png charts/
    """
    from tracekit import pipeline
    from tracekit.cli.warm import warm

    guard_output(force, output)
    limits = load_limits(config)
    warm()  # altair imports on the other core while the captures are read (tracekit.cli.warm)
    analyses = [pipeline.load(f, format=fmt, strict=strict, limits=limits) for f in files]
    from tracekit.reports.html import write_report

    write_report(analyses, Path(output), png_dir=Path(png_dir) if png_dir else None,
                 svg_dir=Path(svg_dir) if svg_dir else None, max_flows=max_flows,
                 link_rates=[pipeline.link_rate(a) for a in analyses])
    click.echo(f"wrote {output}", err=True)


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True))
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write.")
@click.option("--label", "labels", multiple=True, metavar="NAME=PATH",
              help="Name a run in the page (PATH as given; repeatable). A PATH not among FILES is added.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write the table as JSON.")
@click.option("--y", "y", multiple=True, metavar="METRIC[:STAT]",
              help="Add a tool-reported metric (e.g. download_response_time, throughput:max). Repeatable.")
@_read_options
def compare(files: tuple[str, ...], output: str, labels: tuple[str, ...], json_path: str | None, y: tuple[str, ...],
            force: bool, fmt: str | None, strict: bool, config: str | None) -> None:
    """Compare runs from any formats on common units; the first run is the reference.

    \b
    Example:
        tracekit compare samples/ns2/lab_reno samples/linux/bulk_lossy.pcap -o compare.html
        tracekit compare a.pcap b.tr --label linux=a.pcap --label ns2=b.tr -o compare.html
    """
    from tracekit import pipeline
    from tracekit._files import write_output
    from tracekit.errors import UsageError
    from tracekit.reports import compare as cmp

    guard_output(force, output, json_path)
    named = cmp.parse_labels(labels)
    paths = list(files)
    for _, p in named:
        if p not in paths:
            if not Path(p).exists():
                raise UsageError(f"--label names a path that does not exist: {p!r}")
            paths.append(p)
    if len(paths) < 2:
        raise UsageError("compare needs at least two runs", hint="tracekit compare A B [C ...] -o compare.html")
    limits = load_limits(config)
    loaded = [(p, pipeline.load(p, format=fmt, strict=strict, limits=limits)) for p in paths]
    result = cmp.compare(loaded, {p: n for n, p in named} or None, y=list(y))
    cmp.write(result, Path(output))
    if json_path:
        from tracekit.reports.text import dumps

        write_output(Path(json_path), dumps(result.to_dict()))
    click.echo(f"wrote {output}", err=True)


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), help="HTML file to write.")
@click.option("--param", "param", metavar="PATTERN",
              help="Read parameters from the paths, e.g. 'win{window}_d{delay}.tr' (matches the path's end).")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False),
              help="CSV with a 'path' column and one column per parameter.")
@click.option("--x", "x", metavar="NAME", help="Parameter on the x axis (default: the first one).")
@click.option("--by", "by", metavar="NAME", help="Parameter naming the lines (default: 'variant' if present).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="Also write the table as CSV ('-': print it).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write the table as JSON.")
@click.option("--y", "y", multiple=True, metavar="METRIC[:STAT]",
              help="Also chart a tool-reported metric (e.g. download_response_time, cwnd:max). Repeatable.")
@_read_options
def sweep(files: tuple[str, ...], output: str | None, param: str | None, manifest: str | None, x: str | None,
          by: str | None, csv_path: str | None, json_path: str | None, y: tuple[str, ...],
          force: bool, fmt: str | None, strict: bool, config: str | None) -> None:
    """Chart goodput and download time against a parameter over many runs (per TCP variant).

    Parameters come from --param, --manifest, or run.json in each run directory.

    \b
    Example:
        tracekit sweep samples/ns2/sweep/win* --param 'win{window_kb}' -o sweep.html --csv sweep.csv
        tracekit sweep --manifest runs.csv -o sweep.html
    """
    from tracekit import pipeline
    from tracekit.errors import UsageError
    from tracekit.reports import sweep as sw

    if not (output or csv_path or json_path):
        raise UsageError("nothing to write", hint="give -o sweep.html, --csv FILE or --json FILE")
    if not files and not manifest:
        raise UsageError("no runs given", hint="give run paths, or --manifest runs.csv")
    guard_output(force, output, None if csv_path == "-" else csv_path, json_path)
    got = pipeline.sweep_inputs(list(files), param=param, manifest=manifest, format=fmt, strict=strict,
                                limits=load_limits(config))
    result = sw.sweep(got.runs, first=got.first, x=x, by=by, y=list(y))
    sw.write(result, Path(output) if output else None,
             csv_path=Path(csv_path) if csv_path and csv_path != "-" else None,
             json_path=Path(json_path) if json_path else None)
    if csv_path == "-":
        click.echo(result.to_csv(), nl=False)
    click.echo(f"sweep over {result.x!r}: {len(result.runs)} runs", err=True)
