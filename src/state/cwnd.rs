//! The per-segment passes of the congestion-window estimate (`tracekit.analysis._cwnd_estimate`).
//!
//! A cwnd-limited sender keeps one window outstanding, so after the segments an ACK releases
//! `pipe = snd_nxt − snd_una − SACKed` is cwnd (RFC 5681 §2 "FlightSize", RFC 6675 §4 "pipe").
//! Python finds the loss events (one step per event) and builds the frames; the passes over
//! every data segment run here, one direction at a time (its rows contiguous, capture order):
//!
//! - [`Acks`]: the ACK stream merged with the segments in capture order: snd_una, the
//!   dupACK state, retransmissions and Karn's minimum RTT (fed by `on_ack` / `on_data`);
//! - [`Pipe`]: the pipe at each segment and its causal max filter over two minimum RTTs,
//!   restarted at every loss event's start and end;
//! - [`Phase`]: congestion-avoidance interpolation between whole-segment steps, and the phase
//!   code (slow start / congestion avoidance / recovery) of every row.
//!
//! Each is a struct fed the direction's rows in order so a streaming driver can use it
//! without columns; the max filter looks ahead only over rows at the same instant, the
//! interpolation up to the next whole-segment step (both kept per direction).

use super::guard;
use super::seq::MISSING;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use std::collections::VecDeque;

/// Width of the max filter, in minimum RTTs (queueing and delayed ACKs stretch an RTT).
pub const FILTER_RTTS: f64 = 2.0;
/// A window spans this many key units (thousandths of the filter width, rounded).
const SPAN: i64 = 1000;
/// Step of the key at a segment start (no window reaches back across it).
const CUT: i64 = SPAN + 1;

/// Row marks: a loss event starts here (snd_nxt restarts: go-back-N senders resend from snd_una).
pub const EPOCH: u8 = 1 << 0;
/// The filter restarts here (a direction's first row, a loss event's start or end).
pub const SEG: u8 = 1 << 1;
/// The latest ACK differs from the previous row's: a new burst of segments starts.
pub const NEW_ACK: u8 = 1 << 2;
/// The segment was sent on a duplicate ACK (RFC 3042 limited transmit, dupACK inflation).
pub const DUP: u8 = 1 << 3;

/// One burst: the segments one ACK releases (its keys at the first and last row, its maximum).
struct Burst {
    k_first: i64,
    k_last: i64,
    max: f64,
}

/// The pipe and its max filter over one direction's data segments.
///
/// `on_row` takes the rows in capture order; `finish` gives the filtered estimate of every row
/// (-1 where the window holds only duplicate-ACK sends is filled with the last value, 0 at a
/// direction's start).
pub struct Pipe {
    /// Filter width in seconds.
    width: f64,
    /// Highest segment end since the last loss event (snd_nxt as a go-back-N sender resets it).
    snd_nxt: i64,
    prev_tau: f64,
    key: i64,
    keys: Vec<i64>,
    bursts: Vec<Burst>,
}

impl Pipe {
    /// A direction whose minimum RTT is `min_rtt_s` (NaN: no sample; a 1 µs window then keeps
    /// only the segments of one instant together).
    pub fn new(min_rtt_s: f64, rows: usize) -> Self {
        let width = if min_rtt_s.is_nan() {
            1e-6
        } else {
            (FILTER_RTTS * min_rtt_s).max(1e-6)
        };
        Pipe {
            width,
            snd_nxt: 0,
            prev_tau: 0.0,
            key: 0,
            keys: Vec::with_capacity(rows),
            bursts: Vec::new(),
        }
    }

