//! Loss events of the cwnd estimate, found before the pipe is built (see the parent module).
//!
//! A retransmission starts a loss event unless one is under way: an event lasts until the
//! cumulative ACK passes its *recovery point*, the highest byte sent before it (RFC 6582
//! "recover"), so NewReno partial-ACK and SACK retransmissions of one window count once. A
//! timeout always starts a new event (a Reno recovery that stalls ends in one; the simulators cut
//! cwnd twice: samples/ns2/lab_reno/Window.tr 66 → 33 → 1). Which re-sends are timeouts is the
//! retransmission analysis' judgement (RFC 6298 §5 against the sender's RTO floor), never a rule
//! of this module. Each event then gets its go-back-N verdict ([`go_back_n`]) and, when the
//! sender sent nothing inside it, the burst the ending ACK releases (decided in `recoveries`).
//!
//! [`Finder`] applies these rules as the rows come, so a stream can find the events without
//! holding the direction: an event is settled once the next has started and the ACK and rows it
//! reads have been seen ([`Seen`]).

use super::estimate::{search_left, search_right, EstRows, ACK_CLOCKED_S};

/// One loss event (all absolute row numbers).
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// Its direction.
    pub d: usize,
    /// Its first row (the retransmission that starts it).
    pub i: usize,
    /// When the cumulative ACK passed its recovery point (+inf: never).
    pub end: f64,
    /// The retransmission timer sent its first row.
    pub to: bool,
    /// The first row sent at or after `end` (the direction's end: none).
    pub j_end: usize,
    /// Its rows are `i..last` (up to its end or the next event).
    pub last: usize,
    /// Go-back-N (Some(true)), fast recovery (Some(false)), or neither shown (None).
    pub gbn: Option<bool>,
    /// The row of the burst the ending ACK releases when nothing was sent inside (None: none).
    pub burst: Option<usize>,
    /// At its first row: the highest byte sent before it, snd_una, and the SACKed bytes.
    pub hi: i64,
    pub una: i64,
    pub sacked: i64,
}

/// Is a fast-retransmit event a go-back-N restart (Some(true)), a fast recovery (Some(false)), or
/// neither (None)? Its rows after the first are `a..last` (`rp`: its recovery point).
///
/// A go-back-N sender (cwnd = 1, then slow start from snd_una: Tahoe, a timeout) resends old
/// data beyond the first hole (`una < seq < rp`) before it sends new data (`seq ≥ rp`), and
/// always contiguously from `max(snd_una, last sent)`. A Reno/NewReno sender retransmits only at
/// snd_una (one segment per partial ACK, RFC 6582 §3.2) and sends new data on dupACK inflation;
/// a SACK sender repairs holes above snd_una but *skips* the segments the receiver SACKed (RFC
/// 6675 §5). Neither: only the fast retransmission was sent (a single loss, or a Reno sender
/// stalled by the receiver window).
pub fn go_back_n(r: &impl RowsAt, first: usize, last: usize, rp: i64) -> Option<bool> {
    let a = first + 1;
    if last <= a {
        return None;
    }
    let seq = |i: usize| r.seq_end(i).wrapping_sub(r.pay(i));
    // where the new data starts (the rest's end when none is sent)
    let stop = (a..last).find(|&i| seq(i) >= rp).unwrap_or(last);
    let beyond = (a..stop).any(|i| seq(i) < rp && seq(i) > r.una(i));
    // up to and including the first new segment: a SACK sender jumps over SACKed data
    let upto = (stop + 1).min(last);
    let skipped = (a..upto).any(|i| seq(i) > r.seq_end(i - 1).max(r.una(i)));
    Some(beyond && !skipped)
}

/// SACKed bytes at `row` (0: none; a row given twice: its first value).
fn sacked_at(r: &EstRows, row: usize) -> i64 {
    let k = r.sack_at.partition_point(|&x| x < row as i64);
    match (r.sack_at.get(k), r.sack_val.get(k)) {
        (Some(&at), Some(&v)) if at == row as i64 => v,
        _ => 0,
    }
}

/// A direction's rows as the loss rules read them (absolute row numbers).
pub trait RowsAt {
    fn time(&self, i: usize) -> f64;
    fn seq_end(&self, i: usize) -> i64;
    fn pay(&self, i: usize) -> i64;
    fn una(&self, i: usize) -> i64;
}

