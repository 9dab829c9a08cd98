"""The sending kernel's own view (``ss`` samples, ``nstat`` counters) put beside a capture.

A capture shows what crossed the wire; the sender's kernel knows what TCP did. :func:`attach`
lines the two up: ss connections are matched to the capture's connections by their 4-tuple
(the ss *local* end is the data sender), the ss times are moved onto the capture's clock
(both are wall-clock stamps of the same machine: ``date``/``ts`` read CLOCK_REALTIME, and
libpcap stamps packets with it too), and the counter totals go into ``meta["kernel"]``.
:func:`cwnd_error` and :func:`retrans_table` say how far tracekit's estimates are from the
kernel (docs/analysis.md, "The kernel's view").
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit.trace import SIM_EPOCH_MAX_NS, Trace, WarningLog, combine, make_trace

#: Registry names of the readers whose traces are the kernel's view, not a capture.
FORMATS = ("ss", "nstat")
#: A poll counts as cwnd-limited when unacked >= this share of cwnd (the issue's definition:
#: the sender had filled its window, so the window, not the application or rwnd, set the pace).
CWND_LIMITED = 0.8
#: The counters the analysis puts beside its own retransmission kinds (docs/analysis.md).
RETRANS_COUNTERS = ("TcpRetransSegs", "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans", "TcpExtTCPTimeouts",
                    "TcpExtTCPLossProbes", "TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery",
                    "TcpExtTCPLostRetransmit", "TcpExtTCPRetransFail", "TcpExtTCPSpuriousRTOs",
                    "TcpExtTCPLossProbeRecovery", "TcpExtTCPDSACKRecv")


def is_kernel(trace: Trace) -> bool:
    """True for a trace read by the ss or nstat reader."""
    return trace.meta.get("format") in FORMATS


def _directions(packets: pl.DataFrame) -> dict[str, int]:
    """``src:sport->dst:dport`` of each TCP direction in the capture -> its flow id."""
    if packets.is_empty():
        return {}
    d = (packets.filter(pl.col("flow").is_not_null() & (pl.col("proto") == "tcp"))
         .group_by("flow", "dir").agg(pl.col("src", "dst", "sport", "dport").first()))
    keys = d.select(pl.concat_str(pl.col("src").cast(pl.String), pl.lit(":"), pl.col("sport").cast(pl.String),
                                  pl.lit("->"), pl.col("dst").cast(pl.String), pl.lit(":"),
                                  pl.col("dport").cast(pl.String)).alias("k"), "flow")
    return dict(zip(keys["k"].to_list(), keys["flow"].to_list(), strict=True))


def _counters(traces: list[Trace], log: WarningLog) -> tuple[dict[str, int], str | None]:
    """The run's counter totals from the nstat traces: one pair file, or single snapshots paired."""
    counted = [t.meta["kernel"] for t in traces if t.meta.get("format") == "nstat"]
    if not counted:
        return {}, None
    # nstat names every counter (zeros too, with -z); netstat -s leaves some out
    pairs = sorted((k for k in counted if k.get("snapshots", 0) >= 2), key=lambda k: k.get("counters_tool") != "nstat")
    if pairs:
        use = pairs[0]["counters"]
        # netstat -s and nstat of the same run (the reno sample has both) agree; others may not
        differ = [n for k in counted[1:] if k is not pairs[0] for n, v in k["counters"].items()
                  if n in RETRANS_COUNTERS and n in use and use[n] != v]
        if differ:
            log.add("W-KERNEL-COUNTERS", f"the counter files disagree (first on {differ[0]}): the first "
                    f"{pairs[0].get('counters_tool')} pair is used", count=len(differ))
        return dict(use), pairs[0].get("counters_tool")
    if len(counted) >= 2:  # nstat.before + nstat.after: the later stamp is "after"
        ordered = sorted(counted, key=lambda k: (k.get("stamps_ns") or [0])[0] or 0)
        a, b = ordered[0]["counters"], ordered[-1]["counters"]
        return {k: v - a.get(k, 0) for k, v in b.items()}, ordered[-1].get("counters_tool")
    return dict(counted[0]["counters"]), counted[0].get("counters_tool")


