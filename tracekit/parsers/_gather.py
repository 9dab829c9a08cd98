"""Bounds-safe, vectorized reads of header fields from many packets of a capture at once.

Every read gathers one field for a set of packets through an overlapping big-endian view of the
capture (``>u2``/``>u4``/``>u8`` words starting at every byte: stride 1, no copy), so a 32-bit
field costs one gather, not four byte gathers and shifts. Positions are absolute offsets in the
capture; they are clipped, never trusted, so garbage lengths cannot index out of bounds. Callers
decide what is valid with :meth:`Gather.ok` (within the packet's captured bytes).

Measured on the 1.17 M-packet benchmark capture: a read costs ~10 ns per packet whatever its
width (a cache miss per packet). Copying the first 128 bytes of every packet into a window and
*gathering* fields from it brought nothing (the copy cost what the reads saved); what pays is a
window read with fixed-offset strided views, no gather at all, which is what the fast path for
the common layout does (:mod:`tracekit.parsers._fast`). Everything else reads here.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


class Gather:
    """Header reads for one chunk of packets.

    Args:
        buf: The capture's bytes.
        start: Offset of each packet's first byte in ``buf``.
        end: One past each packet's last captured byte.
    """

    def __init__(self, buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        if len(buf) < 8:  # the overlapping views below need 8 bytes
            buf = np.concatenate([buf, np.zeros(8, dtype=np.uint8)])
        self.b = buf
        self.n = len(buf)
        self.start = start
        self.end = end
        self._views: dict[int, np.ndarray] = {}

    def sub(self, sel: np.ndarray) -> Gather:
        """The same reads for a subset of this object's packets (``sel`` indexes them)."""
        other = Gather.__new__(Gather)
        other.__dict__.update(self.__dict__)
        other.start, other.end = self.start[sel], self.end[sel]
        return other

    def ok(self, pos: np.ndarray, n: int, end: np.ndarray | None = None) -> np.ndarray:
        """True where ``n`` bytes at ``pos`` are inside the packet's captured bytes."""
        e = self.end if end is None else end
        return (pos >= 0) & (pos + n <= e)

    def read(self, pos: np.ndarray, width: int, sel: np.ndarray | None = None) -> np.ndarray:
        """``width``-byte big-endian unsigned values at ``pos``.

        ``sel`` says which of this object's packets the positions belong to (all when None); the
        reads do not need it, but callers pass it so that the packet of every read is explicit.
        """
        if width == 1:
            return self.b.take(pos, mode="clip")
        v = self._views.get(width)
        if v is None:
            v = np.ndarray(shape=(self.n - width + 1,), dtype=f">u{width}", buffer=self.b, strides=(1,))
            self._views[width] = v
        at: npt.NDArray[np.int64] = np.clip(pos, 0, self.n - width)
        return v[at]

    def u8(self, pos: np.ndarray, sel: np.ndarray | None = None) -> np.ndarray:
        return self.read(pos, 1, sel).astype(np.int64)

    def be16(self, pos: np.ndarray, sel: np.ndarray | None = None) -> np.ndarray:
        return self.read(pos, 2, sel).astype(np.int64)

    def be32(self, pos: np.ndarray, sel: np.ndarray | None = None) -> np.ndarray:
        return self.read(pos, 4, sel).astype(np.int64)

    def be64(self, pos: np.ndarray, sel: np.ndarray | None = None) -> np.ndarray:
        """8 bytes as uint64 (split with shifts; never cast to int64 before shifting)."""
        return self.read(pos, 8, sel).astype(np.uint64)

    def le32(self, pos: np.ndarray, sel: np.ndarray | None = None) -> np.ndarray:
        return self.read(pos, 4, sel).astype(np.uint32).byteswap().astype(np.int64)
