"""Decoded capture rows: the columns the compiled reader (``tracekit._core.read_capture``) returns.

Link, IP (with fragment reassembly) and TCP/UDP headers are decoded in Rust (``src/capture/``);
this module only names what comes back, so that :mod:`tracekit.parsers._frame` can build the
packets frame from numpy arrays that own the reader's memory (no copy, no per-packet object).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Rows"]


@dataclass
class Rows:
    """Decoded rows (one per IP packet) as numpy columns, in frame order.

    TCP fields are set on TCP rows (``proto == 0``) only; option fields where their ``*_ok``
    mask is True. Addresses come as ids over the distinct ones (a capture has few hosts).
    """

    frame: np.ndarray  # uint64
    time: np.ndarray  # float64, seconds from the first record
    proto: np.ndarray  # uint8: 0 tcp, 1 udp, 2 other
    size: np.ndarray  # uint32 original length
    caplen: np.ndarray  # uint32
    payload: np.ndarray  # uint32
    ports: np.ndarray  # bool: TCP or UDP with a readable header
    sport: np.ndarray  # int32
    dport: np.ndarray  # int32
    seq_raw: np.ndarray  # uint32
    ack_raw: np.ndarray  # uint32
    flags: np.ndarray  # uint8
    win_raw: np.ndarray  # uint16
    mss: np.ndarray  # uint16
    mss_ok: np.ndarray  # bool
    wscale: np.ndarray  # uint8, clamped to 14
    wscale_ok: np.ndarray  # bool
    ts_val: np.ndarray  # uint32
    ts_ecr: np.ndarray  # uint32
    ts_ok: np.ndarray  # bool
    ttl: np.ndarray  # uint8: IPv4 TTL or IPv6 hop limit
    #: Address ids (uint32) of every row's source and destination: the position of the address in
    #: ``addr4`` then ``addr6`` (IPv4 ascending, then IPv6; ``src/capture/addrs.rs``)
    src_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    dst_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    #: The distinct IPv4 addresses (uint32), then the distinct IPv6 ones as (high, low) uint64 halves
    addr4: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    addr6: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (np.zeros(0, np.uint64),) * 2)
    #: SACK blocks: (row, left, right) raw 32-bit edges, in option order within a row
    sack: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    #: tunnelled rows: (row, outer is IPv4, tunnel code, src hi, src lo, dst hi, dst lo)
    outer: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    #: tunnel names by code (``outer``'s third array)
    tunnel_names: list[str] = field(default_factory=list)

    @classmethod
    def from_core(cls, out: dict[str, Any]) -> Rows:
        """The rows of a ``read_capture`` result (its arrays are taken over, not copied)."""
        rows = cls(**out["rows"])
        rows.src_id, rows.dst_id, rows.addr4, hi, lo = out["ids"]
        rows.addr6 = (hi, lo)
        sack = out["sack"]
        rows.sack = [tuple(sack)] if len(sack[0]) else []
        outer = out.get("outer")
        rows.outer = [tuple(outer)] if outer is not None and len(outer[0]) else []
        rows.tunnel_names = list(out.get("tunnel_names", []))
        return rows

    def columns(self) -> list[str]:
        """Names of the per-row array fields."""
        return [k for k, v in self.__dict__.items() if isinstance(v, np.ndarray)]

    def __len__(self) -> int:
        return len(self.frame)
