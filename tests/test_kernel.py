"""The kernel's own view beside a capture: ss logs, nstat/netstat -s snapshots, and the comparison.

Samples: samples/linux/kernel/{cubic,reno,bbr}/ made by samples/linux/make_kernel_samples.sh
(iperf3 through a router namespace with a tc tbf bottleneck; ss polled in the sender's
namespace; cubic and bbr in ss's two-line layout with a `date +%s.%N` line per poll, reno with
`ss -tineOm` (one line per socket, -e -m fields) piped through moreutils `ts '%.s'`).
Expected values come from the kernel (its ss and nstat output, read here with plain regexes)
and from netstat -s, never from tracekit itself.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys

import polars as pl
import pytest

import tracekit
from tests.conftest import ROOT, sample
from tracekit.errors import CorruptTraceError, TracekitError, UnknownFormatError
from tracekit.kernel import CWND_LIMITED, retrans_table
from tracekit.parsers import sniff, sniff_bytes

RUNS = ("cubic", "reno", "bbr")
SENDER = "10.231.1.1:40000->10.231.2.1:5201"


def _run(name: str) -> tracekit.Analysis:
    return tracekit.analyze(tracekit.read(sample("linux", "kernel", name)))


@pytest.fixture(scope="module")
def analyses() -> dict[str, tracekit.Analysis]:
    return {r: _run(r) for r in RUNS}


def _sender_row(an: tracekit.Analysis) -> dict:
    return an.flows.filter((pl.col("sport") == 40000) & (pl.col("dir") == 0)).row(0, named=True)


# ---- the ss reader -------------------------------------------------------------------------------

@pytest.mark.parametrize("run", RUNS)
def test_ss_log_is_detected_and_read(run: str) -> None:
    path = sample("linux", "kernel", run, "ss.log")
    assert sniff(path) == "ss"
    t = tracekit.read(path)
    k = t.meta["kernel"]
    assert k["congestion_control"] == run and t.warnings == []
    assert k["layout"] == ("one-line" if run == "reno" else "two-line")
    assert k["stamps"] == ("per line" if run == "reno" else "per block")
    sender = next(c for c in k["connections"] if f"{c['local']}->{c['peer']}" == SENDER)
    assert sender["cc"] == run and sender["mss"] == 1448
    # iperf3's control connection is there too, with the namespace's default (bbr)
    assert len(k["connections"]) == 2


def _log_values(path, key: str) -> list[float]:
    """Every value of ``key:NUMBER`` on the sender's lines, read with a plain regex."""
    text = path.read_text()
    if "\n\t" in text:  # two-line: join each socket line with its info line
        text = text.replace("\n\t", " ")
    rows = [line for line in text.splitlines() if "10.231.1.1:40000" in line]
    return [float(m.group(1)) for line in rows if (m := re.search(rf"\s{key}:([\d.]+)", line))]


@pytest.mark.parametrize("run", ("cubic", "reno"))  # both layouts
def test_ss_values_and_units_match_the_log(run: str) -> None:
    path = sample("linux", "kernel", run, "ss.log")
    t = tracekit.read(path)
    s = t.samples.filter(pl.col("node") == SENDER).sort("time", maintain_order=True)

    def series(metric: str, unit: str) -> list[float]:
        return s.filter((pl.col("metric") == metric) & (pl.col("unit") == unit))["value"].to_list()

    cwnd = _log_values(path, "cwnd")
    assert len(cwnd) > 50 and series("cwnd", "packets") == cwnd
    assert series("cwnd", "bytes") == [c * 1448 for c in cwnd]
    assert series("ssthresh", "packets") == _log_values(path, "ssthresh")
    assert series("rto", "s") == pytest.approx([v / 1000 for v in _log_values(path, "rto")])
    assert series("srtt", "s") == pytest.approx([v / 1000 for v in _log_values(path, "rtt")])
    assert series("bytes_acked", "bytes") == _log_values(path, "bytes_acked")
    assert series("unacked", "packets") == _log_values(path, "unacked")
    assert len(series("delivery_rate", "bps")) > 50 and min(series("pacing_rate", "bps")) > 1e6
    assert set(series("app_limited", "1")) <= {0.0, 1.0}


