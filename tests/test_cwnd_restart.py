"""The cwnd estimate after a restart, on a real capture with SACK blocks above the restarted snd_nxt.

``samples/linux/cwnd_restart/cwnd_restart.pcap`` (``samples/linux/make_cwnd_restart.sh``): four CUBIC flows
start together through a tbf on a kernel bridge (RTT tens of µs), captured at the senders.
A burst reaches the receiver late, the senders re-send its segments one per ACK, tens of µs
apart, and the receiver later reports each re-sent segment as a duplicate (D-SACK, RFC 2883).
Each loss event restarts snd_nxt while the receiver has SACKed data above: RFC 6675 §2 counts
only the octets between the cumulative ACK and snd_nxt in the pipe, so those SACK blocks must
not be taken out of it (they were, and the estimate read 0 B for whole recoveries). The estimate
once took these re-sends for timeouts too (its own rule: no new ACK for one minimum RTT, here
tens of µs), one restart per re-send; its timeouts are now the retransmission analysis' (RFC
6298 §5, RTO ≥ Linux's 200 ms ``TCP_RTO_MIN``), and there are none here.

The truth is Wireshark's: tshark's ``tcp.analysis.bytes_in_flight``, its retransmission marks
(at a sender-side capture it calls many re-sends *out-of-order*: both count), the time since each
re-sent segment's first send (``tcp.analysis.rto``), and the receiver's cumulative ACKs as tshark
decodes them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import need_tool, sample

import tracekit

#: tshark fields per TCP packet (relative sequence numbers, Wireshark's default).
_FIELDS = ["frame.number", "tcp.stream", "tcp.srcport", "tcp.seq", "tcp.len", "tcp.ack",
           "tcp.analysis.bytes_in_flight", "tcp.analysis.retransmission", "tcp.options.sack.dsack_le",
           "tcp.analysis.out_of_order"]


def _tshark(p: Path) -> pl.DataFrame:
    """Every TCP packet of the capture as tshark decodes it."""
    cmd = [need_tool("tshark"), "-r", str(p), "-Y", "tcp", "-T", "fields", "-E", "occurrence=f",
           *(a for f in _FIELDS for a in ("-e", f))]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]

    def num(s: str) -> int | None:
        return int(s) if s else None

    return pl.DataFrame({
        "frame": [int(r[0]) for r in rows], "stream": [int(r[1]) for r in rows],
        "sport": [int(r[2]) for r in rows], "seq": [int(r[3]) for r in rows], "len": [int(r[4]) for r in rows],
        "ack": [num(r[5]) for r in rows], "bif": [num(r[6]) for r in rows],
        "retx": [r[7] != "" or r[9] != "" for r in rows], "dsack": [r[8] != "" for r in rows],
    })


@pytest.fixture(scope="module")
def truth() -> tuple[pl.DataFrame, tracekit.Analysis]:
    p = sample("linux", "cwnd_restart", "cwnd_restart.pcap")
    return _tshark(p), tracekit.analyze(tracekit.read(p))


def _flows(ts: pl.DataFrame, an: tracekit.Analysis) -> list[tuple[int, pl.DataFrame, pl.DataFrame]]:
    """Per data direction: (flow, tshark's data segments and the receiver's ACKs in frame order, estimate rows).

    Data travel from the senders' ports 41000+ to port 5002 (make_cwnd_restart.sh).
    """
    out = []
    flows = an.flows.filter(pl.col("dir") == 0).select("flow", "sport")
    est = an.cwnd.filter(pl.col("source") == "estimate")
    for flow, sport in flows.rows():
        pk = ts.filter(pl.col("sport") == sport).with_columns(data=pl.col("len") > 0)
        back = ts.filter((pl.col("sport") == 5002) & pl.col("stream").is_in(pk["stream"].unique().implode()))
        both = pl.concat([pk.with_columns(mine=True), back.with_columns(data=False, mine=False)]).sort("frame")
        out.append((int(flow), both, est.filter((pl.col("flow") == flow) & (pl.col("dir") == 0))))
    return out


def test_the_capture_shows_the_delayed_originals_and_their_dsacks(truth: tuple[pl.DataFrame, tracekit.Analysis]
                                                                  ) -> None:
    """The sample holds what the test is about: re-sends that D-SACKs report as duplicates."""
    ts, an = truth
    assert ts.filter(pl.col("retx")).height >= 20
    assert ts.filter(pl.col("dsack")).height >= 20
    assert an.retransmissions.filter(pl.col("kind") == "spurious").height >= 20


def test_the_estimate_is_never_zero_while_data_is_in_flight(truth: tuple[pl.DataFrame, tracekit.Analysis]) -> None:
    """At every data segment that tshark counts bytes in flight for, the estimate is above 0 B."""
    ts, an = truth
    checked = 0
    for flow, both, est in _flows(ts, an):
        data = both.filter(pl.col("mine") & pl.col("data"))
        assert data.height == est.height, f"flow {flow}: {data.height} data segments, {est.height} estimate rows"
        bad = data.with_columns(est=est["cwnd_bytes"]).filter((pl.col("bif") > 0) & (pl.col("est") <= 0))
        assert bad.is_empty(), f"flow {flow}: estimate 0 B with data in flight at frames {bad['frame'].to_list()[:10]}"
        checked += data.height
    assert checked > 2000


def _events(an: tracekit.Analysis) -> list[tuple[int, int, float, bool]]:
    """The estimate's loss events in the data directions: (flow, row in its direction, time, timeout?).

    Built as :func:`tracekit.analysis.cwnd.cwnd` builds them (its timeouts from the packets:
    ``an.retransmissions`` carries no episodes). Every event restarts snd_nxt (the rule under test).
    """
    from tracekit.analysis._cwnd_estimate import run_core
    from tracekit.analysis._cwnd_rows import build
    from tracekit.analysis.cwnd import _timeouts, data_directions

    r = build(an.packets, an.flight, an.retransmissions, data_directions(an.packets, an.trace.meta),
              timeouts=_timeouts(an.packets, an.retransmissions, an.trace.meta))
    assert r is not None
    flow, dr, time, lo = r.flow.copy(), r.dir.copy(), r.time.copy(), r.lo.copy()
    out = run_core(r)
    ev = out.episodes.filter(pl.col("kind") != "syn").with_columns(first=out.first)
    # (each event's row in its direction: its first row less the direction's first)
    d = np.searchsorted(lo, ev["first"].to_numpy(), side="right") - 1
    return [(int(flow[k]), int(i - lo[k]), float(time[i]), kind == "rto")
            for k, i, kind in zip(d.tolist(), ev["first"].to_list(), ev["kind"].to_list(), strict=True)
            if dr[k] == 0]


def _restarts(an: tracekit.Analysis) -> dict[int, list[int]]:
    """Per flow: the estimate's rows (in its direction) where a loss event restarts snd_nxt."""
    out: dict[int, list[int]] = {}
    for flow, k, _, _ in _events(an):
        out.setdefault(flow, []).append(k)
    return out


