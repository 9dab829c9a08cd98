"""Agreement with tshark, frame by frame, on every sample capture (and re-containered copies).

Compared exactly: the packet count; every frame's time (to the ns tshark prints); per connection (tracekit
``flow`` <-> tshark ``tcp.stream``, which must map one to one) the packet and payload-byte sums; and for every
TCP frame the relative ``tcp.seq``, ``tcp.ack``, ``tcp.flags``, ``tcp.window_size`` and ``tcp.len``. Rows are matched on
frame numbers, since tracekit keeps no row for non-IP frames.

Two representational differences are handled explicitly (docs/formats-captures.md):

* ``tcp.ack`` without the ACK flag: tshark prints 0 (or the raw field made relative); tracekit
  has no acknowledgement there (null). Compared only where the ACK flag is set.
* tshark's relative numbers are 32-bit; tracekit's are unwrapped (past 4 GiB, or negative for
  data from before the base). Compared modulo 2^32.
"""

from __future__ import annotations

import gzip
import io
import subprocess
from pathlib import Path

import polars as pl
import pytest
from conftest import SAMPLES, need_tool, sample

import tracekit

FIELDS = [
    "frame.number",
    "frame.time_relative",
    "tcp.stream",
    "tcp.len",
    "tcp.seq",
    "tcp.ack",
    "tcp.flags",
    "tcp.window_size",
]
TWO32 = 1 << 32


