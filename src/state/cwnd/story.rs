//! The cwnd events the account in words tells (`tracekit.explain`): one step over a direction's
//! chosen cwnd series (`tracekit.analysis.cwnd.chosen`) in time order, merged with the times of
//! its reductions (`events`, the `reductions` frame), with O(1) state besides the few events it
//! keeps, so a streaming driver can feed it row by row.
//!
//! - a slow-start run is a stretch of consecutive slow-start rows, a reduction's row starting a
//!   new one (RFC 5681 §3.1: a loss ends slow start); it is told when its largest cwnd (NaN
//!   skipped, the first of equal ones, as numpy's `nanargmax`) is above its first, with how it
//!   ended: still open, at a loss event, at a reduction no loss backs, or in congestion avoidance;
//! - a reduction anchors at the first row at or after its time (numpy's `searchsorted`, side
//!   left): the cwnd before it (the row before), after it (the lowest of the fall starting
//!   there), the phase there and the reach back to the row before (`tol`).

use std::cmp::Ordering;

/// Phase codes (`tracekit.explain_parts`: the schema's phase Enum's physical order; -1: none).
pub const SLOW_START: i8 = 0;
/// Congestion avoidance.
pub const CONGESTION_AVOIDANCE: i8 = 1;

/// Runs told and reductions detailed one by one per direction (`tracekit.explain_parts.MAX_EACH`).
pub const CAP: usize = 6;

/// How a told slow-start run ended.
pub const END_OPEN: u8 = 0;
/// At a reduction loss evidence backs (a loss event).
pub const END_LOSS: u8 = 1;
/// At a reduction no loss backs.
pub const END_CUT: u8 = 2;
/// At a row of another phase.
pub const END_CA: u8 = 3;

/// A slow-start run that grew cwnd.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    /// Its first cwnd.
    pub from: f64,
    /// Its largest cwnd and that row's time.
    pub top: f64,
    pub top_t: f64,
    /// `END_*`, and the time: the run's last row when open, else the row that ended it.
    pub end: u8,
    pub end_t: f64,
}

/// A reduction's row and its neighbours (one of the first `cap + 1` of the direction).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cut {
    /// The reduction's index among the direction's (in the reductions' time order).
    pub index: usize,
    /// cwnd at the row before the anchor row (the anchor row's own when it is the first).
    pub before: f64,
    /// The lowest cwnd of the fall starting at the anchor row.
    pub after: f64,
    /// The anchor row's phase.
    pub phase: i8,
    /// `t[k] − t[k−1] + 1e-6` (`1e-6` at the first row) and `t[k−1]` (NaN at the first row).
    pub tol: f64,
    pub prev_t: f64,
}

/// The open slow-start run.
#[derive(Clone, Copy, Debug)]
struct Open {
    from: f64,
    /// The largest non-NaN cwnd so far and its time.
    top: Option<(f64, f64)>,
    finite: bool,
    last_t: f64,
}

/// The step: feed rows in order ([`Story::on_row`]), then [`Story::finish`].
#[derive(Clone, Debug)]
pub struct Story {
    cap: usize,
    prev: Option<(f64, f64)>,
    open: Option<Open>,
    /// `cuts[pending..]` wait for the end of their fall.
    pending: usize,
    /// The earliest congestion-avoidance time (NaN skipped; NaN when all are), None without one.
    ca_start: Option<f64>,
    runs: Vec<Run>,
    cuts: Vec<Cut>,
    /// Runs ended by a reduction whose loss flag comes later: (run, reduction) ([`Ends::Later`]).
    later: Vec<(usize, usize)>,
}

/// How a reduction at a row's time ends an open slow-start run ([`Story::on_row_at`]): its loss
/// flag, or the flag of reduction `k` (counted in time order), given to [`Story::finish_with`]
/// (a stream that weighs the loss evidence only once the direction ends).
#[derive(Clone, Copy, Debug)]
pub enum Ends {
    Now(bool),
    Later(usize),
}

/// What [`Story`] found in a direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Told {
    /// The first `cap` runs that grew, in order.
    pub runs: Vec<Run>,
    /// The reductions of index below `cap + 1` anchored at a row, in order of anchoring.
    pub cuts: Vec<Cut>,
    pub ca_start: Option<f64>,
}

