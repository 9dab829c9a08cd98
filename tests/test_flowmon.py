"""FlowMonitor XML reader, on the ns-3.37 dumbbell run and the ns-3.36 documentation example."""

from __future__ import annotations

import gzip
import json
import re
import time
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import need_corpus, sample

import tracekit
from tracekit.cli.main import main
from tracekit.errors import CorruptTraceError, LimitError, TruncatedError, UnknownFormatError
from tracekit.limits import Limits
from tracekit.parsers import flowmon, sniff_bytes

RUN = sample("ns3", "dumbbell")
XML = RUN / "flowmon.xml"


@pytest.fixture(scope="module")
def fm() -> tracekit.Trace:
    return tracekit.read(XML)


def _value(t: tracekit.Trace, flow: int, metric: str, source: str | None = None) -> float:
    s = t.samples.filter((pl.col("flow") == flow) & (pl.col("metric") == metric))
    if source is not None:
        s = s.filter(pl.col("source") == source)
    (v,) = s["value"].to_list()
    return float(v)


def test_flows_agree_with_the_programs_own_printout(fm: tracekit.Trace) -> None:
    """flows.txt is what dumbbell.cc printed from the same FlowMonitor object."""
    want = {}
    for line in (RUN / "flows.txt").read_text().splitlines():
        m = re.match(
            r"flow (\d+) (\S+):(\d+) -> (\S+):(\d+) tx (\d+) rx (\d+) txBytes (\d+) rxBytes (\d+) dropped(.*)", line
        )
        assert m, line
        want[int(m[1])] = (m[2], int(m[3]), m[4], int(m[5]), int(m[6]), int(m[7]), int(m[8]), int(m[9]),
                           {f"reason{k}": int(v) for k, v in re.findall(r"reason(\d+)=(\d+)", m[10])})
    got = {}
    for f in fm.meta["flowmon"]:
        drops = {}
        for code, name in enumerate(("NO_ROUTE", "TTL_EXPIRE", "BAD_CHECKSUM", "QUEUE")):
            n = f.get("drops", {}).get(name, {}).get("packets", 0)
            if n:
                drops[f"reason{code}"] = int(n)
        got[f["flowId"]] = (f["src"], f["sport"], f["dst"], f["dport"], f["txPackets"], f["rxPackets"],
                            f["txBytes"], f["rxBytes"], drops)
    assert got == want
    assert {f["protocol"] for f in fm.meta["flowmon"]} == {"tcp"}


def test_samples_per_flow(fm: tracekit.Trace) -> None:
    assert (_value(fm, 1, "tx_packets"), _value(fm, 1, "rx_packets"), _value(fm, 1, "lost_packets")) == (280, 264, 12)
    assert _value(fm, 1, "drops", "packetsDropped:3:QUEUE") == 12
    assert _value(fm, 1, "dropped_bytes", "bytesDropped:3:QUEUE") == 18000
    # throughput = rxBytes * 8 / (timeLastRxPacket - timeFirstTxPacket), times "+7.97415e+09ns", "+5e+08ns"
    assert _value(fm, 1, "throughput") == pytest.approx(393108 * 8 / (7.97415 - 0.5), rel=1e-12)
    assert _value(fm, 1, "mean_delay") == pytest.approx(34.5589 / 264, rel=1e-12)
    assert _value(fm, 1, "mean_jitter") == pytest.approx(2.98855 / 263, rel=1e-12)
    units = dict(fm.samples.select("metric", "unit").unique().iter_rows())
    assert units["throughput"] == "bps" and units["delay_sum"] == "s" and units["rx_bytes"] == "bytes"
    assert fm.samples.filter(pl.col("flow") == 1)["time"].unique().to_list() == [7.99072]
    assert fm.meta["counts"] == {"flows": 4, "histograms": 16, "probe_stats": 16}
    assert "6 significant digits" in fm.meta["time_format"] and fm.warnings == []


