"""Retransmissions and their causes: the ``retransmissions`` frame (:data:`tracekit.schema.RETRANSMISSIONS`).

Which segments are retransmissions follows Wireshark's ``tcp_analyze_sequence_number``
(``packet-tcp.c``), vectorized over the state of :mod:`tracekit.analysis._state`:

* a segment (payload, SYN or FIN) is a candidate when it starts below the highest
  sequence number already sent in its direction (*nextseq*), except keep-alives (0–1 byte
  at nextseq − 1), zero-window probes, and a segment longer than one byte starting at
  nextseq − 1 (after a 1-byte probe); or when its end is at or below the other side's latest
  ACK (Wireshark's *spurious retransmission* rule, which needs no nextseq).
* **out-of-order, not retransmitted**: a candidate whose bytes were never seen before at this
  vantage point — it lies in a *hole* (bytes skipped when a later segment arrived first) and
  is the first segment seen with that start — and that arrives within one round trip of the
  hole's appearance (the handshake RTT, as Wireshark's threshold; else the smallest RTT
  sample; 3 ms when no RTT is known, as Wireshark): a re-sent segment needs at least that long. At a
  sender-side capture every candidate re-sends bytes already seen, so none is out-of-order.
  Wireshark 4.0 instead calls *any* candidate out-of-order when the other side sent a packet
  within the handshake RTT and the segment does not end at nextseq, which labels some SACK
  retransmissions at the sender as out-of-order (docs/analysis.md).

``kind`` says why it was sent:

* ``spurious``: the data had already arrived — Wireshark's rule (end ≤ the other side's
  latest ACK when it was sent), or a later D-SACK block (RFC 2883) starting at the segment and
  covering it.
* ``rto``: a timeout (RFC 6298 §5). With *RTO* = max(*floor*, srtt) — *floor* the minimum RTO
  of the stack that made the trace (:func:`rto_floor`: 200 ms for Linux ``TCP_RTO_MIN`` and
  ns-2 ``minrto_``, 1 s for ns-3 ``MinRto`` and RFC 6298 §2.4), srtt the RFC 6298 estimate here
  (§2.3 adds 4·rttvar, but the sender's rttvar is its own and ours can be twice it) — both hold:

  - silence: RTO has passed since the other side's last ACK that advanced the cumulative ACK
    (§5.3 restarts the timer there), or since the segment's own previous send while the other
    side has been quiet for RTO/2 (Linux re-arms the timer from the head's send when a probe
    timer was pending, ``tcp_rearm_rto``); and RTO since the previous timeout re-send (§5.5:
    the timer restarts there, backed off);
  - no loss signal the re-send answers, unless the other side has been quiet for RTO/2 (a
    sender answers at once, late only by its own queue): a SACK block above the ACK (RFC 6675)
    since that ACK and since the segment's previous send; the third duplicate ACK since that ACK
    (RFC 5681 §3.2), after the previous send, less than RTO/2 before, with the ACK past what was
    outstanding at the previous re-send (RFC 6582 §3.2 "recover": no second fast retransmit in
    one window); or, in a recovery (≥ 3 duplicate ACKs), a duplicate ACK at most
    :data:`DUP_CLOCKED_S` before (SACK recovery in a trace without the blocks, ns-2).

  A capture after the sender's own queue (tc, fq, a VM) shows a µs RTT while the re-sends wait
  in that queue: silence alone, compared with the RTT on the wire, would call them timeouts.
* ``fast``: every other non-spurious retransmission: answers to ≥ 3 duplicate ACKs or SACK
  (fast retransmit, RFC 5681 §3.2, RFC 6675), RACK re-sends, and tail-loss probes
  (RFC 8985 §7: a probe timer of ≈ 2·srtt, not the RTO; Linux counts them as
  ``TCPLossProbes``, not ``TCPTimeouts``, and they start no loss recovery of their own).

Retransmissions come in episodes (a recovery): a retransmission opens a new episode when the
ACK has passed everything outstanding at the previous retransmission, or when it is a timeout
(by the rule above only: a long pause that fails it opens none);
the later ones of an episode take the kind of its first one (after an RTO, Linux re-sends the
rest of the window as ACKs return; during SACK recovery, the holes one by one). Wireshark marks
only the first retransmission of a fast recovery as ``fast_retransmission``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracekit.analysis import rtt as _rtt
from tracekit.analysis._groups import MISSING
from tracekit.analysis._state import (
    KEYS,
    at,
    find_hole,
    first_fill,
    holes,
    pick,
    prepare,
    row_index,
    sack_above,
    sack_blocks_of,
    segments,
    take,
)
from tracekit.schema import RETRANSMISSIONS, empty

#: RTO floor (Linux TCP_RTO_MIN), used when no RTT is known, and Wireshark's default out-of-order window.
RTO_MIN_S = 0.2
OOO_DEFAULT_S = 0.003
#: Tolerance on the silence before a timeout (simulators fire the timer exactly one RTO after the ACK).
_EPS_S = 1e-6
#: A re-send this soon after a duplicate ACK was sent while processing it (a simulator: the same
#: instant; a Linux host: tens of µs, more behind its own queue, but then its SACK blocks count).
DUP_CLOCKED_S = 1e-4
#: Minimum RTO by the stack that made a trace: Linux ``TCP_RTO_MIN`` (include/net/tcp.h), ns-2
#: ``Agent/TCP set minrto_ 0.2`` (tcl/lib/ns-default.tcl), ns-3 ``TcpSocketBase::MinRto`` (1 s),
#: RFC 6298 §2.4 (1 s).
RTO_FLOORS_S = {"linux": 0.2, "ns-2": 0.2, "ns-3": 1.0, "rfc6298": 1.0}


def rto_floor(meta: dict[str, object], floor_s: float | None = None) -> tuple[float, str]:
    """The minimum RTO to test timeouts against, and where it comes from.

    A user's ``floor_s`` wins; else the stack that made the trace: ns-3 when any of its
    files came from ns-3, ns-2 likewise, else a real capture (Linux, the most common sender).

    Returns:
        ``(seconds, source)``, source one of ``user``, ``ns-3``, ``ns-2``, ``linux``.
    """
    if floor_s is not None:
        return float(floor_s), "user"
    tools = {str(meta.get("tool"))}
    for part in meta.get("parts") or []:  # type: ignore[attr-defined]
        if isinstance(part, dict):
            tools.add(str(part.get("tool")))
    for stack in ("ns-3", "ns-2"):
        if stack in tools:
            return RTO_FLOORS_S[stack], stack
    return RTO_FLOORS_S["linux"], "linux"

#: :func:`classify` output: the frame plus the row ``_i`` and the recovery ``episode`` (per direction).
_SCHEMA = {"_i": pl.UInt32(), **RETRANSMISSIONS, "episode": pl.Int32()}


def min_rtt(st: pl.DataFrame, rs: pl.DataFrame, hs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per flow, the round trip that bounds reordering (``flow -> min_rtt``).

    The handshake RTT (SYN → ACK spans one full round trip wherever the capture was taken,
    Wireshark's ``tcp.analysis.initial_rtt``), else the smallest RTT sample.

    Args:
        st: Prepared state.
        rs: RTT samples.
        hs: :func:`tracekit.analysis.rtt.handshake` of ``st``, if at hand.
    """
    hs = (_rtt.handshake(st) if hs is None else hs).rename({"hs_rtt": "_hs"})
    smin = rs.filter(pl.col("rtt_s") > 0).group_by("flow").agg(pl.col("rtt_s").min().alias("_min"))
    out = smin.join(hs, on="flow", how="full", coalesce=True)
    return out.select("flow", pl.coalesce(pl.when(pl.col("_hs") > 0).then("_hs"), "_min").alias("min_rtt"))


