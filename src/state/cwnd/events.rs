//! The reductions of a cwnd series, which of them are loss events, and each series' cwnd stats
//! (`tracekit.analysis.cwnd.reductions_and_stats`): one pass over the rows of every series
//! (its rows contiguous, in time order), the loss evidence merged in by a second pointer.
//!
//! - [`Decreases`]: where a reduction starts. A tool's series (`trace`) reduces where a run of
//!   falling samples loses at least [`DECREASE`] of the value before it (a tool's series only
//!   falls when the sender reacts to a loss; runs, not single steps: ns-3's PRR and Linux lower
//!   cwnd one ACK at a time). The estimate reduces where it sets a new ssthresh (RFC 5681
//!   §3.2 step 2, RFC 6582 §3.2 step 2), enters `recovery`, or falls to half or less outside
//!   a recovery (a timeout or Tahoe restart to one segment, RFC 5681 §3.1).
//! - [`Backing`]: whether loss evidence (a retransmission or a simulator drop of the
//!   direction) lies within `[t_prev − tol, t + tol]` of a reduction: a sender cuts cwnd at
//!   the moment it retransmits (fast retransmit, RFC 5681 §3.2; a timeout, RFC 6298 §5.5); a
//!   reduction without any (the restart after an idle period, RFC 5681 §4.1) is no loss event.
//!   The evidence of a direction is walked once, in time order, beside its reductions (whose
//!   windows start in time order too): a reduction is decided by the first evidence at or
//!   after its window's start, so it is held only until the evidence passes its window.
//! - [`Stats`]: the series' largest cwnd, its loss events and the first one's time.
//!
//! Values compare as polars compares floats (a total order: NaN equals NaN and is larger
//! than any number), and minima and maxima skip NaN as polars' do, so that the frames stay
//! what the polars rules made.

use std::collections::HashMap;

/// Source code of an estimate row (`source = "estimate"`).
pub const SOURCE_ESTIMATE: u8 = 0;
/// Source code of a tool's own row (`source = "trace"`).
pub const SOURCE_TRACE: u8 = 1;
/// Source code of a row with no known source (null or another name).
pub const SOURCE_NONE: u8 = 2;

/// A fall of a traced series by at least this fraction (over one run of decreasing samples) is
/// a multiplicative decrease; Reno halves, CUBIC keeps 70 %.
pub const DECREASE: f64 = 0.2;

/// `a < b` in polars' total order of floats (NaN largest, equal to itself).
fn lt(a: f64, b: f64) -> bool {
    !a.is_nan() && (b.is_nan() || a < b)
}

/// `a <= b` in polars' total order of floats.
fn le(a: f64, b: f64) -> bool {
    !lt(b, a)
}

/// Polars' total order of floats (NaN last, equal to itself).
fn order(a: f64, b: f64) -> std::cmp::Ordering {
    if lt(a, b) {
        std::cmp::Ordering::Less
    } else if lt(b, a) {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Equal
    }
}

/// `a == b` in polars' total order of floats.
fn eq(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// The smallest (`less = true`) or largest value of a column, NaN skipped as polars skips it
/// (NaN only when every value is NaN; None without any value).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extreme {
    best: Option<f64>,
    nan: bool,
}

impl Extreme {
    /// Takes in one value (`less`: keep the smallest, else the largest).
    pub fn add(&mut self, v: f64, less: bool) {
        if v.is_nan() {
            self.nan = true;
        } else if self.best.is_none_or(|b| if less { v < b } else { v > b }) {
            self.best = Some(v);
        }
    }

    /// The extreme: None without any value.
    pub fn get(&self) -> Option<f64> {
        self.best.or(if self.nan { Some(f64::NAN) } else { None })
    }
}

/// One row of a series as the pass reads it (None: a null value).
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub time: f64,
    pub cwnd: Option<f64>,
    pub ssthresh: Option<f64>,
    /// The row is in a fast-recovery episode (`phase = "recovery"`).
    pub recovery: bool,
}

/// A reduction found: its first row and the time of the series' sample before it (its own
/// time on the series' first row).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reduction {
    pub row: usize,
    pub time: f64,
    pub prev_time: f64,
}

/// A run of falling samples of a traced series, not yet ended.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: Reduction,
    /// The value before the run's first sample.
    before: f64,
    low: Extreme,
}

/// Finds the reductions of one series, fed its rows in time order ([`Decreases::push`]), then
/// [`Decreases::finish`]. A traced series' reduction is known when its run of falling samples
/// ends, so it comes out one row late (or at the end); the estimate's at its own row.
#[derive(Debug)]
pub struct Decreases {
    trace: bool,
    prev: Option<Row>,
    run: Option<Run>,
}