def test_the_estimate_holds_at_least_the_resent_bytes_in_flight(truth: tuple[pl.DataFrame, tracekit.Analysis]
                                                                ) -> None:
    """Where a restart begins, the estimate holds at least what was re-sent and is not cumulatively ACKed.

    A re-sent segment is outstanding and not SACKed when it leaves (a SACK sender re-sends only
    holes, RFC 6675 §5), so it is in the pipe however snd_nxt restarted: at each row where the
    estimate restarts snd_nxt, it is at least the bytes re-sent since the run of re-sends
    began, above the cumulative ACK (tshark's sequence and ACK numbers).
    """
    ts, an = truth
    restarts = _restarts(an)
    checked = 0
    for flow, both, est in _flows(ts, an):
        una, run, resent = 0, [], []
        for mine, data, seq, ln, ack, retx in both.select("mine", "data", "seq", "len", "ack", "retx").iter_rows():
            if not mine:
                una = max(una, ack or 0)
            elif data:
                run = [*run, (seq, seq + ln)] if retx else []
                resent.append(sum(max(e - max(s, una), 0) for s, e in run))
        for k in restarts.get(flow, []):
            assert est["cwnd_bytes"][k] >= resent[k] > 0, f"flow {flow} row {k}: {est['cwnd_bytes'][k]} < {resent[k]}"
            checked += 1
    assert checked >= 2  # (one loss event in each of two flows; 11 restarts by the old timeout rule)


def test_timeouts_are_resends_a_linux_timer_could_have_sent(truth: tuple[pl.DataFrame, tracekit.Analysis]) -> None:
    """The estimate's timeouts are re-sends that waited at least Linux's minimum RTO since their first send.

    Linux never fires the retransmission timer sooner than ``TCP_RTO_MIN`` (200 ms,
    include/net/tcp.h) after the head segment was sent (RFC 6298 §5.1 arms it at a send), so a
    timeout re-send is at least that late after the segment's original: tshark's
    ``tcp.analysis.rto`` (the time since the first send of a re-sent segment). Here every re-send
    comes within ms of its original (a delayed burst, not a loss), so the estimate has no timeout
    at all; its old minimum-RTT rule made 11 of them (and 11 restarts of snd_nxt within 0.1 ms).
    """
    ts, an = truth
    p = sample("linux", "cwnd_restart", "cwnd_restart.pcap")
    cmd = [need_tool("tshark"), "-r", str(p), "-Y", "tcp.analysis.rto", "-T", "fields", "-e", "frame.number",
           "-e", "tcp.analysis.rto"]
    waited = {int(f): float(w) for f, w in (line.split("\t") for line in subprocess.run(
        cmd, capture_output=True, text=True, check=True).stdout.splitlines())}
    assert len(waited) >= 20  # the sample holds what the test is about: many re-sends
    rt = an.retransmissions.filter(pl.col("dir") == 0)
    timeouts = [(flow, t) for flow, _, t, to in _events(an) if to]
    for flow, t in timeouts:
        frames = rt.filter((pl.col("flow") == flow) & (pl.col("time") == t))["frame"].to_list()
        assert frames and all(waited.get(f, 0.0) >= 0.2 for f in frames), (flow, t, [waited.get(f) for f in frames])
    assert max(waited.values()) < 0.2 and not timeouts


