"""The packet columns the cwnd analysis reads, as numpy arrays, and lookups of packets by frame.

:class:`Packets` reads ``pk`` once per call (zero-copy where a column has no nulls) and
numbers every (flow, dir) pair through a small lookup table, so finding a packet's data
direction is one gather. The other analyses' frames (retransmissions, flight) name packets
by (flow, dir, frame): with increasing frame numbers a frame is found by its offset, else
by a join.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

from tracekit.schema import ACK, SYN

KEYS = ["flow", "dir"]
#: Largest (flow, dir) key space indexed directly (an int32 lookup table of this many entries).
_MAX_TABLE = 1 << 22
#: Rows per block where a pass needs no array of full length.
_BLOCK = 1 << 16


def _present(s: pl.Series) -> np.ndarray | np.bool_:
    """Where ``s`` has a value (all True without reading the column when it has no nulls)."""
    return s.is_not_null().to_numpy() if s.null_count() else np.True_


def col(df: pl.DataFrame, name: str, fill: int) -> np.ndarray:
    """Column ``name`` as numpy, nulls as ``fill`` (zero-copy when it has none)."""
    s = df[name]
    return (s.fill_null(fill) if s.null_count() else s).to_numpy()


class Packets:
    """The packet columns the cwnd analysis reads, as numpy arrays (read once per call).

    Masks: ``tcp`` (TCP with a flow), ``dnull`` (no direction), ``pay`` (payload > 0),
    ``seq_ok``, ``ack`` (an ACK number and the ACK flag), ``syn``, ``mss_ok`` (a column
    without nulls gives a scalar True). ``gk`` numbers every (flow, dir) pair of the capture
    directly (``flow × width + dir − dmin``, the last slot of each flow for a null dir) when
    that key space is small, which it is for any real capture; otherwise ``gk`` is None and
    directions are found by search.

    Args:
        pk: Packets at the vantage point.
    """

    def __init__(self, pk: pl.DataFrame) -> None:
        self.n = pk.height
        self.pk = pk
        proto = pk["proto"]
        if isinstance(proto.dtype, pl.Enum) and "tcp" in proto.dtype.categories and not proto.null_count():
            tcp = proto.to_physical().to_numpy() == proto.dtype.categories.to_list().index("tcp")
        else:
            tcp = (proto == "tcp").fill_null(False).to_numpy()
        self.tcp = tcp & _present(pk["flow"])
        self.dnull = ~_present(pk["dir"]) | np.zeros(self.n, dtype=bool)
        self.t, self.fr = pk["time"].to_numpy(), pk["frame"].to_numpy()
        self.flow, self.dr = col(pk, "flow", 0), col(pk, "dir", 0)
        self.payload = col(pk, "payload", 0)
        self.pay = self.payload > 0
        self.seq_ok = _present(pk["seq"])
        flags = col(pk, "flags", 0)
        self.syn = (flags & SYN) != 0
        # an ACK needs an ACK number and the ACK flag (a trace without flags is taken to set it)
        self.ack = _present(pk["ack"]) & (((flags & ACK) != 0) | ~_present(pk["flags"]))
        self.mss_ok = _present(pk["mss"])
        self.gk: npt.NDArray[np.int32] | None = None
        self.width = self.dmin = 0
        if self.n:
            self.dmin = int(self.dr.min())
            self.width = int(self.dr.max()) - self.dmin + 2
            if (int(self.flow.max()) + 1) * self.width <= _MAX_TABLE:
                gk = self.flow.astype(np.int32) * self.width + (self.dr.astype(np.int32) - self.dmin)
                gk[self.dnull] = (self.flow[self.dnull].astype(np.int32) + 1) * self.width - 1
                self.gk = gk

    def take(self, name: str, idx: np.ndarray) -> np.ndarray:
        """Column ``name`` at rows ``idx`` (rows the masks chose: never null there)."""
        s = self.pk[name]
        return s.to_numpy()[idx] if s.null_count() == 0 else s.gather(idx).to_numpy(writable=True)

    def table_size(self) -> int:
        """Number of (flow, dir) slots of ``gk``."""
        return (int(self.flow.max()) + 1) * self.width if self.n else 0

    def codes(self, flow: np.ndarray, d: np.ndarray, reverse: bool = False) -> np.ndarray:
        """Per packet: its index among the directions ``flow``, ``d`` (sorted by flow, dir), -1 for none.

        Args:
            reverse: A packet belongs to the direction ``1 - dir`` (an ACK; Int8 arithmetic as in polars).
        """
        if self.gk is not None:
            # a lookup table over the (flow, dir) slots, then one gather per packet
            size = self.table_size()
            fwd = np.full(size, -1, dtype=np.int32)
            dd = d.astype(np.int64) - self.dmin
            slot = flow.astype(np.int64) * self.width + dd
            ok = (dd >= 0) & (dd < self.width - 1) & (slot < size)
            fwd[slot[ok]] = np.flatnonzero(ok)
            if not reverse:
                return fwd[self.gk]
            s = np.arange(size)
            other = (1 - (s % self.width + self.dmin) + 128) % 256 - 128 - self.dmin  # wraps like Int8
            real = (s % self.width < self.width - 1) & (other >= 0) & (other < self.width - 1)
            rev = np.full(size, -1, dtype=np.int32)
            rev[real] = fwd[(s - s % self.width + other)[real]]
            return rev[self.gk]
        dkey = flow.astype(np.int64) * 512 + d.astype(np.int64) + 128
        rd = (np.int8(1) - self.dr) if reverse else self.dr
        k = self.flow.astype(np.int64) * 512 + rd.astype(np.int64) + 128
        c = np.minimum(np.searchsorted(dkey, k), max(dkey.size - 1, 0))
        return np.where(dkey[c] == k, c, -1).astype(np.int32) if dkey.size else np.full(k.size, -1, dtype=np.int32)


def frame_rows(p: Packets, d: DataIndex, q: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Inner join of the data rows with the (flow, dir, frame) rows of ``q``.

    Returns:
        (data row, row of ``q``) of every match.
    """
    if not d.frames_up:  # frame numbers repeat or go back (merged traces): a real join
        keys = pl.DataFrame({"flow": p.flow[d.idx], "dir": p.dr[d.idx], "frame": p.fr[d.idx]}).with_row_index("_r")
        j = keys.join(q.select(*KEYS, "frame").with_row_index("_k"), on=[*KEYS, "frame"], how="inner")
        return j["_r"].to_numpy().astype(np.int64), j["_k"].to_numpy().astype(np.int64)
    ok = (q["flow"].is_not_null() & q["dir"].is_not_null() & q["frame"].is_not_null()).to_numpy()
    r = _frame_pos(p.fr, col(q, "frame", 0).astype(np.uint64))
    ok &= r >= 0
    r[~ok] = 0
    ok &= (p.flow[r] == col(q, "flow", 0)) & (p.dr[r] == col(q, "dir", 0)) & ~p.dnull[r]
    k = np.flatnonzero(ok)
    rows = d.rows_of(r[k])
    return rows[rows >= 0], k[rows >= 0]


