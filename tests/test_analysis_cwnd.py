"""Congestion window: the estimate from packets against the simulators' own cwnd (ground truth)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from anb_data import compare_cwnd, match_events, median_rtt, ns2_run, ns3_sender, run_json
from conftest import make_events
from polars.testing import assert_frame_equal

from tracekit import schema
from tracekit.analysis.cwnd import cwnd, data_directions, flow_stats, loss_events

#: ns-2 runs with the tool's cwnd beside the packets: Window.tr (tpWindow lab, Tahoe/Reno,
#: drop-tail and error-model losses) and the dumbbell's cwnd_ agent trace (Reno, NewReno, Sack1, Tahoe).
NS2_RUNS = ["lab_reno", "lab_tahoe", "lab_lossy", "grading/ref_seed1", "grading/submissions/reno",
            "grading/submissions/queue", "dumbbell"]
SEG = 1000


def _flows_with_truth(an: object) -> list[int]:
    cw = an.cwnd  # type: ignore[attr-defined]
    return sorted(cw.filter(pl.col("source") == "trace")["flow"].drop_nulls().unique().to_list())


@pytest.mark.parametrize("run", NS2_RUNS)
def test_ns2_estimate_tracks_the_simulators_cwnd(run: str) -> None:
    """Median relative error ≤ 10 % over the cwnd-limited periods, every flow of the run."""
    t, an = ns2_run(run)
    seg = t.meta["segment_size"]
    limit = run_json(run)["window_pkts"] * seg  # window_: the sender's cap (Window.tr clips at it too)
    flows = _flows_with_truth(an)
    assert flows == sorted(an.flows["flow"].unique().to_list()), "every data flow should have its traced cwnd"
    for flow in flows:
        r = compare_cwnd(an, flow, limit)
        print(f"{run} flow {flow}: median |rel err| {r['median']:.4f}, p90 {r['p90']:.3f} over {r['n']} of "
              f"{r['grid']} grid points (10 ms); cwnd-limited periods {r['periods'][:6]}"
              f"{' …' if len(r['periods']) > 6 else ''} ({len(r['periods'])} in all)")
        assert r["n"] >= 300
        assert r["median"] <= 0.10


@pytest.mark.parametrize("run", NS2_RUNS)
def test_ns2_loss_events_match_the_reductions(run: str) -> None:
    """Each multiplicative decrease of the traced cwnd has an estimated loss event within ~1 RTT, and vice versa."""
    _, an = ns2_run(run)
    ev = loss_events(an.cwnd)
    for flow in _flows_with_truth(an):
        est = an.cwnd.filter((pl.col("flow") == flow) & (pl.col("source") == "estimate"))
        t0, t1 = est["time"].min(), est["time"].max()
        # after the last segment the tool may still change cwnd (idle restart): no packets to compare
        truth = ev.filter((pl.col("flow") == flow) & (pl.col("source") == "trace")
                          & pl.col("time").is_between(t0, t1))["time"].to_numpy()
        found = ev.filter((pl.col("flow") == flow) & (pl.col("source") == "estimate"))["time"].to_numpy()
        tol = median_rtt(an, flow) + 0.02  # + Window.tr's 20 ms sampling
        missed, extra = match_events(truth, found, tol)
        print(f"{run} flow {flow}: {len(truth)} reductions in the trace, {len(found)} loss events estimated "
              f"(tolerance {tol:.3f} s); missed {missed}, unmatched {extra}")
        assert truth.size >= 1
        assert not missed and not extra


@pytest.mark.parametrize("run", NS2_RUNS)
def test_ns2_phases_agree_with_the_trace(run: str) -> None:
    """Outside recoveries, slow start / congestion avoidance agree with the trace's own cwnd vs ssthresh."""
    _, an = ns2_run(run)
    for flow in _flows_with_truth(an):
        cw = an.cwnd.filter(pl.col("flow") == flow)
        tr = cw.filter(pl.col("source") == "trace").sort("time")
        es = cw.filter(pl.col("source") == "estimate").sort("time")
        j = tr.filter(pl.col("time").is_between(es["time"].min(), es["time"].max())).join_asof(
            es.select("time", pl.col("phase").alias("est_phase")), on="time")
        # the trace's phase from its own series: ssthresh inferred from its own reductions
        truth_phase = pl.when(pl.col("ssthresh_bytes").is_null() | (pl.col("cwnd_bytes") < pl.col("ssthresh_bytes"))
                              ).then(pl.lit("slow_start")).otherwise(pl.lit("congestion_avoidance"))
        j = j.filter(pl.col("est_phase") != "recovery").with_columns(truth_phase=truth_phase)
        agree = float((j["truth_phase"] == j["est_phase"]).mean())
        print(f"{run} flow {flow}: phases agree on {agree:.3f} of {j.height} samples")
        assert agree >= 0.95


