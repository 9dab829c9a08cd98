"""Helpers for the report tests: a complete synthetic Analysis, spec walkers, a PNG decoder.

The synthetic analysis has every frame :mod:`tracekit.schema` declares, filled
with a plausible two-flow TCP run (slow start, a loss, fast recovery, a stall,
a queue with drops), so every chart kind can be exercised even where the real
analyses do not produce a frame yet. It is an object with the attributes the
reports read (``trace``, ``packets``, ``flows``, the frames, ``throughput()``),
not a real :class:`tracekit.analysis.Analysis`.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from tracekit import schema

XSS_SCRIPT = "</script><script>document.title='pwned-script';alert(1)</script>"
XSS_IMG = "\"><img src=x onerror=\"document.title='pwned-img';alert(1)\">"


@dataclass
class FakeAnalysis:
    """Duck-typed Analysis with every frame the reports can draw."""

    trace: Any
    packets: pl.DataFrame
    flows: pl.DataFrame
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    tput: pl.DataFrame | None = None

    def __getattr__(self, name: str) -> pl.DataFrame:
        frames = object.__getattribute__(self, "frames")
        if name in frames:
            return frames[name]  # type: ignore[no-any-return]
        raise AttributeError(name)

    def throughput(self, bin_s: float | None = None) -> pl.DataFrame:
        assert self.tput is not None
        return self.tput


def _flow_packets(flow: int, n: int, rng: np.random.Generator, src: str, dst: str, t0: float) -> pl.DataFrame:
    mss = 1448
    t = t0 + np.cumsum(rng.exponential(0.002, n))
    seq = np.arange(n, dtype=np.int64) * mss + 1
    lost = np.arange(n // 3, n // 3 + 4)
    seq_re = seq.copy()
    # retransmit the lost segments a little later (appear as seq going back)
    order = np.concatenate([np.arange(n), lost])
    times = np.concatenate([t, t[lost] + 0.05])
    srt = np.argsort(times, kind="stable")
    d_time, d_seq = times[srt], seq_re[order][srt]
    a_time = d_time + 0.02
    a_ack = np.maximum.accumulate(d_seq + mss)
    sack = [[[int(s), int(s + mss)]] if i % 7 == 0 else [] for i, s in enumerate(d_seq)]
    m = len(d_time)
    data = pl.DataFrame({
        "time": d_time, "event": ["capture"] * m, "flow": [flow] * m, "dir": [0] * m,
        "src": [src] * m, "dst": [dst] * m, "sport": [40000 + flow] * m, "dport": [5001] * m,
        "proto": ["tcp"] * m, "size": [mss + 52] * m, "payload": [mss] * m, "seq": d_seq,
        "ack": [1] * m, "flags": [0x18] * m, "win": [65535] * m,
    })
    acks = pl.DataFrame({
        "time": a_time, "event": ["capture"] * m, "flow": [flow] * m, "dir": [1] * m,
        "src": [dst] * m, "dst": [src] * m, "sport": [5001] * m, "dport": [40000 + flow] * m,
        "proto": ["tcp"] * m, "size": [52] * m, "payload": [0] * m, "seq": [1] * m,
        "ack": a_ack, "flags": [0x10] * m, "win": (60000 + (np.arange(m) % 50) * 100).tolist(),
        "sack": sack,
    }, schema_overrides={"sack": pl.List(pl.Array(pl.Int64, 2))})
    return pl.concat([data, acks], how="diagonal_relaxed")


def synthetic(n: int = 3000, *, src: str = "10.0.0.1", dst: str = "10.0.0.2", path: str = "synthetic.pcap",
              link: str = "r0->r1", warnings: list[dict[str, Any]] | None = None) -> FakeAnalysis:
    """A two-flow run with every analysis frame (deterministic: seeded)."""
    from tracekit.trace import make_trace

    rng = np.random.default_rng(7)
    pk = pl.concat([_flow_packets(0, n, rng, src, dst, 0.0), _flow_packets(1, n // 2, rng, "10.0.1.1", dst, 0.3)])
    pk = pk.sort("time", maintain_order=True).with_row_index("frame", offset=1)
    pk = schema.conform(pk, schema.PACKETS)
    ts = np.linspace(0.0, float(pk["time"].max()), 300)
    smp = pl.DataFrame({"time": ts, "flow": [0] * 300, "node": ["0"] * 300, "metric": ["cwnd"] * 300,
                        "value": 20.0 + (ts * 10) % 40, "unit": ["packets"] * 300, "source": [link] * 300})
    trace = make_trace(pk, smp, {"format": "test", "tool": "synthetic", "paths": [path],
                                 "warnings": warnings or []})
    from tracekit.analysis.flows import flows as flows_of

    flows = flows_of(pk).with_columns(
        rtt_p50_s=pl.lit(0.021), mathis_bps=pl.lit(4.0e6), padhye_bps=pl.lit(3.5e6),
        window_limited_bps=pl.lit(2.5e7), transfer_s=pl.col("duration"))
    frames: dict[str, pl.DataFrame] = {}
    data = pk.filter((pl.col("dir") == 0) & (pl.col("payload") > 0))
    t = data["time"].to_numpy()
    fl = data["flow"].to_numpy()
    # cwnd: slow start to 100 kB, halve at the loss, grow linearly; a traced and an estimated series
    cw_rows = []
    for f in (0, 1):
        tf = t[fl == f]
        cw = np.minimum(14480 * 2 ** (tf - tf[0]) * 8, 100_000.0)
        cut = len(tf) // 3
        cw[cut:] = 50_000 + (tf[cut:] - tf[cut]) * 20_000
        phase = np.where(np.arange(len(tf)) < cut, "slow_start",
                         np.where(np.arange(len(tf)) < cut + 20, "recovery", "congestion_avoidance"))
        ss = np.where(np.arange(len(tf)) < cut, 4294967295.0, 50_000.0)
        for src_name, scale in (("trace", 1.0), ("estimate", 0.93)):
            cw_rows.append(pl.DataFrame({"flow": f, "dir": 0, "time": tf, "cwnd_bytes": cw * scale,
                                         "ssthresh_bytes": ss, "source": src_name, "phase": phase}))
    frames["cwnd"] = schema.conform(pl.concat(cw_rows), schema.CWND)
    frames["flight"] = schema.conform(data.select(
        "flow", "dir", "frame", "time",
        flight_bytes=(pl.col("seq") - pl.col("seq").min().over("flow")) % 60_000 + 1448,
        flight_sack_bytes=(pl.col("seq") - pl.col("seq").min().over("flow")) % 50_000), schema.FLIGHT)
    frames["rtt"] = schema.conform(data.gather_every(3).select(
        "flow", "dir", "frame", "time",
        rtt_s=0.02 + (pl.col("time") * 7).sin().abs() * 0.01,
        method=pl.when(pl.col("frame") % 2 == 0).then(pl.lit("seq")).otherwise(pl.lit("ts"))), schema.RTT)
    retx = data.filter(pl.col("seq") < pl.col("seq").cum_max().shift(1).over("flow").fill_null(0))
    frames["retransmissions"] = schema.conform(retx.select(
        "flow", "dir", "frame", "time", "seq", len=pl.col("payload").cast(pl.Int64), kind=pl.lit("fast")),
        schema.RETRANSMISSIONS)
    mid = float(t[len(t) // 2])
    frames["stalls"] = schema.conform(pl.DataFrame({
        "flow": [0], "dir": [0], "start": [mid], "end": [mid + 0.4], "duration": [0.4], "cause": ["rto"]}),
        schema.STALLS)
    qt = np.linspace(0.0, float(t.max()), 800)
    frames["queue"] = schema.conform(pl.DataFrame({
        "link": [link] * 800 + ["r1->d0"] * 800, "time": np.concatenate([qt, qt]),
        "packets": np.concatenate([(np.sin(qt * 3) * 10 + 10).astype(int), (np.cos(qt) * 3 + 3).astype(int)]),
        "bytes": np.concatenate([(np.sin(qt * 3) * 15000 + 15000).astype(int), np.zeros(800, int)]),
        "drops": np.concatenate([(qt // 1).astype(int), np.zeros(800, int)]),
    }), schema.QUEUE)
    frames["fairness"] = schema.conform(pl.DataFrame({"time": [None], "flows": [2], "jain": [0.9]}),
                                        schema.FAIRNESS)
    bins = data.with_columns(b=(pl.col("time") / 0.1).floor()).group_by("flow", "dir", "b").agg(
        throughput_bps=(pl.col("size").cast(pl.Int64).sum() * 8 / 0.1),
        goodput_bps=(pl.col("payload").cast(pl.Int64).sum() * 8 / 0.1 * 0.95),
        packets_per_s=pl.len() / 0.1).sort("flow", "b")
    tput = schema.conform(bins.with_columns(time=pl.col("b") * 0.1, bin_s=pl.lit(0.1)), schema.THROUGHPUT)
    return FakeAnalysis(trace, pk, flows, frames, tput)


# ---- spec walking ---------------------------------------------------------------------------------


def walk(obj: Any, path: tuple[Any, ...] = ()) -> Any:
    """Yield (path, key, value) for every dict entry in a nested spec."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path, k, v
            yield from walk(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from walk(v, (*path, i))


def validate(spec: dict[str, Any]) -> None:
    """Check a spec against the Vega-Lite schema (datasets cut to 3 rows: validating every row is slow)."""
    from altair.vegalite.v6.schema.core import Root

    small = dict(spec)
    if isinstance(small.get("datasets"), dict):
        small["datasets"] = {k: v[:3] for k, v in small["datasets"].items()}
    Root.validate(small)


def data_rows(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Every inline dataset of a spec (top-level ``datasets`` and inline ``values``)."""
    out = [v for v in spec.get("datasets", {}).values() if isinstance(v, list)]
    for path, k, v in walk(spec):
        if k == "values" and isinstance(v, list) and "datasets" not in path:
            out.append(v)
    return out


def summarise(spec: dict[str, Any]) -> dict[str, Any]:
    """A golden-friendly copy of a spec: each dataset replaced by its size, fields and ranges.

    Whole datasets would make golden files of megabytes and diffs nobody reads; the
    summary (rows, field names, min/max/mean per number rounded to 4 significant digits,
    distinct strings) still catches a changed series, a lost layer or a unit mix-up.
    """

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        fields = sorted({k for r in rows for k in r})
        out: dict[str, Any] = {"rows": len(rows), "fields": {}}
        for f in fields:
            vals = [r.get(f) for r in rows]
            nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if nums and len(nums) == len([v for v in vals if v is not None]):
                out["fields"][f] = {"min": _sig(min(nums)), "max": _sig(max(nums)),
                                    "mean": _sig(sum(nums) / len(nums)), "nulls": vals.count(None)}
            else:
                distinct = sorted({str(v) for v in vals if v is not None})
                out["fields"][f] = {"distinct": distinct[:12], "n_distinct": len(distinct), "nulls": vals.count(None)}
        return out

    def conv(obj: Any, key: str | None = None) -> Any:
        if isinstance(obj, dict):
            if key == "datasets":
                return {"#" + str(i): summary(v) for i, v in enumerate(obj.values())}
            return {k: conv(v, k) for k, v in obj.items() if k != "$schema"}
        if isinstance(obj, list):
            if key == "values" and all(isinstance(r, dict) for r in obj):
                return summary(obj)
            return [conv(v) for v in obj]
        if isinstance(obj, str) and obj.startswith("data-") and key == "name":
            return "data-#"  # altair names datasets by a hash of their content
        return obj

    return conv(spec)  # type: ignore[no-any-return]


def _sig(v: float) -> float | int:
    if isinstance(v, int) and abs(v) < 10_000:
        return v
    return float(f"{v:.4g}")


# ---- PNG ------------------------------------------------------------------------------------------


def png_pixels(path: Path) -> tuple[int, int, set[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG with zlib/struct; return (width, height, distinct pixel values)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    width = height = bpp = 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"unsupported PNG (depth {depth}, colour type {ctype})"
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = np.zeros(stride, dtype=np.uint8)
    rows = []
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        cur = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=y * (stride + 1) + 1).copy()
        if ftype == 1:  # Sub: running sum per channel, modulo 256
            cur = np.cumsum(cur.reshape(width, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif ftype == 2:  # Up
            cur = cur + prev
        elif ftype in (3, 4):  # Average / Paeth: sequential, done on Python ints
            out = bytearray(stride)
            c, p = cur.tolist(), prev.tolist()
            for i in range(stride):
                a = out[i - bpp] if i >= bpp else 0
                b = p[i]
                if ftype == 3:
                    out[i] = (c[i] + ((a + b) >> 1)) & 0xFF
                else:
                    cc = p[i - bpp] if i >= bpp else 0
                    pa, pb, pc = abs(b - cc), abs(a - cc), abs(a + b - 2 * cc)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else cc)
                    out[i] = (c[i] + pred) & 0xFF
            cur = np.frombuffer(bytes(out), dtype=np.uint8)
        rows.append(cur)
        prev = cur
    img = np.stack(rows).reshape(height, width, bpp)
    distinct = {bytes(px) for px in np.unique(img.reshape(-1, bpp), axis=0)}
    return width, height, distinct