def combine_run(traces: list[Trace], *, path: str, skipped: list[str] | None = None) -> Trace:
    """The traces of one run as one Trace: :func:`tracekit.trace.combine`, then ss logs / nstat snapshots
    beside a capture matched to it by 4-tuple, on its clock (:func:`attach`)."""
    side = [t for t in traces if is_kernel(t)]
    if not side:
        return combine(traces, path=path, skipped=skipped)
    rest = [t for t in traces if not is_kernel(t)]
    base = (combine(rest, path=path, skipped=skipped) if rest else
            make_trace(None, None, {"format": "dir", "paths": [], "dir": path, "formats": []}))
    return attach(base, side, path=path)


def attach(capture: Trace, kernel: list[Trace], *, path: str | None = None) -> Trace:
    """``capture`` with the kernel's samples (flows matched by 4-tuple, times on its clock) and counters.

    Args:
        capture: The capture (or any packet trace; one without packets keeps the ss flow numbers).
        kernel: Traces from the ``ss`` and ``nstat`` readers.
        path: Name for warnings.

    Returns:
        A validated Trace: the capture's packets, its samples plus the ss rows of connections
        found in it, and ``meta["kernel"]`` (``connections`` with their capture ``flow``,
        ``congestion_control``, ``counters``, ``clock_offset_s``, ``unmatched``).
    """
    log = WarningLog(path or capture.path)
    log.extend(capture.warnings)
    for k in kernel:
        log.extend(k.warnings)
    counters, tool = _counters(kernel, log)
    dirs = _directions(capture.packets)
    cap_t0 = capture.meta.get("t0_ns")
    samples, conns, unmatched, offset = [capture.samples], [], [], None
    for k in (t for t in kernel if t.meta.get("format") == "ss"):
        sm, t0 = k.samples, k.meta.get("t0_ns")
        if dirs and cap_t0 is not None and int(cap_t0) >= SIM_EPOCH_MAX_NS and t0 is not None:
            offset = (int(t0) - int(cap_t0)) / 1e9
            sm = sm.with_columns(pl.col("time") + offset)
        elif dirs:
            log.add("W-KERNEL-CLOCK", "the capture has no wall-clock time: the ss times are not aligned with it")
        mapping: dict[int, int] = {}
        for c in k.meta["kernel"]["connections"]:
            key = f"{c['local']}->{c['peer']}"
            flow = dirs.get(key) if dirs else c["flow"]
            if flow is None:
                unmatched.append(key)
                continue
            mapping[c["flow"]] = flow
            conns.append({**c, "flow": flow})
        sm = sm.filter(pl.col("flow").is_in(list(mapping))).with_columns(
            pl.col("flow").replace_strict(mapping, return_dtype=pl.UInt32))
        samples.append(sm)
    if unmatched:
        log.add("W-KERNEL-UNMATCHED", f"{len(unmatched)} ss connection(s) not in the capture (first {unmatched[0]}): "
                "left out", count=len(unmatched))
    ss_meta: dict[str, Any] = next((t.meta["kernel"] for t in kernel if t.meta.get("format") == "ss"), {})
    info = {"congestion_control": ss_meta.get("congestion_control"), "connections": conns,
            "counters": counters, "counters_tool": tool, "clock_offset_s": offset, "unmatched": unmatched,
            "ss_layout": ss_meta.get("layout"), "ss_stamps": ss_meta.get("stamps")}
    meta = {**capture.meta, "kernel": info,
            "paths": [*capture.meta.get("paths", []), *(p for k in kernel for p in k.meta.get("paths", []))],
            "formats": [*(capture.meta.get("formats") or [capture.meta.get("format")]),
                        *(k.meta.get("format") for k in kernel)]}
    meta.pop("warnings", None)
    return make_trace(capture.packets, pl.concat(samples, how="vertical_relaxed"), meta, log)


