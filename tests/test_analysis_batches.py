"""A large capture is analysed in batches of whole connections (issue 21): the frames are the one-piece ones.

The truth is the analysis of the same trace in one piece (the path every other test checks
against tshark, tcptrace and the kernel); the batch size is lowered so that bundled captures
with several connections take the batched path.
"""

from __future__ import annotations

import polars as pl
import pytest
from conftest import sample
from polars.testing import assert_frame_equal

import tracekit
import tracekit.analysis as analysis_module
from tracekit.analysis import Analysis, analyze

# ten connections of an ns-3 dumbbell (record numbers increase), and two Linux connections through a shaper
CAPTURES = [("ns3", "dumbbell10", "db10-10-10.pcap"), ("linux", "kernel_truth", "shaper_reno.pcap")]


def _frames(an: Analysis) -> dict[str, pl.DataFrame]:
    out = {**an.frames(), "packets": an.packets}
    assert an.reductions is not None
    out["reductions"] = an.reductions
    return out


@pytest.mark.parametrize("parts", CAPTURES, ids=lambda p: p[-1])
def test_batches_of_connections_give_the_one_piece_frames(parts: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    trace = tracekit.read(sample(*parts))
    whole = analyze(trace)
    monkeypatch.setattr(analysis_module, "_BATCH_ROWS", 64)
    batches = list(analysis_module._batches(trace.packets, trace))
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
    monkeypatch.setattr(analysis_module, "_BATCH_ROWS", 8)
    assert len(list(analysis_module._batches(trace.packets, trace))) == 1