impl RowsAt for EstRows<'_> {
    fn time(&self, i: usize) -> f64 {
        self.time[i]
    }
    fn seq_end(&self, i: usize) -> i64 {
        self.seq_end[i]
    }
    fn pay(&self, i: usize) -> i64 {
        self.pay[i]
    }
    fn una(&self, i: usize) -> i64 {
        self.una[i]
    }
}

/// A direction's rows with the SACKed bytes above snd_una of each (0: none).
pub trait SackedAt: RowsAt {
    fn sacked(&self, i: usize) -> i64;
}

impl SackedAt for EstRows<'_> {
    fn sacked(&self, i: usize) -> i64 {
        sacked_at(self, i)
    }
}

/// What [`Finder`] asks of a direction's rows and ACKs beyond the rows themselves. Each answer
/// is final or None: a source that has seen only part of the direction answers None while rows
/// or ACKs still to come could change it ([`Finder::poll`] then waits).
pub trait Seen: RowsAt {
    /// SACKed bytes above snd_una at row `i` (0: none).
    fn sacked(&self, i: usize) -> i64;
    /// When the first ACK whose cumulative value reaches `rp` arrived (+inf: none ever does).
    fn ack_end(&self, rp: i64) -> Option<f64>;
    /// The first row sent at or after time `t` (the direction's end: none): numpy's
    /// `searchsorted(times, t, "left")`.
    fn row_from(&self, t: f64) -> Option<usize>;
    /// The first row sent after time `t`: `searchsorted(times, t, "right")`.
    fn row_after(&self, t: f64) -> Option<usize>;
}

/// A retransmission above snd_una (those at or below it repair nothing outstanding): its row,
/// end, the highest byte sent before it, snd_una and whether the timer sent it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cand {
    pub row: usize,
    pub seq_end: i64,
    pub hi: i64,
    pub una: i64,
    pub to: bool,
}

/// An event started and not yet settled: its first retransmission, recovery point, SACKed bytes
/// at its first row, and the first row of the next event (None: not started yet).
struct Open {
    c: Cand,
    rp: i64,
    sacked: i64,
    nxt: Option<usize>,
    /// Its end once seen (final answers are kept, not asked again).
    end: Option<f64>,
}

/// The loss events of one direction, found as its retransmissions come ([`Finder::on_cand`], in
/// row order, each with its timer mark settled) and settled once what they read is final
/// ([`Finder::poll`]): the frames path feeds a whole direction at once, a stream as it reads it.
///
/// A retransmission starts an event unless one is under way: an event lasts until the
/// cumulative ACK passes its *recovery point*, `max(hi, seq_end)` of its first retransmission
/// (RFC 6582 "recover"), so the next starts at the first retransmission sent once snd_una reached
/// that point, or at the next timeout if that comes first (snd_una never falls, so a
/// retransmission below the point comes before every one at or above it).
pub struct Finder {
    d: usize,
    /// The ACK clock's tolerance: a twentieth of the minimum RTT, at most [`ACK_CLOCKED_S`].
    clocked: f64,
    open: std::collections::VecDeque<Open>,
    /// The latest event's recovery point (None: no event yet).
    rp: Option<i64>,
}

impl Finder {
    /// Direction `d`, whose minimum RTT is `min_rtt` (NaN: none).
    pub fn new(d: usize, min_rtt: f64) -> Self {
        let clocked = if min_rtt.is_nan() {
            ACK_CLOCKED_S
        } else {
            ACK_CLOCKED_S.min(0.05 * min_rtt)
        };
        Finder {
            d,
            clocked,
            open: Default::default(),
            rp: None,
        }
    }

    /// The next retransmission above snd_una; `s`: the rows up to its own at least.
    pub fn on_cand(&mut self, c: Cand, s: &impl Seen) {
        if self.rp.is_some_and(|rp| c.una < rp) && !c.to {
            return;
        }
        if let Some(o) = self.open.back_mut() {
            o.nxt.get_or_insert(c.row);
        }
        let rp = c.hi.max(c.seq_end);
        self.rp = Some(rp);
        self.open.push_back(Open {
            c,
            rp,
            sacked: s.sacked(c.row),
            nxt: None,
            end: None,
        });
    }

