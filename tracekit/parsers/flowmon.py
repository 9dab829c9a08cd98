"""ns-3 FlowMonitor XML (``FlowMonitor::SerializeToXmlFile``): per-flow statistics as samples.

Layout (``src/flow-monitor/model/flow-monitor.cc``, ``ipv4-flow-classifier.cc``)::

    <FlowMonitor>
      <FlowStats> <Flow flowId=".." timeFirstTxPacket="+5e+08ns" ... txBytes=".." ...>
                    <packetsDropped reasonCode="3" number="12"/> <bytesDropped reasonCode="3" bytes=".."/>
                    [<delayHistogram ...> ...]  </Flow> ... </FlowStats>
      <Ipv4FlowClassifier> <Flow flowId=".." sourceAddress=".." ... protocol="6" .../> </Ipv4FlowClassifier>
      <Ipv6FlowClassifier> ... </Ipv6FlowClassifier>
      [<FlowProbes> <FlowProbe index="0"> <FlowStats flowId=".." packets=".." bytes=".." .../> ...]
    </FlowMonitor>

FlowMonitor flows are one-way (a TCP connection is two flows). The file is read with a
streaming ``xml.etree`` parser after refusing any DOCTYPE/ENTITY declaration in the
raw text (FlowMonitor never writes one; entity expansion is the "billion laughs" bomb).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import polars as pl

from tracekit._source import Source, load
from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._text import decode_text, head_text
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "flowmon"
DESCRIPTION = "ns-3 FlowMonitor XML (SerializeToXmlFile): per-flow bytes, packets, delay, jitter, drops"
DETECT = "XML whose root element is <FlowMonitor> (after an optional <?xml ...?> declaration and comments)"

_SNIFF = re.compile(r"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<FlowMonitor[\s>/]", re.S)

# Time attributes: "+20067198.0ns" (int64x64, <= ns-3.31), "+2.00671e+07ns" (double, 3.32-3.34),
# "+2e+09ns" (As(Time::NS), 3.35+); other units are possible when a user changes the resolution.
_TIME = r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(fs|ps|ns|us|ms|s|min|h|d|y)$"
# Divisors to seconds (dividing by a power of ten keeps 5.4065e+08 ns at 0.54065 s exactly).
_UNIT_DIV = {"fs": 1e15, "ps": 1e12, "ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0,
             "min": 1 / 60, "h": 1 / 3600, "d": 1 / 86400, "y": 1 / (365 * 86400)}
_TIME_ATTRS = ("timeFirstTxPacket", "timeFirstRxPacket", "timeLastTxPacket", "timeLastRxPacket",
               "delaySum", "jitterSum", "lastDelay", "maxDelay", "minDelay")
_COUNT_ATTRS = ("txBytes", "rxBytes", "txPackets", "rxPackets", "lostPackets", "timesForwarded")

#: attribute -> (metric, unit) of the per-flow samples.
SAMPLE_METRICS: dict[str, tuple[str, str]] = {
    "txBytes": ("tx_bytes", "bytes"),
    "rxBytes": ("rx_bytes", "bytes"),
    "txPackets": ("tx_packets", "packets"),
    "rxPackets": ("rx_packets", "packets"),
    "lostPackets": ("lost_packets", "packets"),
    "timesForwarded": ("times_forwarded", "count"),
    "delaySum": ("delay_sum", "s"),
    "jitterSum": ("jitter_sum", "s"),
    "lastDelay": ("last_delay", "s"),
    "maxDelay": ("max_delay", "s"),
    "minDelay": ("min_delay", "s"),
    "meanDelay": ("mean_delay", "s"),
    "meanJitter": ("mean_jitter", "s"),
    "throughput": ("throughput", "bps"),
}

# Drop reasons of Ipv4FlowProbe / Ipv6FlowProbe (ns-3.36 numbering; releases before QUEUE_DISC
# existed number the later reasons one lower).
_V4_REASONS = ("NO_ROUTE", "TTL_EXPIRE", "BAD_CHECKSUM", "QUEUE", "QUEUE_DISC", "INTERFACE_DOWN",
               "ROUTE_ERROR", "FRAGMENT_TIMEOUT", "INVALID_REASON")
_V6_REASONS = ("NO_ROUTE", "TTL_EXPIRE", "BAD_CHECKSUM", "QUEUE", "QUEUE_DISC", "INTERFACE_DOWN",
               "ROUTE_ERROR", "UNKNOWN_PROTOCOL", "UNKNOWN_OPTION", "MALFORMED_HEADER", "FRAGMENT_TIMEOUT",
               "INVALID_REASON")
_PROTOS = {"6": "tcp", "17": "udp", "1": "icmp", "58": "icmpv6"}


def sniff(head: bytes) -> bool:
    """True when the document's root element is ``<FlowMonitor>``."""
    return _SNIFF.match(head_text(head)[:4096]) is not None


