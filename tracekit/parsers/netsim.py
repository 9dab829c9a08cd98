"""NetSim (Tetcos) exports: the Packet Trace, the Application Metrics table, plot source-data CSVs.

* **Packet Trace** (``Packet Trace.csv``): one row each time a packet is *received* at a
  device (per hop), columns named in the header (``PACKET_ID, SEGMENT_ID, PACKET_TYPE,
  CONTROL_PACKET_TYPE/APP_NAME, ..., TRANSMITTER_ID, RECEIVER_ID, ..._TIME(US), ..._PAYLOAD(Bytes),
  PACKET_STATUS, SOURCE_IP, DESTINATION_IP, ...``). The column set depends on the NetSim
  version, network type and the filter chosen in the GUI, so columns are found by name,
  never by position; columns users add in a spreadsheet are ignored.
* **Application Metrics** (results window export): one row per application, short
  v12/v13 column set or the longer v14 one.
* **Plot source data** (``time``, value CSVs written by a plot's "source data" button).

Times in NetSim are microseconds of simulation time; they are converted to seconds.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from tracekit._source import Source, load
from tracekit.errors import LimitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._tcp import finish_tcp
from tracekit.parsers._text import (
    check_lines,
    decode_text,
    field_counts,
    first_bad,
    head_text,
    lines_of,
    nonfinite,
    numbers,
    read_table,
    sniff_delimiter,
    split_header,
    to_number,
    unique_names,
    uses_decimal_comma,
)
from tracekit.schema import ACK, FIN, RST, SYN
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "netsim"
DESCRIPTION = "NetSim Packet Trace CSV, Application Metrics table, plot source-data CSV"
DETECT = ("CSV header with PACKET_ID, TRANSMITTER_ID and RECEIVER_ID (packet trace); or a header with "
          "'Application Id' and Throughput/Packet received (application metrics); or exactly "
          "'Time (<unit>)' plus value columns with units in parentheses and no dotted statistic paths (plot data)")

# Packet Trace columns, by normalised header (upper case, blanks removed).
_REQUIRED = ("PACKET_ID", "TRANSMITTER_ID", "RECEIVER_ID", "PHY_LAYER_PAYLOAD(BYTES)")
_TIME_COLS = ("PHY_LAYER_END_TIME", "PHY_LAYER_ARRIVAL_TIME", "PHY_LAYER_START_TIME")
_TIME_UNIT = {"US": 1e-6, "MS": 1e-3, "S": 1.0, "NS": 1e-9}

#: Application Metrics columns (normalised: lower case, letters and digits only, prefix match)
#: -> (metric, unit, default scale when the header gives no unit).
APP_METRICS: tuple[tuple[str, str, str, float], ...] = (
    ("packetgenerated", "packets_generated", "packets", 1.0),
    ("packetsgenerated", "packets_generated", "packets", 1.0),
    ("packetstransmitted", "packets_transmitted", "packets", 1.0),
    ("packettransmitted", "packets_transmitted", "packets", 1.0),
    ("packetreceived", "packets_received", "packets", 1.0),
    ("packetsreceived", "packets_received", "packets", 1.0),
    ("payloadtransmitted", "payload_transmitted", "bytes", 1.0),
    ("payloadreceived", "payload_received", "bytes", 1.0),
    ("throughput", "throughput", "bps", 1e6),  # Mbps in every version seen
    ("delay", "delay", "s", 1e-6),  # microseconds
    ("jitter", "jitter", "s", 1e-6),
)
# Units written in headers, e.g. "Throughput (Mbps)", "Delay(microsec)", "Time (ms)".
_UNITS: dict[str, tuple[str, float]] = {
    "mbps": ("bps", 1e6), "kbps": ("bps", 1e3), "gbps": ("bps", 1e9), "bps": ("bps", 1.0),
    "microsec": ("s", 1e-6), "microseconds": ("s", 1e-6), "us": ("s", 1e-6), "µs": ("s", 1e-6),
    "micro seconds": ("s", 1e-6), "ms": ("s", 1e-3), "millisec": ("s", 1e-3), "milliseconds": ("s", 1e-3),
    "milli seconds": ("s", 1e-3), "s": ("s", 1.0), "sec": ("s", 1.0), "seconds": ("s", 1.0),
    "bytes": ("bytes", 1.0), "byte": ("bytes", 1.0), "packets": ("packets", 1.0), "kb": ("bytes", 1e3),
    "mb": ("bytes", 1e6),
}
_PLOT_TIME = re.compile(r"^\s*time\s*\(\s*([^()]+?)\s*\)\s*$", re.I)
_UNIT_IN = re.compile(r"\(\s*([^()]+?)\s*\)")


def _norm_trace(h: str) -> str:
    return re.sub(r"\s+", "", h).upper()


def _norm_app(h: str) -> str:
    return re.sub(r"[^a-z0-9]", "", h.lower())


def _unit_of(header: str) -> tuple[str, float] | None:
    m = _UNIT_IN.search(header)
    return _UNITS.get(m.group(1).lower()) if m else None


def _kind(lines: list[str]) -> tuple[str, int] | None:
    """Which NetSim table these first lines start: (``"trace"|"app"|"plot"``, header line index)."""
    for i, line in enumerate(lines[:6]):
        if not line.strip():
            continue
        cells = split_header(line, sniff_delimiter(line))
        norm = {_norm_trace(c) for c in cells}
        if {"PACKET_ID", "TRANSMITTER_ID", "RECEIVER_ID"} <= norm:
            return "trace", i
        app = [_norm_app(c) for c in cells]
        if "applicationid" in app and any(a.startswith(("throughput", "packetreceived", "packetsreceived"))
                                          for a in app):
            return "app", i
        if i == 0 and 2 <= len(cells) <= 8 and _PLOT_TIME.match(cells[0]) and all(
                _UNIT_IN.search(c) and "." not in c and "<->" not in c for c in cells[1:]):
            return "plot", i
        if i == 0 and not any("application" in a for a in app):
            return None  # the table's header must come first, except for a title above the app table
    return None


def sniff(head: bytes) -> bool:
    """True for a NetSim packet trace, application-metrics table or plot CSV (see :data:`DETECT`)."""
    text = head_text(head)
    return _kind(text.splitlines()[:6]) is not None


def _prepare(source: Source, limits: Limits, strict: bool, name: str | None) -> tuple[
        str, WarningLog, str, pl.Series, dict[str, Any]]:
    """Load, decode and split the file; returns (path, log, text, lines, base meta)."""
    loaded = load(source, limits)
    path = name or loaded.path
    log = WarningLog(path, strict)
    if not loaded.data.strip():
        raise UnknownFormatError("empty file", path=path, hint="NetSim wrote no rows (was the trace enabled?)")
    # NetSim writes Windows-locale text; Tetcos' own scripts read its traces as latin-1.
    text, encoding = decode_text(loaded.data, path, log, fallback="latin-1")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = lines_of(text)
    check_lines(lines, path, limits, log)
    base = {"format": NAME, "tool": "netsim", "paths": [path], "encoding": encoding,
            "compression": loaded.compression, "time_origin": "simulation start"}
    return path, log, text, lines, base


def _table(text: str, lines: pl.Series, h: int, path: str, log: WarningLog) -> tuple[list[str], pl.DataFrame, str]:
    """Header cells, the String table (columns c0..) and the delimiter; warns about ragged rows."""
    header = lines[h]
    sep = sniff_delimiter(header)
    headers = split_header(header, sep)
    body = text.split("\n", h)[-1] if h else text
    table = read_table(body, sep, path, line0=h + 1)
    counts = field_counts(lines.slice(h + 1), sep)
    short = (counts < len(headers)).fill_null(False)
    if short.any():
        log.add("W-SHORTROW", f"{int(short.sum()):,} row(s) have fewer cells than the header (read as blank)",
                count=int(short.sum()), line=h + 1 + first_bad(short))
    return headers, table.select(table.columns[: len(headers)]), sep


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a NetSim export (the kind is recognised from its header).

    Args:
        source: Path, bytes or binary stream.
        limits: Resource limits (lines, packets, flows).
        strict: Turn warnings (bad rows, a latin-1 file) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        Packet trace: packets (``recv`` per hop, ``drop`` for rows whose status is not
        Successful). Application metrics and plot data: samples.

    Raises:
        UnknownFormatError: empty input, an unrecognised header, or missing required columns.
        LimitError: over ``max_packets`` / ``max_flows``.
    """
    path, log, text, lines, base = _prepare(source, limits, strict, name)
    nonblank = lines.str.strip_chars() != ""
    first = int(nonblank.arg_true()[0]) if nonblank.any() else 0
    found = _kind(lines.slice(first, 6).to_list())
    if found is None:
        raise UnknownFormatError("not a NetSim packet trace, application-metrics table or plot CSV", path=path,
                                 line=first + 1, hint="expected a header with PACKET_ID, TRANSMITTER_ID, "
                                 "RECEIVER_ID (packet trace) or 'Application Id' (application metrics)")
    kind, rel = found
    h = first + rel
    headers, table, sep = _table(text, lines, h, path, log)
    base["delimiter"] = sep
    if kind == "trace":
        return _packet_trace(headers, table, h, path, log, limits, base)
    if kind == "app":
        return _app_metrics(headers, table, h, path, log, base)
    return _plot(headers, table, sep, path, log, base)


