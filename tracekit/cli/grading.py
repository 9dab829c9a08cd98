"""The ``grade``, ``check`` and ``batch`` commands (registered by :mod:`tracekit.cli.main`).

Only click is imported at module level, so ``tracekit --help`` stays fast; the
library is imported inside each command. Exit codes (docs/grading.md, docs/batch.md):

* ``grade``: 0 every submission graded (whatever its score) · 4 some could not be
  read or timed out (still written, with 0 points and the reason) · 1 a
  TracekitError (bad rubric, unusable reference, unwritable output) · 130 Ctrl-C.
* ``check``: 0 within tolerance · 1 outside it · 2 cannot evaluate (unreadable
  file, metric unavailable, bad rubric or option).
* ``batch``: 0 all analysed · 4 some failed · 1 a TracekitError · 130 Ctrl-C
  (what finished is written first).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from tracekit.cli.options import executor_options, load_limits, parse_size


def _interrupted(ctx: click.Context, what: str) -> None:
    click.echo(f"tracekit: interrupted; {what}", err=True)
    ctx.exit(130)


@click.command()
@click.option("-r", "--reference", "references", multiple=True, type=click.Path(exists=True),
              help="A reference run (file or run directory); repeat for several seeds. "
                   "Default: the rubric's `references`.")
@click.option("-s", "--submissions", type=click.Path(exists=True),
              help="Folder of submissions (file / folder / zip per student), or one zip of them.")
@click.option("--submission", type=click.Path(exists=True),
              help="Grade one submission; results.json goes straight into OUT (Gradescope).")
@click.option("--rubric", required=True, type=click.Path(exists=True, dir_okay=False), help="The rubric TOML file.")
@click.option("-o", "--output", "out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("-q", "--quiet", is_flag=True, help="Print only each submission's total.")
@click.option("--force", is_flag=True, help="Overwrite the grades of an earlier run in OUT.")
@executor_options
@click.pass_context
def grade(ctx: click.Context, references: tuple[str, ...], submissions: str | None, submission: str | None,
          rubric: str, out: str, quiet: bool, force: bool, jobs: int | None, timeout: float | None,
          max_memory: str | None, scheduler: str | None, strict: bool, config: str | None,
          no_progress: bool) -> None:
    """Grade student runs against reference runs with a rubric.

    Writes OUT/<id>/results.json (Gradescope), OUT/<id>/feedback.html, OUT/grades.csv and
    OUT/summary.json, and prints every verdict with the student's number, the reference and
    the tolerance.

    \b
    Example:
        tracekit grade -r ref_seed1/ -r ref_seed2/ -r ref_seed3/ \\
            --submissions submissions/ --rubric rubric.toml -o grades/
    """
    from pathlib import Path

    from tracekit.batch.grading import run_grade
    from tracekit.errors import OutputError, UsageError
    from tracekit.grading.rubric import load_rubric

    if (submissions is None) == (submission is None):
        raise UsageError("give either --submissions DIR|ZIP or --submission PATH")
    if not force and (Path(out) / "summary.json").exists():
        raise OutputError("holds the grades of an earlier run", path=out, hint="pass --force to overwrite them")
    rb = load_rubric(rubric)
    progress = _Progress(not no_progress and not quiet)

    def show(res: dict[str, Any]) -> None:
        progress.advance()
        line = f"{res['id']}: {res['score']:g}/{res['max_score']:g}"
        if res.get("error"):
            line += f"  (not graded: {res['error'].get('message')})"
        codes = sorted({str(w.get("code")) for w in res.get("warnings") or []})
        if codes:
            line += f"  [warnings: {', '.join(codes)}]"
        progress.echo(line)
        if not quiet:
            for v in res["verdicts"]:
                progress.echo(f"  {'✓' if v['status'] == 'passed' else '✗'} {v['item']}: {v['output']}")

    try:
        with progress:
            doc = run_grade(list(references), submissions, rb, out, submission=submission, jobs=jobs,
                            timeout=timeout, max_memory=parse_size(max_memory), scheduler=scheduler,
                            limits=load_limits(config), strict=strict, on_result=show)
    except KeyboardInterrupt:
        _interrupted(ctx, f"the graded submissions are in {out}/summary.json")
    for r in doc["rejected"]:
        click.echo(f"tracekit: ignored {r['member']!r}: {r['reason']}", err=True)
    if doc["counts"]["errors"]:
        click.echo(f"tracekit: {doc['counts']['errors']} submission(s) could not be graded (see summary.json)",
                   err=True)
        ctx.exit(4)


@click.command()
@click.argument("target", type=click.Path(exists=True))
@click.option("--rubric", required=True, type=click.Path(exists=True, dir_okay=False), help="The rubric TOML file.")
@click.option("--item", "item", required=True, help="The rubric item to check (its `name`).")
@click.option("-r", "--reference", "references", multiple=True, type=click.Path(exists=True),
              help="Reference run(s); default: the rubric's `references`.")
@click.option("--strict", is_flag=True, help="Turn reader warnings into failures.")
@click.option("--config", type=click.Path(dir_okay=False), help="TOML file with a [limits] table.")
@click.pass_context
def check(ctx: click.Context, target: str, rubric: str, item: str, references: tuple[str, ...],
          strict: bool, config: str | None) -> None:
    """Check one rubric item on TARGET; exit 0 within tolerance, 1 outside, 2 cannot evaluate.

    Made for GitHub Classroom's command grader (one step per item): prints the student's
    feedback (the reference values only for show_reference = "always").

    \b
    Example:
        tracekit check run/ --rubric rubric.toml --item window_cap
    """
    from tracekit.batch.grading import check as check_item
    from tracekit.errors import TracekitError
    from tracekit.grading.rubric import load_rubric

    try:
        verdict = check_item(target, load_rubric(rubric), item, list(references), limits=load_limits(config),
                             strict=strict)
    except TracekitError as exc:
        click.echo(f"tracekit: cannot evaluate: {exc}", err=True)
        ctx.exit(2)
    mark = {"passed": "PASS", "failed": "FAIL", "error": "CANNOT EVALUATE"}[verdict.status]
    # GitHub Classroom shows this to the student: their feedback, with the reference only if the item allows
    click.echo(f"{mark} {verdict.item}: {verdict.feedback}")
    ctx.exit({"passed": 0, "failed": 1}.get(verdict.status, 2))


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--output", "out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--force", is_flag=True, help="Redo traces whose content and tracekit version are unchanged.")
@executor_options
@click.pass_context
def batch(ctx: click.Context, paths: tuple[str, ...], out: str, force: bool, jobs: int | None,
          timeout: float | None, max_memory: str | None, scheduler: str | None, strict: bool,
          config: str | None, no_progress: bool) -> None:
    """A report per trace, an index page and summary.json/summary.csv.

    A folder argument is a folder of traces: each file is a trace, each sub-folder a run
    directory. Failed traces (corrupt, --timeout, --max-memory) are listed with their reason
    and the batch goes on; exit status 4 when some failed.

    \b
    Example:
        tracekit batch traces/ -o reports/ --jobs 4
    """
    from tracekit.batch.traces import run_batch

    try:
        result = run_batch(paths, out, jobs=jobs, timeout=timeout, max_memory=parse_size(max_memory),
                           scheduler=scheduler, force=force, limits=load_limits(config), strict=strict,
                           progress=not no_progress)
    except KeyboardInterrupt:
        _interrupted(ctx, f"the finished traces are in {out}/summary.json")
    ok = sum(e["status"] == "ok" for e in result.entries)
    cached = sum(bool(e.get("cached")) for e in result.entries)
    click.echo(f"{ok} analysed ({cached} unchanged), {result.failed} failed → {out}/index.html", err=True)
    for e in result.entries:
        if e["status"] == "failed":
            err = e.get("error") or {}
            click.echo(f"  failed {e['path']}: {err.get('kind')}: {err.get('message')}", err=True)
    ctx.exit(result.exit_code)


class _Progress:
    """A rich progress line on stderr while grading; verdict lines go to stdout above it."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(SpinnerColumn(), TextColumn("grading: {task.completed} done"),
                                      TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task("grading", total=None)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def echo(self, line: str) -> None:
        click.echo(line)
