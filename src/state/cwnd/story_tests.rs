//! Hand-made series for the account's cwnd events (`story`).

use super::*;

const SS: i8 = SLOW_START;
const CA: i8 = CONGESTION_AVOIDANCE;
const REC: i8 = 2;
const NAN: f64 = f64::NAN;

fn run(from: f64, top: f64, top_t: f64, end: u8, end_t: f64) -> Run {
    Run {
        from,
        top,
        top_t,
        end,
        end_t,
    }
}

fn times(n: usize) -> Vec<f64> {
    (0..n).map(|i| i as f64).collect()
}

#[test]
fn a_run_ended_by_a_loss_event_and_its_reduction() {
    let (t, v) = (times(5), [10.0, 20.0, 40.0, 20.0, 30.0]);
    let told = tell(&t, &v, &[SS, SS, SS, REC, CA], &[3.0], &[true], 6);
    assert_eq!(told.runs, vec![run(10.0, 40.0, 2.0, END_LOSS, 3.0)]);
    let c = told.cuts[0];
    assert_eq!((c.index, c.before, c.after, c.phase), (0, 40.0, 20.0, REC));
    assert_eq!((c.tol, c.prev_t), (1.0 + 1e-6, 2.0));
    assert_eq!(told.ca_start, Some(4.0));
}

#[test]
fn a_run_ended_by_an_unbacked_cut() {
    let (t, v) = (times(5), [10.0, 20.0, 40.0, 20.0, 30.0]);
    let told = tell(&t, &v, &[SS, SS, SS, SS, SS], &[3.0], &[false], 6);
    // the cut row starts the next run (20 → 30)
    assert_eq!(
        told.runs,
        vec![
            run(10.0, 40.0, 2.0, END_CUT, 3.0),
            run(20.0, 30.0, 4.0, END_OPEN, 4.0)
        ]
    );
    assert_eq!(told.ca_start, None);
}

#[test]
fn a_run_ended_by_congestion_avoidance_and_one_still_open() {
    let (t, v) = (times(6), [10.0, 30.0, 31.0, 31.0, 40.0, 50.0]);
    let told = tell(&t, &v, &[SS, SS, CA, CA, SS, SS], &[], &[], 6);
    assert_eq!(
        told.runs,
        vec![
            run(10.0, 30.0, 1.0, END_CA, 2.0),
            run(40.0, 50.0, 5.0, END_OPEN, 5.0)
        ]
    );
    assert_eq!(told.ca_start, Some(2.0));
}

#[test]
fn nan_cwnd_values_are_skipped_and_the_first_top_is_kept() {
    let t = times(5);
    let told = tell(&t, &[10.0, NAN, 20.0, 20.0, NAN], &[SS; 5], &[], &[], 6);
    assert_eq!(told.runs, vec![run(10.0, 20.0, 2.0, END_OPEN, 4.0)]);
    // a NaN first value: nothing is above it
    assert!(
        tell(&t, &[NAN, 10.0, 20.0, 30.0, 40.0], &[SS; 5], &[], &[], 6)
            .runs
            .is_empty()
    );
    // no finite value: not told
    let inf = f64::INFINITY;
    assert!(tell(&t[..2], &[-inf, inf], &[SS; 2], &[], &[], 6)
        .runs
        .is_empty());
    // a NaN ends a fall
    let told = tell(
        &t,
        &[50.0, 40.0, NAN, 10.0, 5.0],
        &[REC; 5],
        &[1.0],
        &[true],
        6,
    );
    assert_eq!(told.cuts[0].after, 40.0);
}

#[test]
fn a_reduction_at_the_first_row_falls_over_several_rows() {
    let t = times(6);
    let told = tell(
        &t,
        &[40.0, 40.0, 20.0, 10.0, 10.0, 15.0],
        &[REC; 6],
        &[0.0],
        &[true],
        6,
    );
    let c = told.cuts[0];
    assert_eq!((c.before, c.after, c.tol), (40.0, 10.0, 1e-6));
    assert!(c.prev_t.is_nan());
    // two reductions in one fall share its end
    let told = tell(
        &t,
        &[40.0, 40.0, 20.0, 10.0, 10.0, 15.0],
        &[REC; 6],
        &[1.0, 3.0],
        &[true, true],
        6,
    );
    let got: Vec<_> = told.cuts.iter().map(|c| (c.before, c.after)).collect();
    assert_eq!(got, vec![(40.0, 10.0), (20.0, 10.0)]);
}

#[test]
fn equal_times_anchor_at_the_first_and_cut_every_row() {
    let t = [0.0, 1.0, 1.0, 2.0, 3.0];
    let told = tell(
        &t,
        &[10.0, 20.0, 30.0, 40.0, 50.0],
        &[SS; 5],
        &[1.0],
        &[true],
        6,
    );
    // rows 1 and 2 both carry the reduction's time: each starts a run; only the last grows
    assert_eq!(told.runs, vec![run(30.0, 50.0, 3.0, END_OPEN, 3.0)]);
    assert_eq!((told.cuts[0].before, told.cuts[0].tol), (10.0, 1.0 + 1e-6));
}

#[test]
fn caps_runs_and_reductions() {
    let n = 40;
    let t = times(n);
    let v: Vec<f64> = (0..n).map(|i| (i % 4) as f64 + 1.0).collect();
    let red: Vec<f64> = (0..n)
        .filter(|i| i % 4 == 0 && *i > 0)
        .map(|i| i as f64)
        .collect();
    let told = tell(&t, &v, &vec![SS; n], &red, &vec![true; red.len()], 2);
    assert_eq!(told.runs.len(), 2);
    assert_eq!(
        told.cuts.iter().map(|c| c.index).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
}

#[test]
fn nan_times_take_numpys_search() {
    // numpy 2.4: searchsorted([nan, nan, 1, 2, 3], [0.5, 1, 2, 2, 3, nan]) = [0, 0, 3, 3, 4, 5]
    let t = [NAN, NAN, 1.0, 2.0, 3.0];
    let keys = [0.5, 1.0, 2.0, 2.0, 3.0, NAN];
    assert_eq!(np_searchsorted_left(&t, &keys), vec![0, 0, 3, 3, 4, 5]);
    // searchsorted([nan, 1, 2, 3, 4, 5, 6], [1, 3, 3, 6]) = [0, 3, 3, 6]
    let t2 = [NAN, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(
        np_searchsorted_left(&t2, &[1.0, 3.0, 3.0, 6.0]),
        vec![0, 3, 3, 6]
    );
    // sorted with NaN last: the usual lower bound
    assert_eq!(
        np_searchsorted_left(&[1.0, 2.0, 3.0, NAN], &[0.5, 2.0, 3.0, NAN]),
        vec![0, 1, 2, 3]
    );
    // the reduction at 1.0 anchors at row 0 (numpy's answer); the row at 1.0 is still the cut
    let told = tell(
        &t,
        &[5.0, 6.0, 10.0, 5.0, 6.0],
        &[SS, SS, SS, REC, CA],
        &[2.0],
        &[true],
        6,
    );
    assert_eq!(told.runs, vec![run(5.0, 10.0, 1.0, END_LOSS, 2.0)]);
    let told = tell(
        &t,
        &[5.0, 6.0, 10.0, 5.0, 6.0],
        &[REC; 5],
        &[1.0],
        &[false],
        6,
    );
    assert_eq!((told.cuts[0].before, told.cuts[0].after), (5.0, 5.0));
}
