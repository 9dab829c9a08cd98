"""An analysis's helper thread (tracekit.analysis._parallel): same frames, errors, threads chosen."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import pytest
from conftest import make_events, make_trace, sample
from polars.testing import assert_frame_equal

import tracekit
from tracekit import analysis
from tracekit.analysis import _parallel, cwnd, throughput
from tracekit.errors import LimitError, UsageError


@pytest.mark.parametrize("parts", [("linux", "bulk_lossy.pcap"), ("linux", "slow_reader.pcap"),
                                   ("ns2", "lab_lossy"), ("ns3", "dumbbell")])
def test_one_or_two_threads_give_the_same_frames(parts: tuple[str, ...]) -> None:
    """Every frame (throughput at the default bin included) is the same either way, on captures
    with loss and zero windows and on simulator runs whose cwnd comes from the trace. (Floats to
    1e-12: polars' parallel sums may add in another order from one call to the next, threads or
    not: the fairness index of the ns-3 run moves by ~1e-16 between two serial calls.)"""
    trace = tracekit.read(sample(*parts))
    one, two = tracekit.analyze(trace, threads=1), tracekit.analyze(trace, threads=2)
    for name, frame in one.frames().items():
        assert_frame_equal(two.frames()[name], frame, rel_tol=1e-12, abs_tol=0.0)
    assert one.trace.meta == two.trace.meta


#: The steps that need no per-packet state, in the order the helper runs them.
_STATELESS = ((throughput, "throughput"), (analysis, "detect"), (analysis, "_flows_basic"), (cwnd, "cwnd"))


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(step, thread name) of every call of the steps that need no state, in call order."""
    seen: list[tuple[str, str]] = []
    for mod, name in _STATELESS:
        real = getattr(mod, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            seen.append((_name, threading.current_thread().name))
            return _real(*args, **kw)

        monkeypatch.setattr(mod, name, spy)
    return seen


def test_two_threads_run_the_stateless_steps_on_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _recording(monkeypatch)
    trace = tracekit.read(sample("linux", "bulk_lossy.pcap"))
    tracekit.analyze(trace, threads=2)
    assert seen == [(name, "tracekit-analysis") for _, name in _STATELESS]
    seen.clear()
    tracekit.analyze(trace, threads=1)
    assert seen == [(name, "MainThread") for _, name in _STATELESS]


def test_the_default_follows_the_environment_then_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_parallel.ENV, raising=False)
    monkeypatch.setattr(_parallel, "_cpus", lambda: 1)
    assert _parallel.threads() == 1
    monkeypatch.setattr(_parallel, "_cpus", lambda: 8)
    assert _parallel.threads() == 2  # one helper: more threads count as two
    monkeypatch.setenv(_parallel.ENV, "1")
    assert _parallel.threads() == 1
    assert _parallel.threads(3) == 2  # the caller's value wins over the environment
    seen = _recording(monkeypatch)
    tracekit.analyze(tracekit.read(sample("linux", "rwnd_limited.pcap")))
    assert {thread for _, thread in seen} == {"MainThread"}


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "two", ""])
def test_a_bad_thread_count_is_a_usage_error(bad: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = make_trace(make_events(4))
    if bad == "":  # an empty variable counts as unset, as shells write it
        monkeypatch.setenv(_parallel.ENV, bad)
        assert _parallel.threads() in (1, 2)
        return
    with pytest.raises(UsageError, match="threads"):
        tracekit.analyze(trace, threads=bad)
    monkeypatch.setenv(_parallel.ENV, str(bad))
    with pytest.raises(UsageError, match=_parallel.ENV):
        tracekit.analyze(trace)


@pytest.mark.parametrize("n", [1, 2])
def test_an_error_on_the_helper_reaches_the_caller(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Throughput's refusal of an absurd bin (a LimitError) is raised by analyze either way."""
    trace = tracekit.read(sample("linux", "bulk_lossy.pcap"))
    with pytest.raises(LimitError, match="throughput bins"):
        tracekit.analyze(trace, bin_s=1e-9, threads=n)

    def boom(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("cwnd failed")

    monkeypatch.setattr(cwnd, "cwnd", boom)
    with pytest.raises(RuntimeError, match="cwnd failed"):
        tracekit.analyze(trace, threads=n)
    # the helper survives a failed job
    monkeypatch.undo()
    assert tracekit.analyze(trace, threads=n).cwnd.height > 0


def test_the_helper_keeps_nothing_after_a_call() -> None:
    """The frames a job was given go when the analysis goes (the helper's loop drops them)."""
    trace = tracekit.read(sample("linux", "bulk_lossy.pcap"))
    an = tracekit.analyze(trace, threads=2)
    flight = weakref.ref(an.flight)  # handed to the cwnd job
    del an
    gc.collect()
    assert flight() is None


def test_a_forked_child_starts_its_own_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork copies the record of the parent's helper but not its thread: in another process
    a new helper is started (else the child's jobs would wait for ever)."""
    trace = tracekit.read(sample("linux", "bulk_lossy.pcap"))
    tracekit.analyze(trace, threads=2)
    parent = _parallel._helper()
    assert _parallel._helper() is parent  # one per process
    monkeypatch.setattr(_parallel.os, "getpid", lambda: parent.pid + 1)
    child = _parallel._helper()
    assert child is not parent and child.pid == parent.pid + 1
    assert tracekit.analyze(trace, threads=2).cwnd.height > 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_batch_workers_get_their_share_of_the_cores(jobs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local worker's analyses use ``cores ÷ jobs`` threads (at least one), like its polars pool."""
    from tracekit.executors import LocalExecutor, Task, cpu_count

    monkeypatch.delenv(_parallel.ENV, raising=False)
    got: dict[str, Any] = {}
    ex = LocalExecutor(jobs, timeout=120)
    try:
        ex.run([Task("t", "os:getenv", (_parallel.ENV,))], lambda o: got.__setitem__(o.key, o))
    finally:
        ex.shutdown()
    assert got["t"].ok and got["t"].value == str(max(1, cpu_count() // jobs))
