"""Charts: downsampling, every chart kind, label safety, determinism, and golden Vega-Lite specs.

Golden specs live in ``tests/golden/<sample>/<kind>.json`` (one per sample × chart kind,
datasets summarised by ``report_data.summarise``). Regenerate them after an intended change:

    TRACEKIT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_charts.py -q

A chart kind a sample legitimately lacks is listed in :data:`MISSING` with the reason
(flent's MISSING_PLOTS); a kind whose analysis frame the Analysis does not provide yet
is expected to be absent with the reason the report gives.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import pytest
from conftest import GOLDEN, SAMPLES
from report_data import XSS_IMG, XSS_SCRIPT, data_rows, summarise, synthetic, validate, walk

from tracekit import schema
from tracekit.reports import charts
from tracekit.reports.downsample import cap, minmax
from tracekit.reports.figures import KINDS, figures

UPDATE = os.environ.get("TRACEKIT_UPDATE_GOLDEN") == "1"

# ---- downsampling ---------------------------------------------------------------------------------


def test_minmax_keeps_extremes_and_bounds_size() -> None:
    """1M noisy points with two spikes: ≤ ~2,000 kept per series, both spikes and the ends kept."""
    rng = np.random.default_rng(1)
    n = 1_000_000
    y = rng.normal(0, 1, n)
    y[123_456], y[876_543] = 50.0, -50.0
    df = pl.DataFrame({"t": np.arange(n) / 1000.0, "y": y, "g": np.where(np.arange(n) < n // 2, "a", "b")})
    out = minmax(df, "t", "y", by=["g"], max_points=2000)
    sizes = out.group_by("g").len()["len"].to_list()
    assert all(s <= 2000 for s in sizes) and min(sizes) > 1000
    assert out["y"].max() == 50.0 and out["y"].min() == -50.0
    assert out["t"].min() == 0.0 and out["t"].max() == df["t"].max()
    assert out["t"].is_sorted()


def test_minmax_leaves_short_series_alone() -> None:
    df = pl.DataFrame({"t": [0.0, 1.0, 2.0], "y": [3, 1, 2]})
    assert minmax(df, "t", "y").equals(df)


def test_minmax_sorted_path_keeps_the_general_paths_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The segment-reduction path for time-ordered series (downsample._m4_sorted) keeps exactly the
    rows of polars' group-by path, ties in x and in y included (first row holding an extreme), and
    null values, which take no part in the extremes."""
    from tracekit.reports import downsample

    rng = np.random.default_rng(7)
    cases = []
    for i in range(60):
        n = int(rng.integers(2, 30_000))
        t = np.sort(rng.integers(0, int(rng.integers(1, 4_000)), n)).astype(float) / 7.0  # many equal times
        y = rng.integers(0, int(rng.integers(1, 40)), n)  # many equal values
        df = pl.DataFrame({"t": t, "y": y / 3.0 if i % 2 else y, "row": np.arange(n)})
        if i % 3 == 0:  # null values (bytes in flight past the outstanding-segment cap), a run of them too
            gone = rng.random(n) < rng.choice([0.001, 0.3])
            gone[n // 3: n // 3 + int(rng.integers(0, n // 4 + 1))] = True
            df = df.with_columns(pl.when(pl.Series(gone)).then(None).otherwise(pl.col("y")).alias("y"))
        cases.append((df, int(rng.choice([8, 40, 400, 2000]))))
    all_null = pl.DataFrame({"t": np.arange(50.0), "y": pl.Series([None] * 50, dtype=pl.Int64), "row": np.arange(50)})
    cases.append((all_null, 8))
    fast = [downsample._m4(df, "t", "y", mp) for df, mp in cases]
    assert all(downsample._m4_sorted(df["t"], df["y"], max(1, mp // 4)) is not None for df, mp in cases)
    monkeypatch.setattr(downsample, "_m4_sorted", lambda *a: None)  # the general (group-by) path
    for (df, mp), got in zip(cases, fast, strict=True):
        assert got.equals(downsample._m4(df, "t", "y", mp))


def test_bucket_numbers_are_polars_arithmetic_to_the_bit() -> None:
    """downsample._bucket_numbers (numpy) gives polars' own _bucket expression's numbers, also at the
    bucket edges where ``x / span`` and ``x * (1 / span)`` round to different sides."""
    from tracekit.reports import downsample

    rng = np.random.default_rng(3)
    edges = []  # offsets one ulp off k * span / buckets: there the two divisions disagree
    for _ in range(4000):
        span = float(rng.random() * 10.0 ** int(rng.integers(-3, 4)))
        k = int(rng.integers(1, 500))
        edges.append((span, float(np.nextafter(k * span / 500, rng.choice([-1.0, 1.0]) * np.inf))))
    split = [(span, d) for span, d in edges if np.floor(d / span * 500) != np.floor(d * (1.0 / span) * 500)]
    assert split  # the cases that tell the two apart exist
    cases = [np.array([0.0, d, span]) + 3.25 for span, d in split[:200]]
    cases += [np.sort(rng.random(int(rng.integers(2, 5000))) * 10.0 ** int(rng.integers(-2, 6))) for _ in range(40)]
    cases += [np.full(5, 2.5)]  # no span: one bucket
    for x in cases:
        for buckets in (1, 499, 500):
            want = pl.DataFrame({"t": x}).select(downsample._bucket("t", buckets)).to_series().to_numpy()
            assert np.array_equal(downsample._bucket_numbers(x, buckets), want)


def test_minmax_by_series_keeps_the_per_series_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several series thinned from their row numbers (downsample._m4_series) keep the rows, in the
    order, that thinning each series' own copy and sorting the union gives."""
    from tracekit.reports import downsample

    rng = np.random.default_rng(11)
    n = 60_000
    t = np.sort(rng.integers(0, 9_000, n)).astype(float) / 3.0
    df = pl.DataFrame({"t": t, "y": rng.integers(0, 50, n) / 7.0,
                       "s": rng.choice(["seq", "ts", "x"], n, p=[0.6, 0.39, 0.01]), "row": np.arange(n)})
    fast = minmax(df, "t", "y", by=["s"], max_points=400)
    monkeypatch.setattr(downsample, "_m4_series", lambda *a: None)  # one copy per series, concatenated
    assert fast.equals(minmax(df, "t", "y", by=["s"], max_points=400))
    assert fast.height < n


def test_cap_spreads_markers_and_counts_the_rest() -> None:
    df = pl.DataFrame({"t": np.arange(10_000, dtype=float), "f": [0] * 9_000 + [1] * 1_000})
    kept, left = cap(df, by=["f"], n=100)
    assert kept.group_by("f").len().sort("f")["len"].to_list() == [100, 100]
    assert left == 10_000 - 200
    late = kept.filter(pl.col("f") == 0)["t"]
    assert late.max() > 8_800  # evenly spread, not "the first 100"


# ---- every chart kind -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full() -> Any:
    return synthetic()


def test_every_kind_is_drawn_from_full_frames(full: Any) -> None:
    figs = figures(full)
    drawn = {f.kind for f in figs if f.present}
    assert drawn == set(KINDS), [(f.kind, f.reason) for f in figs if not f.present]
    for f in figs:
        spec = f.chart.to_dict()  # altair validates against the Vega-Lite schema
        assert spec == charts.spec(f.chart)  # the fast serialisation gives the same spec
        assert data_rows(spec), f.key


def test_time_sequence_layers(full: Any) -> None:
    spec = charts.time_sequence(full.packets, 0, 0, retransmissions=full.retransmissions,
                                stalls=full.stalls).to_dict()
    names = [layer["name"] for layer in spec["layer"]]
    assert names == ["timeseq_data", "timeseq_ack", "timeseq_window", "timeseq_sack", "timeseq_retrans",
                     "timeseq_stalls"]
    series = {r.get("s") for rows in data_rows(spec) for r in rows}
    assert series == {"data", "ack", "window", "sack", "retransmission", "stall"}
    # the legend lists exactly the series drawn
    assert spec["encoding"]["color"]["scale"]["domain"] == list(charts.SEQ_COLORS)


def test_time_sequence_finds_retransmissions_without_the_frame(full: Any) -> None:
    spec = charts.time_sequence(full.packets, 0, 0).to_dict()
    retx = [r for rows in data_rows(spec) for r in rows if r.get("s") == "retransmission"]
    assert len(retx) == full.retransmissions.filter(pl.col("flow") == 0).height == 4


def test_infinite_ssthresh_is_not_drawn(full: Any) -> None:
    spec = charts.cwnd(full.cwnd, 0, 0).to_dict()
    ss = [r["y"] for rows in data_rows(spec) for r in rows if r.get("s") == "ssthresh"]
    assert ss and max(ss) == 50_000  # 4294967295 ("infinite", ns-3) left out


def test_models_drawn_as_reference_lines(full: Any) -> None:
    spec = charts.throughput(full.throughput(), 0, 0, models={"mathis_bps": 4e6, "padhye_bps": None}).to_dict()
    refs = [r for rows in data_rows(spec) for r in rows if r.get("s") in ("mathis", "padhye", "window limited")]
    assert refs == [{"s": "mathis", "y": 4000000}]


def test_flows_bar_reports_jain(full: Any) -> None:
    chart = charts.flows_bar(full.flows.with_columns(label=pl.lit("x") + pl.col("flow").cast(pl.String)),
                             tput=full.throughput(), fairness=full.fairness)
    assert "Jain's index 0.900 over 2 flows" in chart.to_dict()["title"]
    assert charts.jain([1.0, 1.0]) == 1.0 and abs(charts.jain([1.0, 0.0]) - 0.5) < 1e-12  # type: ignore[operator]


def test_ellipse_is_the_one_sigma_contour() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.05, 0.01, 500), rng.normal(5e6, 1e6, 500)
    spec = charts.ellipse(pl.DataFrame({"label": ["run"] * 500, "rtt_s": x, "throughput_bps": y})).to_dict()
    ring = next(rows for rows in data_rows(spec) if rows and "i" in rows[0])
    mean = next(rows for rows in data_rows(spec) if rows and "n" in rows[0])[0]
    assert abs(mean["x"] - x.mean()) < 1e-6 and abs(mean["y"] - y.mean()) < 1
    xs, ys = [r["x"] for r in ring], [r["y"] for r in ring]
    assert abs((max(xs) - min(xs)) / 2 - x.std(ddof=1)) < 0.1 * x.std()
    assert abs((max(ys) - min(ys)) / 2 - y.std(ddof=1)) < 0.1 * y.std()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("frames", ["absent", "empty"])
def test_missing_or_empty_frames_give_a_reason(full: Any, kind: str, frames: str) -> None:
    """Only packets and flows (other frames absent, or empty with their declared columns): every kind
    but the time–sequence graph is left out with a reason."""
    import types

    from report_data import FakeAnalysis

    if frames == "absent":
        analysis: Any = types.SimpleNamespace(trace=full.trace.with_meta(), packets=full.packets, flows=full.flows)
        analysis.trace = type(full.trace)(full.trace.packets, full.trace.samples.clear(), full.trace.meta)
    else:
        empty = {n: schema.empty(c) for n, c in (("cwnd", schema.CWND), ("flight", schema.FLIGHT), ("rtt", schema.RTT),
                                                 ("retransmissions", schema.RETRANSMISSIONS),
                                                 ("stalls", schema.STALLS), ("queue", schema.QUEUE),
                                                 ("fairness", schema.FAIRNESS))}
        trace = type(full.trace)(full.trace.packets, full.trace.samples.clear(), full.trace.meta)
        analysis = FakeAnalysis(trace, full.packets, full.flows.head(1), empty, schema.empty(schema.THROUGHPUT))
    figs = [f for f in figures(analysis) if f.kind == kind]
    assert figs
    for f in figs:
        if kind == "timeseq" or (kind == "flows" and frames == "absent"):
            assert f.present, f.reason
        else:
            assert not f.present and f.reason, f.key


def test_large_series_stay_light() -> None:
    """A flow of 200k segments (400k packets): ≤ ~2,000 points per series, a few thousand per chart."""
    full = synthetic(n=200_000)
    for f in figures(full):
        if f.present:
            rows = data_rows(charts.spec(f.chart))
            for dataset in rows:
                per_series: dict[Any, int] = {}
                for r in dataset:
                    per_series[r.get("s", r.get("label"))] = per_series.get(r.get("s", r.get("label")), 0) + 1
                assert max(per_series.values()) <= 2000, (f.key, per_series)
            assert sum(len(r) for r in rows) <= 12_000, f.key


# ---- safety ---------------------------------------------------------------------------------------

ALLOWED_FIELDS = {"t", "t2", "y", "y2", "s", "kind", "cause", "label", "x", "i", "n", "total", "group", "path", "text"}


@pytest.fixture(scope="module")
def hostile() -> Any:
    return synthetic(n=400, src=XSS_SCRIPT, dst=XSS_IMG + "\x07\u202e" + "A" * 100, link=XSS_SCRIPT)


def test_untrusted_text_is_data_never_field_or_expression(hostile: Any) -> None:
    for f in figures(hostile):
        assert f.present, f.reason
        spec = charts.spec(f.chart)
        validate(spec)
        for _path, key, value in walk(spec):
            if key == "field":
                assert value in ALLOWED_FIELDS, (f.key, value)
            if key in ("expr", "calculate", "filter", "test", "signal") and isinstance(value, str):
                assert "script" not in value and "img" not in value, (f.key, value)
        text = json.dumps(spec, ensure_ascii=False)
        assert "\x07" not in text and "\u202e" not in text


def test_labels_are_cleaned_and_truncated(hostile: Any) -> None:
    from tracekit.reports.figures import flow_labels

    label = flow_labels(hostile.flows)["label"][0]
    assert len(label) == charts.MAX_LABEL and label.endswith("…")
    assert "\x07" not in label and "\u202e" not in label
    assert charts.safe_label("a\x00b\u2028c\u202ed") == "abcd"


# ---- determinism ----------------------------------------------------------------------------------


def test_specs_are_deterministic(full: Any) -> None:
    first = [charts.spec(f.chart) for f in figures(full)]
    alt.Chart(alt.Data(values=[{"a": 1}])).mark_point().interactive().to_dict()  # bump altair's counters
    again = [charts.spec(f.chart) for f in figures(full)]
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert "param_" not in json.dumps(first) and "view_" not in json.dumps(first)


@pytest.mark.parametrize("rel", ["ns2/lab_reno", "linux/bulk_lossy.pcap"])
def test_plain_layering_gives_altairs_spec(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layered charts built without altair's copies (_chartkit._plain_layer) serialise exactly as
    ``alt.layer``'s (key order too: the page's bytes stay the same), and validate."""
    import tracekit
    from tracekit.reports import _chartkit

    analysis = tracekit.analyze(tracekit.read(SAMPLES / rel))
    plain = [f.chart for f in figures(analysis) if f.present]
    assert any(isinstance(c, _chartkit._Layers) for c in plain)
    monkeypatch.setattr(_chartkit, "_plain_layer", lambda charts: None)
    altair_way = [f.chart for f in figures(analysis) if f.present]
    assert not any(isinstance(c, _chartkit._Layers) for c in altair_way)
    assert json.dumps([charts.spec(c) for c in plain]) == json.dumps([charts.spec(c) for c in altair_way])
    for c in plain:
        c.to_dict(validate=True)


@pytest.mark.parametrize("rel", ["linux/stall_cut.pcap", "ns2/lab_reno"])
def test_page_datasets_are_the_rows_text_without_dicts(rel: str) -> None:
    """A page keeps each chart dataset as its frame and JSON text (datasets.FrameRows): no row dict is
    made for it, and its spec block is the text json.dumps writes of the rows that spec() and altair's
    own to_dict hand everyone else."""
    import tracekit
    from tracekit.reports.datasets import FrameRows
    from tracekit.reports.html import script_json

    analysis = tracekit.analyze(tracekit.read(SAMPLES / rel))
    drawn = [f for f in figures(analysis) if f.present]
    lazy = {f.key: charts.spec(f.chart, lazy=True) for f in drawn}
    kept = [d for s in lazy.values() for d in s["datasets"].values() if isinstance(d, FrameRows)]
    assert kept and all(d._rows is None for d in kept)  # the page path made no dicts
    eager = {f.key: charts.spec(f.chart) for f in drawn}
    assert not any(isinstance(d, FrameRows) for s in eager.values() for d in s["datasets"].values())
    text = json.dumps(eager, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    assert script_json(lazy) == text
    chart = drawn[0].chart
    assert chart.to_dict(validate=False)["datasets"] == eager[drawn[0].key]["datasets"]  # altair iterates them


# ---- golden specs: every sample × chart kind ------------------------------------------------------

#: Chart kinds a sample lacks on purpose: (sample glob, kind) -> reason.
MISSING: dict[tuple[str, str], str] = {
    ("linux/*", "queue"): "a capture at the sender sees no router queue",
    ("ns3/dumbbell/*.pcap", "queue"): "a capture at the sender sees no router queue",
    ("linux/*", "flows"): "each Linux sample is one connection: nothing to compare",
    ("ns3/dumbbell/*.pcap", "flows"): "the sender's pcap holds one connection",
    ("ns2/lab_*", "flows"): "the tpWindow lab runs one FTP flow",
    ("ns2/big_queue", "flows"): "the tpWindow lab runs one FTP flow",
    ("ns2/outage", "flows"): "the outage run has one FTP flow",
    ("ns2/sweep/*", "flows"): "the tpWindow lab runs one FTP flow",
    ("ns2/grading/*", "flows"): "the tpWindow lab runs one FTP flow",
    ("ns2/grading/submissions/*", "flows"): "the tpWindow lab runs one FTP flow",
    ("ns2/feedback/*", "flows"): "the tpWindow lab runs one FTP flow",
    ("linux/*", "samples"): "a capture has no tool-reported series",
    ("ns3/dumbbell/*.pcap", "samples"): "a capture has no tool-reported series",
    ("opnet/*", "timeseq"): "OPNET exports statistics, not packets",
    ("opnet/*", "cwnd"): "OPNET exports statistics, not packets (its cwnd is under 'samples')",
    ("opnet/*", "throughput"): "OPNET exports statistics, not packets (its throughput is under 'samples')",
    ("opnet/*", "rtt"): "OPNET exports statistics, not packets (its RTT is under 'samples')",
    ("opnet/*", "queue"): "OPNET exports statistics, not packets",
    ("opnet/*", "flows"): "OPNET exports statistics, not packets",
    ("opnet/*", "ellipse"): "OPNET exports statistics, not packets",
    ("ns2/wireless", "queue"): "the wireless trace's interface queues are not a wired link queue",
    ("ns2/wireless", "samples"): "the wireless run writes no cwnd/queue monitor file",
    ("ns2/wireless", "flows"): "one TCP connection, traced in two formats (two views of one connection)",
    ("netsim/Packet_Trace*", "samples"): "a NetSim packet trace has no tool-reported series",
    ("netsim/Application_Metrics*", "samples"): "totals per application: the report's tool-reported table",
    ("netsim/Packet_Trace*", "flows"): "the NetSim sample is one FTP connection",
    ("netsim/Packet_Trace*", "queue"): "the NetSim packet trace has no queue columns",
    ("netsim/Packet_Trace*", "rtt"): "the 46-line NetSim sample has no data segment acknowledged within it",
    ("netsim/Packet_Trace*", "ellipse"): "no RTT samples (see rtt)",
    **{(f"netsim/{f}", k): "NetSim application metrics / plot exports carry statistics, not packets"
       for f in ("Application_Metrics*", "plot_*") for k in ("timeseq", "cwnd", "throughput", "rtt", "queue",
                                                               "flows", "ellipse")},
}
#: Analysis modules each kind needs: while one is not written yet, the chart is expected absent.
NEEDS = {"cwnd": "cwnd", "throughput": "throughput", "queue": "queue", "ellipse": "throughput"}
#: Sample folders -> the reader module they need (a sample whose reader is not written yet is skipped).
READER = {"linux": "pcap", "ns2": "ns2", "ns2/wireless": "ns2_wireless", "ns3": "pcap", "netsim": "netsim",
          "opnet": "opnet"}


def _samples() -> list[str]:
    found = [str(p.relative_to(SAMPLES)) for p in sorted(SAMPLES.glob("linux/*.pcap*"))]
    # (the oscillation runs are the lab_tahoe scenario at other windows: no charts of their own to pin)
    found += sorted(str(p.parent.relative_to(SAMPLES)) for p in SAMPLES.glob("ns2/**/run.json")
                    if "oscillation" not in p.parts)
    found += ["ns3/dumbbell", "ns3/dumbbell/dumbbell-0-0.pcap"]
    for sim in ("netsim", "opnet"):
        found += [str(p.relative_to(SAMPLES)) for p in sorted((SAMPLES / sim).glob("*"))
                  if p.is_file() and p.suffix.lower() in (".csv", ".txt", ".gz")]
    return found


def _sample_id(rel: str) -> str:
    return rel.replace("/", "__")


@functools.cache
def _figures_of(rel: str) -> tuple[Any, dict[str, list[Any]]]:
    import tracekit

    reader = READER.get("/".join(rel.split("/")[:2]), READER[rel.split("/")[0]])
    if importlib.util.find_spec(f"tracekit.parsers.{reader}") is None:
        pytest.skip(f"reader tracekit.parsers.{reader} is not written yet")
    analysis = tracekit.analyze(tracekit.read(SAMPLES / rel))
    by_kind: dict[str, list[Any]] = {}
    for f in figures(analysis):
        by_kind.setdefault(f.kind, []).append(f)
    return analysis, by_kind


def _expected_missing(rel: str, kind: str) -> str | None:
    for (pattern, k), reason in MISSING.items():
        if k == kind and fnmatch.fnmatch(rel, pattern):
            return reason
    module = NEEDS.get(kind)
    if module and importlib.util.find_spec(f"tracekit.analysis.{module}") is None:
        return f"tracekit.analysis.{module} is not written yet"
    return None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rel", _samples())
def test_golden_spec(rel: str, kind: str) -> None:
    """Every sample × chart kind matches its golden spec, or is absent for a listed reason."""
    analysis, by_kind = _figures_of(rel)
    figs = [f for f in by_kind.get(kind, []) if f.key != "more-flows"]
    drawn = [f for f in figs if f.present]
    golden = GOLDEN / _sample_id(rel) / f"{kind}.json"
    reason = _expected_missing(rel, kind)
    if reason is not None:
        assert not drawn, (f"{rel}: {kind} is drawn now although listed as missing ({reason}); "
                           "remove it from MISSING and run with TRACEKIT_UPDATE_GOLDEN=1")
        assert figs and all(f.reason for f in figs), f"{rel}: {kind} absent without a reason in the report"
        if UPDATE:
            golden.unlink(missing_ok=True)
        return
    assert drawn, f"{rel}: {kind} not drawn: {[f.reason for f in figs]} (list it in MISSING if that is right)"
    specs = {f.key: charts.spec(f.chart) for f in drawn}
    for spec in specs.values():
        validate(spec)
    got = {k: summarise(v) for k, v in specs.items()}
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert golden.exists(), f"no golden spec {golden}; create it with TRACEKIT_UPDATE_GOLDEN=1"
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert got == want, f"{rel}: {kind} spec changed; if intended, rerun with TRACEKIT_UPDATE_GOLDEN=1"


def test_no_stale_golden_files() -> None:
    """Every golden file belongs to a sample × kind that is still tested."""
    ids = {_sample_id(s) for s in _samples()}
    for p in Path(GOLDEN).glob("*/*.json"):
        assert p.parent.name in ids and p.stem in KINDS, f"stale golden file {p}"
