"""A lost SYN against the simulator's own view (ns-3.37, ``samples/ns3/syn_lost``; the Linux kernel's
is in ``tests/test_kernel_truth.py``).

``syn_lost.cc`` drops the first SYN (``lost1``) or the first two (``lost2``) at the receiver, downstream
of the sender's capture. ns-3's timer in SYN_SENT only sends the SYN again (3 s, then 6 s later): its
own traces show the initial window (10 segments) and no ssthresh (4294967295) until the transfer ends.
"""

from __future__ import annotations

import polars as pl
import pytest
from conftest import sample

import tracekit
from tracekit.explain import explain

#: ns-3's "no ssthresh yet" (``TcpSocketState::m_ssThresh`` starts at UINT32_MAX).
NONE = 4294967295


def _series(path: str) -> list[tuple[float, int]]:
    with open(path) as f:
        return [(float(t), int(v)) for t, v in (line.split() for line in f if line.strip())]


@pytest.mark.parametrize(("run", "lost"), [("lost1", 1), ("lost2", 2)])
def test_ns3_starts_its_data_with_no_ssthresh_after_a_lost_syn(run: str, lost: int) -> None:
    d = sample("ns3", "syn_lost", run)
    ssth, cwnd = _series(str(d / "syn_lost-ssth.data")), _series(str(d / "syn_lost-cwnd.data"))
    assert {v for _, v in ssth} == {NONE} and cwnd[0][1] == 10 * 1448
    # the run directory reads ns-3's unset ssthresh as no samples, and warns of nothing
    whole = tracekit.read(d)
    assert whole.warnings == [] and not whole.samples.filter(pl.col("metric") == "ssthresh").height
    an = tracekit.analyze(tracekit.read(d / "syn_lost-0-0.pcap"))  # the capture alone: the estimate
    pk = an.packets.filter(pl.col("dir") == 0)
    syns = pk.filter((pl.col("flags") & 0x12) == 0x02)["time"].to_list()
    assert len(syns) == lost + 1 and syns[1] - syns[0] == pytest.approx(3.0)
    est = an.cwnd.filter(pl.col("source") == "estimate")
    assert est.height > 50 and est["ssthresh_bytes"].fill_nan(None).is_null().all()
    assert (est["phase"] == "slow_start").all()
    row = an.flows.row(0, named=True)
    assert row["init_window_bytes"] == cwnd[0][1]  # the first flight is ns-3's initial window
    told = {s.kind: s for s in explain(an)}
    assert told["syn_resent"].time == pytest.approx(syns[1]) and not [k for k in told if k.startswith("reduction")]
    assert told["slow_start_open"].values["from_cwnd_bytes"] == cwnd[0][1]
