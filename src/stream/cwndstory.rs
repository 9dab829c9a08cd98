//! The account's cwnd events in the stream (`tracekit.explain_parts.Series`): per data
//! direction, the same `cwnd::story::tell` the account's `_core.cwnd_story` runs, over the
//! estimate's rows of the direction (a capture's chosen series, `tracekit.analysis.cwnd.chosen`:
//! `rows_frames::build` gives them in capture order, time then frame, so `chosen` keeps them as
//! they are) and the reductions the cwnd stage's pass (`cwnd::events::reductions`) found in
//! them, with their `loss_event` (backed) flags.
//!
//! Memory: the rows are the batch's (`cwnd::run`); kept per direction until the file ends: its
//! reductions (9 B each) and the few events the account tells (`story::CAP` runs and cuts).

use crate::state::cwnd::story::{tell, Cut, Told, CAP};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::cmp::Ordering;

/// A direction's events (`explain_parts.Series` but its source, always `estimate`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Story {
    /// Rows of the series.
    pub rows: usize,
    /// The reductions' times and whether loss evidence backs each (`loss_event`), in the
    /// reductions frame's order (time; the pass's order where times tie).
    pub red_t: Vec<f64>,
    pub backed: Vec<bool>,
    pub told: Told,
}

/// One direction's story: its rows `time`, `cwnd`, `phase` (the estimate's phase codes,
/// `tracekit.schema.PHASE`'s order) and its reductions `(row within these, loss_event)` in the
/// order the pass found them.
pub fn of_direction(
    time: &[f64],
    cwnd: &[f64],
    phase: &[u8],
    mut red: Vec<(usize, bool)>,
) -> Story {
    // the reductions frame: sorted by time (NaN last, as polars sorts), stable
    let at = |r: usize| time.get(r).copied().unwrap_or(f64::NAN);
    red.sort_by(|a, b| nan_last(at(a.0), at(b.0)));
    let red_t: Vec<f64> = red.iter().map(|r| at(r.0)).collect();
    let backed: Vec<bool> = red.iter().map(|r| r.1).collect();
    // (the estimate's codes are each below the Enum's 3 categories)
    let phase: Vec<i8> = phase
        .iter()
        .map(|&p| i8::try_from(p).unwrap_or(-1))
        .collect();
    let told = tell(time, cwnd, &phase, &red_t, &backed, CAP);
    Story {
        rows: time.len(),
        red_t,
        backed,
        told,
    }
}

/// Every direction's story in a batch: the estimate's rows `time`, `cwnd`, `phase`, direction
/// `d` at rows `lo[d]..hi[d]`, and the reductions the pass found (`rows`, `loss`: the
/// `events::Found`'s). None for a direction without rows.
pub fn of_batch(
    time: &[f64],
    cwnd: &[f64],
    phase: &[u8],
    (lo, hi): (&[i64], &[i64]),
    (rows, loss): (&[usize], &[bool]),
) -> Vec<Option<Story>> {
    let mut red: Vec<Vec<(usize, bool)>> = vec![Vec::new(); lo.len()];
    for (&row, &l) in rows.iter().zip(loss) {
        let d = hi.partition_point(|&h| h <= row as i64);
        if let (Some(v), Some(&a)) = (red.get_mut(d), lo.get(d)) {
            v.push((row.saturating_sub(a as usize), l));
        }
    }
    let span = |a: i64, b: i64| usize::try_from(a).unwrap_or(0)..usize::try_from(b).unwrap_or(0);
    red.into_iter()
        .zip(lo.iter().zip(hi))
        .map(|(r, (&a, &b))| {
            let at = span(a, b);
            match (time.get(at.clone()), cwnd.get(at.clone()), phase.get(at)) {
                (Some(t), Some(v), Some(p)) if !t.is_empty() => Some(of_direction(t, v, p, r)),
                _ => None,
            }
        })
        .collect()
}

/// Numbers in order, NaN after every number.
fn nan_last(x: f64, y: f64) -> Ordering {
    x.partial_cmp(&y)
        .unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()))
}

