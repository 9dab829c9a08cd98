"""Imports inside tracekit/ point one way: parsers and analysis build on the contract, reports and grading
on analyses, batch and the command line on everything below them; nothing points back.

An AST walk over every module, imports inside functions included (only ``if TYPE_CHECKING:`` blocks are
left out: they never run). The table is the one in docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "tracekit"

#: Module (or package) -> layer; the longest matching prefix wins.
LAYER = {
    "tracekit.errors": "base", "tracekit.limits": "base", "tracekit.numfmt": "base", "tracekit.phrases": "base",
    "tracekit._files": "base", "tracekit._core": "base", "tracekit._shared": "base",
    "tracekit._runinfo": "base", "tracekit._jsontext": "base",
    "tracekit.schema": "contract", "tracekit.trace": "contract", "tracekit.kernel": "contract",
    "tracekit._source": "parsers", "tracekit.parsers": "parsers",
    "tracekit.analysis": "analysis", "tracekit.models": "analysis", "tracekit.explain": "analysis",
    "tracekit._flowrows": "analysis",
    "tracekit.explain_parts": "analysis", "tracekit.explain_rules": "analysis", "tracekit.explain_account": "analysis",
    "tracekit._streamexplain": "api",
    "tracekit.pipeline": "pipeline",
    "tracekit.reports": "reports",
    "tracekit.grading": "grading",
    "tracekit.batch": "batch",
    "tracekit.cli": "cli", "tracekit.__main__": "cli",
    "tracekit": "api",  # the package itself: the public functions (read, analyze, ...)
}
_BELOW_REPORTS = {"base", "contract", "analysis"}
#: Layer -> the layers its modules may import.
MAY_IMPORT = {
    "base": {"base"},
    "contract": {"base", "contract"},
    "parsers": {"base", "contract", "parsers"},
    "analysis": {"base", "contract", "analysis"},
    "pipeline": {"base", "contract", "parsers", "analysis", "pipeline"},
    "reports": _BELOW_REPORTS | {"reports"},
    "grading": _BELOW_REPORTS | {"reports", "grading"},
    "batch": _BELOW_REPORTS | {"pipeline", "reports", "grading", "batch"},
    "cli": {"base", "contract", "parsers", "analysis", "pipeline", "reports", "grading", "batch", "cli", "api"},
    "api": {"base", "contract", "parsers", "analysis", "api"},
}
#: Deliberate exceptions, each with its reason.
ALLOWED: set[tuple[str, str]] = set()
#: Import cycles between modules that are known and left alone, each with its reason.
KNOWN_CYCLES = [
    # the capture reader falls back to tshark for link types the compiled reader lacks, and the tshark
    # reader finishes its rows with the capture reader's code (connections, relative numbers)
    {"tracekit.parsers._capture", "tracekit.parsers.tshark"},
]


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(ROOT.rglob("*.py")):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()
#: Compiled extension modules (no .py source; typed by a .pyi stub): importable names all the same.
COMPILED = {".".join(p.relative_to(ROOT.parent).with_suffix("").parts) for p in ROOT.glob("*.pyi")}


def layer_of(module: str) -> str:
    """The layer of a module: its longest prefix in :data:`LAYER`."""
    name = module
    while name not in LAYER:
        if "." not in name:
            raise AssertionError(f"{module} is in no layer: add it to LAYER and docs/architecture.md")
        name = name.rsplit(".", 1)[0]
    return LAYER[name]


def _resolve(name: str) -> str:
    """The tracekit module an imported name lives in (``tracekit.reports.html.esc`` -> ``tracekit.reports.html``)."""
    while name not in MODULES and name not in COMPILED and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(tracekit module imported, line) for every import of ``path``, in functions too; not TYPE_CHECKING."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            # `from tracekit import schema` imports a module; `from tracekit import read` the package's name;
            # `from tracekit import __version__` a constant, not the public API
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES.keys() | COMPILED else base for a in node.names
                     if (base, a.name) != ("tracekit", "__version__")]
        else:
            continue
        out += [(_resolve(n), node.lineno) for n in names if n == "tracekit" or n.startswith("tracekit.")]
    return out


GRAPH = {m: imports(m, p) for m, p in MODULES.items()}


def test_every_module_has_a_layer() -> None:
    for m in MODULES:
        assert layer_of(m) in MAY_IMPORT


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    """A module imports only its own layer and the layers below it (:data:`MAY_IMPORT`)."""
    mine = layer_of(module)
    bad = [f"line {line}: {target} ({layer_of(target)})" for target, line in GRAPH[module]
           if target != module and layer_of(target) not in MAY_IMPORT[mine] and (module, target) not in ALLOWED]
    assert not bad, f"{module} ({mine}) imports upward or sideways:\n  " + "\n  ".join(bad)


def test_nothing_outside_cli_imports_cli() -> None:
    users = sorted({m for m, targets in GRAPH.items() for t, _ in targets
                    if layer_of(t) == "cli" and layer_of(m) != "cli"})
    assert users == []


def test_reports_and_grading_take_analyses_not_paths() -> None:
    """Reading files is the pipeline's job: reports and grading never import a reader or the pipeline."""
    readers = {"parsers", "pipeline", "api"}
    users = sorted((m, t) for m, targets in GRAPH.items() for t, _ in targets
                   if layer_of(m) in ("reports", "grading") and layer_of(t) in readers and (m, t) not in ALLOWED)
    assert users == []


def _cycles() -> list[set[str]]:
    """Strongly connected components (more than one module) of the import graph (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _ in GRAPH.get(v, ()):
            if w == v or w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for m in MODULES:
        if m not in index:
            visit(m)
    return found


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or round a loop, not even from inside a function
    (an import moved into a function to dodge a cycle only hides it)."""
    assert [c for c in _cycles() if c not in KNOWN_CYCLES] == []


def test_the_walk_sees_imports_in_functions() -> None:
    """The walk is not blind to the imports the rules are about: the cli imports the library inside its
    commands (for a fast --help), and those imports are found."""
    targets = {t for t, _ in GRAPH["tracekit.cli.analyze"]}
    assert "tracekit.pipeline" in targets and layer_of("tracekit.cli.analyze") == "cli"
