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
//!   restarted at every loss event's start and end (SACKed data above a restarted snd_nxt is
//!   no part of it: [`SackInfo`] tells which segments are SACKed, not only how many bytes);
//! - [`Phase`]: congestion-avoidance interpolation between whole-segment steps, and the phase
//!   code (slow start / congestion avoidance / recovery) of every row.
//!
//! Each is a struct fed the direction's rows in order so a streaming driver can use it
//! without columns; the max filter looks ahead only over rows at the same instant, the
//! interpolation up to the next whole-segment step (both kept per direction).

mod acks;
mod py;

pub use acks::{acks, AckRows};
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

/// What the SACK scoreboard (`super::sack`) says of one data row.
#[derive(Debug, Clone, Copy)]
pub struct SackInfo {
    /// Its payload length (its segment is `seq_end - len .. seq_end`).
    pub len: i64,
    /// Its data packet's place among the capture's data packets (-1: unknown).
    pub pos: i64,
    /// Its segment counts as SACKed from rows whose `pos` is at least this (-1: never SACKed,
    /// or not a first transmission: `sack::FlightColumns::sacked_at`).
    pub at: i64,
}

impl SackInfo {
    /// A row the scoreboard says nothing of.
    pub const NONE: SackInfo = SackInfo {
        len: 0,
        pos: -1,
        at: -1,
    };
}

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
    /// Highest segment end of the direction (HighData).
    hi: i64,
    /// The segments SACKed (now or later) and not yet cumulatively ACKed, by end: (seq, end,
    /// from which data packet place on they count as SACKed: [`SackInfo::at`]).
    sacks: VecDeque<(i64, i64, i64)>,
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
            hi: 0,
            sacks: VecDeque::new(),
            prev_tau: 0.0,
            key: 0,
            keys: Vec::with_capacity(rows),
            bursts: Vec::new(),
        }
    }

    /// One data segment: its time, end (seq + len), the cumulative ACK before it (una), the
    /// bytes SACKed above una, what the scoreboard says of it (`sk`) and its marks ([`EPOCH`] ..
    /// [`DUP`]). Returns its pipe before duplicate-ACK sends are dropped (the recoveries read it
    /// at the bursts).
    pub fn on_row(
        &mut self,
        time: f64,
        seq_end: i64,
        una: i64,
        sacked: i64,
        sk: SackInfo,
        marks: u8,
    ) -> f64 {
        let first = self.keys.is_empty();
        // snd_nxt restarts at each loss event: the highest byte sent since
        if first || marks & EPOCH != 0 {
            self.snd_nxt = seq_end;
        } else {
            self.snd_nxt = self.snd_nxt.max(seq_end);
        }
        self.hi = if first { seq_end } else { self.hi.max(seq_end) };
        let sacked = self.sacked_below(una, sacked, sk, seq_end);
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

    /// The bytes of `sacked` (SACKed above una, as the scoreboard counts them) that lie below
    /// snd_nxt. RFC 6675 §2 counts in the pipe only octets between HighACK and HighData, and
    /// after a restart (snd_nxt back at the loss event: a timeout, RFC 5681 §3.1 / Linux
    /// `tcp_enter_loss`, resends from una) the data is what lies below the restarted snd_nxt:
    /// SACKed blocks above it are neither in the pipe nor to be taken out of it (Linux keeps
    /// their SACKed marks across the loss: `tcp_timeout_mark_lost` skips SACKed skbs, and
    /// `tcp_packets_in_flight` counts only what it retransmits). Exact: each first
    /// transmission SACKed is known with the data packet place from which it counts.
    fn sacked_below(&mut self, una: i64, sacked: i64, sk: SackInfo, seq_end: i64) -> i64 {
        if sk.at >= 0 {
            // a first transmission that gets SACKed: kept by end (ends increase in capture order)
            let seg = (seq_end.wrapping_sub(sk.len), seq_end, sk.at);
            let at = self.sacks.partition_point(|s| s.1 <= seq_end);
            self.sacks.insert(at, seg);
        }
        while self.sacks.front().is_some_and(|s| s.1 <= una) {
            self.sacks.pop_front();
        }
        // every segment kept ends at or below hi: nothing lies above an un-restarted snd_nxt
        if sacked <= 0 || self.snd_nxt >= self.hi || sk.pos < 0 {
            return sacked;
        }
        let x = self.snd_nxt.max(una);
        let from = self.sacks.partition_point(|s| s.1 <= x);
        let above: i64 = self
            .sacks
            .range(from..)
            .filter(|s| s.2 <= sk.pos)
            .map(|s| s.1 - s.0.max(x))
            .sum();
        (sacked - above).max(0)
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
    /// Payload, data packet place and SACKed-from place per row ([`SackInfo`]; all empty: none).
    pub pay: &'a [i64],
    pub pos: &'a [i64],
    pub at: &'a [i64],
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
    let info = !r.pos.is_empty();
    if info {
        same_len(
            n,
            &[
                ("pay", r.pay.len()),
                ("pos", r.pos.len()),
                ("at", r.at.len()),
            ],
        )?;
    }
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
                let sk = if info {
                    SackInfo {
                        len: r.pay[i],
                        pos: r.pos[i],
                        at: r.at[i],
                    }
                } else {
                    SackInfo::NONE
                };
                *slot = p.on_row(
                    r.time[i],
                    r.seq_end[i],
                    r.una[i],
                    r.sacked[i],
                    sk,
                    r.marks[i],
                );
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

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    py::register(m)
}

#[cfg(test)]
mod tests;
