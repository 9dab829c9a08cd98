"""The account in words (tracekit.explain) on samples whose story is known from independent truth:
the capture script's own notes (stall_cut.json), tshark's expert analysis, ns-2's Window.tr."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracekit
from tests.conftest import need_tool, sample
from tracekit.cli.main import main
from tracekit.explain import CLAUSES, TEMPLATES, explain, rate_from_text
from tracekit.explain_account import NOTES


def _story(path: Path, link_bps: float | None = None) -> list[tracekit.explain.Sentence]:
    return explain(tracekit.analyze(tracekit.read(str(path))), link_bps=link_bps)


def _tshark_count(path: Path, flt: str) -> int:
    out = subprocess.run([need_tool("tshark"), "-n", "-r", str(path), "-Y", flt], capture_output=True, text=True,
                         check=True).stdout
    return len([ln for ln in out.splitlines() if ln.strip()])


def _window_tr(path: Path) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in (ln.split()[:2] for ln in path.read_text().splitlines() if ln.strip())]


def test_rwnd_limited_is_receive_window_limited() -> None:
    p = sample("linux", "rwnd_limited.pcap")
    # its slow start is told as held by the receiver's window, not as cwnd stopping there
    (run,) = [s for s in _story(p) if s.kind.startswith("slow_start")]
    assert run.values["rwnd_held"] is True and "at least 18,824 B" in run.text
    # tshark: the window filled up again and again, and nothing was retransmitted
    assert _tshark_count(p, "tcp.analysis.window_full") > 10
    assert _tshark_count(p, "tcp.analysis.retransmission || tcp.analysis.fast_retransmission") == 0
    story = _story(p)
    limits = [s for s in story if s.kind.startswith("limit_")]
    assert [s.kind for s in limits] == ["limit_rwnd"]
    assert limits[0].values["rwnd_share"] > 0.9
    assert "advertised receive window" in limits[0].text
    assert not [s for s in story if s.kind.startswith("loss_")]


def test_stall_cut_is_one_timeout_stall_at_the_cut() -> None:
    p = sample("linux", "stall_cut.pcap")
    cut = json.loads(sample("linux", "stall_cut.json").read_text())
    t0, t1 = float(cut["cut_start_rel"]), float(cut["cut_end_rel"])
    stalls = [s for s in _story(p) if s.kind.startswith("stall")]
    assert [s.kind for s in stalls] == ["stall_rto"]
    assert t0 <= stalls[0].time <= t1  # the stall starts while the link is cut
    # and ends with the timeout retransmission after the restore
    assert stalls[0].values["end"] == pytest.approx(cut["recovery_retransmission_rel"], abs=0.05)
    assert "retransmission timeout" in stalls[0].text


@pytest.mark.parametrize("variant", ["tahoe", "reno"])
def test_ns2_tahoe_restarts_reno_recovers_fast(variant: str) -> None:
    run = sample("ns2", f"lab_{variant}")
    win = _window_tr(run / "Window.tr")
    story = _story(run)
    losses = [s for s in story if s.kind.startswith("loss_")]
    first = losses[0]
    # Window.tr: the first fall of the lab's cwnd, and where it landed
    k = next(i for i in range(1, len(win)) if win[i][1] < win[i - 1][1])
    before, after = win[k - 1][1], win[k][1]
    assert first.time == pytest.approx(win[k][0], abs=0.021)
    assert first.values["cwnd_before_bytes"] == pytest.approx(before * 500)
    if variant == "tahoe":
        assert after == 1  # ns-2 Tahoe: fast retransmit, cwnd back to one packet
        assert first.kind == "loss_tahoe" and len(losses) == 1
        assert "slow start" in first.text and "Tahoe" in first.text
    else:
        assert after == before / 2  # Reno halves the window: fast recovery
        assert first.kind == "loss_fast_recovery"
        # the burst of 14 drops is too much for Reno's fast recovery: Window.tr falls to 1 at the timeout
        nxt = next(i for i in range(k + 1, len(win)) if win[i][1] < win[i - 1][1])
        assert win[nxt][1] == 1
        assert losses[1].kind == "loss_timeout"
        assert losses[1].time == pytest.approx(win[nxt][0], abs=0.021)
    assert first.values["cwnd_after_bytes"] == pytest.approx(after * 500)
    dropped = sum(1 for ln in _lines(run) if ln.startswith("d "))
    assert first.values["drops"] == dropped  # every drop of the run came before this first event


def test_ns2_tahoe_slow_starts_are_window_tr_runs() -> None:
    """lab_tahoe's slow starts, from Window.tr (ns-2's own cwnd, in packets of 500 B): up from one
    packet to the peak before the first fall (a loss ends the run), then again from the fall up to
    ssthresh = int(window / 2) (ns-2 Tahoe), where congestion avoidance begins."""
    run = sample("ns2", "lab_tahoe")
    win = _window_tr(run / "Window.tr")
    k = next(i for i in range(1, len(win)) if win[i][1] < win[i - 1][1])
    ca = next(i for i in range(k, len(win)) if win[i][1] >= int(win[k - 1][1] / 2))
    runs = [(0, k, k), (k, ca, ca)]  # (first sample, end, where the run's sentence says it ended)
    told = [s for s in _story(run) if s.kind.startswith("slow_start")]
    assert [s.kind for s in told] == ["slow_start_loss", "slow_start_ca"]
    for s, (a, b, end) in zip(told, runs, strict=True):
        top = max(range(a, b), key=lambda i: (win[i][1], -i))  # the first sample at the run's peak
        assert s.values["from_cwnd_bytes"] == win[a][1] * 500
        assert s.values["cwnd_bytes"] == win[top][1] * 500
        assert s.values["time"] == pytest.approx(win[top][0], abs=1e-9)
        assert s.values["end"] == pytest.approx(win[end][0], abs=1e-9)


def test_account_of_an_analysis_without_kept_reductions() -> None:
    """A stand-in analysis without ``reductions`` (as reports build them) gets the same account:
    the reductions are found from its cwnd frame."""
    an = tracekit.analyze(tracekit.read(str(sample("ns2", "lab_reno"))))
    bare = types.SimpleNamespace(**{f.name: getattr(an, f.name) for f in dataclasses.fields(an)
                                    if f.name != "reductions"})
    told = [s.to_dict() for s in explain(an)]
    assert any(s["kind"].startswith("loss_") for s in told)
    assert [s.to_dict() for s in explain(bare)] == told  # type: ignore[arg-type]


def _lines(run: Path) -> list[str]:
    import gzip

    f = run / "out.tr.gz"
    return gzip.open(f, "rt").read().splitlines() if f.exists() else (run / "out.tr").read_text().splitlines()


def test_slow_reader_zero_windows() -> None:
    p = sample("linux", "slow_reader.pcap")
    zw = [s for s in _story(p) if s.kind == "zero_window"]
    assert len(zw) == 1
    assert zw[0].values["count"] == _tshark_count(p, "tcp.analysis.zero_window")
    assert zw[0].values["stalls"] >= 1 and "zero window" in zw[0].text


def test_goodput_against_link_from_run_json() -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["analyze", str(sample("ns2", "lab_tahoe")), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    link = [e for e in doc["explain"] if e["kind"] == "goodput_link"]
    assert link and link[0]["values"]["link_bps"] == 1e6  # run.json: "bandwidth": "1Mb"
    for e in doc["explain"]:
        assert set(e) >= {"time", "kind", "text", "values"}


def _pattern(kind: str) -> re.Pattern[str]:
    """A template as a regex: its fixed words literally, each field as "a number, a unit, a clause"."""
    parts = re.split(r"\{[a-z_]+\}", TEMPLATES[kind])
    field = r"(?:[-–<0-9.,:→ ()%a-zA-Zµ/]*?)"
    return re.compile("^" + field.join(re.escape(p) for p in parts) + "$")


_WORDS = set(re.findall(r"[a-zA-Z]+", " ".join(TEMPLATES.values()) + " ".join(CLAUSES.values()))) | {
    "B", "kB", "MB", "GB", "s", "ms", "µs", "bit", "kbit", "Mbit", "Gbit", "packet", "packets", "segment",
    "segments", "middle", "sender", "receiver", "the", "of", "path"}


@pytest.mark.parametrize("evil", ["<script>alert(1)</script>", "EVIL Label {flow} %s"])
def test_no_input_text_reaches_a_phrase(tmp_path: Path, evil: str) -> None:
    """A crafted file name and a crafted OPNET statistic label never show in a sentence."""
    pcap = tmp_path / f"{evil.replace('/', '_')}.pcap"
    shutil.copy(sample("linux", "stall_cut.pcap"), pcap)
    opnet = tmp_path / "export.txt"
    opnet.write_text(sample("opnet", "tcp_reno_tab.txt").read_text().replace("Campus Network", evil))
    for p in (pcap, opnet):
        story = _story(p, link_bps=4e6)
        assert story
        for s in story:
            assert "EVIL" not in s.text and "<" not in s.text and "script" not in s.text
            assert _pattern(s.kind).match(s.text), (s.kind, s.text)
            assert set(re.findall(r"[a-zA-Z]+", s.text)) <= _WORDS, s.text


def test_rate_from_text() -> None:
    assert rate_from_text("1Mb") == 1e6
    assert rate_from_text("1Mbps") == 1e6
    assert rate_from_text("10 Mbit/s") == 1e7
    assert rate_from_text("2e6") == 2e6
    assert rate_from_text("fast") is None


def test_analyze_explain_and_summary_lines() -> None:
    res = CliRunner().invoke(main, ["analyze", str(sample("linux", "rwnd_limited.pcap")), "--explain",
                                    "--link-rate", "50Mbit/s"])
    assert res.exit_code == 0, res.output
    assert "receive-window-limited 96 %" in res.output  # the one-line summary under the table
    assert "What happened" in res.output
    assert "= 13 % of the 50 Mbit/s link" in res.output
    bad = CliRunner().invoke(main, ["analyze", str(sample("linux", "rwnd_limited.pcap")), "--link-rate", "fast"])
    assert bad.exit_code == 1 and "--link-rate" in bad.output


def test_every_template_is_documented() -> None:
    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "explain.md").read_text()
    for kind, text in TEMPLATES.items():
        assert f"| `{kind}` | {text.replace('|', '/')} |" in doc, kind
    for kind, text in CLAUSES.items():
        assert f"| `{kind}` | `{text}` |" in doc, kind


def test_every_loss_event_told_names_the_retransmissions_that_back_it() -> None:
    """stall_cut.pcap: the timeout at 1.08 s (tshark: frame 429 is a retransmission) was once told
    as a loss event with "0 segments retransmitted", because the account looked for its
    retransmissions only in the span up to the next event, not as far as the loss evidence
    reaches (one minimum RTT, :func:`tracekit.analysis.cwnd.reductions`). Every ``loss_*``
    sentence must count at least one, and tshark must see one within that reach (a segment below
    the highest sequence sent: at a sender-side capture tshark calls a quick re-send
    "out-of-order" rather than a retransmission, docs/analysis.md)."""
    p = sample("linux", "stall_cut.pcap")
    out = subprocess.run([need_tool("tshark"), "-n", "-r", str(p), "-Y",
                          "tcp.analysis.retransmission || tcp.analysis.fast_retransmission"
                          " || tcp.analysis.out_of_order",
                          "-T", "fields", "-e", "frame.time_relative"], capture_output=True, text=True, check=True)
    resent = [float(x) for x in out.stdout.split()]
    an = tracekit.analyze(tracekit.read(p))
    rtt_min = an.flows["rtt_min_s"].item()
    told = [s for s in explain(an) if s.kind.startswith("loss_")]
    assert len(told) >= 3
    for s in told:
        assert s.values["retransmitted"] >= 1, s.text
        t = s.values["time"]
        assert any(t - 2 * rtt_min <= r <= t + rtt_min for r in resent), s.text
    assert any(s.kind == "loss_timeout" and abs(s.values["time"] - 1.085) < 0.01 for s in told)


def test_several_vantage_points_name_their_connections() -> None:
    """ns-3's dumbbell capture at router n1's device: flow 0 from the middle of its path, the nine others at their
    receivers; the warning says which, so the reader knows why flows 1–9 have no window story."""
    p = sample("ns3", "dumbbell10", "db10-11-0.pcap")
    an = tracekit.analyze(tracekit.read(str(p)))
    rows = an.flows.select("flow", "vantage_point").unique().sort("flow").rows()
    where: dict[str, list[int]] = {}
    for flow, point in rows:
        where.setdefault(point, []).append(flow)
    assert len(where) > 1
    (warn,) = [s for s in explain(an) if s.kind == "warn_vantage"]
    assert warn.values["points"] == where
    assert warn.values["count"] == len(where)
    assert "(middle: flow 0; receiver: flows 1–9)" in warn.text


def test_flow_ids_are_told_in_runs() -> None:
    from tracekit.explain_account import _flow_ids

    assert _flow_ids((3,)) == "flow 3"
    assert _flow_ids((0, 1)) == "flows 0, 1"
    assert _flow_ids((0, 1, 2, 7)) == "flows 0–2, 7"
    assert _flow_ids((0, 2, 4, 6, 8, 9, 10, 12)) == "flows 0, 2, 4, 6 and 4 more"


def test_a_reduction_the_window_did_not_follow_is_told_as_ssthresh_only() -> None:
    """BBR through a shaper (kernel_truth/shaper_bbr): the loss event at 0.128 s sets a new ssthresh while
    the estimate holds at 2,920 B (BBR does not halve its window on a loss), which was once told
    as "cwnd 2,920 B → 2,920 B"."""
    p = sample("linux", "kernel_truth", "shaper_bbr.pcap")
    told = [s for s in _story(p) if s.kind.startswith(("loss_", "reduction_"))]
    held = [s for s in told if "stayed at" in s.text]
    assert held, "no reduction with a held window on this capture"
    for s in told:
        before, after = s.values["cwnd_before_bytes"], s.values["cwnd_after_bytes"]
        fell = before is None or after is None or after < before
        assert ("→" in s.text) == fell, s.text
        if not fell:
            assert "ssthresh set" in s.text


def test_a_window_estimate_below_one_segment_tells_no_window_events() -> None:
    """iperf3's control connection (kernel/cubic flow 0) carries a 37-byte cookie and 1-byte states: its
    estimate never reaches one full segment, which cwnd never falls below (RFC 5681 §3.1), so no slow start
    or reduction is told for it, while the bulk connection's (flow 1) are."""
    p = sample("linux", "kernel", "cubic", "capture.pcap")
    an = tracekit.analyze(tracekit.read(str(p)))
    told = explain(an)
    rows = {(r["flow"], r["dir"]): r for r in an.flows.iter_rows(named=True)}
    small = {k for k, r in rows.items() if r["max_cwnd_bytes"] < r["mss"]}
    assert small == {(0, 0), (0, 1)}
    window = ("slow_start", "loss_", "reduction_")
    for s in told:
        if (s.flow, s.dir) in small:
            assert not s.kind.startswith(window), s.text
    unfilled = [s for s in told if s.kind == "window_unfilled"]
    assert {(s.flow, s.dir) for s in unfilled} == small
    assert all(s.values["max_cwnd_bytes"] < s.values["mss_bytes"] for s in unfilled)
    assert any(s.kind.startswith(window) and s.flow == 1 for s in told)


