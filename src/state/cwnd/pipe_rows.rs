//! The pipe's input columns ([`PipeRows`], one entry per data row, directions contiguous) and
//! [`DirPipe`], which feeds one direction's rows to its [`Pipe`] a row at a time (the estimate's
//! stretches: `stretch.rs`).

#[cfg(test)]
use super::split;
use super::{at_sender, bounds, same_len, Pipe, RowIn, SackInfo};
#[cfg(test)]
use rayon::prelude::*;

/// The inputs of [`pipe`], one entry per data row (directions contiguous).
pub struct PipeRows<'a> {
    pub time: &'a [f64],
    pub seq_end: &'a [i64],
    pub una: &'a [i64],
    /// SACKed bytes above una at the rows that have some (0 elsewhere), with their data packet
    /// places (`pos`, [`SackInfo`]; empty: none).
    pub sacked: Sparse<'a>,
    pub pos: &'a [i64],
    /// Payload per row (empty: unknown).
    pub pay: &'a [i64],
    /// The SACKed-from place of the rows whose segments get SACKed ([`SackInfo`]; empty: none,
    /// and no place is read).
    pub at: Sparse<'a>,
    pub marks: &'a [u8],
    /// When the latest ACK before each row arrived (NaN: none; empty: unknown).
    pub ack_t: &'a [f64],
    pub lo: &'a [i64],
    pub hi: &'a [i64],
    pub min_rtt: &'a [f64],
    /// Per direction: the ACK-clock tolerance (seconds) and the last cumulative ACK (empty:
    /// no application-limited bursts are looked for).
    pub clocked: &'a [f64],
    pub end_una: &'a [i64],
    /// Per direction: the idle after which a window may restart ([`Pipe::restart_after`]; empty:
    /// the empty-pipe rule is off).
    pub restart: &'a [f64],
}

/// Values at some rows: `rows` ascending, one value each (`vals[k]` at `rows[k]`).
#[derive(Clone, Copy)]
pub struct Sparse<'a> {
    pub rows: &'a [i64],
    pub vals: &'a [i64],
}

impl Sparse<'_> {
    /// The place of row `i` or the next row after it (rows read in ascending order from `k`).
    fn seek(&self, k: &mut usize, i: usize) -> Option<usize> {
        while self.rows.get(*k).is_some_and(|&r| r < i as i64) {
            *k += 1;
        }
        (self.rows.get(*k) == Some(&(i as i64))).then_some(*k)
    }
}

/// [`pipe`]'s result: filtered and raw pipe, and the flags ([`super::APP`], [`super::HELD`]), per row.
#[cfg(test)]
pub type PipeOut = (Vec<f64>, Vec<f64>, Vec<u8>);

/// The filtered pipe, the raw pipe and the flags of every row, direction by direction (the
/// estimate runs [`DirPipe`] a stretch at a time: `stretch`).
#[cfg(test)]
pub fn pipe(r: &PipeRows) -> Result<PipeOut, String> {
    let n = r.time.len();
    let b = r.check()?;
    let (mut filt, mut raw, mut flags) = (vec![0.0; n], vec![0.0; n], vec![0u8; n]);
    split(&mut filt, &b)?
        .into_par_iter()
        .zip(split(&mut raw, &b)?)
        .zip(split(&mut flags, &b)?)
        .zip(b.par_iter().enumerate())
        .for_each(|(((f, w), fl), (d, &(a, e)))| {
            let (mut rows, mut p) = DirPipe::new(r, d, (a, e));
            for (i, slot) in (a..e).zip(w.iter_mut()) {
                *slot = p.feed(&rows.input(i));
            }
            p.finish(rows.end_una, f, fl);
        });
    Ok((filt, raw, flags))
}

impl PipeRows<'_> {
    /// Checks the columns; returns each direction's rows.
    pub fn check(&self) -> Result<Vec<(usize, usize)>, String> {
        let r = self;
        let n = r.time.len();
        let cols = [
            ("seq_end", r.seq_end.len()),
            ("una", r.una.len()),
            ("marks", r.marks.len()),
        ];
        same_len(n, &cols)?;
        let info = !r.at.rows.is_empty();
        same_len(r.sacked.rows.len(), &[("sacked", r.sacked.vals.len())])?;
        same_len(r.at.rows.len(), &[("at", r.at.vals.len())])?;
        if info {
            same_len(r.sacked.rows.len(), &[("pos", r.pos.len())])?;
        }
        if info || !r.pay.is_empty() {
            same_len(n, &[("pay", r.pay.len())])?;
        }
        if !r.ack_t.is_empty() {
            same_len(n, &[("ack_t", r.ack_t.len())])?;
        }
        same_len(r.lo.len(), &[("min_rtt", r.min_rtt.len())])?;
        if r.app() {
            same_len(
                r.lo.len(),
                &[("clocked", r.clocked.len()), ("end_una", r.end_una.len())],
            )?;
        }
        if !r.restart.is_empty() {
            same_len(r.lo.len(), &[("restart", r.restart.len())])?;
        }
        bounds(r.lo, r.hi, n)
    }

    /// Application-limited bursts are looked for (the ACK clock is known).
    fn app(&self) -> bool {
        !self.clocked.is_empty() && !self.ack_t.is_empty()
    }
}

/// One direction's rows read from [`PipeRows`]' columns, in order, as its [`Pipe`] takes them.
pub struct DirPipe<'a> {
    r: &'a PipeRows<'a>,
    /// The next places in the sparse columns, and whether the SACK places are known.
    ks: usize,
    ka: usize,
    info: bool,
    /// The last cumulative ACK of the direction ([`Pipe::finish`]).
    pub end_una: i64,
}

impl<'a> DirPipe<'a> {
    /// Direction `d`, rows `a..e` (checked by [`PipeRows::check`]), and its pipe.
    pub fn new(r: &'a PipeRows<'a>, d: usize, (a, e): (usize, usize)) -> (Self, Pipe) {
        // without the ACK clock no burst is taken for application-limited
        let (clocked, end_una) = if r.app() {
            (r.clocked[d], r.end_una[d])
        } else {
            (f64::INFINITY, i64::MIN)
        };
        let here = r.app() && at_sender(&r.time[a..e], &r.ack_t[a..e], &r.marks[a..e]);
        let mut p = Pipe::new(r.min_rtt[d], clocked, here, e - a);
        if !r.restart.is_empty() {
            p = p.restart_after(r.restart[d]);
        }
        let rows = DirPipe {
            r,
            ks: r.sacked.rows.partition_point(|&x| x < a as i64),
            ka: r.at.rows.partition_point(|&x| x < a as i64),
            info: !r.at.rows.is_empty(),
            end_una,
        };
        (rows, p)
    }

    /// Row `i` (rows read in ascending order; a row may be read again).
    pub fn input(&mut self, i: usize) -> RowIn {
        let r = self.r;
        let len = r.pay.get(i).copied().unwrap_or(0);
        let s = r.sacked.seek(&mut self.ks, i);
        let sk = if self.info {
            SackInfo {
                len,
                pos: s.and_then(|k| r.pos.get(k)).copied().unwrap_or(-1),
                at: r.at.seek(&mut self.ka, i).map_or(-1, |k| r.at.vals[k]),
            }
        } else {
            SackInfo {
                len,
                ..SackInfo::NONE
            }
        };
        RowIn {
            time: r.time[i],
            seq_end: r.seq_end[i],
            una: r.una[i],
            sacked: s.map_or(0, |k| r.sacked.vals[k]),
            sk,
            marks: r.marks[i],
            ack_t: r.ack_t.get(i).copied().unwrap_or(f64::NAN),
        }
    }
}
