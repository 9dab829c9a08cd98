"""Pass 1 of the streamed summary settles what the cwnd estimate reads of each whole direction.

The estimate reads values of a direction from its first row that its rows only tell at their end
(docs/architecture.md, "What each stage waits for"): Karn's minimum RTT, the lowest data byte and
the largest payload. Pass 1 walks each direction for them without the retransmission analysis'
verdicts (a re-send is a segment that starts below the highest byte sent before it:
``conn::CwndFacts``), and ``_core.stream_summary`` tells per data direction whether they are the
rows' own (``_cwnd_facts``; None where a batch is logged). A stream that runs the estimate as the
rows come needs them to be; ``cwndrun_tests.rs`` checks the same on random connections.
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
