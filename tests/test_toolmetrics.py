"""Tool-reported series reach the terminal, the JSON and the report; checked against the tools' own files."""

from __future__ import annotations

import csv
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracekit
from tests.conftest import need_corpus, sample
from tracekit import numfmt
from tracekit.cli.main import main
from tracekit.reports.toolmetrics import find, summarise


def _analyze(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["analyze", *args])
    return res.exit_code, res.stdout, res.stderr


def _cols(path: Path, i: int) -> list[float]:
    return [float(ln.split()[i]) for ln in path.read_text().splitlines() if ln.strip()]


def test_monitor_only_folder_answers(tmp_path: Path) -> None:
    """Window.tr + WindowMon.tr alone: max cwnd in packets and the average packets/s, exit 0."""
    for f in ("Window.tr", "WindowMon.tr"):
        shutil.copy(sample("ns2", "lab_tahoe", f), tmp_path / f)
    code, out, err = _analyze(str(tmp_path))
    assert code == 0
    assert "no TCP connection carried data" in err
    top = max(_cols(tmp_path / "Window.tr", 1))
    avg = _cols(tmp_path / "WindowMon.tr", 5)[-1]  # avgtput: packets/s since the FTP start
    assert f"{numfmt.packets(top)}" in out  # "66 packets"
    assert numfmt.pps(avg) in out  # "197.8 pps"
    code, out, _ = _analyze(str(tmp_path), "--json")
    doc = json.loads(out)
    cw = [m for m in doc["tool_metrics"] if m["metric"] == "cwnd"]
    assert [m["unit"] for m in cw] == ["packets"] and cw[0]["max"] == top  # no segment size without out.tr


def test_lab_units_in_the_flows_table() -> None:
    """ns-2 counts packets: the table shows cwnd in packets and packets/s beside bytes and bit/s."""
    run = sample("ns2", "lab_tahoe")
    code, out, _ = _analyze(str(run))
    assert code == 0 and "cwnd pkts" in out and "pps" in out
    top = max(_cols(run / "Window.tr", 1))
    assert re.search(rf"│\s+{int(top)} │", out)
    assert "payload only (40-B headers left out)" in out  # WindowMon's pps as bit/s without the simulated headers


def test_opnet_download_time() -> None:
    p = sample("opnet", "tcp_reno_tab.txt")
    rows = list(csv.reader(p.read_text().splitlines(), delimiter="\t"))
    col = next(i for i, h in enumerate(rows[0]) if "Download Response Time" in h)
    truth = [float(r[col]) for r in rows[1:] if len(r) > col and r[col].strip()]
    code, out, err = _analyze(str(p))
    assert code == 0 and "tool-reported series only" in err
    assert numfmt.seconds(truth[-1], 4) in out  # "11.5 s"
    m = find(summarise(tracekit.read(str(p))), "download_response_time")
    assert [x.last for x in m] == [truth[-1]]


def test_netsim_application_throughput() -> None:
    p = sample("netsim", "Application_Metrics_v14.csv")
    rows = list(csv.DictReader(p.read_text(encoding="utf-8-sig").splitlines()))
    key = next(k for k in rows[0] if k and k.startswith("Throughput"))
    truth = [float(r[key]) for r in rows]
    code, out, _ = _analyze(str(p))
    assert code == 0
    for mbps in truth:
        assert f"{numfmt.sig(mbps, 4)} Mbit/s" in out  # in the source's unit: "8.456 Mbit/s"


def test_flowmon_per_flow_throughput_delay_loss() -> None:
    p = sample("ns3", "dumbbell", "flowmon.xml")
    ms = summarise(tracekit.read(str(p)))
    for fl in ET.parse(p).getroot().iter("Flow"):
        if fl.get("flowId") is None or fl.get("rxBytes") is None:
            continue
        fid = int(fl.get("flowId"))
        rx = int(fl.get("rxBytes"))
        t0 = float(fl.get("timeFirstTxPacket").strip("+ns")) * 1e-9
        t1 = float(fl.get("timeLastRxPacket").strip("+ns")) * 1e-9
        mine = {m.metric: m for m in ms if m.flow == fid}
        assert mine["throughput"].last == pytest.approx(rx * 8 / (t1 - t0), rel=1e-6)
        assert mine["lost_packets"].last == int(fl.get("lostPackets"))
        delay = float(fl.get("delaySum").strip("+ns")) * 1e-9 / int(fl.get("rxPackets"))
        assert mine["mean_delay"].last == pytest.approx(delay, rel=1e-4)
    html = tmp_html(p)
    assert 'id="tool-metrics"' in html and "mean_delay" in html
    assert 'data-missing="samples"' in html or "totals only" in html  # no dots at t = 0


def tmp_html(p: Path) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.html"
        res = CliRunner().invoke(main, ["report", str(p), "-o", str(out)])
        assert res.exit_code == 0, res.output
        return out.read_text()


@pytest.mark.parametrize("name", ["test-tcp_nup.flent.gz", "test-rrul.flent.gz"])
def test_flent_file_is_reported(name: str) -> None:
    p = need_corpus("flent", name)
    code, out, err = _analyze(str(p))
    assert code == 0 and "tool-reported series only" in err and "throughput" in out


def test_nothing_to_analyze_exits_1(tmp_path: Path) -> None:
    p = tmp_path / "empty.pcap"
    p.write_bytes(bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000"))  # a pcap header, no packets
    code, _, err = _analyze(str(p))
    assert code == 1
    assert "nothing to analyze" in err and err.count("\n") == 2  # the per-file note, then one error line


def test_sweep_over_opnet_exports_has_no_blank_cells(tmp_path: Path) -> None:
    runs = []
    for rwnd in (8, 16, 32):
        d = tmp_path / f"rwnd{rwnd}"
        d.mkdir()
        shutil.copy(sample("opnet", "tcp_reno_tab.txt"), d / "export.txt")
        runs.append(str(d))
    out = tmp_path / "s.csv"
    res = CliRunner().invoke(main, ["sweep", *runs, "--param", "rwnd{rwnd}", "--y", "download_response_time",
                                    "--csv", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [float(r["download_response_time"]) for r in rows] == [11.5] * 3
    for r in rows:
        assert all(v != "" for v in r.values()), r


def test_no_exponents_in_tables() -> None:
    for p in (sample("ns2", "lab_tahoe"), sample("opnet", "tcp_reno_tab.txt"), sample("linux", "bulk_lossy.pcap")):
        code, out, _ = _analyze(str(p))
        assert code == 0
        assert not re.search(r"\d[eE][+-]\d", out), out


def test_numfmt() -> None:
    assert numfmt.sig(33000.0) == "33,000"
    assert numfmt.rate(796021.5) == "796 kbit/s"
    assert numfmt.nbytes(33000) == "33,000 B"
    assert numfmt.seconds(0.2851) == "285 ms"
    assert numfmt.pct(0.96) == "96 %"
    assert numfmt.cell(3.3e4, "max_cwnd_bytes") == "33,000"
    assert numfmt.cell(1.23e-5, "rtt_p50_s") == "0.0000123"
