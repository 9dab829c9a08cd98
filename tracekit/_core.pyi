"""Type stubs of the compiled core (the Rust crate at the repository root, built by maturin)."""

from typing import Any

import numpy as np
import numpy.typing as npt

def version() -> str: ...

# src/state: per-connection TCP state
def tcp_state(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], seq: npt.NDArray[np.int64],
    len: npt.NDArray[np.uint32], flags: npt.NDArray[np.uint8], ack: npt.NDArray[np.int64],
    win: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8],
           npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
def tcp_flight(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], seq: npt.NDArray[np.int64],
    len: npt.NDArray[np.uint32], flags: npt.NDArray[np.uint8], ack: npt.NDArray[np.int64],
    gap: npt.NDArray[np.bool_], stray: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]: ...

# src/capture: pcap/pcapng records, link/IP/TCP/UDP decoding, IP reassembly
def read_capture(source: object, format: str, limits: object, timeout_text: str) -> dict[str, Any]: ...
def linktypes() -> dict[int, str]: ...

# src/state/cwnd.rs: the cwnd estimate's per-segment passes
def cwnd_pipe(
    time: npt.NDArray[np.float64], seq_end: npt.NDArray[np.int64], una: npt.NDArray[np.int64],
    dup: npt.NDArray[np.bool_], new_ack: npt.NDArray[np.bool_], sack_at: npt.NDArray[np.int64],
    sack_val: npt.NDArray[np.int64], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
    min_rtt: npt.NDArray[np.float64], ev: npt.NDArray[np.int64], ends: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def cwnd_phases(
    time: npt.NDArray[np.float64], est: npt.NDArray[np.float64], ssthresh: npt.NDArray[np.float64],
    recovery: npt.NDArray[np.bool_], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
    mss: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.uint8]]: ...
def cwnd_acks(
    time: npt.NDArray[np.float64], seq_end: npt.NDArray[np.int64], pay: npt.NDArray[np.int64],
    key: npt.NDArray[np.float64], tie: npt.NDArray[np.int64], named: npt.NDArray[np.int64],
    fast: npt.NDArray[np.int64], lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], alo: npt.NDArray[np.int64],
    ahi: npt.NDArray[np.int64], a_time: npt.NDArray[np.float64], a_ack: npt.NDArray[np.int64],
    a_key: npt.NDArray[np.float64], a_tie: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int64],
           npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.float64],
           npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
