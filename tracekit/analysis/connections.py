"""One row per connection direction when a trace combines several captures: ``flows`` and ``views``.

A run directory holds the same connection several times: ns-3 writes one pcap per device, and
its ASCII trace records the same packets again. Each file's flows get their own ids
(:func:`tracekit.trace.combine`), so before this step one connection seen in three pcaps and the
ASCII trace was four flows, and the fairness index, compare, sweep and grading counted it four
times. Here the rows of each capture (the *views*) are matched into connections and one view is
chosen to represent each:

* **Identity.** Two views are the same connection when they come from different files, have the
  same two endpoints (address and port, either order), the same initiator ISN where both saw the
  SYN (seq of the SYN without ACK), and overlapping time spans. Simulators (ns-2, ns-3, NetSim)
  have no NAT, so a connection keeps its 4-tuple on every device; ns-3 always starts at ISN 0,
  which is why the time overlap is needed for a 4-tuple that is reused later in the run. Captures
  on both sides of a NAT show different 4-tuples and stay separate connections.
* **Order along the path.** The views of a connection are ordered by when they saw the data
  direction's first packet (rounded to 10 µs, the ns-3 ASCII trace's precision); ties go to the
  view whose handshake says ``sender`` (:func:`tracekit.analysis.vantage.detect`), then to the one
  that saw more data segments (an enqueue trace sees packets its queue then dropped). The first
  is the **nearest the sender**; the last the **nearest the receiver**.
* **Columns.** The connection's row is the sender-nearest view's (RTT, retransmissions,
  flight, cwnd: what the sender did), except ``goodput_bps``, taken from the receiver-nearest
  view when that is another capture (what was delivered: at a bottleneck's far side, bytes the
  bottleneck dropped are not counted), over the time from the sender-nearest view's start to
  the receiver side's last delivery (a capture behind the bottleneck does not see SYNs the
  bottleneck dropped, so its own start can be seconds late); views that saw the first packet at the same moment (the
  same run traced twice) give no "nearer the receiver" view. Every row names ``capture`` (file name) and keeps its
  ``vantage_point``; ``goodput_capture`` names the file the goodput came from.

``views`` holds every capture's rows with ``connection``, ``capture``, ``position`` (0 = nearest
the sender) and ``used_for`` (``all``, ``sender-side``, ``goodput`` or null).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit import _flowrows
from tracekit.schema import ACK, SYN

KEYS = ["flow", "dir"]
#: Views that saw the first data-direction packet within this many seconds are "at the same place".
TIE_S = 1e-5
_RANK = {"sender": 0, "middle": 1, "receiver": 2}


def _captures(flows: pl.DataFrame, meta: dict[str, Any]) -> pl.Series:
    """The file each flow row came from (``meta["captures"]`` of a run directory, else the file read)."""
    caps = meta.get("captures") or []
    if caps:
        expr = pl.lit(None, pl.String)
        for c in caps:
            expr = pl.when(pl.col("flow").is_between(c["first_flow"], c["last_flow"])).then(
                pl.lit(c["file"])).otherwise(expr)
        return flows.select(expr.alias("capture")).to_series()
    name = _flowrows.capture_name(meta.get("paths") or [])
    return pl.Series("capture", [name] * flows.height, dtype=pl.String)


def _per_flow(flows: pl.DataFrame, pk: pl.DataFrame) -> pl.DataFrame:
    """Per flow: endpoint key, initiator ISN, data direction's first time, span, rank and segments."""
    data = (flows.sort(["flow", "unique_bytes", "dir"], descending=[False, True, False])
            .group_by("flow", maintain_order=True).first())
    a = pl.format("{}:{}", pl.col("src"), pl.col("sport"))
    b = pl.format("{}:{}", pl.col("dst"), pl.col("dport"))
    key = pl.when(a <= b).then(pl.concat_str(a, pl.lit("|"), b)).otherwise(pl.concat_str(b, pl.lit("|"), a))
    span = flows.group_by("flow").agg(pl.col("start").min().alias("_t0"), pl.col("end").max().alias("_t1"))
    fl = pl.col("flags").fill_null(0)
    isn = (pk.filter(pl.col("flow").is_not_null() & (pl.col("dir") == 0) & ((fl & (SYN | ACK)) == SYN))
           .group_by("flow").agg(pl.col("seq").first().alias("_isn")))
    rank = pl.col("vantage_point").replace_strict(_RANK, default=1, return_dtype=pl.Int8)
    return (data.select("flow", "capture", _key=key, _dkey=a, _first=(pl.col("start") / TIE_S).round(0),
                        _rank=rank, _segs=pl.col("data_packets").fill_null(0))
            .join(span, on="flow", how="left").join(isn, on="flow", how="left"))


def _match(info: pl.DataFrame) -> dict[int, int]:
    """Assign a connection id to each flow (see the module docstring: identity)."""
    conns: list[dict[str, Any]] = []
    by_key: dict[str, list[int]] = {}
    out: dict[int, int] = {}
    for r in info.sort("_t0", "flow").iter_rows(named=True):
        hit = None
        for ci in by_key.get(r["_key"], []):
            c = conns[ci]
            if (r["capture"] not in c["caps"] and (r["_isn"] is None or c["isn"] is None or r["_isn"] == c["isn"])
                    and r["_t0"] <= c["t1"] and r["_t1"] >= c["t0"]):
                hit = ci
                break
        if hit is None:
            hit = len(conns)
            conns.append({"caps": set(), "isn": None, "t0": r["_t0"], "t1": r["_t1"]})
            by_key.setdefault(r["_key"], []).append(hit)
        c = conns[hit]
        c["caps"].add(r["capture"])
        c["isn"] = c["isn"] if c["isn"] is not None else r["_isn"]
        c["t0"], c["t1"] = min(c["t0"], r["_t0"]), max(c["t1"], r["_t1"])
        out[int(r["flow"])] = hit
    return out