def test_flow_1_matches_the_senders_pcap(fm: tracekit.Trace) -> None:
    """Flow 1's transmitted packets and bytes are the sender's outgoing packets in dumbbell-0-0.pcap."""
    cap = tracekit.read(RUN / "dumbbell-0-0.pcap").packets.filter(pl.col("src").cast(pl.String) == "10.1.1.1")
    f1 = next(f for f in fm.meta["flowmon"] if f["flowId"] == 1)
    assert cap.height == f1["txPackets"]
    assert int((cap["size"].cast(pl.Int64) - 2).sum()) == f1["txBytes"]  # IP bytes: frame minus the PPP field


def test_old_time_format_of_the_documentation_example() -> None:
    t = tracekit.read(need_corpus("ns3", "flowmon-doc-example-ns3.36.xml"))
    (f,) = t.meta["flowmon"]
    assert f["timeFirstRxPacket"] == 0.020067198 and f["timeLastRxPacket"] == 2.255831606
    assert (f["src"], f["dst"], f["sport"], f["dport"]) == ("10.1.3.1", "10.1.2.2", 49153, 50000)
    assert "int64x64" in t.meta["time_format"]
    assert [p["probe"] for p in t.meta["flowmon_probes"]] == [0, 2, 4]
    assert t.meta["flowmon_probes"][1]["delay_from_first_probe_sum_s"] == pytest.approx(199.415389258)


def _doc(first_tx: str = "+0ns", last_rx: str = "+2e+09ns", extra: str = "", classifier: str | None = None) -> bytes:
    cls = classifier if classifier is not None else (
        '<Ipv4FlowClassifier>\n<Flow flowId="1" sourceAddress="10.0.0.1" destinationAddress="10.0.0.2" '
        'protocol="17" sourcePort="9" destinationPort="10" />\n</Ipv4FlowClassifier>')
    return (
        f'<?xml version="1.0" ?>\n<FlowMonitor>\n  <FlowStats>\n    <Flow flowId="1" timeFirstTxPacket="{first_tx}" '
        f'timeFirstRxPacket="+1e+06ns" timeLastTxPacket="+2e+09ns" timeLastRxPacket="{last_rx}" '
        f'delaySum="+1e+09ns" jitterSum="+0ns" lastDelay="+1e+06ns" {extra}txBytes="1000" rxBytes="1000" '
        'txPackets="10" rxPackets="10" lostPackets="0" timesForwarded="0">\n    </Flow>\n  </FlowStats>\n'
        f"  {cls}\n</FlowMonitor>\n"
    ).encode()


@pytest.mark.parametrize("spelling", ["+2e+09ns", "+2000000000.0ns", "+2.00000e+09ns", "+2000ms", "+2s",
                                      "+2000000us", "+2e+12ps"])
def test_every_time_spelling(spelling: str) -> None:
    t = flowmon.read(_doc(last_rx=spelling), name="t.xml")
    assert t.meta["flowmon"][0]["timeLastRxPacket"] == 2.0
    assert _value(t, 1, "throughput") == 4000.0


def test_min_max_delay_and_ipv6_classifier() -> None:
    v6 = ('<Ipv6FlowClassifier>\n<Flow flowId="1" sourceAddress="2001:1::1" destinationAddress="2001:1::2" '
          'protocol="6" sourcePort="49153" destinationPort="9000">\n<Dscp value="0x0" packets="10" />\n</Flow>\n'
          '</Ipv6FlowClassifier>')
    t = flowmon.read(_doc(extra='maxDelay="+5e+06ns" minDelay="+1e+06ns" ', classifier=v6), name="v6.xml")
    assert _value(t, 1, "max_delay") == 0.005 and _value(t, 1, "min_delay") == 0.001
    f = t.meta["flowmon"][0]
    assert (f["ip"], f["src"], f["protocol"], f["dscp"]) == ("ipv6", "2001:1::1", "tcp", "0x0")