class DataIndex:
    """Where each data packet went: ``idx`` (packet row of every data row, by direction), the
    direction of every packet (``code``) and the directions reordered by time (their rows are
    not in packet order)."""

    def __init__(self, idx: np.ndarray, code: np.ndarray, lo: np.ndarray, hi: np.ndarray, frames_up: bool) -> None:
        self.idx, self.code, self.lo, self.hi, self.frames_up = idx, code, lo, hi, frames_up
        self.reordered = np.zeros(lo.size, dtype=bool)

    def rows_of(self, pk_rows: np.ndarray) -> np.ndarray:
        """Data row of each packet row (-1: not a data row); a search in its direction's rows."""
        out = np.full(pk_rows.size, -1, dtype=np.int64)
        c = self.code[pk_rows]
        for d in np.unique(c[c >= 0]).tolist():
            m = np.flatnonzero(c == d)
            rows = self.idx[self.lo[d]:self.hi[d]]
            order = np.argsort(rows) if self.reordered[d] else None
            srt = rows if order is None else rows[order]
            k = np.minimum(np.searchsorted(srt, pk_rows[m]), max(srt.size - 1, 0))
            hit = srt[k] == pk_rows[m] if srt.size else np.zeros(m.size, dtype=bool)
            k = k if order is None else order[k]
            out[m[hit]] = self.lo[d] + k[hit]
        return out