def tshark_fields(path: Path) -> pl.DataFrame:
    """One row per frame: tshark's (default-preference) view of its TCP header."""
    exe = need_tool("tshark")
    cmd = [exe, "-n", "-r", str(path), "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, check=True, timeout=300).stdout
    raw = pl.read_csv(io.BytesIO(out), separator="\t", has_header=False, new_columns=FIELDS,
                      schema_overrides={f: pl.String for f in FIELDS}, quote_char=None)
    return raw.select(
        pl.col("frame.number").cast(pl.UInt64).alias("frame"),
        pl.col("frame.time_relative").cast(pl.Float64).alias("t_time"),
        pl.col("tcp.stream").cast(pl.Int64).alias("stream"),
        pl.col("tcp.len").cast(pl.Int64).alias("t_len"),
        pl.col("tcp.seq").cast(pl.Int64).alias("t_seq"),
        pl.col("tcp.ack").cast(pl.Int64).alias("t_ack"),
        pl.col("tcp.flags").str.strip_prefix("0x").str.to_integer(base=16, strict=False).alias("t_flags"),
        pl.col("tcp.window_size").cast(pl.Int64).alias("t_win"),
    )


def assert_agrees(path: Path, trace: tracekit.Trace | None = None) -> pl.DataFrame:
    """Check tracekit's reading of ``path`` against tshark's; returns the joined TCP frames."""
    ts = tshark_fields(path)
    t = trace or tracekit.read(path)
    assert t.meta["counts"]["records"] == ts.height
    ours = t.packets.filter(pl.col("proto") == "tcp")
    theirs = ts.filter(pl.col("stream").is_not_null())
    # the same frames carry TCP
    assert ours["frame"].to_list() == theirs["frame"].to_list()
    j = ours.join(theirs, on="frame", how="inner", maintain_order="left")
    # connections map one to one
    pairs = j.select("flow", "stream").unique()
    assert pairs.height == pairs["flow"].n_unique() == pairs["stream"].n_unique()
    per_flow = j.group_by("flow").agg(pl.len().alias("n"), pl.col("payload").cast(pl.Int64).sum().alias("bytes"),
                                      pl.col("stream").first())
    per_stream = theirs.group_by("stream").agg(pl.len().alias("n"), pl.col("t_len").sum().alias("bytes"))
    both = per_flow.join(per_stream, on="stream", suffix="_t")
    assert both.height == per_stream.height
    assert both.filter((pl.col("n") != pl.col("n_t")) | (pl.col("bytes") != pl.col("bytes_t"))).height == 0
    # field by field, every TCP frame
    acked = (pl.col("flags") & 0x10) != 0
    mismatch = {
        "payload": pl.col("payload").cast(pl.Int64) != pl.col("t_len"),
        "seq": (pl.col("seq") % TWO32) != pl.col("t_seq"),
        "ack": pl.when(acked).then((pl.col("ack") % TWO32) != pl.col("t_ack")).otherwise(pl.col("ack").is_not_null()),
        "flags": pl.col("flags").cast(pl.Int64) != pl.col("t_flags"),
        "win": pl.col("win") != pl.col("t_win"),
        "time": (pl.col("time") - pl.col("t_time")).abs() > 1e-9,
    }
    for name, expr in mismatch.items():
        bad = j.filter(expr.fill_null(True))
        assert bad.height == 0, f"{path.name}: {name} differs on {bad.height} frame(s), first: {bad.row(0, named=True)}"
    return j


def _captures() -> list[Path]:
    # samples/field: tshark is wrong on some by design (expected.json's `reference`, docs/analysis.md);
    # test_field_decode.py and test_flight_all_captures.py compare them with tshark or the reference
    return sorted(p for p in SAMPLES.glob("**/*.pcap*") if p.is_file() and "field" not in p.parts)


@pytest.mark.parametrize("path", _captures(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_sample_agrees_with_tshark(path: Path) -> None:
    j = assert_agrees(path)
    assert j.height > 0


def test_there_are_linux_and_ns3_samples() -> None:
    names = {p.parent.name for p in _captures()}
    assert {"linux", "dumbbell"} <= names


def test_pcapng_rewrite_agrees(tmp_path: Path) -> None:
    editcap = need_tool("editcap")
    out = tmp_path / "ipv6_bulk.pcapng"
    subprocess.run([editcap, "-F", "pcapng", str(sample("linux", "ipv6_bulk.pcap")), str(out)], check=True,
                   capture_output=True)
    t = tracekit.read(out)
    assert t.meta["format"] == "pcapng"
    assert_agrees(out, t)


def test_gzip_capture_agrees(tmp_path: Path) -> None:
    out = tmp_path / "bulk_lossy.pcap.gz"
    out.write_bytes(gzip.compress(sample("linux", "bulk_lossy.pcap").read_bytes()))
    t = tracekit.read(out)
    assert t.meta["compression"] == "gzip"
    assert_agrees(out, t)


def test_reused_port_pair_opens_a_new_connection_like_tshark(tmp_path: Path) -> None:
    """Every Linux sample uses 10.213.0.1:40000 -> :5001; merged, the runs reuse the port pair.

    tshark opens a new ``tcp.stream`` at each SYN whose sequence number differs from the
    sender's base on that port pair; so does tracekit.
    """
    mergecap = need_tool("mergecap")
    parts = [sample("linux", n) for n in ("slow_reader.pcap", "rwnd_limited.pcap", "bulk_lossy.pcap")]
    out = tmp_path / "reused.pcap"
    # -a: concatenate in this order (the runs' clocks do not follow the file names)
    subprocess.run([mergecap, "-a", "-F", "pcap", "-w", str(out), *map(str, parts)], check=True, capture_output=True)
    j = assert_agrees(out)
    assert j["flow"].n_unique() == 3
    # each run is its own connection, with its own relative numbers from 0
    firsts = j.group_by("flow", maintain_order=True).agg(pl.col("seq").first(), pl.col("flags").first())
    assert firsts.rows() == [(0, 0, 0x02), (1, 0, 0x02), (2, 0, 0x02)]


@pytest.mark.parametrize("name", ["bulk_lossy.pcap", "any_sll2.pcap"])
def test_slow_path_reads_samples_like_the_fast_path(name: str) -> None:
    need_tool("tshark")
    pytest.importorskip("pyshark")
    path = sample("linux", name)
    fast, slow = tracekit.read(path), tracekit.read(path, "tshark")
    cols = ["frame", "time", "flow", "dir", "src", "dst", "sport", "dport", "proto", "size", "caplen", "payload",
            "seq", "ack", "flags", "win", "mss", "wscale", "ts_val", "ts_ecr", "sack"]
    assert slow.packets.select(cols).equals(fast.packets.select(cols))