    /// One data segment: its time, end (seq + len), the cumulative ACK before it (una), the
    /// bytes SACKed above una, and its marks ([`EPOCH`] .. [`DUP`]). Returns its pipe before
    /// duplicate-ACK sends are dropped (the recoveries read it at the bursts).
    pub fn on_row(&mut self, time: f64, seq_end: i64, una: i64, sacked: i64, marks: u8) -> f64 {
        let first = self.keys.is_empty();
        // snd_nxt restarts at each loss event: the highest byte sent since
        if first || marks & EPOCH != 0 {
            self.snd_nxt = seq_end;
        } else {
            self.snd_nxt = self.snd_nxt.max(seq_end);
        }
        let pipe = self.snd_nxt.wrapping_sub(una).wrapping_sub(sacked).max(0) as f64;
        // a segment sent on a duplicate ACK may exceed cwnd: not a measurement (-1)
        let v = if marks & DUP != 0 && marks & EPOCH == 0 && !first {
            -1.0
        } else {
            pipe
        };
        // the key: time in thousandths of the filter width, rounded; each step capped at
        // CUT (non-finite or absurd times stay small), and CUT at every filter restart
        let tau = ((time / self.width) * 1000.0).round_ties_even();
        let step = if first || marks & SEG != 0 {
            CUT
        } else {
            let s = tau - self.prev_tau;
            (if s.is_nan() {
                CUT as f64
            } else {
                s.min(CUT as f64)
            })
            .max(0.0) as i64
        };
        self.prev_tau = tau;
        self.key += step;
        self.keys.push(self.key);
        // the segments one ACK releases leave together (a capture spaces them by the link's
        // serialisation time): the window is what is outstanding after the last of them
        if first || marks & (SEG | NEW_ACK) != 0 {
            self.bursts.push(Burst {
                k_first: self.key,
                k_last: self.key,
                max: v,
            });
        } else if let Some(b) = self.bursts.last_mut() {
            b.k_last = self.key;
            b.max = b.max.max(v);
        }
        pipe
    }

    /// The filtered estimate of every row: the largest burst value whose last row lies in
    /// (key − SPAN, key], bursts starting at the same key after the row included.
    pub fn finish(&self, out: &mut [f64]) {
        let mut win: VecDeque<usize> = VecDeque::new(); // bursts in the window, decreasing max
        let (mut left, mut right) = (0usize, 0usize); // next burst to enter; first inside
        let mut last = 0.0;
        for (&k, slot) in self.keys.iter().zip(out.iter_mut()) {
            while right < self.bursts.len() && self.bursts[right].k_first <= k {
                let m = self.bursts[right].max;
                while win.back().is_some_and(|&q| self.bursts[q].max <= m) {
                    win.pop_back();
                }
                win.push_back(right);
                right += 1;
            }
            while self.bursts[left].k_last <= k - SPAN {
                left += 1;
            }
            while win.front().is_some_and(|&q| q < left) {
                win.pop_front();
            }
            let v = win.front().map_or(-1.0, |&q| self.bursts[q].max);
            // no measurement in the window (only dupACK sends): the last value, else 0
            if v >= 0.0 {
                last = v;
            }
            *slot = last;
        }
    }
}

/// Congestion-avoidance growth and the phase of one direction's rows.
///
/// In congestion avoidance cwnd grows by ~1 MSS per RTT (RFC 5681 §3.1), smoothly, while a
/// sender only fills whole segments: the pipe steps up by one segment when cwnd passes the
/// next multiple. Between two such steps the estimate is interpolated linearly in time (the
/// last stretch of a run, with no next step, keeps its value).
pub struct Phase {
    mss: f64,
    rows: Vec<(f64, f64, bool)>,
}

/// Phase codes (the order of `tracekit.schema.PHASE`).
pub const SLOW_START: u8 = 0;
pub const CONGESTION_AVOIDANCE: u8 = 1;
pub const RECOVERY: u8 = 2;

impl Phase {
    pub fn new(mss: f64, rows: usize) -> Self {
        Phase {
            mss,
            rows: Vec::with_capacity(rows),
        }
    }

    /// One row: its time, estimate, ssthresh (NaN: none yet) and whether it lies in a recovery.
    /// Returns its phase code: slow start while cwnd < ssthresh or none is known (RFC 5681 §3.1).
    pub fn on_row(&mut self, time: f64, est: f64, ssthresh: f64, recovery: bool) -> u8 {
        let ca = !recovery && est >= ssthresh;
        self.rows.push((time, est, ca));
        if recovery {
            RECOVERY
        } else if ca {
            CONGESTION_AVOIDANCE
        } else {
            SLOW_START
        }
    }

