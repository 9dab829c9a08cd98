"""Round-trip time samples: the ``rtt`` frame (:data:`tracekit.schema.RTT`).

Two methods, both run by the compiled core in one pass over the packets (``src/state/rtt.rs``:
each rule cites its RFC section); ``dir`` is the direction whose data (or timestamps) the sample
measures, ``frame``/``time`` are those of the ACK that closed it:

* ``seq`` — as Wireshark's ``tcp.analysis.ack_rtt``: an ACK that raises the cumulative
  ACK to exactly the end of a segment (SYN and FIN count one byte) closes a sample,
  RTT = ACK time − that segment's time. Unlike Wireshark (which then times the *first*
  transmission), Karn's rule applies: no sample when the segment ending there was sent more
  than once before the ACK, or re-sent bytes already sent. ACKs that end inside a segment
  or beyond the segments seen give no sample (as in Wireshark and tcptrace).
* ``ts`` — from TCP timestamps (RFC 7323): an ACK that raises the cumulative ACK and echoes
  TSecr = *v* closes a sample from the first packet of the other direction that carried
  TSval = *v*. 32-bit wrap is undone by unwrapping TSval per direction and placing each
  TSecr in the 2^32 epoch nearest to the latest TSval sent before it. Timestamp clocks tick
  every 1–10 ms and the receiver echoes the *oldest* unacknowledged TSval (delayed ACKs), so
  ``ts`` samples can exceed ``seq`` ones by a tick plus the delayed-ACK wait.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit import _core
from tracekit.analysis import _dirstats
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import Ints, at, prepare, segments
from tracekit.schema import RTT, empty

#: RFC 6298 gains for the smoothed RTT and its variation.
ALPHA, BETA = 1 / 8, 1 / 4
_SCHEMA = {"_i": pl.UInt32(), **RTT}


def _core_columns(st: pl.DataFrame) -> tuple[np.ndarray, ...]:
    """The columns :func:`tracekit._core.tcp_rtt` reads: the packets' and their state bits (``src/state/seq.rs``)."""
    bits = np.zeros(st.height, dtype=np.uint8)
    for name, bit in (("keepalive", 1), ("zwp", 2), ("new_ack", 5), ("adv", 6), ("stray_syn", 7)):
        bits |= st[name].to_numpy().view(np.uint8) << np.uint8(bit)
    flags = st["fin"].to_numpy().view(np.uint8) | (st["syn"].to_numpy().view(np.uint8) << np.uint8(1))
    i64 = pl.Int64
    return (
        st["g"].to_numpy(), st["time"].to_numpy(), st["seq"].cast(i64).to_numpy(), st["len"].cast(i64).to_numpy(),
        flags, st["ack"].cast(i64).fill_null(MISSING).to_numpy(), st["ts_val"].cast(i64).fill_null(MISSING).to_numpy(),
        st["ts_ecr"].cast(pl.UInt32).fill_null(0).to_numpy(), bits, Ints(st, "nxt").at(slice(None)),
    )


def _frame(st: pl.DataFrame, rows: np.ndarray, rtt_s: np.ndarray, method: str) -> pl.DataFrame:
    """The samples closed at ACK rows ``rows`` (ascending): they time the other direction's packets."""
    at_ack = st.select(pl.col("flow", "dir", "frame", "time").gather(pl.Series(rows, dtype=pl.UInt32)))
    return at_ack.select(
        pl.Series("_i", rows, dtype=pl.UInt32), "flow", (1 - pl.col("dir")).alias("dir"), "frame", "time",
        pl.Series("rtt_s", rtt_s, dtype=pl.Float64), pl.lit(method).alias("method"),
    ).cast(_SCHEMA)  # type: ignore[arg-type]


def samples(st: pl.DataFrame) -> pl.DataFrame:
    """RTT samples with the closing ACK's row ``_i`` (the ``rtt`` frame plus ``_i``), sorted by method and ``_i``.

    Both methods run in the compiled core (``tracekit._core.tcp_rtt``, Rust ``src/state/rtt.rs``):
    one pass over the packets in capture order, a state machine per connection.
    """
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    seq_rows, seq_rtt, ts_rows, ts_rtt = _core.tcp_rtt(*_core_columns(st))
    return pl.concat([_frame(st, seq_rows, seq_rtt, "seq"), _frame(st, ts_rows, ts_rtt, "ts")])


def smoothed(rs: pl.DataFrame) -> pl.DataFrame:
    """RFC 6298 smoothed RTT and RTT variation after each sample, per direction.

    Uses the ``seq`` samples of a direction, or its ``ts`` samples when it has no ``seq`` ones.

    Args:
        rs: Samples from :func:`samples` (with ``_i``).

    Returns:
        ``_i, flow, dir, time, srtt, rttvar`` sorted by ``_i``.
    """
    if rs.is_empty():
        return pl.DataFrame(schema={"_i": pl.UInt32, "flow": pl.UInt32, "dir": pl.Int8, "time": pl.Float64,
                                    "srtt": pl.Float64, "rttvar": pl.Float64})
    gid = rs["flow"].to_numpy().astype(np.int64) * 2 + rs["dir"].to_numpy()
    is_seq = (rs["method"] == "seq").to_numpy()
    use = np.flatnonzero(is_seq | ~np.isin(gid, gid[is_seq]))
    ii = rs["_i"].to_numpy()
    # per direction in sample order: one RFC 6298 recursion each (polars' ewm kernel, as ``over`` runs it)
    use = use[np.lexsort((ii[use], gid[use]))]
    gu = gid[use]
    cut = np.flatnonzero(np.r_[True, gu[1:] != gu[:-1], True])
    r = rs["rtt_s"].to_numpy()[use]
    srtt = np.empty_like(r)
    dev = np.empty_like(r)
    for a, b in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=False):
        srtt[a:b] = pl.Series(r[a:b]).ewm_mean(alpha=ALPHA, adjust=False).to_numpy()
        dev[a] = r[a] / 2
        dev[a + 1:b] = np.abs(r[a + 1:b] - srtt[a:b - 1])
        dev[a:b] = pl.Series(dev[a:b]).ewm_mean(alpha=BETA, adjust=False).to_numpy()
    back = np.argsort(ii[use], kind="stable")
    use = use[back]
    return pl.DataFrame({
        "_i": ii[use], "flow": rs["flow"].to_numpy()[use], "dir": rs["dir"].to_numpy()[use],
        "time": rs["time"].to_numpy()[use], "srtt": srtt[back], "rttvar": dev[back],
    })


