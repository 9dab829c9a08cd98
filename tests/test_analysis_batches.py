"""A large capture is analysed in batches of whole connections (issue 21): the frames are the one-piece ones.

The truth is the analysis of the same trace in one piece (the path every other test checks
against tshark, tcptrace and the kernel); the batch size is lowered so that bundled captures
with several connections take the batched path.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import polars as pl
import pytest
from conftest import sample
from polars.testing import assert_frame_equal

import tracekit
from tracekit.analysis import Analysis, _batches, analyze

# ten connections of an ns-3 dumbbell (record numbers increase), and two Linux connections through a shaper
CAPTURES = [("ns3", "dumbbell10", "db10-10-10.pcap"), ("linux", "kernel_truth", "shaper_reno.pcap")]


def _frames(an: Analysis) -> dict[str, pl.DataFrame]:
    out = {**an.frames(), "packets": an.packets}
    assert an.reductions is not None
    out["reductions"] = an.reductions
    return out


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("parts", CAPTURES, ids=lambda p: p[-1])
def test_batches_of_connections_give_the_one_piece_frames(parts: tuple[str, ...], workers: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """One thread or several (more than this machine's cores), the frames are the one-piece ones."""
    trace = tracekit.read(sample(*parts))
    whole = analyze(trace)
    monkeypatch.setattr(_batches, "BATCH_ROWS", 64)
    monkeypatch.setattr(_batches, "threads", lambda: workers)
    batches = list(_batches.batches(trace.packets, trace))
    assert len(batches) >= 2, "the capture must take the batched path"
    assert sorted(f for b in batches for f in b["flow"].unique().to_list()) == sorted(
        trace.packets["flow"].unique().to_list())  # every connection in exactly one batch
    for keep in (True, False):
        batched = analyze(trace, keep_per_packet=keep)
        if not keep:  # made on first read, batch by batch
            assert {"flight", "rtt", "queue", "fairness"} <= set(batched._makers)
        for name, df in _frames(whole).items():
            assert_frame_equal(_frames(batched)[name], df, check_exact=True)
        assert not batched._makers


def test_a_trace_with_simulator_events_is_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """ns-2 events share packets (enqueue, dequeue, receive of one segment): not split."""
    trace = tracekit.read(sample("ns2", "lab_tahoe", "out.tr.gz"))
    assert trace.samples.is_empty() and trace.packets["flow"].n_unique() >= 1
    monkeypatch.setattr(_batches, "BATCH_ROWS", 8)
    assert len(list(_batches.batches(trace.packets, trace))) == 1


def test_in_order_keeps_the_order_and_holds_at_most_workers_items() -> None:
    """Results come back in the items' order however the threads finish, and an item is drawn
    only when a thread is about to be free (what bounds the batches' memory)."""
    lock = threading.Lock()
    drawn, done, most = [0], [0], [0]

    def items() -> Iterator[int]:
        for i in range(12):
            with lock:
                drawn[0] += 1
                most[0] = max(most[0], drawn[0] - done[0])
            yield i

    def slow(i: int) -> int:
        time.sleep(0.002 * (i % 3))  # later items often finish first
        with lock:
            done[0] += 1
        return i * i

    assert _batches.in_order(slow, items(), workers=3) == [i * i for i in range(12)]
    assert 1 < most[0] <= 3
    with pytest.raises(ZeroDivisionError):
        _batches.in_order(lambda i: 1 // (i - 5), range(8), workers=2)
