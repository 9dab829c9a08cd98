"""Connection bookkeeping shared by every packet reader: flows, directions, relative numbers.

Readers decode raw header fields; :func:`finish_tcp` turns them into the schema's
connection view (the capture reader calls :func:`connections` directly). The rules run in
the compiled core, one per-connection state machine fed the rows in capture order
(``src/state/conn.rs``, ``tracekit._core.tcp_connections``):

* ``flow``: one id per connection (both directions), numbered 0, 1, ... in order of first
  appearance, as Wireshark's ``tcp.stream`` / ``udp.stream``. Like Wireshark, a *pure SYN*
  whose sequence number differs from the one its sender already used on that port pair
  starts a new connection (the port pair was reused, e.g. after a FIN or RST); a
  retransmitted SYN (same sequence number) does not.
* ``dir``: 0 for packets from the initiator (the sender of the first pure SYN, else the
  first packet's sender), 1 for the other way.
* ``seq``/``ack``/``sack``: relative to the direction's initial sequence number. Like
  Wireshark, the base is the SYN's sequence number when the SYN was captured, and
  ``first seq - 1`` otherwise (or ``ack - 1`` of the other side's first ACK, when that comes
  first), so the first data byte is 1 either way. Unlike Wireshark's 32-bit ``tcp.seq``,
  values are unwrapped over 2^32 within each direction: they keep growing past 4 GiB, and
  data from before the base is negative rather than near 2^32.
* ``win``: the advertised window in bytes, shifted by the sender's window scale (from its
  SYN); SYN segments are never scaled. As in Wireshark, scaling is off for both directions
  when either SYN was captured without the option (RFC 7323 §2.2: both must offer it), and
  assumed agreed when the other side's SYN was not captured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.schema import ACK

_RAW = ("seq_raw", "ack_raw", "win_raw", "sack_raw")
SACK = pl.List(pl.Array(pl.Int64, 2))
_NO_ROWS = np.zeros(0, dtype=np.int64)


@dataclass
class Conn:
    """Connections of a capture's rows and their relative TCP numbers (meaningful where the
    masks say so: ``flow``/``direction`` where ``l4``, ``seq``/``win`` where ``tcp``, ``ack``
    where ``has_ack``)."""

    flow: np.ndarray  # uint32
    direction: np.ndarray  # int8
    l4: np.ndarray  # bool: TCP/UDP row with addresses and ports
    tcp: np.ndarray  # bool: TCP row of a connection
    nflows: int
    seq: np.ndarray  # int64
    ack: np.ndarray  # int64
    has_ack: np.ndarray  # bool
    win: np.ndarray  # int64, scaled on TCP rows other than SYNs
    sack_left: np.ndarray  # int64: the SACK blocks handed in, relative
    sack_right: np.ndarray


def connections(src: np.ndarray, dst: np.ndarray, sport: np.ndarray, dport: np.ndarray, l4: np.ndarray,
                is_tcp: np.ndarray, is_udp: np.ndarray, flags: np.ndarray, seq_raw: np.ndarray,
                ack_raw: np.ndarray, win_raw: np.ndarray, wscale: np.ndarray, wscale_ok: np.ndarray,
                sack: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> Conn | None:
    """Number connections, give every row its direction and make its TCP numbers relative.

    Args:
        src, dst: Address ids of every row (uint32 or int64; equal ids = equal addresses).
        sport, dport: Ports (int32 or int64). Ids and ports are only read where ``l4``.
        l4: Rows that belong to a connection (TCP/UDP with addresses and ports).
        is_tcp: TCP rows. is_udp: UDP rows.
        flags: TCP flags (uint8; 0 where unknown).
        seq_raw, ack_raw: Raw 32-bit sequence and acknowledgment numbers (uint32).
        win_raw: Raw windows (uint16 or int64).
        wscale: Window scale option values (uint8, at most 14); wscale_ok: where present.
        sack: SACK blocks as (row, raw left edge, raw right edge), int64.

    Returns:
        The connections, or None when no row has one.
    """
    rows, left, right = sack if sack is not None else (_NO_ROWS, _NO_ROWS, _NO_ROWS)
    nflows, flow, direction, seq, ack, win, s_left, s_right = _core.tcp_connections(
        src, dst, sport, dport, l4, is_tcp, is_udp, flags, seq_raw, ack_raw, win_raw, wscale, wscale_ok,
        rows, left, right)
    if not nflows:
        return None
    tcp = is_tcp & l4
    has_ack = (flags & ACK) != 0
    has_ack &= tcp
    return Conn(flow, direction, l4, tcp, nflows, seq, ack, has_ack, win, s_left, s_right)


def sack_column(n: int, rows: np.ndarray, left: np.ndarray, right: np.ndarray) -> pl.Series | pl.Expr:
    """The ``sack`` column from relative SACK blocks.

    Args:
        n: Rows of the frame.
        rows: Row of every block (ascending; a row's blocks in option order).
        left, right: Relative block edges (int64).

    Returns:
        A ``List(Array(Int64, 2))`` column, null on rows without blocks (a null literal when
        no row has one).
    """
    if not len(rows):
        return pl.lit(None, dtype=SACK)
    sk = (
        pl.DataFrame({"_r": rows, "_l": left, "_rr": right})
        .group_by("_r", maintain_order=True)
        .agg(pl.concat_arr("_l", "_rr").alias("sack"))
    )
    # Place the lists with one gather whose index is null on rows without blocks.
    at = np.zeros(n, dtype=np.uint32)
    has = np.zeros(n, dtype=bool)
    r = sk["_r"].to_numpy()
    at[r] = np.arange(sk.height, dtype=np.uint32)
    has[r] = True
    return sk["sack"].gather(masked(at, has, pl.UInt32)).alias("sack")


def _np(df: pl.DataFrame, col: str, fill: int = 0) -> np.ndarray:
    """A column as a writable int64 numpy array (nulls -> ``fill``)."""
    if col not in df.columns:
        return np.full(df.height, fill, dtype=np.int64)
    s = df[col]
    if s.null_count():
        s = s.fill_null(fill)
    return s.to_numpy().astype(np.int64)  # a copy: writable, and polars' buffer is left alone


def _ids(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids of the src and dst addresses (same address -> same id), -1 for null."""
    both = pl.concat([df["src"].cast(pl.String), df["dst"].cast(pl.String)])
    # One dictionary encoding over both columns, so the codes are comparable between them.
    codes = both.cast(pl.Categorical).to_physical().cast(pl.Int64).fill_null(-1).to_numpy(writable=True)
    return codes[: df.height], codes[df.height:]


def masked(values: np.ndarray, valid: np.ndarray, dtype: pl.DataType | type[pl.DataType]) -> pl.Series:
    """A column with nulls where ``valid`` is False (no copy when all are valid and the dtype fits)."""
    if valid.all():
        s = pl.Series(values)
        return s if s.dtype == dtype else s.cast(dtype)
    # (Series.set rather than a numpy masked array: numpy.ma costs ~9 ms to import)
    s = pl.Series(values).set(pl.Series(~valid), None)
    return s if s.dtype == dtype else s.cast(dtype)


def finish_tcp(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``flow``, ``dir`` and the relative ``seq``/``ack``/``sack``/``win`` columns.

    Args:
        df: Rows in frame order with ``src``, ``dst``, ``sport``, ``dport``, ``proto``
            and, for TCP, ``seq_raw``, ``ack_raw`` (Int64, raw 32-bit values), ``flags``,
            ``win_raw``, ``wscale`` and optionally ``sack_raw`` (List[Array[Int64, 2]]).

    Returns:
        ``df`` with the raw columns replaced by the schema's columns.
    """
    n = df.height
    is_tcp = (df["proto"] == "tcp").fill_null(False).to_numpy()
    is_udp = (df["proto"] == "udp").fill_null(False).to_numpy()
    a, b = _ids(df)
    sport, dport = _np(df, "sport", -1), _np(df, "dport", -1)
    l4 = (is_tcp | is_udp) & (a >= 0) & (b >= 0) & (sport >= 0) & (dport >= 0)
    has_seq = "seq_raw" in df.columns
    # (the core reads the raw numbers modulo 2^32, the flags' low byte, as the wire has them)
    flags = _np(df, "flags").astype(np.uint8)
    wsc = _np(df, "wscale", -1)
    sack = _sack_blocks(df, is_tcp & l4) if "sack_raw" in df.columns else None
    c = connections(a, b, sport, dport, l4, is_tcp, is_udp, flags, _np(df, "seq_raw").astype(np.uint32),
                    _np(df, "ack_raw").astype(np.uint32), _np(df, "win_raw"), np.clip(wsc, 0, 14).astype(np.uint8),
                    wsc >= 0, sack)
    del a, b, sport, dport, wsc
    if c is None:
        return _no_connections(df)
    out = df.with_columns(flow=masked(c.flow, l4, pl.UInt32), dir=masked(c.direction, l4, pl.Int8))
    if has_seq:
        out = out.with_columns(
            seq=masked(c.seq, c.tcp, pl.Int64),
            ack=masked(c.ack, c.has_ack, pl.Int64),
            win=masked(c.win, df["win_raw"].is_not_null().to_numpy(), pl.Int64),
        )
        if sack is not None:
            out = out.with_columns(sack=sack_column(n, sack[0], c.sack_left, c.sack_right))
    return out.drop([col for col in _RAW if col in out.columns])


def _sack_blocks(df: pl.DataFrame, tcp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``sack_raw`` blocks of connection TCP rows as (row, left, right), row order."""
    sk = df.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_r"), "sack_raw").filter(
        pl.col("sack_raw").list.len() > 0)
    sk = sk.filter(pl.Series(tcp[sk["_r"].to_numpy()])).explode("sack_raw")
    edges = sk["sack_raw"]
    return (sk["_r"].to_numpy(), edges.arr.first().to_numpy().astype(np.int64),
            edges.arr.last().to_numpy().astype(np.int64))


def _no_connections(df: pl.DataFrame) -> pl.DataFrame:
    """The connection columns for rows of which none is TCP/UDP with ports."""
    out = df.with_columns(flow=pl.lit(None, dtype=pl.UInt32), dir=pl.lit(None, dtype=pl.Int8))
    if "seq_raw" in df.columns:
        out = out.with_columns(seq=pl.lit(None, dtype=pl.Int64), ack=pl.lit(None, dtype=pl.Int64),
                               win=pl.col("win_raw"))
        if "sack_raw" in df.columns:
            out = out.with_columns(sack=pl.lit(None, dtype=SACK))
    return out.drop([c for c in _RAW if c in out.columns])
