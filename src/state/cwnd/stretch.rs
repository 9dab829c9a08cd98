//! The estimate of one direction a stretch of rows at a time: the pipe, recoveries, ssthresh and
//! phases of the rows up to each loss event that may cut them, each stretch run once the row
//! that starts the next has been fed (`estimate` runs every direction this way).
//!
//! A loss event whose first row `c` comes at or after the end of the event before it (the first
//! row sent once the cumulative ACK passed its recovery point, RFC 6582 "recover") cuts the rows
//! there, since nothing of the rows before `c` reads a row from `c` on, nor the other way round,
//! except for a few values carried over:
//!
//! - the pipe's max filter restarts at `c` (its key steps past every window: [`Pipe::settle`]),
//!   so only the held value carries over, and `c`'s own row tells whether the burst before it was
//!   application-limited (RFC 7661 §4) before the stretch is settled;
//! - the events before `c` end at or before it (their rows, go-back-N verdicts and bursts lie
//!   before it), and the event at `c` reads the estimate of the row before it (its ssthresh,
//!   RFC 5681 §3.1 eq. 4), the latest timeout (a backed-off expiry, RFC 6298 §5.5) and a hold
//!   after a recovery that reaches past `c` ([`Recover`]);
//! - ssthresh is the latest an event set;
//! - the congestion-avoidance spread of the run of rows that `c` may continue waits for the
//!   next stretch ([`spread_part`]).
//!
//! So a stream that holds a direction's rows only since the latest cut gives the same estimate
//! as one pass over all of them (`tests/test_cwnd_stretches.py`: every cut against none;
//! `tests_loss.rs`: a hold carried over a cut).

use super::episodes::Episode;
use super::estimate::EstRows;
use super::recoveries::{EventOut, Recover, Rows};
use super::{code, spread_part, DirPipe, PipeRows};

/// The rows where direction `d`'s events (`eps`, in order) cut its rows `lo..hi`, ascending: the
/// first row of each event after `lo` that starts at or after the end of the event before it,
/// unless a later event reads a row before it (its end or burst found before its first row,
/// which only out-of-order times give: `episodes_of` searches the times).
pub fn cuts(eps: &[Episode], lo: usize) -> Vec<usize> {
    // the lowest row each event from k on reads
    let mut reach = vec![usize::MAX; eps.len() + 1];
    for (k, e) in eps.iter().enumerate().rev() {
        let low = e.i.min(e.last).min(e.burst.unwrap_or(e.i));
        reach[k] = reach[k + 1].min(low);
    }
    let mut out = Vec::new();
    let mut prev: Option<&Episode> = None;
    for (k, e) in eps.iter().enumerate() {
        if e.i > lo && prev.is_none_or(|p| p.j_end <= e.i) && reach[k] >= e.i {
            out.push(e.i);
        }
        prev = Some(e);
    }
    out
}

/// One direction's columns of the estimate (its rows only) and its loss events.
pub struct DirOut<'a> {
    pub est: &'a mut [f64],
    pub ssthresh: &'a mut [f64],
    pub phase: &'a mut [u8],
    pub events: Vec<EventOut>,
}

/// Direction `d` (rows `lo..hi`, its events `eps`) a stretch at a time (see the module docs);
/// `cut`: the rows its stretches start at (after `lo`, ascending); `st0`: ssthresh before any
/// event (NaN: none).
#[allow(clippy::too_many_arguments)]
pub fn direction(
    p: &PipeRows,
    r: &EstRows,
    (d, lo, hi): (usize, usize, usize),
    eps: &[Episode],
    cut: &[usize],
    st0: f64,
    hold_backoff: bool,
    out: &mut DirOut,
) {
    let n = hi - lo;
    let (mut raw, mut flags, mut in_rec) = (vec![0.0; n], vec![0u8; n], vec![false; n]);
    let mut pipe = DirPipe::new(p, d, (lo, hi));
    let mut rec = Recover::new(hold_backoff);
    let (mss, time) = (r.mss[d], &r.time[lo..hi]);
    let (mut fed, mut s, mut tail) = (0, 0, 0);
    let (mut pre, mut st) = (f64::NAN, st0);
    // the next event to place, and the next whose ssthresh is to be set
    let (mut ek, mut set) = (0, 0);
    for c in cut.iter().map(|&c| c - lo).chain([n]) {
        // the rows up to and including the next stretch's first
        while fed < n && fed <= c {
            raw[fed] = pipe.row(lo + fed);
            fed += 1;
        }
        let (est, fl) = (&mut out.est[s..c], &mut flags[s..c]);
        if c < n {
            pipe.p.settle(c - s, est, fl);
        } else {
            pipe.finish(est, fl);
        }
        let (raw_s, rec_s) = (&raw[s..c], &mut in_rec[s..c]);
        rec.resume(est, raw_s, fl, c - s);
        let at = Rows {
            lo,
            base: lo + s,
            pre,
            end: c - s,
        };
        while let Some(e) = eps.get(ek).filter(|e| e.i < lo + c) {
            let x = rec.event(e, est, raw_s, fl, rec_s, at, mss);
            out.events.push(x);
            ek += 1;
        }
        if c > s {
            pre = est[c - s - 1];
        }
        // ssthresh: the latest an event set (a NaN one sets nothing)
        let rows = (s..c).zip(&in_rec[s..c]);
        for ((i, &rec_i), (slot, ph)) in
            rows.zip(out.ssthresh[s..c].iter_mut().zip(&mut out.phase[s..c]))
        {
            while let Some(e) = out.events.get(set).filter(|e| e.i <= lo + i) {
                if e.i == lo + i && !e.ssthresh.is_nan() {
                    st = e.ssthresh;
                }
                set += 1;
            }
            *slot = st;
            *ph = code(out.est[i], st, rec_i);
        }
        // (rows from `tail` on: the run the next stretch may continue)
        let last = c == n;
        tail += spread_part(
            &time[tail..c],
            &mut out.est[tail..c],
            &out.phase[tail..c],
            mss,
            last,
        );
        s = c;
    }
}
