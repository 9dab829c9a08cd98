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


def test_batch_rows_are_whole_flows_in_row_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core's counting sort gives the rows a filter per batch would, dense or sparse flow ids.

    The truth is a filter of the packets by each batch's flows (the cut before the core placed the rows).
    """
    trace = tracekit.read(sample("ns3", "dumbbell10", "db10-10-10.pcap"))
    monkeypatch.setattr(_batches, "BATCH_ROWS", 64)
    for ids in (trace.packets["flow"], trace.packets["flow"] * 100_003 + 7):  # readers' ids; sparse ones
        rows = _batches._batch_rows(ids)
        assert len(rows) >= 2
        got = [set(ids.gather(r).unique().to_list()) for r in rows]
        assert all(max(a) < min(b) for a, b in zip(got, got[1:], strict=False))  # ascending flow order
        for r, flows in zip(rows, got, strict=True):
            want = pl.Series(range(ids.len())).filter(ids.is_in(list(flows)))
            assert r.tolist() == want.to_list()  # every row of those flows, in row order
        assert sum(len(r) for r in rows) == ids.len()


@pytest.mark.parametrize("interleaved", [False, True])
def test_stacked_is_a_stable_sort_of_the_parts(interleaved: bool) -> None:
    """Parts one after the other are joined as they are; interleaved ones are merged as a stable sort would."""
    a = pl.DataFrame({"frame": [1, 3, 5], "method": ["seq", "ts", "seq"], "v": [0.1, 0.2, 0.3]})
    b = pl.DataFrame({"frame": [2, 4, 6] if interleaved else [6, 7, 8], "method": ["ts", "seq", "seq"],
                      "v": [1.0, 2.0, 3.0]})
    for by in (_batches.ORDER["rtt"], _batches.ORDER["flight"], None):
        whole = pl.concat([a, b])
        want = whole if by is None else whole.sort(by, maintain_order=True)
        parts = [a, b]
        assert_frame_equal(_batches.stacked(parts, by), want, check_exact=True)
        assert parts == []
