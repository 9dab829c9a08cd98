"""Build small TCP conversations as ``packets`` frames for the analysis tests.

Each packet is a tuple ``(time, dir, seq, len, ack, flags)`` plus keyword extras
(``win``, ``sack``, ``tsv``, ``tse``); dir 0 is the sender of the data. Flags are
letters: ``S`` SYN, ``A`` ACK, ``F`` FIN, ``R`` RST, ``P`` PSH.
"""

from __future__ import annotations

from typing import Any

import polars as pl
from conftest import make_events

FLAG_BITS = {"F": 0x01, "S": 0x02, "R": 0x04, "P": 0x08, "A": 0x10}


def P(t: float, d: int, seq: int, ln: int = 0, ack: int | None = None, flags: str = "A", **kw: Any) -> dict[str, Any]:  # noqa: N802
    """One packet as a dict (see the module docstring)."""
    return {"t": t, "d": d, "seq": seq, "len": ln, "ack": ack, "flags": flags, **kw}


def conv(*pkts: dict[str, Any], mss: int | None = None) -> pl.DataFrame:
    """A packets frame (schema-conformant) holding the given packets in order."""
    n = len(pkts)
    cols: dict[str, Any] = {
        "time": [p["t"] for p in pkts],
        "dir": [p["d"] for p in pkts],
        "seq": [p["seq"] for p in pkts],
        "payload": [p["len"] for p in pkts],
        "ack": [p["ack"] for p in pkts],
        "flags": [sum(FLAG_BITS[c] for c in p["flags"]) for p in pkts],
        "win": [p.get("win", 65535) for p in pkts],
        "sack": [p.get("sack") for p in pkts],
        "ts_val": [p.get("tsv") for p in pkts],
        "ts_ecr": [p.get("tse") for p in pkts],
        "size": [54 + p["len"] for p in pkts],
        "mss": [mss if "S" in p["flags"] else None for p in pkts],
    }
    return make_events(n, **cols)


def handshake(t0: float = 0.0, rtt: float = 0.01) -> list[dict[str, Any]]:
    """SYN, SYN-ACK, ACK as seen at the initiator (dir 0), relative sequence numbers."""
    return [P(t0, 0, 0, 0, None, "S"), P(t0 + rtt, 1, 0, 0, 1, "SA"), P(t0 + rtt + 1e-5, 0, 1, 0, 1, "A")]