impl Decreases {
    /// A new series: `trace` for a tool's own series, else the estimate's rule.
    pub fn new(trace: bool) -> Self {
        Decreases {
            trace,
            prev: None,
            run: None,
        }
    }

    /// The next row (number `row` of the columns): the reduction it completes, if any.
    pub fn push(&mut self, row: usize, r: Row) -> Option<Reduction> {
        let prev = self.prev.replace(r);
        let here = Reduction {
            row,
            time: r.time,
            prev_time: prev.map_or(r.time, |p| p.time),
        };
        if self.trace {
            return self.traced(here, prev.and_then(|p| p.cwnd), r.cwnd);
        }
        // RFC 5681 §3.2 step 2 / RFC 6582 §3.2 step 2: entering fast recovery sets ssthresh;
        // a new value (or a first one) marks the reduction
        let new_st = r
            .ssthresh
            .is_some_and(|s| prev.and_then(|p| p.ssthresh).is_none_or(|q| !eq(s, q)));
        // the rows after a recovery's first are the same reduction
        let not_after_rec = !prev.is_some_and(|p| p.recovery);
        // a timeout (RFC 5681 §3.1: cwnd to one segment) or a Tahoe restart outside a recovery
        let halved = match (r.cwnd, prev.and_then(|p| p.cwnd)) {
            (Some(c), Some(q)) => le(c, 0.5 * q),
            _ => false,
        };
        (new_st || (not_after_rec && (r.recovery || halved))).then_some(here)
    }

    /// A traced series' rule: runs of falling samples losing at least [`DECREASE`].
    fn traced(
        &mut self,
        here: Reduction,
        before: Option<f64>,
        v: Option<f64>,
    ) -> Option<Reduction> {
        let falls = match (v, before) {
            (Some(v), Some(b)) => lt(v, b),
            _ => false,
        };
        if falls {
            let v = v.unwrap_or(f64::NAN); // Some: `falls` needs it
            match &mut self.run {
                Some(run) => run.low.add(v, true),
                None => {
                    let mut low = Extreme::default();
                    low.add(v, true);
                    self.run = Some(Run {
                        start: here,
                        before: before.unwrap_or(f64::NAN),
                        low,
                    });
                }
            }
            return None;
        }
        self.end_run()
    }

    /// Closes the open run: its start when it lost enough.
    fn end_run(&mut self) -> Option<Reduction> {
        let run = self.run.take()?;
        let low = run.low.get().unwrap_or(f64::NAN);
        le(low, (1.0 - DECREASE) * run.before).then_some(run.start)
    }

    /// The series ended: the reduction of a run still open.
    pub fn finish(&mut self) -> Option<Reduction> {
        self.prev = None;
        self.end_run()
    }
}

/// Whether a direction's reductions are backed by loss evidence: its evidence times in order
/// (`times`) and the reach `tol` (None: the direction is not checked, every reduction counts).
#[derive(Debug)]
pub struct Backing<'a> {
    times: &'a [f64],
    tol: Option<f64>,
    next: usize,
    last_lo: f64,
}

impl<'a> Backing<'a> {
    /// A direction's evidence times (ascending) and reach.
    pub fn new(times: &'a [f64], tol: Option<f64>) -> Self {
        Backing {
            times,
            tol,
            next: 0,
            last_lo: f64::NEG_INFINITY,
        }
    }

    /// Whether evidence lies within `[prev_time − tol, time + tol]`: the first evidence at or
    /// after the window's start is in it (reductions come in time order, so the pointer only
    /// moves on; a window starting earlier than the last one searches again).
    pub fn backed(&mut self, red: &Reduction) -> bool {
        let Some(tol) = self.tol else { return true };
        let (lo, hi) = (red.prev_time - tol, red.time + tol);
        if !le(self.last_lo, lo) {
            self.next = self.times.partition_point(|&e| lt(e, lo));
        }
        self.last_lo = lo;
        while self.next < self.times.len() && lt(self.times[self.next], lo) {
            self.next += 1;
        }
        self.times.get(self.next).is_some_and(|&e| le(e, hi))
    }
}

/// Per series: the largest cwnd, the loss events and the first one's time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    pub max_cwnd: Extreme,
    pub losses: u32,
    pub first_loss: Extreme,
}

impl Stats {
    /// Takes in one row's cwnd (None: null).
    pub fn row(&mut self, cwnd: Option<f64>) {
        if let Some(c) = cwnd {
            self.max_cwnd.add(c, false);
        }
    }

    /// Takes in one reduction counted as a loss event.
    pub fn loss(&mut self, time: f64) {
        self.losses += 1;
        self.first_loss.add(time, true);
    }
}

/// The loss evidence of every direction: `(flow, dir, time)` sorted, so that each direction's
/// times are one ascending slice.
#[derive(Debug, Default)]
pub struct Evidence {
    keys: Vec<(i64, i64)>,
    times: Vec<f64>,
}

