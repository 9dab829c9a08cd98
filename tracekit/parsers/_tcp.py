"""Connection bookkeeping shared by every packet reader: flows, directions, relative numbers.

Readers decode raw header fields; :func:`finish_tcp` turns them into the
schema's connection view, all as polars expressions:

* ``flow``: one id per connection (both directions), numbered 0, 1, ... in order of
  first appearance, as Wireshark's ``tcp.stream`` / ``udp.stream``. (Wireshark also starts
  a new stream when a port pair is reused after a FIN; tracekit does not.)
* ``dir``: 0 for packets from the initiator (the sender of the first pure SYN, else the
  first packet's sender), 1 for the other way.
* ``seq``/``ack``/``sack``: relative to the direction's initial sequence number, unwrapped
  over 2^32 (modular arithmetic). Like Wireshark, the base is the SYN's sequence number when
  the SYN was captured, and ``first seq - 1`` otherwise, so the first data byte is 1 either way.
* ``win``: the advertised window in bytes, shifted by the sender's window scale only
  when both SYN and SYN-ACK carried the option (RFC 7323 §2.2); SYN segments are never scaled.
"""

from __future__ import annotations

import polars as pl

from tracekit.schema import ACK, SYN

TWO32 = 1 << 32
HALF = 1 << 31

_ENDPOINT_A = pl.concat_str([pl.col("src").cast(pl.String), pl.lit("|"), pl.col("sport").cast(pl.String)])
_ENDPOINT_B = pl.concat_str([pl.col("dst").cast(pl.String), pl.lit("|"), pl.col("dport").cast(pl.String)])


def _unwrap(col: str, keys: list[str]) -> pl.Expr:
    """Undo 32-bit wrap of a relative number column within each group, in row order."""
    d = pl.col(col).diff().over(keys)
    step = (d < -HALF).cast(pl.Int64) - (d > HALF).cast(pl.Int64)
    return pl.col(col) + step.fill_null(0).cum_sum().over(keys) * TWO32


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
    has_sack = "sack_raw" in df.columns
    df = df.with_row_index("_row")
    is_l4 = pl.col("proto").is_in(["tcp", "udp"]) & pl.col("sport").is_not_null()
    df = df.with_columns(
        _a=pl.when(is_l4).then(_ENDPOINT_A),
        _b=pl.when(is_l4).then(_ENDPOINT_B),
    ).with_columns(
        _key=pl.when(pl.col("_a") < pl.col("_b"))
        .then(pl.concat_str([pl.col("proto").cast(pl.String), pl.col("_a"), pl.col("_b")], separator="#"))
        .otherwise(pl.concat_str([pl.col("proto").cast(pl.String), pl.col("_b"), pl.col("_a")], separator="#"))
    )
    # flow ids in order of first appearance
    keys = (
        df.filter(pl.col("_key").is_not_null())
        .group_by("_key")
        .agg(pl.col("_row").min().alias("_first"))
        .sort("_first")
        .with_row_index("flow")
        .select(pl.col("flow").cast(pl.UInt32), "_key")
    )
    df = df.join(keys, on="_key", how="left")
    # initiator endpoint: sender of the first pure SYN, else of the first packet
    pure_syn = (pl.col("flags").fill_null(0) & (SYN | ACK)) == SYN
    init = (
        df.filter(pl.col("flow").is_not_null())
        .sort("_row")
        .group_by("flow")
        .agg(
            pl.col("_a").filter(pure_syn).first().alias("_syn_a"),
            pl.col("_a").first().alias("_first_a"),
        )
        .select("flow", pl.coalesce("_syn_a", "_first_a").alias("_init"))
    )
    df = df.join(init, on="flow", how="left").with_columns(
        dir=pl.when(pl.col("flow").is_null()).then(None).when(pl.col("_a") == pl.col("_init"))
        .then(pl.lit(0, pl.Int8)).otherwise(pl.lit(1, pl.Int8)).cast(pl.Int8)
    )
    df = df.sort("_row")
    if "seq_raw" in df.columns:
        df = _relative(df, has_sack)
    drop = [c for c in ("_a", "_b", "_key", "_init", "_row", "seq_raw", "ack_raw", "win_raw", "sack_raw")
            if c in df.columns]
    out = df.drop(drop)
    assert out.height == n
    return out