def test_reductions_on_unneeded_resends_are_no_loss_events(truth: tuple[pl.DataFrame, tracekit.Analysis]) -> None:
    """A reduction backed only by re-sends the receiver reports as duplicates is no loss event (RFC 3708).

    The truth for "unneeded": tshark's D-SACK blocks (RFC 2883) from the receiver, each covering a
    re-sent segment. The account tells those reductions as ``reduction_spurious`` and never says
    "Loss event" with nothing retransmitted.
    """
    from tracekit.explain import explain

    ts, an = truth
    dsack = ts.filter(pl.col("dsack"))
    cmd = [need_tool("tshark"), "-r", str(sample("linux", "cwnd_restart", "cwnd_restart.pcap")), "-Y",
           "tcp.options.sack.dsack", "-T", "fields", "-E", "occurrence=f", "-e", "frame.number",
           "-e", "tcp.options.sack.dsack_le", "-e", "tcp.options.sack.dsack_re"]
    edges = {int(f): (int(le), int(re)) for f, le, re in (line.split("\t") for line in subprocess.run(
        cmd, capture_output=True, text=True, check=True).stdout.splitlines())}
    assert len(edges) == dsack.height
    told = explain(an)
    spurious = [s for s in told if s.kind == "reduction_spurious"]
    assert spurious, "no reduction told as unneeded re-sends"
    assert not [s for s in told if s.kind.startswith("loss_") and s.values["retransmitted"] == 0]
    red = an.reductions
    for s in spurious:
        row = red.filter((pl.col("flow") == s.flow) & (pl.col("time") == s.values["time"]))
        assert row["loss_event"].to_list() == [False]
        # the first re-send at the reduction: a later D-SACK of the same stream covers it
        flow_rt = an.retransmissions.filter((pl.col("flow") == s.flow) & (pl.col("time") >= s.values["time"]))
        seq, ln = flow_rt.row(0, named=True)["seq"], flow_rt.row(0, named=True)["len"]
        sport = an.flows.filter((pl.col("flow") == s.flow) & (pl.col("dir") == 0))["sport"].item()
        stream = ts.filter(pl.col("sport") == sport)["stream"][0]
        frames = dsack.filter(pl.col("stream") == stream)["frame"].to_list()
        assert any(edges[f][0] <= seq and seq + ln <= edges[f][1] for f in frames), f"{s.text}: no D-SACK"


def test_cwnd_called_alone_finds_the_sack_places_itself(truth: tuple[pl.DataFrame, tracekit.Analysis]) -> None:
    """``cwnd()`` without ``sacked_at`` makes it from the packets: the same estimate as the analysis'."""
    from tracekit.analysis.cwnd import cwnd

    _, an = truth
    alone = cwnd(an.packets, an.trace.samples, an.flight, an.retransmissions, an.trace.meta)
    assert alone.equals(an.cwnd)


def test_slow_start_ends_are_told_as_what_cut_them(truth: tuple[pl.DataFrame, tracekit.Analysis]) -> None:
    """A slow-start run cut by a reduction without loss evidence never says "a loss ended slow start".

    Each ``slow_start_*`` sentence's end is matched with the reduction at that time in
    ``an.reductions``: ``slow_start_loss`` only where ``loss_event`` is true, ``slow_start_cut``
    only where it is false; the ``*_more`` sentences count the two kinds apart.
    """
    from tracekit.explain import explain

    _, an = truth
    told = explain(an)
    red = an.reductions
    cut = {"slow_start_loss": True, "slow_start_cut": False}
    checked = 0
    for s in told:
        if s.kind in cut:
            row = red.filter((pl.col("flow") == s.flow) & (pl.col("dir") == s.dir)
                             & (pl.col("time") == s.values["end"]))
            assert row["loss_event"].to_list() == [cut[s.kind]], s.text
            checked += 1
    assert checked and any(s.kind == "slow_start_cut" for s in told)
    for s in told:
        if s.kind in ("losses_more", "reductions_more"):
            rows = red.filter((pl.col("flow") == s.flow) & (pl.col("dir") == s.dir)
                              & (pl.col("time") >= s.values["time"]) & (pl.col("time") <= s.values["end"]))
            want = s.kind == "losses_more"
            assert (rows["loss_event"] == want).sum() >= s.values["count"], s.text
