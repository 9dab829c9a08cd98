//! The RFC 6298 smoothed RTT of each direction, and its value "as of a row" for the passes that
//! read it (retransmissions, stalls, the flows' limit shares).
//!
//! [`Srtt`] is the estimator of one direction (RFC 6298 §2), fed its RTT samples in order.
//! [`smooth`] runs one per direction over a trace's samples (`src/state/rtt.rs`): the `seq`
//! samples of a direction, or its `ts` samples when it has none (the estimate follows one clock).
//! Its output, one estimate per sample on the row of the ACK that closed the sample, is the
//! `est` frame of `tracekit.analysis.rtt.smoothed`.
//!
//! The passes read it through [`Est`] (the estimates in row order: the one taken on each row)
//! and [`Latest`] (per connection, the latest estimate of each direction), so that "the
//! smoothed RTT of a direction as of a packet" has one definition.

use super::{guard, slice};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use std::collections::HashMap;

/// RFC 6298 §2.3 gains: alpha for SRTT, beta for RTTVAR.
pub const ALPHA: f64 = 1.0 / 8.0;
pub const BETA: f64 = 1.0 / 4.0;

/// The RTT estimator of one direction (RFC 6298 §2), before its first sample: none.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Srtt {
    srtt: f64,
    rttvar: f64,
    started: bool,
}

impl Srtt {
    /// One RTT measurement `r` (seconds).
    ///
    /// Each update is written `x + (y - x)·g`, the order of polars' `ewm_mean(adjust=False)`
    /// kernel (polars-arrow `legacy::kernels::ewm::average`) which this replaces: its weight
    /// `(1 - g) + g` is exactly 1 for g = 1/8 and 1/4, so the value is bit for bit the same. A NaN
    /// measurement makes the estimate NaN from then on (as the kernel does).
    pub fn on_sample(&mut self, r: f64) {
        if !self.started {
            // §2.2: the first measurement R: SRTT <- R, RTTVAR <- R/2
            self.srtt = r;
            self.rttvar = r / 2.0;
            self.started = true;
            return;
        }
        // §2.3: RTTVAR <- (1 - beta)·RTTVAR + beta·|SRTT - R'| with the SRTT before this
        // update ("in that order"), then SRTT <- (1 - alpha)·SRTT + alpha·R'
        let dev = (r - self.srtt).abs();
        self.rttvar = step(self.rttvar, dev, BETA);
        self.srtt = step(self.srtt, r, ALPHA);
    }

    /// (SRTT, RTTVAR) in seconds, None before the first sample.
    pub fn get(&self) -> Option<(f64, f64)> {
        self.started.then_some((self.srtt, self.rttvar))
    }
}

/// `x + (y - x)·g`. A NaN `x` stays itself, bit for bit: x86 returns the first NaN operand and
/// polars' kernel kept that order, but the compiler may swap the operands of `+`, so it is
/// written out (with `x` not NaN, at most one operand of each step is NaN: no order to keep).
fn step(x: f64, y: f64, g: f64) -> f64 {
    if x.is_nan() {
        x
    } else {
        x + (y - x) * g
    }
}

/// A trace's RTT samples (any order): connection, the direction each times (0 or 1), the row
/// of the ACK that closed it, whether it is a `seq` sample (else `ts`) and the RTT (seconds).
pub struct Samples<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub row: &'a [u32],
    pub seq: &'a [bool],
    pub rtt: &'a [f64],
}

/// The estimate after each sample used, ordered by row (then direction, then input order).
#[derive(Debug, Default, PartialEq)]
pub struct Smoothed {
    /// The sample's index in [`Samples`].
    pub idx: Vec<u32>,
    pub srtt: Vec<f64>,
    pub rttvar: Vec<f64>,
}

/// The smoothed RTT after each sample used ([`Smoothed`]). A direction uses its `seq` samples,
/// or its `ts` samples when it has no `seq` one; it runs one [`Srtt`] over them in row order.
pub fn smooth(s: &Samples) -> Result<Smoothed, String> {
    let n = s.flow.len();
    for (name, l) in [
        ("dir", s.dir.len()),
        ("row", s.row.len()),
        ("seq", s.seq.len()),
        ("rtt", s.rtt.len()),
    ] {
        if l != n {
            return Err(format!("column {name} has {l} values, flow has {n}"));
        }
    }
    if n >= u32::MAX as usize {
        return Err(format!("{n} samples: at most 2^32 - 2 per call"));
    }
    if let Some(i) = s.dir.iter().position(|&d| d != 0 && d != 1) {
        return Err(format!("sample {i}: dir {} is not 0 or 1", s.dir[i]));
    }
    let gid = |i: usize| u64::from(s.flow[i]) * 2 + s.dir[i] as u64;
    let top = s.flow.iter().copied().max().unwrap_or(0);
    let mut has_seq = ByDir::<bool>::new(top, n);
    for i in (0..n).filter(|&i| s.seq[i]) {
        *has_seq.get_mut(gid(i)) = true;
    }
    let mut used: Vec<u32> = (0..n as u32)
        .filter(|&i| s.seq[i as usize] || !*has_seq.get_mut(gid(i as usize)))
        .collect();
    // stable: equal (row, direction) keep the input order
    used.sort_by_key(|&i| (s.row[i as usize], gid(i as usize)));
    let mut est = ByDir::<Srtt>::new(top, n);
    let mut srtt = Vec::with_capacity(used.len());
    let mut rttvar = Vec::with_capacity(used.len());
    for &i in &used {
        let e = est.get_mut(gid(i as usize));
        e.on_sample(s.rtt[i as usize]);
        let (a, b) = e.get().unwrap_or((f64::NAN, f64::NAN)); // (always there after a sample)
        srtt.push(a);
        rttvar.push(b);
    }
    Ok(Smoothed {
        idx: used,
        srtt,
        rttvar,
    })
}

