//! The congestion-window estimate (`tracekit.analysis._cwnd_estimate`).
//!
//! A cwnd-limited sender keeps one window outstanding, so after the segments an ACK releases
//! `pipe = snd_nxt − snd_una − SACKed` is cwnd (RFC 5681 §2 "FlightSize", RFC 6675 §4 "pipe").
//! Its input rows are built here per packet ([`rows::DirRows`], fed by `rows_frames` from the
//! packet columns: `tracekit._core.cwnd_rows`); Python builds the frames; the estimate itself runs here in one call
//! ([`estimate::estimate`], `tracekit._core.cwnd_estimate`), one direction at a time (its rows
//! contiguous, capture order):
//!
//! - `episodes`: the loss events (a chain of retransmissions up to the recovery point, RFC
//!   6582; the timeouts the retransmission analysis names), each one's go-back-N verdict;
//! - `recoveries`: recovery or restart of each event, its ssthresh (RFC 5681 §3.1 eq. 4, held
//!   on a backed-off expiry), the estimate inside recoveries and until the next reading;
//! - [`Acks`]: the ACK stream merged with the segments in capture order: snd_una, the
//!   dupACK state, retransmissions and Karn's minimum RTT (fed by `on_ack` / `on_data`);
//! - [`Pipe`]: the pipe at each segment and its causal max filter over two minimum RTTs,
//!   restarted at every loss event's start and end (SACKed data above a restarted snd_nxt is
//!   no part of it: [`SackInfo`] tells which segments are SACKed, not only how many bytes);
//!   after a timeout only what was sent since is in it (RFC 5681 §3.1, RFC 6675 §4), and an
//!   application-limited burst reads no window (RFC 7661 §4): both where the capture is the
//!   sender's own view ([`at_sender`]);
//! - [`Phase`]: congestion-avoidance interpolation between whole-segment steps, and the phase
//!   code (slow start / congestion avoidance / recovery) of every row.
//!
//! Each is a struct fed the direction's rows in order so a streaming driver can use it
//! without columns; the max filter looks ahead only over rows at the same instant, the
//! interpolation up to the next whole-segment step (both kept per direction).

pub mod acks;
pub mod episodes;
pub mod estimate;
pub mod events;
mod pipe;
mod pipe_rows;
mod py;
mod py_estimate;
pub mod py_events;
mod py_story;
mod recoveries;
pub mod rows;
pub mod rows_frames;
pub mod story;
pub mod stretch;

pub use pipe::{Pipe, RowIn};
#[cfg(test)]
pub use pipe_rows::pipe;
pub use pipe_rows::{DirPipe, PipeRows, Sparse};

/// Per-direction bounds (`lo`, `hi`) of runs of the given lengths: the rows of direction `k`
/// are `lo[k]..hi[k]` of the concatenated columns (`cwnd_rows`' output, the stream's batch).
pub fn spans(lens: impl Iterator<Item = usize>) -> (Vec<i64>, Vec<i64>) {
    let (mut lo, mut hi, mut at) = (Vec::new(), Vec::new(), 0i64);
    for n in lens {
        lo.push(at);
        at += n as i64;
        hi.push(at);
    }
    (lo, hi)
}
use pyo3::prelude::*;
#[cfg(test)]
use rayon::prelude::*;

/// Width of the max filter, in minimum RTTs (queueing and delayed ACKs stretch an RTT).
pub const FILTER_RTTS: f64 = 2.0;

/// Row marks: a loss event starts here (snd_nxt restarts: go-back-N senders resend from snd_una).
pub const EPOCH: u8 = 1 << 0;
/// The filter restarts here (a direction's first row, a loss event's start or end).
pub const SEG: u8 = 1 << 1;
/// The latest ACK differs from the previous row's: a new burst of segments starts.
pub const NEW_ACK: u8 = 1 << 2;
/// The segment was sent on a duplicate ACK (RFC 3042 limited transmit, dupACK inflation).
pub const DUP: u8 = 1 << 3;
/// The loss event starting here is a timeout (with [`EPOCH`]): every segment outstanding and not
/// SACKed counts as lost from here on (RFC 5681 §3.1, RFC 6675 §5.1; Linux `tcp_enter_loss`).
pub const TIMEOUT: u8 = 1 << 4;

/// Output flags of a row: its burst was application-limited (a lower bound of cwnd, no reading).
pub const APP: u8 = 1 << 0;
/// Output flags of a row: no cwnd-limited burst in its window, the estimate is held.
pub const HELD: u8 = 1 << 1;

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

/// Congestion-avoidance growth and the phase of one direction's rows.
///
/// In congestion avoidance cwnd grows by ~1 MSS per RTT (RFC 5681 §3.1), smoothly, while a
/// sender only fills whole segments: the pipe steps up by one segment when cwnd passes the
/// next multiple. Between two such steps the estimate is interpolated linearly in time (the
/// last stretch of a run, with no next step, keeps its value). Row by row for the tests:
/// [`phases`] runs the same [`code`] and [`spread`] over the columns in place.
#[cfg(test)]
pub struct Phase {
    mss: f64,
    rows: Vec<(f64, f64, bool)>,
}

/// Phase codes (the order of `tracekit.schema.PHASE`).
pub const SLOW_START: u8 = 0;
pub const CONGESTION_AVOIDANCE: u8 = 1;
pub const RECOVERY: u8 = 2;

