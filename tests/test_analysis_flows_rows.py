"""The flows summary's per-direction arithmetic in plain Python (tracekit/_flowrows.py).

Hand-checked numbers; units: bytes, seconds, bits per second. The frames these rules make are
pinned by tests/test_frames_snapshot.py.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import sample

import tracekit
from tracekit import _flowrows, models
from tracekit._flowrows import (
    loss_event_rate,
    loss_rate,
    model_rates,
    rate_bps,
    rates,
    rto_s,
    transfer_and_goodput,
    with_models,
    with_zero_counts,
)
from tracekit.analysis import _batches


def test_module_imports_neither_polars_nor_numpy() -> None:
    """The summary's arithmetic must run from per-direction accumulators alone (issue 21)."""
    for path in (Path(_flowrows.__file__), Path(models.__file__)):
        tree = ast.parse(path.read_text())
        top = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
        top |= {(n.module or "").split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom)}
        assert not top & {"polars", "numpy"}, path
    names = {a.name.split(".")[0] for n in ast.walk(ast.parse(Path(_flowrows.__file__).read_text()))
             if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert not names & {"polars", "numpy"}


def test_rate_bps() -> None:
    assert rate_bps(1000, 2.0) == 4000.0  # 8000 bits in 2 s
    assert rate_bps(1000, 0.0) is None and rate_bps(1000, -1.0) is None and rate_bps(1000, math.nan) is None
    assert rate_bps(None, 1.0) is None and rate_bps(5, None) is None


def test_rates_over_the_time_span() -> None:
    r = rates({"start": 1.0, "end": 3.0, "wire_bytes": 2500, "unique_bytes": None})
    assert r["duration"] == 2.0 and r["unique_bytes"] == 0
    assert r["throughput_bps"] == 10_000.0 and r["goodput_bps"] == 0.0
    one = rates({"start": 1.0, "end": 1.0, "wire_bytes": 60, "unique_bytes": 10})
    assert one["duration"] == 0.0 and one["throughput_bps"] is None and one["goodput_bps"] is None


def _row(**kw: Any) -> dict[str, Any]:
    r = {"start": 0.5, "end": 4.5, "wire_bytes": 1500, "unique_bytes": 1200, "_syn_t": 0.5, "_data_t0": 0.75,
         "_acked_t": 2.5, "_ack_t": 2.5, "_ack_bytes": 1000, "_rx_bytes": None, "_rx_t": None}
    r.update(kw)
    return transfer_and_goodput(rates(r))


def test_transfer_and_goodput_from_acks() -> None:
    r = _row()
    assert r["transfer_s"] == 2.0  # first SYN 0.5 → the ACK of the last byte 2.5
    assert r["handshake_s"] == 0.25  # first SYN → first data byte 0.75
    assert r["goodput_source"] == "ack" and r["delivered_bytes"] == 1000
    assert r["goodput_bps"] == 4000.0  # 8000 bits from start 0.5 to the last ACK 2.5


def test_transfer_and_goodput_from_receive_events() -> None:
    r = _row(_rx_bytes=900, _rx_t=1.5)
    assert r["goodput_source"] == "receive" and r["delivered_bytes"] == 900
    assert r["goodput_bps"] == 7200.0  # 7200 bits from 0.5 to the last receive at 1.5


def test_transfer_and_goodput_without_acks_is_the_sent_bound() -> None:
    r = _row(_ack_bytes=None, _acked_t=None, _ack_t=None, _syn_t=None)
    assert r["goodput_source"] == "sent" and r["delivered_bytes"] == 1200
    assert r["goodput_bps"] == 1200 * 8 / 4.0  # unique bytes over the duration, as rates() left it
    assert r["transfer_s"] is None and r["handshake_s"] is None
    late = _row(_syn_t=1.0)  # a SYN after the first data byte (the direction's own SYN missed): not the start
    assert late["handshake_s"] is None and late["transfer_s"] == 1.75


def test_goodput_needs_a_delivery_after_start() -> None:
    r = _row(_acked_t=None, _ack_t=0.5)
    assert r["goodput_source"] == "ack" and r["goodput_bps"] is None and r["transfer_s"] is None


def test_loss_rate_capture_and_simulator() -> None:
    cap = loss_rate({"retrans_packets": 5, "retrans_spurious": 1, "data_packets": 100}, simulator=False)
    assert cap["drops"] is None and cap["loss_rate"] == 0.04  # 4 real re-sends of 100 segments
    sim = loss_rate({"drops": 3, "retrans_packets": 5, "retrans_spurious": 0, "data_packets": 100}, simulator=True)
    assert sim["drops"] == 3 and sim["loss_rate"] == 0.03
    none = loss_rate({"drops": None, "retrans_packets": 5, "retrans_spurious": 0, "data_packets": 100}, simulator=True)
    assert none["drops"] == 0 and none["loss_rate"] == 0.0
    assert loss_rate({"retrans_packets": 0, "retrans_spurious": 0, "data_packets": 0}, simulator=False)[
        "loss_rate"] is None


def test_loss_event_rate() -> None:
    assert loss_event_rate({"loss_events": 2, "data_packets": 100}) == 0.02
    assert loss_event_rate({"loss_events": None, "data_packets": 100}) is None
    assert loss_event_rate({"data_packets": 100}) is None


def test_rto_has_a_floor_of_200_ms() -> None:
    assert rto_s(0.1, 0.05) == 0.1 + 4 * 0.05  # srtt + 4·rttvar
    assert rto_s(0.01, 0.01) == 0.2 and rto_s(None, 0.1) == 0.2 and rto_s(math.nan, 0.1) == 0.2


def test_model_rates() -> None:
    m, p, w = model_rates(0.01, 1000, 0.1, 1.0, 65535)
    assert m == pytest.approx(math.sqrt(1.5) * 8000 / (0.1 * 0.1)) == pytest.approx(979_795.9, rel=1e-7)
    assert w == 65535 * 8 / 0.1 == 5_242_800.0
    assert p is not None and p < m  # timeouts cost throughput
    assert p == models.padhye(0.01, 1000, 0.1, 1.0, wmax_bytes=65535)
    # no window known: Padhye with a 10^12-byte window, no window limit
    assert model_rates(0.01, 1000, 0.1, 1.0, None) == (m, models.padhye(0.01, 1000, 0.1, 1.0, wmax_bytes=1e12), None)
    # no loss event, or no RTT: no model; the window limit needs the RTT only
    assert model_rates(0.0, 1000, 0.1, 1.0, 65535) == (None, None, w)
    assert model_rates(None, 1000, 0.1, 1.0, 65535) == (None, None, w)
    assert model_rates(0.01, 1000, None, 1.0, 65535) == (None, None, None)
    assert model_rates(0.01, None, 0.1, 1.0, 65535) == (None, None, w)  # no segment size: nan, shown as None
    assert model_rates(0.01, 1000, 0.1, math.inf, 65535)[1] is None


def test_with_models_fills_every_record() -> None:
    rows = [{"loss_events": 1, "data_packets": 100, "_smss": 1000, "rtt_mean_s": 0.1, "srtt": 0.1, "rttvar": 0.05,
             "max_rwnd_bytes": 65535},
            {"loss_events": None, "data_packets": 10, "_smss": 1000, "rtt_mean_s": 0.1, "max_rwnd_bytes": None}]
    a, b = with_models(rows)
    assert a["loss_event_rate"] == 0.01
    assert a["mathis_bps"] == models.mathis(0.01, 1000.0, 0.1)
    assert a["padhye_bps"] == models.padhye(0.01, 1000.0, 0.1, 0.1 + 4 * 0.05, wmax_bytes=65535.0)
    assert a["window_limited_bps"] == 5_242_800.0
    assert b["loss_event_rate"] is None and b["mathis_bps"] is None and b["window_limited_bps"] is None


def test_zero_counts() -> None:
    r = with_zero_counts({"retrans_packets": None, "dup_acks": 3, "stall_time_s": None})
    assert r["retrans_packets"] == 0 and r["dup_acks"] == 3 and r["stall_time_s"] == 0.0 and r["stall_count"] == 0


def test_models_take_and_give_plain_floats() -> None:
    assert type(models.mathis(0.01, 1000, 0.1)) is float and models.mathis(0.0, 1000, 0.1) == math.inf
    assert models.window_limited(1000, 0.0) == math.inf and math.isnan(models.window_limited(0, 0.0))
    assert math.isnan(models.padhye(1.0, 1000, 0.1, 1.0))  # every packet lost: log1p(-1) = -inf, nan, no error


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"with_models": 0, "mathis": 0}
    batch, mathis = _flowrows.with_models, models.mathis

    def counted_batch(rows: Any) -> Any:
        calls["with_models"] += 1
        return batch(rows)

    def counted_mathis(*a: Any, **k: Any) -> Any:
        calls["mathis"] += 1
        return mathis(*a, **k)

    monkeypatch.setattr(_flowrows, "with_models", counted_batch)
    monkeypatch.setattr(models, "mathis", counted_mathis)
    return calls


def test_models_run_once_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The models run once per batch of directions, once the loss events are known (not per row in a
    polars map, and not again after the cwnd analysis), and Mathis once per direction that has a loss event."""
    calls = _counting(monkeypatch)
    an = tracekit.analyze(tracekit.read(sample("linux", "bulk_lossy.pcap")))
    assert calls["with_models"] == 1
    assert calls["mathis"] == an.flows["mathis_bps"].is_not_null().sum() >= 1


def test_models_run_once_per_batch_of_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracekit.read(sample("ns3", "dumbbell10", "db10-10-10.pcap"))
    monkeypatch.setattr(_batches, "BATCH_ROWS", 64)
    n = len(list(_batches.batches(trace.packets, trace)))
    assert n >= 2
    calls = _counting(monkeypatch)
    an = tracekit.analyze(trace)
    assert calls["with_models"] == n
    assert calls["mathis"] == an.flows["mathis_bps"].is_not_null().sum()
