"""An independent decoder (dpkt, one packet at a time) against the vectorized fast path.

Every sample capture is decoded with dpkt's readers and link/IP/TCP classes; relative numbers
and scaled windows are computed here, plainly, per direction. Compared field by field on frame
numbers: addresses, ports, relative seq/ack, flags, window, payload length from the IP length
fields, and the MSS / window scale / timestamp / SACK options.
"""

from __future__ import annotations

import gzip
import socket
import struct
from pathlib import Path
from typing import Any

import dpkt
import polars as pl
import pytest
from conftest import SAMPLES, sample

import tracekit

TWO32 = 1 << 32


def _l3(linktype: int, buf: bytes) -> Any:
    """The IP packet of one frame, or None (non-IP)."""
    if linktype == 1:
        eth = dpkt.ethernet.Ethernet(buf)  # dpkt walks 802.1Q tags itself
        ip = eth.data
    elif linktype == 113:
        ip = dpkt.sll.SLL(buf).data
    elif linktype == 276:
        ip = dpkt.sll2.SLL2(buf).data
    elif linktype == 9:
        # ns-3 writes only the 2-byte PPP protocol field (dpkt.ppp expects address/control first)
        proto = struct.unpack("!H", buf[:2])[0]
        ip = dpkt.ip.IP(buf[2:]) if proto == 0x21 else dpkt.ip6.IP6(buf[2:]) if proto == 0x57 else None
    elif linktype in (101, 228, 229):
        ip = dpkt.ip.IP(buf) if buf[0] >> 4 == 4 else dpkt.ip6.IP6(buf)
    else:
        raise AssertionError(f"no dpkt decoding for link type {linktype} in this test")
    return ip if isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) else None


def _reader(path: Path) -> Any:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    import io

    fh = io.BytesIO(data)
    return dpkt.pcapng.Reader(fh) if data[:4] == b"\x0a\x0d\x0d\x0a" else dpkt.pcap.Reader(fh)


def _defragment(ip: Any, pending: dict[tuple, tuple[dict[int, bytes], list[int]]]) -> tuple[Any, int] | None:
    """An IPv4 fragment's datagram, plainly from its bytes, at the fragment that completes it.

    Returns:
        (the TCP segment, its length) when ``ip`` completes a TCP datagram, else None.
    """
    key = (ip.src, ip.dst, ip.p, ip.id)
    parts, total = pending.setdefault(key, ({}, []))
    off = ip.offset * 8  # dpkt gives the field, in 8-byte units
    parts[off] = bytes(ip.data)  # the first fragment's data is a (partial) dpkt TCP object
    if not ip.mf:
        total.append(off + len(parts[off]))
    at = 0
    for o in sorted(parts):
        if o != at:
            return None
        at += len(parts[o])
    if total != [at]:
        return None
    del pending[key]
    data = b"".join(parts[o] for o in sorted(parts))
    return (dpkt.tcp.TCP(data), len(data)) if ip.p == 6 else None


def dpkt_rows(path: Path) -> pl.DataFrame:
    """One row per TCP frame, decoded by dpkt, with relative numbers computed here.

    IPv4 fragments are put together here from their bytes (dpkt does not reassemble); the
    segment belongs to the frame that completes its datagram, as in Wireshark.
    """
    r = _reader(path)
    lt = r.datalink()
    rows: list[dict[str, Any]] = []
    pending: dict[tuple, dict[int, bytes]] = {}
    for frame, (_ts, buf) in enumerate(r, start=1):
        ip = _l3(lt, buf)
        if ip is None:
            continue
        v6 = isinstance(ip, dpkt.ip6.IP6)
        if not v6 and (ip.mf or ip.offset):
            done = _defragment(ip, pending)
            if done is None:
                continue
            tcp, l4len = done
        elif isinstance(ip.data, dpkt.tcp.TCP):
            tcp = ip.data
            # payload from the length fields (headers-only captures cut the bytes, not the lengths)
            l4len = (ip.plen - (len(ip) - 40 - len(ip.data))) if v6 else ip.len - ip.hl * 4
        else:
            continue
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        opts = dict.fromkeys(("mss", "wscale", "ts_val", "ts_ecr"))
        sack: list[tuple[int, int]] = []
        for kind, val in dpkt.tcp.parse_opts(tcp.opts):
            if kind == dpkt.tcp.TCP_OPT_MSS and len(val) == 2:
                opts["mss"] = struct.unpack("!H", val)[0]
            elif kind == dpkt.tcp.TCP_OPT_WSCALE and len(val) == 1:
                opts["wscale"] = val[0]
            elif kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(val) == 8:
                opts["ts_val"], opts["ts_ecr"] = struct.unpack("!II", val)
            elif kind == dpkt.tcp.TCP_OPT_SACK:
                sack += [struct.unpack("!II", val[i:i + 8]) for i in range(0, len(val), 8)]
        rows.append({
            "frame": frame, "src": socket.inet_ntop(fam, ip.src), "dst": socket.inet_ntop(fam, ip.dst),
            "sport": tcp.sport, "dport": tcp.dport, "seq_raw": tcp.seq, "ack_raw": tcp.ack,
            "flags": tcp.flags, "win_raw": tcp.win, "payload": l4len - tcp.off * 4, "sack_raw": sack, **opts,
        })
    return _relative(rows)