def test_lab_reno_story() -> None:
    """The lab's Reno run: fast retransmit (66 → 33 segments), stalled recovery, timeout (→ 1), slow start to 16."""
    t, an = ns2_run("lab_reno")
    seg = t.meta["segment_size"]
    ev = loss_events(an.cwnd).filter(pl.col("source") == "estimate")
    assert ev.height == 2
    fast, rto = ev.row(0, named=True), ev.row(1, named=True)
    # ns-2 halves min(cwnd, window_): int(66/2) = 33, then int(33/2) = 16 segments
    assert fast["ssthresh_bytes"] == 33 * seg and rto["ssthresh_bytes"] == 16 * seg
    assert fast["time"] == pytest.approx(2.097, abs=0.01) and rto["time"] == pytest.approx(2.613, abs=0.01)
    est = an.cwnd.filter(pl.col("source") == "estimate")
    during = est.filter(pl.col("time").is_between(fast["time"], rto["time"], closed="left"))
    assert set(during["phase"]) == {"recovery"} and set(during["cwnd_bytes"]) == {33.0 * seg}
    assert est.filter(pl.col("time") == rto["time"])["cwnd_bytes"].to_list() == [1.0 * seg]
    after = est.filter(pl.col("time") > rto["time"])
    first_ca = after.filter(pl.col("phase") == "congestion_avoidance")["time"].min()
    assert after.filter(pl.col("time") < first_ca)["phase"].unique().to_list() == ["slow_start"]
    assert after.filter(pl.col("time") == first_ca)["cwnd_bytes"][0] >= 16 * seg


def test_ns3_estimate_tracks_congestion_window() -> None:
    """ns-3 NewReno (SACK, PRR, delayed ACKs) at the sender's capture vs its CongestionWindow trace (bytes)."""
    t, an = ns3_sender()
    rwnd = float(an.packets.filter(pl.col("dir") == 1)["win"].max())
    r = compare_cwnd(an, 0, rwnd)
    print(f"ns-3 flow 0: median |rel err| {r['median']:.4f}, p90 {r['p90']:.3f} over {r['n']} of {r['grid']} "
          f"grid points; receiver window {rwnd:.0f} B; cwnd-limited periods {r['periods']}")
    assert r["n"] >= 600
    assert r["median"] <= 0.10


def test_ns3_loss_events_and_ssthresh() -> None:
    """Every ssthresh change of ns-3 is a loss event of the estimate within an RTT, with ssthresh within 1 MSS."""
    t, an = ns3_sender()
    ev = loss_events(an.cwnd)
    truth = ev.filter(pl.col("source") == "trace")
    found = ev.filter(pl.col("source") == "estimate")
    tol = median_rtt(an, 0)
    missed, extra = match_events(truth["time"].to_numpy(), found["time"].to_numpy(), tol)
    print(f"ns-3: trace events {truth.select('time', 'ssthresh_bytes').rows()}, "
          f"estimated {found.select('time', 'ssthresh_bytes').rows()}; missed {missed}, unmatched {extra}")
    assert truth.height == 4 and not missed and not extra
    # ns-3 sets ssthresh = BytesInFlight / 2 (RFC 5681 eq. 4): the estimate uses the un-SACKed flight too
    j = truth.sort("time").join_asof(found.sort("time").select("time", pl.col("ssthresh_bytes").alias("est")),
                                     on="time", strategy="nearest")
    assert ((j["est"] - j["ssthresh_bytes"]).abs() <= 1448).all()


