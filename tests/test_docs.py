"""The documentation stays true (issue 20).

* Every reference to a ``*.md`` file (a markdown link, or a name like ``docs/limits.md`` in a
  comment or a page) resolves to a file in the repository, and every ``#anchor`` and quoted section
  title (``docs/analysis.md "Loss events, goodput and transfer time"``) names a heading there. Users
  have only the repository: a document beside it is no reference.
* Every ``tracekit`` command shown in README.md and docs/*.md parses: the subcommand exists and
  click accepts its options and values (files need not exist). docs/labs.md's commands are run for
  real by tests/test_labs.py.
* Every key the docs show for ``tracekit analyze --json`` exists in the real output of the bundled
  samples, and the lists that claim to be complete (the top-level keys, analysis.md's flows table)
  miss none.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from conftest import ROOT, sample

DOCS = ROOT / "docs"
#: Where references are looked for: the package, the pages, the bench and the samples' scripts.
SCANNED = [ROOT / "tracekit", DOCS, ROOT / "README.md", ROOT / "bench", ROOT / "samples", ROOT / "tests"]
TEXT_SUFFIXES = {".py", ".md", ".sh", ".tcl", ".cc", ".h", ".toml", ".json", ".yml", ".yaml", ".cfg", ".txt"}
MAX_TEXT_BYTES = 1 << 20  # larger files under samples/ are traces, not prose

_URL = re.compile(r"\b(?:https?|ftp|file)://\S+")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_MD_NAME = re.compile(r"(?<![\w/.*-])((?:\.\.?/)*[\w][\w./-]*\.md)(?![\w-])")
#: ``RELIABILITY §7.5``: a section of a document named without its ``.md`` (RFC/ISO numbers have digits)
_SECTION_OF = re.compile(r"\b([A-Z][A-Z_]{3,}) §")
_QUOTED = re.compile(r"(?<![\w/.-])((?:\.\.?/)*[\w][\w./-]*\.md),? \"([^\"\n]+)\"")


# ---- references --------------------------------------------------------------------------------------------

def _text_files() -> Iterator[Path]:
    for root in SCANNED:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for p in paths:
            if "__pycache__" in p.parts or p.name == Path(__file__).name:
                continue
            if p.suffix in TEXT_SUFFIXES and p.stat().st_size <= MAX_TEXT_BYTES:
                try:
                    p.read_bytes().decode("utf-8")
                except UnicodeDecodeError:  # sample data in other encodings (OPNET's UTF-16 exports)
                    continue
                yield p


def _resolve(name: str, where: Path) -> Path | None:
    """A referenced file: relative to the referring file, the repository root, or docs/."""
    for base in (where.parent, ROOT, DOCS):
        p = (base / name).resolve()
        if p.is_file() and p.is_relative_to(ROOT):
            return p
    return None


def _headings(md: Path) -> list[str]:
    """The headings of a markdown page, outside fenced code blocks."""
    out, fenced = [], False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} +(.+?) *#*$", line)):
            out.append(m.group(1))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(md: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in _headings(md):
        s = _slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def _plain(heading: str) -> str:
    return re.sub(r"[`*]", "", heading).strip().lower()


def _problems(path: Path) -> Iterator[str]:
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for m in _LINK.finditer(text if path.suffix == ".md" else ""):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        if file_part and not file_part.endswith(".md"):
            if _resolve(file_part, path) is None:
                yield f"{where}: link to {target!r}: no such file"
            continue
        md = _resolve(file_part, path) if file_part else path
        if md is None:
            yield f"{where}: link to {target!r}: no such file in the repository"
        elif anchor and anchor not in _anchors(md):
            yield f"{where}: link to {target!r}: {md.name} has no heading with that anchor"
    prose = _URL.sub(" ", _LINK.sub(" ", text))
    for m in _MD_NAME.finditer(prose):
        if _resolve(m.group(1), path) is None:
            yield f"{where}: {m.group(1)!r} is not a file of the repository"
    for m in _SECTION_OF.finditer(prose):
        if _resolve(f"{m.group(1)}.md", path) is None:
            yield f"{where}: {m.group(0)!r} cites a document that is not in the repository"
    for m in _QUOTED.finditer(prose):
        md = _resolve(m.group(1), path)
        wanted = _plain(m.group(2))
        if md is not None and not any(_plain(h).startswith(wanted) for h in _headings(md)):
            yield f"{where}: {m.group(1)} has no section {m.group(2)!r}"


def test_every_document_reference_resolves_in_the_repository() -> None:
    files = list(_text_files())
    assert len(files) > 100  # the scan really covers the package, the pages and the samples
    problems = [p for f in files for p in _problems(f)]
    assert not problems, "\n".join(problems)


def test_the_reference_checker_catches_what_it_should(tmp_path: Path) -> None:
    """The scanner flags a document outside the repository, a dead anchor and an unknown section."""
    page = tmp_path / "probe.md"
    page.write_text('See FORMATS.md, [x](limits.md#nope), analysis.md "No such section", STYLE §2 '
                    'and [ok](limits.md).\n')
    found = list(_problems(page))
    assert len(found) == 4, found


def test_slugs_match_github() -> None:
    assert _slug("The kernel's view (ss, nstat)") == "the-kernels-view-ss-nstat"
    assert _slug("The page (`tracekit/reports/html.py`)") == "the-page-tracekitreportshtmlpy"
    assert _slug("Loss events, goodput and transfer time") == "loss-events-goodput-and-transfer-time"


# ---- commands ----------------------------------------------------------------------------------------------

def _group() -> click.Group:
    """The click group behind the ``tracekit`` console script, found from pyproject's entry point
    (``module:function``): the group itself, or the group the function calls."""
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["tracekit"]
    module_name, _, attr = spec.partition(":")
    module = importlib.import_module(module_name)
    entry = getattr(module, attr)
    if isinstance(entry, click.Group):
        return entry
    candidates = [*vars(module).values(), *getattr(entry, "__globals__", {}).values()]
    groups = [c for c in candidates if isinstance(c, click.Group)]
    assert groups, f"no click group reachable from the entry point {spec}"
    return max(groups, key=lambda g: len(g.commands))


def _shell_lines(block: str, console: bool) -> Iterator[str]:
    """Logical lines of a code block (backslash continuations joined); in a console block only
    the ``$ `` lines are commands."""
    joined = re.sub(r"\\\n\s*", " ", block)
    for line in joined.splitlines():
        line = line.strip()
        if console:
            if line.startswith("$ "):
                yield line[2:]
        elif line:
            yield line


def _argv(line: str) -> list[str] | None:
    """The tracekit arguments of a shell line, or None when the line runs something else."""
    line = re.sub(r"<\([^)]*\)", "/dev/fd/63", line)  # process substitution: a path
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    for i, w in enumerate(words):
        if w in {"|", "||", "&&", ";", ">", ">>", "<", "2>", "&"}:
            words = words[:i]
            break
    if words[:1] == ["tracekit"]:
        return words[1:]
    if words[:2] in (["docker", "run"], ["podman", "run"]) and "tracekit" in words:
        return words[words.index("tracekit") + 1:]  # the image's entry point is tracekit
    return None


def _synopsis(words: list[str]) -> list[str]:
    """``[--png DIR]``, ``FILE...`` and ``…`` placeholders of a usage line, made plain."""
    out = []
    for w in words:
        w = w.replace("[", "").replace("]", "")
        w = re.sub(r"(\.\.\.|…)$", "", w)
        if w:
            out.append(w)
    return out


def _fill_placeholders(group: click.Group, argv: list[str]) -> list[str]:
    """A usage line's ``--max-flows N`` or ``--rto-floor SECONDS``: the upper-case placeholder of a
    number or a choice becomes a valid value of the option's type (real values stay as written)."""
    ctx = click.Context(group)
    names = set(group.list_commands(ctx))
    cmd = next((group.get_command(ctx, w) for w in argv if w in names), None)
    if cmd is None:
        return argv
    opts = {o: p for p in cmd.params for o in p.opts if isinstance(p, click.Option)}
    out = list(argv)
    for i in range(1, len(out)):
        param = opts.get(out[i - 1])
        if param is None or param.is_flag or not re.fullmatch(r"[A-Z][A-Z0-9_]*", out[i]):
            continue
        if isinstance(param.type, click.Choice):
            out[i] = str(param.type.choices[0])
        elif param.type.name in {"integer", "integer range"}:
            out[i] = "1"
        elif param.type.name in {"float", "float range"}:
            out[i] = "1.0"
    return out