def test_a_first_flight_under_one_segment_shows_no_initial_window() -> None:
    """iperf3 opens its data connection with a 37-byte cookie and waits: that first flight is what the
    application wrote, not an initial window of "1 segment (37 B)"; a bulk sender's first flight is one."""
    first = {(s.flow, s.dir): s for s in _story(sample("linux", "kernel", "cubic", "capture.pcap"))
             if s.kind.startswith("start_")}
    cookie = first[(1, 0)]
    assert cookie.values["init_window_bytes"] == 37 and cookie.values["init_window_seen"] is False
    assert "37 B, less than one full segment (1,460 B)" in cookie.text and "initial window 1" not in cookie.text
    # nor is its slow start told "from 37 B": cwnd is at least one full segment
    (run,) = [s for s in _story(sample("linux", "kernel", "cubic", "capture.pcap")) if s.kind.startswith("slow_start")]
    assert run.values["from_cwnd_bytes"] == 37 and run.text.startswith("cwnd grew in slow start to 44,888 B")
    told = _story(sample("linux", "bulk_lossy.pcap"))
    (bulk,) = [s for s in told if s.kind.startswith("start_")]
    assert bulk.values["init_window_seen"] is True
    assert f"initial window {bulk.values['init_window_segments']} segments" in bulk.text
    # a first flight that filled the receiver's whole window is the receiver's, not an initial window
    (held,) = [s for s in _story(sample("linux", "slow_reader.pcap")) if s.kind.startswith("start_")]
    assert held.values["init_window_bytes"] == held.values["max_rwnd_bytes"] == 2896
    assert held.values["init_window_seen"] is False and "the receiver's whole advertised window" in held.text
    # one connection captured at both ends (ns-3's dumbbell10: pcaps at the first sender and at its receiver):
    # the sender's capture shows ns-3's initial window of 10 segments; the receiver acknowledged the first
    # segment as it arrived, so its capture counts 1 before that ACK, told as no initial window
    (at_s,) = [s for s in _story(sample("ns3", "dumbbell10", "db10-0-0.pcap")) if s.kind.startswith("start_")]
    (at_r,) = [s for s in _story(sample("ns3", "dumbbell10", "db10-12-0.pcap")) if s.kind.startswith("start_")]
    assert at_s.values["init_window_segments"] == 10 and at_s.values.get("init_window_seen", True) is True
    assert "initial window 10 segments (14,480 B)" in at_s.text
    assert at_r.values["init_window_segments"] == 1 and at_r.values["init_window_seen"] is False
    assert "reached the receiver before its first ACK" in at_r.text and "initial window 1" not in at_r.text
    # ... and what held the sender back is not read at the receiver: there every pause between arrivals
    # looked like "nothing to send" (the receiver's capture of a 100 % cwnd-limited flow read 21 % app-limited)
    (lim_s,) = [s for s in _story(sample("ns3", "dumbbell10", "db10-0-0.pcap")) if s.kind.startswith("limit_")]
    (lim_r,) = [s for s in _story(sample("ns3", "dumbbell10", "db10-12-0.pcap")) if s.kind.startswith("limit_")]
    assert lim_s.kind == "limit_cwnd" and lim_s.values["cwnd_share"] == 1.0
    assert lim_r.kind == "limit_unseen" and lim_r.values == {}
    rows = tracekit.analyze(tracekit.read(sample("ns3", "dumbbell10", "db10-12-0.pcap"))).flows.to_dicts()
    assert [r["vantage_point"] for r in rows] == ["receiver"]
    assert all(rows[0][c] is None for c in ("limited_cwnd_share", "limited_rwnd_share", "limited_app_share"))
    # a run from one full segment (1,448 B of data beside 12 B of timestamps, MSS 1,460 B) keeps its start:
    # stall_cut's slow start after its timeout
    cut = [s for s in _story(sample("linux", "stall_cut.pcap")) if s.kind.startswith("slow_start")]
    assert any(s.values["from_cwnd_bytes"] == 1448 and "from 1,448 B to" in s.text for s in cut)
    first_run = next(s for s in told if s.kind.startswith("slow_start"))
    assert first_run.text.startswith(f"cwnd grew in slow start from {bulk.values['init_window_bytes']:,} B")


