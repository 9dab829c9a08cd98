"""Acceptance (issue #24 point 1): bytes in flight and connection counts against tshark on every capture.

Every capture of the repository (``samples/**/*.pcap*`` and captures under ``tests/data``)
is read by tracekit and by tshark (``tcp.analysis.bytes_in_flight``, ``tcp.stream``). Per
data frame (``tcp.len`` > 0) the two agree when both are empty or they differ by at most one
MSS of the connection (its largest segment); over all frames together at least 99.5 % must
agree. ``python tests/test_flight_all_captures.py`` prints the per-file table.
"""

from __future__ import annotations

import functools
import io
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import ROOT, need_tool

import tracekit

CAPTURES = sorted(
    str(p.relative_to(ROOT))
    for pattern in ("samples/**/*.pcap*", "tests/data/**/*.pcap*")
    for p in ROOT.glob(pattern)
    if p.is_file()
)


@functools.cache
def peer(rel: str) -> str:
    """The capture tshark reads for ``rel``: the file itself, or for field samples where tshark is
    wrong the ``reference`` file of ``samples/field/expected.json`` (same packets, same frames)."""
    exp = json.loads((ROOT / "samples/field/expected.json").read_text())["files"]
    p = Path(rel)
    ref = exp.get(p.name, {}).get("reference", "tshark") if p.parent == Path("samples/field") else "tshark"
    return rel if ref == "tshark" else str(p.parent / ref)


@functools.cache
def tshark(rel: str) -> pl.DataFrame:
    """Wireshark's frame number, stream, TCP payload and bytes in flight of every TCP frame."""
    tool = need_tool("tshark")
    fields = ["frame.number", "tcp.stream", "tcp.len", "tcp.analysis.bytes_in_flight"]
    cmd = [tool, "-n", "-r", str(ROOT / rel), "-Y", "tcp", "-T", "fields", "-E", "separator=\t", "-E", "quote=n"]
    for f in fields:
        cmd += ["-e", f]
    # exit status 2 on a damaged later pcapng section, after printing the packets before it
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False).stdout
    if not out.strip():  # no TCP frame at all
        return pl.DataFrame(schema={"frame": pl.UInt64, "stream": pl.Int64, "len": pl.Int64, "bif": pl.Int64})
    df = pl.read_csv(io.StringIO(out), separator="\t", has_header=False, new_columns=fields, quote_char=None,
                     infer_schema=False)
    return df.select(
        pl.col("frame.number").cast(pl.UInt64).alias("frame"),
        pl.col("tcp.stream").cast(pl.Int64).alias("stream"),
        pl.col("tcp.len").cast(pl.Int64).alias("len"),
        pl.col("tcp.analysis.bytes_in_flight").cast(pl.Int64).alias("bif"),
    )


def compare(rel: str) -> tuple[int, int, int, int]:
    """(data frames, agreeing frames, tshark's connections, tracekit's connections) of one capture."""
    ws = tshark(peer(rel))
    a = tracekit.analyze(tracekit.read(ROOT / rel))
    data = ws.filter(pl.col("len") > 0)
    # one MSS: the connection's largest segment as tshark saw it
    mss = data.group_by("stream").agg(pl.col("len").max().alias("mss"))
    fl = a.flight.select("frame", "flight_bytes")
    j = data.join(mss, on="stream", how="left").join(fl, on="frame", how="left")
    ok = j["flight_bytes"].eq_missing(j["bif"]) | ((j["flight_bytes"] - j["bif"]).abs() <= j["mss"]).fill_null(False)
    pk = a.packets.filter(pl.col("proto") == "tcp")
    return j.height, int(ok.sum()), ws["stream"].n_unique(), pk["flow"].drop_nulls().n_unique()


def test_captures_found() -> None:
    assert len(CAPTURES) >= 30, CAPTURES


@pytest.mark.parametrize("rel", CAPTURES)
def test_connection_count_equals_tsharks(rel: str) -> None:
    _, _, ws_conns, tk_conns = compare(rel)
    assert tk_conns == ws_conns, f"{rel}: tracekit {tk_conns} connections, tshark {ws_conns}"


def test_bytes_in_flight_agree_with_tshark_on_all_captures() -> None:
    total = agree = 0
    worst: list[tuple[float, str]] = []
    for rel in CAPTURES:
        n, k, _, _ = compare(rel)
        total += n
        agree += k
        if n:
            worst.append((k / n, rel))
    share = agree / max(total, 1)
    print(f"bytes in flight within one MSS of tshark: {agree}/{total} = {share:.3%}; worst: {sorted(worst)[:3]}")
    assert total > 10_000
    assert share >= 0.995


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    tot = agr = 0
    for rel in CAPTURES:
        n, k, wc, tc = compare(rel)
        tot, agr = tot + n, agr + k
        print(f"{rel}\t{n}\t{k}\t{k / max(n, 1):.4f}\tconns tshark {wc} tracekit {tc}")
    print(f"ALL\t{tot}\t{agr}\t{agr / max(tot, 1):.4%}")