def _packet_trace(headers: list[str], table: pl.DataFrame, h: int, path: str, log: WarningLog, limits: Limits,
                  base: dict[str, Any]) -> Trace:
    """A packet-trace export as packets (one ``recv`` or ``drop`` row per hop)."""
    norm = [_norm_trace(c) for c in headers]
    col: dict[str, str] = {}
    for i, n in enumerate(norm):
        col.setdefault(n, f"c{i}")
    time_key = next((k for t in _TIME_COLS for k in col if re.fullmatch(rf"{t}\((US|MS|S|NS)\)", k)), None)
    missing = [c for c in _REQUIRED if c not in col] + ([] if time_key else ["PHY_LAYER_END_TIME(US)"])
    if missing:
        raise UnknownFormatError(f"packet trace without the column(s) {', '.join(missing)}", path=path, line=h + 1,
                                 hint=f"found: {', '.join(h_ for h_ in headers if h_)[:300]}")
    if table.height > limits.max_packets:
        raise LimitError(f"{table.height:,} rows, over the limit of {limits.max_packets:,}", path=path,
                         hint="raise max_packets in [limits]")
    assert time_key is not None  # else it is in ``missing``
    tscale = _TIME_UNIT[re.search(r"\((\w+)\)$", time_key).group(1)]  # type: ignore[union-attr]
    df = _clean_rows(_packet_rows(table, col, time_key, tscale, h), table, log)
    statuses = df.group_by("_status", maintain_order=True).len().to_dicts()  # first-seen order: stable output
    # NetSim has no ports: connections are address pairs, keyed with placeholder ports for finish_tcp.
    l4 = pl.col("proto").is_in(["tcp", "udp"])
    df = finish_tcp(df.with_columns(sport=pl.when(l4).then(pl.lit(0)), dport=pl.when(l4).then(pl.lit(0))))
    df = df.with_columns(sport=pl.lit(None, pl.Int32), dport=pl.lit(None, pl.Int32))
    nflows = df["flow"].n_unique() if df.height else 0
    if nflows > limits.max_flows:
        raise LimitError(f"{nflows:,} connections, over the limit of {limits.max_flows:,}", path=path)
    df = _derive_seq(df)
    if df.height == 0:
        log.add("W-EMPTY", "the packet trace holds no rows")
    meta = {
        **base,
        "kind": "packet_trace",
        "units": {
            "time": "us" if tscale == 1e-6 else time_key,
            "size": "bytes (PHY_LAYER_PAYLOAD)",
            "payload": "bytes (TRX_LAYER_PAYLOAD)",
        },
        "time_column": time_key,
        "ignored_columns": [
            hd for hd, n in zip(headers, norm, strict=False) if not re.match(r"^[A-Z_/]+(\(\w+\))?$", n)
        ],
        "derived": {
            "seq": "bytes numbered per direction in (PACKET_ID, SEGMENT_ID) order; NetSim traces "
            "carry no TCP sequence numbers"
        },
        "counts": {"rows": table.height, "status": {d["_status"]: d["len"] for d in statuses}},
    }
    return make_trace(df.drop("_status"), None, meta, log)