impl Told {
    /// The cuts of the first `min(nred, cap + 1)` of the direction's `nred` reductions, by
    /// index (None: the reduction anchors at no row).
    pub fn slots(&self, nred: usize, cap: usize) -> impl Iterator<Item = Option<&Cut>> + '_ {
        let mut got = self.cuts.iter().peekable();
        (0..nred.min(cap + 1)).map(move |i| got.next_if(|c| c.index == i))
    }
}

impl Story {
    /// `cap`: runs told and reductions detailed one by one (one more reduction is kept: the
    /// account reads where the next one's reach begins).
    pub fn new(cap: usize) -> Self {
        Story {
            cap,
            prev: None,
            open: None,
            pending: 0,
            ca_start: None,
            runs: Vec::new(),
            cuts: Vec::new(),
            later: Vec::new(),
        }
    }

    /// One row. `cut`: the row's time is a reduction's (Some(its `loss_event`)); `anchors`: the
    /// reductions (their indices) whose first row at or after their time this is.
    #[inline]
    pub fn on_row(
        &mut self,
        t: f64,
        v: f64,
        phase: i8,
        cut: Option<bool>,
        anchors: impl IntoIterator<Item = usize>,
    ) {
        self.on_row_at(t, v, phase, cut.map(Ends::Now), anchors);
    }

    /// [`Story::on_row`] with the reduction's loss flag possibly given later ([`Ends`]).
    #[inline]
    pub fn on_row_at(
        &mut self,
        t: f64,
        v: f64,
        phase: i8,
        cut: Option<Ends>,
        anchors: impl IntoIterator<Item = usize>,
    ) {
        if let Some((_, pv)) = self.prev {
            // the fall goes on while cwnd does not rise (a NaN ends it)
            let falls = matches!(v.partial_cmp(&pv), Some(Ordering::Less | Ordering::Equal));
            if self.pending < self.cuts.len() && !falls {
                self.settle(pv);
            }
        }
        let ss = phase == SLOW_START;
        if self.open.is_some() && (!ss || cut.is_some()) {
            let end = match cut {
                Some(Ends::Now(true)) => END_LOSS,
                Some(Ends::Now(false)) => END_CUT,
                Some(Ends::Later(k)) => {
                    if self.close(END_LOSS, t) {
                        self.later.push((self.runs.len() - 1, k));
                    }
                    END_CA
                }
                None => END_CA,
            };
            if !matches!(cut, Some(Ends::Later(_))) {
                self.close(end, t);
            }
        }
        if ss {
            self.grow(t, v);
        }
        for index in anchors {
            if index <= self.cap {
                let (pt, pv) = self.prev.unwrap_or((f64::NAN, v));
                let tol = (if self.prev.is_some() { t - pt } else { 0.0 }) + 1e-6;
                self.cuts.push(Cut {
                    index,
                    before: pv,
                    after: f64::NAN,
                    phase,
                    tol,
                    prev_t: pt,
                });
            }
        }
        if phase == CONGESTION_AVOIDANCE {
            // numpy's fmin: NaN only when both are
            self.ca_start = Some(self.ca_start.map_or(t, |c| c.min(t)));
        }
        self.prev = Some((t, v));
    }

    /// [`Story::finish`], the runs a reduction ended taking its loss flag from `backed` (by
    /// reduction, in time order).
    pub fn finish_with(mut self, backed: &[bool]) -> Told {
        let later = std::mem::take(&mut self.later);
        let mut told = self.finish();
        for (r, k) in later {
            if let (Some(run), Some(&b)) = (told.runs.get_mut(r), backed.get(k)) {
                run.end = if b { END_LOSS } else { END_CUT };
            }
        }
        told
    }

    /// The events, once every row is fed.
    pub fn finish(mut self) -> Told {
        if let Some((_, pv)) = self.prev {
            self.settle(pv);
        }
        if let Some(o) = self.open {
            self.close(END_OPEN, o.last_t);
        }
        Told {
            runs: self.runs,
            cuts: self.cuts,
            ca_start: self.ca_start,
        }
    }

    fn settle(&mut self, low: f64) {
        for c in &mut self.cuts[self.pending..] {
            c.after = low;
        }
        self.pending = self.cuts.len();
    }