def test_cwnd_frame_is_the_declared_schema_in_its_declared_order() -> None:
    """source/phase are the schema's Enums, each row's source is one of its categories, and the
    frame is sorted by flow, dir, source *as strings sort* ("estimate" before "trace"), time."""
    _, an = ns3_sender()
    cw = an.cwnd
    assert dict(cw.schema) == schema.CWND
    assert set(cw["source"].to_list()) == {"estimate", "trace"} and cw["phase"].null_count() == 0
    as_text = cw.with_columns(pl.col("source", "phase").cast(pl.String))
    assert_frame_equal(as_text, as_text.sort("flow", "dir", "source", "time", maintain_order=True))
    # source/phase as plain strings (a frame not made by cwnd()) give the same answers
    assert_frame_equal(flow_stats(cw), flow_stats(as_text))
    assert_frame_equal(loss_events(cw), loss_events(as_text))


def test_trace_rows_take_the_tools_ssthresh_and_recoveries() -> None:
    """With a tool ssthresh series, trace rows carry it; the ns-3 phases follow cwnd vs that ssthresh."""
    _, an = ns3_sender()
    tr = an.cwnd.filter(pl.col("source") == "trace")
    assert tr["ssthresh_bytes"].drop_nulls().unique().sort().to_list() == [2896.0, 4344.0, 7240.0, 13032.0]
    before = tr.filter(pl.col("time") < 1.01)
    assert before["ssthresh_bytes"].null_count() == before.height  # 4294967295 = "not set yet"
    assert set(before["phase"]) == {"slow_start"}
    assert "recovery" in set(tr["phase"]) and "congestion_avoidance" in set(tr["phase"])


# ---- hand-made traces --------------------------------------------------------------------------


def _ack_clocked(window: int, n: int, rtt: float = 0.1, lose_at: int | None = None, rto: float = 1.0
                 ) -> pl.DataFrame:
    """A sender that keeps ``window`` segments of SEG bytes in flight, ACK per segment.

    With ``lose_at``, segment ``lose_at`` and every later one of that window are lost: the
    ACKs stop, the timer fires ``rto`` s after the last new ACK and the sender goes back to
    snd_una with one segment, then two, as a timeout restart does.
    """
    rows: list[tuple[float, int, int, int]] = []  # time, dir, seq, ack
    sent: dict[int, float] = {}
    for i in range(window):
        sent[i] = i * 1e-4
        rows.append((sent[i], 0, 1 + i * SEG, 1))
    i, last = 0, 0.0
    while i < n:
        if lose_at is not None and i == lose_at:
            break
        t_ack = sent[i] + rtt
        rows.append((t_ack, 1, 1, 1 + (i + 1) * SEG))
        last = t_ack
        k = i + window
        if k < n:
            sent[k] = t_ack
            rows.append((t_ack, 0, 1 + k * SEG, 1))
        i += 1
    if lose_at is not None:
        t = last + rto
        rows.append((t, 0, 1 + lose_at * SEG, 1))  # the timeout retransmission
        rows.append((t + rtt, 1, 1, 1 + (lose_at + 1) * SEG))
        rows.append((t + rtt, 0, 1 + (lose_at + 1) * SEG, 1))
        rows.append((t + rtt, 0, 1 + (lose_at + 2) * SEG, 1))
    rows.sort(key=lambda r: r[0])
    times, dirs, seqs, acks = zip(*rows, strict=False)
    data = [d == 0 for d in dirs]
    return make_events(
        time=list(times), dir=list(dirs), seq=list(seqs), ack=list(acks),
        payload=[SEG if x else 0 for x in data], size=[SEG + 40 if x else 40 for x in data],
        flags=[0x18 if x else 0x10 for x in data],
    )


def _run(pk: pl.DataFrame, samples: pl.DataFrame | None = None, **meta: object) -> pl.DataFrame:
    return cwnd(pk, samples if samples is not None else schema.empty(schema.SAMPLES), schema.empty(schema.FLIGHT),
                schema.empty(schema.RETRANSMISSIONS), dict(meta))


