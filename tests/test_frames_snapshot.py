"""Every analysis frame of every bundled sample equals the recorded one (tests/frames_snapshot.py).

This is the contract for refactors and ports: a move of code changes no number. A change on
purpose re-records the digests (``python tests/frames_snapshot.py --write``) and says why in
docs/analysis.md.
"""

from __future__ import annotations

import json

import pytest
from frames_snapshot import INPUTS, RECORD, digests

RECORDED = json.loads(RECORD.read_text())


@pytest.mark.parametrize("rel", INPUTS)
def test_frames_equal_the_recorded_ones(rel: str) -> None:
    now = digests(rel)
    was = RECORDED[rel]
    moved = {name: (was.get(name), got) for name, got in now.items() if was.get(name) != got}
    missing = sorted(set(was) - set(now))
    assert not moved and not missing, f"{rel}: frames changed {moved}, missing {missing}"