    /// The estimates with congestion-avoidance growth spread between the whole-segment steps.
    pub fn finish(&self) -> Vec<f64> {
        let n = self.rows.len();
        let mut out = Vec::with_capacity(n);
        let mut rs = 0;
        while rs < n {
            let (t0, e0, ca0) = self.rows[rs];
            // a run: consecutive rows with the same value and CA state
            let mut nxt = rs + 1;
            while nxt < n && self.rows[nxt].1 == e0 && self.rows[nxt].2 == ca0 {
                nxt += 1;
            }
            let (mut step, mut span, mut ok) = (0.0, 1.0, false);
            if nxt < n {
                let (tj, ej, caj) = self.rows[nxt];
                let (st, sp) = (ej - e0, tj - t0);
                // one whole-segment step up, inside congestion avoidance
                if ca0 && caj && st > 0.0 && st <= 1.01 * self.mss && sp > 0.0 {
                    (step, span, ok) = (st, sp, true);
                }
            }
            if !ok {
                (step, span) = (0.0, 1.0);
            }
            for &(t, e, _) in &self.rows[rs..nxt] {
                out.push(e + (t - t0) / span * step);
            }
            rs = nxt;
        }
        out
    }
}

/// [`Acks::on_data`]'s result: snd_una, sent on a duplicate ACK, and for a retransmission
/// (highest byte sent before it, arrival time of the latest ACK, of the latest advancing ACK).
pub type Seg = (i64, bool, Option<(i64, f64, f64)>);

/// The ACK stream one direction's sender receives, walked with its data segments in capture
/// order: snd_una, the duplicate-ACK state, retransmissions and the minimum RTT.
///
/// - snd_una is the highest cumulative ACK so far (RFC 793 §3.3: an old ACK never lowers
///   it), at least the direction's first data byte;
/// - an ACK that does not advance snd_una is a duplicate (RFC 5681 §2), and a segment sent
///   when the latest ACK is one was clocked by a duplicate;
/// - a segment that starts below the highest byte sent before it is a retransmission, as is
///   every one the retransmission analysis names;
/// - RTT samples come from first transmissions only (Karn's rule, RFC 6298 §3): the time from
///   a segment to the first ACK whose cumulative value reaches the highest byte sent so far.
pub struct Acks<'a> {
    a_time: &'a [f64],
    first_seq: i64,
    /// Cumulative ACK of every ACK fed so far.
    pub a_una: Vec<i64>,
    /// Arrival time of the latest advancing ACK (-inf: none).
    t_new: f64,
    /// The latest ACK advanced snd_una.
    new: bool,
    sent_hi: i64,
    /// First transmissions not yet covered by an ACK: (highest byte sent, time), both ascending.
    pending: VecDeque<(i64, f64)>,
    rtt: f64,
    /// Some sample was positive / NaN.
    any: bool,
    rtt_nan: bool,
}

impl<'a> Acks<'a> {
    /// A direction whose ACKs arrive at `a_time` and whose lowest data byte is `first_seq`.
    pub fn new(a_time: &'a [f64], first_seq: i64) -> Self {
        Acks {
            a_time,
            first_seq,
            a_una: Vec::with_capacity(a_time.len()),
            t_new: f64::NEG_INFINITY,
            new: false,
            sent_hi: MISSING,
            pending: VecDeque::new(),
            rtt: f64::INFINITY,
            any: false,
            rtt_nan: false,
        }
    }

    fn sample(&mut self, rtt: f64) {
        if rtt.is_nan() {
            self.rtt_nan = true;
        } else if rtt > 0.0 {
            self.any = true;
            self.rtt = self.rtt.min(rtt);
        }
    }

    /// The next ACK (in capture order) with cumulative ACK number `ack`.
    pub fn on_ack(&mut self, ack: i64) {
        let k = self.a_una.len();
        let prev = self.a_una.last().copied().unwrap_or(MISSING);
        let una = prev.max(ack);
        self.a_una.push(una);
        self.new = una > prev;
        let t = self.a_time.get(k).copied().unwrap_or(f64::NAN);
        if self.new {
            self.t_new = t;
        }
        while let Some(&(hi, ts)) = self.pending.front() {
            if hi > una {
                break;
            }
            self.pending.pop_front();
            self.sample(t - ts);
        }
    }