@pytest.mark.parametrize("name", ("outage_reno", "shaper_bbr"))
def test_ss_log_with_comment_stamps_is_read(name: str) -> None:
    """samples/linux/make_kernel_truth.sh stamps each poll with a ``# t=EPOCH`` line: every poll is
    read, and each socket's cwnd is the one printed (read with plain regexes from the log)."""
    path = sample("linux", "kernel_truth", f"{name}.ss.gz")
    text = gzip.decompress(path.read_bytes()).decode()
    assert sniff(path) == "ss"
    t = tracekit.read(path)
    polls, want = [], []  # per poll: whether it listed a socket
    node = None
    for line in text.splitlines():
        if line.startswith("# t="):
            polls.append(False)
        elif m := re.match(r"ESTAB\s+\d+\s+\d+\s+(\S+)\s+(\S+)", line):
            node, polls[-1] = f"{m.group(1)}->{m.group(2)}", True
        elif (m := re.search(r"\scwnd:(\d+)", line)) and node is not None:
            want.append((node, float(m.group(1))))
    got = t.samples.filter((pl.col("metric") == "cwnd") & (pl.col("unit") == "packets")).sort(
        "time", maintain_order=True).select("node", "value").rows()
    assert sum(polls) > 20 and t.samples["time"].n_unique() == sum(polls)
    assert sorted(got) == sorted(want) and len(got) > 20


#: One poll from the reno sample, rewritten as other iproute2 releases and options print it.
_SOCK = "ESTAB 0      263536    10.231.1.1:40000   10.231.2.1:5201"
_INFO = ("reno wscale:10,10 rto:232 rtt:31.785/1.769 mss:1448 cwnd:33 ssthresh:30 bytes_sent:165941 "
         "bytes_acked:70990 send 12026805bps pacing_rate 24927696bps delivery_rate 9682320bps busy:80ms "
         "rwnd_limited:8ms(10.0%) unacked:57 retrans:9/9 lost:15 sacked:18")
_OLD = ("sack reno wscale:10,10 rto:232 rtt:31.785/1.769 cwnd:33 mss:1448 ssthresh:30 send 12.0Mbps "
        "unacked:57 retrans:9/9 lost:15 pacing_rate 24.9Mbps delivery_rate 9.7Mbps")


@pytest.mark.parametrize("text", [
    f"1795654965.841544\nState Recv-Q Send-Q Local Address:Port  Peer Address:Port\n{_SOCK}\n\t {_INFO}\n",
    f"1795654965.841544 {_SOCK} timer:(on,232ms,0) ino:1 sk:2 <-> skmem:(r0,rb1) ts sack {_INFO}\n",
    f"2026-11-26 01:02:45.841544 tcp   {_SOCK}\n2026-11-26 01:02:45.841544 \t{_OLD}\n",
    f'1795654965.841544\n{_SOCK} users:(("my sender",pid=7,fd=5))\n\t{_OLD}\n',
    # ss -tine -m in the two-line layout (iproute2 6.1): -e ends the socket line, skmem opens the info line
    f"1795654965.841544\n{_SOCK} timer:(on,184ms,0) ino:0 sk:d cgroup:unreachable:1 ---\n"
    f"\t skmem:(r0,rb131072,t0,tb3939840,f3264,w832,o0,bl0,d0) ts sack {_INFO}\n",
], ids=["two-line", "one-line -e -m ts", "netid, ISO ts, old rates", "users with spaces", "two-line -e -m"])
def test_ss_variants(text: str) -> None:
    assert sniff_bytes(text.encode()) == "ss"
    t = tracekit.read(text.encode())
    v = {(r["metric"], r["unit"]): r["value"] for r in t.samples.iter_rows(named=True)}
    assert v[("cwnd", "packets")] == 33 and v[("cwnd", "bytes")] == 33 * 1448
    assert v[("ssthresh", "bytes")] == 30 * 1448 and v[("srtt", "s")] == pytest.approx(0.031785)
    assert v[("unacked", "packets")] == 57 and v[("total_retrans", "count")] == 9 and v[("lost", "packets")] == 15
    assert v[("pacing_rate", "bps")] == pytest.approx(24.9e6, rel=0.01)
    assert t.meta["kernel"]["connections"][0]["cc"] == "reno"
    assert t.samples["node"].unique().to_list() == [SENDER]


def test_ss_without_stamps_is_refused_with_a_hint() -> None:
    with pytest.raises(CorruptTraceError, match="time stamp") as exc:
        tracekit.read(f"{_SOCK}\n\t{_INFO}\n".encode())
    assert "date +%s.%N" in (exc.value.hint or "")


def test_ss_stray_lines_are_warned_about_with_their_line() -> None:
    t = tracekit.read(f"1795654965.8\n{_SOCK}\n\t{_INFO}\nsomething else\n".encode(), format="ss")
    (w,) = t.warnings
    assert w["code"] == "W-BADLINE" and w["line"] == 4
    with pytest.raises(TracekitError):
        tracekit.read(f"1795654965.8\n{_SOCK}\n\t{_INFO}\nsomething else\n".encode(), format="ss", strict=True)
    with pytest.raises(UnknownFormatError):
        tracekit.read(b"1795654965.8\nhello\n", format="ss")


# ---- nstat / netstat -s --------------------------------------------------------------------------