def _refuse_declarations(text: str, path: str) -> None:
    """Refuse DTDs and entity declarations before any parser sees them."""
    for decl in ("<!DOCTYPE", "<!ENTITY"):
        at = text.find(decl)
        if at >= 0:
            raise CorruptTraceError(
                f"the XML holds a {decl[2:]} declaration, which tracekit refuses", path=path,
                offset=len(text[:at].encode("utf-8")),
                hint="ns-3 FlowMonitor never writes one; entity declarations can expand to gigabytes "
                     "('billion laughs'). Remove it if the file is genuine")


class _Collector:
    """Gathers flows, classifier entries and probe stats from streamed XML events."""

    def __init__(self) -> None:
        self.flows: list[dict[str, str]] = []
        self.drops: list[dict[str, Any]] = []
        self.classes: list[dict[str, str]] = []
        self.probes: list[dict[str, Any]] = []
        self.histograms = 0
        self.root_ok = False
        self._stack: list[str] = []
        self._probe: str | None = None

    def start(self, el: ET.Element) -> None:
        if not self._stack:
            self.root_ok = el.tag == "FlowMonitor"
        if el.tag == "FlowProbe":
            self._probe = el.get("index")
        self._stack.append(el.tag)

    def end(self, el: ET.Element) -> None:
        self._stack.pop()
        parent = self._stack[-1] if self._stack else None
        tag = el.tag
        if tag == "Flow" and parent == "FlowStats":
            fid = el.get("flowId", "")
            self.flows.append({k: v for k, v in el.attrib.items()})
            for child in el:
                if child.tag in ("packetsDropped", "bytesDropped"):
                    self.drops.append({"flowId": fid, "kind": child.tag, "reasonCode": child.get("reasonCode"),
                                       "value": child.get("number") if child.tag == "packetsDropped"
                                       else child.get("bytes")})
            el.clear()
        elif tag == "Flow" and parent in ("Ipv4FlowClassifier", "Ipv6FlowClassifier"):
            entry = {k: v for k, v in el.attrib.items()}
            entry["ip"] = "ipv4" if parent == "Ipv4FlowClassifier" else "ipv6"
            dscp = [d.attrib.get("value", "") for d in el if d.tag == "Dscp"]
            if dscp:
                entry["dscp"] = ",".join(dscp)
            self.classes.append(entry)
            el.clear()
        elif tag == "FlowStats" and parent == "FlowProbe":
            drops = {c.get("reasonCode", ""): _py_int(c.get("number")) for c in el if c.tag == "packetsDropped"}
            self.probes.append({
                "probe": _py_int(self._probe), "flowId": _py_int(el.get("flowId")),
                "packets": _py_int(el.get("packets")), "bytes": _py_int(el.get("bytes")),
                "delay_from_first_probe_sum_s": _py_seconds(el.get("delayFromFirstProbeSum")),
                "packets_dropped": drops,
            })
            el.clear()
        elif tag.endswith("Histogram"):
            self.histograms += 1
            el.clear()


def _drain(parser: ET.XMLPullParser[ET.Element], col: _Collector) -> None:
    """Hand the parser's events to the collector (only "start" and "end", each with its element, were asked for)."""
    for event in parser.read_events():
        el = event[-1]
        if isinstance(el, ET.Element):
            col.start(el) if event[0] == "start" else col.end(el)


