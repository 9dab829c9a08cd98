"""ns-2 connections: flows, directions and TCP numbers in real-TCP terms (shared by wired and wireless).

ns-2's one-way TCP agents (Tahoe, Reno, NewReno, Sack1, Vegas, …) count **packets**: the data
``seqno`` is a segment number and the sink's ACK ``seqno`` is the highest in-order segment received
(not the next expected one). tracekit's schema counts **bytes** the way Wireshark shows real TCP
(relative numbers, SYN = 0, first data byte = 1), so this module converts:

* with a SYN (``Agent/TCP set syn_ true``, the default since 2001: seq 0 is a 40-byte packet),
  data segment *n* covers bytes ``[(n-1)*seg + 1, n*seg + 1)``; without one, segment 0 is data and
  *n* covers ``[n*seg + 1, (n+1)*seg + 1)``;
* an ACK of segment *a* acknowledges everything up to it, so its byte ack is the next expected
  byte: ``(a - base + 1)*seg + 1`` (base = 1 with a SYN, else 0); the ACK of the SYN is 1, as in TCP;
* flags (ns-2 one-way TCP has no real header flags): the SYN gets ``SYN``; the sink's ACKs of the
  SYN sent before any data left the sender get ``SYN|ACK`` (ns-2 has no handshake, but that ACK is
  what lets the sender start, so handshake RTTs come out right); data segments get ``ACK|PSH``
  (``ack`` = 1: the sink never sends data); other sink packets ``ACK``. The trace's flag characters
  ``C`` (ECN echo) and ``A`` (congestion action, ns-2's CWR) add ``ECE``/``CWR``.

``Agent/TCP/FullTcp`` numbers **bytes** (the passive side even labels its data ``ack``); such a
flow is recognised by a payload-less ``tcp`` packet after the SYN (the handshake's third ACK) or by
data seqnos spread far wider than their count, and made relative per direction. Its ACK numbers
are only in the trace with ``Trace set show_tcphdr_ 1`` (which also gives the real header flags).

Flows are keyed on the two ``node.port`` endpoints (not on ``fid``: a FullTcp listener keeps its own
``fid_``, usually 0, so fid would split its connection in two). ``dir`` 0 is the data sender: the
endpoint that sends ptype ``tcp`` (else the destination of the ``ack`` packets, else the first sender).

Everything that depends only on a line's link, endpoints and packet type is computed once per
distinct combination ("combo") and joined back, which keeps a million-line trace well under a second.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit.schema import ACK, CWR, ECE, PSH, SYN

#: ns-2 packet types carried by TCP agents (one-way senders ``tcp``, sinks ``ack``).
TCP_PTYPES = ("tcp", "ack")
#: Packet types of UDP-style agents (Agent/UDP carrying CBR, Exponential, Pareto traffic).
UDP_PTYPES = ("udp", "cbr", "exp", "pareto")
#: tcpip_base_hdr_size_ (ns-default.tcl), used when the trace shows no payload-less TCP packet.
DEFAULT_TCP_HEADER = 40


def proto_class() -> pl.Expr:
    """``tcp`` / ``udp`` / ``other`` from the ``ptype`` column."""
    return (
        pl.when(pl.col("ptype").is_in(TCP_PTYPES)).then(pl.lit("tcp"))
        .when(pl.col("ptype").is_in(UDP_PTYPES)).then(pl.lit("udp"))
        .otherwise(pl.lit("other"))
    )


def ecn_bits(col: str = "_flagstr") -> pl.Expr:
    """ECE/CWR bits from ns-2's 7-character flag field (``C`` at 0 = ECN echo, ``A`` at 3 = CWR)."""
    f = pl.col(col)
    return (
        pl.when(f.str.slice(0, 1) == "C").then(ECE).otherwise(0)
        | pl.when(f.str.slice(3, 1) == "A").then(CWR).otherwise(0)
    ).cast(pl.UInt8)


