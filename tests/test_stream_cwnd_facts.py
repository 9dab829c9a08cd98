"""Pass 1 of the streamed summary settles what the cwnd estimate reads of each whole direction.

The estimate reads values of a direction from its first row that its rows only tell at their end
(docs/architecture.md, "The streamed summary (issue 21): what is built, and what is not"): Karn's
minimum RTT, the lowest data byte and the largest payload. Pass 1 walks each direction for them
without the retransmission analysis' verdicts (a re-send is a segment that starts below the
highest byte sent before it: ``facts::CwndFacts``), and ``_core.stream_summary`` tells per data
direction whether they are the rows' own (``_cwnd_facts``; None where a batch is logged). A
stream that runs the estimate as the rows come needs them to be (``stream/cwndgo.rs``, which
checks them again when the batch runs and refuses the file where one differs);
``cwndrun_tests.rs`` checks the same on random connections.
"""

from __future__ import annotations

from pathlib import Path

from conftest import CAPTURES

from tracekit import _core


def _facts(path: Path) -> list[bool | None]:
    try:
        out = _core.stream_summary(str(path))
    except Exception:  # noqa: BLE001 - a file the stream refuses has no directions to check
        return []
    facts: list[bool | None] = out["_cwnd_facts"]
    return facts


def test_pass_one_facts_are_the_rows_own_on_every_sample() -> None:
    checked = 0
    for p in CAPTURES:
        for k, ok in enumerate(_facts(p)):
            assert ok is not False, f"{p}: row {k}"
            checked += ok is True
    # (the samples' data directions, nearly all fed live)
    assert checked >= 100


def test_the_estimate_runs_as_the_rows_come_on_samples_with_losses() -> None:
    """Directions cut at their loss events run the estimate live (``stream/cwndgo.rs``), and the
    stream's document is still the frames path's on them (``test_stream_document.py``)."""
    live = 0
    for p in CAPTURES:
        try:
            out = _core.stream_summary(str(p))
        except Exception:  # noqa: BLE001 - a file the stream refuses is read by the frames path
            continue
        live += sum(v is True for v in out["_cwnd_live"])
        # (a direction runs live only where pass 1's facts are its rows' own)
        assert all(f is True for v, f in zip(out["_cwnd_live"], out["_cwnd_facts"], strict=True) if v)
    assert live >= 15
