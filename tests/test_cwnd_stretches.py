"""The cwnd estimate taken a stretch at a time equals one pass over each direction.

``tracekit._core.cwnd_estimate`` cuts each direction's rows at the loss events that start once
the event before them has ended (src/state/cwnd/stretch.rs), so that a stream can hold a
direction's rows only since the latest cut, and finds the loss events as a stream would
(``episodes::Finder`` asked at each re-send with the rows and ACKs seen by then). Here every
estimate `analyze` runs on the bundled captures and simulator runs is run again with
``whole=True`` (one stretch per direction, no cut, the events found over the whole direction),
and both must give the same values bit for bit: per row the estimate, ssthresh and phase, per loss
event its direction, first row, end, kind, recovery and ssthresh.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import CAPTURES, SAMPLES

import tracekit
from tracekit import _core
from tracekit.analysis import _cwnd_estimate
from tracekit.analysis._cwnd_rows import Rows

#: Simulator runs whose estimate comes from packet events (ns-2 traces, NetSim's packet trace).
RUNS = [SAMPLES / p for p in ("ns2/lab_tahoe", "ns2/lab_reno", "ns2/lab_lossy", "ns2/dumbbell", "ns2/outage",
                              "ns2/big_queue", "netsim/Packet_Trace_ftp_tcp.csv")]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal element by element, NaN equal to NaN (the columns' dtypes and lengths too)."""
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))
                                                                     if a.dtype.kind == "f" else a == b))


def _cuts(r: Rows, first: np.ndarray, end: np.ndarray, d: np.ndarray) -> int:
    """Loss events that start at or after the end of the one before them in their direction: the
    rows the estimate is cut at (`stretch::cuts`; rows in time order within a direction)."""
    after = (d[1:] == d[:-1]) & (r.time[first[1:]] >= end[:-1])
    return int(after.sum())


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Runs every estimate both ways before `analyze` reads it; yields (directions, cuts) per call."""
    seen: list[tuple[int, int]] = []
    real = _cwnd_estimate.run_core

    def both(r: Rows, hold_backoff: bool = True) -> _cwnd_estimate.Core:
        args = _cwnd_estimate.core_args(r)
        cut = _core.cwnd_estimate(*args, hold_backoff)
        whole = _core.cwnd_estimate(*args, hold_backoff, whole=True)
        for name, x, y in zip(("cwnd", "ssthresh", "phase"), cut[:3], whole[:3], strict=True):
            assert _same(x, y), f"{name} differs at rows {np.flatnonzero(x != y)[:5]}"
        for k, (x, y) in enumerate(zip(cut[3], whole[3], strict=True)):
            assert _same(x, y), f"loss event column {k} differs"
        d, first, end = cut[3][0], cut[3][1], cut[3][2]
        seen.append((len(r.lo), _cuts(r, first, end, d)))
        return real(r, hold_backoff)

    monkeypatch.setattr(_cwnd_estimate, "run_core", both)
    return seen


def _analyse(paths: list[Path]) -> None:
    for p in paths:
        tracekit.analyze(tracekit.read(p))


def test_captures_cut_into_stretches_give_the_whole_estimate(checked: list[tuple[int, int]]) -> None:
    _analyse(CAPTURES)
    dirs, cuts = sum(s[0] for s in checked), sum(s[1] for s in checked)
    # (the bundled captures' 138 estimated directions are cut 422 times)
    assert dirs > 100 and cuts > 300, (dirs, cuts)


def test_simulator_runs_cut_into_stretches_give_the_whole_estimate(checked: list[tuple[int, int]]) -> None:
    _analyse(RUNS)
    assert sum(s[1] for s in checked) > 20, checked
