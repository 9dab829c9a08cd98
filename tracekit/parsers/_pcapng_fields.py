"""Field reads for :mod:`tracekit.parsers.pcapng`: block headers, options, timestamps.

Block headers are gathered a chunk of blocks at a time (:func:`block_fields`), so that the
pages of a memory-mapped file can be released behind the gathers instead of all staying
resident, and the fields are kept as uint32 (what they are) rather than int64.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Largest timestamp accepted, in seconds from the epoch either way (int64 ns stays exact).
MAX_SEC = 9_000_000_000
#: Packet block types: EPB, PB (obsolete), SPB.
PACKET_BLOCKS = (6, 2, 3)
#: Blocks whose header fields are gathered at a time.
_CHUNK = 1 << 18


@dataclass
class Interface:
    """What an IDB says about one interface (its packets are decoded with these)."""

    linktype: int
    snaplen: int
    tsresol: int = 6  # option byte: MSB 0 -> 10^-n s, MSB 1 -> 2^-n s; default 10^-6
    tsoffset: int = 0  # seconds added to every timestamp
    fcslen: int = 0  # FCS bytes at the end of every frame
    name: str | None = None
    section: int = 0


class Fields:
    """Gather unaligned u16/u32 fields of many blocks, each in its section's byte order.

    One gather per field through an overlapping ``<u4``/``>u4`` view (positions clipped to the
    buffer); both byte orders are read only when the file mixes them.
    """

    def __init__(self, buf: np.ndarray, big: np.ndarray) -> None:
        self.b = buf
        self.big = big
        self.mixed = bool(big.any()) and not bool(big.all())
        self.e = ">" if len(big) and big[0] else "<"

    def _get(self, pos: np.ndarray, width: int) -> np.ndarray:
        n = len(self.b) - width + 1
        p: npt.NDArray[np.int64] = np.clip(pos, 0, n - 1)

        def view(e: str) -> np.ndarray:
            return np.ndarray(shape=(n,), dtype=f"{e}u{width}", buffer=self.b, strides=(1,))

        if not self.mixed:
            return view(self.e)[p].astype(np.int64)
        return np.where(self.big, view(">")[p], view("<")[p]).astype(np.int64)

    def u32(self, pos: np.ndarray) -> np.ndarray:
        return self._get(pos, 4)

    def words(self, pos: np.ndarray, k: int) -> np.ndarray:
        """``k`` consecutive u32 at each position, as an (n, k) uint32 array: one gather of 4k bytes."""
        n = len(self.b) - 4 * k + 1
        view = np.ndarray(shape=(max(n, 0),), dtype=f"V{4 * k}", buffer=self.b, strides=(1,))
        at: npt.NDArray[np.int64] = np.clip(pos, 0, n - 1)
        raw = view[at]
        if not self.mixed:
            return raw.view(self.e + "u4").reshape(-1, k).astype(np.uint32)
        le, be = raw.view("<u4").reshape(-1, k), raw.view(">u4").reshape(-1, k)
        return np.where(self.big[:, None], be, le).astype(np.uint32)

    def u16(self, pos: np.ndarray) -> np.ndarray:
        return self._get(pos, 2)


def options(data: bytes, start: int, end: int, e: str) -> tuple[dict[int, bytes], bool]:
    """Parse a block's options (first value of each code); returns (options, well formed?)."""
    out: dict[int, bytes] = {}
    off = start
    while off + 4 <= end:  # every step advances by >= 4 bytes, so this ends
        code, ln = struct.unpack_from(e + "HH", data, off)
        if code == 0:
            return out, True
        if off + 4 + ln > end:
            return out, False
        out.setdefault(code, data[off + 4:off + 4 + ln])
        off += 4 + ln + ((-ln) % 4)
    return out, True


def text(value: bytes | None, limit: int = 120) -> str | None:
    """A printable, bounded string from an option value (student files are hostile input)."""
    if value is None:
        return None
    s = value.split(b"\0", 1)[0].decode("utf-8", errors="replace")
    s = "".join(ch for ch in s if ch.isprintable())
    return s[:limit] or None


def ts_to_ns(ts: np.ndarray, itf: Interface) -> tuple[np.ndarray, int]:
    """Convert raw 64-bit timestamps of one interface to int64 epoch ns with exact integer math.

    Float seconds would lose sub-µs precision (float64 epoch seconds resolve ~0.2 µs today), so
    seconds and fraction are split first and each is scaled in uint64 without overflow. The
    arithmetic is done in place on two arrays (seconds, fraction): ``ts`` can be a million rows.

    Returns:
        (ns, how many timestamps were out of range and clamped).
    """
    r = itf.tsresol
    if r & 0x80:
        n = r & 0x7F
        sec = ts >> np.uint64(n)
        frac = ts & np.uint64((1 << n) - 1)
        if n > 32:  # keep frac * 1e9 below 2^64: drop bits finer than 2^-32 s (< 1 ns)
            frac >>= np.uint64(n - 32)
            n = 32
        frac *= np.uint64(1_000_000_000)
        frac >>= np.uint64(n)
    else:
        unit = np.uint64(10**r)
        sec = ts // unit
        frac = ts % unit
        if r <= 9:
            frac *= np.uint64(10 ** (9 - r))
        else:
            frac //= np.uint64(10 ** (r - 9))
    bad = sec > np.uint64(MAX_SEC)
    np.minimum(sec, np.uint64(MAX_SEC), out=sec)
    s = sec.view(np.int64)  # <= MAX_SEC: the same value as int64
    s += itf.tsoffset
    bad |= s > MAX_SEC
    bad |= s < -MAX_SEC
    np.clip(s, -MAX_SEC, MAX_SEC, out=s)
    s *= 1_000_000_000
    s += frac.view(np.int64)  # < 10^9
    return s, int(np.count_nonzero(bad))


def block_fields(buf: np.ndarray, offs: np.ndarray, big: np.ndarray,
                 done: Callable[[int], None] | None) -> tuple[np.ndarray, ...]:
    """Type, length and trailing length of every block, and the fixed fields of packet blocks.

    Args:
        buf: The file's bytes.
        offs: Offset of every block.
        big: Whether each block's section is big-endian.
        done: Called with the offset below which ``buf`` is no longer read (to release pages).

    Returns:
        (type, length, trailing length) of every block as uint32, and for the packet blocks
        (in order) the five u32 after their header as an (n, 5) uint32 array: EPB/PB
        interface, timestamp high and low, captured and original length.
    """
    nb = len(offs)
    btype = np.empty(nb, dtype=np.uint32)
    blen = np.empty(nb, dtype=np.uint32)
    trailer = np.empty(nb, dtype=np.uint32)
    words = np.empty((nb, 5), dtype=np.uint32)
    k = 0
    for s in range(0, nb, _CHUNK):
        e = min(s + _CHUNK, nb)
        o, fl = offs[s:e], Fields(buf, big[s:e])
        head = fl.words(o, 2)
        btype[s:e], blen[s:e] = head[:, 0], head[:, 1]
        trailer[s:e] = fl.u32(o + blen[s:e] - 4)
        pkt = np.nonzero(np.isin(head[:, 0], PACKET_BLOCKS))[0]
        del head
        words[k:k + len(pkt)] = Fields(buf, big[s:e][pkt]).words(o[pkt] + 8, 5)
        k += len(pkt)
        if done is not None and e < nb:
            done(int(offs[e]))
    return btype, blen, trailer, words[:k]
