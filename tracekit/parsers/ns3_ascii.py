"""ns-3 ASCII traces (``AsciiTraceHelper``): device-level ``+ - r d`` and IP-level ``t r d`` lines.

One line per packet event (``src/network/helper/trace-helper.cc``,
``src/internet/helper/internet-trace-helper.cc``)::

    <ev> <time> [<context>] <packet>
    + 0.5 /NodeList/0/DeviceList/0/$ns3::PointToPointNetDevice/TxQueue/Enqueue ns3::PppHeader (...)
          ns3::Ipv4Header (...) ns3::TcpHeader (...) Payload (size=512)   (one line in the file)
    t 0.5 /NodeList/2/$ns3::Ipv4L3Protocol/Tx(1) ns3::Ipv4Header (...) ns3::TcpHeader (...)

``<packet>`` is ``Packet::Print``: ``<TypeId> (<header print>)`` items separated by single
spaces, with parentheses nested inside (``ECN ECT (1)``, ``IP (0x0021)``, TCP options).
Every field is pulled out with anchored regexes over the whole line column at once
(polars ``str.extract_groups``); the TCP header's text is cut out with a
balanced-parenthesis pattern (three levels deep) so that its options are read
from inside it only. Nothing loops over lines in Python.
"""

from __future__ import annotations

import polars as pl

from tracekit._source import Source, load
from tracekit.errors import CorruptTraceError, LimitError, UnknownFormatError
from tracekit.limits import DEFAULT, Limits
from tracekit.parsers._tcp import finish_tcp
from tracekit.parsers._text import NUMBER, check_lines, decode_text, head_text, lines_of
from tracekit.schema import ACK, CWR, ECE, FIN, PSH, RST, SYN, URG
from tracekit.trace import Trace, WarningLog, make_trace

NAME = "ns3-ascii"
DESCRIPTION = "ns-3 ASCII trace (AsciiTraceHelper): device + - r d and IP-level t r d lines, IPv4/IPv6, TCP/UDP"
DETECT = ("first non-empty line is '<+|-|r|d|t> <number> [/NodeList/... context] ns3::<Header> (' "
          "(an ns-3 Packet::Print after the event and time)")

_SNIFF = rf"^[-+rdt] {NUMBER} (?:/NodeList/\d+\S* )?ns3::\w+ ?\("

# Balanced parentheses up to three levels deep: enough for every header print in ns-3
# (the deepest is an option like TcpOptionSackPermitted([sack_perm]) inside TcpHeader (...)).
_B = r"(?:[^()]|\((?:[^()]|\([^()]*\))*\))*"

# Anchored on "id N protocol N offset (bytes)", which only Ipv4Header prints (4x cheaper than also
# matching the DSCP/ECN words before it, whose "ECT (1)" holds parentheses); the first match is the
# outer header when an ICMP error quotes another one.
_IPV4 = (r"id (\d+) protocol (\d+) "
         r"offset \(bytes\) (\d+) flags \[([^\]]*)\] length: (\d+) (\S+) > ([^\s)]+)\)")
# Ipv6Header::Print opens its own parenthesis inside Packet::Print's and prints the addresses
# *after* closing it: "ns3::Ipv6Header ((Version 6 ... Hop Limit 64 )2001:1::1 > 2001:1::2)".
_IPV6 = (r"ns3::Ipv6Header \(\(?Version 6 Traffic class 0x[0-9a-fA-F]+ (?:DSCP .+? )?Flow Label 0x[0-9a-fA-F]+ "
         r"Payload Length (\d+) Next Header (\d+) Hop Limit \d+ \)(\S+) > ([^\s)]+)\)")
_TCP = r"ns3::TcpHeader \((\d+) > (\d+) (?:\[([A-Z|]*)\] )?Seq=(\d+) Ack=(\d+) Win=(\d+)"
_TCP_TEXT = rf"ns3::TcpHeader \(({_B})\)"
_UDP = r"ns3::UdpHeader \(length: (\d+) (\d+) > (\d+)\)"