impl Evidence {
    /// Sorts the evidence columns by direction, then time.
    pub fn new(flow: &[i64], dir: &[i64], time: &[f64]) -> Self {
        let mut rows: Vec<(i64, i64, f64)> = flow
            .iter()
            .zip(dir)
            .zip(time)
            .map(|((&f, &d), &t)| (f, d, t))
            .collect();
        // times in polars' order (NaN last), as the evidence is walked
        rows.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(order(a.2, b.2)));
        Evidence {
            keys: rows.iter().map(|r| (r.0, r.1)).collect(),
            times: rows.iter().map(|r| r.2).collect(),
        }
    }

    /// One direction's evidence times, ascending.
    pub fn of(&self, key: (i64, i64)) -> &[f64] {
        let a = self.keys.partition_point(|&k| k < key);
        let b = a + self.keys[a..].partition_point(|&k| k == key);
        &self.times[a..b]
    }
}

/// The columns of the series rows (one row each; series contiguous, each in time order).
#[derive(Debug)]
pub struct Columns<'a> {
    pub flow: &'a [i64],
    pub dir: &'a [i64],
    /// [`SOURCE_ESTIMATE`], [`SOURCE_TRACE`] or [`SOURCE_NONE`]: with flow and dir, the series.
    pub source: &'a [u8],
    pub time: &'a [f64],
    pub cwnd: &'a [f64],
    /// Whether `cwnd` is set (empty: every row's is).
    pub cwnd_ok: &'a [bool],
    pub ssthresh: &'a [f64],
    /// Whether `ssthresh` is set (empty: every row's is).
    pub ssthresh_ok: &'a [bool],
    pub recovery: &'a [bool],
}

impl Columns<'_> {
    fn check(&self) -> Result<usize, String> {
        let n = self.time.len();
        let cols = [
            ("flow", self.flow.len()),
            ("dir", self.dir.len()),
            ("source", self.source.len()),
            ("cwnd", self.cwnd.len()),
            ("ssthresh", self.ssthresh.len()),
            ("recovery", self.recovery.len()),
        ];
        let opt = [
            ("cwnd_ok", self.cwnd_ok.len()),
            ("ssthresh_ok", self.ssthresh_ok.len()),
        ];
        match cols
            .iter()
            .chain(opt.iter().filter(|c| c.1 > 0))
            .find(|c| c.1 != n)
        {
            Some((name, l)) => Err(format!("column {name} has {l} values, time has {n}")),
            None => Ok(n),
        }
    }

    fn row(&self, i: usize) -> Row {
        let set = |ok: &[bool]| ok.get(i).copied().unwrap_or(true);
        Row {
            time: self.time[i],
            cwnd: set(self.cwnd_ok).then_some(self.cwnd[i]),
            ssthresh: set(self.ssthresh_ok).then_some(self.ssthresh[i]),
            recovery: self.recovery[i],
        }
    }

    fn key(&self, i: usize) -> (i64, i64, u8) {
        (self.flow[i], self.dir[i], self.source[i])
    }
}

/// What the pass finds: the reductions (rows, loss event or not) and, per series in order of
/// appearance, its first row and [`Stats`].
#[derive(Debug, Default)]
pub struct Found {
    pub rows: Vec<usize>,
    pub loss: Vec<bool>,
    pub series: Vec<usize>,
    pub stats: Vec<Stats>,
}

/// Runs the pass over every series of `c`; `windows` gives the reach of each checked direction
/// (`(flow, dir) → tol`; a direction without one counts every reduction).
pub fn reductions(
    c: &Columns,
    evidence: &Evidence,
    windows: &HashMap<(i64, i64), f64>,
) -> Result<Found, String> {
    let n = c.check()?;
    let mut out = Found::default();
    let mut a = 0;
    while a < n {
        let key = c.key(a);
        let b = a + (a..n).take_while(|&i| c.key(i) == key).count();
        let mut dec = Decreases::new(key.2 == SOURCE_TRACE);
        let mut back = Backing::new(
            evidence.of((key.0, key.1)),
            windows.get(&(key.0, key.1)).copied(),
        );
        let mut stats = Stats::default();
        let mut take = |red: Reduction, stats: &mut Stats| {
            let loss = back.backed(&red);
            if loss {
                stats.loss(red.time);
            }
            out.rows.push(red.row);
            out.loss.push(loss);
        };
        for i in a..b {
            let r = c.row(i);
            stats.row(r.cwnd);
            if let Some(red) = dec.push(i, r) {
                take(red, &mut stats);
            }
        }
        if let Some(red) = dec.finish() {
            take(red, &mut stats);
        }
        out.series.push(a);
        out.stats.push(stats);
        a = b;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