def assign_flows(combos: pl.DataFrame) -> pl.DataFrame:
    """Add ``flow`` (UInt32, by first appearance) and ``dir`` (Int8, 0 = data sender) to combos.

    Args:
        combos: One row per distinct line shape with ``_first`` (first row index it occurs on),
            ``_ep_src``/``_ep_dst`` (``node.port``), ``proto`` (tcp/udp/other) and ``ptype``.

    Returns:
        ``combos`` with ``flow`` and ``dir`` (null for ``other``).
    """
    half = (
        combos.filter(pl.col("proto") != "other")
        .group_by("_ep_src", "_ep_dst", "proto")
        .agg(
            pl.col("_first").min().alias("_hfirst"),
            pl.col("_first").filter(pl.col("ptype") == "tcp").min().alias("_first_tcp"),
            pl.col("_first").filter(pl.col("ptype") == "ack").min().alias("_first_ack"),
        )
        .with_columns(
            _key=pl.concat_str(
                [pl.col("proto"), pl.min_horizontal("_ep_src", "_ep_dst"), pl.max_horizontal("_ep_src", "_ep_dst")],
                separator="#",
            )
        )
    )
    if half.is_empty():
        return combos.with_columns(flow=pl.lit(None, pl.UInt32), dir=pl.lit(None, pl.Int8))
    # sender: first src of a `tcp` packet, else the destination of the `ack`s, else the first src
    s_tcp = (half.filter(pl.col("_first_tcp").is_not_null()).sort("_first_tcp")
             .group_by("_key", maintain_order=True).agg(pl.col("_ep_src").first().alias("_s_tcp")))
    s_ack = (half.filter(pl.col("_first_ack").is_not_null()).sort("_first_ack")
             .group_by("_key", maintain_order=True).agg(pl.col("_ep_dst").first().alias("_s_ack")))
    keys = (
        half.sort("_hfirst").group_by("_key", maintain_order=True)
        .agg(pl.col("_hfirst").first().alias("_kfirst"), pl.col("_ep_src").first().alias("_s_first"))
        .sort("_kfirst")
        .with_row_index("flow")
        .join(s_tcp, on="_key", how="left").join(s_ack, on="_key", how="left")
        .select(pl.col("flow").cast(pl.UInt32), "_key", pl.coalesce("_s_tcp", "_s_ack", "_s_first").alias("_sender"))
    )
    half = half.join(keys, on="_key").select(
        "_ep_src", "_ep_dst", "proto", "flow",
        dir=pl.when(pl.col("_ep_src") == pl.col("_sender")).then(pl.lit(0, pl.Int8)).otherwise(pl.lit(1, pl.Int8)),
    )
    return combos.join(half, on=["_ep_src", "_ep_dst", "proto"], how="left", maintain_order="left")


def tcp_numbers(df: pl.DataFrame, header_bytes: int | None = None) -> tuple[pl.DataFrame, dict[int, dict[str, Any]]]:
    """Add ``seq``, ``ack``, ``flags``, ``payload`` in real-TCP terms (see the module docstring).

    Args:
        df: Rows with ``flow``, ``dir``, ``proto``, ``ptype``, ``time``, ``size``, ``pkt_seq``,
            ``_at_src`` (observed at the packet's source node), ``_ecn`` (UInt8 ECE/CWR bits) and,
            with ``show_tcphdr_`` columns, ``_hdr_ack`` and ``_hdr_flags`` (Int64, null where absent).
        header_bytes: TCP/IP header bytes per data packet; None = from the trace (the SYN and the
            sink's ACKs show ``tcpip_base_hdr_size_``, 40). Pass 50 for ``timestamps_ true`` runs:
            the 10-byte option is added to data packets only, so the trace cannot reveal it.

    Returns:
        The frame, and per-flow facts for ``meta`` (kind, header bytes, segment size, SYN seen).
    """
    is_tcp = (pl.col("proto") == "tcp") & pl.col("flow").is_not_null()
    t = df.filter(is_tcp).select("flow", "dir", "ptype", "time", "size", "pkt_seq", "_at_src")
    if t.is_empty():
        return df.with_columns(
            seq=pl.lit(None, pl.Int64), ack=pl.lit(None, pl.Int64), flags=pl.lit(None, pl.UInt8),
            payload=pl.when(pl.col("proto") == "udp").then(pl.col("size")).cast(pl.Int64),
        ), {}
    n_flows = int(df["flow"].max()) + 1  # type: ignore[arg-type]
    facts = _flow_facts(t, header_bytes)
    table = pl.DataFrame({"flow": pl.Series(range(n_flows), dtype=pl.UInt32)}).join(facts, on="flow", how="left")
    idx = df["flow"]
    look = {c: table[c].gather(idx) for c in ("_hdr", "_syn", "_full", "_tdata")}
    df = df.with_columns(**look)
    t = t.with_columns(_hdr=table["_hdr"].gather(t["flow"]), _syn=table["_syn"].gather(t["flow"]))
    table = _with_segment_size(t, table)
    dtab = _direction_bases(t, n_flows)
    i_own = (df["flow"].cast(pl.Int64) * 2 + df["dir"].cast(pl.Int64))
    i_other = (df["flow"].cast(pl.Int64) * 2 + 1 - df["dir"].cast(pl.Int64))
    df = df.with_columns(
        _seg=table["_seg"].gather(idx),
        _base=dtab["_base"].gather(i_own),
        _syn_d=dtab["_syn_d"].gather(i_own),
        _obase=dtab["_base"].gather(i_other),
    )
    df = df.with_columns(_synack=pl.col("pkt_id").is_in(_synack_ids(df).implode()).fill_null(False))
    df = df.with_columns(**_number_exprs("_hdr_flags" in df.columns))
    info = {
        int(r["flow"]): {
            "kind": "FullTcp" if r["_full"] else "one-way",
            "header_bytes": r["_hdr"],
            "segment_size": r["_seg"],
            "syn": None if r["_full"] else bool(r["_syn"]),
        }
        for r in table.filter(pl.col("_hdr").is_not_null()).iter_rows(named=True)
    }
    return df.drop("_hdr", "_syn", "_full", "_tdata", "_seg", "_base", "_syn_d", "_obase", "_synack"), info


