//! The cwnd estimate's driver: loss events, the pipe, recoveries, ssthresh and phases of every
//! data row in one call (`tracekit._core.cwnd_estimate`; the rules are in the parent module's
//! docs and `tracekit.analysis._cwnd_estimate`).
//!
//! Two passes: the first finds the loss events ([`super::episodes`]) and builds the pipe
//! ([`super::pipe`]); the second decides recoveries ([`super::recoveries`]) and, once the
//! pipe's own columns are freed, spreads ssthresh over the rows and computes the phases.

use super::episodes::{episodes_of, Episode};
use super::recoveries::EventOut;
use super::stretch::{cuts, direction, DirOut};
use super::{
    bounds, mark, same_len, split, PipeRows, Sparse, DUP, EPOCH, NEW_ACK, SEG, SLOW_START, TIMEOUT,
};
use rayon::prelude::*;
use std::borrow::Cow;

/// A data segment sent within this long after an ACK arrived was clocked by it (seconds; the
/// application-limited test at the sender, RFC 7661 §4: docs/analysis.md).
pub const ACK_CLOCKED_S: f64 = 1e-3;
/// A sender may restart its window after an idle this long (seconds: RFC 5681 §4.1 after one
/// RTO; Linux `tcp_cwnd_restart`, its RTO at least `TCP_RTO_MIN` = 200 ms, as ns-2's `minrto_`).
pub const RESTART_S: f64 = 0.2;

/// The estimate's inputs (`tracekit.analysis._cwnd_rows.Rows`' columns).
pub struct EstRows<'a> {
    /// Per data row (directions contiguous, each in capture order).
    pub time: &'a [f64],
    pub seq_end: &'a [i64],
    pub pay: &'a [i64],
    pub una: &'a [i64],
    pub dup: &'a [bool],
    pub new_ack: &'a [bool],
    /// When the latest ACK before the row arrived (NaN: none).
    pub ack_t: &'a [f64],
    /// Rows with SACKed bytes above una (ascending), how many, and their flight rows.
    pub sack_at: &'a [i64],
    pub sack_val: &'a [i64],
    pub sack_pos: &'a [i64],
    /// Rows whose segments get SACKed and from which flight row on (both empty: none).
    pub seg_rows: &'a [i64],
    pub seg_at: &'a [i64],
    /// Retransmitted rows (ascending), the highest byte sent before each, timer-sent ones.
    pub retx_rows: &'a [i64],
    pub retx_hi: &'a [i64],
    pub retx_timeout: &'a [bool],
    /// Per ACK (directions contiguous): when it reached the sender, the cumulative ACK.
    pub a_time: &'a [f64],
    pub a_una: &'a [i64],
    /// Per direction: rows `lo..hi`, ACKs `alo..ahi`, segment size, minimum RTT (NaN: none),
    /// a retransmitted SYN.
    pub lo: &'a [i64],
    pub hi: &'a [i64],
    pub alo: &'a [i64],
    pub ahi: &'a [i64],
    pub mss: &'a [f64],
    pub min_rtt: &'a [f64],
    pub syn_lost: &'a [bool],
}

impl EstRows<'_> {
    /// Direction `d`'s ACKs (checked by [`check`]).
    pub fn acks_of(&self, d: usize) -> (usize, usize) {
        (self.alo[d] as usize, self.ahi[d] as usize)
    }
}

/// The estimate: per row the estimate, ssthresh (NaN: none yet) and phase code; the loss events.
pub struct Estimate {
    pub est: Vec<f64>,
    pub ssthresh: Vec<f64>,
    pub phase: Vec<u8>,
    pub events: Vec<EventOut>,
}

/// numpy's `searchsorted(v, x, side="left")` over ascending `v` (NaN sorts last).
pub fn search_left(v: &[f64], x: f64) -> usize {
    if x.is_nan() {
        v.partition_point(|y| !y.is_nan())
    } else {
        v.partition_point(|&y| y < x)
    }
}

/// numpy's `searchsorted(v, x, side="right")` over ascending `v` (NaN sorts last).
pub fn search_right(v: &[f64], x: f64) -> usize {
    if x.is_nan() {
        v.len()
    } else {
        v.partition_point(|&y| y <= x)
    }
}

