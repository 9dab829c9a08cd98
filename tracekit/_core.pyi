"""Type stubs of the compiled core (the Rust crate at the repository root, built by maturin)."""

import os
from typing import Any

import numpy as np
import numpy.typing as npt

def version() -> str: ...

# src/state: per-connection TCP state
def tcp_state(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], seq: npt.NDArray[np.int64],
    len: npt.NDArray[np.uint32], flags: npt.NDArray[np.uint8], ack: npt.NDArray[np.int64],
    win: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8], npt.NDArray[np.int64],
           npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...

# src/capture: pcap/pcapng records, link/IP/TCP/UDP decoding, IP reassembly
def read_capture(source: object, format: str, limits: object, timeout_text: str) -> dict[str, Any]: ...
def linktypes() -> dict[int, str]: ...
def time_back_warning(
    ts_ns: npt.NDArray[np.int64],
) -> tuple[str, str, int, int | None, int | None, str | None] | None: ...

# src/stream: the per-direction summary streamed from a pcap or pcapng file (per-connection state only)
# (flows columns, plus the flows records' inputs _data_t0, _acked_t, _ack_t, _ack_bytes, _syn_t, _smss,
# _srtt, _rttvar for tracekit._flowrows and its models; NaN / -2^62 for none; max_cwnd_bytes,
# cwnd_source, loss_events None without an estimate row; the account's cwnd events, src/stream/cwndstory.rs:
# per row _story_rows, _ca_start, _story_runs, _reductions, then flat _run_*, _cut_*, _red_t, _red_backed;
# the account's other inputs, src/stream/account.rs: per row _rt_n, _rt_t0, _rt_t1, _rt_fast, _rt_rto,
# _zw_n, _zw_t0, _zw_t1 (the other direction's zero windows), _rt_picked, _stalls, then flat _rt_t, _rt_kind
# (the retransmissions inside the loss windows the account reads), _stall_start, _stall_end, _stall_cause;
# `capture`: read_capture's meta, counts, records, t0_ns and the rows / rows cut short, for
# tracekit.streamed.trace_block, and last_t, data, data_cut, data_cut_t for the account's warnings;
# threads: pass 2's connections on at most this many threads, None: rayon's count; src/stream/shards.rs)
def stream_summary(
    path: str | os.PathLike[str], rto_floor_s: float = 0.2, threads: int | None = None
) -> dict[str, Any]: ...

# src/state/rtt.rs: RTT samples (seq with Karn's rule, TCP timestamps)
def tcp_rtt(
    g: npt.NDArray[np.uint32], time: npt.NDArray[np.float64], seq: npt.NDArray[np.int64],
    len: npt.NDArray[np.int64], flags: npt.NDArray[np.uint8], ack: npt.NDArray[np.int64],
    ts_val: npt.NDArray[np.int64], ts_ecr: npt.NDArray[np.uint32], bits: npt.NDArray[np.uint8],
    nxt: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64], npt.NDArray[np.uint32], npt.NDArray[np.float64]]: ...

# src/state/sack.rs: the flight frame's columns per data packet (its keys; Wireshark's list and SACK
# correction, RFC 6675 pipe without loss marking, outstanding data), and when each was SACKed
def tcp_flight_sack(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], seq: npt.NDArray[np.int64],
    len: npt.NDArray[np.uint32], flags: npt.NDArray[np.uint8], ack: npt.NDArray[np.int64],
    bits: npt.NDArray[np.uint8], block_row: npt.NDArray[np.int64], block_left: npt.NDArray[np.int64],
    block_right: npt.NDArray[np.int64], frame: npt.NDArray[np.uint64] | None = None,
    time: npt.NDArray[np.float64] | None = None,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8], npt.NDArray[np.uint64], npt.NDArray[np.float64],
           npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64],
           npt.NDArray[np.int64]]: ...

# src/state/bins.rs: throughput bins (refused, then per direction flow, dir, first bin, bins;
# per bin wire bytes, new payload bytes, packets)
def throughput_bins(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], time: npt.NDArray[np.float64],
    frame: npt.NDArray[np.uint64], size: npt.NDArray[np.uint32], payload: npt.NDArray[np.uint32],
    seq: npt.NDArray[np.int64], k: npt.NDArray[np.int64], max_bins: int,
) -> tuple[int, npt.NDArray[np.uint32], npt.NDArray[np.int8], npt.NDArray[np.int64], npt.NDArray[np.int64],
           npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]]: ...

