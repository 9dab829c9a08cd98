"""Connection bookkeeping shared by every packet reader: flows, directions, relative numbers.

Readers decode raw header fields; :func:`finish_tcp` turns them into the schema's
connection view (capture readers call the numpy core, :func:`connections` and
:func:`relative`, directly). Everything is computed over whole columns with numpy (group ids
are dense integers, so per-group tables are small arrays indexed by the id, not joins):

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

Arrays are as long as the capture (9 MB per int64 column of a million rows), so each is freed
(``del``) as soon as it is used, and the per-group tables are kept small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tracekit.parsers._dense import first_rows
from tracekit.parsers._epochs import epochs, pair_groups
from tracekit.schema import ACK, SYN

TWO32 = 1 << 32
HALF = 1 << 31
_M32 = 0xFFFFFFFF
_RAW = ("seq_raw", "ack_raw", "win_raw", "sack_raw", "_src_id", "_dst_id")
SACK = pl.List(pl.Array(pl.Int64, 2))


@dataclass
class Conn:
    """Connections of a capture's rows (``flow``/``direction`` are meaningful where ``l4``)."""

    flow: np.ndarray  # int64
    direction: np.ndarray  # int8
    l4: np.ndarray  # bool: TCP/UDP row with addresses and ports
    tcp: np.ndarray  # bool: TCP row of a connection
    nflows: int


@dataclass
class Rel:
    """Relative TCP numbers (meaningful where the masks say so) and what SACK needs."""

    seq: np.ndarray  # int64, on TCP rows
    ack: np.ndarray  # int64, on TCP rows with the ACK flag (``has_ack``), else 0
    has_ack: np.ndarray
    win: np.ndarray  # int64, scaled
    base: np.ndarray  # int64 per (flow, dir) group: the direction's initial sequence number
    fd: np.ndarray  # int64 group ``2 * flow + dir`` of every row (0 off TCP)


def connections(src: np.ndarray, dst: np.ndarray, sport: np.ndarray, dport: np.ndarray, l4: np.ndarray,
                is_tcp: np.ndarray, is_udp: np.ndarray, flags: np.ndarray, seq_raw: np.ndarray) -> Conn | None:
    """Number connections and give every row its direction.

    Args:
        src, dst: Address ids of every row (integers; equal ids = equal addresses).
        sport, dport: Ports (integers). Ids and ports are only read where ``l4``.
        l4: Rows that belong to a connection (TCP/UDP with addresses and ports).
        is_tcp: TCP rows. is_udp: UDP rows.
        flags: TCP flags (any integer dtype; 0 where unknown).
        seq_raw: Raw 32-bit sequence numbers (0 where unknown).

    Returns:
        The connections, or None when no row has one.
    """
    n = len(l4)
    if not l4.any():
        return None
    every = bool(l4.all())
    l4_rows = None if every else np.nonzero(l4)[0]
    sub = slice(None) if l4_rows is None else l4_rows
    # endpoint = address id * 65536 + port; the pair's key = (lower endpoint, higher endpoint)
    lo = _endpoint(src, sport, sub)
    hi = _endpoint(dst, dport, sub)
    side_sub = lo <= hi  # the sender is the pair's lower endpoint
    low = np.minimum(lo, hi)
    np.maximum(lo, hi, out=hi)
    lo = low
    del low
    lo *= 2
    lo += is_udp[sub]
    pair_sub, pfirst = pair_groups(lo, hi)
    del lo, hi
    if l4_rows is None:
        pair, side = pair_sub, side_sub
    else:
        pfirst = l4_rows[pfirst]
        pair = np.zeros(n, dtype=pair_sub.dtype)
        pair[l4_rows] = pair_sub
        side = np.zeros(n, dtype=bool)
        side[l4_rows] = side_sub
    del pair_sub, side_sub
    tcp = is_tcp & l4
    pure_syn = tcp & ((flags & (SYN | ACK)) == SYN)
    first = epochs(pair, pfirst, side, pure_syn, flags, seq_raw, l4)
    if first is None:  # no port pair was reused: the connections are the port pairs
        flow, firsts = pair, pfirst
    else:
        all_rows = np.arange(n) if l4_rows is None else l4_rows
        mark = np.zeros(n, dtype=bool)
        mark[first[all_rows]] = True
        rank = np.cumsum(mark, dtype=np.int64)
        rank -= 1
        # rows without ports (first -1) may come before any connection: rank -1, masked later
        flow = np.maximum(rank[np.maximum(first, 0)], 0).astype(np.uint32)
        del rank, first, all_rows
        firsts = np.nonzero(mark)[0]
    nflows = len(firsts)
    del pair

    # ---- direction: the initiator is the first pure SYN's sender, else the first packet's. Its
    # side of the pair tells the directions apart (as its endpoint would: rows from the other
    # endpoint have the other side; a pair of one endpoint with itself has one side only).
    init = np.zeros(max(nflows, 1), dtype=bool)
    init[flow[firsts]] = side[firsts]
    syn_rows = np.nonzero(pure_syn)[0]
    if len(syn_rows):
        uniq, idx = np.unique(flow[syn_rows], return_index=True)
        init[uniq] = side[syn_rows[idx]]
    direction = side
    direction ^= init[flow]
    return Conn(flow, direction.view(np.int8), l4, tcp, nflows)


