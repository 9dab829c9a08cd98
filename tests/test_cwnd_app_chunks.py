"""The cwnd estimate of an application-limited Linux sender at sub-ms RTT, against the kernel's ss log.

``samples/linux/app_chunks/`` (``samples/linux/make_app_chunks.sh``): one CUBIC connection fed
64 KiB ``send()`` calls by a Python loop that pauses 10 ms after every two writes, through a tbf
(200 Mbit/s) in a router namespace; the RTT is tens of µs to ~1 ms. Beside the capture, the
sender's ``ss -tin`` polls and ``nstat`` counters. The estimate reads the pipe, which falls to what
the application wrote whenever it has nothing more to send (a burst of one segment after a
write's first ones were all ACKed), while the kernel's cwnd stays put. The account may claim a cwnd
reduction only where the kernel shows one: a fall between two ss polls, or a loss recovery it
counted. Expected values come from the ss log (read by :mod:`tracekit.kernel`) and nstat.
"""

from __future__ import annotations

from functools import cache

import polars as pl

import tracekit
from tests.conftest import sample
from tracekit.explain import explain
from tracekit.kernel import _kernel_rows, attach


@cache
def _run() -> tuple[tracekit.Analysis, pl.DataFrame]:
    p = sample("linux", "app_chunks", "chunks.pcap")
    kern = _kernel_rows(attach(tracekit.read(p), [tracekit.read(p.with_suffix(".ss.gz"))]).samples)
    return tracekit.analyze(tracekit.read(p)), kern.sort("time")


def _nstat(name: str) -> int:
    """``after − before`` of one counter of ``chunks.nstat`` (two ``nstat -az`` blocks)."""
    vals = [int(ln.split()[1]) for ln in sample("linux", "app_chunks", "chunks.nstat").read_text().splitlines()
            if ln.split()[:1] == [name]]
    return vals[1] - vals[0]


def _kernel_fell(kern: pl.DataFrame, t: float) -> bool:
    """Whether the kernel's cwnd fell between the two ss polls around ``t``."""
    before = kern.filter(pl.col("time") <= t)
    after = kern.filter(pl.col("time") > t)
    if before.is_empty() or after.is_empty():
        return False
    return float(after["kernel_bytes"][0]) < float(before["kernel_bytes"][-1])


def test_no_reduction_the_kernel_does_not_show() -> None:
    an, kern = _run()
    assert kern.height >= 8  # the ss log covers the transfer
    red = an.reductions.filter(pl.col("source") == "estimate")
    assert red.height > 0
    # a reduction without loss evidence must be one the kernel's polls show
    unbacked = red.filter(~pl.col("loss_event"))["time"].to_list()
    assert [t for t in unbacked if not _kernel_fell(kern, t)] == []
    # those with loss evidence: no more than the recoveries and timeouts the kernel counted
    recoveries = _nstat("TcpExtTCPSackRecovery") + _nstat("TcpExtTCPRenoRecovery") + _nstat("TcpExtTCPTimeouts")
    assert 0 < red.filter(pl.col("loss_event")).height <= recoveries
    kinds = [s.kind for s in explain(an)]
    assert "reduction_no_loss" not in kinds and "slow_start_cut" not in kinds


def test_a_burst_from_an_empty_pipe_is_no_reading() -> None:
    """The facts of one such burst, read from the packets: everything sent was ACKed, then one
    segment left, sooner than 1 ms after the ACK; the estimate keeps the window read before it."""
    an, kern = _run()
    pk = an.packets.filter(pl.col("flow") == 0).sort("time", "frame")
    data = pk.filter((pl.col("dir") == 0) & (pl.col("payload") > 0)).with_columns(end=pl.col("seq") + pl.col("payload"))
    acks = pk.filter(pl.col("dir") == 1).select("time", "ack")
    est = an.cwnd.filter((pl.col("source") == "estimate") & (pl.col("flow") == 0)).sort("time")
    t, seq, end, size = (data[c].to_list() for c in ("time", "seq", "end", "payload"))
    a_t, a_ack = acks["time"].to_list(), acks["ack"].to_list()
    found = 0
    hi = end[0]
    for k in range(1, len(t) - 1):
        prev_hi, hi = hi, max(hi, end[k])
        # the latest ACK before this segment covered everything sent before it
        n_ack = sum(1 for x in a_t if x < t[k])
        if n_ack == 0 or a_ack[n_ack - 1] < prev_hi or seq[k] != prev_hi or t[k] - a_t[n_ack - 1] >= 1e-3:
            continue
        # a burst of one segment: the next one leaves after a later ACK
        if not any(t[k] < x < t[k + 1] for x in a_t) or an.retransmissions.filter(
                pl.col("time").is_between(t[k - 1], t[k + 1])).height:
            continue
        before = float(est.filter(pl.col("time") < t[k])["cwnd_bytes"][-1])
        at = float(est.filter(pl.col("time") == t[k])["cwnd_bytes"][-1])
        if before > 2 * size[k]:
            found += 1
            assert at >= before  # held, not read as a window of one segment
    assert found >= 3
    # and the kernel's cwnd was never as small as one segment
    assert float(kern["kernel_bytes"].min()) > 2 * 1448  # type: ignore[arg-type]