def _relative(df: pl.DataFrame, has_sack: bool) -> pl.DataFrame:
    tcp = pl.col("proto") == "tcp"
    flags = pl.col("flags").fill_null(0)
    is_syn = (flags & SYN) != 0
    has_ack = (flags & ACK) != 0
    # Base per (flow, dir): the first packet of the direction gives it (SYN: seq, else seq-1);
    # if the other side's ACK arrives before any packet of this direction, ack-1 gives it.
    own = (
        df.filter(tcp)
        .group_by("flow", "dir")
        .agg(
            pl.col("_row").first().alias("_r_own"),
            (pl.col("seq_raw") - pl.when(is_syn).then(0).otherwise(1)).first().alias("_b_own"),
        )
    )
    via_ack = (
        df.filter(tcp & has_ack)
        .group_by("flow", "dir")
        .agg(pl.col("_row").first().alias("_r_ack"), (pl.col("ack_raw") - 1).first().alias("_b_ack"))
        .with_columns((1 - pl.col("dir")).cast(pl.Int8).alias("dir"))
    )
    base = (
        own.join(via_ack, on=["flow", "dir"], how="full", coalesce=True)
        .with_columns(
            _base=pl.when(pl.col("_r_ack").is_null() | (pl.col("_r_own") < pl.col("_r_ack")))
            .then(pl.col("_b_own"))
            .otherwise(pl.col("_b_ack"))
            % TWO32
        )
        .select("flow", "dir", "_base")
    )
    other = base.with_columns((1 - pl.col("dir")).cast(pl.Int8).alias("dir")).rename({"_base": "_obase"})
    df = df.sort("_row").join(base, on=["flow", "dir"], how="left").join(other, on=["flow", "dir"], how="left")
    df = df.sort("_row")
    keys = ["flow", "dir"]
    df = df.with_columns(
        seq=pl.when(tcp).then((pl.col("seq_raw") - pl.col("_base")) % TWO32),
        ack=pl.when(tcp & has_ack).then((pl.col("ack_raw") - pl.col("_obase")) % TWO32),
    )
    df = df.with_columns(seq=_unwrap("seq", keys))
    # unwrap acks only among rows that carry one
    acks = df.filter(pl.col("ack").is_not_null()).select("_row", "flow", "dir", "ack")
    acks = acks.with_columns(ack=_unwrap("ack", keys))
    df = df.drop("ack").join(acks.select("_row", "ack"), on="_row", how="left").sort("_row")
    # window scaling: both SYN (no ACK) and SYN-ACK must carry the option
    ws = (
        df.filter(tcp & is_syn)
        .group_by("flow", "dir")
        .agg(pl.col("wscale").drop_nulls().first().alias("_ws"), pl.len().alias("_nsyn"))
    )
    both = ws.group_by("flow").agg(
        (pl.col("_ws").is_not_null().sum() == 2).alias("_both")
    )
    df = df.join(ws.select("flow", "dir", "_ws"), on=["flow", "dir"], how="left").join(both, on="flow", how="left")
    df = df.sort("_row").with_columns(
        win=pl.when(tcp & ~is_syn & pl.col("_both").fill_null(False))
        .then(pl.col("win_raw") * pl.lit(2, pl.Int64).pow(pl.col("_ws").cast(pl.Int64).clip(0, 14)))
        .otherwise(pl.col("win_raw"))
    )
    if has_sack:
        sk = (
            df.filter(pl.col("sack_raw").list.len() > 0)
            .select("_row", "_obase", "flow", "dir", "ack", "sack_raw")
            .explode("sack_raw")
            .with_columns(
                _l=(pl.col("sack_raw").arr.first() - pl.col("_obase")) % TWO32,
                _r=(pl.col("sack_raw").arr.last() - pl.col("_obase")) % TWO32,
            )
        )
        # place SACK edges in the same 2^32 epoch as the segment's cumulative ACK
        if sk.height:
            ackv = pl.col("ack").fill_null(0)
            fix = lambda c: pl.col(c) + ((ackv - pl.col(c) + HALF).floordiv(TWO32)) * TWO32  # noqa: E731
            sk = sk.with_columns(_l=fix("_l"), _r=fix("_r"))
        sk = sk.group_by("_row").agg(pl.concat_arr("_l", "_r").alias("sack"))
        df = df.join(sk, on="_row", how="left").sort("_row")
    return df.drop("_base", "_obase", "_ws", "_both")
