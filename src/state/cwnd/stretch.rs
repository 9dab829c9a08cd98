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
use super::{code, spread_part, DirPipe, Pipe, PipeRows, RowIn};

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

/// One direction's estimate fed a stretch at a time (see the module docs): what carries over
/// from one stretch to the next.
pub struct DirEstimate {
    pipe: Pipe,
    rec: Recover,
    mss: f64,
    end_una: i64,
    /// ssthresh so far, and the estimate of the row before the next stretch (after recoveries).
    st: f64,
    pre: f64,
    /// The raw pipe of the next stretch's first row (fed ahead of it: [`Pipe::settle`]).
    ahead: Option<f64>,
    /// Rows not given out yet, the run the next stretch may continue: time, estimate, ssthresh,
    /// phase.
    tail: (Vec<f64>, Vec<f64>, Vec<f64>, Vec<u8>),
}

impl DirEstimate {
    /// A direction whose pipe is `pipe`, segment size `mss`, last cumulative ACK `end_una`
    /// ([`Pipe::finish`]) and ssthresh before any event `st0` (NaN: none); `hold_backoff`: see
    /// [`Recover::new`].
    pub fn new(pipe: Pipe, mss: f64, end_una: i64, st0: f64, hold_backoff: bool) -> Self {
        DirEstimate {
            pipe,
            rec: Recover::new(hold_backoff),
            mss,
            end_una,
            st: st0,
            pre: f64::NAN,
            ahead: None,
            tail: Default::default(),
        }
    }

    /// The last cumulative ACK of the direction, once the stream has seen it ([`Pipe::finish`]:
    /// only the last stretch reads it).
    pub fn set_end_una(&mut self, end_una: i64) {
        self.end_una = end_una;
    }

    /// A segment SACKed whole after its row was fed ([`Pipe::late_sack`]).
    pub fn late_sack(&mut self, seq: i64, end: i64, at: i64) {
        self.pipe.late_sack(seq, end, at);
    }

    /// The next stretch: its `n` rows of `input` (the first numbered `base`; the direction's
    /// first is `lo`), the events that start in it (`eps`, in order), and whether it is the
    /// direction's last (`last`; else the row after it, the first of the next stretch, is fed
    /// ahead). Gives the rows that are final (time, estimate, ssthresh, phase) to `emit`, in
    /// order, and returns the events.
    pub fn stretch(
        &mut self,
        input: &mut impl Input,
        (base, lo): (usize, usize),
        (n, last): (usize, bool),
        eps: &[Episode],
        emit: &mut impl FnMut(&[f64], &[f64], &[f64], &[u8]),
    ) -> Vec<EventOut> {
        // (each row read once, into the pipe: only its time is kept, beside the tail)
        let mut raw = Vec::with_capacity(n);
        for k in 0..n {
            let r = input.input(base + k);
            match self.ahead.take().filter(|_| k == 0) {
                Some(a) => raw.push(a),
                None => raw.push(self.pipe.feed(&r)),
            }
            self.tail.0.push(r.time);
        }
        let (mut est, mut flags, mut in_rec) = (vec![0.0; n], vec![0u8; n], vec![false; n]);
        if last {
            self.pipe.finish(self.end_una, &mut est, &mut flags);
        } else {
            self.ahead = Some(self.pipe.feed(&input.input(base + n)));
            self.pipe.settle(n, &mut est, &mut flags);
        }
        self.rec.resume(&mut est, &raw, &flags, n);
        let at = Rows {
            lo,
            base,
            pre: self.pre,
            end: n,
        };
        let events: Vec<EventOut> = eps
            .iter()
            .map(|e| (self.rec).event(e, &mut est, &raw, &flags, &mut in_rec, at, self.mss))
            .collect();
        if let Some(&x) = est.last() {
            self.pre = x;
        }
        // ssthresh: the latest an event set (a NaN one sets nothing); the phase codes
        let (t, mut set) = (&mut self.tail, 0);
        for (i, (&e, &rec)) in est.iter().zip(&in_rec).enumerate() {
            while let Some(x) = events.get(set).filter(|x| x.i <= base + i) {
                if x.i == base + i && !x.ssthresh.is_nan() {
                    self.st = x.ssthresh;
                }
                set += 1;
            }
            t.1.push(e);
            t.2.push(self.st);
            t.3.push(code(e, self.st, rec));
        }
        // congestion-avoidance growth spread; the run the next stretch may continue is kept
        let done = spread_part(&t.0, &mut t.1, &t.3, self.mss, last);
        emit(&t.0[..done], &t.1[..done], &t.2[..done], &t.3[..done]);
        t.0.drain(..done);
        t.1.drain(..done);
        t.2.drain(..done);
        t.3.drain(..done);
        events
    }
}

/// One direction's columns of the estimate (its rows only) and its loss events.
pub struct DirOut<'a> {
    pub est: &'a mut [f64],
    pub ssthresh: &'a mut [f64],
    pub phase: &'a mut [u8],
    pub events: Vec<EventOut>,
}

/// A direction's rows as its [`Pipe`] takes them ([`DirPipe`]: from the estimate's columns).
pub trait Input {
    /// Row `i` (rows read in ascending order; a row may be read again).
    fn input(&mut self, i: usize) -> RowIn;
}

impl Input for DirPipe<'_> {
    fn input(&mut self, i: usize) -> RowIn {
        DirPipe::input(self, i)
    }
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
    let (mut input, pipe) = DirPipe::new(p, d, (lo, hi));
    let mut de = DirEstimate::new(pipe, r.mss[d], input.end_una, st0, hold_backoff);
    let mut at = 0;
    let (est, st, ph) = (&mut *out.est, &mut *out.ssthresh, &mut *out.phase);
    let mut emit = |t: &[f64], e: &[f64], x: &[f64], c: &[u8]| {
        let k = at..at + t.len();
        est[k.clone()].copy_from_slice(e);
        st[k.clone()].copy_from_slice(x);
        ph[k].copy_from_slice(c);
        at += t.len();
    };
    let ev = stretches(&mut input, &mut de, (lo, hi), (eps, cut), &mut emit);
    out.events.extend(ev);
}

/// Rows `lo..hi` of `input` through `de`, a stretch at a time: each stretch from one of `cut`
/// (ascending, after `lo`) to the next, with the events of `eps` (in order) that start in it;
/// the rows that are final go to `emit` ([`DirEstimate::stretch`]). Returns the events.
pub fn stretches(
    input: &mut impl Input,
    de: &mut DirEstimate,
    (lo, hi): (usize, usize),
    (eps, cut): (&[Episode], &[usize]),
    emit: &mut impl FnMut(&[f64], &[f64], &[f64], &[u8]),
) -> Vec<EventOut> {
    let (mut s, mut ek) = (lo, 0);
    let mut events = Vec::new();
    for &c in cut.iter().chain([&hi]) {
        let upto = ek + eps[ek..].partition_point(|e| e.i < c);
        let ev = de.stretch(input, (s, lo), (c - s, c >= hi), &eps[ek..upto], emit);
        events.extend(ev);
        (s, ek) = (c, upto);
    }
    events
}
