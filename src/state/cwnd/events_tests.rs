use super::*;

/// One series' columns: times 0, 1, 2 … and the given cwnd / ssthresh (None: null) / recovery.
struct Cols {
    flow: Vec<i64>,
    dir: Vec<i64>,
    source: Vec<u8>,
    time: Vec<f64>,
    cwnd: Vec<f64>,
    cwnd_ok: Vec<bool>,
    st: Vec<f64>,
    st_ok: Vec<bool>,
    rec: Vec<bool>,
}

impl Cols {
    fn new(source: u8, cwnd: &[f64], st: &[Option<f64>], rec: &[bool]) -> Self {
        let n = cwnd.len();
        Cols {
            flow: vec![0; n],
            dir: vec![0; n],
            source: vec![source; n],
            time: (0..n).map(|i| i as f64).collect(),
            cwnd: cwnd.to_vec(),
            cwnd_ok: vec![],
            st: st.iter().map(|s| s.unwrap_or(f64::NAN)).collect(),
            st_ok: st.iter().map(|s| s.is_some()).collect(),
            rec: rec.to_vec(),
        }
    }

    fn columns(&self) -> Columns<'_> {
        Columns {
            flow: &self.flow,
            dir: &self.dir,
            source: &self.source,
            time: &self.time,
            cwnd: &self.cwnd,
            cwnd_ok: &self.cwnd_ok,
            ssthresh: &self.st,
            ssthresh_ok: &self.st_ok,
            recovery: &self.rec,
        }
    }

    fn run(&self, evidence: &[f64], tol: Option<f64>) -> Found {
        let ev = Evidence::new(&vec![0; evidence.len()], &vec![0; evidence.len()], evidence);
        let windows = tol
            .map(|t| HashMap::from([((0, 0), t)]))
            .unwrap_or_default();
        reductions(&self.columns(), &ev, &windows).unwrap()
    }
}

fn traced(cwnd: &[f64]) -> Cols {
    Cols::new(
        SOURCE_TRACE,
        cwnd,
        &vec![None; cwnd.len()],
        &vec![false; cwnd.len()],
    )
}

#[test]
fn a_traced_halving_is_one_reduction_at_its_first_falling_sample() {
    // Reno: 10 → 5 in one step; the rise after it is no reduction
    let f = traced(&[8.0, 10.0, 5.0, 6.0, 7.0]).run(&[], None);
    assert_eq!(f.rows, vec![2]);
    assert_eq!(f.loss, vec![true]);
    assert_eq!(f.stats[0].losses, 1);
    assert_eq!(f.stats[0].max_cwnd.get(), Some(10.0));
    assert_eq!(f.stats[0].first_loss.get(), Some(2.0));
}

#[test]
fn a_run_of_small_steps_counts_once_when_it_loses_a_fifth() {
    // PRR lowers cwnd one ACK at a time: 10 → 9 → 8 → 7 is one reduction (to 70 %) at row 1
    let prr = traced(&[10.0, 9.0, 8.0, 7.0, 7.5]).run(&[], None);
    assert_eq!(prr.rows, vec![1]);
    // a wobble of 10 % is none; a run still open at the series' end is judged there
    assert!(traced(&[10.0, 9.0, 9.5]).run(&[], None).rows.is_empty());
    assert_eq!(traced(&[10.0, 9.0, 7.9]).run(&[], None).rows, vec![1]);
    // exactly 80 % counts (at most 1 − DECREASE of the value before)
    assert_eq!(traced(&[10.0, 8.0]).run(&[], None).rows, vec![1]);
}

