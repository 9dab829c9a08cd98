"""Charts that never mislead (issue: answers): scales fit the data, runs keep their colour, axes from 0.

Every bundled sample is drawn as the report draws it (:func:`tracekit.reports.figures.figures`);
the assertions read the Vega-Lite specs, not the Python that made them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import need_tool, sample

import tracekit
from tracekit import pipeline
from tracekit.reports import charts, compare
from tracekit.reports.figures import figures

#: Inputs drawn: every capture, every run directory, the simulators' single files.
INPUTS = (
    ("linux", "bulk_lossy.pcap"), ("linux", "rwnd_limited.pcap"), ("linux", "slow_reader.pcap"),
    ("linux", "stall_cut.pcap"), ("linux", "ipv6_bulk.pcap"), ("linux", "headers_only.pcap"),
    ("ns2", "lab_tahoe"), ("ns2", "lab_reno"), ("ns2", "lab_lossy"), ("ns2", "dumbbell"), ("ns2", "sweep", "win8"),
    ("ns3", "dumbbell"), ("netsim", "Packet_Trace_ftp_tcp.csv"), ("opnet", "tcp_reno_tab.txt"),
)
#: Axis titles that measure time, a rate or a delay: none of them may show values below 0.
NON_NEGATIVE = re.compile(r"time|RTT|rtt|bit/s|goodput|throughput|cwnd|queue|bytes\)|pps|packets/s")


@pytest.fixture(scope="module", params=INPUTS, ids=lambda p: "/".join(p))
def drawn(request: pytest.FixtureRequest) -> tuple[Any, float | None, list[dict[str, Any]]]:
    analysis = tracekit.analyze(tracekit.read(sample(*request.param)))
    link = pipeline.link_rate(analysis)  # the run's run.json, as the report reads it
    return analysis, link, [charts.spec(f.chart) | {"_kind": f.kind, "_flow": f.flow, "_dir": f.dir}
                            for f in figures(analysis, link_rate_bps=link) if f.present]


def _layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for layer in spec.get("layer", []) + spec.get("hconcat", []) + spec.get("vconcat", []):
        out += _layers(layer) if ("layer" in layer or "hconcat" in layer) else [layer]
    return out or [spec]


def _rows(spec: dict[str, Any], layer: dict[str, Any]) -> list[dict[str, Any]]:
    # altair hoists the data of a one-layer chart to the top level
    name = layer.get("data", {}).get("name") or spec.get("data", {}).get("name")
    return spec.get("datasets", {}).get(name, []) if name else []


def test_throughput_scale_fits_the_data_and_link(drawn: tuple[Any, float | None, list[dict[str, Any]]]) -> None:
    """The y domain is at most 1.5 × max(measured series, link rate): a model never sets it."""
    analysis, link, specs = drawn
    link = link or 0.0
    seen = 0
    for spec in (s for s in specs if s["_kind"] == "throughput"):
        layers = _layers(spec)
        series = next(la for la in layers if la.get("name", "").endswith("_series"))
        peak = max(r["y"] for r in _rows(spec, series) if r["y"] is not None)
        domain = series["encoding"]["y"]["scale"]["domain"]
        assert domain[0] == 0 and domain[1] <= 1.5 * max(peak, link), (domain, peak, link)
        for la in layers:  # a reference line drawn inside the frame; one outside is text at the edge
            if la.get("name", "").endswith("_models"):
                assert all(r["y"] <= domain[1] for r in _rows(spec, la))
        seen += 1
    if analysis.flows.height and "goodput_bps" in analysis.flows.columns:
        assert seen, "a sample with data flows draws a throughput chart"


def _starts_late(analysis: Any, spec: dict[str, Any]) -> bool:
    """The chart's connection began after a silence longer than itself (its row of the flows table)."""
    if spec.get("_flow") is None:
        return False
    row = analysis.flows.filter((pl.col("flow") == spec["_flow"]) & (pl.col("dir") == spec["_dir"]))
    start, end = row["start"][0], row["end"][0]
    return bool(start > end - start)


def _check_axis(spec: dict[str, Any], layer: dict[str, Any], channel: str, late: bool = False) -> None:
    enc = layer.get("encoding", {}).get(channel)
    if not isinstance(enc, dict) or not NON_NEGATIVE.search(str(enc.get("title", ""))):
        return
    scale = enc.get("scale", {})
    if late and channel == "x" and enc.get("title") == "time (s)":
        # a connection that starts late: its time axis fits its own times (test_late_connection_*)
        assert scale.get("zero") is False, scale
    else:
        assert scale.get("zero") is not False, (enc["title"], scale)
        low = scale.get("domainMin", scale.get("domain", [0])[0])
        assert low == 0, (enc["title"], scale)
    field = enc.get("field")
    values = [r.get(field) for r in _rows(spec, layer)]
    assert all(v is None or v >= 0 for v in values), enc["title"]


def test_time_rate_and_rtt_axes_start_at_zero(drawn: tuple[Any, float | None, list[dict[str, Any]]]) -> None:
    """Every time, rate, RTT and window axis starts at 0, and no value drawn on it is negative; only the
    time axis of a connection that starts after a silence longer than itself fits its own times."""
    analysis, _link, specs = drawn
    checked = 0
    for spec in specs:
        late = _starts_late(analysis, spec)
        for layer in _layers(spec):
            for channel in ("x", "y"):
                _check_axis(spec, layer, channel, late)
                checked += 1
    assert checked or not specs


