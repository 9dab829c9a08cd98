"""The per-direction accumulator (``src/state/dirstats.rs``) against tshark on real captures.

Counts, bytes, unique bytes, time span, SYN options and the handshake RTT of every data
direction of the flows frame, each against tshark's own fields for the same packets
(``tcp.len``, relative ``tcp.seq``, ``frame.time_relative``, ``tcp.options.mss_val``,
``tcp.options.wscale.shift``, ``tcp.analysis.initial_rtt``).
"""

from __future__ import annotations

import subprocess

import polars as pl
import pytest
from conftest import need_tool, sample

import tracekit
from tracekit.analysis import _dirstats, rtt
from tracekit.analysis._state import prepare
from tracekit.analysis.vantage import vantage

FIELDS = ("tcp.stream", "tcp.srcport", "frame.time_relative", "tcp.len", "tcp.seq", "tcp.flags.syn",
          "tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.analysis.initial_rtt")


def _tshark(path: str) -> pl.DataFrame:
    out = subprocess.run(
        [need_tool("tshark"), "-n", "-r", path, "-Y", "tcp", "-T", "fields", "-E", "separator=;",
         "-E", "occurrence=f", *[a for f in FIELDS for a in ("-e", f)]],
        check=True, capture_output=True, text=True).stdout
    rows = [dict(zip(FIELDS, line.split(";"), strict=True)) for line in out.splitlines()]
    df = pl.DataFrame(rows, schema=dict.fromkeys(FIELDS, pl.String), orient="row")
    return df.with_columns(pl.col(c).replace("", None).cast(pl.Float64 if c in (
        "frame.time_relative", "tcp.analysis.initial_rtt") else pl.Int64) for c in FIELDS)


@pytest.mark.parametrize("name", ["bulk_lossy.pcap", "rwnd_limited.pcap", "slow_reader.pcap", "ipv6_bulk.pcap"])
def test_direction_summary_matches_tshark(name: str) -> None:
    path = str(sample("linux", name))
    ts = _tshark(path)
    syn = pl.col("tcp.flags.syn") == 1
    data = pl.col("tcp.len") > 0
    want = ts.group_by("tcp.stream", "tcp.srcport").agg(
        pl.len().alias("packets"), data.sum().alias("data_packets"), pl.col("tcp.len").sum().alias("data_bytes"),
        ((pl.col("tcp.seq") + pl.col("tcp.len")).filter(data).max() - pl.col("tcp.seq").filter(data).min())
        .alias("unique_bytes"),
        pl.col("frame.time_relative").min().alias("start"), pl.col("frame.time_relative").max().alias("end"),
        pl.col("tcp.options.mss_val").filter(syn).drop_nulls().first().alias("mss"),
        pl.col("tcp.options.wscale.shift").filter(syn).drop_nulls().first().alias("wscale"),
        pl.col("tcp.analysis.initial_rtt").drop_nulls().first().alias("hs"),
    ).filter(pl.col("data_bytes") > 0)
    pk = vantage(tracekit.read(path).packets)
    got = _dirstats.of_packets(pk).filter(pl.col("data_bytes") > 0).rename({"hs_rtt": "_hs_rtt"})
    assert got.height == want.height > 0
    j = got.join(want, left_on="sport", right_on="tcp.srcport", suffix="_ts")
    assert j.height == got.height
    for c in ("packets", "data_packets", "data_bytes", "unique_bytes", "mss", "wscale"):
        assert j[c].cast(pl.Int64).to_list() == j[f"{c}_ts"].to_list(), c
    for c in ("start", "end"):
        assert (j[c] - j[f"{c}_ts"]).abs().max() < 1e-6, c  # type: ignore[operator]
    # tshark puts the handshake RTT on the packets after it; the state's rows give the same
    hs = j.join(rtt.handshake(prepare(pk)), on="flow", how="left")
    assert hs["hs"].null_count() == 0 and ((hs["_hs_rtt"] - hs["hs"]).abs() < 1e-6).all()
    assert hs["hs_rtt"].equals(hs["_hs_rtt"], check_names=False)
    # scaling is in effect when both SYNs (two source ports) carried the option (RFC 7323 §2.2)
    scaled = ts.filter(syn & pl.col("tcp.options.wscale.shift").is_not_null()).group_by("tcp.stream").agg(
        (pl.col("tcp.srcport").n_unique() == 2).alias("both"))
    k = j.join(scaled, on="tcp.stream", how="left")
    assert k["window_scaling"].to_list() == k["both"].fill_null(False).to_list()