def one_per_connection(flows: pl.DataFrame, pk: pl.DataFrame, meta: dict[str, Any]
                       ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The flows frame with one row per connection direction, and every capture's rows.

    Args:
        flows: :func:`tracekit.analysis.flows.flows` output (one row per flow id and direction).
        pk: The packets at the vantage point (for the SYN's ISN).
        meta: The trace's meta (``captures`` of a run directory, else ``paths``).

    Returns:
        ``(flows, views)``: ``flows`` gains ``capture``, ``connection``, ``views`` and
        ``goodput_capture``; ``views`` is every row with ``connection``, ``capture``,
        ``position`` and ``used_for``.
    """
    flows = flows.with_columns(_captures(flows, meta))
    cols = flows.columns + [c for c in ("connection", "views", "goodput_capture") if c not in flows.columns]
    if flows.is_empty() or flows["capture"].n_unique() < 2:
        labels = [_flowrows.one_view(f, c) for f, c in zip(flows["flow"].to_list(), flows["capture"].to_list(),
                                                            strict=True)]
        out = flows.with_columns(
            *(pl.Series(name, [v[i] for v in labels], dtype=t) for i, (name, t) in
              enumerate((("connection", pl.Int64), ("views", pl.Int64), ("goodput_capture", pl.String))))).select(cols)
        return out, out.with_columns(position=pl.lit(0, pl.Int64), used_for=pl.lit("all"))
    info = _per_flow(flows, pk)
    ids = _match(info)
    info = info.with_columns(connection=pl.col("flow").replace_strict(ids, return_dtype=pl.Int64))
    first = pl.col("_first").min().over("connection")
    info = info.sort(["connection", "_first", "_rank", "_segs", "flow"],
                     descending=[False, False, False, True, False]).with_columns(
        position=pl.int_range(pl.len(), dtype=pl.Int64).over("connection"),
        views=pl.len().over("connection").cast(pl.Int64), _c0=first, _later=pl.col("_first") > first)
    # dense connection ids in order of first appearance
    first_seen = (
        info.group_by("connection").agg(pl.col("_c0").first(), pl.col("flow").min().alias("_f")).sort("_c0", "_f")
    )
    dense = dict(zip(first_seen["connection"].to_list(), range(first_seen.height), strict=False))
    info = info.with_columns(connection=pl.col("connection").replace_strict(dense, return_dtype=pl.Int64))
    flows = flows.drop([c for c in ("connection", "views", "goodput_capture") if c in flows.columns])
    views = flows.join(info.select("flow", "connection", "position", "views", "_dkey", "_later"), on="flow", how="left")
    here = pl.format("{}:{}", pl.col("src"), pl.col("sport"))
    rx = views.filter((pl.col("views") > 1) & (pl.col("position") == pl.col("views") - 1) & (here == pl.col("_dkey"))
                      & pl.col("_later"))
    # the receiver-side row knows what was delivered and when the last byte got there (its
    # goodput's span: start there + delivered × 8 ÷ goodput); the connection opened when the sender
    # sent its first packet, which a capture behind a loss may never have seen (SYNs dropped at the
    # bottleneck), so the span starts at the sender-side row's start
    got_t = pl.col("start") + pl.col("delivered_bytes") * 8 / pl.col("goodput_bps")
    rx = rx.select("connection", "src", "sport", _g=pl.col("delivered_bytes") * 8, _got_t=got_t,
                   goodput_capture=pl.col("capture"), _gflow=pl.col("flow"), _gdir=pl.col("dir"))
    rep = (views.filter(pl.col("position") == 0)
           .join(rx, on=["connection", "src", "sport"], how="left", maintain_order="left")
           .with_columns(_g=pl.when(pl.col("_got_t") > pl.col("start"))
                         .then(pl.col("_g") / (pl.col("_got_t") - pl.col("start")))))
    used = pl.concat(
        [
            rep.select(
                KEYS, used_for=pl.when(pl.col("_gflow").is_null()).then(pl.lit("all")).otherwise(pl.lit("sender-side"))
            ),
            rx.select(flow=pl.col("_gflow"), dir=pl.col("_gdir"), used_for=pl.lit("goodput")),
        ]
    )
    views = (views.join(used, on=KEYS, how="left").with_columns(goodput_capture=pl.col("capture"))
             .select(*cols, "position", "used_for"))
    out = (rep.with_columns(goodput_bps=pl.when(pl.col("_gflow").is_not_null()).then(pl.col("_g"))
                            .otherwise(pl.col("goodput_bps")),
                            goodput_capture=pl.coalesce("goodput_capture", "capture"))
           .drop("_g", "_got_t", "_gflow", "_gdir", "_dkey", "_later", "position").sort(KEYS))
    out = out.select([c for c in cols if c in out.columns])
    return out, views.sort("connection", "position", "dir")


def goodput_rows(views: pl.DataFrame) -> pl.DataFrame:
    """``flow, dir`` of the rows whose goodput the flows frame reports (one per connection direction)."""
    if views.is_empty() or "used_for" not in views.columns:
        return views.select(KEYS) if set(KEYS) <= set(views.columns) else pl.DataFrame(
            schema={"flow": pl.UInt32, "dir": pl.Int8})
    return views.filter(pl.col("used_for").is_in(["all", "goodput"])).select(KEYS)
