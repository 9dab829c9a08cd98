"""The flows records' inputs, one value per direction, put into the records by position.

The compiled core's per-direction outputs come back as arrays: ``dir_stats`` (the rows),
``flow_stats`` and ``flow_summary`` (one entry per direction with data, by key
``2·flow + dir``), and ``flow_dirs`` (``src/state/flowdirs.rs``: a simulator's received bytes
and drops, the duplicate ACKs and the last smoothed RTT, aligned to the rows). Each is turned
into per-direction lists once and copied into the records (:mod:`tracekit._flowrows`)
by index: no join. The core's stand-ins for missing values (``MISSING``, NaN) become ``None``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from tracekit import _core, _flowrows
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import at

#: The dir_stats columns of the flows records (``_hs_rtt``: ``handshake_rtt_s``).
BASE = ("flow", "dir", "src", "dst", "sport", "dport", "start", "end", "packets", "data_packets", "data_bytes",
        "wire_bytes", "unique_bytes", "mss", "wscale", "_smss", "window_scaling", "_syn_t")

#: The retransmission kinds' codes in the core's ``flow_summary`` (``src/state/flowstats/summary.rs``).
_KIND_CODES = {"fast": 1, "rto": 2, "spurious": 3}

Cols = dict[str, list[Any]]


def ints(a: np.ndarray) -> list[int | None]:
    """An integer array's values, ``MISSING`` as None."""
    return [None if v == MISSING else v for v in a.tolist()]


def floats(a: np.ndarray) -> list[float | None]:
    """A float array's values, NaN as None."""
    return [None if v != v else v for v in a.tolist()]


def dtype(a: np.ndarray) -> pl.DataType:
    """The polars type of a numpy array's values."""
    return pl.Series(a[:0]).dtype


def base(dirs: pl.DataFrame) -> tuple[list[_flowrows.Row], dict[str, pl.DataType]]:
    """The per-direction accumulator's rows with payload as records, and their columns' types.

    (``_smss``, the largest payload, ``_syn_t``, the connection's first SYN, and
    ``handshake_rtt_s``: :func:`tracekit.analysis.rtt.handshake`.)
    """
    cols = {c: dirs[c].to_list() for c in BASE}
    cols["handshake_rtt_s"] = dirs["hs_rtt"].to_list()
    keep = [i for i, b in enumerate(cols["data_bytes"]) if b is not None and b > 0]
    rows = [{c: v[i] for c, v in cols.items()} for i in keep]
    schema = {c: dirs.schema[c] for c in BASE}
    schema["handshake_rtt_s"] = dirs.schema["hs_rtt"]
    return rows, schema


def keys(rows: list[_flowrows.Row]) -> tuple[np.ndarray, np.ndarray]:
    """The records' ``flow`` (uint32) and ``dir`` (int8, -1 for none), as the core takes them."""
    return (np.array([r["flow"] for r in rows], dtype=np.uint32),
            np.array([-1 if r["dir"] is None else r["dir"] for r in rows], dtype=np.int8))


def put(rows: list[_flowrows.Row], key: np.ndarray, cols: Cols) -> None:
    """Copy ``cols`` (one value per entry of ``key``, ``2·flow + dir``) into the records by position.

    A record whose direction is not in ``key`` gets None for each column.
    """
    pos = {k: i for i, k in enumerate(key.tolist())}
    names = list(cols)
    for r in rows:
        i = None if r["dir"] is None else pos.get((r["flow"] << 1) | r["dir"])
        for c in names:
            r[c] = None if i is None else cols[c][i]


def put_aligned(rows: list[_flowrows.Row], cols: Cols) -> None:
    """Copy ``cols`` (one value per record, in their order) into the records."""
    for c, v in cols.items():
        for r, x in zip(rows, v, strict=True):
            r[c] = x