def _packet_rows(table: pl.DataFrame, col: dict[str, str], time_key: str, tscale: float, h: int) -> pl.DataFrame:
    """The packet-trace table in the packets schema's terms, one row per table row (``_status`` kept).

    NetSim names no transport protocol on data rows: the header the network layer adds to
    the transport payload tells it (8 bytes: UDP, at least 20: TCP); TCP control packets are
    named ``TCP_SYN``, ``TCP_ACK``, … and give the flags.

    Args:
        col: Normalised header -> table column.
        h: The header's line index (frame = file line of the row).
    """
    numeric = ("TRX_LAYER_PAYLOAD(BYTES)", "NW_LAYER_PAYLOAD(BYTES)", "PHY_LAYER_PAYLOAD(BYTES)", "PACKET_ID",
               "SEGMENT_ID", time_key)
    table = table.with_columns(numbers(table[col[k]]).alias(f"_n{i}") for i, k in enumerate(numeric) if k in col)
    num_col = {k: f"_n{i}" for i, k in enumerate(numeric) if k in col}

    def c(key: str) -> pl.Expr:
        return pl.col(col[key]).str.strip_chars() if key in col else pl.lit(None, pl.String)

    def num(key: str) -> pl.Expr:
        return pl.col(num_col[key]) if key in num_col else pl.lit(None, pl.Float64)

    ctrl = c("CONTROL_PACKET_TYPE/APP_NAME").fill_null("")
    ptype = c("PACKET_TYPE")
    is_ctrl = ptype.str.to_lowercase().str.contains("control").fill_null(False)
    trx, nw = num("TRX_LAYER_PAYLOAD(BYTES)"), num("NW_LAYER_PAYLOAD(BYTES)")
    # The transport header is what the network layer adds to the transport payload: 8 = UDP, >= 20 = TCP.
    hdr = nw - trx
    proto = (pl.when(ctrl.str.starts_with("TCP_")).then(pl.lit("tcp"))
             .when(~is_ctrl & (hdr == 8)).then(pl.lit("udp"))
             .when(~is_ctrl & (hdr >= 20)).then(pl.lit("tcp"))
             .otherwise(pl.lit("other")))
    up = ctrl.str.to_uppercase()
    flags = pl.when(ctrl.str.starts_with("TCP_")).then(
        up.str.contains("SYN").cast(pl.Int64) * SYN + up.str.contains("ACK").cast(pl.Int64) * ACK
        + up.str.contains("FIN").cast(pl.Int64) * FIN + up.str.contains("RST").cast(pl.Int64) * RST)
    status = c("PACKET_STATUS").fill_null("Successful")
    src_ip, dst_ip = c("SOURCE_IP"), c("DESTINATION_IP")

    def empty_ip(e: pl.Expr) -> pl.Expr:  # L2 control packets
        return e.is_null() | (e == "") | (e == "0.0.0.0")

    return table.with_row_index("_i").select(
        frame=(pl.col("_i") + h + 2).cast(pl.UInt64),
        time=num(time_key) * tscale,
        event=pl.when(status.str.to_lowercase() == "successful").then(pl.lit("recv")).otherwise(pl.lit("drop")),
        node=c("RECEIVER_ID"),
        link=pl.concat_str([c("TRANSMITTER_ID"), pl.lit("->"), c("RECEIVER_ID")]),
        src=pl.when(empty_ip(src_ip)).then(c("SOURCE_ID")).otherwise(src_ip),
        dst=pl.when(empty_ip(dst_ip)).then(c("DESTINATION_ID")).otherwise(dst_ip),
        proto=proto,
        size=num("PHY_LAYER_PAYLOAD(BYTES)"),
        payload=trx,
        flags=flags,
        pkt_id=num("PACKET_ID").cast(pl.Int64, strict=False),
        pkt_seq=num("SEGMENT_ID").cast(pl.Int64, strict=False),
        ptype=pl.when(is_ctrl & (ctrl != "")).then(ctrl).otherwise(ptype),
        _status=status,
    )