@pytest.mark.parametrize("run", RUNS)
def test_nstat_pair_gives_the_runs_totals(run: str) -> None:
    path = sample("linux", "kernel", run, "nstat.log")
    assert sniff(path) == "nstat"
    t = tracekit.read(path)
    k = t.meta["kernel"]
    assert k["snapshots"] == 2 and 1.5 < k["interval_s"] < 5 and t.warnings == []
    after = path.read_text().split("#kernel")[2]
    before = path.read_text().split("#kernel")[1]
    for name in ("TcpRetransSegs", "TcpExtTCPFastRetrans", "TcpOutSegs"):
        a, b = (int(re.search(rf"^{name}\s+(\d+)", x, re.M).group(1)) for x in (after, before))
        assert k["counters"][name] == a - b


def test_netstat_s_agrees_with_nstat() -> None:
    """The same run counted by net-tools' netstat -s (phrases) and iproute2's nstat (names)."""
    ns = tracekit.read(sample("linux", "kernel", "reno", "netstat.log")).meta["kernel"]
    nst = tracekit.read(sample("linux", "kernel", "reno", "nstat.log")).meta["kernel"]
    assert ns["counters_tool"] == "netstat -s"
    for name in ("TcpRetransSegs", "TcpExtTCPFastRetrans", "TcpExtTCPLossProbes", "TcpExtTCPSackRecovery",
                 "TcpActiveOpens"):
        assert ns["counters"][name] == nst["counters"][name], name
    assert nst["counters"]["TcpRetransSegs"] > 20


def test_one_snapshot_is_warned_about() -> None:
    t = tracekit.read(b"#kernel\nTcpRetransSegs   7   0.0\nTcpExtTCPFastRetrans  5  0.0\nTcpOutSegs 9 0.0\n")
    assert t.meta["kernel"]["counters"]["TcpRetransSegs"] == 7
    assert [w["code"] for w in t.warnings] == ["W-ONE-SNAPSHOT"]


# ---- combined with the capture -------------------------------------------------------------------

@pytest.mark.parametrize("run", RUNS)
def test_run_directory_matches_connections_by_4_tuple(run: str, analyses: dict) -> None:
    an = analyses[run]
    info = an.trace.meta["kernel"]
    assert info["unmatched"] == [] and {c["flow"] for c in info["connections"]} == {0, 1}
    assert an.trace.warnings == []
    row = _sender_row(an)
    assert row["kernel_cc"] == run and row["flow"] == 1
    # the kernel's view belongs to the sending direction only
    other = an.flows.filter(pl.col("sport") == 5201)
    assert other["kernel_cc"].null_count() == other.height
    trace_rows = an.cwnd.filter((pl.col("source") == "trace") & (pl.col("flow") == 1))
    assert trace_rows.height > 50 and set(trace_rows["dir"].to_list()) == {0}


@pytest.mark.parametrize("run", RUNS)
def test_times_are_aligned_on_the_capture(run: str, analyses: dict) -> None:
    """The kernel's bytes_acked at each poll is the capture's cumulative ACK at that time (± a few ms)."""
    t = analyses[run].trace
    acks = t.packets.filter((pl.col("flow") == 1) & (pl.col("dir") == 1)).select("time", "ack").sort("time")
    k = t.samples.filter((pl.col("metric") == "bytes_acked") & (pl.col("flow") == 1)).select("time", "value")
    j = k.sort("time").join_asof(acks, on="time", strategy="backward")
    # ack is relative to the ISN (SYN = 1), bytes_acked counts payload only (tcpi_bytes_acked - 1)
    err = (j["ack"] - 1 - j["value"]).abs()
    assert err.median() <= 10 * 1448  # a 10 Mbit/s link moves ~1.2 kB a ms: within ~10 ms


@pytest.mark.parametrize("run", ("cubic", "reno"))
def test_cwnd_estimate_within_10_percent_of_the_kernel_where_cwnd_limited(run: str, analyses: dict) -> None:
    an = analyses[run]
    row = _sender_row(an)
    assert row["kernel_cwnd_compared"] >= 50
    assert row["kernel_cwnd_err_p50"] <= 0.10
    # recomputed here from the samples: kernel cwnd (bytes) vs the latest estimate before each poll
    s = an.trace.samples.filter(pl.col("node") == SENDER)
    wide = s.filter(pl.col("metric").is_in(["cwnd", "unacked"])).with_columns(
        m=pl.col("metric") + "_" + pl.col("unit")).pivot("m", index="time", values="value")
    wide = wide.with_columns(pl.col("unacked_packets").fill_null(0)).filter(
        pl.col("unacked_packets") >= CWND_LIMITED * pl.col("cwnd_packets")).sort("time")
    est = an.cwnd.filter((pl.col("source") == "estimate") & (pl.col("flow") == 1) & (pl.col("dir") == 0))
    j = wide.join_asof(est.select("time", pl.col("cwnd_bytes").alias("est")).sort("time"), on="time",
                       strategy="backward").drop_nulls("est")
    rel = ((j["est"] - j["cwnd_bytes"]) / j["cwnd_bytes"]).abs()
    assert j.height == row["kernel_cwnd_compared"]
    assert rel.median() == pytest.approx(row["kernel_cwnd_err_p50"])