    #[inline]
    fn grow(&mut self, t: f64, v: f64) {
        let o = self.open.get_or_insert(Open {
            from: v,
            top: None,
            finite: false,
            last_t: t,
        });
        if !v.is_nan() && o.top.is_none_or(|(top, _)| v > top) {
            o.top = Some((v, t));
        }
        o.finite |= v.is_finite();
        o.last_t = t;
    }

    /// Closes the open run (told: whether it was kept).
    fn close(&mut self, end: u8, end_t: f64) -> bool {
        let Some(o) = self.open.take() else {
            return false;
        };
        // told only when some cwnd is finite and the largest is above the first
        if let (true, Some((top, top_t))) = (o.finite, o.top) {
            if top > o.from && self.runs.len() < self.cap {
                self.runs.push(Run {
                    from: o.from,
                    top,
                    top_t,
                    end,
                    end_t,
                });
                return true;
            }
        }
        false
    }
}

/// numpy's `searchsorted(arr, keys, side="left")` exactly, NaN sorted last (its `less`), even
/// on an array out of order: the search reuses the previous key's bounds as numpy's does.
fn np_searchsorted_left(arr: &[f64], keys: &[f64]) -> Vec<usize> {
    let less = |a: f64, b: f64| a < b || (b.is_nan() && !a.is_nan());
    let n = arr.len();
    let (mut lo, mut hi) = (0usize, n);
    let mut last = keys.first().copied().unwrap_or(f64::NAN);
    let mut out = Vec::with_capacity(keys.len());
    for &key in keys {
        if less(last, key) {
            hi = n;
        } else {
            lo = 0;
            hi = if hi < n { hi + 1 } else { n };
        }
        last = key;
        while lo < hi {
            let mid = lo + ((hi - lo) >> 1);
            if arr.get(mid).is_some_and(|&m| less(m, key)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        out.push(lo);
    }
    out
}

/// One direction's events: rows `t, v, phase` (time order, NaN times first or last), reductions
/// `red_t` ascending (NaN last) with their `backed` flags.
///
/// A row is a reduction's when its time equals one (NaN equals none); a reduction anchors at
/// the first row at or after its time, found by the merge. With a NaN row time the rows are
/// out of numpy's order and its search answers otherwise: the anchors are then numpy's own
/// ([`np_searchsorted_left`], a pass over the whole series: this fallback does not stream).
/// A reduction with no row at or after it (a NaN time) anchors nowhere.
pub fn tell(
    t: &[f64],
    v: &[f64],
    phase: &[i8],
    red_t: &[f64],
    backed: &[bool],
    cap: usize,
) -> Told {
    let mut s = Story::new(cap);
    let nl = red_t.len();
    let fallback = t.iter().any(|x| x.is_nan());
    // the fallback's anchors, row by row: (row, reduction) pairs in row order
    let mut anchored: Vec<(usize, usize)> = Vec::new();
    if fallback {
        let ks = np_searchsorted_left(t, red_t);
        anchored = ks.into_iter().enumerate().map(|(i, k)| (k, i)).collect();
        anchored.retain(|&(k, i)| k < t.len() && i <= cap);
        anchored.sort_by_key(|&(k, _)| k);
    }
    let (mut c, mut a, mut f) = (0usize, 0usize, 0usize);
    for (r, &tr) in t.iter().enumerate() {
        let (vr, pr) = (
            v.get(r).copied().unwrap_or(f64::NAN),
            phase.get(r).copied().unwrap_or(-1),
        );
        let mut cut = None;
        if !tr.is_nan() {
            while c < nl && red_t[c] < tr {
                c += 1;
            }
            if c < nl && red_t[c] == tr {
                cut = Some(backed.get(c).copied().unwrap_or(true));
            }
        }
        if fallback {
            let from = f;
            while f < anchored.len() && anchored[f].0 == r {
                f += 1;
            }
            s.on_row(tr, vr, pr, cut, anchored[from..f].iter().map(|&(_, i)| i));
        } else {
            let from = a;
            while a < nl && red_t[a] <= tr {
                a += 1;
            }
            s.on_row(tr, vr, pr, cut, from..a);
        }
    }
    let mut told = s.finish();
    told.cuts.sort_by_key(|c| c.index);
    told
}

#[cfg(test)]
#[path = "story_tests.rs"]
mod tests;
