"""Acceptance test of docs/labs.md: every `$ tracekit` command runs on the bundled runs, and each printed
answer agrees with the simulator's (or tshark's) own numbers."""

from __future__ import annotations

import csv
import glob
import gzip
import io
import json
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, need_corpus, need_tool, sample
from tracekit import numfmt
from tracekit.cli.main import main

DOC = ROOT / "docs" / "labs.md"
_BLOCK = re.compile(r"<!-- check: (\w+) -->\s*```console\n\$ (tracekit [^\n]+)\n```")


def _commands() -> list[tuple[str, str]]:
    text = DOC.read_text()
    found = _BLOCK.findall(text)
    # every `$ tracekit` line of the page is under a check marker
    assert len(found) == text.count("\n$ tracekit "), "a command in docs/labs.md has no <!-- check: --> marker"
    return found


def _window(run: Path) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in (ln.split()[:2] for ln in (run / "Window.tr").read_text().splitlines()
                                              if ln.strip())]


def _falls(win: list[tuple[float, float]]) -> list[int]:
    return [i for i in range(1, len(win)) if win[i][1] < win[i - 1][1]]


def _monitor(run: Path) -> list[list[float]]:
    return [[float(x) for x in ln.split()] for ln in (run / "WindowMon.tr").read_text().splitlines() if ln.strip()]


def _drops(run: Path) -> int:
    f = run / "out.tr.gz"
    if f.exists():
        with gzip.open(f, "rt") as fh:
            text = fh.read()
    else:
        text = (run / "out.tr").read_text()
    return sum(1 for ln in text.splitlines() if ln.startswith("d "))


def _flat(out: str) -> str:
    """Table text with borders and wrapping removed (a cell may wrap inside its column)."""
    return re.sub(r"\s+", " ", re.sub(r"[│┃┏┓┗┛┡┩└┘━─┳┻╇╈┼]", " ", out))


def check_ns2_max_cwnd(out: str, _cwd: Path) -> None:
    top = max(v for _, v in _window(sample("ns2", "lab_tahoe")))
    assert f"{numfmt.packets(top)} ({numfmt.nbytes(top * 500)})" in out  # 66 packets (33,000 B)


def check_ns2_loss(out: str, _cwd: Path) -> None:
    run = sample("ns2", "lab_tahoe")
    win = _window(run)
    k = _falls(win)[0]
    assert f"Loss event at {numfmt.at(win[k][0])}" in out
    assert f"{_drops(run)} segments dropped in the network" in out
    assert f"→ {numfmt.packets(win[k][1])} ({numfmt.nbytes(win[k][1] * 500)}), as Tahoe does" in out


def check_ns2_average(out: str, _cwd: Path) -> None:
    last = _monitor(sample("ns2", "lab_reno"))[-1]
    pps = last[5]  # avgtput: packets/s since the FTP started
    flat = _flat(out)
    assert numfmt.pps(pps) in flat
    assert numfmt.rate(pps * 540 * 8, 4) in flat  # with the 40-byte headers
    assert re.search(
        rf"avg_throughput, payload only \(40-B headers left out\) .*? {re.escape(numfmt.rate(pps * 500 * 8, 4))} ", flat
    )


