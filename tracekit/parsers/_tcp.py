"""Connection bookkeeping shared by every packet reader: flows, directions, relative numbers.

Readers decode raw header fields; :func:`finish_tcp` turns them into the schema's
connection view. Everything is computed over whole columns with numpy (group ids are dense
integers, so per-group tables are small arrays indexed by the id, not joins):

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

import numpy as np
import polars as pl

from tracekit.schema import ACK, SYN

TWO32 = 1 << 32
HALF = 1 << 31
_RAW = ("seq_raw", "ack_raw", "win_raw", "sack_raw", "_src_id", "_dst_id")


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


def _first_rows(group: np.ndarray, rows: np.ndarray, size: int, n: int) -> np.ndarray:
    """For each group id in ``[0, size)``, the smallest row among ``rows`` (``n`` if none)."""
    first = np.full(size, n, dtype=np.int64)
    np.minimum.at(first, group, rows)
    return first


def _unwrap(rel: np.ndarray, group: np.ndarray, size: int) -> np.ndarray:
    """Undo 32-bit wraps of ``rel`` (values in [0, 2^32), row order) within each group.

    A wrap shows as a jump of more than 2^31 between consecutive values of a group. Only
    groups whose values span more than 2^31 can hold one, so only their rows are sorted.
    """
    if not len(rel):
        return rel
    lo = np.full(size, TWO32, dtype=np.int64)
    hi = np.full(size, -1, dtype=np.int64)
    np.minimum.at(lo, group, rel)
    np.maximum.at(hi, group, rel)
    wide = (hi - lo) > HALF
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


def _epochs(key_first: np.ndarray, a: np.ndarray, side: np.ndarray, syn: np.ndarray, flags: np.ndarray,
            seq: np.ndarray, l4: np.ndarray, n: int) -> np.ndarray:
    """The first row of each row's connection, splitting a port pair where it was reused.

    Wireshark's rule (packet-tcp.c, 4.0): a pure SYN whose sequence number differs from the
    base its sender already has *in the port pair's current conversation* opens a new
    conversation. That base is the sequence number of the sender's first segment in the
    conversation (minus 1 unless it was a SYN); a sender with no segment yet has none.

    Only SYNs whose sender already sent something on the port pair can split, so the loop
    below runs over those few SYNs (retransmitted SYNs and reused ports), never over packets.
    """
    syn_rows = np.nonzero(syn)[0]
    if not len(syn_rows):
        return key_first
    g = key_first * 2 + side  # (port pair, sender side)
    l4_rows = np.nonzero(l4)[0]
    first_side = _first_rows(g[l4_rows], l4_rows, 2 * n, n)
    cand = syn_rows[first_side[g[syn_rows]] < syn_rows]
    if not len(cand):
        return key_first
    sel = np.nonzero(np.isin(key_first, np.unique(key_first[cand])) & l4)[0]
    order = np.argsort(g[sel], kind="stable")
    rows_g, g_sorted = sel[order], g[sel][order]  # rows grouped by (pair, side), ascending in each
    current: dict[int, int] = {}
    splits: list[int] = []
    for r in cand.tolist():
        k = int(key_first[r])
        e = current.get(k, k)
        gg = g[r]
        i0, i1 = np.searchsorted(g_sorted, [gg, gg + 1])
        j = i0 + int(np.searchsorted(rows_g[i0:i1], e))
        if j >= i1 or rows_g[j] >= r:
            continue  # the sender has no segment in this conversation yet: the SYN sets its base
        f = int(rows_g[j])
        ref = int(seq[f]) - (0 if flags[f] & SYN else 1)
        if (int(seq[r]) - ref) % TWO32:
            splits.append(r)
            current[k] = r
    if not splits:
        return key_first
    starts = np.array(splits, dtype=np.int64)
    # rows belong to the last split at or before them on the same port pair
    s_key = key_first[starts] * n + starts
    s_order = np.argsort(s_key)
    s_key, starts = s_key[s_order], starts[s_order]
    pos = np.searchsorted(s_key, key_first * n + np.arange(n, dtype=np.int64), side="right") - 1
    cand_first = starts[np.maximum(pos, 0)]
    same = (pos >= 0) & (key_first[cand_first] == key_first) & l4
    return np.where(same, cand_first, key_first)


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
    # Arrays are as long as the capture: each is freed (del) once used, to bound peak memory.
    n = df.height
    is_tcp = (df["proto"] == "tcp").fill_null(False).to_numpy()
    is_udp = (df["proto"] == "udp").fill_null(False).to_numpy()
    if "_src_id" in df.columns:
        a, b = _np(df, "_src_id", -1), _np(df, "_dst_id", -1)
    else:
        a, b = _ids(df)
    l4 = (is_tcp | is_udp) & (a >= 0) & (b >= 0)
    # endpoint = address id * 65536 + port
    for arr, col in ((a, "sport"), (b, "dport")):
        port = _np(df, col, -1)
        l4 &= port >= 0
        arr *= 65536
        arr += port
        del port
    side = a <= b  # the sender is the pair's lower endpoint
    lo = np.minimum(a, b)
    np.maximum(a, b, out=b)
    hi = b
    del b
    lo *= 2
    lo += is_udp

    # ---- connections: first row of each (protocol, port pair), split where a port pair is reused
    l4_rows = np.nonzero(l4)[0]
    if not len(l4_rows):
        return _no_connections(df)
    key_first = np.full(n, -1, dtype=np.int64)
    key_first[l4_rows] = (
        pl.DataFrame({"lo": lo[l4_rows], "hi": hi[l4_rows], "r": l4_rows})
        .select(pl.col("r").min().over("lo", "hi"))
        .to_series().to_numpy()
    )
    del lo, hi
    flags = _np(df, "flags")
    tcp = is_tcp & l4
    del is_tcp, is_udp
    pure_syn = tcp & ((flags & (SYN | ACK)) == SYN)
    seq_raw = _np(df, "seq_raw") if "seq_raw" in df.columns else np.zeros(n, dtype=np.int64)
    first = _epochs(key_first, a, side, pure_syn, flags, seq_raw, l4, n)
    del key_first, side
    mark = np.zeros(n + 1, dtype=bool)
    mark[first[l4_rows]] = True
    rank = np.cumsum(mark, dtype=np.int64)
    rank -= 1
    flow = rank[np.maximum(first, 0)]
    del rank, first
    nflows = int(mark.sum())

    # ---- direction: the initiator is the first pure SYN's sender, else the first packet's
    init = np.zeros(max(nflows, 1), dtype=np.int64)
    firsts = np.nonzero(mark[:n])[0]
    init[flow[firsts]] = a[firsts]
    syn_rows = np.nonzero(pure_syn)[0]
    if len(syn_rows):
        uniq, idx = np.unique(flow[syn_rows], return_index=True)
        init[uniq] = a[syn_rows[idx]]
    direction = (a != init[flow]).astype(np.int64)
    del a, init

    out = df.with_columns(
        flow=_masked(flow, l4, pl.UInt32),
        dir=_masked(direction, l4, pl.Int8),
    )
    if "seq_raw" in df.columns:
        out = _relative(out, tcp, flags, seq_raw, flow, direction, nflows)
    return out.drop([c for c in _RAW if c in out.columns])


def _masked(values: np.ndarray, valid: np.ndarray, dtype: pl.DataType) -> pl.Series:
    """A column with nulls where ``valid`` is False."""
    return pl.Series(np.ma.masked_array(values, mask=~valid)).cast(dtype)


def _no_connections(df: pl.DataFrame) -> pl.DataFrame:
    """The connection columns for rows of which none is TCP/UDP with ports."""
    out = df.with_columns(flow=pl.lit(None, dtype=pl.UInt32), dir=pl.lit(None, dtype=pl.Int8))
    if "seq_raw" in df.columns:
        out = out.with_columns(seq=pl.lit(None, dtype=pl.Int64), ack=pl.lit(None, dtype=pl.Int64),
                               win=pl.col("win_raw"))
        if "sack_raw" in df.columns:
            out = out.with_columns(sack=pl.lit(None, dtype=pl.List(pl.Array(pl.Int64, 2))))
    return out.drop([c for c in _RAW if c in out.columns])


def _relative(df: pl.DataFrame, tcp: np.ndarray, flags: np.ndarray, seq_raw: np.ndarray, flow: np.ndarray,
              direction: np.ndarray, nflows: int) -> pl.DataFrame:
    """Relative seq/ack/sack and the scaled window, per (flow, dir) group ``fd = 2*flow + dir``."""
    n = df.height
    size = 2 * max(nflows, 1)
    t_rows = np.nonzero(tcp)[0]
    fd = flow * 2
    fd += direction
    fd[~tcp] = 0
    has_ack = tcp & ((flags & ACK) != 0)
    is_syn = (flags & SYN) != 0
    ack_raw = _np(df, "ack_raw")
    # base per direction: its first segment (SYN: seq, else seq - 1), or the other side's first
    # ACK (ack - 1) when that comes before any segment of the direction
    own = _first_rows(fd[t_rows], t_rows, size, n)
    a_rows = np.nonzero(has_ack)[0]
    via = _first_rows(fd[a_rows] ^ 1, a_rows, size, n)
    own_c, via_c = np.minimum(own, n - 1), np.minimum(via, n - 1)
    base_own = seq_raw[own_c] - np.where(is_syn[own_c], 0, 1)
    base_ack = ack_raw[via_c] - 1
    base = np.where(own <= via, base_own, base_ack) % TWO32

    fd_t = fd[t_rows]
    rel = seq_raw[t_rows]
    rel -= base[fd_t]
    rel %= TWO32
    seq = np.zeros(n, dtype=np.int64)
    seq[t_rows] = _unwrap(rel, fd_t, size)
    del rel, fd_t, seq_raw
    fd_a = fd[a_rows] ^ 1
    rel = ack_raw[a_rows]
    rel -= base[fd_a]
    rel %= TWO32
    del ack_raw
    ack = np.zeros(n, dtype=np.int64)
    ack[a_rows] = _unwrap(rel, fd_a ^ 1, size)
    del rel, fd_a, a_rows

    # window scale: the first option on a SYN of each direction. As in Wireshark, a direction
    # is scaled by its own shift unless the other side's SYN was captured without the option
    # (RFC 7323: scaling needs both); with the other SYN unseen, agreement is assumed.
    wsc = _np(df, "wscale", -1)
    ws = np.full(size, -1, dtype=np.int64)
    syn_t = np.nonzero(tcp & is_syn)[0]
    seen = np.zeros(size, dtype=bool)
    seen[fd[syn_t]] = True
    s_rows = syn_t[wsc[syn_t] >= 0]
    del wsc
    if len(s_rows):
        uniq, idx = np.unique(fd[s_rows], return_index=True)
        ws[uniq] = np.clip(_np(df, "wscale", -1)[s_rows[idx]], 0, 14)
    other = np.arange(size) ^ 1
    shift_of = np.where((ws >= 0) & ~(seen[other] & (ws[other] < 0)), ws, 0)
    shift = shift_of[fd]
    shift[~tcp | is_syn] = 0
    win = _np(df, "win_raw")
    win <<= shift
    del shift

    df = df.with_columns(
        seq=_masked(seq, tcp, pl.Int64),
        ack=_masked(ack, has_ack, pl.Int64),
        win=_masked(win, df["win_raw"].is_not_null().to_numpy(), pl.Int64),
    )
    del seq, win
    if "sack_raw" in df.columns:
        df = _sack(df, base, fd, ack, tcp)
    return df


def _sack(df: pl.DataFrame, base: np.ndarray, fd: np.ndarray, ack: np.ndarray, tcp: np.ndarray) -> pl.DataFrame:
    """SACK blocks relative to the other direction's base, in the same 2^32 epoch as the ACK."""
    sk = df.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_r"), "sack_raw").filter(
        pl.col("sack_raw").list.len() > 0)
    if not sk.height:
        return df.with_columns(sack=pl.lit(None, dtype=pl.List(pl.Array(pl.Int64, 2))))
    r = sk["_r"].to_numpy()
    keep = tcp[r]
    sk = sk.filter(pl.Series(keep))
    r = r[keep]
    sk = sk.with_columns(
        _ob=pl.Series(base[fd[r] ^ 1]),
        _ack=pl.Series(ack[r]),
    ).explode("sack_raw")
    fix = lambda c: pl.col(c) + ((pl.col("_ack") - pl.col(c) + HALF).floordiv(TWO32)) * TWO32  # noqa: E731
    sk = (
        sk.with_columns(
            _l=(pl.col("sack_raw").arr.first() - pl.col("_ob")) % TWO32,
            _rr=(pl.col("sack_raw").arr.last() - pl.col("_ob")) % TWO32,
        )
        .with_columns(_l=fix("_l"), _rr=fix("_rr"))
        .group_by("_r", maintain_order=True)
        .agg(pl.concat_arr("_l", "_rr").alias("sack"))
    )
    full = pl.DataFrame({"_r": np.arange(df.height, dtype=np.int64)}).join(sk, on="_r", how="left",
                                                                           maintain_order="left")
    return df.with_columns(sack=full["sack"])
