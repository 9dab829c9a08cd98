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
/// cwnd leaves a recovery at ssthresh (RFC 6582 §3.2 step 6, RFC 6937 §3.1). `acc`: the value
/// so far when the rows continue a stretch before them (None: `a` is the first). Returns the
/// hold still going on at `b` (every row up to it held), which the rows after `b` continue.
fn held_after(
    (est, raw, flags): (&mut [f64], &[f64], &[u8]),
    (a, b): (usize, usize),
    s: f64,
    mut acc: Option<f64>,
) -> Option<Hold> {
    let stop = (a..b).find(|&i| flags[i] & HELD == 0);
    for i in a..stop.unwrap_or(b) {
        let app = if flags[i] & APP != 0 { raw[i] } else { -1.0 };
        let v = np_max(app, s);
        let x = acc.map_or(v, |x| np_max(x, v));
        acc = Some(x);
        est[i] = x;
    }
    stop.is_none().then_some(Hold { s, acc })
}

/// A hold after a recovery ([`held_after`]) that the next rows continue.
#[derive(Debug, Clone, Copy)]
struct Hold {
    s: f64,
    acc: Option<f64>,
}

/// Where a loss event's rows lie: its direction's first row `lo`, the first row of the columns
/// given (`base`; the estimate just before it, `pre`, when the event starts there) and the end
/// of the rows a hold after it may reach (`end`, in the columns).
#[derive(Debug, Clone, Copy)]
pub struct Rows {
    pub lo: usize,
    pub base: usize,
    pub pre: f64,
    pub end: usize,
}

/// What [`recoveries`] carries from one event to the next, so that a direction's rows can be
/// taken a stretch at a time (each stretch starting at a loss event: `estimate`): the latest
/// timeout of a direction (direction, snd_una, ssthresh; a fast retransmit clears it) and a
/// hold after a recovery still going on at the end of the rows given.
#[derive(Debug, Default)]
pub struct Recover {
    last_to: Option<(usize, i64, f64)>,
    hold: Option<Hold>,
    hold_backoff: bool,
}

impl Recover {
    /// `hold_backoff`: a backed-off expiry holds ssthresh (see [`Recover::event`]).
    pub fn new(hold_backoff: bool) -> Self {
        Recover {
            hold_backoff,
            ..Recover::default()
        }
    }

    /// A stretch of a direction's rows starts (the columns given are its rows, `end` long): a
    /// hold still going on writes them first, up to the first reading.
    pub fn resume(&mut self, est: &mut [f64], raw: &[f64], flags: &[u8], end: usize) {
        if let Some(h) = self.hold.take() {
            self.hold = held_after((est, raw, flags), (0, end), h.s, h.acc);
        }
    }

    /// Loss event `e` (rows numbered from `at.base` in the columns): recovery or restart, its
    /// ssthresh computed from the estimate just before it as the earlier events left it, and
    /// the estimate overwritten inside a recovery and after it where no burst reads the window
    /// yet.
    #[allow(clippy::too_many_arguments)]
    pub fn event(
        &mut self,
        e: &Episode,
        est: &mut [f64],
        raw: &[f64],
        flags: &[u8],
        in_rec: &mut [bool],
        at: Rows,
        m: f64,
    ) -> EventOut {
        let i = e.i - at.base;
        // at a direction's first row nothing has changed the filtered value yet
        let pre = if e.i == at.lo {
            est[i]
        } else if i == 0 {
            at.pre
        } else {
            est[i - 1]
        };
        let mut s = ssthresh(pre, e, m);
        let held = self
            .last_to
            .filter(|h| h.0 == e.d && e.to && self.hold_backoff);
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
            self.last_to = Some((e.d, e.una, s));
        } else if self.last_to.is_some_and(|h| h.0 == e.d) {
            self.last_to = None;
        }
        let mut restart = e.gbn;
        // (a burst before the rows given, which only out-of-order times find, tells nothing)
        if let Some(b) = e.burst.and_then(|b| b.checked_sub(at.base)) {
            if flags[b] & APP == 0 {
                // Tahoe restarts from one segment (sends ~2), Reno resumes at ssthresh; a burst
                // the application cut short (RFC 7661 §4) tells neither: the event stays a recovery
                restart = Some(raw[b] < 0.75 * s);
            }
        }
        let recovery = !e.to && restart != Some(true);
        if recovery {
            // (an event that ends at its first row's instant has no rows of its own)
            let rows = i..e.last.max(e.i) - at.base;
            in_rec[rows.clone()].fill(true);
            est[rows].fill(s);
            // (a later hold reaches as far: it replaces one still going on)
            let h = held_after((est, raw, flags), (e.last - at.base, at.end), s, None);
            if h.is_some() {
                self.hold = h;
            }
        }
        EventOut {
            d: e.d,
            i: e.i,
            end: e.end,
            timeout: e.to,
            recovery,
            ssthresh: s,
        }
    }
}

/// Recovery or restart of every loss event, in order (`eps`: directions ascending, events in
/// order), their ssthresh, and the estimate (`est`, the filtered pipe) overwritten inside
/// recoveries and after them where no burst reads the window yet (`raw`, `flags`: the pipe's).
/// Each event's ssthresh is computed from the estimate just before it as the earlier events
/// left it; a backed-off expiry holds it when `hold_backoff` (see [`Recover::event`]). `lo`:
/// each direction's first row, `hi` its end; `in_rec` is set inside recoveries.
#[cfg(test)]
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
    let mut r = Recover::new(hold_backoff);
    let mut out = Vec::with_capacity(eps.len());
    for e in eps {
        let at = Rows {
            lo: lo[e.d],
            base: 0,
            pre: f64::NAN,
            end: hi[e.d],
        };
        r.hold = None;
        out.push(r.event(e, est, raw, flags, in_rec, at, mss[e.d]));
    }
    out
}