#[test]
fn the_estimate_reduces_on_a_new_ssthresh_a_recovery_or_a_halving() {
    let cwnd = [10.0, 12.0, 6.0, 6.0, 7.0, 3.0, 3.0, 1.0];
    let st = [
        None,
        None,
        Some(6.0),
        Some(6.0),
        Some(6.0),
        Some(6.0),
        Some(6.0),
        Some(3.0),
    ];
    let rec = [false, false, true, true, false, true, false, false];
    let f = Cols::new(SOURCE_ESTIMATE, &cwnd, &st, &rec).run(&[], None);
    // row 2: new ssthresh and recovery; row 3: still the same recovery; row 5: a recovery again
    // (halved too); row 6 follows a recovery row: not halved anyway; row 7: new ssthresh
    assert_eq!(f.rows, vec![2, 5, 7]);
    // a halving right after a recovery row is the same reduction
    let f = Cols::new(
        SOURCE_ESTIMATE,
        &[10.0, 10.0, 4.0],
        &[None; 3],
        &[false, true, false],
    )
    .run(&[], None);
    assert_eq!(f.rows, vec![1]);
    // a first row with ssthresh set is a reduction; one without is not
    assert_eq!(
        Cols::new(SOURCE_ESTIMATE, &[5.0], &[Some(4.0)], &[false])
            .run(&[], None)
            .rows,
        vec![0]
    );
    assert!(Cols::new(SOURCE_ESTIMATE, &[5.0], &[None], &[false])
        .run(&[], None)
        .rows
        .is_empty());
}

#[test]
fn a_reduction_is_a_loss_event_only_with_evidence_in_its_window() {
    // reductions at rows 2 (prev 1) and 5 (prev 4); tol 0.25: windows [0.75, 2.25] and [3.75, 5.25]
    let c = traced(&[10.0, 10.0, 5.0, 6.0, 7.0, 1.0, 2.0]);
    let f = c.run(&[0.5, 2.2, 6.0], Some(0.25));
    assert_eq!(f.rows, vec![2, 5]);
    assert_eq!(f.loss, vec![true, false]);
    assert_eq!(
        (f.stats[0].losses, f.stats[0].first_loss.get()),
        (1, Some(2.0))
    );
    // evidence at the window's start counts; a direction without a window counts every one
    assert_eq!(c.run(&[3.75], Some(0.25)).loss, vec![false, true]);
    assert_eq!(c.run(&[], None).loss, vec![true, true]);
    // no evidence at all: none is a loss event
    let none = c.run(&[], Some(0.25));
    assert_eq!(
        (
            none.loss,
            none.stats[0].losses,
            none.stats[0].first_loss.get()
        ),
        (vec![false, false], 0, None)
    );
}

#[test]
fn series_are_split_by_direction_and_source_and_evidence_by_direction() {
    let mut c = traced(&[10.0, 5.0, 10.0, 5.0]);
    c.dir = vec![0, 0, 1, 1];
    let ev = Evidence::new(&[0, 0], &[1, 0], &[1.0, 9.0]);
    let windows = HashMap::from([((0, 0), 0.1), ((0, 1), 0.1)]);
    let f = reductions(&c.columns(), &ev, &windows).unwrap();
    // direction 1's first row never falls from direction 0's last; each sees only its own evidence
    assert_eq!(f.rows, vec![1, 3]);
    assert_eq!(f.loss, vec![false, false]);
    assert_eq!(f.series, vec![0, 2]);
    let ev = Evidence::new(&[0], &[1], &[3.0]);
    assert_eq!(
        reductions(&c.columns(), &ev, &windows).unwrap().loss,
        vec![false, true]
    );
}

#[test]
fn nulls_and_nans_compare_as_polars_does() {
    // a null cwnd never falls nor is fallen from; NaN is larger than every number
    let mut c = traced(&[10.0, 1.0, 1.0, f64::NAN, 1.0]);
    c.cwnd_ok = vec![true, false, true, true, true];
    assert_eq!(c.run(&[], None).rows, vec![4]);
    let mut m = Extreme::default();
    for v in [f64::NAN, 3.0, 1.0] {
        m.add(v, false);
    }
    assert_eq!(m.get(), Some(3.0));
    assert!(lt(1.0, f64::NAN) && !lt(f64::NAN, f64::NAN) && le(f64::NAN, f64::NAN));
}

#[test]
fn columns_of_other_lengths_are_an_error() {
    let mut c = traced(&[1.0, 2.0]);
    c.rec = vec![false];
    assert!(reductions(&c.columns(), &Evidence::default(), &HashMap::new()).is_err());
}