def test_late_connection_has_its_own_time_axis_and_throughput_bins() -> None:
    """7 ms of TCP at 0.98 s of a VXLAN capture: the charts' time axes and throughput bins fit the
    connection (times from tshark), not the capture, so the throughput chart draws a line."""
    need_tool("tshark")
    path = sample("field", "vxlan.pcap")
    out = subprocess.run(["tshark", "-r", str(path), "-Y", "tcp", "-T", "fields", "-e", "frame.time_relative"],
                         capture_output=True, text=True, check=True).stdout.split()
    first, last = float(out[0]), float(out[-1])
    assert first > last - first  # the premise: the connection starts after a longer silence
    analysis = tracekit.analyze(tracekit.read(path))
    figs = [f for f in figures(analysis) if f.present and f.flow is not None]
    assert {f.kind for f in figs} == {"timeseq", "cwnd", "throughput", "rtt"}
    for fig in figs:
        spec = charts.spec(fig.chart)
        scales = [x["scale"] for la in _layers(spec) if "scale" in (x := la.get("encoding", {}).get("x", {}))]
        assert scales and all(sc.get("zero") is False and "domainMin" not in sc for sc in scales), (fig.kind, scales)
        if fig.kind == "throughput":
            rows = _rows(spec, next(la for la in _layers(spec) if la.get("name", "").endswith("_series")))
            times = sorted({r["t"] for r in rows if r["s"] == "throughput"})
            assert len(times) >= 3, times  # several bins: a line, not one point
            step = times[1] - times[0]
            assert step <= (last - first) / 3
            assert first - step <= times[0] and times[-1] <= last
        else:
            drawn_t = [r["t"] for rows in spec["datasets"].values() for r in rows if "t" in r]
            assert drawn_t and all(first - 1e-6 <= t <= last + 1e-6 for t in drawn_t), fig.kind


def _colors(spec: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    out = []
    for layer in _layers(spec) + [spec]:
        enc = layer.get("encoding", {}).get("color")
        if isinstance(enc, dict) and enc.get("field") == "label":
            out.append((enc["scale"]["domain"], enc["scale"]["range"]))
    return out


def test_compare_keeps_one_colour_per_run(tmp_path: Path) -> None:
    """On a compare page each run has the same colour on every chart, in the order the runs were given
    (the ellipse used to colour runs alphabetically while the overlays used argument order)."""
    paths = [sample("ns2", "lab_tahoe"), sample("linux", "bulk_lossy.pcap"), sample("ns2", "lab_reno")]
    result = compare.compare([(str(p), pipeline.load(p)) for p in paths], labels=["zeta", "alpha", "mid"])
    specs = [charts.spec(f.chart) for f in compare.figures(result) if f.present]
    assert len(specs) >= 4
    pairs = [pair for spec in specs for pair in _colors(spec)]
    assert len(pairs) >= 4 and all(pair == pairs[0] for pair in pairs), pairs
    domain, colours = pairs[0]
    assert domain == ["zeta", "alpha", "mid"] and len(set(colours)) == 3


def test_offscale_model_is_text_at_the_edge() -> None:
    """bulk_lossy's window limit (~72 Mbit/s) is far above its ~5 Mbit/s: written at the edge, not drawn."""
    analysis = tracekit.analyze(tracekit.read(sample("linux", "bulk_lossy.pcap")))
    row = analysis.flows.row(0, named=True)
    assert row["window_limited_bps"] > 5 * row["goodput_bps"]  # the situation the rule is for
    fig = next(f for f in figures(analysis) if f.kind == "throughput")
    spec = charts.spec(fig.chart)
    texts = [r["text"] for la in _layers(spec) if la.get("name", "").endswith("_offscale") for r in _rows(spec, la)]
    assert any(t.startswith("window limited: ") and "Mbit/s" in t for t in texts), texts


def test_delta_cells_coloured_by_better_or_worse() -> None:
    """A Δ cell is green when the run did better on that metric and red when worse, whatever the
    sign: more goodput is better, more timeouts and a longer transfer are worse; fewer fast
    retransmits is neither (lab_lossy repairs some losses by timeout instead)."""
    runs = (sample("ns2", "lab_reno"), sample("ns2", "lab_lossy"))
    result = compare.compare([(str(p), pipeline.load(p)) for p in runs])
    page = compare.render(result)
    higher_better = {"goodput_bps", "throughput_bps"}
    lower_better = {"transfer_s", "retrans_packets", "retrans_bytes", "retrans_rto", "rtt_p50_s",
                    "rtt_mean_s", "handshake_rtt_s", "stall_time_s"}
    cells = re.findall(r'<td data-run="1" data-delta="([a-z_0-9]+)"( class="(better|worse)")?>', page)
    judged = 0
    for key, _, cls in cells:
        d, _rel = result.delta(1, key)
        if key in higher_better | lower_better and d:
            up_is_good = key in higher_better
            assert cls == ("better" if (d > 0) == up_is_good else "worse"), (key, d, cls)
            judged += 1
        elif key not in higher_better | lower_better:
            assert cls == "", (key, cls)  # bytes, models, windows: neither better nor worse
    assert judged >= 3  # the lossy run lost goodput and retransmitted more: both judged