_EVENTS = {"+": "enqueue", "-": "dequeue", "r": "recv", "d": "drop", "t": "send"}
_FLAG_BITS = {"FIN": FIN, "SYN": SYN, "RST": RST, "PSH": PSH, "ACK": ACK, "URG": URG, "ECE": ECE, "CWR": CWR}
# Serialized option sizes (TcpOption*::GetSerializedSize); the header is padded to 4 bytes.
_OPT_BYTES = {"MSS": 4, "WinScale": 3, "TS": 10, "SackPermitted": 2, "NOP": 1, "End": 1}
_PROTO = {6: "tcp", 17: "udp"}


def sniff(head: bytes) -> bool:
    """True when the first non-empty line is an ns-3 ASCII trace line."""
    text = head_text(head).lstrip("\r\n")
    first = text.split("\n", 1)[0].rstrip("\r")
    return pl.Series([first]).str.contains(_SNIFF).item() is True


def _int(expr: pl.Expr) -> pl.Expr:
    return expr.cast(pl.Int64, strict=False)


def _sum_numbers(pkt: pl.Expr, pattern: str, inner: pl.Expr) -> pl.Expr:
    """Sum ``inner`` over every match of ``pattern`` in a line (0 when none)."""
    return pkt.str.extract_all(pattern).list.eval(inner).list.sum().fill_null(0)


def _parse(df: pl.DataFrame) -> pl.DataFrame:
    """Turn matched lines (columns ``ev``, ``t``, ``ctx``, ``pkt``) into schema columns + raw TCP ones."""
    pkt = pl.col("pkt")
    df = df.with_columns(
        ip4=pkt.str.extract_groups(_IPV4),
        ip6=pkt.str.extract_groups(_IPV6),
        tcp=pkt.str.extract_groups(_TCP),
        udp=pkt.str.extract_groups(_UDP),
        tcp_text=pkt.str.extract(_TCP_TEXT, 1),
    )
    ip4, ip6, tcp, udp = (pl.col(c).struct for c in ("ip4", "ip6", "tcp", "udp"))
    is4 = ip4.field("1").is_not_null()
    is6 = ~is4 & ip6.field("1").is_not_null()
    proto_num = pl.when(is4).then(_int(ip4.field("2"))).when(is6).then(_int(ip6.field("2")))
    ip_len = pl.when(is4).then(_int(ip4.field("5"))).when(is6).then(_int(ip6.field("1")) + 40)
    # IP payload = total length - fixed header (ns-3's Ipv4Header never carries options).
    ip_payload = pl.when(is4).then(_int(ip4.field("5")) - 20).when(is6).then(_int(ip6.field("1")))
    txt = pl.col("tcp_text")
    tcp_hdr = _tcp_header_bytes(txt)
    has_tcp = tcp.field("1").is_not_null()
    has_udp = udp.field("1").is_not_null()
    # Unknown options have no size we can know: fall back to the printed payload pieces
    # (which on CSMA also count Ethernet padding, hence not the first choice).
    tcp_payload = pl.when(txt.str.contains("TcpOptionUnknown", literal=True)).then(_printed_payload(pkt)).otherwise(
        (ip_payload - tcp_hdr).clip(0))
    frag_off = pl.when(is4).then(_int(ip4.field("3"))).otherwise(0)
    flags_txt = tcp.field("3").fill_null("")
    flags = sum((flags_txt.str.contains(k, literal=True).cast(pl.Int64) * v for k, v in _FLAG_BITS.items()),
                start=pl.lit(0, pl.Int64))
    size = _frame_size(pkt, ip_len)
    ctx = pl.col("ctx")
    node, link = _node_and_link(ctx)
    sack_nums = txt.str.extract(r"ns3::TcpOptionSack\(blocks: \d+,((?:\[\d+,\d+\])*)\)", 1)
    out = df.select(
        "frame",
        time=pl.col("t").cast(pl.Float64, strict=False),
        event=pl.col("ev").replace_strict(_EVENTS, return_dtype=pl.String),
        node=node,
        link=link,
        src=pl.when(is4).then(ip4.field("6")).when(is6).then(ip6.field("3")),
        dst=pl.when(is4).then(ip4.field("7")).when(is6).then(ip6.field("4")),
        sport=pl.when(has_tcp).then(_int(tcp.field("1"))).when(has_udp).then(_int(udp.field("2"))),
        dport=pl.when(has_tcp).then(_int(tcp.field("2"))).when(has_udp).then(_int(udp.field("3"))),
        proto=proto_num.replace_strict(_PROTO, default="other", return_dtype=pl.String),
        size=size,
        payload=pl.when(has_tcp).then(tcp_payload).when(has_udp).then((_int(udp.field("1")) - 8).clip(0))
        .otherwise(0),  # as the pcap reader: 0 for IP packets that are neither TCP nor UDP
        seq_raw=_int(tcp.field("4")),
        ack_raw=_int(tcp.field("5")),
        flags=pl.when(has_tcp).then(flags),
        win_raw=_int(tcp.field("6")),
        wscale=_int(txt.str.extract(r"ns3::TcpOptionWinScale\((\d+)\)", 1)).clip(0, 14),
        mss=_int(txt.str.extract(r"ns3::TcpOptionMSS\((?:MSS:)?(\d+)\)", 1)),
        ts_val=_int(txt.str.extract(r"ns3::TcpOptionTS\((\d+);", 1)),
        ts_ecr=_int(txt.str.extract(r"ns3::TcpOptionTS\(\d+;(\d+)\)", 1)),
        _sack=sack_nums.str.extract_all(r"\d+").list.eval(pl.element().cast(pl.Int64)),
        _is_ip=is4 | is6,
        _frag=(frag_off > 0) | ip4.field("4").str.contains("MF").fill_null(False),
        _ev=pl.col("ev"),
        _ctx=ctx,
        _id=_int(ip4.field("1")),
        _pnum=proto_num,
        _off=frag_off,
        _more=ip4.field("4").str.contains("MF").fill_null(False),
        _dlen=ip_payload,
        _thdr=pl.when(has_tcp).then(tcp_hdr),
    )
    return out


