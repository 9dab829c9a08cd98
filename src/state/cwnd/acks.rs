//! The ACK stream of one direction's sender, merged with its data segments in capture order
//! (see [`Acks`]): snd_una, duplicate ACKs, retransmissions and the minimum RTT.

use super::{bounds, same_len, split};
use crate::state::seq::MISSING;
use rayon::prelude::*;
use std::collections::VecDeque;

/// [`Acks::on_data`]'s result: snd_una, sent on a duplicate ACK, and for a retransmission the
/// highest byte sent before it.
pub type Seg = (i64, bool, Option<i64>);

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
    /// highest byte sent before it).
    pub fn on_data(&mut self, time: f64, seq: i64, end: i64, named: bool) -> Seg {
        let (una, dup) = match self.a_una.last() {
            Some(&u) => (u.max(self.first_seq), !self.new),
            None => (self.first_seq, false),
        };
        let before = self.sent_hi;
        let retx = named || seq < before;
        self.sent_hi = self.sent_hi.max(end);
        let r = retx.then_some(before);
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
/// The inputs of [`acks`]: data rows (directions contiguous, capture order) and the ACK
/// stream of each direction's sender (`alo[d]..ahi[d]`, capture order). Capture order is
/// given by `(key, tie)` pairs on both: (time, frame number), or (0, rank in capture order).
pub struct AckRows<'a> {
    pub time: &'a [f64],
    pub seq_end: &'a [i64],
    pub pay: &'a [i64],
    pub key: &'a [f64],
    pub tie: &'a [i64],
    /// Rows the retransmission analysis names, and those its retransmission timer sent
    /// (`tracekit.analysis.retrans.timeout_resends`: the first re-send of each `rto` episode).
    pub named: &'a [bool],
    pub timeout: &'a [bool],
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
/// retransmitted rows with `timeout` and the highest byte before, and each direction's minimum RTT.
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

type Retx = (i64, bool, i64);

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
        if let Some(h) = rt {
            retx.push((i as i64, r.timeout[i], h));
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
        ("timeout", r.timeout.len()),
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
