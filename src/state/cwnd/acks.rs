//! The ACK stream of one direction's sender, merged with its data segments in capture order
//! (see [`Acks`]): snd_una, duplicate ACKs, retransmissions and the minimum RTT.

use crate::state::seq::MISSING;
use std::collections::VecDeque;

/// [`Acks::on_data`]'s result: the latest cumulative ACK (None: no ACK yet; snd_una is then the
/// direction's first data byte), sent on a duplicate ACK, and for a retransmission the highest
/// byte sent before it.
pub type Seg = (Option<i64>, bool, Option<i64>);

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
///
/// Per ACK it keeps its time and cumulative value (16 B: the estimate reads both; [`Acks::walk`]
/// keeps none); per first transmission not yet covered, 16 B until an ACK covers it.
#[cfg_attr(test, derive(Clone))]
pub struct Acks {
    /// Time and cumulative ACK of every ACK fed so far.
    pub a_time: Vec<f64>,
    pub a_una: Vec<i64>,
    /// Keep every ACK (else only the latest cumulative value).
    keep: bool,
    /// ACKs dropped from the front of `a_time`, `a_una` ([`Acks::drop_before`]).
    pub base: usize,
    /// The latest cumulative ACK (None: no ACK yet).
    last: Option<i64>,
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

impl Default for Acks {
    fn default() -> Self {
        Acks {
            a_time: Vec::new(),
            a_una: Vec::new(),
            keep: true,
            base: 0,
            last: None,
            new: false,
            sent_hi: MISSING,
            pending: VecDeque::new(),
            rtt: f64::INFINITY,
            any: false,
            rtt_nan: false,
        }
    }
}

impl Acks {
    /// The walk alone, keeping no ACK: snd_una, retransmissions and the minimum RTT of a
    /// direction whose times never fall (a segment sent after an ACK that already covered it
    /// then has a sample of at most 0, which never counts: [`Acks::on_data`]). Pass 1 of the
    /// streamed summary walks each direction so.
    pub fn walk() -> Self {
        Acks {
            keep: false,
            ..Acks::default()
        }
    }

    /// ACKs fed so far (those dropped too).
    pub fn fed(&self) -> usize {
        self.base + self.a_una.len()
    }

    /// Drops the ACKs before ACK `k` (counted from the first fed): a stream keeps only those
    /// the rows still to be read look at. (A first transmission an earlier ACK already covered
    /// then takes its sample from a later one: both came before it, and a sample of at most 0
    /// never counts, [`Acks::on_data`].)
    pub fn drop_before(&mut self, k: usize) {
        let d = k.saturating_sub(self.base).min(self.a_una.len());
        self.a_una.drain(..d);
        self.a_time.drain(..d);
        self.base += d;
    }

    fn sample(&mut self, rtt: f64) {
        if rtt.is_nan() {
            self.rtt_nan = true;
        } else if rtt > 0.0 {
            self.any = true;
            self.rtt = self.rtt.min(rtt);
        }
    }

    /// The next ACK (in capture order): its time and cumulative ACK number `ack`.
    pub fn on_ack(&mut self, time: f64, ack: i64) {
        let prev = self.last.unwrap_or(MISSING);
        let una = prev.max(ack);
        self.last = Some(una);
        if self.keep {
            self.a_una.push(una);
            self.a_time.push(time);
        }
        self.new = una > prev;
        while let Some(&(hi, ts)) = self.pending.front() {
            if hi > una {
                break;
            }
            self.pending.pop_front();
            self.sample(time - ts);
        }
    }

    /// The next data segment: its time, start, end and whether the retransmission analysis
    /// named it. Returns (the latest cumulative ACK, sent on a duplicate ACK, and for a
    /// retransmission: the highest byte sent before it).
    pub fn on_data(&mut self, time: f64, seq: i64, end: i64, named: bool) -> Seg {
        let una = self.last;
        let dup = una.is_some() && !self.new;
        let before = self.sent_hi;
        let retx = named || seq < before;
        self.sent_hi = self.sent_hi.max(end);
        let hi = self.sent_hi;
        if !retx {
            match una {
                // already covered by an earlier ACK: its first covering ACK is not later
                Some(u) if u >= hi && self.keep => {
                    let k = self.a_una.partition_point(|&x| x < hi);
                    let t = self.a_time.get(k).copied().unwrap_or(f64::NAN);
                    self.sample(t - time);
                }
                Some(u) if u >= hi => {}
                _ => self.pending.push_back((hi, time)),
            }
        }
        (una, dup, retx.then_some(before))
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