def _tcp_header_bytes(txt: pl.Expr) -> pl.Expr:
    """TCP header bytes from the printed options (20 + options, padded to 32-bit words, RFC 9293 §3.1)."""
    opt_bytes = sum(
        (txt.str.count_matches(rf"ns3::TcpOption{k}\(") * n for k, n in _OPT_BYTES.items()),
        start=pl.lit(0, pl.Int64),
    ) + _sum_numbers(
        txt, r"ns3::TcpOptionSack\(blocks: \d+", pl.element().str.extract(r"(\d+)$").cast(pl.Int64) * 8 + 2
    )
    return 20 + ((opt_bytes + 3) // 4) * 4


def _printed_payload(pkt: pl.Expr) -> pl.Expr:
    """The payload pieces ns-3 prints (``Payload (size=N)``, ``Payload Fragment [a:b]``), summed."""
    return (
        _sum_numbers(pkt, r"Payload \(size=\d+\)", pl.element().str.extract(r"(\d+)").cast(pl.Int64))
        + _sum_numbers(pkt, r"Payload Fragment \[\d+:\d+\]",
                       pl.element().str.extract(r":(\d+)").cast(pl.Int64)
                       - pl.element().str.extract(r"\[(\d+)").cast(pl.Int64))
    )


def _frame_size(pkt: pl.Expr, ip_len: pl.Expr) -> pl.Expr:
    """Bytes on the link: the IP length plus the link headers the line shows.

    PPP's 2-byte protocol field; Ethernet 14 + FCS 4, payload padded to 46 (CsmaNetDevice pads
    short frames; the padding prints as an extra "Payload (size=N)"); LLC/SNAP 8.
    """
    ppp = pkt.str.contains("ns3::PppHeader (", literal=True)
    eth = pkt.str.contains("ns3::EthernetHeader (", literal=True)
    fcs = pkt.str.contains("ns3::EthernetTrailer", literal=True)
    llc = pkt.str.contains("ns3::LlcSnapHeader", literal=True)
    return (
        pl.when(eth).then(pl.max_horizontal(ip_len, pl.lit(46)) + 14).otherwise(ip_len)
        + pl.when(ppp).then(2).otherwise(0) + pl.when(fcs).then(4).otherwise(0) + pl.when(llc).then(8).otherwise(0)
    )


def _node_and_link(ctx: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``node`` (the NodeList index) and ``link`` (``node/device``, ``node/if<i>`` or ``node/ip``) of a context."""
    node = ctx.str.extract(r"^/NodeList/(\d+)")
    dev = ctx.str.extract(r"/DeviceList/(\d+)")
    iface = ctx.str.extract(r"\((\d+)\)$")
    link = (
        pl.when(dev.is_not_null()).then(pl.concat_str([node, pl.lit("/"), dev]))
        .when(node.is_not_null() & iface.is_not_null()).then(pl.concat_str([node, pl.lit("/if"), iface]))
        .when(node.is_not_null()).then(pl.concat_str([node, pl.lit("/ip")]))
    )
    return node, link


_TCP_FIELDS = ("sport", "dport", "seq_raw", "ack_raw", "flags", "win_raw", "wscale", "mss", "ts_val", "ts_ecr",
               "_sack")


def _reassemble(rows: pl.DataFrame, log: WarningLog, counts: dict[str, int]) -> pl.DataFrame:
    """IPv4 fragments as the pcap reader treats them (``src/capture/reasm.rs``, Wireshark's rule).

    ``Ipv4L3Protocol::DoFragment`` sends each fragment through the device (and the IP-level
    trace) on its own, so each of a datagram's events (``+``, ``-``, ``r``, ``t``...) at one
    trace point prints one line per fragment, and only the offset-0 one carries the TCP header.
    A datagram is the lines of one (event, context, src, dst, protocol, id) from an offset-0
    line to the next; it is complete when its pieces, sorted by offset, follow each other from
    0 to a last (no MF) piece. Its latest line becomes the TCP/UDP row (header fields from the
    offset-0 line, payload = the whole datagram's), every other
    fragment line stays ``proto == "other"`` with no transport fields, as in the pcap reader.
    Overlapping pieces and datagrams past 65,535 bytes are refused with a warning. The lines are
    already in memory, so no buffer limit applies here. Unlike the pcap reader's, every line keeps
    its own ``size``: each fragment is a packet of its own in the device queue, whose occupancy in
    bytes (:mod:`tracekit.analysis.queue`) adds up the lines' sizes.
    """
    if not rows["_frag"].any():
        return rows.drop("_ev", "_ctx", "_id", "_pnum", "_off", "_more", "_dlen", "_thdr")
    rows = rows.with_row_index("_r")
    key = ["_ev", "_ctx", "src", "dst", "_pnum", "_id"]
    fr = (
        rows.filter(pl.col("_frag"))
        .select("_r", *key, "_off", "_more", "_dlen", "size")
        .with_columns(_inst=(pl.col("_off") == 0).cast(pl.Int64).cum_sum().over(key))
        .sort("_r")
    )
    grp = [*key, "_inst"]
    fr = fr.with_columns(_end=pl.col("_off") + pl.col("_dlen"))
    by = fr.sort("_off", "_r").with_columns(_prev=pl.col("_end").shift(1).over(grp))
    agg = by.group_by(grp).agg(
        _ok_chain=((pl.col("_prev").is_null() & (pl.col("_off") == 0)) | (pl.col("_off") == pl.col("_prev"))).all(),
        _overlap=(pl.col("_off") < pl.col("_prev")).any(),
        _last=(~pl.col("_more")).sum(),
        _end_last=pl.col("_end").filter(~pl.col("_more")).max(),
        _end_max=pl.col("_end").max(),
        _head=pl.col("_r").filter(pl.col("_off") == 0).first(),
        _done_r=pl.col("_r").max(),
        _n=pl.len(),
    )
    big = agg["_end_max"] + 20 > 65535
    ok = agg["_ok_chain"] & (agg["_last"] == 1) & (agg["_end_last"] == agg["_end_max"]) & ~big
    done = agg.filter(ok).select("_head", "_done_r", total=pl.col("_end_max"))
    bad_over = agg.filter(agg["_overlap"] & ~big)
    for code, sel, msg in (
        ("W-FRAG-OVERLAP", bad_over, "IPv4 fragments overlapping others (datagram refused, RFC 5722)"),
        ("W-FRAG-OVERSIZE", agg.filter(big), "IPv4 fragments past 65,535 bytes (datagram refused)"),
        ("W-FRAGMENT", agg.filter(~ok & ~agg["_overlap"] & ~big),
         "IPv4 fragments of datagrams never completed at their trace point (kept as 'other')"),
    ):
        if sel.height:
            log.add(code, msg, count=int(sel["_n"].sum()))
    if done.height:
        counts["reassembled"] = done.height
    head = rows.select(pl.col("_r").alias("_head"), *_TCP_FIELDS, "_thdr", "proto")
    done = done.join(head, on="_head", how="left").with_columns(
        payload=pl.when(pl.col("proto") == "tcp").then(pl.col("total") - pl.col("_thdr"))
        .when(pl.col("proto") == "udp").then(pl.col("total") - 8).otherwise(0).clip(0),
    ).drop("_head", "total", "_thdr").rename({"_done_r": "_r"})
    frag = pl.col("_frag")
    out = rows.with_columns(
        proto=pl.when(frag).then(pl.lit("other")).otherwise("proto"),
        payload=pl.when(frag).then(0).otherwise("payload"),
        **{c: pl.when(frag).then(None).otherwise(c) for c in _TCP_FIELDS},
    )
    out = out.update(done, on="_r")
    return out.drop("_r", "_frag", "_ev", "_ctx", "_id", "_pnum", "_off", "_more", "_dlen", "_thdr")


def _sack_pairs(df: pl.DataFrame) -> pl.DataFrame:
    """Turn the flat SACK number lists into ``sack_raw`` (List[Array[Int64, 2]]) pairs."""
    rows = df.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_r"), "_sack").filter(
        pl.col("_sack").list.len() >= 2)
    if rows.height == 0:
        return df.drop("_sack").with_columns(sack_raw=pl.lit(None, pl.List(pl.Array(pl.Int64, 2))))
    flat = rows.explode("_sack").with_columns(_i=pl.int_range(pl.len()).over("_r"))
    pairs = (
        flat.with_columns(_k=pl.col("_i") // 2, _side=pl.col("_i") % 2)
        .group_by("_r", "_k", maintain_order=True)
        .agg(pl.col("_sack").filter(pl.col("_side") == 0).first().alias("_l"),
             pl.col("_sack").filter(pl.col("_side") == 1).first().alias("_rr"))
        .drop_nulls()
        .group_by("_r", maintain_order=True)
        .agg(pl.concat_arr("_l", "_rr").alias("sack_raw"))
    )
    return (
        df.drop("_sack").with_row_index("_r").join(pairs, on="_r", how="left").sort("_r").drop("_r")
    )


def read(
    source: Source,
    *,
    limits: Limits = DEFAULT,
    strict: bool = False,
    name: str | None = None,
) -> Trace:
    """Read an ns-3 ASCII trace.

    Times are ns-3 simulation seconds as printed (6 significant digits, see
    ``meta["time_precision"]``); ``node`` is the NodeList index and ``link`` is
    ``"node/device"`` for device traces, ``"node/if<i>"`` for IP-level traces.

    Args:
        source: Path, bytes or binary stream (gzip/bz2/xz are decompressed with a cap).
        limits: Resource limits (line length and count, packets, flows).
        strict: Turn warnings (unparseable lines, truncated last line) into errors.
        name: Name for messages when ``source`` is bytes.

    Returns:
        The trace: one packet row per IP packet event.

    Raises:
        UnknownFormatError: empty input.
        CorruptTraceError: no line is an ns-3 trace line.
        LimitError: over ``max_lines``, ``max_packets`` or ``max_flows``.
    """
    loaded = load(source, limits)
    path = name or loaded.path
    log = WarningLog(path, strict)
    if not loaded.data:
        raise UnknownFormatError("empty file (0 bytes)", path=path, hint="the trace was not written; "
                                 "was Simulator::Destroy() reached so that the stream was flushed?")
    text, encoding = decode_text(loaded.data, path, log)
    lines = lines_of(text)
    ok = check_lines(lines, path, limits, log)
    counts: dict[str, int] = {"lines": int(lines.len())}
    df = _trace_lines(text, lines, ok, path, log, counts)
    if df.height > limits.max_packets:
        raise LimitError(f"{df.height:,} packet events, over the limit of {limits.max_packets:,}", path=path,
                         hint="raise max_packets in [limits]")
    rows = _parse(df)
    non_ip = int((~rows["_is_ip"]).sum())
    if non_ip:
        # ARP, ICMPv6 neighbour discovery without an IP header, LTE/Wi-Fi control frames...
        counts["non_ip"] = non_ip
    rows = _reassemble(rows.filter(pl.col("_is_ip")).drop("_is_ip"), log, counts)
    rows = _sack_pairs(rows)
    if rows.height > 1:
        back = int((rows["time"].diff() < 0).sum())
        if back:
            log.add("W-NONMONOTONIC", "times go backwards (file order kept)", count=back)
    rows = finish_tcp(rows)
    nflows = rows["flow"].n_unique() if rows.height else 0
    if nflows > limits.max_flows:
        raise LimitError(f"{nflows:,} connections, over the limit of {limits.max_flows:,}", path=path,
                         hint="raise max_flows in [limits]")
    if rows.height == 0:
        log.add("W-EMPTY", "the trace holds no IP packet events")
    links = sorted(rows["link"].drop_nulls().unique().to_list()) if rows.height else []
    meta = {
        "format": NAME,
        "tool": "ns-3",
        "paths": [path],
        "compression": loaded.compression,
        "encoding": encoding,
        "units": {"time": "s", "size": "bytes", "seq": "bytes"},
        # ns-3 prints Time::GetSeconds() with the stream's default precision.
        "time_precision": "6 significant digits (C++ default stream precision)",
        "time_origin": "simulation start",
        "links": links,
        "counts": counts,
    }
    return make_trace(rows, None, meta, log)


def _trace_lines(text: str, lines: pl.Series, ok: pl.Series, path: str, log: WarningLog,
                 counts: dict[str, int]) -> pl.DataFrame:
    """The trace lines split into ``frame`` (line number), ``ev``, ``t``, ``ctx`` and ``pkt``.

    Other lines are skipped (W-BADLINE), and so is a last line without a line end
    (W-TRUNCATED): ns-3 ends every line with std::endl, so such a line was cut short (a run
    that crashed or was killed before the stream was flushed), even if what is left looks valid.

    Args:
        ok: Lines within the line-length limit (:func:`tracekit.parsers._text.check_lines`).
        counts: ``bad_lines`` is set here when lines were skipped.

    Raises:
        CorruptTraceError: no line is an ns-3 trace line.
    """
    df = pl.DataFrame({"line": lines}).with_row_index("frame", offset=1)
    df = df.filter(ok & (pl.col("line").str.strip_chars() != ""))
    # Split on the first spaces (far cheaper than one regex over the whole line): the context is
    # there only when the third field starts with "/" (helpers using the *WithoutContext sinks omit it).
    parts = pl.col("line").str.splitn(" ", 4)
    f2, f3 = parts.struct.field("field_2"), parts.struct.field("field_3")
    has_ctx = f2.str.starts_with("/")
    df = df.select(
        "frame",
        ev=parts.struct.field("field_0"),
        t=parts.struct.field("field_1"),
        ctx=pl.when(has_ctx).then(f2),
        pkt=pl.when(has_ctx).then(f3).otherwise(pl.concat_str([f2, f3], separator=" ", ignore_nulls=True)),
    )
    tnum = pl.col("t").cast(pl.Float64, strict=False)
    df = df.with_columns(_ok=pl.col("ev").is_in(list(_EVENTS)) & tnum.is_finite().fill_null(False)
                         & pl.col("t").str.contains(rf"^{NUMBER}$").fill_null(False)
                         & (pl.col("pkt").str.starts_with("ns3::") | pl.col("pkt").str.starts_with("Payload"))
                         .fill_null(False))
    cut = not text.endswith(("\n", "\r")) and df.height > 0 and int(df["frame"][-1]) == lines.len()
    if cut:
        df = df.with_columns(_ok=pl.col("_ok") & (pl.col("frame") != lines.len()))
    bad = ~df["_ok"]
    if bad.any():
        nbad = int(bad.sum()) - int(cut)
        if nbad == df.height - int(cut) and nbad > 0:
            first = int(df["frame"].filter(bad)[0])
            raise CorruptTraceError("no line is an ns-3 ASCII trace line", path=path, line=first,
                                    hint="expected '<+|-|r|d|t> <time> <context> ns3::...' lines")
        if cut:
            log.add("W-TRUNCATED", "the last line has no line end: cut short, skipped", line=int(lines.len()),
                    hint="the simulation did not flush its trace stream; the lines before are kept")
        if nbad:
            first = int(df["frame"].filter(bad & (df["frame"] != lines.len() if cut else True))[0])
            log.add("W-BADLINE", f"{nbad:,} line(s) are not ns-3 trace lines (skipped)", count=nbad, line=first)
        counts["bad_lines"] = nbad
        df = df.filter(~bad)
    return df.drop("_ok")
