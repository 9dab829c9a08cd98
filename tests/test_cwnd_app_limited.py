"""The cwnd estimate on application-limited bursts and after timeouts, against real Linux senders.

``samples/linux/app_limited/cubic_tail.pcap`` (``samples/linux/make_app_limited.sh``: a cut of
bench/make_capture.sh's capture, Linux CUBIC fed 64 KiB writes by a Python loop): a fast
retransmission whose ending ACK releases only the 376-byte tail of the application's write, after
which the sender stays silent. Linux never restarts from one segment after a fast retransmit (PRR,
RFC 6937, and CUBIC's β), so no account may call it Tahoe. The facts of the burst are read here
from the packets with plain polars, not from the estimate.
"""

from __future__ import annotations

import polars as pl
import pytest

import tracekit
from tests.conftest import sample
from tracekit.explain import explain

MSS = 1448


def _data_and_acks(an: tracekit.Analysis) -> tuple[pl.DataFrame, pl.DataFrame]:
    pk = an.packets.filter(pl.col("flow") == 0).sort("time", "frame")
    data = pk.filter((pl.col("dir") == 0) & (pl.col("payload") > 0)).with_columns(
        end=pl.col("seq") + pl.col("payload"))
    acks = pk.filter(pl.col("dir") == 1).select("time", "ack")
    return data, acks


def test_an_application_limited_tail_after_a_fast_retransmit_is_no_tahoe_restart() -> None:
    an = tracekit.analyze(tracekit.read(sample("linux", "app_limited", "cubic_tail.pcap")))
    data, acks = _data_and_acks(an)
    fast = an.retransmissions.filter((pl.col("kind") == "fast") & (pl.col("dir") == 0)).sort("time")
    tails = []
    for t_fr in fast["time"].to_list():
        # the recovery point: the highest byte sent before the fast retransmission (RFC 6582)
        rp = int(data.filter(pl.col("time") < t_fr)["end"].max())  # type: ignore[arg-type]
        t_end = float(acks.filter((pl.col("time") > t_fr) & (pl.col("ack") >= rp))["time"][0])
        if not data.filter((pl.col("time") > t_fr) & (pl.col("time") < t_end)).is_empty():
            continue  # something was sent inside the event: no burst verdict
        # after it, one short segment: the write's tail, at the highest byte sent
        after = data.filter(pl.col("time") > t_end)
        tail = after.row(0, named=True)
        assert tail["payload"] < MSS and tail["seq"] == rp
        # the ACK that covers it reaches the sender, and nothing new follows within 1 ms
        t_cov = float(acks.filter((pl.col("time") > tail["time"]) & (pl.col("ack") >= tail["end"]))["time"][0])
        nxt = after.filter(pl.col("time") > tail["time"])
        assert nxt.is_empty() or float(nxt["time"][0]) > t_cov + 1e-3
        tails.append(tail)
    assert len(tails) == 1
    tail = tails[0]
    kinds = [s.kind for s in explain(an)]
    assert "loss_tahoe" not in kinds
    # the estimate keeps the recovery's ssthresh after it, not the 376-byte tail
    est = an.cwnd.filter((pl.col("source") == "estimate") & (pl.col("flow") == 0) & (pl.col("dir") == 0))
    row = est.filter(pl.col("time") >= tail["time"]).row(0, named=True)
    assert row["cwnd_bytes"] >= row["ssthresh_bytes"] >= 2 * MSS


def test_tahoe_still_restarts_in_ns2() -> None:
    """The same rule leaves ns-2's Tahoe agent a restart: its Window.tr falls to one packet."""
    an = tracekit.analyze(tracekit.read(sample("ns2", "lab_tahoe")))
    kinds = [s.kind for s in explain(an)]
    assert kinds.count("loss_tahoe") == 1
    win = an.cwnd.filter(pl.col("source") == "trace").sort("time")["cwnd_bytes"].to_list()
    assert min(win[1:]) == pytest.approx(500.0)  # 1 packet of 500 bytes (ns-2's cwnd_ after the fall)