def test_window_limited_sender_estimate_is_the_window() -> None:
    pk = _ack_clocked(window=6, n=60)
    out = _run(pk)
    est = out.filter(pl.col("source") == "estimate")
    assert out.columns == list(schema.CWND) and out.schema == pl.Schema(schema.CWND)
    assert est.height == 60
    assert (est["cwnd_bytes"] == 6 * SEG).all()  # the burst of the first window counts as a whole
    assert set(est["phase"]) == {"slow_start"} and est["ssthresh_bytes"].null_count() == est.height
    stats = flow_stats(out)
    assert stats.row(0, named=True) == {"flow": 0, "dir": 0, "max_cwnd_bytes": 6.0 * SEG,
                                        "cwnd_source": "estimate", "loss_events": 0, "first_loss_s": None}


def test_timeout_restarts_from_one_segment() -> None:
    pk = _ack_clocked(window=8, n=40, lose_at=20)
    out = _run(pk)
    est = out.filter(pl.col("source") == "estimate").sort("time")
    retx_t = pk.filter((pl.col("dir") == 0) & (pl.col("seq") == 1 + 20 * SEG))["time"].max()
    at = est.filter(pl.col("time") == retx_t).row(0, named=True)
    assert at["cwnd_bytes"] == SEG and at["ssthresh_bytes"] == 4 * SEG and at["phase"] == "slow_start"
    assert est.filter(pl.col("time") > retx_t)["cwnd_bytes"].to_list() == [2.0 * SEG, 2.0 * SEG]
    ev = loss_events(out)
    assert ev["time"].to_list() == [retx_t]
    assert flow_stats(out)["loss_events"].to_list() == [1]


def test_samples_only_series_become_flows_in_bytes() -> None:
    """No packets: each series is a flow; packets × segment size; the bytes copy ``combine`` adds is not doubled."""
    t = [0.0, 0.1, 0.2, 0.3]
    sm = pl.concat([
        schema.conform(pl.DataFrame({"time": t, "metric": "cwnd", "value": [1.0, 2.0, 4.0, 2.0],
                                     "unit": "packets", "source": "Window.tr"}), schema.SAMPLES),
        schema.conform(pl.DataFrame({"time": t, "metric": "cwnd", "value": [500.0, 1000.0, 2000.0, 1000.0],
                                     "unit": "bytes", "source": "Window.tr"}), schema.SAMPLES),
        schema.conform(pl.DataFrame({"time": t, "metric": "cwnd", "value": [3.0, 3.0, 3.0, 3.0],
                                     "unit": "packets", "source": "other"}), schema.SAMPLES),
    ])
    out = _run(schema.empty(schema.PACKETS), sm, segment_size=500)
    assert out.group_by("flow").len().sort("flow").rows() == [(0, 4), (1, 4)]
    assert out.filter(pl.col("flow") == 0)["cwnd_bytes"].to_list() == [500.0, 1000.0, 2000.0, 1000.0]
    assert out.filter(pl.col("flow") == 1)["cwnd_bytes"].to_list() == [1500.0] * 4
    # 4 -> 2 packets halves: one loss event, ssthresh max(2000/2, 2 segments) from then on
    ev = loss_events(out)
    assert ev.select("flow", "time", "ssthresh_bytes").rows() == [(0, 0.3, 1000.0)]
    # without a segment size a packet count cannot become bytes: nothing is invented
    assert _run(schema.empty(schema.PACKETS), sm.filter(pl.col("unit") == "packets")).is_empty()


def test_samples_attach_to_the_single_data_flow_and_unset_ssthresh_is_null() -> None:
    pk = _ack_clocked(window=4, n=20)
    sm = schema.conform(pl.DataFrame({
        "time": [0.0, 0.05, 0.05, 0.5], "metric": ["cwnd", "ssthresh", "cwnd", "ssthresh"],
        "value": [4000.0, 4294967295.0, 4000.0, 2000.0], "unit": "bytes", "source": "x",
    }), schema.SAMPLES)
    out = _run(pk, sm)
    tr = out.filter(pl.col("source") == "trace")
    assert tr["flow"].to_list() == [0, 0] and tr["dir"].to_list() == [0, 0]
    assert tr["ssthresh_bytes"].to_list() == [None, None]
    assert flow_stats(out)["cwnd_source"].to_list() == ["trace"]