def test_billion_laughs_is_refused_fast() -> None:
    bomb = (b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
            + b"".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'.encode()
                       for i in range(1, 10))
            + b"]>\n<FlowMonitor><FlowStats>&lol9;</FlowStats></FlowMonitor>\n")
    assert sniff_bytes(bomb) is None  # a DOCTYPE before the root: not sniffed as FlowMonitor
    start = time.process_time()
    with pytest.raises(CorruptTraceError, match="DOCTYPE declaration") as exc:
        flowmon.read(bomb, name="bomb.xml")
    assert time.process_time() - start < 1.0
    assert exc.value.offset == bomb.index(b"<!DOCTYPE")
    with pytest.raises(CorruptTraceError, match="ENTITY"):
        flowmon.read(_doc().replace(b"<FlowMonitor>", b'<FlowMonitor><!ENTITY x "y">'), name="e.xml")


def test_truncated_file_keeps_the_complete_flows(tmp_path: Path) -> None:
    data = XML.read_bytes()
    cut = data[: data.index(b'<Flow flowId="3"')]
    t = flowmon.read(cut, name="cut.xml")
    assert [f["flowId"] for f in t.meta["flowmon"]] == [1, 2]
    codes = [w["code"] for w in t.warnings]
    assert "W-TRUNCATED" in codes and "W-CLASSIFIER" in codes  # the classifier comes after FlowStats
    with pytest.raises(TruncatedError):
        flowmon.read(cut, name="cut.xml", strict=True)
    with pytest.raises(CorruptTraceError, match="not well-formed XML"):
        flowmon.read(data[:200], name="cut.xml")
    p = tmp_path / "flowmon.xml.gz"
    p.write_bytes(gzip.compress(data))
    assert tracekit.read(p).meta["counts"]["flows"] == 4


def test_other_hostile_documents(tmp_path: Path) -> None:
    with pytest.raises(UnknownFormatError, match="empty"):
        flowmon.read(b"", name="x.xml")
    with pytest.raises(UnknownFormatError, match="FlowMonitor"):
        flowmon.read(b"<?xml version='1.0'?><Other><Flow/></Other>", name="other.xml")
    with pytest.raises(CorruptTraceError, match="junk.xml"):
        flowmon.read(b"this is not xml at all", name="junk.xml")
    t = flowmon.read(_doc(first_tx="+soonns"), name="bad.xml")
    assert [w["code"] for w in t.warnings] == ["W-BADVALUE"]
    assert t.samples.filter(pl.col("metric") == "throughput").height == 0
    t = flowmon.read(_doc(classifier=""), name="nocls.xml")
    assert [w["code"] for w in t.warnings] == ["W-CLASSIFIER"]
    with pytest.raises(LimitError):
        flowmon.read(XML.read_bytes(), name="x.xml", limits=Limits(max_flows=2))
    utf16 = b"\xff\xfe" + XML.read_text().encode("utf-16-le")
    assert flowmon.sniff(utf16) and flowmon.read(utf16, name="u16.xml").meta["counts"]["flows"] == 4


def test_sniffing() -> None:
    assert sniff_bytes(XML.read_bytes()[:65536]) == "flowmon"
    assert flowmon.sniff(need_corpus("ns3", "flowmon-doc-example-ns3.36.xml").read_bytes())
    assert not flowmon.sniff(b'<?xml version="1.0"?><svg></svg>')
    assert not flowmon.sniff((RUN / "run.json").read_bytes())


def test_analyze_json() -> None:
    r = CliRunner().invoke(main, ["analyze", str(XML), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # stderr notes "tool-reported series only"
    assert doc["trace"]["format"] == "flowmon" and len(doc["trace"]["flowmon"]) == 4


def test_infinite_times_are_bad_values() -> None:
    t = flowmon.read(_doc(last_rx="+1e999ns"), name="inf.xml")
    assert [w["code"] for w in t.warnings] == ["W-BADVALUE"]
    assert t.samples.filter(pl.col("metric") == "throughput").height == 0
    assert t.samples["time"].is_finite().all()