    /// The first event not settled yet: its first row and whether the timer sent it.
    pub fn pending(&self) -> Option<(usize, bool)> {
        self.open.front().map(|o| (o.c.row, o.c.to))
    }

    /// The direction has no rows from `hi` on (no event starts after the latest).
    pub fn end(&mut self, hi: usize) {
        if let Some(o) = self.open.back_mut() {
            o.nxt.get_or_insert(hi);
        }
    }

    /// Settles the events in order while what they read is final, into `out`.
    pub fn poll(&mut self, s: &impl Seen, out: &mut Vec<Episode>) {
        let at = (self.d, self.clocked);
        while let Some(e) = self.open.front_mut().and_then(|o| settle(o, s, at)) {
            self.open.pop_front();
            out.push(e);
        }
    }
}

/// Event `o` of direction `d` with its range, go-back-N verdict and burst row, once all are
/// final; `clocked`: the ACK clock's tolerance.
fn settle(o: &mut Open, s: &impl Seen, (d, clocked): (usize, f64)) -> Option<Episode> {
    let nxt = o.nxt?;
    let end = match o.end {
        Some(t) => t,
        None => *o.end.insert(s.ack_end(o.rp)?),
    };
    let j_end = s.row_from(end)?;
    let (i, last) = (o.c.row, j_end.min(nxt));
    let gbn = go_back_n(s, i, last, o.rp);
    let mut burst = None;
    if gbn.is_none() && j_end < nxt {
        // nothing sent inside: the burst released by the ACK that ends the event tells
        // (rows from the direction's first on: a place before them only with an ACK clock
        // below zero)
        let kb = s.row_after(s.time(j_end) + clocked)? as i64 - 1;
        burst = usize::try_from(kb.min(nxt as i64 - 1)).ok();
    }
    Some(Episode {
        d,
        i,
        end,
        to: o.c.to,
        j_end,
        last,
        gbn,
        burst,
        hi: o.c.hi,
        una: o.c.una,
        sacked: o.sacked,
    })
}

/// What a stream has seen of a direction (rows `lo..hi` of `r`, times `tt`; the ACKs reaching
/// its sender `t_ack`, `una_ack`): its rows before `n` and the ACKs before `m` (`done`: all of
/// them). An answer the rows and ACKs still to come could change is None; with ascending times,
/// a search that finds a row inside the rows seen finds the one a search over all of them finds,
/// and the first ACK that reaches a point among a prefix of the ACKs is the first of them all.
struct Part<'a, R> {
    r: &'a R,
    lo: usize,
    tt: &'a [f64],
    t_ack: &'a [f64],
    una_ack: &'a [i64],
    n: usize,
    m: usize,
    done: bool,
}

impl<R> Part<'_, R> {
    /// A search over the rows seen: final when it stops inside them.
    fn found(&self, k: usize) -> Option<usize> {
        (k < self.n - self.lo || self.done).then_some(self.lo + k)
    }
}

impl<R: RowsAt> RowsAt for Part<'_, R> {
    fn time(&self, i: usize) -> f64 {
        self.r.time(i)
    }
    fn seq_end(&self, i: usize) -> i64 {
        self.r.seq_end(i)
    }
    fn pay(&self, i: usize) -> i64 {
        self.r.pay(i)
    }
    fn una(&self, i: usize) -> i64 {
        self.r.una(i)
    }
}

impl<R: SackedAt> Seen for Part<'_, R> {
    fn sacked(&self, i: usize) -> i64 {
        self.r.sacked(i)
    }
    fn ack_end(&self, rp: i64) -> Option<f64> {
        let seen = &self.una_ack[..self.m];
        let k = seen.partition_point(|&y| y < rp);
        match self.t_ack.get(k) {
            Some(&t) if k < self.m => Some(t),
            _ => self.done.then_some(f64::INFINITY),
        }
    }
    fn row_from(&self, t: f64) -> Option<usize> {
        self.found(search_left(&self.tt[..self.n - self.lo], t))
    }
    fn row_after(&self, t: f64) -> Option<usize> {
        self.found(search_right(&self.tt[..self.n - self.lo], t))
    }
}