def _parse_xml(text: str, path: str, log: WarningLog) -> _Collector:
    """Stream-parse the document; a damaged tail keeps the flows read before it (W-TRUNCATED)."""
    body = re.sub(r"^\s*<\?xml[^>]*\?>", "", text, count=1)  # the declaration may name another encoding
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    col = _Collector()
    step = 1 << 20
    try:
        for i in range(0, len(body), step):
            parser.feed(body[i:i + step])
            _drain(parser, col)
        parser.close()
        _drain(parser, col)
    except ET.ParseError as exc:
        line, column = exc.position
        if not col.flows:
            raise CorruptTraceError(f"not well-formed XML ({exc.msg if hasattr(exc, 'msg') else exc}), column {column}",
                                    path=path, line=line,
                                    hint="the file is damaged or cut short; rerun the simulation") from None
        log.add("W-TRUNCATED", f"the XML breaks off at line {line} (kept the {len(col.flows)} flows read before)",
                line=line, hint="the simulation did not finish writing the file")
    if not col.root_ok:
        raise UnknownFormatError("the XML root element is not <FlowMonitor>", path=path, offset=0)
    return col


def _seconds(col: str) -> pl.Expr:
    m = pl.col(col).str.extract_groups(_TIME)
    num = m.struct.field("1").cast(pl.Float64, strict=False)
    secs = num / m.struct.field("2").replace_strict(_UNIT_DIV, default=None, return_dtype=pl.Float64)
    return pl.when(secs.is_finite()).then(secs)  # "+1e999ns" is no time either


def _py_seconds(value: str | None) -> float | None:
    """One time attribute in seconds (for the few probe values kept in meta)."""
    m = re.match(_TIME, value or "")
    return float(m.group(1)) / _UNIT_DIV[m.group(2)] if m else None