    /// The next data segment: its time, start, end and whether the retransmission analysis
    /// named it. Returns (snd_una, sent on a duplicate ACK, and for a retransmission: the
    /// highest byte sent before it, the arrival times of the latest ACK and of the latest
    /// advancing ACK, -inf for none).
    pub fn on_data(&mut self, time: f64, seq: i64, end: i64, named: bool) -> Seg {
        let acked = !self.a_una.is_empty();
        let (una, dup) = match self.a_una.last() {
            Some(&u) => (u.max(self.first_seq), !self.new),
            None => (self.first_seq, false),
        };
        let before = self.sent_hi;
        let retx = named || seq < before;
        self.sent_hi = self.sent_hi.max(end);
        let r = retx.then(|| {
            let t_ack = if acked {
                self.a_time[self.a_una.len() - 1]
            } else {
                f64::NEG_INFINITY
            };
            (
                before,
                t_ack,
                if acked { self.t_new } else { f64::NEG_INFINITY },
            )
        });
        if !retx {
            let hi = self.sent_hi;
            match self.a_una.last() {
                // already covered by an earlier ACK: its first covering ACK is not later
                Some(&u) if u >= hi => {
                    let k = self.a_una.partition_point(|&x| x < hi);
                    self.sample(self.a_time[k] - time);
                }
                _ => self.pending.push_back((hi, time)),
            }
        }
        (una, dup, r)
    }

    /// The minimum RTT (NaN: no sample). `strict` (many directions, as the vectorised search
    /// did): a NaN sample, or infinite ones only, give NaN too.
    pub fn min_rtt(&self, strict: bool) -> f64 {
        if !self.any || strict && (self.rtt_nan || self.rtt.is_infinite()) {
            f64::NAN
        } else {
            self.rtt
        }
    }
}

/// Direction bounds `lo[d]..hi[d]` checked against `n` rows.
fn bounds(lo: &[i64], hi: &[i64], n: usize) -> Result<Vec<(usize, usize)>, String> {
    if lo.len() != hi.len() {
        return Err(format!("lo has {} values, hi {}", lo.len(), hi.len()));
    }
    lo.iter()
        .zip(hi)
        .map(|(&a, &b)| {
            if a < 0 || b < a || b as usize > n {
                Err(format!("direction rows {a}..{b} outside 0..{n}"))
            } else {
                Ok((a as usize, b as usize))
            }
        })
        .collect()
}

fn same_len(n: usize, cols: &[(&str, usize)]) -> Result<(), String> {
    match cols.iter().find(|c| c.1 != n) {
        Some((name, l)) => Err(format!("column {name} has {l} values, time has {n}")),
        None => Ok(()),
    }
}

/// Marks `bit` on `rows` (each checked against `n`).
fn mark(marks: &mut [u8], rows: &[i64], bit: u8) -> Result<(), String> {
    let n = marks.len();
    for &r in rows {
        let slot = usize::try_from(r).ok().and_then(|r| marks.get_mut(r));
        *slot.ok_or_else(|| format!("row {r} outside 0..{n}"))? |= bit;
    }
    Ok(())
}

/// The inputs of [`pipe`], one entry per data row (directions contiguous).
pub struct PipeRows<'a> {
    pub time: &'a [f64],
    pub seq_end: &'a [i64],
    pub una: &'a [i64],
    /// SACKed bytes above una (0: none).
    pub sacked: &'a [i64],
    pub marks: &'a [u8],
    pub lo: &'a [i64],
    pub hi: &'a [i64],
    pub min_rtt: &'a [f64],
}

