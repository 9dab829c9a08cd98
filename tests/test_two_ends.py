"""One transfer captured at both ends (``samples/linux/two_ends``): what each end can and cannot tell.

The same two CUBIC connections were captured at once at the sender's interface and at the
receiver's, on a bridged path through a tbf (``samples/linux/make_two_ends.sh``). Counts that are
the same at both ends must agree; the two answers that need the sender's own view (what held it
back, its initial window) are given only there (docs/analysis.md, "What the receiver cannot see").
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import SAMPLES

import tracekit
from tracekit.explain import explain

HERE = SAMPLES / "linux" / "two_ends"
SHARES = ("limited_cwnd_share", "limited_rwnd_share", "limited_app_share")


def _analysis(name: str) -> tracekit.Analysis:
    path = HERE / f"{name}.pcap"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return tracekit.analyze(tracekit.read(path))


def _rows(an: tracekit.Analysis) -> dict[int, dict[str, Any]]:
    return {r["sport"]: r for r in an.flows.filter(dir=0).to_dicts()}


def test_both_ends_count_the_same_transfers() -> None:
    s, r = _rows(_analysis("sender")), _rows(_analysis("receiver"))
    assert sorted(s) == sorted(r) and len(s) == 2
    for port in s:
        # every byte reached the receiver; each end saw the same re-sends; the tbf between the two
        # capture points dropped 4 segments of each connection, which only the sender's capture holds
        assert s[port]["unique_bytes"] == r[port]["unique_bytes"] == 1_500_000
        assert s[port]["retrans_packets"] == r[port]["retrans_packets"] == 4
        assert s[port]["data_packets"] - r[port]["data_packets"] == 4


def test_what_held_the_sender_back_is_told_only_where_the_sender_is_seen() -> None:
    for name in ("sender", "receiver"):
        an = _analysis(name)
        told = {(x.flow, x.kind) for x in explain(an) if x.kind.startswith("limit_")}
        for row in _rows(an).values():
            if row["vantage_point"] == "receiver":
                assert all(row[c] is None for c in SHARES)
                assert (row["flow"], "limit_unseen") in told
            else:
                # the tbf held the window: the sender's capture reads cwnd-limited nearly all the time
                assert row["vantage_point"] == "sender"
                assert row["limited_cwnd_share"] is not None
                if name == "sender":
                    assert row["limited_cwnd_share"] > 0.99


def test_the_first_flight_counted_at_each_end() -> None:
    """At the sender the first flight is what left before the first ACK of data arrived (5 segments
    here, both connections); the receiver ACKed the first segment as it came, so its capture counts 1."""
    s, r = _rows(_analysis("sender")), _rows(_analysis("receiver"))
    assert {p: x["init_window_segments"] for p, x in s.items()} == dict.fromkeys(s, 5)
    assert {p: x["init_window_segments"] for p, x in r.items()} == dict.fromkeys(r, 1)
    an = _analysis("receiver")
    at_r = {x.flow: x for x in explain(an) if x.kind.startswith("start_")}
    for row in _rows(an).values():
        first = at_r[row["flow"]]
        assert ("reached the receiver before its first ACK" in first.text) == (row["vantage_point"] == "receiver")