# src/state/stalls.rs: stalls and their causes
def tcp_stalls(
    g: npt.NDArray[np.uint32], time: npt.NDArray[np.float64], len: npt.NDArray[np.int64],
    hi_dend: npt.NDArray[np.int32] | npt.NDArray[np.int64], ack: npt.NDArray[np.int64],
    win: npt.NDArray[np.int64], new_ack: npt.NDArray[np.bool_], syn_rows: npt.NDArray[np.uint32],
    rto_rows: npt.NDArray[np.uint32], est_rows: npt.NDArray[np.uint32],
    est_srtt: npt.NDArray[np.float64], rs_flow: npt.NDArray[np.uint32], rs_dir: npt.NDArray[np.int8],
    rs_rtt: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.uint8]]: ...

# src/state/retrans.rs: retransmissions and their kinds (0 fast, 1 rto, 2 spurious)
def tcp_retrans(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], time: npt.NDArray[np.float64],
    seq: npt.NDArray[np.int64], len: npt.NDArray[np.int64], nxt: npt.NDArray[np.int64],
    ack: npt.NDArray[np.int64], r_hi_ack: npt.NDArray[np.int64], flags: npt.NDArray[np.uint8],
    bits: npt.NDArray[np.uint8], est_rows: npt.NDArray[np.uint32], est_srtt: npt.NDArray[np.float64],
    sack_row: npt.NDArray[np.int64], sack_left: npt.NDArray[np.int64],
    sack_right: npt.NDArray[np.int64], min_rtt_flow: npt.NDArray[np.uint32], min_rtt: npt.NDArray[np.float64],
    rto_floor: float,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint8], npt.NDArray[np.int32]]: ...

# src/state/cwnd/: the cwnd estimate in one call (estimate.rs) and its input rows (rows.rs, rows_frames.rs)
def cwnd_estimate(
    rows: tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
                npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.float64]],
    sack: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
                npt.NDArray[np.int64]],
    retx: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]],
    acks: tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]],
    dirs: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
                npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_]],
    hold_backoff: bool,
    whole: bool = ...,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.uint8],
           tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.bool_],
                 npt.NDArray[np.bool_], npt.NDArray[np.float64]]]: ...
_I64 = npt.NDArray[np.int64]
_F64 = npt.NDArray[np.float64]
_B = npt.NDArray[np.bool_]
_Cols = tuple[npt.NDArray[Any], ...]  # (dtypes: src/state/cwnd/py.rs)
def cwnd_rows(
    packets: _Cols, dirs: _Cols, flight: tuple[_Cols, npt.NDArray[Any], npt.NDArray[Any]], retrans: _Cols,
    timeouts: _Cols,
) -> tuple[tuple[_I64, _I64, _I64, _I64, _F64, _F64, _B, _F64], tuple[_F64, _I64, _I64, _I64, _B, _B, _F64],
           tuple[_I64, _I64, _I64, _I64, _I64], tuple[_I64, _I64, _B], tuple[_F64, _I64]] | None: ...

# src/state/conn.rs: connections, directions and relative numbers (every reader)
def tcp_connections(
    src: npt.NDArray[np.uint32] | npt.NDArray[np.int64], dst: npt.NDArray[np.uint32] | npt.NDArray[np.int64],
    sport: npt.NDArray[np.int32] | npt.NDArray[np.int64], dport: npt.NDArray[np.int32] | npt.NDArray[np.int64],
    l4: npt.NDArray[np.bool_], tcp: npt.NDArray[np.bool_], udp: npt.NDArray[np.bool_], flags: npt.NDArray[np.uint8],
    seq: npt.NDArray[np.uint32], ack: npt.NDArray[np.uint32], win: npt.NDArray[np.uint16] | npt.NDArray[np.int64],
    wscale: npt.NDArray[np.uint8], wscale_ok: npt.NDArray[np.bool_], sack_row: npt.NDArray[np.int64],
    sack_left: npt.NDArray[np.int64], sack_right: npt.NDArray[np.int64],
) -> tuple[int, npt.NDArray[np.uint32], npt.NDArray[np.int8], npt.NDArray[np.int64], npt.NDArray[np.int64],
           npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...

# src/state/flowstats.rs: per data direction ACK timing, initial window, peer window, limit shares
def flow_stats(
    g: npt.NDArray[np.uint32], len: npt.NDArray[np.int64], time: npt.NDArray[np.float64],
    dend: npt.NDArray[np.int64], new_ack: npt.NDArray[np.bool_], ack: npt.NDArray[np.int64],
    win: npt.NDArray[np.int64], hi_dend: npt.NDArray[np.int64], r_hi_ack: npt.NDArray[np.int64],
    r_win: npt.NDArray[np.int64], est_rows: npt.NDArray[np.uint32], est_srtt: npt.NDArray[np.float64], block: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64],
           npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
           npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...

# src/state/group.rs: rows grouped by a small code, row order within each group
def group_rows(
    mask: npt.NDArray[np.bool_], code: npt.NDArray[np.int32], groups: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...

# src/state/srtt.rs: RFC 6298 smoothed RTT per direction, (sample index, srtt, rttvar) by row
def tcp_srtt(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], row: npt.NDArray[np.uint32],
    seq: npt.NDArray[np.bool_], rtt: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...

# src/state/dirstats.rs: per direction counts, bytes, time span, SYN options and handshake times
def dir_stats(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int16], time: npt.NDArray[np.float64],
    payload: npt.NDArray[np.uint32], size: npt.NDArray[np.uint32], seq: npt.NDArray[np.int64],
    flags: npt.NDArray[np.uint8], mss: npt.NDArray[np.int32], wscale: npt.NDArray[np.int16],
) -> dict[str, npt.NDArray[Any]]: ...  # size, mss, wscale may be empty: none known

# src/state/flowstats/summary.rs: per direction RTT, retransmission, flight and stall summaries
def flow_summary(
    rtt: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8]], rtt_s: npt.NDArray[np.float64],
    rtt_seq: npt.NDArray[np.bool_], rt: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8]],
    rt_bytes: npt.NDArray[np.int64], rt_kind: npt.NDArray[np.uint8],
    fl: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8]], fl_bytes: npt.NDArray[np.int64],
    st: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8]], st_dur: npt.NDArray[np.float64],
) -> dict[str, npt.NDArray[Any]]: ...