/// The filtered pipe and the raw pipe of every row, direction by direction.
pub fn pipe(r: &PipeRows) -> Result<(Vec<f64>, Vec<f64>), String> {
    let n = r.time.len();
    let cols = [
        ("seq_end", r.seq_end.len()),
        ("una", r.una.len()),
        ("sacked", r.sacked.len()),
        ("marks", r.marks.len()),
    ];
    same_len(n, &cols)?;
    same_len(r.lo.len(), &[("min_rtt", r.min_rtt.len())])?;
    let b = bounds(r.lo, r.hi, n)?;
    let (mut filt, mut raw) = (vec![0.0; n], vec![0.0; n]);
    split(&mut filt, &b)?
        .into_par_iter()
        .zip(split(&mut raw, &b)?)
        .zip(b.par_iter().zip(r.min_rtt))
        .for_each(|((f, w), (&(a, e), &mr))| {
            let mut p = Pipe::new(mr, e - a);
            for (i, slot) in (a..e).zip(w.iter_mut()) {
                *slot = p.on_row(r.time[i], r.seq_end[i], r.una[i], r.sacked[i], r.marks[i]);
            }
            p.finish(f);
        });
    Ok((filt, raw))
}

/// Interpolated estimates and phase codes of every row, direction by direction.
#[allow(clippy::too_many_arguments)]
pub fn phases(
    time: &[f64],
    est: &[f64],
    ssthresh: &[f64],
    recovery: &[bool],
    lo: &[i64],
    hi: &[i64],
    mss: &[f64],
) -> Result<(Vec<f64>, Vec<u8>), String> {
    let n = time.len();
    same_len(
        n,
        &[
            ("est", est.len()),
            ("ssthresh", ssthresh.len()),
            ("recovery", recovery.len()),
        ],
    )?;
    same_len(lo.len(), &[("mss", mss.len())])?;
    let b = bounds(lo, hi, n)?;
    let per: Vec<(usize, Vec<f64>, Vec<u8>)> = b
        .par_iter()
        .zip(mss)
        .filter(|((a, e), _)| e > a)
        .map(|(&(a, e), &m)| {
            let mut ph = Phase::new(m, e - a);
            let codes = (a..e)
                .map(|i| ph.on_row(time[i], est[i], ssthresh[i], recovery[i]))
                .collect();
            (a, ph.finish(), codes)
        })
        .collect();
    let (mut out, mut codes) = (est.to_vec(), vec![SLOW_START; n]);
    for (a, v, c) in per {
        out[a..a + v.len()].copy_from_slice(&v);
        codes[a..a + c.len()].copy_from_slice(&c);
    }
    Ok((out, codes))
}

/// The inputs of [`acks`]: data rows (directions contiguous, capture order) and the ACK
/// stream of each direction's sender (`alo[d]..ahi[d]`, capture order). Capture order is
/// given by `(key, tie)` pairs on both: (time, frame number), or (0, rank in capture order).
pub struct AckRows<'a> {
    pub time: &'a [f64],
    pub seq_end: &'a [i64],
    pub pay: &'a [i64],
    pub key: &'a [f64],
    pub tie: &'a [i64],
    /// Rows the retransmission analysis names, and those it calls `fast`.
    pub named: &'a [bool],
    pub fast: &'a [bool],
    pub lo: &'a [i64],
    pub hi: &'a [i64],
    pub alo: &'a [i64],
    pub ahi: &'a [i64],
    pub a_time: &'a [f64],
    pub a_ack: &'a [i64],
    pub a_key: &'a [f64],
    pub a_tie: &'a [i64],
}

/// [`acks`]' result: per row snd_una and dupACK state, per ACK its cumulative value, the
/// retransmitted rows with `fast`, the highest byte before, the latest ACK's and latest
/// advancing ACK's times, and each direction's minimum RTT.
#[derive(Default)]
pub struct AckState {
    /// The latest ACK before each row (an index into the ACK stream; -1: none).
    pub j: Vec<i64>,
    pub una: Vec<i64>,
    pub dup: Vec<bool>,
    pub a_una: Vec<i64>,
    pub retx: Vec<Retx>,
    pub min_rtt: Vec<f64>,
}

/// One direction's outputs: latest ACK, snd_una and dupACK state per row, cumulative ACK per ACK.
struct DirOut<'a> {
    j: &'a mut [i64],
    una: &'a mut [i64],
    dup: &'a mut [bool],
    a_una: &'a mut [i64],
}