def test_a_timeout_stall_ends_at_new_data_not_at_the_timeout() -> None:
    """ns-2's Reno lab: the stall from 2.08 s lasts until new data at 3.85 s, while its timeout re-send left
    at 2.61 s (the retransmissions frame), so the sentence must not say the timeout came at 3.85 s."""
    import polars as pl

    an = tracekit.analyze(tracekit.read(str(sample("ns2", "lab_reno"))))
    (st,) = [s for s in explain(an) if s.kind == "stall_rto"]
    rto = an.retransmissions.filter((pl.col("kind") == "rto") & pl.col("time").is_between(st.time, st.values["end"]))
    assert rto.height and float(rto["time"].min()) < st.values["end"] - 1.0
    assert "timeout at" not in st.text and "new data went out again at 3.85 s" in st.text


def test_drops_are_told_with_the_event_they_precede() -> None:
    """ns-2's dumbbell, flow 1: its lost SYN (0.61 s) brings a reduction at 3.72 s that is no loss event, and
    its first data drop (4.25 s) precedes the loss event at 4.57 s. The first reduction's reach back spans
    3.7 s, which once counted the drops of the next events (6 of them) there and none at 4.57 s."""
    import polars as pl

    an = tracekit.analyze(tracekit.read(str(sample("ns2", "dumbbell"))))
    pk = an.trace.packets
    data_drops = pk.filter((pl.col("event") == "drop") & (pl.col("flow") == 1) & (pl.col("payload") > 0))["time"]
    told = [s for s in explain(an) if s.flow == 1 and s.kind.startswith(("loss_", "reduction_"))]
    first, second = told[0], told[1]
    assert first.kind == "reduction_syn" and first.values["drops"] == 0 and "dropped" not in first.text
    assert second.values["drops"] == int(data_drops.is_between(first.time, second.time).sum()) == 1
    assert sum(s.values["drops"] for s in told) <= data_drops.len()