def _clean_rows(df: pl.DataFrame, table: pl.DataFrame, log: WarningLog) -> pl.DataFrame:
    """Drop blank rows and rows without a time, size or receiver (W-BADLINE); a connection whose
    TCP control packets are in the trace is TCP throughout; warn where times go backwards."""
    # an empty line, or a row of empty cells (",,,,"), reads as all-null cells
    blank = table.select(pl.all_horizontal(pl.col(r"^c\d+$").is_null())).to_series()
    bad = ~blank & (df["time"].is_null() | df["size"].is_null() | df["node"].is_null()
                    | ~df["time"].is_finite().fill_null(False))
    if bad.any():
        log.add("W-BADLINE", f"{int(bad.sum()):,} row(s) without a time, size or receiver (skipped)",
                count=int(bad.sum()), line=int(df["frame"].filter(bad)[0]))
    df = df.filter(~bad & ~blank)
    pair = pl.concat_str([pl.min_horizontal("src", "dst"), pl.max_horizontal("src", "dst")], separator="|")
    df = df.with_columns(proto=pl.when((pl.col("proto") == "tcp").any().over(pair) & (pl.col("proto") == "udp"))
                         .then(pl.lit("tcp")).otherwise("proto"))
    if df.height > 1 and bool((df["time"].diff().drop_nulls() < 0).any()):
        log.add("W-NONMONOTONIC", "times go backwards (row order kept; NetSim writes rows as packets arrive)",
                count=int((df["time"].diff().drop_nulls() < 0).sum()))
    return df