type Retx = (i64, bool, i64, f64, f64);

/// Splits `v` into the ranges `b` (ascending, disjoint, within `v`: see [`bounds`]).
fn split<'a, T>(mut v: &'a mut [T], b: &[(usize, usize)]) -> Result<Vec<&'a mut [T]>, String> {
    let mut out = Vec::with_capacity(b.len());
    let mut at = 0;
    for &(a, e) in b {
        if a < at {
            return Err(format!("rows {a}..{e} overlap the previous direction's"));
        }
        let (_, tail) = std::mem::take(&mut v).split_at_mut(a - at);
        let (mine, tail) = tail.split_at_mut(e - a);
        out.push(mine);
        v = tail;
        at = e;
    }
    Ok(out)
}

fn acks_of(
    r: &AckRows,
    (a, e): (usize, usize),
    (aa, ae): (usize, usize),
    strict: bool,
    out: DirOut,
) -> (Vec<Retx>, f64) {
    // una is at least the direction's first data byte (rows before any ACK take that byte)
    let first_seq = (a..e)
        .map(|i| r.seq_end[i].wrapping_sub(r.pay[i]))
        .min()
        .unwrap_or(0);
    let mut st = Acks::new(&r.a_time[aa..ae], first_seq);
    let mut retx = Vec::new();
    let mut fed = 0usize;
    for i in a..e {
        // the ACKs before the segment in capture order (an ACK at the same instant comes
        // first when its frame is lower) reach the sender before it is sent
        let at = (r.key[i], r.tie[i]);
        while aa + fed < ae && (r.a_key[aa + fed], r.a_tie[aa + fed]) < at {
            st.on_ack(r.a_ack[aa + fed]);
            fed += 1;
        }
        out.j[i - a] = if fed == 0 { -1 } else { (aa + fed - 1) as i64 };
        let seq = r.seq_end[i].wrapping_sub(r.pay[i]);
        let (u, d, rt) = st.on_data(r.time[i], seq, r.seq_end[i], r.named[i]);
        out.una[i - a] = u;
        out.dup[i - a] = d;
        if let Some((h, ta, tn)) = rt {
            retx.push((i as i64, r.fast[i], h, ta, tn));
        }
    }
    while aa + fed < ae {
        st.on_ack(r.a_ack[aa + fed]);
        fed += 1;
    }
    out.a_una.copy_from_slice(&st.a_una);
    (retx, st.min_rtt(strict))
}

/// snd_una, dupACK state, retransmissions and minimum RTT of every direction (see [`Acks`]).
pub fn acks(r: &AckRows) -> Result<AckState, String> {
    let n = r.time.len();
    let cols = [
        ("seq_end", r.seq_end.len()),
        ("pay", r.pay.len()),
        ("key", r.key.len()),
        ("tie", r.tie.len()),
        ("named", r.named.len()),
        ("fast", r.fast.len()),
    ];
    same_len(n, &cols)?;
    let a_cols = [
        ("a_ack", r.a_ack.len()),
        ("a_key", r.a_key.len()),
        ("a_tie", r.a_tie.len()),
    ];
    same_len(r.a_time.len(), &a_cols)?;
    let b = bounds(r.lo, r.hi, n)?;
    let ab = bounds(r.alo, r.ahi, r.a_time.len())?;
    if b.len() != ab.len() {
        return Err(format!(
            "{} data directions, {} ACK streams",
            b.len(),
            ab.len()
        ));
    }
    // many directions were searched on one axis, where a NaN or infinite RTT gave none
    let strict = b.len() > 64;
    let mut out = AckState {
        j: vec![-1; n],
        una: vec![0; n],
        dup: vec![false; n],
        a_una: vec![MISSING; r.a_time.len()],
        ..AckState::default()
    };
    let outs: Vec<DirOut> = split(&mut out.j, &b)?
        .into_iter()
        .zip(split(&mut out.una, &b)?)
        .zip(split(&mut out.dup, &b)?)
        .zip(split(&mut out.a_una, &ab)?)
        .map(|(((j, una), dup), a_una)| DirOut { j, una, dup, a_una })
        .collect();
    let per: Vec<(Vec<Retx>, f64)> = outs
        .into_par_iter()
        .zip(b.par_iter().zip(&ab))
        .map(|(o, (&d, &a))| acks_of(r, d, a, strict, o))
        .collect();
    for (retx, mr) in per {
        out.retx.extend(retx);
        out.min_rtt.push(mr);
    }
    Ok(out)
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err(format!("column {name} is not contiguous")))
}