def _keys(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """A frame's ``flow`` (uint32) and ``dir`` (int8) columns, as the core's ``flow_summary`` takes them."""
    return df["flow"].cast(pl.UInt32).to_numpy(), df["dir"].cast(pl.Int8).to_numpy()


def summary(st: pl.DataFrame, rs: pl.DataFrame, rt: pl.DataFrame, fl: pl.DataFrame, sl: pl.DataFrame
            ) -> tuple[np.ndarray, Cols, dict[str, pl.DataType]]:
    """Per direction the RTT, retransmission, flight and stall columns, in one core call.

    The per-direction accumulators are ``src/state/flowstats/summary.rs``: RTT samples above
    0 s, the ``seq`` ones where there are any (else ``ts``: ``rtt_method``), their min, mean,
    median and 95th percentile (polars' linear interpolation); retransmissions (only the bytes
    below the highest byte sent before count as re-sent, Wireshark's rule) by kind; the max and
    mean bytes in flight; the stalls' count and time.

    Returns:
        The directions' keys (``2·flow + dir``), the columns (one value per key) and their types.
    """
    # the part of each retransmission that had been sent before: up to the highest end sent
    # (``nxt``) and the data end of the segment
    over = (pl.min_horizontal(at(st, rt["_i"], "dend"), at(st, rt["_i"], "nxt")) - rt["seq"]).clip(lower_bound=0)
    rt_bytes = rt.select(b=over.fill_null(pl.col("len")).cast(pl.Int64))["b"].to_numpy()
    kind = rt["kind"].replace_strict(_KIND_CODES, default=0, return_dtype=pl.UInt8).to_numpy()
    d = _core.flow_summary(
        _keys(rs), rs["rtt_s"].cast(pl.Float64).fill_null(np.nan).to_numpy(), (rs["method"] == "seq").to_numpy(),
        _keys(rt), rt_bytes, kind,
        _keys(fl), fl["flight_bytes"].cast(pl.Int64).fill_null(MISSING).to_numpy(),
        _keys(sl), sl["duration"].cast(pl.Float64).to_numpy())
    # the core's stand-ins as None: no RTT sample above 0, no flight value
    n, seq, fmax = d["rtt_n"].tolist(), d["rtt_seq"].tolist(), d["flight_max"].tolist()
    has_rtt, has_flight = [k > 0 for k in n], [v != MISSING for v in fmax]

    def when(ok: list[bool], v: list[Any]) -> list[Any]:
        return [x if o else None for o, x in zip(ok, v, strict=True)]

    src = {f"rtt_{q}_s": d[f"rtt_{q}"] for q in ("min", "mean", "p50", "p95")}
    src.update(rtt_samples=d["rtt_n"], retrans_packets=d["retrans"], retrans_bytes=d["retrans_bytes"],
               retrans_fast=d["fast"], retrans_rto=d["rto"], retrans_spurious=d["spurious"],
               flight_max_bytes=d["flight_max"], flight_mean_bytes=d["flight_mean"], stall_count=d["stalls"],
               stall_time_s=d["stall_time"])
    cols: Cols = {c: a.tolist() for c, a in src.items()}
    for c in ("rtt_min_s", "rtt_mean_s", "rtt_p50_s", "rtt_p95_s", "rtt_samples"):
        cols[c] = when(has_rtt, cols[c])
    cols["rtt_method"] = when(has_rtt, ["seq" if s else "ts" for s in seq])
    cols["flight_max_bytes"], cols["flight_mean_bytes"] = when(has_flight, fmax), when(has_flight,
                                                                                        cols["flight_mean_bytes"])
    types = {c: dtype(a) for c, a in src.items()}
    types["rtt_method"] = pl.String()
    return d["key"], cols, types


def core_values(rows: list[_flowrows.Row], allp: pl.DataFrame, st: pl.DataFrame, est: pl.DataFrame, *,
                simulator: bool) -> Cols:
    """``_rx_bytes``, ``_rx_t``, ``drops`` (simulators only), ``dup_acks``, ``srtt`` and ``rttvar`` of each record.

    One core call (``_core.flow_dirs``, ``src/state/flowdirs.rs``), its arrays aligned to ``rows``.
    Receive events count where the node is the packet's destination: ns-2 writes an ``r`` line
    on every hop, with ``node`` the link's ``to`` node, and addresses as ``node.port``
    (docs/formats-ns2.md), so ``node`` equals ``dst`` only on the last hop.
    """
    ev = _events(allp) if simulator else _NO_EVENTS
    d = _core.flow_dirs(*keys(rows), ev, _dups(st), (
        est["flow"].cast(pl.UInt32).to_numpy(), est["dir"].cast(pl.Int8).to_numpy(),
        est["srtt"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        est["rttvar"].cast(pl.Float64).fill_null(np.nan).to_numpy()))
    out: Cols = {"_rx_bytes": ints(d["rx_bytes"]), "_rx_t": floats(d["rx_t"]), "dup_acks": d["dup_acks"].tolist(),
                 "srtt": floats(d["srtt"]), "rttvar": floats(d["rttvar"])}
    if simulator:
        out["drops"] = d["drops"].tolist()
    return out


_NO_EVENTS = (np.zeros(0, np.uint32), np.zeros(0, np.int8), np.zeros(0, np.float64), np.zeros(0, np.int64),
              np.zeros(0, np.int64), np.zeros(0, np.uint8))
_NO_EST = (np.zeros(0, np.uint32), np.zeros(0, np.int8), np.zeros(0, np.float64), np.zeros(0, np.float64))


def _events(allp: pl.DataFrame) -> tuple[np.ndarray, ...]:
    """A simulator trace's events as ``flow_dirs`` takes them: 1 a receive event at the destination, 2 a drop."""
    known = pl.col("flow").is_not_null() & pl.col("dir").is_not_null()
    at_dst = (pl.col("event") == "recv") & (pl.col("node") == pl.col("dst").cast(pl.String)).fill_null(False)
    e = allp.select(
        flow=pl.col("flow").cast(pl.UInt32).fill_null(0),
        dir=pl.when(known).then(pl.col("dir").cast(pl.Int8)).otherwise(-1).cast(pl.Int8),
        time=pl.col("time").cast(pl.Float64).fill_null(np.nan),
        seq=pl.col("seq").cast(pl.Int64).fill_null(MISSING), payload=pl.col("payload").cast(pl.Int64).fill_null(0),
        ev=pl.when(at_dst).then(1).when(pl.col("event") == "drop").then(2).otherwise(0).cast(pl.UInt8))
    return tuple(e[c].to_numpy() for c in e.columns)


def _dups(st: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The state's ``flow``, ``dir`` and ``dup`` (a duplicate ACK, Wireshark's rule) columns."""
    return (st["flow"].cast(pl.UInt32).to_numpy(), st["dir"].cast(pl.Int8).to_numpy(),
            st["dup"].fill_null(False).to_numpy())


def dup_acks(st: pl.DataFrame) -> pl.DataFrame:
    """``flow, dir, dup_acks``: the duplicate ACKs against each data direction that has any (``_core.flow_dirs``)."""
    flow, d, dup = _dups(st)
    k = np.unique(flow[dup].astype(np.int64) * 2 + (1 - d[dup].astype(np.int64)))
    n = _core.flow_dirs((k >> 1).astype(np.uint32), (k & 1).astype(np.int8), _NO_EVENTS, (flow, d, dup),
                        _NO_EST)["dup_acks"]
    return pl.DataFrame({"flow": pl.Series(k >> 1, dtype=pl.UInt32), "dir": pl.Series(k & 1, dtype=pl.Int8),
                         "dup_acks": pl.Series(n, dtype=pl.UInt32)})