def _flow_facts(t: pl.DataFrame, header_bytes: int | None) -> pl.DataFrame:
    """Per flow: header bytes (``_hdr``), SYN seen (``_syn``), FullTcp (``_full``), first data time (``_tdata``).

    Args:
        t: The TCP rows (``flow, dir, ptype, time, size, pkt_seq``).
        header_bytes: See :func:`tcp_numbers`.
    """
    d0 = pl.col("dir") == 0
    data_pt = pl.col("ptype") != "ack"
    ps = pl.col("pkt_seq")
    facts = t.group_by("flow").agg(
        pl.col("size").filter((d0 & data_pt & (ps == 0)) | ~data_pt).min().alias("_hmin"),
        pl.col("size").filter(d0 & data_pt & (ps > 0)).min().alias("_dmin"),
        pl.col("size").filter(d0 & data_pt & (ps == 0)).min().alias("_s0min"),
        pl.col("time").filter(d0 & data_pt & (ps > 0)).min().alias("_tdata"),
        ps.filter(d0 & data_pt & (ps > 0)).n_unique().alias("_nuniq"),
        (ps.filter(d0 & data_pt & (ps > 0)).max() - ps.filter(d0 & data_pt & (ps > 0)).min()).alias("_span"),
    )
    if header_bytes is not None:
        facts = facts.with_columns(_hdr=pl.lit(header_bytes, pl.Int64))
    else:
        # A payload-less packet (SYN, pure ACK) shows tcpip_base_hdr_size_; never take a value
        # that would leave the data packets without payload.
        facts = facts.with_columns(
            _hdr=pl.when(
                pl.col("_hmin").is_not_null() & (pl.col("_dmin").is_null() | (pl.col("_hmin") < pl.col("_dmin")))
            )
            .then(pl.col("_hmin"))
            .otherwise(pl.lit(DEFAULT_TCP_HEADER))
            .cast(pl.Int64)
        )
    return facts.with_columns(
        _syn=pl.col("_s0min").is_not_null() & (pl.col("_s0min") <= pl.col("_hdr")),
        # FullTcp: a payload-less `tcp` packet after the SYN (the handshake's ACK), or byte-sized
        # gaps between data seqnos (one-way TCP numbers packets 1, 2, 3, …).
        _full=(pl.col("_dmin") <= pl.col("_hdr")).fill_null(False)
        | ((pl.col("_nuniq") >= 2) & (pl.col("_span") >= 2 * pl.col("_nuniq"))).fill_null(False),
    )