def _documented_commands() -> list[tuple[str, list[str], bool]]:
    """(where, argv, is_fragment) for every tracekit command in README.md and docs/*.md."""
    pages = [ROOT / "README.md", *sorted(p for p in DOCS.glob("*.md") if p.name != "labs.md")]
    out = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
            for line in _shell_lines(m.group(2), console=m.group(1) == "console"):
                argv = _argv(line)
                if argv is not None:
                    out.append((f"{page.name}: {line}", _synopsis(argv), False))
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for m in re.finditer(r"`(tracekit [^`]+)`", prose):
            argv = _argv(m.group(1))
            if argv is not None:
                out.append((f"{page.name}: `{m.group(1)}`", _synopsis(argv), True))
    return out


@pytest.fixture
def parse_only(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    """The real group, with no command body run and files not required to exist: invoking it runs
    exactly click's parsing and validation of the arguments (subcommand, options, values).

    Patched on the classes, not on the commands, so that lazily loaded commands are covered too:
    a group's ``invoke`` still resolves and parses its subcommand, and ``Command.invoke`` (which
    would call the body) does nothing.
    """
    monkeypatch.setattr(click.Command, "invoke", lambda self, ctx: None)
    convert = click.Path.convert

    def convert_missing_ok(self: click.Path, value: Any, param: Any, ctx: Any) -> Any:
        exists, self.exists = self.exists, False
        try:
            return convert(self, value, param, ctx)
        finally:
            self.exists = exists

    monkeypatch.setattr(click.Path, "convert", convert_missing_ok)
    return _group()


def test_documented_commands_are_found() -> None:
    found = _documented_commands()
    pages = {where.split(":")[0] for where, _, _ in found}
    assert {"README.md", "batch.md", "grading.md", "reports.md", "cli.md"} <= pages, pages
    assert sum(not frag for _, _, frag in found) >= 20


def test_every_documented_command_parses(parse_only: click.Group) -> None:
    """Each command line (and each inline `tracekit …` in prose, where an argument may be left
    out) is accepted by click: known subcommand, known options, valid values."""
    bad = []
    for where, argv, fragment in _documented_commands():
        try:
            parse_only.main(_fill_placeholders(parse_only, argv), prog_name="tracekit", standalone_mode=False)
        except click.MissingParameter:
            if not fragment:
                bad.append(f"{where}: a required argument is missing")
        except click.UsageError as exc:
            if not (fragment and "Missing command" in exc.format_message()):
                bad.append(f"{where}: {exc.format_message()}")
    assert not bad, "\n".join(bad)


def test_command_check_catches_mistakes(parse_only: click.Group) -> None:
    """The same parsing refuses what a stale doc would show."""
    for argv in (["analyse", "x.pcap"], ["analyze", "x.pcap", "--jsn"], ["batch", "t/", "-o", "r/", "--jobs", "four"]):
        with pytest.raises(click.UsageError):
            parse_only.main(argv, prog_name="tracekit", standalone_mode=False)


# ---- the --json document -----------------------------------------------------------------------------------

def _analyze_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(_group(), ["analyze", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


@pytest.fixture(scope="module")
def real_docs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """`analyze --json` of a Linux capture (and of the same capture cut short, for a warning), an
    ns-2 run directory, a capture with the sender kernel's logs, and two captures of one run."""
    cut = tmp_path_factory.mktemp("cut") / "cut.pcap"
    data = sample("linux", "bulk_lossy.pcap").read_bytes()
    cut.write_bytes(data[: len(data) - 30])
    return {
        "pcap": _analyze_json(str(sample("linux", "bulk_lossy.pcap"))),
        "cut": _analyze_json(str(cut)),
        "ns2": _analyze_json(str(sample("ns2", "lab_reno"))),
        "kernel": _analyze_json(str(sample("linux", "kernel", "cubic"))),
        "views": _analyze_json(str(sample("ns3", "one_flow"))),
    }


def _json_example() -> dict[str, Any]:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    section = text[text.index("### The `--json` document"):]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block, "docs/cli.md lost its --json example"
    doc = json.loads(block.group(1))
    assert isinstance(doc, dict)
    return doc


def _table_first_column(md: Path, heading: str) -> list[str]:
    """The backticked names in the first column of the first table under ``## heading``."""
    text = md.read_text(encoding="utf-8")
    section = text[text.index(f"\n## {heading}\n"):]
    section = section[: section.find("\n## ", 1)]
    names = []
    for line in section.splitlines():
        if line.startswith("| `"):
            names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def _keys(docs: list[dict[str, Any]], part: str) -> set[str]:
    return {k for d in docs for row in d[part] for k in row}


def test_json_example_keys_exist(real_docs: dict[str, dict[str, Any]]) -> None:
    """Every key docs/cli.md shows is in the real output, and no top-level key is left out."""
    ex = _json_example()
    real = list(real_docs.values())
    assert set(ex) == {k for d in real for k in d}
    assert set(ex["trace"]) <= set(real_docs["pcap"]["trace"])
    assert set(ex["trace"]["warnings"][0]) == set(real_docs["cut"]["trace"]["warnings"][0])
    assert set(ex["flows"][0]) - {"…"} <= set(real_docs["pcap"]["flows"][0])
    assert set(ex["tool_metrics"][0]) == _keys([real_docs["ns2"]], "tool_metrics")
    assert set(ex["tool_metrics"][0]["source_values"]) <= set(real_docs["ns2"]["tool_metrics"][0]["source_values"])
    assert set(ex["explain"][0]) == _keys(real, "explain")
    assert set(ex["kernel"]) <= set(real_docs["kernel"]["kernel"])
    assert set(ex["kernel"]["retransmissions"][0]) == set(real_docs["kernel"]["kernel"]["retransmissions"][0])


def test_flows_table_is_complete(real_docs: dict[str, dict[str, Any]]) -> None:
    """analysis.md's flows table lists every flows key of the real output, and nothing else."""
    documented = _table_first_column(DOCS / "analysis.md", "flows")
    assert len(documented) == len(set(documented)), "a column is defined twice"
    real = _keys(list(real_docs.values()), "flows")
    assert set(documented) - real == set(), "documented but never output"
    assert real - set(documented) == set(), "output but not documented"


def test_views_are_flows_plus_position(real_docs: dict[str, dict[str, Any]]) -> None:
    """`views` rows carry the flows columns plus the two the several-captures section defines."""
    views = real_docs["views"]["views"]
    assert views, "ns3/one_flow has two captures of one connection"
    extra = _keys([real_docs["views"]], "views") - set(_table_first_column(DOCS / "analysis.md", "flows"))
    assert extra == {"position", "used_for"}
    section = (DOCS / "analysis.md").read_text(encoding="utf-8").split("## One connection, several captures")[1]
    assert all(f"`{k}`" in section.split("\n## ")[0] for k in extra)


def test_documented_meta_keys_exist(real_docs: dict[str, dict[str, Any]]) -> None:
    """Every key of schema.md's meta table appears in some real `trace` object."""
    documented = set(_table_first_column(DOCS / "schema.md", "`meta`"))
    assert {"format", "tool", "t0_ns", "kernel", "captures"} <= documented
    assert documented - {k for d in real_docs.values() for k in d["trace"]} == set()