/// Checks the columns; returns each direction's rows.
fn check(r: &EstRows) -> Result<Vec<(usize, usize)>, String> {
    let n = r.time.len();
    let rows = [
        ("seq_end", r.seq_end.len()),
        ("pay", r.pay.len()),
        ("una", r.una.len()),
        ("dup", r.dup.len()),
        ("new_ack", r.new_ack.len()),
        ("ack_t", r.ack_t.len()),
    ];
    same_len(n, &rows)?;
    same_len(r.sack_at.len(), &[("sack_val", r.sack_val.len())])?;
    let retx = [
        ("retx_hi", r.retx_hi.len()),
        ("retx_timeout", r.retx_timeout.len()),
    ];
    same_len(r.retx_rows.len(), &retx)?;
    same_len(r.a_time.len(), &[("a_una", r.a_una.len())])?;
    let dirs = [
        ("mss", r.mss.len()),
        ("min_rtt", r.min_rtt.len()),
        ("syn_lost", r.syn_lost.len()),
        ("alo", r.alo.len()),
    ];
    same_len(r.lo.len(), &dirs)?;
    bounds(r.alo, r.ahi, r.a_time.len())?;
    if let Some(&x) = r.retx_rows.iter().find(|&&x| x < 0 || x as usize >= n) {
        return Err(format!("retransmitted row {x} outside 0..{n}"));
    }
    bounds(r.lo, r.hi, n)
}

/// Every loss event of every direction with retransmissions, directions ascending (`live`: see
/// [`episodes_of`]).
fn episodes(r: &EstRows, b: &[(usize, usize)], live: bool) -> Vec<Episode> {
    let mut out = Vec::new();
    for (d, &(lo, hi)) in b.iter().enumerate() {
        let rx = (
            r.retx_rows.partition_point(|&x| x < lo as i64),
            r.retx_rows.partition_point(|&x| x < hi as i64),
        );
        if rx.1 > rx.0 {
            out.extend(episodes_of(r, d, (lo, hi), rx, live));
        }
    }
    out
}

/// The places that put `rows` in ascending order, one per row (a repeated row: its last place,
/// as a scatter keeps it); None: they already are. A row outside `0..n` is an error.
fn ascending(rows: &[i64], n: usize) -> Result<Option<Vec<usize>>, String> {
    if let Some(&r) = rows.iter().find(|&&r| r < 0 || r as usize >= n) {
        return Err(format!("row {r} outside 0..{n}"));
    }
    if rows.windows(2).all(|w| w[0] < w[1]) {
        return Ok(None);
    }
    let mut k: Vec<usize> = (0..rows.len()).collect();
    k.sort_by_key(|&i| rows[i]); // (stable: a repeated row's places stay in order)
    let last = |j: usize| k.get(j + 1).is_none_or(|&x| rows[x] != rows[k[j]]);
    Ok(Some(
        (0..k.len()).filter(|&j| last(j)).map(|j| k[j]).collect(),
    ))
}

/// `v` in the order [`ascending`] gave.
fn placed<'a>(v: &'a [i64], order: &Option<Vec<usize>>) -> Cow<'a, [i64]> {
    match order {
        None => Cow::Borrowed(v),
        Some(o) => o.iter().map(|&i| v.get(i).copied().unwrap_or(0)).collect(),
    }
}

/// The pipe's columns (see [`super::pipe`]) handed to `run`: snd_nxt restarts at each loss
/// event's first row, the filter at its start and end, and after a timeout only what was sent
/// since is in the pipe (RFC 5681 §3.1, RFC 6675 §4). Its row marks and SACK columns are freed
/// on return.
fn pipe_of<T>(
    r: &EstRows,
    eps: &[Episode],
    b: &[(usize, usize)],
    run: impl FnOnce(&PipeRows) -> Result<T, String>,
) -> Result<T, String> {
    let n = r.time.len();
    let mut marks: Vec<u8> = r
        .dup
        .iter()
        .zip(r.new_ack)
        .map(|(&d, &a)| if d { DUP } else { 0 } | if a { NEW_ACK } else { 0 })
        .collect();
    let ev: Vec<i64> = eps.iter().map(|e| e.i as i64).collect();
    let ev_to: Vec<i64> = eps.iter().filter(|e| e.to).map(|e| e.i as i64).collect();
    let ends: Vec<i64> = eps
        .iter()
        .filter(|e| e.j_end < b[e.d].1)
        .map(|e| e.j_end as i64)
        .collect();
    mark(&mut marks, &ev, EPOCH | SEG)?;
    mark(&mut marks, &ev_to, TIMEOUT)?;
    mark(&mut marks, &ends, SEG)?;
    // the SACK columns at their rows only (the pipe reads them row by row, ascending)
    let sack = ascending(r.sack_at, n).map_err(|e| format!("SACK {e}"))?;
    let (sack_rows, sack_val) = (placed(r.sack_at, &sack), placed(r.sack_val, &sack));
    // the SackInfo columns, only when some segment gets SACKed
    let none: &[i64] = &[];
    let (mut pos, mut seg_rows, mut seg_at) = (Cow::from(none), Cow::from(none), Cow::from(none));
    if !r.seg_rows.is_empty() {
        same_len(r.seg_rows.len(), &[("seg_at", r.seg_at.len())])?;
        same_len(r.sack_at.len(), &[("sack_pos", r.sack_pos.len())])?;
        pos = placed(r.sack_pos, &sack);
        let seg = ascending(r.seg_rows, n)?;
        (seg_rows, seg_at) = (placed(r.seg_rows, &seg), placed(r.seg_at, &seg));
    }
    let nd = b.len();
    // the last cumulative ACK of each direction (none: below every sequence number)
    let end_una: Vec<i64> = (0..nd)
        .map(|d| {
            let (alo, ahi) = r.acks_of(d);
            if ahi > alo {
                r.a_una[ahi - 1]
            } else {
                i64::MIN
            }
        })
        .collect();
    run(&PipeRows {
        time: r.time,
        seq_end: r.seq_end,
        una: r.una,
        sacked: Sparse {
            rows: &sack_rows,
            vals: &sack_val,
        },
        pos: &pos,
        pay: r.pay,
        at: Sparse {
            rows: &seg_rows,
            vals: &seg_at,
        },
        marks: &marks,
        ack_t: r.ack_t,
        lo: r.lo,
        hi: r.hi,
        min_rtt: r.min_rtt,
        // (at the sender: docs/analysis.md, application-limited bursts and an empty pipe)
        clocked: &vec![ACK_CLOCKED_S; nd],
        end_una: &end_una,
        restart: &vec![RESTART_S; nd],
    })
}