/// The stories of the output's rows (None: no series) as `stream_summary`'s lists: per row
/// `_story_rows` (0: no series), `_ca_start` (None: no congestion-avoidance row), `_story_runs`
/// and `_reductions` (counts); then, flat in row order, each row's runs `_run_from`, `_run_top`,
/// `_run_top_t`, `_run_end` (`story::END_*`), `_run_end_t`; its first `min(_reductions,
/// CAP + 1)` reductions' cuts `_cut_before`, `_cut_after`, `_cut_phase` (-1: none), `_cut_tol`,
/// `_cut_prev_t` (NaN where a reduction anchors at no row, as `_core.cwnd_story` gives them);
/// and its reductions' `_red_t` and `_red_backed`.
pub fn output<'a>(
    d: &Bound<'_, PyDict>,
    per: impl Iterator<Item = Option<&'a Story>>,
) -> PyResult<()> {
    let none = Story::default();
    let all: Vec<&Story> = per.map(|s| s.unwrap_or(&none)).collect();
    out_col!(d, all, one "_story_rows", s => s.rows);
    out_col!(d, all, one "_ca_start", s => s.told.ca_start);
    out_col!(d, all, one "_story_runs", s => s.told.runs.len());
    out_col!(d, all, one "_reductions", s => s.red_t.len());
    out_col!(d, all, flat "_run_from", s => s.told.runs.iter().map(|r| r.from));
    out_col!(d, all, flat "_run_top", s => s.told.runs.iter().map(|r| r.top));
    out_col!(d, all, flat "_run_top_t", s => s.told.runs.iter().map(|r| r.top_t));
    out_col!(d, all, flat "_run_end", s => s.told.runs.iter().map(|r| i64::from(r.end)));
    out_col!(d, all, flat "_run_end_t", s => s.told.runs.iter().map(|r| r.end_t));
    let nan = f64::NAN;
    fn slots(s: &Story) -> impl Iterator<Item = Option<&Cut>> + '_ {
        s.told.slots(s.red_t.len(), CAP)
    }
    out_col!(d, all, flat "_cut_before", s => slots(s).map(|c| c.map_or(nan, |c| c.before)));
    out_col!(d, all, flat "_cut_after", s => slots(s).map(|c| c.map_or(nan, |c| c.after)));
    out_col!(d, all, flat "_cut_phase", s => slots(s).map(|c| c.map_or(-1, |c| c.phase)));
    out_col!(d, all, flat "_cut_tol", s => slots(s).map(|c| c.map_or(nan, |c| c.tol)));
    out_col!(d, all, flat "_cut_prev_t", s => slots(s).map(|c| c.map_or(nan, |c| c.prev_t)));
    out_col!(d, all, flat "_red_t", s => s.red_t.iter().copied());
    out_col!(d, all, flat "_red_backed", s => s.backed.iter().copied());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_in_time_order_stable_nan_last() {
        let t = [1.0, 2.0, 2.0, f64::NAN, 3.0];
        let v = [10.0, 20.0, 5.0, 5.0, 8.0];
        let ph = [0u8, 0, 1, 1, 1];
        // found out of order: a NaN row, then rows 4, 2 and 1 (2 and 1 tie at t = 2)
        let s = of_direction(
            &t,
            &v,
            &ph,
            vec![(3, true), (4, false), (2, true), (1, false)],
        );
        assert_eq!(s.rows, 5);
        assert_eq!(&s.red_t[..3], &[2.0, 2.0, 3.0]);
        assert!(s.red_t[3].is_nan());
        assert_eq!(s.backed, vec![true, false, false, true]);
        assert_eq!(nan_last(f64::NAN, 1.0), Ordering::Greater);
    }

    #[test]
    fn the_story_is_tells() {
        let t = [1.0, 2.0, 3.0, 4.0];
        let v = [10.0, 20.0, 40.0, 20.0];
        let ph = [0u8, 0, 0, 1];
        let s = of_direction(&t, &v, &ph, vec![(3, true)]);
        let want = tell(&t, &v, &[0, 0, 0, 1], &[4.0], &[true], CAP);
        assert_eq!(s.told, want);
        assert_eq!(s.told.runs.len(), 1);
        assert_eq!(s.told.cuts.len(), 1);
    }
}
