"""Running many untrusted-input tasks: killable local worker processes, or a dask cluster.

Why not :class:`concurrent.futures.ProcessPoolExecutor`: it cannot kill a running
task, so one parser stuck on a pathological file would hang the whole batch
(docs/security.md rule 9). :class:`LocalExecutor` keeps ``jobs`` long-lived worker
processes (started once: importing polars costs ~0.5 s), gives each one task at a
time, and on a timeout kills that worker and starts a fresh one. Each worker caps
its own address space with ``RLIMIT_AS``; a task over it fails with a memory error
(or the worker dies, which is recorded too) and the batch goes on.

:class:`DaskExecutor` sends the same tasks to a ``dask.distributed`` scheduler
(``Client(address).get_executor(pure=False)``: ``pure=True`` would let dask return a
cached result for a re-submitted path). A dask worker cannot kill one of its own
threads either, so there each task runs in a child process of the worker
(``python -m tracekit.batch.executors``) under the same timeout and memory cap. Dask
ships pickles: connect only to schedulers you control.

A task is a dotted function name (``"tracekit.batch.traces:process_trace"``) plus
picklable arguments; it returns a small picklable result. Both executors report
an :class:`Outcome` per task through a callback, in completion order.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import subprocess
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tracekit.errors import TracekitError, UsageError

#: Seconds a worker gets to start (imports) before it is considered broken.
START_TIMEOUT = 120.0


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn`` is ``"module:function"``, called as ``fn(*args)``."""

    key: str
    fn: str
    args: tuple[Any, ...] = ()


@dataclass
class Outcome:
    """What became of a task.

    Attributes:
        key: The task's key.
        ok: True when the function returned.
        value: Its return value (when ok).
        error: ``{"kind", "message", ...}`` otherwise; kind is ``error`` (a TracekitError,
            with its ``to_dict()`` fields), ``timeout``, ``memory``, ``crash`` or ``exception``.
        elapsed_s: Wall time of the task.
    """

    key: str
    ok: bool
    value: Any = None
    error: dict[str, Any] | None = None
    elapsed_s: float = 0.0