/// ssthresh before any loss event of direction `d`: a lost SYN sets 2 MSS from the direction's
/// first row (`syn_sets`; RFC 5681 eq. 4 with FlightSize 0), as ns-2's timeout halves ssthresh
/// on the SYN too (ns-2.35 `FullTcpAgent::timeout_action`: `slowdown(CLOSE_SSTHRESH_HALF|..)`).
/// Linux sets it on the SYN's timeout and resets it to its initial, infinite value once the
/// handshake is done (`tcp_init_metrics`; the kernel's ss log of
/// `samples/linux/kernel_truth/syn_lost2`), and ns-3's timer only re-sends a SYN
/// (`TcpSocketBase::ReTxTimeout` in SYN_SENT), so neither starts its data with one. Later rows
/// take the latest value an event set (a NaN one sets nothing).
fn ssthresh_at_start(r: &EstRows, d: usize, syn_sets: bool) -> f64 {
    if syn_sets && r.syn_lost[d] {
        2.0 * r.mss[d]
    } else {
        f64::NAN
    }
}

/// The estimate of every data row (see the module docs), each direction a stretch at a time
/// (`stretch`: the same values as one pass over its rows); `hold_backoff`: a backed-off expiry
/// holds ssthresh (RFC 5681 §3.1: Linux, ns-3; false for ns-2, which halves it every time, and
/// on a lost SYN too: [`ssthresh_at_start`]); `cut`: stretches start at the loss events that
/// may cut the rows, and the events are found as a stream finds them (false: each direction is
/// one stretch, its events found over the whole of it: the reference both are tested against).
pub fn estimate(r: &EstRows, hold_backoff: bool, cut: bool) -> Result<Estimate, String> {
    let b = check(r)?;
    let eps = episodes(r, &b, cut);
    let n = r.time.len();
    let (mut est, mut ssthresh, mut phase) = (vec![0.0; n], vec![f64::NAN; n], vec![SLOW_START; n]);
    // (a capture's stack, Linux or ns-3, starts its data with no ssthresh after a lost SYN; ns-2,
    // the one stack that halves a backed-off ssthresh, does)
    let syn_sets = !hold_backoff;
    let events = pipe_of(r, &eps, &b, |p| {
        p.check()?;
        let outs: Vec<DirOut> = split(&mut est, &b)?
            .into_iter()
            .zip(split(&mut ssthresh, &b)?)
            .zip(split(&mut phase, &b)?)
            .map(|((est, ssthresh), phase)| DirOut {
                est,
                ssthresh,
                phase,
                events: Vec::new(),
            })
            .collect();
        let mut outs = outs;
        outs.par_iter_mut()
            .zip(b.par_iter().enumerate())
            .for_each(|(out, (d, &(lo, hi)))| {
                let e = &eps[eps.partition_point(|e| e.d < d)..eps.partition_point(|e| e.d <= d)];
                let cut = if cut { cuts(e, lo) } else { Vec::new() };
                let st0 = ssthresh_at_start(r, d, syn_sets);
                direction(p, r, (d, lo, hi), e, &cut, st0, hold_backoff, out);
            });
        Ok(outs.into_iter().flat_map(|o| o.events).collect())
    })?;
    Ok(Estimate {
        est,
        ssthresh,
        phase,
        events,
    })
}