def test_decreases_in_a_traced_series() -> None:
    """Loss events in a tool's series: runs of falling samples that lose ≥ 20 %; small wobbles are not losses."""
    def series(values: list[float], flow: int) -> pl.DataFrame:
        return schema.conform(pl.DataFrame({
            "flow": flow, "dir": 0, "time": [0.1 * i for i in range(len(values))], "cwnd_bytes": values,
            "source": "trace", "phase": "slow_start"}), schema.CWND)

    reno = series([66, 66, 33, 33, 33, 1, 2, 3], 0)  # samples/ns2/lab_reno/Window.tr's 66 -> 33 -> 1
    prr = series([20, 21, 19, 18, 17, 15, 12, 10, 12, 13], 1)  # one reduction, one ACK at a time
    wobble = series([20, 19, 20, 21, 20, 22], 2)
    ev = loss_events(pl.concat([reno, prr, wobble]))
    assert ev.select("flow", pl.col("time").round(6)).rows() == [(0, 0.2), (0, 0.5), (1, 0.2)]


def test_empty_and_ack_only_inputs() -> None:
    empty = _run(schema.empty(schema.PACKETS))
    assert empty.is_empty() and empty.schema == pl.Schema(schema.CWND)
    assert flow_stats(empty).is_empty() and loss_events(empty).is_empty()
    acks_only = make_events(payload=[0, 0, 0], flags=[0x10] * 3)
    assert _run(acks_only).is_empty()
    assert data_directions(acks_only, {}).is_empty()


def test_hostile_frames_never_raise() -> None:
    """Random, inconsistent packet frames (nulls, negative numbers, ACKs from nowhere): frames out, no exception."""
    from tracekit.analysis.fairness import fairness
    from tracekit.analysis.queue import queue
    from tracekit.analysis.throughput import throughput

    rng = np.random.default_rng(20)

    def holes(values: np.ndarray) -> list[object]:
        return [None if rng.random() < 0.1 else v.item() for v in values]

    for _ in range(60):
        n = int(rng.integers(1, 50))
        ev = make_events(
            time=sorted((rng.random(n) * rng.choice([1e-6, 1.0, 1e5])).tolist()),
            flow=holes(rng.integers(0, 3, n)), dir=holes(rng.integers(0, 2, n)),
            seq=holes(rng.integers(-5, 5000, n)), ack=holes(rng.integers(-5, 5000, n)),
            payload=holes(rng.choice([0, 0, 1, 500, 1448], n)), size=rng.integers(40, 1600, n).tolist(),
            flags=holes(rng.choice([0x02, 0x12, 0x10, 0x18, 0x11, 0], n)), mss=holes(rng.choice([536, 1460], n)),
            event=rng.choice(["enqueue", "dequeue", "drop", "recv"], n).tolist(),
            link=rng.choice(["0->1", "1->0"], n).tolist(), pkt_id=holes(rng.integers(0, 8, n)),
        )
        sm = schema.conform(pl.DataFrame({
            "time": rng.random(4), "metric": rng.choice(["cwnd", "ssthresh"], 4), "value": rng.random(4) * 1e5,
            "unit": rng.choice(["bytes", "packets"], 4), "source": "x", "flow": holes(rng.integers(0, 3, 4)),
        }), schema.SAMPLES)
        out = _run(ev, sm, segment_size=500)
        assert out.schema == pl.Schema(schema.CWND)
        assert out["cwnd_bytes"].is_finite().all() and (out["cwnd_bytes"] >= 0).all()
        assert set(out["phase"].drop_nulls()) <= {"slow_start", "congestion_avoidance", "recovery"}
        flow_stats(out)
        loss_events(out)
        tp = throughput(ev)
        assert tp.schema == pl.Schema(schema.THROUGHPUT)
        fairness(tp)
        q = queue(ev)
        keyed = ev.filter(pl.col("pkt_id").is_not_null())
        if keyed.height == ev.height:  # with packet ids a queue can never go negative
            assert (q["packets"] >= 0).all()


# ---- order and scale: the estimate works direction by direction, in capture order ----------------------