def _with_segment_size(t: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """Add ``_seg`` to the per-flow table: the most common data payload at the sender (all equal
    for one-way TCP), else the smallest one seen anywhere."""
    d0 = pl.col("dir") == 0
    cand = t.filter(d0 & (pl.col("ptype") != "ack") & (pl.col("size") > pl.col("_hdr"))
                    & ((pl.col("pkt_seq") > 0) | ~pl.col("_syn")))
    seg_mode = (
        cand.filter("_at_src").group_by("flow", "size", "_hdr").agg(pl.len().alias("_n"))
        .sort("_n", "size", descending=True).group_by("flow", maintain_order=True).first()
        .select("flow", (pl.col("size") - pl.col("_hdr")).alias("_seg"))
    )
    seg_min = cand.group_by("flow").agg((pl.col("size").min() - pl.col("_hdr").first()).alias("_seg_any"))
    return (
        table.join(seg_mode, on="flow", how="left").join(seg_min, on="flow", how="left")
        .with_columns(_seg=pl.coalesce("_seg", "_seg_any").cast(pl.Int64))
    )


def _direction_bases(t: pl.DataFrame, n_flows: int) -> pl.DataFrame:
    """FullTcp sequence bases per direction, indexed by ``2·flow + dir``: the SYN's seqno, else one
    before the first seqno seen (``_base``; ``_syn_d``: the direction's SYN was seen)."""
    ps = pl.col("pkt_seq")
    dirs = (
        t.group_by("flow", "dir")
        .agg(ps.min().alias("_min"), ps.filter(pl.col("size") <= pl.col("_hdr")).min().alias("_min0"))
        .with_columns(
            _syn_d=(pl.col("_min0") == pl.col("_min")).fill_null(False),
            _base=pl.when(pl.col("_min0") == pl.col("_min")).then(pl.col("_min")).otherwise(pl.col("_min") - 1),
        )
        .with_columns(_i=pl.col("flow").cast(pl.Int64) * 2 + pl.col("dir").cast(pl.Int64))
    )
    return pl.DataFrame({"_i": pl.Series(range(2 * n_flows), dtype=pl.Int64)}).join(dirs, on="_i", how="left")


def _synack_ids(df: pl.DataFrame) -> pl.Series:
    """The sink's ACKs of the SYN sent before any data left, by packet id (``pkt_id``).

    Per packet, so that every event of that ACK, including its arrival at the sender at the
    instant data starts, is the SYN-ACK.
    """
    return (
        df.filter((pl.col("ptype") == "ack") & (pl.col("pkt_seq") == 0) & pl.col("_syn").fill_null(False)
                  & pl.col("pkt_id").is_not_null())
        .group_by("pkt_id").agg(pl.col("time").min().alias("_t0"), pl.col("_tdata").first())
        .filter(pl.col("_tdata").is_null() | (pl.col("_t0") < pl.col("_tdata")))["pkt_id"]
    )


def _number_exprs(has_hdr: bool) -> dict[str, pl.Expr]:
    """The ``seq``/``ack``/``flags``/``payload`` expressions over the per-row flow facts."""
    tcp = (pl.col("proto") == "tcp") & pl.col("flow").is_not_null()
    ps = pl.col("pkt_seq")
    ack_pt = pl.col("ptype") == "ack"
    d0 = pl.col("dir") == 0
    # one-way TCP (packet numbers)
    seg = pl.col("_seg").fill_null(0)
    base = pl.col("_syn").cast(pl.Int64)
    is_syn = ~ack_pt & pl.col("_syn") & (ps == 0)
    is_synack = ack_pt & pl.col("_syn") & (ps == 0) & pl.col("_synack")
    ow_seq = pl.when(is_syn).then(0).when(~ack_pt).then((ps - base) * seg + 1).when(is_synack).then(0).otherwise(1)
    ow_ack = pl.when(is_syn).then(None).when(~ack_pt).then(1).otherwise((ps - base + 1) * seg + 1)
    ow_payload = pl.when(is_syn | ack_pt).then(0).otherwise(seg)
    ow_flags = pl.when(is_syn).then(SYN).when(is_synack).then(SYN | ACK).when(~ack_pt).then(ACK | PSH).otherwise(ACK)
    # FullTcp (byte numbers)
    f_payload = (pl.col("size") - pl.col("_hdr")).clip(lower_bound=0)
    f_first = pl.col("_syn_d").fill_null(False) & (ps == pl.col("_base")) & (f_payload == 0)
    f_guess = (
        pl.when(f_first & d0).then(SYN).when(f_first).then(SYN | ACK).when(f_payload > 0).then(ACK | PSH).otherwise(ACK)
    )
    if has_hdr:
        hf = pl.col("_hdr_flags")
        f_flags = pl.when(hf.is_not_null()).then(hf & 0xFF).otherwise(f_guess)
        f_ack: pl.Expr = pl.when(hf.is_not_null() & ((hf & ACK) != 0) & (pl.col("_hdr_ack") >= 0)).then(
            pl.col("_hdr_ack") - pl.col("_obase"))
    else:
        f_flags = f_guess
        f_ack = pl.lit(None, pl.Int64)
    full = pl.col("_full").fill_null(False)
    ecn = pl.col("_ecn").fill_null(0).cast(pl.Int64)
    return {
        "seq": pl.when(~tcp).then(None).when(full).then(ps - pl.col("_base")).otherwise(ow_seq).cast(pl.Int64),
        "ack": pl.when(~tcp).then(None).when(full).then(f_ack).otherwise(ow_ack).cast(pl.Int64),
        "flags": pl.when(~tcp).then(None).when(full).then(f_flags.cast(pl.Int64) | ecn)
        .otherwise(ow_flags.cast(pl.Int64) | ecn).cast(pl.UInt8),
        "payload": pl.when(pl.col("proto") == "udp").then(pl.col("size")).when(~tcp).then(None)
        .when(full).then(f_payload).otherwise(ow_payload).cast(pl.Int64),
    }