def test_a_lost_syn_is_told_as_such() -> None:
    """ns-2's dumbbell, flow 1: the SYN dropped at 0.61 s is sent again at 3.6 s (ns-2's 3 s initial RTO). The
    first flight is told at the first data byte (3.72 s), not at the first SYN (0.6 s), and the reduction the
    lost SYN brings (RFC 5681 §3.1: one segment to start with) is told as that, not as a reduction "with no loss
    evidence (1 segment retransmitted)"; the handshake RTT runs from the SYN sent again."""
    import polars as pl

    an = tracekit.analyze(tracekit.read(str(sample("ns2", "dumbbell"))))
    pk = an.trace.packets.filter((pl.col("flow") == 1) & (pl.col("dir") == 0))
    first_data = float(pk.filter(pl.col("payload") > 0)["time"].min())  # type: ignore[arg-type]
    sent = (pl.col("event") == "enqueue") & (pl.col("node") == pk["node"][0])  # (the sender's own events)
    syns = pk.filter(sent & ((pl.col("flags") & 0x12) == 0x02))["time"]
    assert syns.len() == 2 and syns[1] - syns[0] >= 3.0 - 1e-9
    row = an.flows.filter(pl.col("flow") == 1).row(0, named=True)
    assert row["data_start"] == first_data and row["start"] == syns[0]
    assert row["handshake_rtt_s"] < 0.2 < 3.0 < row["handshake_s"]
    told = [s for s in explain(an) if s.flow == 1]
    (opening,) = [s for s in told if s.kind == "start_iw"]
    assert opening.time == first_data and opening.text.startswith("First flight at 3.72 s")
    (resent,) = [s for s in told if s.kind == "syn_resent"]
    assert resent.time == syns[1] and resent.values["handshake_s"] == first_data - syns[0]
    assert "SYN went unanswered and was first sent again at 3.6 s" in resent.text and "3.12 s after" in resent.text
    assert [s.kind for s in told].index("syn_resent") < [s.kind for s in told].index("start_iw")
    (syn,) = [s for s in told if s.kind == "reduction_syn"]
    assert syn.values["retransmitted"] == 1 and syns[1] < first_data <= syn.time
    assert "lost SYN (1 segment re-sent before the first data)" in syn.text
    # the other flows lost no SYN: none of their reductions is told so
    assert not [s for s in explain(an) if s.kind in ("reduction_syn", "syn_resent") and s.flow != 1]