type PipeArrays<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

/// The cwnd estimate's pipe (see `Pipe`): `(filtered, raw)` per data row.
///
/// `ev`: loss events' first rows; `ends`: rows where an event ends; `sack_at`/`sack_val`:
/// rows with SACKed bytes and how many (a repeated row: the last value).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_pipe<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    seq_end: PyReadonlyArray1<'py, i64>,
    una: PyReadonlyArray1<'py, i64>,
    dup: PyReadonlyArray1<'py, bool>,
    new_ack: PyReadonlyArray1<'py, bool>,
    sack_at: PyReadonlyArray1<'py, i64>,
    sack_val: PyReadonlyArray1<'py, i64>,
    lo: PyReadonlyArray1<'py, i64>,
    hi: PyReadonlyArray1<'py, i64>,
    min_rtt: PyReadonlyArray1<'py, f64>,
    ev: PyReadonlyArray1<'py, i64>,
    ends: PyReadonlyArray1<'py, i64>,
) -> PyResult<PipeArrays<'py>> {
    let time = slice(&time, "time")?;
    let (dup, new_ack) = (slice(&dup, "dup")?, slice(&new_ack, "new_ack")?);
    let (sack_at, sack_val) = (slice(&sack_at, "sack_at")?, slice(&sack_val, "sack_val")?);
    let (lo, hi, ev, ends) = (
        slice(&lo, "lo")?,
        slice(&hi, "hi")?,
        slice(&ev, "ev")?,
        slice(&ends, "ends")?,
    );
    let r = (
        slice(&seq_end, "seq_end")?,
        slice(&una, "una")?,
        slice(&min_rtt, "min_rtt")?,
    );
    let out = py.detach(|| {
        guard(|| {
            let n = time.len();
            same_len(n, &[("dup", dup.len()), ("new_ack", new_ack.len())])?;
            same_len(sack_at.len(), &[("sack_val", sack_val.len())])?;
            let mut marks: Vec<u8> = dup
                .iter()
                .zip(new_ack)
                .map(|(&d, &a)| if d { DUP } else { 0 } | if a { NEW_ACK } else { 0 })
                .collect();
            mark(&mut marks, ev, EPOCH | SEG)?;
            mark(&mut marks, ends, SEG)?;
            let mut sacked = vec![0i64; n];
            for (&at, &v) in sack_at.iter().zip(sack_val) {
                let slot = usize::try_from(at).ok().and_then(|i| sacked.get_mut(i));
                *slot.ok_or_else(|| format!("SACK row {at} outside 0..{n}"))? = v;
            }
            pipe(&PipeRows {
                time,
                seq_end: r.0,
                una: r.1,
                sacked: &sacked,
                marks: &marks,
                lo,
                hi,
                min_rtt: r.2,
            })
        })
    })?;
    Ok((out.0.into_pyarray(py), out.1.into_pyarray(py)))
}

type PhaseArrays<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<u8>>);

/// Congestion-avoidance interpolation and phase codes (see `Phase`): `(estimate, phase)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_phases<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    est: PyReadonlyArray1<'py, f64>,
    ssthresh: PyReadonlyArray1<'py, f64>,
    recovery: PyReadonlyArray1<'py, bool>,
    lo: PyReadonlyArray1<'py, i64>,
    hi: PyReadonlyArray1<'py, i64>,
    mss: PyReadonlyArray1<'py, f64>,
) -> PyResult<PhaseArrays<'py>> {
    let c = (
        slice(&time, "time")?,
        slice(&est, "est")?,
        slice(&ssthresh, "ssthresh")?,
        slice(&recovery, "recovery")?,
    );
    let d = (slice(&lo, "lo")?, slice(&hi, "hi")?, slice(&mss, "mss")?);
    let out = py.detach(|| guard(|| phases(c.0, c.1, c.2, c.3, d.0, d.1, d.2)))?;
    Ok((out.0.into_pyarray(py), out.1.into_pyarray(py)))
}

type AckArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// The ACK stream at each data row (see `Acks`): `(j, una, dup, a_una, retx_rows, retx_fast,
/// retx_hi, retx_tack, retx_tnew, min_rtt)`; `j` is the latest ACK before each row (-1: none).
///
/// `named`/`fast`: rows the retransmission analysis names / calls `fast` (repeats allowed).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cwnd_acks<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    seq_end: PyReadonlyArray1<'py, i64>,
    pay: PyReadonlyArray1<'py, i64>,
    key: PyReadonlyArray1<'py, f64>,
    tie: PyReadonlyArray1<'py, i64>,
    named: PyReadonlyArray1<'py, i64>,
    fast: PyReadonlyArray1<'py, i64>,
    lo: PyReadonlyArray1<'py, i64>,
    hi: PyReadonlyArray1<'py, i64>,
    alo: PyReadonlyArray1<'py, i64>,
    ahi: PyReadonlyArray1<'py, i64>,
    a_time: PyReadonlyArray1<'py, f64>,
    a_ack: PyReadonlyArray1<'py, i64>,
    a_key: PyReadonlyArray1<'py, f64>,
    a_tie: PyReadonlyArray1<'py, i64>,
) -> PyResult<AckArrays<'py>> {
    let c = (
        slice(&time, "time")?,
        slice(&seq_end, "seq_end")?,
        slice(&pay, "pay")?,
        slice(&key, "key")?,
        slice(&tie, "tie")?,
    );
    let m = (slice(&named, "named")?, slice(&fast, "fast")?);
    let d = (
        slice(&lo, "lo")?,
        slice(&hi, "hi")?,
        slice(&alo, "alo")?,
        slice(&ahi, "ahi")?,
    );
    let a = (
        slice(&a_time, "a_time")?,
        slice(&a_ack, "a_ack")?,
        slice(&a_key, "a_key")?,
        slice(&a_tie, "a_tie")?,
    );
    let st = py.detach(|| {
        guard(|| {
            let n = c.0.len();
            let (mut nm, mut fs) = (vec![0u8; n], vec![0u8; n]);
            mark(&mut nm, m.0, 1)?;
            mark(&mut fs, m.1, 1)?;
            let (nm, fs): (Vec<bool>, Vec<bool>) = (
                nm.iter().map(|&x| x != 0).collect(),
                fs.iter().map(|&x| x != 0).collect(),
            );
            acks(&AckRows {
                time: c.0,
                seq_end: c.1,
                pay: c.2,
                key: c.3,
                tie: c.4,
                named: &nm,
                fast: &fs,
                lo: d.0,
                hi: d.1,
                alo: d.2,
                ahi: d.3,
                a_time: a.0,
                a_ack: a.1,
                a_key: a.2,
                a_tie: a.3,
            })
        })
    })?;
    let rows: Vec<i64> = st.retx.iter().map(|x| x.0).collect();
    let fast: Vec<bool> = st.retx.iter().map(|x| x.1).collect();
    let hi: Vec<i64> = st.retx.iter().map(|x| x.2).collect();
    let tack: Vec<f64> = st.retx.iter().map(|x| x.3).collect();
    let tnew: Vec<f64> = st.retx.iter().map(|x| x.4).collect();
    Ok((
        st.j.into_pyarray(py),
        st.una.into_pyarray(py),
        st.dup.into_pyarray(py),
        st.a_una.into_pyarray(py),
        rows.into_pyarray(py),
        fast.into_pyarray(py),
        hi.into_pyarray(py),
        tack.into_pyarray(py),
        tnew.into_pyarray(py),
        st.min_rtt.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cwnd_acks, m)?)?;
    m.add_function(wrap_pyfunction!(cwnd_pipe, m)?)?;
    m.add_function(wrap_pyfunction!(cwnd_phases, m)?)
}

#[cfg(test)]
mod tests;