def _derive_seq(df: pl.DataFrame) -> pl.DataFrame:
    """Number payload bytes per direction in (PACKET_ID, SEGMENT_ID) order; SYNs get seq 0.

    NetSim keeps the ids of a retransmitted segment, so a retransmission gets the
    same ``seq`` as the original and the analyses see it as one.
    """
    data = df.filter((pl.col("proto") == "tcp") & (pl.col("payload") > 0) & pl.col("flow").is_not_null()
                     & pl.col("pkt_id").is_not_null() & pl.col("pkt_seq").is_not_null())
    if data.height == 0:
        return df.with_columns(seq=pl.when((pl.col("flags").fill_null(0) & SYN) != 0).then(pl.lit(0, pl.Int64)))
    keys = (data.group_by("flow", "dir", "pkt_id", "pkt_seq").agg(pl.col("payload").first().cast(pl.Int64))
            .sort("flow", "dir", "pkt_id", "pkt_seq")
            .with_columns(seq=pl.col("payload").cum_sum().over("flow", "dir") - pl.col("payload") + 1)
            .drop("payload"))
    out = df.join(keys, on=["flow", "dir", "pkt_id", "pkt_seq"], how="left", maintain_order="left")
    return out.with_columns(seq=pl.when((pl.col("proto") == "tcp") & (pl.col("payload") > 0)).then("seq")
                            .when((pl.col("flags").fill_null(0) & SYN) != 0).then(pl.lit(0, pl.Int64)))