def test_a_bbr_sender_is_told_as_bbr() -> None:
    """The kernel's ss log names each sender's congestion control (``kernel_cc``): a direction sent by BBR
    whose window events are told says first that they read the window in flight, not BBR's states; CUBIC
    and Reno senders say nothing of it. (In the cubic and reno runs iperf3's control connection is BBR,
    the namespace's default: only the bulk transfer was set with ``-C``.)"""
    import polars as pl

    for name in ("bbr", "cubic", "reno"):
        an = tracekit.analyze(tracekit.read(str(sample("linux", "kernel", name))))
        told = explain(an)
        bulk = an.flows.filter(pl.col("kernel_cwnd_compared").is_not_null()).row(0, named=True)
        assert bulk["kernel_cc"] == name
        for r in an.flows.filter(pl.col("kernel_cc").is_not_null()).iter_rows(named=True):
            kinds = [t.kind for t in told if (t.flow, t.dir) == (r["flow"], r["dir"])]
            events = [i for i, k in enumerate(kinds) if k.startswith(("slow_start", "loss_", "reduction"))]
            want = r["kernel_cc"] == "bbr" and bool(events)
            assert ("cc_bbr" in kinds) == want, (name, r["flow"], kinds)
            if want:
                assert kinds.index("cc_bbr") < min(events)
        bulk_kinds = [t.kind for t in told if (t.flow, t.dir) == (bulk["flow"], bulk["dir"])]
        assert ("cc_bbr" in bulk_kinds) == (name == "bbr")


def test_notes_of_a_run_are_not_counted_as_warnings() -> None:
    """ns-3's dumbbell10 run directory holds four packet files and a flows.txt: the reader notes both
    (W-MULTIPLE-PACKET-FILES, W-SKIPPED-FILE), which change no number, so the account does not say
    "numbers may be affected"; a damaged IP length (W-IPLEN) still is counted."""
    run = tracekit.analyze(tracekit.read(str(sample("ns3", "dumbbell10"))))
    codes = {w["code"] for w in run.trace.warnings}
    assert codes == {"W-MULTIPLE-PACKET-FILES", "W-SKIPPED-FILE"} and codes <= NOTES
    assert "warn_other" not in {s.kind for s in explain(run)}
    damaged = tracekit.analyze(tracekit.read(str(sample("field", "iplen_damaged.pcap"))))
    (other,) = [s for s in explain(damaged) if s.kind == "warn_other"]
    assert other.values["count"] == sum(int(w["count"]) for w in damaged.trace.warnings)
