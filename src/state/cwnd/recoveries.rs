//! The second pass over the loss events: recovery or restart, ssthresh, and the estimate inside
//! recoveries and after them (see the parent module and `tracekit.analysis._cwnd_estimate`).

use super::episodes::Episode;
use super::{APP, HELD};

/// What [`recoveries`] says of one loss event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventOut {
    /// Its direction and first row.
    pub d: usize,
    pub i: usize,
    /// When it ended (+inf: never), and whether the retransmission timer started it.
    pub end: f64,
    pub timeout: bool,
    /// A fast recovery (estimate = ssthresh inside it), not a restart or a timeout.
    pub recovery: bool,
    pub ssthresh: f64,
}

/// numpy's `maximum`: NaN when either is NaN.
fn np_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

/// ssthresh at a loss event (RFC 5681 §3.1 eq. 4): half the estimate just before it (`pre`), or
/// half the un-SACKed flight when SACK information makes it smaller (RFC 5681's FlightSize, as
/// ns-3 does), rounded down to whole segments, at least 2 MSS (ns-2 and Linux keep whole
/// segments; no segment size known: half of it).
pub fn ssthresh(pre: f64, e: &Episode, mss: f64) -> f64 {
    let mut pre = pre;
    if e.sacked > 0 {
        // with SACK information, FlightSize is what is outstanding and not SACKed
        let flight = (e.hi.wrapping_sub(e.una).wrapping_sub(e.sacked)).max(0) as f64;
        if flight < pre {
            pre = flight;
        }
    }
    if mss > 0.0 {
        let half = (pre / 2.0 / mss).floor() * mss;
        let two = 2.0 * mss;
        if two > half {
            two
        } else {
            half
        }
    } else {
        pre / 2.0
    }
}

/// After a recovery, rows `a..b` up to the first with a reading (no [`HELD`] flag) keep ssthresh
/// `s`, or the pipe of application-limited bursts where higher (cwnd is at least what is out):
/// cwnd leaves a recovery at ssthresh (RFC 6582 §3.2 step 6, RFC 6937 §3.1).
fn held_after(est: &mut [f64], raw: &[f64], flags: &[u8], a: usize, b: usize, s: f64) {
    let stop = (a..b).find(|&i| flags[i] & HELD == 0).unwrap_or(b);
    let mut acc = f64::NAN;
    for i in a..stop {
        let app = if flags[i] & APP != 0 { raw[i] } else { -1.0 };
        let v = np_max(app, s);
        acc = if i == a { v } else { np_max(acc, v) };
        est[i] = acc;
    }
}

/// Recovery or restart of every loss event, in order (`eps`: directions ascending, events in
/// order), their ssthresh, and the estimate (`est`, the filtered pipe) overwritten inside
/// recoveries and after them where no burst reads the window yet (`raw`, `flags`: the pipe's).
/// Each event's ssthresh is computed from the estimate just before it as the earlier events
/// left it; a backed-off expiry holds it when `hold_backoff` (see below). `lo`: each direction's
/// first row, `hi` its end; `in_rec` is set inside recoveries.
#[allow(clippy::too_many_arguments)]
pub fn recoveries(
    eps: &[Episode],
    est: &mut [f64],
    raw: &[f64],
    flags: &[u8],
    in_rec: &mut [bool],
    (lo, hi): (&[usize], &[usize]),
    mss: &[f64],
    hold_backoff: bool,
) -> Vec<EventOut> {
    let mut out = Vec::with_capacity(eps.len());
    // the direction's latest timeout: (direction, snd_una, ssthresh); a fast retransmit clears it
    let mut last_to: Option<(usize, i64, f64)> = None;
    for e in eps {
        let m = mss[e.d];
        // at a direction's first row nothing has changed the filtered value yet
        let pre = if e.i > lo[e.d] {
            est[e.i - 1]
        } else {
            est[e.i]
        };
        let mut s = ssthresh(pre, e, m);
        let held = last_to.filter(|h| h.0 == e.d && e.to && hold_backoff);
        if let Some((_, una, hs)) = held {
            if una == e.una {
                // the timer fired again for the segment it had re-sent (nothing ACKed since: a
                // backed-off expiry, RFC 6298 §5.5): ssthresh is held constant (RFC 5681 §3.1;
                // Linux `tcp_enter_loss` recomputes it only on the first expiry,
                // `icsk_retransmits == 0`; ns-3's `ReTxTimeout` only unless
                // `IsHeadRetransmitted`; ns-2's `TcpAgent::timeout` halves the window every
                // time, `closecwnd(0)`: ssthresh = max(window() / 2, 2), so no hold there)
                s = hs;
            }
        }
        if e.to {
            last_to = Some((e.d, e.una, s));
        } else if last_to.is_some_and(|h| h.0 == e.d) {
            last_to = None;
        }
        let mut restart = e.gbn;
        if let Some(b) = e.burst {
            if flags[b] & APP == 0 {
                // Tahoe restarts from one segment (sends ~2), Reno resumes at ssthresh; a burst
                // the application cut short (RFC 7661 §4) tells neither: the event stays a recovery
                restart = Some(raw[b] < 0.75 * s);
            }
        }
        let recovery = !e.to && restart != Some(true);
        if recovery {
            // (an event that ends at its first row's instant has no rows of its own)
            let rows = e.i..e.last.max(e.i);
            in_rec[rows.clone()].fill(true);
            est[rows].fill(s);
            held_after(est, raw, flags, e.last, hi[e.d], s);
        }
        out.push(EventOut {
            d: e.d,
            i: e.i,
            end: e.end,
            timeout: e.to,
            recovery,
            ssthresh: s,
        });
    }
    out
}