def _endpoint(ids: np.ndarray, port: np.ndarray, sub: slice | np.ndarray) -> np.ndarray:
    """``id * 65536 + port`` of the rows ``sub``, as int64."""
    ep = ids[sub].astype(np.int64)
    ep <<= 16
    ep += port[sub]
    return ep


def relative(c: Conn, flags: np.ndarray, seq_raw: np.ndarray, ack_raw: np.ndarray, win_raw: np.ndarray,
             wscale: np.ndarray, wscale_ok: np.ndarray) -> Rel:
    """Relative seq/ack and the scaled window, per (flow, dir) group ``fd = 2*flow + dir``.

    Args:
        c: The connections.
        flags, seq_raw, ack_raw, win_raw: Raw TCP fields (any integer dtype; read on TCP rows).
        wscale: Window scale option values; wscale_ok: where the option was present.

    Returns:
        The relative numbers.
    """
    tcp = c.tcp
    n = len(tcp)
    size = 2 * max(c.nflows, 1)
    every = bool(tcp.all())
    fd = c.flow.astype(np.int64)
    fd *= 2
    fd += c.direction
    if not every:
        fd[~tcp] = 0
    is_syn = (flags & SYN) != 0
    has_ack = tcp & ((flags & ACK) != 0)
    # base per direction: its first segment (SYN: seq, else seq - 1), or the other side's first
    # ACK (ack - 1) when that comes before any segment of the direction
    t_rows = None if every else np.nonzero(tcp)[0]
    own = first_rows(fd if every else fd[t_rows], t_rows, size, n)
    del t_rows
    a_rows = np.nonzero(has_ack)[0]
    fd_a = fd[a_rows]
    fd_a ^= 1
    via = first_rows(fd_a, a_rows, size, n)
    del fd_a, a_rows
    own_c, via_c = np.minimum(own, n - 1), np.minimum(via, n - 1)
    base_own = seq_raw[own_c].astype(np.int64) - np.where(is_syn[own_c], 0, 1)
    base_ack = ack_raw[via_c].astype(np.int64) - 1
    base = np.where(own <= via, base_own, base_ack) % TWO32

    seq = _rel(seq_raw, fd, None if every else tcp, base, size)
    fd ^= 1  # an ACK is relative to the other direction's base
    ack = _rel(ack_raw, fd, has_ack, base, size, other=True)
    fd ^= 1

    # window scale: the first option on a SYN of each direction. As in Wireshark, a direction
    # is scaled by its own shift unless the other side's SYN was captured without the option
    # (RFC 7323: scaling needs both); with the other SYN unseen, agreement is assumed.
    ws = np.full(size, -1, dtype=np.int64)
    syn_t = np.nonzero(tcp & is_syn)[0]
    seen = np.zeros(size, dtype=bool)
    seen[fd[syn_t]] = True
    s_rows = syn_t[wscale_ok[syn_t]]
    if len(s_rows):
        uniq, idx = np.unique(fd[s_rows], return_index=True)
        ws[uniq] = np.clip(wscale[s_rows[idx]].astype(np.int64), 0, 14)
    other = np.arange(size) ^ 1
    shift_of = np.where((ws >= 0) & ~(seen[other] & (ws[other] < 0)), ws, 0)
    win = win_raw.astype(np.int64)
    if shift_of.any():
        shift = shift_of.astype(np.int8)[fd]  # (int8: 1 byte a row instead of 8 of fresh memory)
        shift[~tcp | is_syn] = 0
        win <<= shift
    return Rel(seq, ack, has_ack, win, base, fd)