def _frame_pos(fr: np.ndarray, qf: np.ndarray) -> np.ndarray:
    """Packet row of each frame number in ``qf`` (-1: none) for strictly increasing ``fr``."""
    if int(fr[-1]) - int(fr[0]) == fr.size - 1:  # consecutive frame numbers: the row is the offset
        r = qf.astype(np.int64) - int(fr[0])
        r[(qf < fr[0]) | (qf > fr[-1])] = -1
        return r
    r = np.searchsorted(fr, qf)
    r[r >= fr.size] = 0
    return np.where(fr[r] == qf, r, -1)


def sacked(p: Packets, flight: pl.DataFrame, d: DataIndex, mask: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SACKed bytes above una at the data rows, as the flight analysis measured them (RFC 6675 "pipe").

    unacked − pipe (flight_bytes is Wireshark's figure, which already subtracts the latest
    ACK's SACK blocks); 0 where the flight frame has no row.

    Args:
        mask: The data packets.

    Returns:
        (rows with SACKed bytes, in order, their counts, and their rows in ``flight``).
    """
    none = np.empty(0, dtype=np.int64)
    if not (flight.height and "flight_sack_bytes" in flight.columns):
        return none, none, none
    b = "unacked_bytes" if "unacked_bytes" in flight.columns else "flight_bytes"
    base, sack = flight[b], flight["flight_sack_bytes"]
    if d.frames_up and flight.height == d.idx.size and not (base.null_count() or sack.null_count()):
        sel = np.flatnonzero(mask)
        if sel.size == flight.height and _same(flight["frame"], p.fr, sel) and _same(flight["flow"], p.flow, sel) \
                and _same(flight["dir"], p.dr, sel):
            # the flight frame has one row per data segment, in packet order: no join needed
            v = base.to_numpy() - sack.to_numpy()
            nz = np.flatnonzero(v > 0)
            rows = d.rows_of(sel[nz])
            order = np.argsort(rows, kind="stable")
            return rows[order], v[nz][order].astype(np.int64), nz[order].astype(np.int64)
    v = flight.select((pl.col(b) - pl.col("flight_sack_bytes")).clip(lower_bound=0).fill_null(0)).to_series()
    keys = flight.select(*KEYS, pl.col("frame").cast(pl.UInt64)).with_columns(_v=v).with_row_index("_pos")
    keys = keys.unique([*KEYS, "frame"])  # a repeated key: any of its rows, as the join did
    rows, k = frame_rows(p, d, keys.drop("_pos"))
    val, pos = col(keys, "_v", 0)[k], keys["_pos"].to_numpy()[k].astype(np.int64)
    order = np.argsort(rows, kind="stable")
    rows, val, pos = rows[order], val[order], pos[order]
    keep = val != 0
    return rows[keep], val[keep].astype(np.int64), pos[keep]


def sack_places(p: Packets, flight: pl.DataFrame, d: DataIndex, sacked_at: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The data rows whose segments get SACKed, and from which ``flight`` row on they count as SACKed.

    Args:
        sacked_at: Per flight row, from which flight row on its segment counts as SACKed
            (:func:`tracekit.analysis.flight.flight_and_sacks`); None: unknown.

    Returns:
        (data rows, their first SACKed flight row); empty when nothing is SACKed.
    """
    none = np.empty(0, dtype=np.int64)
    if sacked_at is None or sacked_at.size != flight.height:
        return none, none
    ks = np.flatnonzero(sacked_at >= 0)
    if not ks.size:
        return none, none
    rows, k = frame_rows(p, d, flight[ks].select(*KEYS, pl.col("frame").cast(pl.UInt64)))
    return rows.astype(np.int64), sacked_at[ks[k]].astype(np.int64)


def _same(s: pl.Series, x: np.ndarray, sel: np.ndarray) -> bool:
    """Does ``s`` (no nulls) equal ``x[sel]``? Compared chunk by chunk and block by block (no full copies)."""
    if s.null_count():
        return False
    pos = 0
    for chunk in s.get_chunks():
        c = chunk.to_numpy()
        for k in range(0, c.size, _BLOCK):
            part = c[k:k + _BLOCK]
            if not np.array_equal(part, x[sel[pos + k:pos + k + part.size]]):
                return False
        pos += c.size
    return True


