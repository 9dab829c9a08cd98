"""IPv4 and IPv6 fragment reassembly for the capture decoder, as Wireshark does it.

Wireshark (``epan/dissectors/packet-ip.c``, ``packet-ipv6.c`` with ``ip.defragment`` /
``ipv6.defragment`` on, their default) hands the reassembled datagram to TCP/UDP in the frame
that *completes* it: that frame carries the transport header, its own time and frame number,
and every other fragment is shown as "Fragmented IP protocol" without one. tracekit does the
same: the completing frame's row becomes the TCP/UDP row (header read from the offset-0
fragment, payload = the whole datagram's), the other fragments stay ``proto == "other"``.

Only lengths are needed, not the bytes, so headers-only captures reassemble too. A datagram is
identified by (src, dst, protocol, id) for IPv4 (RFC 791 §3.2) and (src, dst, id) for IPv6
(RFC 8200 §4.5). What a receiver would refuse is refused, with a warning per reason:

* ``W-FRAG-OVERLAP``: a fragment overlapping bytes already received, a second end, or bytes
  past the end (RFC 5722 for IPv6; Linux ``inet_frag_queue_insert`` drops the whole queue for
  IPv4 too since 4.19). A fragment inside bytes already received with the same offset and
  length is a duplicate (a capture on several interfaces) and is ignored, as Linux does.
* ``W-FRAG-OVERSIZE``: a datagram that would exceed 65,535 bytes (IPv4 total length,
  Linux ``ip_frag_reasm``; IPv6 payload length, RFC 8200 §4.5), the "ping of death".
* ``W-FRAG-LIMIT``: fragments refused because the reassembly buffers are full
  (``max_frag_datagrams`` pending datagrams or ``max_frag_bytes`` of fragment data, like
  Linux's ``ipfrag_high_thresh``) or discarded after ``frag_timeout_s`` without completing
  (Linux's ``ipfrag_time``), both from :class:`tracekit.limits.Limits`.
* ``W-FRAGMENT``: fragments of datagrams never completed (lost fragments, the capture's end).

Refused datagrams' fragments stay ``proto == "other"`` rows, like incomplete ones.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from tracekit.limits import Limits
from tracekit.parsers._gather import Gather
from tracekit.trace import WarningLog

#: Largest IPv4 total length / IPv6 payload length (the 16-bit length field).
MAX_DATAGRAM = 65535


@dataclass
class Fragment:
    """One fragment as the decoder read it (positions are absolute offsets in the capture)."""

    key: tuple[int, ...]
    frame: int  # 1-based frame number (for messages)
    time: float  # seconds
    offset: int  # byte offset of the fragment's data in the datagram
    length: int  # data bytes
    more: bool  # MF / M flag: not the last fragment
    hdr: int  # bytes of the unfragmentable part counted in the 65,535 limit (IPv4 IHL; IPv6 0+)
    l4: int  # offset-0 fragment: where the transport header starts
    skip: int  # offset-0 fragment: bytes of further extension headers before the transport header
    end: int  # offset-0 fragment: one past its last captured data byte
    proto: int  # offset-0 fragment: transport protocol number
    size: int  # original frame length
    caplen: int  # captured frame length


@dataclass
class Done:
    """A completed datagram: what the completing frame's row needs."""

    l4: int
    end: int
    l4len: int  # transport header + payload of the whole datagram
    proto: int
    size: int  # original lengths of all its frames (bytes on the wire)
    caplen: int


@dataclass
class _Pending:
    first_time: float
    first_frame: int
    parts: list[tuple[int, int]] = field(default_factory=list)  # (offset, end), sorted
    total: int | None = None  # datagram data length, once the last fragment is in
    held: int = 0  # data bytes held (for max_frag_bytes)
    head: Fragment | None = None  # the offset-0 fragment
    size: int = 0
    caplen: int = 0
    frames: int = 0