/// One direction as [`find`] reads it besides its rows: rows `lo..hi` and their times `tt`,
/// the ACKs reaching its sender (`t_ack`, `una_ack`), its re-sends (rows `retx`, the highest
/// byte sent before each `retx_hi`, timer-sent `retx_to`) and its minimum RTT (NaN: none).
pub struct Dir<'a> {
    pub d: usize,
    pub lo: usize,
    pub hi: usize,
    pub tt: &'a [f64],
    pub t_ack: &'a [f64],
    pub una_ack: &'a [i64],
    pub retx: &'a [i64],
    pub retx_hi: &'a [i64],
    pub retx_to: &'a [bool],
    pub min_rtt: f64,
}

/// Every loss event of direction `d` (rows `lo..hi`, its retransmitted rows `rx`: indices into
/// `r.retx_rows`), with its range, go-back-N verdict and burst row, found by [`Finder`] ([`find`];
/// `live`: see there).
pub fn episodes_of(
    r: &EstRows,
    d: usize,
    (lo, hi): (usize, usize),
    rx: (usize, usize),
    live: bool,
) -> Vec<Episode> {
    let (alo, ahi) = r.acks_of(d);
    // (a direction without ACKs searches the whole ACK stream, as the join it replaced did)
    let (t_ack, una_ack) = if ahi > alo {
        (&r.a_time[alo..ahi], &r.a_una[alo..ahi])
    } else {
        (r.a_time, r.a_una)
    };
    let x = Dir {
        d,
        lo,
        hi,
        tt: &r.time[lo..hi],
        t_ack,
        una_ack,
        retx: &r.retx_rows[rx.0..rx.1],
        retx_hi: &r.retx_hi[rx.0..rx.1],
        retx_to: &r.retx_timeout[rx.0..rx.1],
        min_rtt: r.min_rtt[d],
    };
    find(r, &x, live)
}

/// Every loss event of direction `x` of `r` (see [`episodes_of`]); `live`: fed as a stream
/// reads the direction (at each re-send, the rows up to it and the ACKs that reached the sender
/// by its time, then the events that settle: the answers are the same where the times ascend,
/// which `tests/test_cwnd_stretches.py` checks against the whole direction on every capture and
/// `tests_loss.rs` on random ones), else fed the whole direction at once.
pub fn find(r: &impl SackedAt, x: &Dir, live: bool) -> Vec<Episode> {
    let (lo, hi, tt, t_ack) = (x.lo, x.hi, x.tt, x.t_ack);
    // (a prefix answers for the whole only where the times ascend; a stream meets the re-sends
    // in row order, inside the direction, as `DirRows` writes them)
    let retx = x.retx;
    let live = live
        && tt.windows(2).all(|x| x[0] <= x[1])
        && retx.windows(2).all(|x| x[0] < x[1])
        && retx.iter().all(|&x| x >= lo as i64 && x < hi as i64);
    let mut s = Part {
        r,
        lo,
        tt,
        t_ack,
        una_ack: x.una_ack,
        n: if live { lo } else { hi },
        m: if live { 0 } else { t_ack.len() },
        done: !live,
    };
    let mut f = Finder::new(x.d, x.min_rtt);
    let mut out = Vec::new();
    for (k, &row) in retx.iter().enumerate() {
        let Ok(row) = usize::try_from(row) else {
            continue;
        };
        if live && s.n <= row {
            // the rows up to this re-send, and the ACKs by its time (any prefix of them gives
            // final answers); what settled before it settles here (a stream asks each row)
            s.n = row + 1;
            let t = tt[row - lo];
            while t_ack.get(s.m).is_some_and(|&a| a <= t) {
                s.m += 1;
            }
            f.poll(&s, &mut out);
        }
        let (end, una) = (r.seq_end(row), r.una(row));
        if end > una {
            let c = Cand {
                row,
                seq_end: end,
                hi: x.retx_hi[k],
                una,
                to: x.retx_to[k],
            };
            f.on_cand(c, &s);
            f.poll(&s, &mut out);
        }
    }
    (s.n, s.m, s.done) = (hi, t_ack.len(), true);
    f.end(hi);
    f.poll(&s, &mut out);
    out
}
