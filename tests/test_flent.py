"""Flent reader, on the three real data files of flent's own test suite (format versions 3 and 4)."""

from __future__ import annotations

import bz2
import gzip
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import need_corpus, sample

import tracekit
from tracekit.cli.main import main
from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import Limits
from tracekit.parsers import flent, head_of, sniff_bytes


def _doc(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


def _series(t: tracekit.Trace, source: str) -> pl.DataFrame:
    return t.samples.filter(pl.col("source") == source).sort("time")


@pytest.mark.parametrize(("name", "version", "test"), [
    ("test-tcp_nup.flent.gz", 3, "tcp_nup"), ("test-tcp_1up_noping-cpu_stats.flent.gz", 4, "tcp_1up_noping"),
    ("test-rrul.flent.gz", 3, "rrul_be")])
def test_real_files(name: str, version: int, test: str) -> None:
    path = need_corpus("flent", name)
    t = tracekit.read(path)
    doc = _doc(path)
    assert t.meta["format"] == "flent" and t.meta["version"] == version and t.warnings == []
    assert t.meta["flent"]["NAME"] == test and t.meta["flent"]["T0"] == doc["metadata"]["T0"]
    t0 = datetime.fromisoformat(doc["metadata"]["T0"].replace("Z", "+00:00")).timestamp()
    assert t.meta["t0_ns"] == int(t0 * 1e9)
    # every non-null result is one sample, on x_values; nulls (gaps) are dropped
    x = doc["x_values"]
    for series, values in doc["results"].items():
        s = _series(t, series)
        want = [(x[i], v) for i, v in enumerate(values) if v is not None]
        assert s.height == len(want), series
        assert s["time"].to_list() == [w[0] for w in want]


def test_units_are_converted() -> None:
    path = need_corpus("flent", "test-tcp_nup.flent.gz")
    t = tracekit.read(path)
    doc = _doc(path)
    checks = [("TCP upload::1", "throughput", "bps", 1e6), ("Ping (ms) ICMP", "ping_rtt", "s", 1e-3),
              ("TCP upload::1::tcp_cwnd", "cwnd", "packets", 1.0), ("TCP upload::1::tcp_rtt", "rtt", "s", 1e-3),
              ("TCP upload avg", "throughput_avg", "bps", 1e6), ("TCP upload sum", "throughput_sum", "bps", 1e6)]
    for series, metric, unit, scale in checks:
        s = _series(t, series)
        assert set(s["metric"]) == {metric} and set(s["unit"]) == {unit}, series
        raw = [v for v in doc["results"][series] if v is not None]
        assert s["value"].to_list() == pytest.approx([v * scale for v in raw], rel=1e-12)


def test_raw_values_on_request() -> None:
    path = need_corpus("flent", "test-tcp_nup.flent.gz")
    doc = _doc(path)
    plain = tracekit.read(path)
    t = tracekit.read(path, raw=True)
    assert not plain.samples["source"].str.ends_with("[raw]").any()
    raw = doc["raw_values"]["TCP upload::1"]
    cw = _series(t, "TCP upload::1::tcp_cwnd [raw]")
    with_cwnd = [p for p in raw if "tcp_cwnd" in p]
    assert cw.height == len(with_cwnd) and set(cw["metric"]) == {"cwnd"}
    t0 = t.meta["t0_ns"] / 1e9
    assert cw["time"].to_list() == pytest.approx(sorted(p["t"] - t0 for p in with_cwnd), abs=1e-6)
    val = _series(t, "TCP upload::1 [raw]")
    assert val["value"].to_list() == pytest.approx(
        [p["val"] * 1e6 for p in sorted(raw, key=lambda p: p["t"]) if "val" in p])


def test_host_series_and_segment_size() -> None:
    t = tracekit.read(need_corpus("flent", "test-tcp_1up_noping-cpu_stats.flent.gz"))
    cpu = t.samples.filter(pl.col("metric") == "cpu_usage")
    assert set(cpu["node"]) == {"10.70.2.2", "127.0.0.1"} and set(cpu["unit"]) == {"ratio"}
    assert t.meta["segment_size"] == 1448  # SERIES_META TCP_MSS: cwnd in packets x 1448 = bytes
    rrul = tracekit.read(need_corpus("flent", "test-rrul.flent.gz"))
    q = rrul.samples.filter(pl.col("metric") == "qdisc_backlog_bytes")
    assert set(q["node"]) == {"testbed-02", "testbed-04"}


# ---- hostile and edge cases (small documents made here) -----------------------------------------

def _small(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "metadata": {"NAME": "tcp_1up", "T0": "2024-01-01T00:00:00.000000Z", "STEP_SIZE": 0.2,
                     "SERIES_META": {"TCP upload": {"UNITS": "Mbits/s"}, "Ping (ms) ICMP": {"UNITS": "ms"}}},
        "raw_values": {"TCP upload": [{"t": 1704067200.1, "val": 10.0, "dur": 0.2}]},
        "results": {"TCP upload": [None, 10.0, 12.5, None], "Ping (ms) ICMP": [20.0, None, 30.0, 25.0]},
        "version": 4,
        "x_values": [0.0, 0.2, 0.4, 0.6000000000000001],
    }
    doc.update(changes)
    return doc


def _gz(doc: Any) -> bytes:
    return gzip.compress(json.dumps(doc).encode())


def test_small_document_and_compressions(tmp_path: Path) -> None:
    for name, data in (("a.flent.gz", _gz(_small())), ("a.flent", json.dumps(_small()).encode()),
                       ("a.flent.bz2", bz2.compress(json.dumps(_small()).encode()))):
        p = tmp_path / name
        p.write_bytes(data)
        t = tracekit.read(p)
        assert t.meta["format"] == "flent", name
        tp = _series(t, "TCP upload")
        assert list(zip(tp["time"], tp["value"], strict=False)) == [(0.2, 10e6), (0.4, 12.5e6)]
        assert _series(t, "Ping (ms) ICMP")["value"].to_list() == pytest.approx([0.02, 0.03, 0.025])


def test_versions() -> None:
    with pytest.raises(UnknownFormatError, match="upgrade tracekit"):
        flent.read(_gz(_small(version=5)), name="new.flent.gz")
    t = flent.read(_gz(_small(version=2)), name="old.flent.gz")
    assert [w["code"] for w in t.warnings] == ["W-VERSION"]
    with pytest.raises(CorruptTraceError, match="version"):
        flent.read(_gz(_small(version="4")), name="v.flent.gz")


def test_broken_documents(tmp_path: Path) -> None:
    text = json.dumps(_small(), indent=2).encode()
    with pytest.raises(CorruptTraceError, match="invalid JSON") as exc:
        flent.read(text[:-40], name="cut.flent")
    assert exc.value.line is not None
    p = tmp_path / "cut.flent.gz"
    p.write_bytes(_gz(_small())[:-20])
    with pytest.raises(CorruptTraceError, match="cut.flent.gz"):
        tracekit.read(p, "flent")
    with pytest.raises(CorruptTraceError, match="x_values"):
        flent.read(_gz({"metadata": {}, "results": {}}), name="nox.flent.gz")
    with pytest.raises(UnknownFormatError, match="not an object"):
        flent.read(b"[1, 2, 3]", name="list.flent")
    with pytest.raises(UnknownFormatError, match="empty"):
        flent.read(b"", name="e.flent")


def test_bad_series_are_warnings() -> None:
    doc = _small(results={"TCP upload": [1.0, "2.5", {"x": 1}, None, 7.0], "Ping (ms) ICMP": [1.0]})
    t = flent.read(_gz(doc), name="b.flent.gz")
    codes = sorted(w["code"] for w in t.warnings)
    assert codes == ["W-BADSERIES", "W-BADVALUE"]
    # cut to the 4 x_values; the numeric string is read, the object is not
    assert _series(t, "TCP upload")["value"].to_list() == [1e6, 2.5e6]


def test_gzip_bomb_is_a_limit() -> None:
    bomb = gzip.compress(b'{"metadata": {}, "x_values": [], "results": {}, "pad": "' + b" " * (8 << 20) + b'"}')
    with pytest.raises(LimitError, match="decompress"):
        flent.read(bomb, name="bomb.flent.gz", limits=Limits(ratio_floor_bytes=1 << 20, max_ratio=10))


def test_sniffing() -> None:
    for name in ("test-tcp_nup.flent.gz", "test-tcp_1up_noping-cpu_stats.flent.gz", "test-rrul.flent.gz"):
        assert sniff_bytes(head_of(need_corpus("flent", name).read_bytes())) == "flent"
    assert not flent.sniff(sample("ns3", "dumbbell", "run.json").read_bytes())
    assert not flent.sniff(b'{"a": 1, "results": 2}')
    assert flent.sniff(head_of(_gz(_small())))


def test_analyze_json() -> None:
    r = CliRunner().invoke(main, ["analyze", str(need_corpus("flent", "test-tcp_1up_noping-cpu_stats.flent.gz")),
                                  "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # stderr notes "tool-reported series only"
    assert doc["trace"]["format"] == "flent" and doc["trace"]["samples"] > 0 and doc["flows"] == []


def test_raw_times_are_relative_to_t0_in_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """T0 is UTC even when written without a zone; the machine's time zone must not shift raw times."""
    import time as _time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    _time.tzset()
    try:
        for t0 in ("2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:00"):
            doc = _small()
            doc["metadata"]["T0"] = t0
            t = flent.read(_gz(doc), name="r.flent.gz", raw=True)
            assert _series(t, "TCP upload [raw]")["time"].to_list() == pytest.approx([0.1]), t0
            assert t.meta["t0_ns"] == 1704067200 * 10**9
    finally:
        monkeypatch.delenv("TZ")
        _time.tzset()