def _kernel_rows(samples: pl.DataFrame) -> pl.DataFrame:
    """Per (flow, time) of an ss poll: kernel cwnd (bytes) and the unacked/cwnd ratio."""
    ss = samples.filter(pl.col("source").str.starts_with("ss ") & pl.col("flow").is_not_null())
    cw = ss.filter((pl.col("metric") == "cwnd") & (pl.col("unit") == "bytes")).select(
        "flow", "time", pl.col("value").alias("kernel_bytes"))
    seg = ss.filter((pl.col("metric") == "cwnd") & (pl.col("unit") == "packets")).select(
        "flow", "time", pl.col("value").alias("_cw"))
    un = ss.filter(pl.col("metric") == "unacked").select("flow", "time", pl.col("value").alias("_un"))
    # ss leaves unacked out while it is 0 (iproute2 prints only non-zero tcpi_unacked)
    return (cw.join(seg, on=["flow", "time"], how="left").join(un, on=["flow", "time"], how="left")
            .with_columns(limited=pl.col("_un").fill_null(0.0) >= CWND_LIMITED * pl.col("_cw")))


def cwnd_error(cwnd: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """How far the packet estimate of cwnd is from the kernel's, per data direction.

    At every ss poll where the sender was cwnd-limited (:data:`CWND_LIMITED`), the latest
    estimate at or before the poll is compared with the kernel's cwnd (both in bytes).

    Returns:
        ``flow, dir, kernel_cwnd_compared`` (polls), ``kernel_cwnd_err_p50`` (median of
        ``|estimate − kernel| / kernel``, ratio) and ``kernel_cwnd_bias_p50`` (median of the signed ratio).
    """
    out = {"flow": pl.UInt32(), "dir": pl.Int8(), "kernel_cwnd_compared": pl.Int64(),
           "kernel_cwnd_err_p50": pl.Float64(), "kernel_cwnd_bias_p50": pl.Float64()}
    kern = _kernel_rows(samples)
    if kern.is_empty() or cwnd.is_empty():
        return pl.DataFrame(schema=out)
    src = pl.col("source").cast(pl.String)
    tr = cwnd.filter(src == "trace").select("flow", "dir", "time").unique()
    kern = kern.join(tr, on=["flow", "time"], how="inner").filter("limited").sort("time")
    est = cwnd.filter(src == "estimate").select("flow", "dir", "time", pl.col("cwnd_bytes").alias("_est")).sort("time")
    both = kern.join_asof(est, on="time", by=["flow", "dir"], strategy="backward",
                                                 check_sortedness=False).drop_nulls("_est")
    rel = (pl.col("_est") - pl.col("kernel_bytes")) / pl.col("kernel_bytes")
    return (both.group_by("flow", "dir").agg(pl.len().cast(pl.Int64).alias("kernel_cwnd_compared"),
                                             rel.abs().median().alias("kernel_cwnd_err_p50"),
                                             rel.median().alias("kernel_cwnd_bias_p50"))
            .cast(out).sort("flow", "dir"))  # type: ignore[arg-type]


def with_kernel_columns(flows: pl.DataFrame, cwnd: pl.DataFrame, trace: Trace) -> pl.DataFrame:
    """The flows frame with the kernel's columns appended (only for traces with ss samples).

    ``kernel_cc``, ``kernel_cwnd_compared``, ``kernel_cwnd_err_p50``, ``kernel_cwnd_bias_p50``
    and ``kernel_total_retrans`` (tcpi_total_retrans at the connection's last poll).
    """
    info = trace.meta.get("kernel") or {}
    conns = info.get("connections") or []
    if not conns or flows.is_empty():
        return flows
    err = cwnd_error(cwnd, trace.samples)
    tot = (trace.samples.filter((pl.col("metric") == "total_retrans") & pl.col("source").str.starts_with("ss "))
           .group_by("flow").agg(pl.col("value").max().cast(pl.Int64).alias("kernel_total_retrans")))
    cc = pl.DataFrame({"flow": [c["flow"] for c in conns], "kernel_cc": [c.get("cc") for c in conns],
                       "_local": [c["local"] for c in conns]}, schema={"flow": pl.UInt32, "kernel_cc": pl.String,
                                                                        "_local": pl.String})
    me = pl.concat_str(pl.col("src"), pl.lit(":"), pl.col("sport").cast(pl.String))
    out = flows.join(cc.unique("flow"), on="flow", how="left").with_columns(
        # the kernel's view is the sender's: only the direction leaving the ss local end has it
        _mine=me == pl.col("_local"))
    out = out.join(err, on=["flow", "dir"], how="left").join(tot, on="flow", how="left")
    cols = ["kernel_cc", "kernel_cwnd_compared", "kernel_cwnd_err_p50", "kernel_cwnd_bias_p50", "kernel_total_retrans"]
    mine = pl.col("_mine").fill_null(False)
    return out.with_columns(pl.when(mine).then(pl.col(c)).alias(c) for c in cols).drop("_local", "_mine")


def retrans_table(analysis: Any) -> list[dict[str, Any]]:
    """tracekit's retransmission kinds beside the kernel's counters, for the kernel's own directions.

    Rows ``{"what", "tracekit", "kernel", "counter"}``: the kernel counts every retransmitted
    segment of the namespace (TcpRetransSegs), fast retransmits (TCPFastRetrans), RTO
    expiries (TCPTimeouts) and tail loss probes (TCPLossProbes, RFC 8985 section 7.3: new data
    when there is some, else the last segment re-sent, which TcpRetransSegs then counts; tracekit
    classifies such a segment by what became of it, usually ``spurious``).
    """
    info = analysis.trace.meta.get("kernel") or {}
    counters = info.get("counters") or {}
    locals_ = {c["local"].rpartition(":")[0] for c in info.get("connections") or []}
    rt = analysis.retransmissions
    fl = analysis.flows.select("flow", "dir", "src")
    if locals_:
        fl = fl.filter(pl.col("src").is_in(list(locals_)))
    mine = rt.join(fl.select("flow", "dir"), on=["flow", "dir"], how="semi")
    kinds = dict(mine.group_by("kind").len().iter_rows())

    def k(name: str) -> int | None:
        v = counters.get(name)
        return int(v) if v is not None else None

    return [
        {"what": "retransmitted segments", "tracekit": mine.height, "kernel": k("TcpRetransSegs"),
         "counter": "TcpRetransSegs"},
        {"what": "fast retransmissions", "tracekit": kinds.get("fast", 0), "kernel": k("TcpExtTCPFastRetrans"),
         "counter": "TcpExtTCPFastRetrans"},
        {"what": "timeout (RTO) retransmissions", "tracekit": kinds.get("rto", 0), "kernel": k("TcpExtTCPTimeouts"),
         "counter": "TcpExtTCPTimeouts"},
        {"what": "spurious (DSACKed, or acknowledged before they were sent)", "tracekit": kinds.get("spurious", 0),
         "kernel": None, "counter": None},
        {"what": "tail loss probes", "tracekit": None, "kernel": k("TcpExtTCPLossProbes"),
         "counter": "TcpExtTCPLossProbes"},
        {"what": "in slow start", "tracekit": None, "kernel": k("TcpExtTCPSlowStartRetrans"),
         "counter": "TcpExtTCPSlowStartRetrans"},
        {"what": "SACK recoveries (episodes)", "tracekit": None, "kernel": k("TcpExtTCPSackRecovery"),
         "counter": "TcpExtTCPSackRecovery"},
        {"what": "retransmits that failed", "tracekit": None, "kernel": k("TcpExtTCPRetransFail"),
         "counter": "TcpExtTCPRetransFail"},
    ]


def summary(analysis: Any) -> dict[str, Any] | None:
    """The ``kernel`` part of ``analyze --json`` (None without kernel data)."""
    info = analysis.trace.meta.get("kernel")
    if not info:
        return None
    return {"congestion_control": info.get("congestion_control"), "clock_offset_s": info.get("clock_offset_s"),
            "retransmissions": retrans_table(analysis) if info.get("counters") else [],
            "counters_tool": info.get("counters_tool")}