def check_ns2_oscillation(out: str, _cwd: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 5
    calm = []
    for r in rows:
        run = ROOT / r["path"] if not Path(r["path"]).is_absolute() else Path(r["path"])
        # Window.tr: every fall after the first (the slow-start overshoot; Tahoe restarts from 1 each time)
        assert int(r["cwnd_reductions"]) == max(0, len(_falls(_window(run))) - 1), r["path"]
        if int(r["cwnd_reductions"]) == 0:
            calm.append(int(r["param.window_pkts"]))
    assert max(calm) == 66


def check_ns2_tahoe_reno(out: str, _cwd: Path) -> None:
    check_ns2_loss(out, _cwd)
    win = _window(sample("ns2", "lab_reno"))
    k, nxt = _falls(win)[:2]
    fr = f"fast recovery (cwnd {numfmt.packets(win[k - 1][1])} ({numfmt.nbytes(win[k - 1][1] * 500)}) → " \
         f"{numfmt.packets(win[k][1])} ({numfmt.nbytes(win[k][1] * 500)}))"
    assert fr in out
    assert f"Loss event at {numfmt.at(win[nxt][0])}" in out
    assert f"retransmission timeout and slow start (cwnd {numfmt.packets(win[nxt - 1][1])}" in out


def check_ns2_lossy(out: str, _cwd: Path) -> None:
    last = _monitor(sample("ns2", "lab_lossy"))[-1]
    flat = _flat(out)
    assert re.search(rf" drops (?:\S+ )?19 {int(last[1])} ", flat), "WindowMon's last drop count"
    assert f" {numfmt.pct(last[2])} " in flat  # drop_rate, last sample
    assert "more loss events" in out and "Mathis predicts" in out
    falls = len(_falls(_window(sample("ns2", "lab_lossy"))))  # Window.tr: each fall of cwnd is one loss event
    assert f"{falls} loss events" in out


def _flowmon(run: str = "dumbbell") -> tuple[float, list[float]]:
    root = ET.parse(sample("ns3", run, "flowmon.xml")).getroot()
    tput = []
    for fl in root.iter("Flow"):
        if fl.get("rxBytes") is None:
            continue
        rx, n = int(fl.get("rxBytes")), int(fl.get("rxPackets"))
        if rx < 200 * n:
            continue  # ACK-only flows
        t0 = float(fl.get("timeFirstTxPacket").strip("+ns")) * 1e-9
        t1 = float(fl.get("timeLastRxPacket").strip("+ns")) * 1e-9
        tput.append(rx * 8 / (t1 - t0))
    x = sum(tput) ** 2 / (len(tput) * sum(v * v for v in tput))
    return x, tput


def check_ns3_jain(out: str, _cwd: Path) -> None:
    jain, tput = _flowmon()
    assert f"Jain's index {jain:.3f} over {len(tput)} data flows" in out
    m = re.search(r"Jain's fairness index over the (\d+) data directions[^:]*: ([0-9.]+)", out)
    assert m and int(m.group(1)) == len(tput)
    assert float(m.group(2)) == pytest.approx(jain, abs=0.01)  # tracekit's goodput vs FlowMonitor's throughput
    flat = _flat(out)
    for v in tput:
        assert numfmt.rate(v, 4) in flat


def check_ns3_jain10(out: str, _cwd: Path) -> None:
    """The 10-flow run: FlowMonitor's own index, from its XML, and tracekit's over 10 connections
    (one per connection, not one per capture; why the two differ: docs/analysis.md)."""
    jain, tput = _flowmon("dumbbell10")
    assert len(tput) == 10
    assert f"Jain's index {jain:.3f} over 10 data flows" in out
    m = re.search(r"Jain's fairness index over the (\d+) data directions[^:]*: ([0-9.]+)", out)
    assert m and int(m.group(1)) == 10


def _fm_data_flow(run: str) -> ET.Element:
    """The data direction's <Flow> of a lab_sweep run (flow 1: 10.1.1.1 -> 10.1.2.2)."""
    root = ET.parse(sample("ns3", "lab_sweep", run, "flowmon.xml")).getroot()
    return next(f for f in root.iter("Flow") if f.get("flowId") == "1" and f.get("rxBytes") is not None)


def _fm_ns(fl: ET.Element, key: str) -> float:
    return float(fl.get(key, "").strip("+ns")) * 1e-9


def check_ns3_rwnd(out: str, _cwd: Path) -> None:
    """Window sweep: each run's goodput (sender capture: payload acknowledged over first SYN -> last
    delivery) against FlowMonitor's rxBytes over first tx -> last rx of the same run. FlowMonitor counts
    IP bytes: take off 20 (IPv4) + 32 (TCP with the timestamps option, RFC 7323) bytes per packet, and
    allow one receive window that had reached the receiver but whose ACK had not reached the sender's
    capture when the run stopped (the sender never has more than rwnd bytes outstanding), plus 2 % for
    the two spans (they end half an RTT apart)."""
    rows = list(csv.DictReader(io.StringIO(out[out.index("path,"):])))
    assert [int(r["param.rwnd_bytes"]) for r in rows] == [4096, 8192, 16384, 32768]
    link = int(rows[0]["param.bottleneck_bps"])
    for r in rows:
        run = Path(r["path"]).name
        assert json.loads(sample("ns3", "lab_sweep", run, "run.json").read_text())["rwnd_bytes"] == int(
            r["param.rwnd_bytes"])
        fl = _fm_data_flow(run)
        span = _fm_ns(fl, "timeLastRxPacket") - _fm_ns(fl, "timeFirstTxPacket")
        payload = int(fl.get("rxBytes", "")) - 52 * int(fl.get("rxPackets", ""))
        want = payload * 8 / span
        slack = int(r["param.rwnd_bytes"]) * 8 / span + 0.02 * want
        assert want - slack <= float(r["goodput_bps"]) <= want + 0.02 * want, (run, r["goodput_bps"], want)
        assert int(r["retrans_packets"]) == int(fl.get("lostPackets", "")) == 0  # 100-packet queue: no drop
    # goodput rises with the window while rwnd / base RTT is below the link rate, then stays put
    base_rtt = float(rows[0]["rtt_p50_s"])  # 4 KB never queues: its RTT is the path's
    good = [float(r["goodput_bps"]) for r in rows]
    limited = [int(r["param.rwnd_bytes"]) * 8 / base_rtt < link for r in rows]
    assert limited == [True, True, False, False]
    assert good[0] < good[1] < good[2]
    assert abs(good[3] - good[2]) <= 0.01 * good[2]


def check_ns3_variants(out: str, _cwd: Path) -> None:
    """TcpLinuxReno against TcpNewReno: each run's retransmissions = FlowMonitor's lost (= queue-dropped)
    packets = tshark's retransmissions + out-of-order segments of the sender (Wireshark 4.0 calls a
    SACK-driven retransmission sent soon after the highest segment out-of-order: docs/analysis.md,
    "Where tracekit and the reference tools differ"), and each loss event starts at a frame tshark
    calls a (fast) retransmission."""
    need_tool("tshark")
    k = out.index("samples/ns3/lab_sweep/newreno/")
    for run, text in (("linuxreno", out[:k]), ("newreno", out[k:])):
        fl = _fm_data_flow(run)
        lost = int(fl.get("lostPackets", ""))
        drops = ET.parse(sample("ns3", "lab_sweep", run, "flowmon.xml")).getroot().find(
            ".//Flow[@flowId='1']/packetsDropped[@reasonCode='3']")
        assert drops is not None and int(drops.get("number", "")) == lost > 0
        m = re.search(r"│\s+0 │\s+0 │ 10\.1\.1\.1:49153 │ 10\.1\.2\.2:50000 │[^│]+│[^│]+│[^│]+│\s+(\d+) │", text)
        assert m and int(m.group(1)) == lost, (run, lost)
        pcap = sample("ns3", "lab_sweep", run, "lab-0-0.pcap")
        res = subprocess.run(["tshark", "-r", str(pcap), "-Y", "tcp.analysis.retransmission or "
                              "tcp.analysis.fast_retransmission", "-T", "fields", "-e", "frame.time_epoch"],
                             capture_output=True, text=True, check=True).stdout.split()
        events = re.findall(r"Loss event at ([^:]+): (\d+) segments? retransmitted; recovered by fast recovery",
                            text)
        assert sum(int(n) for _, n in events) == lost
        both = subprocess.run(["tshark", "-r", str(pcap), "-Y", "tcp.srcport == 49153 and "
                               "(tcp.analysis.retransmission or tcp.analysis.out_of_order)"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
        assert len(both) == lost
        assert sorted({numfmt.at(float(t)) for t in res}) == sorted(at for at, _ in events)


def check_opnet_download(out: str, _cwd: Path) -> None:
    rows = list(csv.reader(sample("opnet", "tcp_reno_tab.txt").read_text().splitlines(), delimiter="\t"))
    col = next(i for i, h in enumerate(rows[0]) if h.endswith("Download Response Time (sec)"))
    vals = [float(r[col]) for r in rows[1:] if len(r) > col and r[col].strip()]
    assert re.search(rf"download_time .*{re.escape(numfmt.seconds(vals[-1], 4))}", _flat(out))


def check_opnet_seq(out: str, cwd: Path) -> None:
    html = (cwd / "opnet.html").read_text()
    assert "tool-reported series · seq (bytes)" in html
    rows = list(csv.reader(sample("opnet", "tcp_reno_tab.txt").read_text().splitlines(), delimiter="\t"))
    col = next(i for i, h in enumerate(rows[0]) if h.endswith("Sent Segment Sequence Number"))
    top = max(float(r[col]) for r in rows[1:] if len(r) > col and r[col].strip())
    assert numfmt.nbytes(top) in html  # the table's max of the series


def check_netsim_throughput(out: str, _cwd: Path) -> None:
    rows = list(csv.DictReader(sample("netsim", "Application_Metrics_v14.csv").read_text(encoding="utf-8-sig")
                               .splitlines()))
    key = next(k for k in rows[0] if k and k.startswith("Throughput"))
    for r in rows:
        assert f"{numfmt.sig(float(r[key]), 4)} Mbit/s" in out


def check_models(out: str, _cwd: Path) -> None:
    assert re.search(r"Goodput [0-9.]+ Mbit/s = \d+ % of the 5 Mbit/s link\.", out)
    assert re.search(r"Loss rate [0-9.]+ %: Mathis predicts [0-9.]+ [kM]bit/s, PFTK [0-9.]+ [kM]bit/s", out)


def check_flent_iw(out: str, _cwd: Path) -> None:
    p = sample("linux", "bulk_lossy.pcap")
    res = subprocess.run([need_tool("tshark"), "-n", "-r", str(p), "-T", "fields", "-e", "tcp.srcport",
                          "-e", "tcp.len", "-e", "tcp.ack", "-e", "tcp.flags.syn", "-e", "tcp.options.wscale.shift"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    fields = [ln.split("\t") for ln in res]
    shift = next(f[4] for f in fields if f[0] == "40000" and f[3] == "1")
    iw = 0
    for sport, ln, ack, syn, _ in fields:
        if sport != "40000" and syn != "1" and int(ack) > 1:
            break  # the first ACK of data
        if sport == "40000" and int(ln) > 0:
            iw += 1
    assert f"initial window {iw} segments" in out
    assert f"window scaling on (shift {shift})" in out


def check_flent_rrul(out: str, _cwd: Path) -> None:
    with gzip.open(need_corpus("flent", "test-rrul.flent.gz"), "rt") as fh:
        doc = json.loads(fh.read())
    ping = [v for v in doc["results"]["Ping (ms) ICMP"] if v is not None]
    assert f"{numfmt.sig(sum(ping) / len(ping), 4)} ms" in _flat(out)


CHECKS: dict[str, Callable[[str, Path], None]] = {
    name[len("check_"):]: fn for name, fn in globals().items() if name.startswith("check_")}


def _args(cmd: str) -> list[str]:
    out: list[str] = []
    for a in shlex.split(cmd)[1:]:
        if a == "rrul.flent.gz":
            out.append(str(need_corpus("flent", "test-rrul.flent.gz")))
        elif a.startswith("samples/"):
            found = sorted(glob.glob(str(ROOT / a))) if "*" in a else [str(ROOT / a)]
            assert found, a
            out.extend(str(Path(f).relative_to(ROOT)) if "*" in a else f for f in found)
        else:
            out.append(a)
    return out


@pytest.mark.parametrize("check,cmd", _commands(), ids=[c for c, _ in _commands()])
def test_lab_command(check: str, cmd: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert check in CHECKS, f"no check named {check!r} in tests/test_labs.py"
    args = _args(cmd)
    # relative sample paths (the sweep's globbed runs) resolve from the repository's root; outputs go to tmp
    monkeypatch.chdir(ROOT if any(not Path(a).is_absolute() and a.startswith("samples/") for a in args)
                      else tmp_path)
    args = [str(tmp_path / a) if a.endswith(".html") else a for a in args]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    CHECKS[check](res.stdout, tmp_path)


def test_every_check_is_used() -> None:
    used = {c for c, _ in _commands()}
    assert set(CHECKS) == used