def _flows(count: int, n: int = 40) -> pl.DataFrame:
    """``count`` ack-clocked flows (some with a timeout), interleaved in time, frames numbered in time order."""
    parts = [_ack_clocked(window=4 + k % 5, n=n, lose_at=n // 2 if k % 3 == 0 else None).with_columns(
        flow=pl.lit(k, pl.UInt32), time=pl.col("time") + k * 1e-4) for k in range(count)]
    return pl.concat(parts).sort("time", maintain_order=True).with_columns(
        frame=pl.int_range(1, pl.len() + 1).cast(pl.UInt64))


def test_estimate_follows_capture_order_not_row_order() -> None:
    """Rows out of time order (a capture merged from several queues) or shuffled: the same estimate."""
    pk = _flows(3)
    ref = _run(pk)
    assert ref.filter(pl.col("source") == "estimate")["flow"].unique().sort().to_list() == [0, 1, 2]
    for seed in (1, 2):
        assert_frame_equal(_run(pk.sample(fraction=1.0, shuffle=True, seed=seed)), ref)
    # one queue's packets written late: in frame order times go back, across flows and within one
    late = pk.with_columns(pl.when(pl.col("flow") == 1).then(pl.col("frame") + 10**6).otherwise(pl.col("frame"))
                           .alias("frame")).sort("frame")
    assert_frame_equal(_run(late), ref)
    # frame numbers out of time order within one direction (times made unique so that frames break no tie)
    unique = pk.with_columns(pl.col("time") + pl.col("frame").cast(pl.Float64) * 1e-9)
    acks = unique.filter((pl.col("flow") == 0) & (pl.col("dir") == 1))["frame"].to_list()
    data = unique.filter((pl.col("flow") == 0) & (pl.col("dir") == 0))["frame"].to_list()
    swap = {acks[2]: acks[15], acks[15]: acks[2], data[12]: data[14], data[14]: data[12]}
    jumbled = unique.with_columns(pl.col("frame").replace(swap)).sort("frame")
    assert_frame_equal(_run(jumbled), _run(unique))


def test_many_flows_estimate_each_as_alone() -> None:
    """With many directions (searches on one axis instead of one per direction) each flow is estimated as alone."""
    pk = _flows(70, n=24)
    together = _run(pk)
    assert together["flow"].n_unique() == 70
    for k in (0, 1, 33, 69):
        alone = _run(pk.filter(pl.col("flow") == k))
        assert alone.height > 0
        assert_frame_equal(together.filter(pl.col("flow") == k), alone)
    assert flow_stats(together).filter(pl.col("flow") == 33).row(0, named=True) == flow_stats(
        _run(pk.filter(pl.col("flow") == 33))).row(0, named=True)


def test_loss_events_and_stats_do_not_depend_on_row_order() -> None:
    """A frame in any row order (estimate and traced series mixed) gives the same events and statistics."""
    est = _run(_ack_clocked(window=8, n=40, lose_at=20))
    trace = schema.conform(pl.DataFrame({
        "flow": 0, "dir": 0, "time": [0.1 * i for i in range(8)], "cwnd_bytes": [66.0, 66, 33, 33, 33, 1, 2, 3],
        "source": "trace", "phase": "slow_start"}), schema.CWND)
    other = est.with_columns(flow=pl.lit(5, pl.UInt32))  # a second direction with the estimate only
    frame = pl.concat([est, trace, other])
    ref_events = loss_events(frame)
    assert ref_events.select("flow", "source").unique().sort("flow", "source").rows() == [
        (0, "estimate"), (0, "trace"), (5, "estimate")]
    stats = flow_stats(frame)
    assert stats.select("flow", "cwnd_source", "loss_events").rows() == [(0, "trace", 2), (5, "estimate", 1)]
    for seed in (1, 2):
        shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
        assert_frame_equal(loss_events(shuffled).sort(ref_events.columns), ref_events.sort(ref_events.columns))
        assert_frame_equal(flow_stats(shuffled), stats)