def _candidates(st: pl.DataFrame) -> pl.DataFrame:
    """The segments that re-send bytes (module docstring), with the columns :func:`classify` reads."""
    nxt = pl.col("nxt")
    seg = pl.col("is_seg") & ~pl.col("keepalive") & ~pl.col("zwp")
    behind = nxt.is_not_null() & (pl.col("seq") < nxt) & ~((pl.col("len") > 1) & (pl.col("seq") == nxt - 1))
    if int(st["has_ack"].sum()) == st.height - st["ack"].null_count():
        # every ACK number comes with the ACK flag, so the other side's latest ACK is at most the
        # highest it sent: the spurious rule needs ``dend <= r_hi_ack`` (a cheap superset)
        maybe = seg & (behind | ((pl.col("len") > 0) & (pl.col("dend") <= pl.col("r_hi_ack"))))
    else:
        r_ack = pl.col("ack").gather(pl.col("r_i").fill_null(0))
        maybe = seg & (behind | ((pl.col("len") > 0) & pl.col("r_i").is_not_null() & (pl.col("dend") <= r_ack)))
    rows = st.lazy().select(pl.arg_where(maybe.fill_null(False))).collect().to_series()
    cand = st.select("_i", "g", *KEYS, "frame", "time", "seq", "len", "dend", "nxt", "r_i", "r_hi_ack")[rows]
    # the previous transmission of the same segment (original or re-send; RFC 6298 §5.5 backoff)
    tx = (st.lazy().select("_i", "g", "seq").join(cand.lazy().select("g", "seq").unique(), on=["g", "seq"], how="semi")
          .sort("_i").with_columns(_prev=pl.col("_i").shift(1).over("g", "seq")).select("_i", "_prev").collect())
    cand = cand.join(tx, on="_i", how="left", maintain_order="left")
    r = cand["r_i"]
    prev = cand["_prev"].fill_null(-1).cast(pl.Int64).to_numpy()
    dupnum, sack_ev, since, fresh, third = _ack_runs(st, row_index(r), prev)
    cand = cand.with_columns(r_time=at(st, r, "time"), r_ack=at(st, r, "ack"), r_dupnum=pl.Series(dupnum),
                             r_sack_ev=pl.Series(sack_ev), _sack_new=pl.Series(fresh),
                             _dup3_t=pl.Series(np.where(third >= 0, st["time"].to_numpy()[np.maximum(third, 0)],
                                                        np.nan)).fill_nan(None),
                             _adv_t=pl.Series(np.where(since >= 0, st["time"].to_numpy()[np.maximum(since, 0)],
                                                       np.nan)).fill_nan(None),
                             _prev_t=at(st, cand["_prev"], "time"))
    spur = ((pl.col("len") > 0) & (pl.col("r_ack").fill_null(0) > 0) & (pl.col("dend") <= pl.col("r_ack"))).fill_null(
        False)
    return cand.with_columns(_spur=spur).filter(pl.col("_spur") | behind)