def _rel(raw: np.ndarray, fd: np.ndarray, valid: np.ndarray | None, base: np.ndarray, size: int,
         other: bool = False) -> np.ndarray:
    """``raw - base`` modulo 2^32, unwrapped within each group ``fd`` (0 where not ``valid``).

    Args:
        raw: Raw 32-bit numbers of every row.
        fd: Group of every row whose base applies (``other``: the row's own group is ``fd ^ 1``).
        valid: Rows that have the number (None: all).
        base: Base of each group.
        size: Number of groups.
    """
    rel = raw.astype(np.int64)
    rel -= base[fd]
    # modulo 2^32 into [-2^31, 2^31): numbers just below the base (an ACK of data sent before
    # the captured start, a SACK edge) are negative, not near 2^32, even when every number of
    # the direction lies there (then no wrap shows for the unwrapping below to undo)
    rel += HALF
    rel &= _M32
    rel -= HALF
    every = valid is None or bool(valid.all())
    if valid is not None and not every:
        rel[~valid] = 0
    if len(rel) and int(rel.max()) - int(rel.min()) <= HALF:
        return rel  # no group spans more than all rows do: nothing can have wrapped
    group = fd ^ 1 if other else (fd if every else fd.copy())
    if valid is None or every:
        return _unwrap(rel, group, size)
    group[~valid] = size  # rows without the number: a group of their own, left out below
    return _unwrap(rel, group, size + 1, ignore=size)


def _unwrap(rel: np.ndarray, group: np.ndarray, size: int, ignore: int | None = None) -> np.ndarray:
    """Undo 32-bit wraps of ``rel`` (values in [0, 2^32), row order) within each group.

    A wrap shows as a jump of more than 2^31 between consecutive values of a group. Only
    groups whose values span more than 2^31 can hold one, so only their rows are sorted.
    The group ``ignore`` (if any) is left as it is.
    """
    if not len(rel):
        return rel
    lo = np.full(size, TWO32, dtype=np.int64)
    hi = np.full(size, -TWO32, dtype=np.int64)
    np.minimum.at(lo, group, rel)
    np.maximum.at(hi, group, rel)
    wide = (hi - lo) > HALF
    if ignore is not None:
        wide[ignore] = False
    if not wide.any():
        return rel
    sel = np.nonzero(wide[group])[0]
    order = sel[np.argsort(group[sel], kind="stable")]
    g, v = group[order], rel[order]
    d = np.diff(v, prepend=v[0])
    d[np.r_[True, g[1:] != g[:-1]]] = 0  # no step across group boundaries
    step = (d < -HALF).astype(np.int64) - (d > HALF).astype(np.int64)
    csum = np.cumsum(step)
    starts = np.r_[0, np.nonzero(g[1:] != g[:-1])[0] + 1]
    csum -= np.repeat(csum[starts] - step[starts], np.diff(np.r_[starts, len(g)]))
    out = rel.copy()
    out[order] = v + csum * TWO32
    return out


