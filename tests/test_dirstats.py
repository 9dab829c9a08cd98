"""The per-direction accumulator (``src/state/dirstats.rs``) against tshark on real captures.

Counts, bytes, unique bytes, time span, SYN options and the handshake RTT of every data
direction of the flows frame, each against tshark's own fields for the same packets
(``tcp.len``, relative ``tcp.seq``, ``frame.time_relative``, ``tcp.options.mss_val``,
``tcp.options.wscale.shift``, ``tcp.analysis.initial_rtt``).
"""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import polars as pl
import pytest
from conftest import need_tool, sample

import tracekit
from tracekit.analysis import _dirstats, rtt
from tracekit.analysis._state import prepare
from tracekit.analysis.vantage import vantage
from tracekit.streamed import summary_document

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


def _syn_sent_twice(src: Path, out: Path, before_s: float) -> Path:
    """``src`` (a little-endian microsecond pcap) with a copy of its first packet, the SYN, ``before_s``
    earlier: the capture of a SYN lost past the capture point and sent again after its timeout."""
    raw = src.read_bytes()
    assert raw[:4] == b"\xd4\xc3\xb2\xa1"
    sec, usec, incl = struct.unpack_from("<IIII", raw, 24)[:3]
    first = raw[24:24 + 16 + incl]
    t = sec + usec / 1e6 - before_s
    copy = struct.pack("<II", int(t), round((t - int(t)) * 1e6)) + first[8:]
    out.write_bytes(raw[:24] + copy + raw[24:])
    return out


def test_a_resent_syn_times_the_handshake_from_the_last_syn(tmp_path: Path) -> None:
    """A SYN sent again (RFC 6298 §5.7: after its 1 s, or ns-2's 3 s, timeout): the handshake RTT runs
    from the last SYN, as Wireshark's ``ts_mru_syn``, on both paths; the first SYN still starts
    the connection (``start``, ``handshake_s``)."""
    src = sample("linux", "bulk_lossy.pcap")
    path = _syn_sent_twice(src, tmp_path / "syn_twice.pcap", 1.0)
    ts = _tshark(str(path))
    want = ts["tcp.analysis.initial_rtt"].drop_nulls()[0]
    assert ts["tcp.flags.syn"][:2].to_list() == [1, 1]
    before = tracekit.analyze(tracekit.read(src)).flows.row(0, named=True)
    frames = tracekit.analyze(tracekit.read(path)).flows.row(0, named=True)
    assert abs(frames["handshake_rtt_s"] - want) < 1e-6
    assert abs(frames["handshake_rtt_s"] - before["handshake_rtt_s"]) < 1e-9
    assert abs(frames["handshake_s"] - before["handshake_s"] - 1.0) < 1e-6
    streamed = summary_document(str(path))
    assert streamed["flows"][0]["handshake_rtt_s"] == frames["handshake_rtt_s"]
