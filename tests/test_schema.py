"""The schema contract: conform, validate (every problem at once), Trace and combine."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import make_events, make_trace

from tracekit import schema
from tracekit.errors import CorruptTraceError, SchemaError, TruncatedError
from tracekit.trace import Trace, WarningLog, combine


def test_make_events_conforms() -> None:
    df = make_events(seq=[1, 1449], payload=[1448, 1448])
    assert dict(df.schema) == schema.PACKETS
    assert df.height == 2


def test_validate_reports_every_problem() -> None:
    bad = make_events(3).with_columns(pl.col("time").cast(pl.Float32)).drop("flags")
    bad = bad.with_columns(pl.lit(None, pl.UInt32).alias("size"))
    tr = Trace(bad, schema.empty(schema.SAMPLES), {"format": "x", "paths": ["f"]})
    with pytest.raises(SchemaError) as err:
        schema.validate(tr)
    msg = str(err.value)
    assert "missing column 'flags'" in msg
    assert "packets.time: dtype Float32" in msg
    assert "packets.size: 3 null value(s)" in msg
    assert len(err.value.problems) == 3


def test_validate_rejects_unknown_units_and_nonfinite_time() -> None:
    samples = pl.DataFrame({"time": [0.0, float("inf")], "metric": ["cwnd"] * 2, "value": [1.0, 2.0],
                            "unit": ["furlongs", "bytes"], "source": ["x", "x"]})
    with pytest.raises(SchemaError) as err:
        make_trace(None, samples)
    assert "unknown unit(s) ['furlongs']" in str(err.value)
    assert "non-finite" in str(err.value)


def test_warning_log_counts_and_strict() -> None:
    log = WarningLog("f.pcap")
    log.add("W-X", "thing", count=2, offset=10)
    log.add("W-X", "thing", count=3, offset=99)
    assert log.to_list() == [{"code": "W-X", "message": "thing", "count": 5, "offset": 10, "line": None,
                              "frame": None}]
    strict = WarningLog("f.pcap", strict=True)
    with pytest.raises(TruncatedError):
        strict.add("W-TRUNCATED", "cut", offset=5)
    with pytest.raises(CorruptTraceError, match="strict"):
        strict.add("W-BADLINE", "bad", line=3)


def test_combine_adds_byte_cwnd_from_segment_size() -> None:
    pk = make_trace(make_events(2), segment_size=500)
    cw = pl.DataFrame({"time": [0.1, 0.12], "metric": ["cwnd", "cwnd"], "value": [1.0, 2.0],
                       "unit": ["packets", "packets"], "source": ["Window.tr"] * 2})
    s = make_trace(None, cw)
    both = combine([pk, s], path="run")
    got = both.samples.filter(pl.col("unit") == "bytes")["value"].to_list()
    assert got == [500.0, 1000.0]
    assert both.meta["format"] == "dir" and both.meta["segment_size"] == 500
    assert both.packets.height == 2


def test_combine_aligns_wall_clock_captures_on_the_earliest() -> None:
    """Two captures of one run that started 2 s apart keep their real distance once combined."""
    a = make_trace(make_events(time=[0.0, 1.0])).with_meta(t0_ns=10**18)
    b = make_trace(make_events(time=[0.0, 0.5])).with_meta(t0_ns=10**18 + 2 * 10**9)
    c = combine([b, a], path="run")
    assert c.meta["t0_ns"] == 10**18
    assert c.packets["time"].to_list() == [0.0, 1.0, 2.0, 2.5]
    # a wall-clock capture beside a simulator trace: no common clock, times untouched
    sim = make_trace(make_events(time=[5.0]))
    d = combine([b, sim], path="run")
    assert d.meta["t0_ns"] is None and d.packets["time"].to_list() == [0.0, 0.5, 5.0]