def sack_column(n: int, rows: pl.Series, left: pl.Series, right: pl.Series, rel: Rel) -> pl.Series | pl.Expr:
    """SACK blocks relative to the other direction's base, in the same 2^32 epoch as the ACK.

    Args:
        n: Rows of the frame.
        rows: Row of every block (ascending; a row's blocks in option order), TCP rows only.
        left, right: Raw 32-bit block edges (Int64).
        rel: The relative numbers of the rows.

    Returns:
        A ``List(Array(Int64, 2))`` column, null on rows without blocks (a null literal when
        no row has one).
    """
    if not len(rows):
        return pl.lit(None, dtype=SACK)
    r = rows.to_numpy()
    def fix(c: str) -> pl.Expr:
        return pl.col(c) + ((pl.col("_ack") - pl.col(c) + HALF).floordiv(TWO32)) * TWO32

    sk = (
        pl.DataFrame({"_r": rows, "_ob": rel.base[rel.fd[r] ^ 1], "_ack": rel.ack[r], "_lr": left, "_rr": right})
        .with_columns(_l=(pl.col("_lr") - pl.col("_ob")) % TWO32, _rr=(pl.col("_rr") - pl.col("_ob")) % TWO32)
        .with_columns(_l=fix("_l"), _rr=fix("_rr"))
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
            Optional ``_src_id``/``_dst_id``: integer address ids a reader already has
            (equal ids = equal addresses), used instead of hashing the strings.

    Returns:
        ``df`` with the raw columns replaced by the schema's columns.
    """
    n = df.height
    is_tcp = (df["proto"] == "tcp").fill_null(False).to_numpy()
    is_udp = (df["proto"] == "udp").fill_null(False).to_numpy()
    if "_src_id" in df.columns:
        a, b = _np(df, "_src_id", -1), _np(df, "_dst_id", -1)
    else:
        a, b = _ids(df)
    sport, dport = _np(df, "sport", -1), _np(df, "dport", -1)
    l4 = (is_tcp | is_udp) & (a >= 0) & (b >= 0) & (sport >= 0) & (dport >= 0)
    flags = _np(df, "flags")
    has_seq = "seq_raw" in df.columns
    seq_raw = _np(df, "seq_raw") if has_seq else np.zeros(n, dtype=np.int64)
    c = connections(a, b, sport, dport, l4, is_tcp, is_udp, flags, seq_raw)
    del a, b, sport, dport
    if c is None:
        return _no_connections(df)
    out = df.with_columns(flow=masked(c.flow, l4, pl.UInt32), dir=masked(c.direction, l4, pl.Int8))
    if has_seq:
        wsc = _np(df, "wscale", -1)
        rel = relative(c, flags, seq_raw, _np(df, "ack_raw"), _np(df, "win_raw"), wsc, wsc >= 0)
        del wsc, seq_raw
        out = out.with_columns(
            seq=masked(rel.seq, c.tcp, pl.Int64),
            ack=masked(rel.ack, rel.has_ack, pl.Int64),
            win=masked(rel.win, df["win_raw"].is_not_null().to_numpy(), pl.Int64),
        )
        if "sack_raw" in df.columns:
            sk = df.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_r"), "sack_raw").filter(
                pl.col("sack_raw").list.len() > 0)
            sk = sk.filter(pl.Series(c.tcp[sk["_r"].to_numpy()])).explode("sack_raw")
            out = out.with_columns(sack=sack_column(n, sk["_r"], sk["sack_raw"].arr.first(),
                                                    sk["sack_raw"].arr.last(), rel))
    return out.drop([col for col in _RAW if col in out.columns])


def _no_connections(df: pl.DataFrame) -> pl.DataFrame:
    """The connection columns for rows of which none is TCP/UDP with ports."""
    out = df.with_columns(flow=pl.lit(None, dtype=pl.UInt32), dir=pl.lit(None, dtype=pl.Int8))
    if "seq_raw" in df.columns:
        out = out.with_columns(seq=pl.lit(None, dtype=pl.Int64), ack=pl.lit(None, dtype=pl.Int64),
                               win=pl.col("win_raw"))
        if "sack_raw" in df.columns:
            out = out.with_columns(sack=pl.lit(None, dtype=SACK))
    return out.drop([c for c in _RAW if c in out.columns])
