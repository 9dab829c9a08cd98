"""NetSim reader: the real Packet Trace excerpt in the shared corpus and the constructed samples in samples/netsim."""

from __future__ import annotations

import codecs
import csv
import io
import json

import polars as pl
import pytest
from click.testing import CliRunner
from conftest import need_corpus, sample

import tracekit
from tracekit.cli.main import main
from tracekit.errors import CorruptTraceError, UnknownFormatError
from tracekit.parsers import head_of, netsim, sniff_bytes
from tracekit.schema import ACK, SYN

TRACE = sample("netsim", "Packet_Trace_ftp_tcp.csv")


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture(scope="module")
def ftp() -> tracekit.Trace:
    return tracekit.read(TRACE)


def test_packet_trace_columns_by_name(ftp: tracekit.Trace) -> None:
    rows = _rows(TRACE.read_text())
    pk = ftp.packets
    assert pk.height == len(rows) == 46
    assert pk["time"].to_list() == pytest.approx([float(r["PHY_LAYER_END_TIME(US)"]) / 1e6 for r in rows], abs=1e-12)
    assert pk["node"].to_list() == [r["RECEIVER_ID"] for r in rows]
    assert pk["link"].to_list() == [f"{r['TRANSMITTER_ID']}->{r['RECEIVER_ID']}" for r in rows]
    assert pk["payload"].to_list() == [int(r["TRX_LAYER_PAYLOAD(Bytes)"]) for r in rows]
    assert pk["size"].to_list() == [int(r["PHY_LAYER_PAYLOAD(Bytes)"]) for r in rows]
    assert pk["pkt_seq"].to_list() == [int(r["SEGMENT_ID"]) for r in rows]
    assert pk["event"].cast(pl.String).to_list() == [
        "recv" if r["PACKET_STATUS"] == "Successful" else "drop" for r in rows
    ]
    assert ftp.meta["ignored_columns"] == ["", "End-End Delay"]
    assert ftp.meta["units"]["time"] == "us" and ftp.meta["counts"]["status"] == {"Successful": 45, "Errored": 1}


def test_tcp_view_of_the_ftp_transfer(ftp: tracekit.Trace) -> None:
    pk = ftp.packets
    assert set(pk["proto"].cast(pl.String)) == {"tcp"} and pk["flow"].unique().to_list() == [0]
    first = pk.filter(pl.col("node") == "SWITCH-3")  # the first hop of each direction
    hs = first.head(3)
    assert hs["flags"].to_list() == [SYN, SYN | ACK, ACK] and hs["dir"].to_list() == [0, 1, 0]
    data = first.filter(pl.col("payload") > 0).sort("time")
    # seq numbered from the (PACKET_ID, SEGMENT_ID) order; the resent segment 5 keeps its seq
    assert data["seq"].to_list() == [1 + (s - 1) * 1460 for s in data["pkt_seq"].to_list()]
    assert data.filter(pl.col("pkt_seq") == 5)["seq"].to_list() == [5841, 5841]


def test_analyze_json_on_the_packet_trace() -> None:
    r = CliRunner().invoke(main, ["analyze", str(TRACE), "--json"])
    assert r.exit_code == 0, r.output
    (flow,) = json.loads(r.output)["flows"]
    assert (flow["src"], flow["dst"], flow["sport"]) == ("10.0.1.2", "10.0.1.3", None)
    assert (flow["data_packets"], flow["unique_bytes"], flow["retrans_packets"]) == (13, 12 * 1460, 1)
    # NetSim's packet trace carries no ack numbers, so no RTT can be matched (docs/formats-simulators.md)
    assert flow["rtt_samples"] is None and flow["handshake_rtt_s"] is None


def test_real_excerpt() -> None:
    path = need_corpus("netsim", "Packet_Trace.head.csv")
    t = tracekit.read(path)
    rows = _rows(path.read_text())
    pk = t.packets
    assert pk.height == 10 and t.warnings == []
    assert pk["time"][0] == pytest.approx(10.012208) and pk["pkt_seq"].to_list() == [1, 1, 2, 2, 3, 3, 4, 4, 33, 34]
    # TRX 1472 -> NW 1480: an 8-byte transport header, so this FTP application ran over UDP
    assert set(pk["proto"].cast(pl.String)) == {"udp"} and pk["seq"].null_count() == 10
    assert t.meta["ignored_columns"] == ["", "End-End Delay"]
    # columns are found by name: a reordered copy reads the same
    header = list(rows[0].keys())
    order = list(reversed(header))
    shuffled = ",".join(order) + "\n" + "".join(",".join(r[h] for h in order) + "\n" for r in rows)
    assert netsim.read(shuffled.encode(), name="shuffled.csv").packets.drop("frame").equals(pk.drop("frame"))