def _relative(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Per-direction bases (SYN seq, else first seq - 1, else the other side's first ack - 1)."""
    base: dict[tuple, int] = {}
    wscale: dict[tuple, int | None] = {}
    syn_seen: set[tuple] = set()
    for r in rows:
        me = (r["src"], r["sport"], r["dst"], r["dport"])
        peer = (r["dst"], r["dport"], r["src"], r["sport"])
        syn = bool(r["flags"] & dpkt.tcp.TH_SYN)
        base.setdefault(me, r["seq_raw"] if syn else r["seq_raw"] - 1)
        if r["flags"] & dpkt.tcp.TH_ACK:
            base.setdefault(peer, r["ack_raw"] - 1)
        if syn:
            syn_seen.add(me)
            wscale.setdefault(me, r["wscale"])
    out = []
    for r in rows:
        me = (r["src"], r["sport"], r["dst"], r["dport"])
        peer = (r["dst"], r["dport"], r["src"], r["sport"])
        mine, theirs = wscale.get(me), wscale.get(peer)
        # scaled by the sender's own shift unless the peer's SYN was seen without the option
        scaled = mine is not None and not (peer in syn_seen and theirs is None)
        syn = bool(r["flags"] & dpkt.tcp.TH_SYN)
        out.append({
            **{k: r[k] for k in ("frame", "src", "dst", "sport", "dport", "flags", "payload", "mss", "wscale",
                                 "ts_val", "ts_ecr")},
            "seq": (r["seq_raw"] - base[me]) % TWO32,
            "ack": (r["ack_raw"] - base[peer]) % TWO32 if r["flags"] & dpkt.tcp.TH_ACK else None,
            "win": r["win_raw"] << (min(mine, 14) if scaled and not syn else 0),  # type: ignore[type-var]
            "sack": [[(a - base[peer]) % TWO32, (b - base[peer]) % TWO32] for a, b in r["sack_raw"]] or None,
        })
    return pl.DataFrame(out, schema_overrides={"frame": pl.UInt64, "sack": pl.List(pl.List(pl.Int64))},
                        infer_schema_length=None)


def _captures() -> list[Path]:
    # not offload/: dpkt takes an IPv4 total length of 0 (TSO) as is, and its reader gives no
    # original length to take the length from (tests/test_offload.py compares it with tshark)
    # samples/field: tunnels, link types and damaged lengths dpkt does not decode the same way, on
    # purpose; tests/test_field_decode.py compares them with tshark
    return sorted(p for p in SAMPLES.glob("**/*.pcap*") if p.is_file() and p.parent.name not in ("offload", "field"))


@pytest.mark.parametrize("path", _captures(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_fast_path_agrees_with_dpkt(path: Path) -> None:
    ref = dpkt_rows(path)
    ours = (
        tracekit.read(path).packets.filter(pl.col("proto") == "tcp")
        .with_columns(pl.col("src", "dst").cast(pl.String), pl.col("seq", "ack") % TWO32,
                      pl.col("sack").cast(pl.List(pl.List(pl.Int64))))
        .with_columns(pl.col("sack").list.eval(pl.element().list.eval(pl.element() % TWO32)))
    )
    assert ours["frame"].to_list() == ref["frame"].to_list()
    for col in ("src", "dst", "sport", "dport", "seq", "ack", "flags", "win", "payload", "mss", "wscale", "ts_val",
                "ts_ecr", "sack"):
        a, b = ours[col], ref[col]
        if col != "sack":
            a, b = a.cast(pl.Int64) if a.dtype.is_integer() else a, b.cast(pl.Int64) if b.dtype.is_integer() else b
        same = (
            a.eq_missing(b)
            if col != "sack"
            else pl.Series([x == y for x, y in zip(a.to_list(), b.to_list(), strict=False)])
        )
        assert same.all(), f"{path.name}: {col} differs at frames {ours['frame'].filter(~same).head(5).to_list()}"
    assert ours["sack"].drop_nulls().len() == ref["sack"].drop_nulls().len()


def test_the_comparison_sees_sack_blocks_and_options() -> None:
    ref = dpkt_rows(sample("linux", "bulk_lossy.pcap"))
    assert ref["sack"].drop_nulls().len() > 10
    assert ref["ts_val"].null_count() == 0
    assert ref["mss"].drop_nulls().to_list() == [1460, 1460]
