"""OPNET/Riverbed spreadsheet-export reader, on the four spellings in samples/opnet (made by make_samples.py).

The samples are constructed from documentation (no real export was found); the checks below
compare what the reader returns with the cells of the files themselves.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import sample

import tracekit
from tracekit.cli.main import main
from tracekit.errors import CorruptTraceError, UnknownFormatError, UsageError
from tracekit.parsers import head_of, opnet, sniff_bytes
from tracekit.parsers.opnet import parse_map_option

TAB = sample("opnet", "tcp_reno_tab.txt")
VARIANTS = ["tcp_reno_tab.txt", "tcp_reno_excel_de.csv", "tcp_reno_unicode.txt", "tcp_reno_quoted.csv"]
ROUTER = "Campus Network.Router.IP.Queuing Delay (sec)"


def _cells() -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(TAB.read_text(encoding="utf-8")), delimiter="\t"))
    return rows[0], rows[1:]


def _key(t: tracekit.Trace) -> pl.DataFrame:
    """Samples without the Router column (whose header differs in the quoted variant), in a fixed order."""
    return t.samples.filter(~pl.col("source").str.contains("Router")).select(
        "time", "metric", "value", "unit", "node").sort("time", "metric", "value")


def test_the_four_spellings_read_the_same() -> None:
    base = tracekit.read(TAB)
    for name in VARIANTS[1:]:
        t = tracekit.read(sample("opnet", name))
        assert t.meta["format"] == "opnet", name
        assert _key(t).equals(_key(base)), name
        assert t.samples.height == base.samples.height
    de = tracekit.read(sample("opnet", "tcp_reno_excel_de.csv")).meta
    assert (de["delimiter"], de["decimal_comma"], de["encoding"]) == (";", True, "utf-8")
    u16 = tracekit.read(sample("opnet", "tcp_reno_unicode.txt")).meta
    assert (u16["delimiter"], u16["encoding"]) == ("\t", "utf-16-le")
    assert tracekit.read(sample("opnet", "tcp_reno_quoted.csv")).meta["delimiter"] == ","


def test_every_non_blank_cell_is_one_sample_in_schema_units() -> None:
    header, rows = _cells()
    t = tracekit.read(TAB)
    by_source = {s: g for (s,), g in t.samples.group_by("source")}
    scale = {"throughput_received": 8.0}
    for i, h in enumerate(header[1:], start=1):
        cells = [(float(r[0]), float(r[i])) for r in rows if r[i] != ""]
        g = by_source[h].sort("time", maintain_order=True)
        metric = g["metric"][0]
        assert list(zip(g["time"], g["value"], strict=False)) == [
            (tm, v * scale.get(metric, 1.0)) for tm, v in cells
        ], h


def test_metric_names_units_and_nodes() -> None:
    t = tracekit.read(TAB)
    info = {c["header"]: c for c in t.meta["columns"]}
    got = {c["metric"]: (c["unit"], c["node"]) for c in info.values()}
    assert got == {
        "cwnd": ("bytes", "Campus Network.Server"), "seq": ("bytes", "Campus Network.Server"),
        "ack": ("bytes", "Campus Network.Server"), "rtt": ("s", "Campus Network.Server"),
        "retransmissions": ("count", "Campus Network.Server"), "inflight": ("bytes", "Campus Network.Server"),
        "throughput_received": ("bps", "Campus Network.Client"), "download_time": ("s", None),
        ROUTER: ("1", "Campus Network.Router"),
    }
    assert info[ROUTER]["mapped_by"] == "unknown"
    (w,) = t.warnings
    assert w["code"] == "W-UNMAPPED" and "Queuing Delay" in w["message"]


def test_user_mapping_overrides(tmp_path: Path) -> None:
    t = tracekit.read(TAB, mapping={"*Queuing Delay*": "queue_delay", "Flight Size": "flight"})
    info = {c["metric"]: c for c in t.meta["columns"]}
    assert info["queue_delay"]["unit"] == "s" and info["queue_delay"]["mapped_by"] == "user"
    assert info["flight"]["unit"] == "bytes" and "inflight" not in info
    assert t.warnings == []
    toml = tmp_path / "map.toml"
    toml.write_text('[opnet.map]\n"*queuing delay (sec)" = "queue_delay"\n', encoding="utf-8")
    t = tracekit.read(TAB, map_file=toml)
    assert "queue_delay" in set(t.samples["metric"])
    toml.write_text("[opnet]\nmap = 3\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"\[opnet.map\]"):
        tracekit.read(TAB, map_file=toml)
    toml.write_text("[opnet.map\n", encoding="utf-8")
    with pytest.raises(UsageError, match="cannot read"):
        tracekit.read(TAB, map_file=toml)
    with pytest.raises(UsageError):
        tracekit.read(TAB, mapping={"*x*": "not a name"})


def test_parse_map_option() -> None:
    assert parse_map_option(["*Congestion Window*=cwnd", "Delay (sec) = delay", "a=b=c"]) == {
        "*Congestion Window*": "cwnd", "Delay (sec)": "delay", "a=b": "c"}
    for bad in ("nometric", "=cwnd", "x=1bad", "x="):
        with pytest.raises(UsageError, match="--map"):
            parse_map_option([bad])


HEADER = ("time (sec)\tNet.Server.TCP Connection.Congestion Window Size (bytes)"
          "\tNet.Server.TCP Connection.Segment Round Trip Time (sec)\n")


def _read(body: str, **kw: object) -> tracekit.Trace:
    return opnet.read((HEADER + body).encode(), name="x.txt", **kw)  # type: ignore[arg-type]


def test_hostile_rows() -> None:
    t = _read("0.5\t1460\t\n0.6\t2920\t0.1\noops\t1\t2\n0.7\tN/A\t0.2\n0.8\tnan\t0.3\n0.9\t5840\n1.0\t1\t2\t3\n")
    codes = {w["code"]: w for w in t.warnings}
    assert set(codes) == {"W-BADLINE", "W-BADVALUE", "W-NONFINITE", "W-SHORTROW", "W-LONGROW"}
    assert codes["W-BADLINE"]["line"] == 4 and codes["W-SHORTROW"]["line"] == 7 and codes["W-LONGROW"]["line"] == 8
    cw = t.samples.filter(pl.col("metric") == "cwnd")
    assert list(zip(cw["time"], cw["value"], strict=False)) == [(0.5, 1460), (0.6, 2920), (0.9, 5840), (1.0, 1)]
    with pytest.raises(CorruptTraceError, match="x.txt"):
        _read("0.5\t1460\t\nbad\t1\t1\n", strict=True)


def test_infinite_times_and_values_are_left_out() -> None:
    t = _read("inf\t5\t\n1\t2\t0.1\n1e999\t4\t\n2\tNaN\t0.2\n")
    assert [(w["code"], w["count"]) for w in t.warnings] == [("W-NONFINITE", 3)]
    assert sorted(zip(t.samples["time"], t.samples["value"], strict=False)) == [(1.0, 0.1), (1.0, 2.0), (2.0, 0.2)]


def test_wrong_delimiter_and_empty_tables() -> None:
    with pytest.raises(UnknownFormatError, match="no numbers"):
        _read("0,5;1460;0,1\n0,6;2920;0,1\n")
    with pytest.raises(UnknownFormatError, match="empty"):
        opnet.read(b"", name="e.txt")
    with pytest.raises(UnknownFormatError, match="single column"):
        opnet.read(b"time (sec)\n1\n2\n", name="one.txt")
    assert [w["code"] for w in _read("").warnings] == ["W-EMPTY"]


def test_encodings() -> None:
    text = HEADER + "0.5\t1460\t0.1\n"
    be = opnet.read(b"\xfe\xff" + text.encode("utf-16-be"), name="be.txt")
    assert be.meta["encoding"] == "utf-16-be" and be.samples.height == 2
    with pytest.raises(UnknownFormatError, match="NUL"):
        opnet.read(text.encode("utf-16-le"), name="nobom.txt")  # UTF-16 without its byte-order mark
    cp = opnet.read(text.replace("Net.Server", "Réseau.Server").encode("cp1252"), name="cp.txt")
    assert [w["code"] for w in cp.warnings] == ["W-ENCODING"] and cp.samples["node"][0] == "Réseau.Server"
    crlf = opnet.read(text.replace("\n", "\r\n").encode(), name="crlf.txt")
    assert crlf.samples.height == 2 and crlf.warnings == []


def test_sniffing() -> None:
    for name in VARIANTS:
        assert sniff_bytes(head_of(sample("opnet", name).read_bytes())) == "opnet", name
    assert not opnet.sniff(sample("netsim", "Packet_Trace_ftp_tcp.csv").read_bytes())
    assert not opnet.sniff(b"time,value\n1,2\n")
    assert not opnet.sniff(b"x\tNet.Server.TCP Connection.Congestion Window Size (bytes)\n1\t2\n")


def test_analyze_json() -> None:
    r = CliRunner().invoke(main, ["analyze", str(sample("opnet", "tcp_reno_unicode.txt")), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # stderr notes "tool-reported series only"
    assert doc["trace"]["format"] == "opnet" and doc["trace"]["samples"] == 2227