def test_excel_resave_and_latin1() -> None:
    text = TRACE.read_text()
    de = codecs.BOM_UTF8 + text.replace(",", ";").replace("\n", "\r\n").encode()
    assert netsim.read(de, name="de.csv").packets.equals(tracekit.read(TRACE).packets)
    lat = text.replace("SWITCH-3", "SWITCH-Ä3").encode("latin-1")
    t = netsim.read(lat, name="lat.csv")
    assert [w["code"] for w in t.warnings] == ["W-ENCODING"] and "SWITCH-Ä3" in set(t.packets["node"])


def test_hostile_packet_traces() -> None:
    text = TRACE.read_text()
    header, *lines = text.splitlines()
    with pytest.raises(UnknownFormatError, match=r"PHY_LAYER_PAYLOAD\(BYTES\)") as exc:
        netsim.read(("\n".join([header.replace("PHY_LAYER_PAYLOAD", "PHY_PAYLOAD")] + lines)).encode(), name="m.csv")
    assert "found:" in (exc.value.hint or "")
    short = "\n".join([header, lines[0], "1,2,FTP,APP1_FTP,NODE-1", *lines[1:]]) + "\n"
    t = netsim.read(short.encode(), name="s.csv")
    assert {w["code"]: w["line"] for w in t.warnings} == {"W-SHORTROW": 3, "W-BADLINE": 3}
    assert t.packets.height == 46
    with pytest.raises(CorruptTraceError, match="s.csv: line 3"):
        netsim.read(short.encode(), name="s.csv", strict=True)
    with pytest.raises(UnknownFormatError, match="empty"):
        netsim.read(b"", name="e.csv")
    with pytest.raises(UnknownFormatError, match="not a NetSim"):
        netsim.read(b"a,b,c\n1,2,3\n", name="x.csv")
    assert [w["code"] for w in netsim.read((header + "\n").encode(), name="h.csv").warnings] == ["W-EMPTY"]


def test_application_metrics_both_versions() -> None:
    v13 = tracekit.read(sample("netsim", "Application_Metrics_v13.csv"))
    v14 = tracekit.read(sample("netsim", "Application_Metrics_v14.csv"))
    assert (v13.meta["netsim_version"], v14.meta["netsim_version"]) == ("v12/v13", "v14")
    for t in (v13, v14):
        s = t.samples
        ftp = dict(s.filter(pl.col("flow") == 1).select("metric", "value").iter_rows())
        assert ftp["throughput"] == pytest.approx(8.456e6) and ftp["delay"] == pytest.approx(2671.64e-6)
        assert ftp["packets_received"] == 12
        assert dict(s.select("metric", "unit").unique().iter_rows())["jitter"] == "s"
    m14 = dict(v14.samples.filter(pl.col("flow") == 2).select("metric", "value").iter_rows())
    assert (m14["payload_transmitted"], m14["packets_transmitted"]) == (730000, 500)
    assert v14.meta["applications"][0]["Application Name"] == "APP1_FTP"
    titled = b"Application_Metrics_Table\n" + sample("netsim", "Application_Metrics_v13.csv").read_bytes()
    assert netsim.sniff(titled) and netsim.read(titled, name="t.csv").samples.height == v13.samples.height


def test_plot_source_data() -> None:
    t = tracekit.read(sample("netsim", "plot_throughput.csv"))
    s = t.samples
    assert s.height == 20 and set(s["metric"]) == {"throughput"} and set(s["unit"]) == {"bps"}
    assert (s["time"][0], s["value"][0]) == (pytest.approx(0.1), pytest.approx(2.11e6))
    forced = netsim.read(b"Time (ticks),Throughput (Mbps)\n1,2\n", name="p.csv")
    assert [w["code"] for w in forced.warnings] == ["W-UNIT"] and forced.samples["time"][0] == pytest.approx(1e-6)


def test_sniffing() -> None:
    for name in ("Packet_Trace_ftp_tcp.csv", "Application_Metrics_v13.csv", "Application_Metrics_v14.csv",
                 "plot_throughput.csv"):
        assert sniff_bytes(head_of(sample("netsim", name).read_bytes())) == "netsim", name
    assert sniff_bytes(head_of(need_corpus("netsim", "Packet_Trace.head.csv").read_bytes())) == "netsim"
    assert not netsim.sniff(sample("opnet", "tcp_reno_quoted.csv").read_bytes())
    assert not netsim.sniff(sample("opnet", "tcp_reno_tab.txt").read_bytes())
    assert not netsim.sniff(b"time,value\n1,2\n")