def _ack_runs(st: pl.DataFrame, r: np.ndarray,
              prev: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Loss signals the other side had sent as of rows ``r`` (-1: none), since its ACK last changed.

    Args:
        st: Prepared state.
        r: The other side's latest row before each candidate (-1: none).
        prev: The previous re-send of each candidate's segment (-1: none).

    Returns:
        The duplicate ACKs among its packets since the latest change of the ACK number
        (that packet included; 0 for -1); whether one of them carried a SACK block above
        its ACK; the row where the ACK number last changed (-1: none); whether a SACK block
        came after both that row and ``prev``; and the third duplicate ACK since the change
        when it came after both (-1: none). These are the signals the re-send may answer.
    """
    dupnum = np.zeros(len(r), dtype=np.int64)
    sack_ev = np.zeros(len(r), dtype=bool)
    since_all = np.full(len(r), -1, dtype=np.int64)
    fresh = np.zeros(len(r), dtype=bool)
    third3 = np.full(len(r), -1, dtype=np.int64)
    if not len(r):
        return dupnum, sack_ev, since_all, fresh, third3
    sg = segments(st)
    gcol = st["g"].to_numpy()
    gr = np.where(r >= 0, gcol[np.maximum(r, 0)], -1)
    dup = st["dup"].to_numpy()
    above = sack_above(st)
    above_g = gcol[above]
    for h in np.unique(gr[r >= 0]).tolist():
        rows = sg.rows(sg.find(h))  # type: ignore[arg-type]  # the direction's packets, in order
        ack = take(st, "ack", rows)
        runs = rows[np.r_[True, ack[1:] != ack[:-1]]]  # where its ACK number changed (first packet too)
        q = np.flatnonzero(gr == h)
        rq = r[q]
        since = runs[np.searchsorted(runs, rq, side="right") - 1]
        since_all[q] = since
        dups = rows[dup[rows]]
        dupnum[q] = np.searchsorted(dups, rq, side="right") - np.searchsorted(dups, since, side="left")
        sa = above[above_g == h]
        sack_ev[q] = np.searchsorted(sa, rq, side="right") > np.searchsorted(sa, since, side="left")
        # signals after the later of the ACK change and the previous re-send of the segment
        lo = np.maximum(since, prev[q] + 1)
        # the third duplicate ACK since the change triggers fast retransmit (RFC 5681 §3.2; later
        # ones only inflate the window), any SACK block may trigger the next hole's (RFC 6675)
        k3 = np.searchsorted(dups, since, side="left") + 2
        third = np.append(dups, np.iinfo(np.int64).max)[np.minimum(k3, len(dups))]
        third3[q] = np.where((third >= lo) & (third <= rq), third, -1)
        fresh[q] = np.searchsorted(sa, rq, side="right") > np.searchsorted(sa, lo, side="left")
    return dupnum, sack_ev, since_all, fresh, third3


def _dsack(st: pl.DataFrame) -> pl.DataFrame:
    """D-SACK blocks (RFC 2883): the first block below the ACK, or inside the second block."""
    owner, left, right, k = sack_blocks_of(st)
    one = k == 0
    rows, l1, r1 = owner[one], left[one], right[one]
    # the second block of the rows that have one (MISSING: none, or a missing edge)
    l2 = np.full(len(rows), MISSING, dtype=np.int64)
    r2 = np.full(len(rows), MISSING, dtype=np.int64)
    two = k == 1
    at2 = np.searchsorted(rows, owner[two])
    l2[at2], r2[at2] = left[two], right[two]
    ack = take(st, "ack", rows, -1)
    known = (l1 != MISSING) & (r1 != MISSING)  # (a block without edges says nothing)
    inside = (l2 != MISSING) & (r2 != MISSING) & (l2 <= l1) & (r1 <= r2)
    d = np.flatnonzero(known & ((r1 <= ack) | inside))
    rows = rows[d]
    return pl.DataFrame({
        "_i": rows.astype(np.uint32), "flow": st["flow"].to_numpy()[rows],
        "dir": (1 - st["dir"].to_numpy()[rows]).astype(np.int8), "seq": l1[d], "d_re": r1[d],
    })


def _timeouts(cand: pl.DataFrame, rto_floor_s: float) -> pl.DataFrame:
    """``cand`` with ``_to`` (a timeout, module docstring) and ``_past`` (the other side's ACK
    has passed everything outstanding at the direction's previous re-send)."""
    # the least RTO the sender can have had: its floor, and srtt (RFC 6298 §2.3 adds 4·rttvar, but
    # the sender's rttvar is its own: ns-2 times one segment per RTT in 10 ms ticks, Linux keeps
    # mdev ≥ the floor; ours, from every ACK, can be twice theirs early in a connection)
    rto = pl.max_horizontal(pl.lit(rto_floor_s), pl.col("srtt"))
    inf = float("inf")
    since_ack = (pl.col("time") - pl.col("_adv_t")).fill_null(inf) + _EPS_S
    # Linux re-arms the timer from the head's last send when a probe timer was pending
    # (tcp_rearm_rto), so it may fire less than an RTO after the ACK; such a re-send still follows
    # no packet that just arrived (as re-sends clocked by a partial ACK, or by an ACK that frees
    # the sender's own queue, do): the other side has been quiet for half an RTO
    since_tx = (pl.col("time") - pl.min_horizontal("_adv_t", "_prev_t")).fill_null(inf) + _EPS_S
    quiet = (pl.col("time") - pl.col("r_time")).fill_null(inf) + _EPS_S
    waited = quiet >= 0.5 * rto
    silent = (since_ack >= rto) | ((since_tx >= rto) & waited)
    # loss signals answered at once (late only by the sender's own queue): new SACK blocks; the
    # third duplicate ACK, unless the ACK is still below what was outstanding at the previous
    # re-send (RFC 6582 §3.2 step 1 "recover", ns-2 bug_fix_: no second fast retransmit in one
    # window, the timer fires instead); a duplicate ACK in SACK recovery (RFC 6675 §5) where the
    # trace lacks the blocks (ns-2). After half an RTO of quiet, the sender ignored them.
    prev_nxt = pl.col("nxt").shift(1).over("g")
    past = prev_nxt.is_null() | (pl.col("r_hi_ack").fill_null(-1) >= prev_nxt)
    dup3 = (((pl.col("time") - pl.col("_dup3_t")) < 0.5 * rto) & past).fill_null(False)
    dup_clocked = (pl.col("r_dupnum").fill_null(0) >= 3) & (quiet - _EPS_S <= DUP_CLOCKED_S)
    timeout = silent & (~(pl.col("_sack_new") | dup3 | dup_clocked) | waited)
    # a timeout re-sends the head and restarts the timer, backed off (RFC 6298 §5.5-5.6): the
    # re-sends within one RTO after it are clocked by ACKs, not by another timeout
    last_to = pl.when(pl.col("_to0")).then(pl.col("time")).shift(1).forward_fill().over("g")
    after_to = ((pl.col("time") - last_to) + _EPS_S >= rto).fill_null(True)
    return cand.with_columns(_to0=timeout, _past=past).with_columns(_to=pl.col("_to0") & after_to)


def classify(st: pl.DataFrame, rs: pl.DataFrame, *, est: pl.DataFrame | None = None,
             hs: pl.DataFrame | None = None, rto_floor_s: float = RTO_MIN_S) -> pl.DataFrame:
    """Find and classify retransmissions (see the module docstring).

    Args:
        st: Prepared state (:func:`tracekit.analysis._state.prepare`).
        rs: RTT samples with ``_i`` (:func:`tracekit.analysis.rtt.samples`).
        est: ``smoothed(rs)`` (:func:`tracekit.analysis.rtt.smoothed`), if at hand.
        hs: ``handshake(st)`` (:func:`tracekit.analysis.rtt.handshake`), if at hand.
        rto_floor_s: The minimum RTO of the sender's stack, seconds (:func:`rto_floor`).

    Returns:
        The ``retransmissions`` frame plus ``_i`` and ``episode`` (recoveries numbered per
        direction), in packet order.
    """
    if st.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    cand = _candidates(st)
    if cand.is_empty():
        return pl.DataFrame(schema=_SCHEMA)
    hs = _rtt.handshake(st) if hs is None else hs
    # out-of-order: the first segment into a hole (never-seen bytes), soon after the hole appeared
    hl = holes(st)
    if hl.height:
        j = find_hole(hl, cand["g"].to_numpy(), cand["seq"].to_numpy())
        ok = j >= 0
        jj = np.maximum(j, 0)
        cand = cand.with_columns(
            h_time=pl.Series(np.where(ok, hl["h_time"].to_numpy()[jj], np.nan)).fill_nan(None),
        ).join(first_fill(st, hl), on=["g", "seq"], how="left", maintain_order="left").join(
            min_rtt(st, rs, hs), on="flow", how="left", maintain_order="left")
        fresh = pl.col("h_time").is_not_null() & (pl.col("f_i") == pl.col("_i"))
        soon = (pl.col("time") - pl.col("h_time")) < pl.col("min_rtt").fill_null(OOO_DEFAULT_S)
        cand = cand.filter(~(fresh & soon).fill_null(False) | pl.col("_spur"))
        if cand.is_empty():
            return pl.DataFrame(schema=_SCHEMA)
    cand = _timeouts(_rtt.at_rows(st, _rtt.smoothed(rs) if est is None else est, cand), rto_floor_s)
    timeout, past = pl.col("_to"), pl.col("_past")
    new_ep = past | timeout
    base = pl.when(timeout).then(pl.lit("rto")).otherwise(pl.lit("fast"))
    cand = cand.with_columns(_ep=new_ep.cast(pl.Int32).cum_sum().over("g"), _base=base)
    cand = cand.with_columns(_kind=pl.col("_base").first().over("g", "_ep"))
    # D-SACK: the latest transmission starting at the block's left edge was not needed
    ds = _dsack(st)
    if ds.height:
        hit = (
            ds.sort("_i")
            .join_asof(cand.select("_i", *KEYS, "seq", "dend", _r_i=pl.col("_i")), on="_i", by=[*KEYS, "seq"],
                       check_sortedness=False)
            .filter(pl.col("_r_i").is_not_null() & (pl.col("dend") <= pl.col("d_re")))
            .select(pl.col("_r_i").alias("_i"), _dsack=pl.lit(True))
            .unique("_i")
        )
        cand = cand.join(hit, on="_i", how="left", maintain_order="left")
    else:
        cand = cand.with_columns(_dsack=pl.lit(None, pl.Boolean))
    kind = pl.when(pl.col("_spur") | pl.col("_dsack").fill_null(False)).then(pl.lit("spurious")).otherwise("_kind")
    return cand.select(
        "_i", *KEYS, "frame", "time", "seq", "len", kind.alias("kind"), pl.col("_ep").alias("episode")
    ).cast(_SCHEMA).sort("_i")  # type: ignore[arg-type]


def retransmissions(pk: pl.DataFrame, *, state: pl.DataFrame | None = None,
                    rtt_samples: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every retransmitted segment with its kind (see the module docstring).

    Args:
        pk: Packets at the vantage point.
        state: The prepared frame of ``pk``, if at hand.
        rtt_samples: RTT samples with ``_i`` (:func:`tracekit.analysis.rtt.samples`), if at hand.

    Returns:
        The ``retransmissions`` frame (:data:`tracekit.schema.RETRANSMISSIONS`).
    """
    st = prepare(pk) if state is None else state
    if st.is_empty():
        return empty(RETRANSMISSIONS)
    rs = _rtt.samples(st) if rtt_samples is None else rtt_samples
    return classify(st, rs).drop("_i", "episode")


def dup_acks(st: pl.DataFrame) -> pl.DataFrame:
    """Duplicate ACKs (Wireshark's definition) counted against the direction whose data they repeat.

    Returns:
        ``flow, dir, dup_acks`` where ``dir`` is the data direction (the ACKs travel the other way).
    """
    if st.is_empty():
        return pl.DataFrame(schema={"flow": pl.UInt32, "dir": pl.Int8, "dup_acks": pl.UInt32})
    return pick(st, pl.col("dup"), "flow", (1 - pl.col("dir")).cast(pl.Int8).alias("dir")).group_by(KEYS).agg(
        pl.len().cast(pl.UInt32).alias("dup_acks")
    )