@pytest.mark.parametrize("run", ("bbr", "tiny"))
def test_report_says_how_far_the_estimate_is(run: str, analyses: dict) -> None:
    """BBR, and Reno through an 8 kB router queue (cwnd of a few segments): the error is stated."""
    from tracekit.reports.kernel import TRUSTED, verdicts

    an = analyses[run] if run in analyses else _run(run)
    err = _sender_row(an)["kernel_cwnd_err_p50"]
    line = next(v for v in verdicts(an) if ":40000" in v)
    assert f"{err:.1%}" in line and an.trace.meta["kernel"]["congestion_control"] in line
    assert ("rough guide" in line) == (err > TRUSTED)


@pytest.mark.parametrize("run", (*RUNS, "tiny"))
def test_retransmissions_match_the_kernels_counters(run: str, analyses: dict) -> None:
    """tracekit's count vs TcpRetransSegs and its fast ones vs TCPFastRetrans, within 2 %."""
    an = analyses[run] if run in analyses else _run(run)
    rows = {r["counter"]: r for r in retrans_table(an) if r["counter"]}
    total, fast = rows["TcpRetransSegs"], rows["TcpExtTCPFastRetrans"]
    assert total["kernel"] > 0
    assert abs(total["tracekit"] - total["kernel"]) <= 0.02 * total["kernel"]
    assert abs(fast["tracekit"] - fast["kernel"]) <= 0.02 * fast["kernel"]
    # the per-connection count (ss retrans:a/b, tcpi_total_retrans at the last poll) agrees with the
    # sender's row; in "tiny" the polls stopped before the last retransmissions
    row = _sender_row(an)
    assert row["kernel_total_retrans"] <= row["retrans_packets"]
    assert run == "tiny" or row["kernel_total_retrans"] == row["retrans_packets"]


def test_cli_kernel_option_equals_the_run_directory(tmp_path) -> None:
    d = sample("linux", "kernel", "cubic")
    env = {"PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "tracekit", "analyze", "--json"]
    one = subprocess.run([*cmd, str(d / "capture.pcap"), "--kernel", str(d / "ss.log"), "--kernel",
                          str(d / "nstat.log")], capture_output=True, text=True, env=env, check=True)
    doc = json.loads(one.stdout)
    whole = json.loads(subprocess.run([*cmd, str(d)], capture_output=True, text=True, env=env, check=True).stdout)
    assert doc["kernel"]["retransmissions"] == whole["kernel"]["retransmissions"]
    sender = [f for f in doc["flows"] if f["sport"] == 40000][0]
    assert sender["kernel_cwnd_err_p50"] == pytest.approx(
        [f for f in whole["flows"] if f["sport"] == 40000][0]["kernel_cwnd_err_p50"])


def test_report_shows_the_kernel_view_escaped(tmp_path) -> None:
    from tracekit.kernel import attach
    from tracekit.reports.html import render_report

    d = sample("linux", "kernel", "reno")
    cap = tracekit.read(d / "capture.pcap")
    ss = tracekit.read(d / "ss.log")
    info = {**ss.meta["kernel"], "congestion_control": "<script>x</script>"}
    page, figs = render_report([tracekit.analyze(attach(cap, [ss.with_meta(kernel=info),
                                                              tracekit.read(d / "nstat.log")]))])
    assert "The kernel&#x27;s view" in page or "The kernel's view" in page
    assert 'id="kernel-retrans"' in page and "<script>x</script>" not in page
    cw = next(f for _, f in figs if f.kind == "cwnd" and f.flow == 1)
    spec = json.dumps(cw.chart.to_dict())
    assert "cwnd (kernel)" in spec and "ssthresh (kernel)" in spec and "cwnd (estimate)" in spec


def test_directory_with_the_kernel_files_only(tmp_path) -> None:
    for f in ("ss.log", "nstat.log"):
        (tmp_path / f).write_bytes(sample("linux", "kernel", "cubic", f).read_bytes())
    t = tracekit.read(tmp_path)
    assert t.packets.height == 0 and t.meta["kernel"]["counters"]["TcpRetransSegs"] == 5
    assert {c["flow"] for c in t.meta["kernel"]["connections"]} == {0, 1}
    an = tracekit.analyze(t)
    assert an.cwnd.filter(pl.col("source") == "trace").height > 50
