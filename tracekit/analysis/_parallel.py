"""A second thread for :func:`tracekit.analysis.analyze`: how many threads, and the helper itself.

Four steps of an analysis need none of the per-packet sequence state: throughput (the
packets only), the vantage-point detection (packets and RTT samples), the flows frame's
per-direction counts (:func:`tracekit.analysis.flows.basic`) and the cwnd analysis (packets,
flight and retransmissions). On a second CPU they run, in that order, on one helper thread
while the main thread builds the state, RTT, retransmissions, flight, stalls and flows. numpy
and polars release the GIL inside their loops, so the two threads overlap for most of their
work (the bench capture's analysis: ~20-25 % less wall time, for ~70 MB more at the peak: the
helper's temporaries live beside the state's, and glibc gives the helper its own arena).

One thread (``TRACEKIT_THREADS=1`` or ``analyze(..., threads=1)``) keeps the serial order,
whose peak memory is lowest. The ``tracekit`` command uses it (its peak RSS target), and so
do batch workers that already share the cores between them.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from tracekit._heap import _cpus
from tracekit.errors import UsageError

#: Environment variable: threads an analysis may use (1: serial; 2 or more: one helper).
ENV = "TRACEKIT_THREADS"


def threads(requested: int | None = None) -> int:
    """Threads an analysis uses: ``requested``, else ``TRACEKIT_THREADS``, else 2 when a second CPU is usable.

    Args:
        requested: The caller's choice (``analyze(threads=...)``); None for the default.

    Returns:
        1 or 2 (only one helper thread exists: more than 2 counts as 2).

    Raises:
        UsageError: if the value given or set is not a positive integer.
    """
    source, value = ("threads", requested) if requested is not None else (ENV, os.environ.get(ENV))
    if value is None or value == "":
        return 2 if _cpus() >= 2 else 1
    try:
        n = int(value)
        ok = n >= 1 and not isinstance(value, bool) and (not isinstance(value, float) or value == n)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise UsageError(f"{source} must be a positive whole number of threads, not {value!r}",
                         hint=f"use 1 for the lowest memory, or leave {ENV} unset for the default")
    return min(n, 2)


class Job:
    """A call handed to the helper thread (or run at once): :meth:`result` waits and re-raises."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> Any:
        """The call's return value, once it is done.

        Raises:
            BaseException: whatever the call raised (with its own traceback).
        """
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


class _Helper:
    """One daemon thread running jobs in the order they came (daemon: it never holds up exit)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._jobs: queue.SimpleQueue[tuple[Job, Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="tracekit-analysis", daemon=True).start()

    def _loop(self) -> None:
        while True:
            job, fn, args = self._jobs.get()
            job._run(fn, args)
            del job, fn, args  # the frames go as soon as the job is done, not with the next one

    def submit(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Job:
        job = Job()
        self._jobs.put((job, fn, args))
        return job


_HELPER: list[_Helper] = []
_LOCK = threading.Lock()


def _helper() -> _Helper:
    """The process's helper thread, started on first use (again in a forked child: threads do not survive a fork)."""
    with _LOCK:
        if not _HELPER or _HELPER[0].pid != os.getpid():
            _HELPER[:] = [_Helper()]
        return _HELPER[0]


def run(parallel: bool, fn: Callable[..., Any], *args: Any) -> Job:
    """``fn(*args)`` on the helper thread when ``parallel``, else at once on this one.

    Args:
        parallel: Whether the analysis uses a second thread (:func:`threads` > 1).
        fn: The step to run.
        *args: Its arguments (shared, not copied: frames are immutable).

    Returns:
        The :class:`Job`; its ``result()`` gives the value or raises the step's error.

    Raises:
        Exception: when not ``parallel``, whatever ``fn`` raises.
    """
    if parallel:
        return _helper().submit(fn, args)
    job = Job()
    job._value = fn(*args)  # here, an error is raised at once (as a plain call would)
    job._done.set()
    return job