def test_reductions_kept_on_the_analysis_mark_the_loss_events() -> None:
    """ns-2 sweep/win8 drops nothing (no ``d`` line in out.tr), yet Window.tr falls once, after the
    last data, when the idle agent restarts from one segment (RFC 5681 §4.1): one reduction, no
    loss event. lab_lossy: every reduction has its drops, and the flows count the marked ones."""
    from anb_data import SAMPLES

    t, an = ns2_run("sweep/win8")
    assert not [ln for ln in (SAMPLES / "ns2" / "sweep" / "win8" / "out.tr").read_text().splitlines()
                if ln.startswith("d ")]
    win = [tuple(map(float, ln.split()[:2])) for ln in (SAMPLES / "ns2" / "sweep" / "win8" / "Window.tr")
           .read_text().splitlines() if ln.strip()]
    falls = [win[i][0] for i in range(1, len(win)) if win[i][1] < win[i - 1][1]]
    red = an.reductions
    assert red is not None and red.schema == pl.Schema(schema.REDUCTIONS)
    assert red["time"].to_list() == pytest.approx(falls, abs=1e-9) and len(falls) == 1
    assert red["loss_event"].to_list() == [False] and falls[0] > an.flows["end"].max()
    assert an.flows["loss_events"].to_list() == [0]
    _, lossy = ns2_run("lab_lossy")
    marked = lossy.reductions.filter("loss_event").group_by("flow", "dir").len().sort("flow", "dir")
    assert marked["len"].to_list() == lossy.flows.filter(pl.col("loss_events") > 0)["loss_events"].to_list()
    assert lossy.reductions.height >= 10  # the 2 %-loss run's falls (docs/analysis.md: 12 / 12)

def test_core_passes_reject_inconsistent_columns() -> None:
    """The compiled estimate checks its columns: a mismatch is a ValueError, never a crash."""
    from tracekit import _core

    t, seq = np.array([0.0, 1.0]), np.array([1000, 2000], dtype=np.int64)
    no, zero, pay = np.zeros(2, dtype=bool), np.zeros(2, dtype=np.int64), np.full(2, 1000, dtype=np.int64)
    none, nan = np.empty(0, dtype=np.int64), np.full(2, np.nan)
    rows = (t, seq, pay, zero, no, no, nan)  # no ACK before any row
    sack = (none, none, none, none, none)  # no SACKed segment
    retx = (none, none, np.empty(0, dtype=bool))
    acks = (np.empty(0), none)
    one, syn = np.array([0], dtype=np.int64), np.zeros(1, dtype=bool)

    def dirs(hi: int = 2, mss: tuple[float, ...] = (1000.0,)) -> tuple[np.ndarray, ...]:
        return one, np.array([hi]), one, one, np.array(mss), np.array([0.1]), syn

    with pytest.raises(ValueError, match="outside"):  # a direction past the rows
        _core.cwnd_estimate(rows, sack, retx, acks, dirs(hi=3), True)
    with pytest.raises(ValueError, match="outside"):  # a retransmitted row past the rows
        _core.cwnd_estimate(rows, sack, (np.array([7]), np.array([0]), np.ones(1, dtype=bool)), acks,
                            dirs(), True)
    with pytest.raises(ValueError, match="values"):  # a SACKed segment's row without its place
        _core.cwnd_estimate(rows, (none, none, none, seq, none), retx, acks, dirs(), True)
    with pytest.raises(ValueError, match="values"):  # an ACK time per row, but not for every row
        _core.cwnd_estimate((t, seq, pay, zero, no, no, nan[:1]), sack, retx, acks, dirs(),
                            True)
    with pytest.raises(ValueError, match="values"):  # a segment size per direction, but two for one direction
        _core.cwnd_estimate(rows, sack, retx, acks, dirs(mss=(1000.0, 1000.0)), True)
    with pytest.raises(ValueError, match="values"):  # columns of different lengths
        _core.cwnd_estimate((t, seq[:1], pay, zero, no, no, nan), sack, retx, acks, dirs(),
                            True)
    est, st, phase, events = _core.cwnd_estimate(rows, sack, retx, acks, dirs(), True)
    assert est.tolist() == [2000.0, 2000.0]  # one ACK's burst
    assert np.isnan(st).all() and phase.tolist() == [0, 0] and events[0].size == 0  # no loss: slow start