class Reassembler:
    """Pending datagrams across the chunks of one capture, in frame order."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.pending: OrderedDict[tuple[int, ...], _Pending] = OrderedDict()
        self.held = 0
        self.counts = {"overlap": 0, "oversize": 0, "limit": 0, "timeout": 0, "duplicate": 0, "done": 0,
                       "unread": 0}
        self.first: dict[str, int] = {}  # reason -> first frame

    def _note(self, reason: str, frame: int, n: int = 1) -> None:
        self.counts[reason] += n
        self.first.setdefault(reason, frame)

    def _drop(self, key: tuple[int, ...]) -> _Pending:
        p = self.pending.pop(key)
        self.held -= p.held
        return p

    def _expire(self, now: float, frame: int) -> None:
        """Discard datagrams older than ``frag_timeout_s`` (oldest first: insertion order)."""
        limit = self.limits.frag_timeout_s
        while self.pending:
            key, p = next(iter(self.pending.items()))
            if now - p.first_time <= limit:
                break
            self._drop(key)
            self._note("timeout", frame, p.frames)

    def add(self, f: Fragment) -> Done | None:
        """Take one fragment; the completed datagram when this fragment completes it."""
        self._expire(f.time, f.frame)
        end = f.offset + f.length
        if f.hdr + end > MAX_DATAGRAM:
            dropped = self._drop(f.key).frames if f.key in self.pending else 0
            self._note("oversize", f.frame, dropped + 1)
            return None
        p = self.pending.get(f.key)
        if p is None:
            if len(self.pending) >= self.limits.max_frag_datagrams or self.held + f.length > self.limits.max_frag_bytes:
                self._note("limit", f.frame)
                return None
            p = self.pending[f.key] = _Pending(f.time, f.frame)
        elif self.held + f.length > self.limits.max_frag_bytes:
            self._drop(f.key)
            self._note("limit", f.frame, p.frames + 1)
            return None
        # parts are sorted and disjoint: only the neighbours of the insertion point can overlap
        i = bisect.bisect_left(p.parts, (f.offset, end))
        if i < len(p.parts) and p.parts[i] == (f.offset, end):  # an exact duplicate: ignored (Linux IPFRAG_DUP)
            self._note("duplicate", f.frame)
            return None
        bad = (f.length <= 0
               or (i > 0 and p.parts[i - 1][1] > f.offset)
               or (i < len(p.parts) and p.parts[i][0] < end)
               or (p.total is not None and (end > p.total or (not f.more and end != p.total)))
               or (not f.more and bool(p.parts) and p.parts[-1][1] > end))
        if bad:
            self._drop(f.key)
            self._note("overlap", f.frame, p.frames + 1)
            return None
        p.parts.insert(i, (f.offset, end))
        p.held += f.length
        self.held += f.length
        p.size += f.size
        p.caplen += f.caplen
        p.frames += 1
        if not f.more:
            p.total = end
        if f.offset == 0:
            p.head = f
        # disjoint parts inside [0, total) whose lengths add up to total cover it
        if p.total is None or p.head is None or p.held != p.total:
            return None
        self._drop(f.key)
        self.counts["done"] += 1
        h = p.head
        return Done(l4=h.l4, end=h.end, l4len=p.total - h.skip, proto=h.proto, size=p.size, caplen=p.caplen)

    def finish(self, log: WarningLog, counts: dict[str, int]) -> None:
        """Report what was refused or left incomplete (once, after the last chunk)."""
        left = sum(p.frames for p in self.pending.values()) + self.counts["unread"]
        if self.pending:
            self.first.setdefault("left", min(p.first_frame for p in self.pending.values()))
        c = self.counts
        lim = self.limits
        for code, n, reason, msg in (
            ("W-FRAG-OVERLAP", c["overlap"], "overlap",
             "IP fragments empty, overlapping others or past the datagram's end (datagram refused, RFC 5722)"),
            ("W-FRAG-OVERSIZE", c["oversize"], "oversize", "IP fragments past 65,535 bytes (datagram refused)"),
            ("W-FRAG-LIMIT", c["limit"] + c["timeout"], "limit" if c["limit"] else "timeout",
             f"IP fragments dropped: reassembly buffers full ({lim.max_frag_datagrams:,} datagrams, "
             f"{lim.max_frag_bytes:,} bytes) or older than {lim.frag_timeout_s:g} s"),
            ("W-FRAGMENT", left, "left", "IP fragments of datagrams never completed (no transport header; "
             "kept as 'other')"),
        ):
            if n:
                log.add(code, msg, count=n, frame=self.first.get(reason),
                        hint="see docs/limits.md" if code == "W-FRAG-LIMIT" else None)
        if c["done"]:
            counts["reassembled"] = counts.get("reassembled", 0) + c["done"]
        if c["duplicate"]:
            counts["duplicate_fragments"] = counts.get("duplicate_fragments", 0) + c["duplicate"]



@dataclass
class FragCols:
    """Per-row fragment fields of one decoded chunk (filled by the IPv4/IPv6 header decoding)."""

    is_frag: np.ndarray  # bool: a real fragment (IPv6 atomic fragments, RFC 6946, are whole)
    offset: np.ndarray  # int64 bytes
    more: np.ndarray  # bool
    ident: np.ndarray  # int64
    data: np.ndarray  # int64 absolute position of the fragment's data
    unread: np.ndarray  # bool: an IPv6 Fragment header cut by the snap length
    addr6: tuple[np.ndarray, ...] = ()  # IPv6 rows' (src hi, src lo, dst hi, dst lo), in row order

    @classmethod
    def alloc(cls, n: int) -> FragCols:
        return cls(np.zeros(n, bool), np.zeros(n, np.int64), np.zeros(n, bool), np.zeros(n, np.int64),
                   np.zeros(n, np.int64), np.zeros(n, bool))


def frag6_header(fr: FragCols, bf: Gather, e: np.ndarray, pe: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Read the IPv6 Fragment headers (RFC 8200 §4.5) among the extension headers ``pe`` of rows ``e``.

    Returns:
        Per ``e``: True where the extension-header walk must stop, i.e. at a non-first fragment,
        whose data is not a header (a first fragment's walk goes on to its transport header).
    """
    stop = np.zeros(len(e), dtype=bool)
    if not at.any():
        return stop
    rows, p = e[at], pe[at]
    w = bf.be64(p, rows)  # next header, reserved, offset (13 bits) | res | M, identification
    off = ((w >> np.uint64(32)) & np.uint64(0xFFF8)).astype(np.int64)
    more = ((w >> np.uint64(32)) & np.uint64(1)) != 0
    whole = bf.ok(p, 8, bf.end[rows])
    fr.offset[rows] = off
    fr.more[rows] = more
    fr.ident[rows] = (w & np.uint64(0xFFFFFFFF)).astype(np.int64)
    fr.data[rows] = p + 8
    fr.is_frag[rows] = (off != 0) | more | ~whole
    fr.unread[rows] = ~whole
    stop[at] = (off != 0) | ~whole
    return stop