def _py_int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _reason(code: pl.Expr, ip: pl.Expr) -> pl.Expr:
    v4 = code.cast(pl.Int64, strict=False).replace_strict(dict(enumerate(_V4_REASONS)), default=None,
                                                          return_dtype=pl.String)
    v6 = code.cast(pl.Int64, strict=False).replace_strict(dict(enumerate(_V6_REASONS)), default=None,
                                                          return_dtype=pl.String)
    return pl.coalesce(pl.when(ip == "ipv6").then(v6).otherwise(v4), pl.concat_str([pl.lit("reason"), code]))


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a FlowMonitor XML file.

    Every flow gives samples (``flow`` = flowId, ``time`` = the flow's last packet time):
    see :data:`SAMPLE_METRICS`, plus ``drops`` (packets) and ``dropped_bytes`` per drop reason.
    ``meta["flowmon"]`` lists the flows joined with the classifier (addresses, ports,
    protocol); ``meta["flowmon_probes"]`` the per-probe statistics.

    Args:
        source: Path, bytes or binary stream (compressed files are decompressed with a cap).
        limits: Resource limits (``max_flows``).
        strict: Turn warnings (bad time values, a truncated file) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        A trace with samples only.

    Raises:
        CorruptTraceError: DOCTYPE/ENTITY declarations, or XML broken before the first flow.
        UnknownFormatError: empty input, or a root element other than ``<FlowMonitor>``.
        LimitError: more flows than ``max_flows``.
    """
    loaded = load(source, limits)
    path = name or loaded.path
    log = WarningLog(path, strict)
    if not loaded.data.strip():
        raise UnknownFormatError("empty file", path=path, hint="SerializeToXmlFile was not reached")
    text, _enc = decode_text(loaded.data, path, log)
    _refuse_declarations(text, path)
    col = _parse_xml(text, path, log)
    if len(col.flows) > limits.max_flows:
        raise LimitError(f"{len(col.flows):,} flows, over the limit of {limits.max_flows:,}", path=path,
                         hint="raise max_flows in [limits]")
    flows = _flow_table(col, log)
    classes = pl.DataFrame(col.classes, schema={a: pl.String for a in (
        "flowId", "sourceAddress", "destinationAddress", "protocol", "sourcePort", "destinationPort", "ip", "dscp")},
        orient="row") if col.classes else pl.DataFrame(schema={"flowId": pl.String, "ip": pl.String})
    samples = _attribute_samples(flows)
    dr = _drop_rows(col, flows, classes)
    if dr is not None:
        samples = pl.concat([samples, dr.select(
            time="_t", flow="flowId",
            metric=pl.when(pl.col("kind") == "packetsDropped").then(pl.lit("drops")).otherwise(pl.lit("dropped_bytes")),
            value="value",
            unit=pl.when(pl.col("kind") == "packetsDropped").then(pl.lit("packets")).otherwise(pl.lit("bytes")),
            source=pl.concat_str([pl.col("kind"), pl.lit(":"), pl.col("reasonCode"), pl.lit(":"), pl.col("reason")]),
        )])
    samples = samples.sort("flow", "metric", maintain_order=True)
    per_flow = _per_flow(flows, classes, dr, log)
    if not per_flow:
        log.add("W-EMPTY", "the FlowMonitor file holds no flows")
    raw_times = [f.get("timeFirstTxPacket", "") for f in col.flows[:50]]
    style = ("int64x64 (+N.0ns, ns-3.31 and older)" if any(re.match(r"^[+-]?\d+\.0ns$", t or "") for t in raw_times)
             else "double, 6 significant digits (ns-3.32 and newer)")
    meta = {
        "format": NAME,
        "tool": "ns-3",
        "paths": [path],
        "compression": loaded.compression,
        "units": {"time": "s (from ns)", "throughput": "bps (rxBytes*8 / (timeLastRxPacket - timeFirstTxPacket))"},
        "time_format": style,
        "time_origin": "simulation start",
        "flowmon": per_flow,
        "flowmon_probes": col.probes,
        "counts": {"flows": len(per_flow), "histograms": col.histograms, "probe_stats": len(col.probes)},
    }
    return make_trace(None, samples, meta, log)


def _flow_table(col: _Collector, log: WarningLog) -> pl.DataFrame:
    """The ``<Flow>`` statistics as a frame: times in seconds, counts as integers, and the derived
    ``meanDelay``, ``meanJitter``, ``throughput`` and ``_t`` (the flow's last packet time, 0 if none).

    Bad time values are left empty (W-BADVALUE); flows without a numeric flowId are skipped.
    """
    strs = {a: pl.String for a in ("flowId", *_TIME_ATTRS, *_COUNT_ATTRS)}
    flows = pl.DataFrame([{a: f.get(a) for a in strs} for f in col.flows], schema=strs, orient="row")
    flows = flows.with_columns(
        *(_seconds(a).alias(a) for a in _TIME_ATTRS),
        *(pl.col(a).cast(pl.Int64, strict=False).alias(a) for a in _COUNT_ATTRS),
        flowId=pl.col("flowId").cast(pl.UInt32, strict=False),
    )
    bad_time = sum(int((flows[a].is_null() & pl.Series([f.get(a) for f in col.flows]).is_not_null()).sum())
                   for a in _TIME_ATTRS) if flows.height else 0
    if bad_time:
        log.add("W-BADVALUE", f"{bad_time} time attribute(s) are not '<number><unit>' (left empty)", count=bad_time)
    if flows["flowId"].null_count():
        log.add("W-BADVALUE", "flows without a numeric flowId (skipped)", count=flows["flowId"].null_count())
        flows = flows.filter(pl.col("flowId").is_not_null())
    rx = pl.col("rxPackets")
    span = pl.col("timeLastRxPacket") - pl.col("timeFirstTxPacket")
    return flows.with_columns(
        meanDelay=pl.when(rx > 0).then(pl.col("delaySum") / rx),
        meanJitter=pl.when(rx > 1).then(pl.col("jitterSum") / (rx - 1)),
        # FlowMonitor's usual definition (flowmon-parse-results.py, the ns-3 examples).
        throughput=pl.when((rx > 0) & (span > 0)).then(pl.col("rxBytes") * 8 / span),
        _t=pl.max_horizontal("timeLastTxPacket", "timeLastRxPacket").fill_null(0.0),
    ).with_columns(_t=pl.when(pl.col("_t").is_finite()).then("_t").otherwise(0.0))


def _attribute_samples(flows: pl.DataFrame) -> pl.DataFrame:
    """One sample per flow and :data:`SAMPLE_METRICS` attribute present, at the flow's last packet time."""
    present = [a for a in SAMPLE_METRICS if flows[a].null_count() < flows.height]
    long = (
        flows.select("flowId", "_t", *(pl.col(a).cast(pl.Float64) for a in present))
        .unpivot(index=["flowId", "_t"], variable_name="attr")
        .filter(pl.col("value").is_not_null() & pl.col("value").is_finite())
    )
    return long.select(
        time="_t", flow="flowId",
        metric=pl.col("attr").replace_strict({k: v[0] for k, v in SAMPLE_METRICS.items()}),
        value=pl.col("value").cast(pl.Float64),
        unit=pl.col("attr").replace_strict({k: v[1] for k, v in SAMPLE_METRICS.items()}),
        source="attr",
    )


def _drop_rows(col: _Collector, flows: pl.DataFrame, classes: pl.DataFrame) -> pl.DataFrame | None:
    """The ``packetsDropped``/``bytesDropped`` entries of the flows kept (None: none in the file).

    Returns:
        ``flowId, kind, reasonCode, value, ip, _t, reason`` (the reason's name depends on the
        flow's IP version: IPv4 and IPv6 number their reasons differently).
    """
    if not col.drops:
        return None
    ip_of = classes.select(pl.col("flowId").cast(pl.UInt32, strict=False), "ip") if classes.height else None
    dr = pl.DataFrame(col.drops, schema={"flowId": pl.String, "kind": pl.String, "reasonCode": pl.String,
                                         "value": pl.String}, orient="row").with_columns(
        pl.col("flowId").cast(pl.UInt32, strict=False), value=pl.col("value").cast(pl.Float64, strict=False))
    dr = (
        dr.join(ip_of, on="flowId", how="left")
        if ip_of is not None
        else dr.with_columns(ip=pl.lit(None, pl.String))
    )
    dr = dr.join(flows.select("flowId", "_t"), on="flowId", how="inner").filter(pl.col("value").is_not_null())
    return dr.with_columns(reason=_reason(pl.col("reasonCode"), pl.col("ip")))


def _per_flow(flows: pl.DataFrame, classes: pl.DataFrame, dr: pl.DataFrame | None,
              log: WarningLog) -> list[dict[str, Any]]:
    """Per-flow dicts for ``meta["flowmon"]``: the statistics joined with the classifier, and drops by reason.

    A flow without a classifier entry has no addresses (W-CLASSIFIER).
    """
    table = flows.drop("_t")
    if classes.height:
        cl = classes.with_columns(
            pl.col("flowId").cast(pl.UInt32, strict=False),
            pl.col("sourcePort", "destinationPort").cast(pl.Int64, strict=False),
            protocol=pl.col("protocol").replace(_PROTOS),
        ).rename({"sourceAddress": "src", "destinationAddress": "dst", "sourcePort": "sport",
                  "destinationPort": "dport"})
        table = table.join(cl, on="flowId", how="left")
        missing = int(table["src"].null_count())
        if missing:
            log.add("W-CLASSIFIER", f"{missing} flow(s) have no classifier entry (addresses unknown)", count=missing)
    elif flows.height:
        log.add("W-CLASSIFIER", "no Ipv4FlowClassifier/Ipv6FlowClassifier entries (addresses unknown)")
    per_flow = table.to_dicts()
    if dr is not None:
        for f in per_flow:
            f["drops"] = {}
        by_id = {f["flowId"]: f for f in per_flow}
        for d in dr.to_dicts():
            fd = by_id.get(d["flowId"])
            if fd is not None:
                key = "packets" if d["kind"] == "packetsDropped" else "bytes"
                fd["drops"].setdefault(d["reason"], {})[key] = d["value"]
    return per_flow