#[cfg(test)]
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
        let c = code(est, ssthresh, recovery);
        self.rows.push((time, est, c == CONGESTION_AVOIDANCE));
        c
    }

    /// The estimates with congestion-avoidance growth spread between the whole-segment steps.
    pub fn finish(&self) -> Vec<f64> {
        let time: Vec<f64> = self.rows.iter().map(|r| r.0).collect();
        let mut est: Vec<f64> = self.rows.iter().map(|r| r.1).collect();
        let codes: Vec<u8> = self.rows.iter().map(|r| u8::from(r.2)).collect();
        spread(&time, &mut est, &codes, self.mss);
        est
    }
}

/// A row's phase code: recovery, else congestion avoidance once cwnd reaches ssthresh, else slow
/// start (while cwnd < ssthresh or none is known, RFC 5681 §3.1).
fn code(est: f64, ssthresh: f64, recovery: bool) -> u8 {
    if recovery {
        RECOVERY
    } else if est >= ssthresh {
        CONGESTION_AVOIDANCE
    } else {
        SLOW_START
    }
}

/// Spreads congestion-avoidance growth between whole-segment steps over one direction's rows,
/// in place (`codes`: their phase codes). A run is consecutive rows with the same estimate and
/// congestion-avoidance state; a run in congestion avoidance followed by one whole segment
/// (RFC 5681 §3.1: cwnd grows by about one SMSS per RTT) up, still in it, rises linearly in time
/// to that step. Each run is rewritten once its end has been read: later rows are as given.
#[cfg(test)]
fn spread(time: &[f64], est: &mut [f64], codes: &[u8], mss: f64) {
    spread_part(time, est, codes, mss, true);
}

/// [`spread`] over rows that may continue (`end`: false): the last run, which the rows after
/// them may extend, is left as given, and its first row returned (`end`: the rows' length).
fn spread_part(time: &[f64], est: &mut [f64], codes: &[u8], mss: f64, end: bool) -> usize {
    let n = est.len().min(time.len()).min(codes.len());
    let ca = |i: usize| codes[i] == CONGESTION_AVOIDANCE;
    let mut rs = 0;
    while rs < n {
        let (t0, e0, ca0) = (time[rs], est[rs], ca(rs));
        let mut nxt = rs + 1;
        while nxt < n && est[nxt] == e0 && ca(nxt) == ca0 {
            nxt += 1;
        }
        if nxt == n && !end {
            return rs;
        }
        let (mut step, mut span, mut ok) = (0.0, 1.0, false);
        if nxt < n {
            let (tj, ej, caj) = (time[nxt], est[nxt], ca(nxt));
            let (st, sp) = (ej - e0, tj - t0);
            // one whole-segment step up, inside congestion avoidance
            if ca0 && caj && st > 0.0 && st <= 1.01 * mss && sp > 0.0 {
                (step, span, ok) = (st, sp, true);
            }
        }
        if !ok {
            (step, span) = (0.0, 1.0);
        }
        for (e, &t) in est[rs..nxt].iter_mut().zip(&time[rs..nxt]) {
            *e += (t - t0) / span * step;
        }
        rs = nxt;
    }
    n
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

/// A capture whose segments leave this soon after the ACK that released them is the sender's
/// own view (seconds): a sender's kernel answers an ACK within tens of µs, a simulator's agent at
/// once; a capture a link away adds that link's round trip and its queueing.
pub const AT_SENDER_S: f64 = 1e-4;

/// Is the capture the sender's own view? Some segment left within [`AT_SENDER_S`] of the ACK
/// that released it (a new ACK, not a duplicate). Away from the sender its reply shows up a round
/// trip of the capture's own later, spread by queueing, and segments dropped before the capture
/// point are missing: neither the ACK clock nor what was (re-)sent after a timeout can be read
/// there.
pub fn at_sender(time: &[f64], ack_t: &[f64], marks: &[u8]) -> bool {
    sent_on_ack(
        time.iter()
            .zip(ack_t)
            .zip(marks)
            .skip(1)
            .map(|((&t, &a), &m)| (t, a, m)),
    )
}

/// [`at_sender`] over a direction's rows after its first, as (time, latest ACK's time, marks).
pub fn sent_on_ack(mut rows: impl Iterator<Item = (f64, f64, u8)>) -> bool {
    rows.any(|(t, a, m)| m & NEW_ACK != 0 && m & DUP == 0 && t - a <= AT_SENDER_S)
}

/// Interpolated estimates (`est`, rewritten) and phase codes of every row, direction by direction
/// (the estimate spreads a stretch at a time: `stretch`).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub fn phases(
    time: &[f64],
    mut est: Vec<f64>,
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
    let mut codes = vec![SLOW_START; n];
    split(&mut est, &b)?
        .into_par_iter()
        .zip(split(&mut codes, &b)?)
        .zip(b.par_iter().zip(mss))
        .for_each(|((e, c), (&(a, z), &m))| {
            for (i, slot) in (a..z).zip(c.iter_mut()) {
                *slot = code(e[i - a], ssthresh[i], recovery[i]);
            }
            spread(&time[a..z], e, c, m);
        });
    Ok((est, codes))
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
    py::register(m)?;
    py_story::register(m)?;
    py_estimate::register(m)
}

#[cfg(test)]
mod rows_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_loss;