def cpu_count() -> int:
    """Cores this process may use (the default ``--jobs``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def resolve(fn: str) -> Callable[..., Any]:
    """Import ``"module:function"``."""
    mod, _, name = fn.partition(":")
    return getattr(importlib.import_module(mod), name)  # type: ignore[no-any-return]


def _limit_memory(max_memory: int | None) -> None:
    if not max_memory:
        return
    import resource

    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = max_memory if hard == resource.RLIM_INFINITY else min(max_memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):  # pragma: no cover - e.g. a hard limit below the request
        pass


def call(fn: str, args: tuple[Any, ...]) -> tuple[bool, Any, dict[str, Any] | None]:
    """Run a task function, turning every exception into an error dict (never raises)."""
    try:
        return True, resolve(fn)(*args), None
    except TracekitError as exc:
        return False, None, {"kind": "error", **exc.to_dict(), "message": str(exc)}
    except MemoryError:
        return False, None, {"kind": "memory", "message": "ran out of memory (over --max-memory?)"}
    except RecursionError:
        return False, None, {"kind": "exception", "message": "input nests too deeply (RecursionError)"}
    except Exception as exc:  # noqa: BLE001 - a bug on one input must not stop the batch
        tb = traceback.format_exception(exc)[-3:]
        return False, None, {"kind": "exception", "message": f"{type(exc).__name__}: {exc}",
                             "traceback": "".join(tb)[-2000:]}


def _worker_main(conn: Any, max_memory: int | None, initializer: str | None, threads: int = 0) -> None:
    """Body of a local worker process: one task at a time from ``conn`` until None."""
    # Ctrl-C reaches the whole process group; the parent decides what happens to running tasks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if threads:
        # jobs x polars' default pool (one thread per core) would oversubscribe the cores:
        # each worker gets its share, unless the user chose a size
        os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
    try:
        # Import the heavy modules before capping the address space: polars' thread pool alone
        # reserves several hundred MB of virtual memory that no task can give back.
        import polars  # noqa: F401

        import tracekit.analysis  # noqa: F401
    except ImportError:  # pragma: no cover
        pass
    if initializer:
        resolve(initializer)()
    _limit_memory(max_memory)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        key, fn, args = msg
        t0 = time.perf_counter()
        ok, value, error = call(fn, args)
        try:
            conn.send((key, ok, value, error, time.perf_counter() - t0))
        except (pickle.PicklingError, TypeError, ValueError) as exc:
            conn.send((key, False, None, {"kind": "exception", "message": f"result not picklable: {exc}"},
                       time.perf_counter() - t0))


@dataclass
class _Worker:
    proc: Any
    conn: Any
    ready: bool = False
    task: Task | None = None
    started: float = field(default_factory=time.monotonic)


def _death_reason(code: int | None) -> dict[str, Any]:
    if code is not None and code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig in (signal.SIGKILL, signal.SIGABRT, signal.SIGSEGV):
            hint = " (out of memory or over --max-memory?)" if sig != signal.SIGSEGV else ""
        else:
            hint = ""
        return {"kind": "crash", "message": f"the worker died from {name}{hint}"}
    return {"kind": "crash", "message": f"the worker exited unexpectedly (status {code})"}


def _broken(message: str) -> Exception:
    return TracekitError(message, hint="check the installation: python -c 'import tracekit.analysis' "
                                       "must work (and an --initializer must not fail)")


class LocalExecutor:
    """``jobs`` killable worker processes on this machine.

    Args:
        jobs: Worker processes (default: the cores available).
        timeout: Seconds one task may run before its worker is killed (None: no limit).
        max_memory: Address-space cap per worker in bytes (``RLIMIT_AS``; None: no cap).
        initializer: ``"module:function"`` run once in each worker (tests inject fake readers).
    """

    def __init__(self, jobs: int | None = None, *, timeout: float | None = None,
                 max_memory: int | None = None, initializer: str | None = None) -> None:
        import multiprocessing

        self.jobs = max(1, jobs or cpu_count())
        self.timeout = timeout
        self.max_memory = max_memory
        self.initializer = initializer
        # spawn, not fork: the parent may run threads (rich's progress refresh, polars' pool), and
        # forking a process with threads can deadlock the child.
        self._ctx = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []

    def describe(self) -> str:
        """Words for logs and summaries."""
        return f"{self.jobs} local worker process(es)"

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        threads = max(1, cpu_count() // self.jobs)
        proc = self._ctx.Process(target=_worker_main, args=(child, self.max_memory, self.initializer, threads),
                                 daemon=True, name="tracekit-worker")
        proc.start()
        child.close()
        return _Worker(proc, parent)

    def _kill(self, w: _Worker) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # already gone
            w.proc.kill()
        w.proc.join(5)
        w.conn.close()

    def shutdown(self) -> None:
        """Stop every worker (running tasks are abandoned)."""
        for w in self._workers:
            if w.proc.is_alive() and w.task is None:
                with contextlib.suppress(OSError, ValueError):
                    w.conn.send(None)
        deadline = time.monotonic() + 2
        for w in self._workers:
            if w.task is None:
                w.proc.join(max(0.0, deadline - time.monotonic()))
            if w.proc.is_alive():
                self._kill(w)
            else:
                w.conn.close()
        self._workers = []

    def run(self, tasks: Iterable[Task], on_result: Callable[[Outcome], None]) -> None:
        """Run every task; ``on_result`` is called in this thread as each one ends.

        A KeyboardInterrupt stops scheduling, kills the workers and propagates.
        """
        from multiprocessing.connection import wait

        pending = deque(tasks)
        try:
            while pending or any(w.task is not None for w in self._workers):
                busy = sum(w.task is not None for w in self._workers)
                while len(self._workers) < min(self.jobs, len(pending) + busy):
                    self._workers.append(self._start())
                for w in self._workers:
                    if w.ready and w.task is None and pending:
                        w.task = pending.popleft()
                        w.started = time.monotonic()
                        w.conn.send((w.task.key, w.task.fn, w.task.args))
                waits = [w for w in self._workers if w.task is not None or not w.ready]
                if not waits:
                    continue
                now = time.monotonic()
                limits = [w.started + START_TIMEOUT - now for w in waits if not w.ready]
                if self.timeout is not None:
                    limits += [w.started + self.timeout - now for w in waits if w.ready]
                ready = wait([w.conn for w in waits] + [w.proc.sentinel for w in waits],
                             timeout=max(0.0, min(limits)) if limits else None)
                for w in list(waits):
                    self._service(w, ready, on_result)
        except BaseException:
            for w in self._workers:
                self._kill(w)
            self._workers = []
            raise
        self.shutdown()

    def _replace(self, w: _Worker) -> None:
        self._kill(w)
        self._workers[self._workers.index(w)] = self._start()

    def _service(self, w: _Worker, ready: list[Any], on_result: Callable[[Outcome], None]) -> None:
        now = time.monotonic()
        if w.conn in ready:
            try:
                msg = w.conn.recv()
            except (EOFError, OSError):
                msg = None
            if msg is not None and not w.ready and msg[0] == "ready":
                w.ready = True
                return
            if msg is not None and w.task is not None:
                key, ok, value, error, elapsed = msg
                w.task = None
                on_result(Outcome(key, ok, value, error, elapsed))
                return
        if (w.conn in ready or w.proc.sentinel in ready) and (not w.proc.is_alive() or w.conn in ready):
            w.proc.join(1)
            task = w.task
            self._replace(w)
            if task is not None:
                on_result(Outcome(task.key, False, None, _death_reason(w.proc.exitcode), now - w.started))
            elif not w.ready:
                why = _death_reason(w.proc.exitcode)["message"]
                raise _broken(f"a worker process could not start ({why})")
            return
        if w.task is not None and self.timeout is not None and now - w.started >= self.timeout:
            task = w.task
            self._replace(w)
            on_result(Outcome(task.key, False, None, {
                "kind": "timeout", "message": f"took longer than {self.timeout:g} s; the worker was killed"},
                now - w.started))
        elif not w.ready and now - w.started >= START_TIMEOUT:  # pragma: no cover - broken install
            raise _broken(f"a worker process did not start within {START_TIMEOUT:g} s")


def run_isolated(fn: str, args: tuple[Any, ...], timeout: float | None, max_memory: int | None) -> Outcome:
    """Run one task in a child process (``python -m tracekit.batch.executors``) with a timeout and a memory cap.

    Used on dask workers, which cannot kill a running thread. The child gets the task as a
    pickle on stdin and answers with a pickle on stdout: both ends are this same code.
    """
    t0 = time.perf_counter()
    payload = pickle.dumps((fn, args, max_memory))
    try:
        proc = subprocess.run([sys.executable, "-m", "tracekit.batch.executors"], input=payload,
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Outcome("", False, None, {"kind": "timeout",
                                         "message": f"took longer than {timeout:g} s; the task was killed"},
                       time.perf_counter() - t0)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace")[-500:]
        err = _death_reason(proc.returncode)
        if tail:
            err["stderr"] = tail
        return Outcome("", False, None, err, elapsed)
    ok, value, error = pickle.loads(proc.stdout)  # noqa: S301 - our own child's answer
    return Outcome("", ok, value, error, elapsed)


def _child_main() -> None:
    """``python -m tracekit.batch.executors``: read one task from stdin, run it, write the outcome."""
    fn, args, max_memory = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - sent by run_isolated
    with contextlib.suppress(ImportError):
        import polars  # noqa: F401
    _limit_memory(max_memory)
    result = call(fn, args)
    sys.stdout.buffer.write(pickle.dumps(result))
    sys.stdout.buffer.flush()


class DaskExecutor:
    """The same tasks on a ``dask.distributed`` cluster (``--scheduler tcp://host:port``).

    Workers need tracekit installed (same version) and the input paths reachable at the same
    names. Only connect to schedulers you control: dask sends pickled code.

    Args:
        address: Scheduler address, ``tcp://host:8786`` or ``tls://…``.
        timeout: Seconds per task (the task's child process is killed).
        max_memory: Address-space cap of each task's child process.

    Raises:
        UsageError: when ``distributed`` is missing or the scheduler cannot be reached.
    """

    def __init__(self, address: str, *, timeout: float | None = None, max_memory: int | None = None) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("--scheduler needs dask.distributed",
                             hint="pip install 'tracekit[dask]'") from None
        try:
            self.client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise UsageError(f"cannot reach the dask scheduler {address}: {exc}",
                             hint="start it with `dask scheduler` and check the address") from None
        self.address = address
        self.timeout = timeout
        self.max_memory = max_memory

    def describe(self) -> str:
        """Words for logs and summaries."""
        return f"dask scheduler {self.address}"

    def run(self, tasks: Iterable[Task], on_result: Callable[[Outcome], None]) -> None:
        """Run every task on the cluster; ``on_result`` is called here as each one ends."""
        from concurrent.futures import FIRST_COMPLETED, wait

        ex = self.client.get_executor(pure=False)
        futures = {ex.submit(run_isolated, t.fn, t.args, self.timeout, self.max_memory): t for t in tasks}
        try:
            while futures:
                done, _ = wait(list(futures), return_when=FIRST_COMPLETED)
                for f in done:
                    task = futures.pop(f)
                    try:
                        out = f.result()
                        out.key = task.key
                    except Exception as exc:  # noqa: BLE001 - a lost worker must not end the batch
                        out = Outcome(task.key, False, None, {"kind": "crash",
                                                              "message": f"dask: {type(exc).__name__}: {exc}"})
                    on_result(out)
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    def shutdown(self) -> None:
        """Disconnect from the scheduler (the cluster keeps running)."""
        self.client.close()


def make_executor(jobs: int | None = None, *, scheduler: str | None = None, timeout: float | None = None,
                  max_memory: int | None = None, initializer: str | None = None) -> LocalExecutor | DaskExecutor:
    """The executor for ``--jobs`` / ``--scheduler``."""
    if scheduler:
        return DaskExecutor(scheduler, timeout=timeout, max_memory=max_memory)
    return LocalExecutor(jobs, timeout=timeout, max_memory=max_memory, initializer=initializer)


if __name__ == "__main__":
    _child_main()