def reassemble(ra: Reassembler, o: dict[str, np.ndarray], fr: FragCols, frag: np.ndarray, bf: Gather,
               l3: np.ndarray, l4: np.ndarray, l4len: np.ndarray, tot: np.ndarray, nh: np.ndarray) -> None:
    """Feed a chunk's fragment rows (``frag``) to ``ra``, in row order, and rewrite completing rows.

    A completing row gets the datagram's transport header position (``l4``, in the offset-0
    fragment's frame: ``bf.end`` is moved to that fragment's captured end), length (``l4len``),
    protocol (``nh``), and, in ``size``/``caplen``, the lengths of all the datagram's frames
    (bytes on the wire for the connection's throughput); ``frag`` is cleared on it.
    """
    rows = np.nonzero(frag)[0]
    is4 = o["is4"]
    six = np.cumsum(~is4) - 1  # row -> index among the chunk's IPv6 rows
    dlen = tot - (fr.data - l3)  # fragment data bytes
    hdr = np.where(is4, fr.data - l3, fr.data - l3 - 48)  # unfragmentable part in the 65,535 limit
    cap_end = np.minimum(bf.end, fr.data + np.maximum(dlen, 0))
    a6 = [a.tolist() for a in fr.addr6]
    s4, d4 = o["s4"].tolist(), o["d4"].tolist()
    got: list[tuple[int, Done]] = []
    for r in rows.tolist():
        if fr.unread[r]:
            ra.counts["unread"] += 1
            continue
        if is4[r]:
            key: tuple[int, ...] = (4, s4[r], d4[r], int(nh[r]), int(fr.ident[r]))
        else:
            j = int(six[r])
            key = (6, a6[0][j], a6[1][j], a6[2][j], a6[3][j], int(fr.ident[r]))
        f = Fragment(key, int(o["frame"][r]), float(o["time"][r]), int(fr.offset[r]), int(dlen[r]),
                     bool(fr.more[r]), int(hdr[r]), int(l4[r]), int(l4[r] - fr.data[r]), int(cap_end[r]),
                     int(nh[r]), int(o["size"][r]), int(o["caplen"][r]))
        d = ra.add(f)
        if d is not None:
            got.append((r, d))
    if not got:
        return
    at = np.array([r for r, _ in got], dtype=np.int64)
    bf.end = bf.end.copy()
    bf.end[at] = [d.end for _, d in got]
    l4[at] = [d.l4 for _, d in got]
    l4len[at] = [d.l4len for _, d in got]
    nh[at] = [d.proto for _, d in got]
    o["size"][at] = [d.size for _, d in got]
    o["caplen"][at] = [d.caplen for _, d in got]
    frag[at] = False