def _app_metrics(headers: list[str], table: pl.DataFrame, h: int, path: str, log: WarningLog,
                 base: dict[str, Any]) -> Trace:
    norm = [_norm_app(x) for x in headers]
    idx = {n: f"c{i}" for i, n in reversed(list(enumerate(norm)))}
    ident = {k: idx.get(k) for k in ("applicationid", "applicationname", "sourceid", "destinationid")}
    dec = uses_decimal_comma(table, base["delimiter"])
    frames = []
    columns = []
    for i, n in enumerate(norm):
        spec = next((s for s in APP_METRICS if n.startswith(s[0])), None)
        if spec is None or n in ident:
            continue
        unit, scale = _unit_of(headers[i]) or (spec[2], spec[3])
        if unit != spec[2]:
            unit, scale = spec[2], spec[3]  # a unit we cannot reconcile: keep the documented default
        columns.append({"header": headers[i], "metric": spec[1], "unit": unit})
        frames.append(table.select(
            time=pl.lit(0.0),
            flow=to_number(pl.col(ident["applicationid"])).cast(pl.UInt32, strict=False)
            if ident["applicationid"] else pl.lit(None, pl.UInt32),
            node=pl.col(ident["sourceid"]) if ident["sourceid"] else (
                pl.col(ident["applicationname"]) if ident["applicationname"] else pl.lit(None, pl.String)),
            metric=pl.lit(spec[1]), value=to_number(pl.col(f"c{i}"), decimal_comma=dec) * scale,
            unit=pl.lit(unit), source=pl.lit(headers[i])))
    samples = pl.concat(frames) if frames else None
    if samples is not None:
        nf = nonfinite(samples["value"])
        if nf:
            log.add("W-NONFINITE", f"{nf} NaN/infinite value(s) left out", count=nf)
        samples = samples.filter(pl.col("value").is_not_null() & pl.col("value").is_finite())
    version = "v14" if any(k in norm for k in ("sourceid", "packetstransmitted", "payloadtransmitted")) else "v12/v13"
    rows = table.rename(dict(zip(table.columns, unique_names(headers), strict=False)), strict=False)
    meta = {**base, "kind": "application_metrics", "netsim_version": version, "columns": columns,
            "applications": rows.to_dicts(),
            "units": {"throughput": "Mbps", "delay": "microseconds", "jitter": "microseconds"},
            "summary": "end-of-run totals: samples carry time 0", "counts": {"rows": table.height}}
    if samples is None or samples.height == 0:
        log.add("W-EMPTY", "the application table holds no values")
    return make_trace(None, samples, meta, log)


def _plot(headers: list[str], table: pl.DataFrame, sep: str, path: str, log: WarningLog,
          base: dict[str, Any]) -> Trace:
    dec = uses_decimal_comma(table, sep)
    tunit = _PLOT_TIME.match(headers[0])
    tu = _UNITS.get(tunit.group(1).lower()) if tunit else None
    if tu is None or tu[0] != "s":
        log.add("W-UNIT", f"time unit of {headers[0]!r} not recognised; read as microseconds (NetSim's clock)")
        tu = ("s", 1e-6)
    t = to_number(pl.col("c0"), decimal_comma=dec) * tu[1]
    frames = []
    for i, hd in enumerate(headers[1:], start=1):
        low = hd.lower()
        unit, scale = _unit_of(hd) or ("1", 1.0)
        if "throughput" in low:
            metric = "throughput"
        elif "window" in low or "cwnd" in low:
            metric = "cwnd"
        elif "buffer" in low or "queue" in low:
            metric = "queue"
        elif "delay" in low or "latency" in low:
            metric = "delay"
        elif unit == "bytes":
            metric = "bytes"  # the raw plot log: time stamps and bytes, not the plotted rate
        else:
            metric, unit, scale = hd, "1", 1.0
        frames.append(table.select(time=t, metric=pl.lit(metric),
                                   value=to_number(pl.col(f"c{i}"), decimal_comma=dec) * scale,
                                   unit=pl.lit(unit), source=pl.lit(hd)))
    samples = pl.concat(frames)
    bad = samples["time"].is_null() | samples["value"].is_null()
    if bad.any():
        log.add("W-BADLINE", f"{int(bad.sum()):,} cell(s) without a number (skipped)", count=int(bad.sum()))
    nf = int((~bad & ~(samples["value"].is_finite() & samples["time"].is_finite()).fill_null(False)).sum())
    if nf:
        log.add("W-NONFINITE", f"{nf} NaN/infinite value(s) left out", count=nf)
    samples = samples.filter(~bad & pl.col("value").is_finite() & pl.col("time").is_finite())
    meta = {**base, "kind": "plot", "units": {"time": headers[0], **{f"c{i}": hd for i, hd in enumerate(headers)}},
            "counts": {"rows": table.height}}
    return make_trace(None, samples, meta, log)