/// A value per direction id `2·flow + dir`: a table when the connection ids are dense (as the
/// readers number them), else a map.
enum ByDir<T> {
    Table(Vec<T>),
    Map(HashMap<u64, T>),
}

impl<T: Default + Clone> ByDir<T> {
    /// For connection ids up to `top`, `n` values to come.
    fn new(top: u32, n: usize) -> Self {
        if (top as usize) < 4 * n + 1024 {
            ByDir::Table(vec![T::default(); 2 * top as usize + 2])
        } else {
            ByDir::Map(HashMap::new())
        }
    }

    fn get_mut(&mut self, gid: u64) -> &mut T {
        match self {
            ByDir::Table(t) => &mut t[gid as usize],
            ByDir::Map(m) => m.entry(gid).or_default(),
        }
    }
}

/// The estimates of a trace (the `est` frame: each on the row of the ACK that closed its sample,
/// so it is the RTT of the *other* direction than that row's), read in row order.
#[derive(Debug)]
pub struct Est<'a> {
    rows: &'a [u32],
    srtt: &'a [f64],
    /// Positions in row order (None: `rows` ascend already).
    order: Option<Vec<u32>>,
    next: usize,
}

impl<'a> Est<'a> {
    /// `rows` and `srtt` from the `est` frame (any order); `n` rows in the trace.
    pub fn new(rows: &'a [u32], srtt: &'a [f64], n: usize) -> Result<Self, String> {
        if rows.len() != srtt.len() {
            return Err("est rows and srtt differ in length".into());
        }
        if let Some(&r) = rows.iter().find(|&&r| r as usize >= n) {
            return Err(format!("est: row {r} beyond the {n} packets"));
        }
        let order = (!rows.is_sorted()).then(|| {
            let mut o: Vec<u32> = (0..rows.len() as u32).collect();
            o.sort_by_key(|&k| rows[k as usize]); // stable: a row's estimates keep their order
            o
        });
        Ok(Est {
            rows,
            srtt,
            order,
            next: 0,
        })
    }

    /// The estimate taken on `row` (several: the last), None when none or NaN. Rows must be
    /// asked in ascending order.
    pub fn at(&mut self, row: u32) -> Option<f64> {
        let pos = |k: usize| self.order.as_ref().map_or(k, |o| o[k] as usize);
        let mut v = None;
        while self.next < self.rows.len() && self.rows[pos(self.next)] <= row {
            let k = pos(self.next);
            if self.rows[k] == row {
                v = Some(self.srtt[k]);
            }
            self.next += 1;
        }
        v.filter(|x: &f64| !x.is_nan())
    }
}

/// The latest smoothed RTT of each direction of one connection, fed its packets in order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Latest {
    /// By the direction whose ACKs closed the samples (the other one's RTT).
    by_acker: [Option<f64>; 2],
}

impl Latest {
    /// A packet of direction `dir` with the estimate taken on its row ([`Est::at`]).
    pub fn on_packet(&mut self, dir: usize, est: Option<f64>) {
        if est.is_some() {
            self.by_acker[dir] = est;
        }
    }

    /// The smoothed RTT of the data of direction `dir` now, None before its first sample.
    pub fn of(&self, dir: usize) -> Option<f64> {
        self.by_acker[1 - dir]
    }
}

type SrttArrays<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// RFC 6298 smoothed RTT per direction (see `srtt`): `(sample index, srtt, rttvar)` for each
/// sample used, ordered by `row`.
#[pyfunction]
fn tcp_srtt<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i8>,
    row: PyReadonlyArray1<'py, u32>,
    seq: PyReadonlyArray1<'py, bool>,
    rtt: PyReadonlyArray1<'py, f64>,
) -> PyResult<SrttArrays<'py>> {
    let s = Samples {
        flow: slice(&flow, "flow")?,
        dir: slice(&dir, "dir")?,
        row: slice(&row, "row")?,
        seq: slice(&seq, "seq")?,
        rtt: slice(&rtt, "rtt")?,
    };
    let o = py.detach(|| guard(|| smooth(&s)))?;
    Ok((
        o.idx.into_pyarray(py),
        o.srtt.into_pyarray(py),
        o.rttvar.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tcp_srtt, m)?)
}

#[cfg(test)]
mod tests;