# src/state/flowdirs.rs: per flows row (flow, dir): received bytes, drops, duplicate ACKs, last srtt
def flow_dirs(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8],
    ev: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8], npt.NDArray[np.float64], npt.NDArray[np.int64],
              npt.NDArray[np.int64], npt.NDArray[np.uint8]] | tuple[npt.NDArray[Any], ...],
    dup: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8], npt.NDArray[np.bool_]],
    est: tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8], npt.NDArray[np.float64], npt.NDArray[np.float64]],
) -> dict[str, npt.NDArray[Any]]: ...

# src/state/vantage.rs: per connection, where the capture was taken (0 sender, 1 receiver, 2 middle, -1 none)
def tcp_vantage(
    flow: npt.NDArray[np.uint32], dir: npt.NDArray[np.int8], keep: npt.NDArray[np.bool_],
    time: npt.NDArray[np.float64], payload: npt.NDArray[np.uint32], flags: npt.NDArray[np.uint8],
    ttl: npt.NDArray[np.uint8], r_flow: npt.NDArray[np.uint32], r_dir: npt.NDArray[np.int8],
    r_rtt: npt.NDArray[np.float64],
    r_seq: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int8]]: ...

# src/state/cwnd/events.rs: the reductions of each cwnd series, which are loss events, per-series stats
CWND_SOURCE_ESTIMATE: int
CWND_SOURCE_TRACE: int
CWND_SOURCE_NONE: int
CWND_DECREASE: float
CWND_STORY_CAP: int
# src/stream/fstats.rs: the frames path's limit-share summing block and batch rows, which the stream follows
STREAM_SUM_BLOCK: int
# src/state/stalls.rs, src/state/retrans.rs: the names of the stall cause and retransmission kind codes
STALL_CAUSES: tuple[str, ...]
RETRANS_KINDS: tuple[str, ...]
STREAM_BATCH_ROWS: int
def cwnd_story(
    flow: npt.NDArray[np.int64], dir: npt.NDArray[np.int64], time: npt.NDArray[np.float64],
    cwnd: npt.NDArray[np.float64], phase: npt.NDArray[np.int8], r_flow: npt.NDArray[np.int64],
    r_dir: npt.NDArray[np.int64], r_time: npt.NDArray[np.float64], r_backed: npt.NDArray[np.bool_], cap: int,
) -> dict[str, npt.NDArray[Any]]:
    """The account's cwnd events of every direction's chosen series (src/state/cwnd/story.rs):
    per direction ``flow, dir, rows, ca, ca_start``; its told slow-start runs ``run_*`` and its
    first ``cap + 1`` reductions' rows ``cut_*`` (``run_dir``/``cut_dir``: the direction's index)."""
def cwnd_reductions(
    flow: npt.NDArray[np.int64], dir: npt.NDArray[np.int64], source: npt.NDArray[np.uint8],
    time: npt.NDArray[np.float64], cwnd: npt.NDArray[np.float64], cwnd_ok: npt.NDArray[np.bool_],
    ssthresh: npt.NDArray[np.float64], ssthresh_ok: npt.NDArray[np.bool_], recovery: npt.NDArray[np.bool_],
    e_flow: npt.NDArray[np.int64], e_dir: npt.NDArray[np.int64], e_time: npt.NDArray[np.float64],
    w_flow: npt.NDArray[np.int64], w_dir: npt.NDArray[np.int64], w_tol: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.float64],
           npt.NDArray[np.bool_], npt.NDArray[np.uint32], npt.NDArray[np.float64]]: ...