def at_rows(st: pl.DataFrame, est: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """The smoothed RTT of each row's direction as of that row (latest sample before it).

    Samples sit on the ACK rows of the other direction; ``r_i`` (that direction's latest
    packet) finds the latest one without a join.

    Args:
        st: Prepared state.
        est: :func:`smoothed` output.
        rows: Rows of ``st`` (with ``_i`` and ``r_i``).

    Returns:
        ``rows`` with ``srtt`` and ``rttvar`` (null before the first sample).
    """
    if "srtt" in st.columns:
        ix = rows["_i"]
        return rows.with_columns(srtt=at(st, ix, "srtt"), rttvar=at(st, ix, "rttvar"))
    if est.is_empty() or rows.is_empty():
        return rows.with_columns(srtt=pl.lit(None, pl.Float64), rttvar=pl.lit(None, pl.Float64))
    j = _latest_sample(st, est, rows["r_i"].fill_null(st.height).to_numpy())  # -1: none: the NaN appended below
    return rows.with_columns(
        srtt=pl.Series(np.append(est["srtt"].to_numpy(), np.nan)[j]).fill_nan(None),
        rttvar=pl.Series(np.append(est["rttvar"].to_numpy(), np.nan)[j]).fill_nan(None),
    )


def _latest_sample(st: pl.DataFrame, est: pl.DataFrame, r: np.ndarray) -> np.ndarray:
    """Per entry of ``r`` (rows of ``st``; ``st.height``: none), the row of ``est`` of the latest
    sample at or before it in that row's direction, else -1.

    A direction's samples sit on its ACK rows (unique rows: one method per direction). Few
    queries: with ``est`` keyed by (group of the sample row, row), a sorted look-up each.
    """
    n = st.height
    si = est["_i"].to_numpy().astype(np.int64)
    if len(r) * 8 < n:
        g = st["g"].to_numpy()
        key = (g[si].astype(np.int64) << 32) | si
        ko = np.argsort(key, kind="stable")
        key = key[ko]
        rr = np.minimum(r, n - 1).astype(np.int64)
        gr = g[rr].astype(np.int64)
        j = np.searchsorted(key, (gr << 32) | rr, side="right") - 1
        ok = (r < n) & (j >= 0) & ((key[np.maximum(j, 0)] >> 32) == gr)
        return np.where(ok, ko[np.maximum(j, 0)], -1)
    # many queries: for every row, the latest sample row at or before it in its direction (a
    # running maximum of the sample rows, in grouped order where a direction's rows ascend),
    # then the sample's position in ``est``; the spare slot at the end answers "none"
    sg = segments(st)
    o = sg.order
    it = np.int32 if n < (1 << 31) else np.int64
    pos = np.full(n + 1, -1, dtype=it)
    pos[si] = np.arange(len(si), dtype=it)  # sample row -> its row in ``est``
    mark = np.full(n, -1, dtype=it)
    mark[si] = si
    latest = sg.cummax(mark[o], missing=-1)  # grouped order; -1 until a direction's first sample
    del mark
    at_row = np.empty(n + 1, dtype=it)
    at_row[o] = pos[latest]  # (-1 reads the spare slot: no sample yet)
    at_row[n] = -1
    latest_at: np.ndarray = at_row[r]  # (indexing by an int array: Any to numpy's stubs)
    return latest_at


def with_srtt(st: pl.DataFrame, rs: pl.DataFrame) -> pl.DataFrame:
    """The state for the analyses that need the smoothed RTT per row: ``st`` itself.

    :func:`at_rows` finds each row's latest sample from the row's ``r_i`` on demand (one
    gather per direction with samples), which costs less than two Float64 columns over every
    packet; kept so that callers need not know.

    Args:
        st: Prepared state.
        rs: RTT samples (:func:`samples`), unused.

    Returns:
        ``st``, unchanged.
    """
    return st


def handshake(st: pl.DataFrame) -> pl.DataFrame:
    """Per flow, SYN → the initiator's first ACK after the SYN-ACK (Wireshark's ``tcp.analysis.initial_rtt``).

    Wherever the packets were observed, this spans exactly one full round trip. The rule is
    the compiled core's per-direction accumulator (``src/state/dirstats.rs``), which
    :func:`tracekit.analysis.flows.basic` runs over the packets (its ``_hs_rtt``): this runs
    it over the prepared state's rows, the same packets.

    Returns:
        ``flow, hs_rtt`` for flows whose three handshake packets were all seen.
    """
    return _dirstats.handshake_of_state(st)


def rtt(pk: pl.DataFrame, *, state: pl.DataFrame | None = None) -> pl.DataFrame:
    """RTT samples of every connection direction by both methods (see the module docstring).

    Args:
        pk: Packets at the vantage point.
        state: The prepared frame of ``pk`` (:func:`tracekit.analysis._state.prepare`), if at hand.

    Returns:
        The ``rtt`` frame (:data:`tracekit.schema.RTT`).
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(RTT)
    return samples(st).drop("_i")
