"""Options and helpers every ``tracekit`` command shares: limits, reader options, output guards.

Only click is imported at module level (``tracekit --help`` must stay fast).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from tracekit.limits import Limits

F = TypeVar("F", bound=Callable[..., Any])

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def load_limits(config: str | None) -> Limits:
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


def guard_output(force: bool, *paths: str | Path | None) -> None:
    """Refuse to overwrite an existing output file unless --force was given.

    Raises:
        OutputError: when one of ``paths`` exists and ``force`` is false.
    """
    from tracekit.errors import OutputError

    for path in paths:
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


def parse_size(text: str | None) -> int | None:
    """``"2G"``, ``"512M"``, ``"1.5GiB"`` or a byte count → bytes (None stays None).

    Raises:
        click.BadParameter: for anything else.
    """
    if text is None:
        return None
    m = _SIZE.match(text)
    if not m:
        raise click.BadParameter(f"{text!r} is not a size like 2G or 512M", param_hint="--max-memory")
    return int(float(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower()))


def executor_options(f: F) -> F:
    """Options shared by ``grade`` and ``batch``."""
    f = click.option("--scheduler", metavar="ADDR",
                     help="Run on a dask.distributed scheduler (tcp://host:8786). Trusted schedulers only: "
                          "dask sends pickles.")(f)
    f = click.option("--max-memory", metavar="SIZE",
                     help="Address space per worker, e.g. 2G (default: max_memory_bytes, 4 GiB).")(f)
    f = click.option("--timeout", type=float, metavar="S",
                     help="Seconds per file before its worker is killed (default: timeout_s, 300).")(f)
    f = click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N",
                     help="Worker processes (default: the machine's cores).")(f)
    f = click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")(f)
    f = click.option("--strict", is_flag=True, help="Turn reader warnings into failures.")(f)
    f = click.option("--config", type=click.Path(dir_okay=False), help="TOML file with a [limits] table.")(f)
    return f
