"""From decoded capture rows (:class:`tracekit.parsers._decode.Rows`) to the packets frame.

The frame is built once, in the schema's column order, mostly from the decoded numpy columns
themselves: polars takes a numpy array of its own dtype without copying, so a column without
nulls costs no memory beyond its array. Only columns with nulls are copied (the validity mask).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.parsers._address import address_text
from tracekit.parsers._decode import Rows
from tracekit.parsers._tcp import SACK, Conn, connections, masked, sack_column
from tracekit.schema import EVENT, PROTO

_NONE = np.empty(0, dtype=np.uint8)  # stands for a consumed column (its memory is released)


def addresses(rows: Rows) -> tuple[pl.Series, pl.Series, np.ndarray, np.ndarray]:
    """Address columns (Categorical) and integer ids (same address -> same id in src and dst).

    The reader numbers the distinct addresses (IPv4 ascending, then IPv6) and gives every row
    their ids; only the distinct ones are turned into text here (one ``ipaddress`` call each).

    Returns:
        (src, dst, src ids, dst ids), ids as uint32.
    """
    texts = [address_text(True, 0, v) for v in rows.addr4.tolist()]
    hi, lo = rows.addr6
    texts += [address_text(False, h, low) for h, low in zip(hi.tolist(), lo.tolist(), strict=True)]
    if not len(rows):
        empty = pl.Series([], dtype=pl.Categorical)
        return empty, empty, rows.src_id, rows.dst_id
    names = pl.Series(texts, dtype=pl.String).cast(pl.Categorical)
    return names.gather(rows.src_id), names.gather(rows.dst_id), rows.src_id, rows.dst_id


def frame(rows: Rows) -> tuple[pl.DataFrame, int]:
    """The packets frame of decoded capture rows (columns the schema has and captures fill).

    Every intermediate (address ids, connection groups, raw TCP fields) is dropped as soon as
    it is used: at a million rows each is 1-9 MB.

    Args:
        rows: The decoded rows; their arrays are handed over to the frame (do not reuse them).

    Returns:
        (the frame, in the schema's column order, the number of connections).
    """
    n = len(rows)
    src, dst, src_id, dst_id = addresses(rows)
    rows.src_id = rows.dst_id = _NONE
    is_tcp = rows.proto == 0
    l4 = rows.ports
    blocks = _sack_blocks(rows)
    c = connections(src_id, dst_id, rows.sport, rows.dport, l4, is_tcp, rows.proto == 1, rows.flags, rows.seq_raw,
                    rows.ack_raw, rows.win_raw, rows.wscale, rows.wscale_ok, blocks)
    del src_id, dst_id
    if c is not None:
        rows.seq_raw = rows.ack_raw = rows.win_raw = _NONE
    sack = _sack(n, blocks, c)
    del blocks
    cols: dict[str, pl.Series] = {
        "frame": pl.Series(rows.frame),
        "time": pl.Series(rows.time),
        "event": pl.Series(["capture"], dtype=EVENT).new_from_index(0, n) if n else pl.Series([], dtype=EVENT),
    }
    nflows = 0 if c is None else c.nflows
    if c is None:
        cols["flow"] = _nulls(n, pl.UInt32)
        cols["dir"] = _nulls(n, pl.Int8)
    else:
        cols["flow"] = masked(c.flow, l4, pl.UInt32)
        cols["dir"] = masked(c.direction, l4, pl.Int8)
    cols["src"], cols["dst"] = src, dst
    cols["sport"] = masked(rows.sport, l4, pl.Int32)
    cols["dport"] = masked(rows.dport, l4, pl.Int32)
    cols["proto"] = pl.Series(["tcp", "udp", "other"], dtype=PROTO).gather(rows.proto)
    cols["size"] = pl.Series(rows.size)
    cols["payload"] = pl.Series(rows.payload)
    if c is None:
        for k in ("seq", "ack"):
            cols[k] = _nulls(n, pl.Int64)
        cols["win"] = masked(rows.win_raw.astype(np.int64), is_tcp, pl.Int64)
    else:
        cols["seq"] = masked(c.seq, is_tcp, pl.Int64)
        cols["ack"] = masked(c.ack, c.has_ack, pl.Int64)
        cols["win"] = masked(c.win, is_tcp, pl.Int64)
    del c
    cols["flags"] = masked(rows.flags, is_tcp, pl.UInt8)
    cols["mss"] = masked(rows.mss, rows.mss_ok, pl.UInt16)
    cols["wscale"] = masked(rows.wscale, rows.wscale_ok, pl.UInt8)
    cols["ts_val"] = masked(rows.ts_val, rows.ts_ok, pl.UInt32)
    cols["ts_ecr"] = masked(rows.ts_ecr, rows.ts_ok, pl.UInt32)
    cols["sack"] = sack
    cols["caplen"] = pl.Series(rows.caplen)
    cols["ttl"] = pl.Series(rows.ttl)
    cols["tunnel"], cols["outer_src"], cols["outer_dst"] = _tunnels(n, rows)
    return pl.DataFrame([s.alias(k) for k, s in cols.items()]), nflows


def _tunnels(n: int, rows: Rows) -> tuple[pl.Series, pl.Series, pl.Series]:
    """The ``tunnel``, ``outer_src`` and ``outer_dst`` columns (null on rows without a tunnel)."""
    if not rows.outer:
        return _nulls(n, pl.Categorical), _nulls(n, pl.Categorical), _nulls(n, pl.Categorical)
    r, is4, code, s_hi, s_lo, d_hi, d_lo = (np.concatenate(c) for c in zip(*rows.outer, strict=False))
    text = address_text

    out: list[list[str | None]] = [[None] * n for _ in range(3)]
    for i, row in enumerate(r.tolist()):
        out[0][row] = rows.tunnel_names[int(code[i])]
        out[1][row] = text(bool(is4[i]), int(s_hi[i]), int(s_lo[i]))
        out[2][row] = text(bool(is4[i]), int(d_hi[i]), int(d_lo[i]))
    return tuple(pl.Series(c, dtype=pl.String).cast(pl.Categorical) for c in out)  # type: ignore[return-value]


def _nulls(n: int, dtype: pl.DataType | type[pl.DataType]) -> pl.Series:
    """A column of ``n`` nulls."""
    return pl.repeat(None, n, dtype=dtype, eager=True)


def _sack_blocks(rows: Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The SACK blocks the option walk collected as (row, left, right), by row (a row's blocks
    in option order)."""
    if not rows.sack:
        return None
    r, left, right = (np.concatenate(c) for c in zip(*rows.sack, strict=False))
    order = np.argsort(r, kind="stable")
    return r[order], left[order], right[order]


def _sack(n: int, blocks: tuple[np.ndarray, np.ndarray, np.ndarray] | None, c: Conn | None) -> pl.Series:
    """The ``sack`` column from the blocks and their relative edges."""
    if c is None or blocks is None:
        return _nulls(n, SACK)
    col = sack_column(n, blocks[0], c.sack_left, c.sack_right)
    assert isinstance(col, pl.Series)
    return col
