//! Hand-checked sequences for the RFC 6298 estimator and its look-ups (values are binary
//! fractions, so every step is exact).

use super::*;

#[test]
fn first_sample_then_the_rfc_6298_updates() {
    let mut e = Srtt::default();
    assert_eq!(e.get(), None);
    // §2.2: SRTT = R = 1, RTTVAR = R/2 = 0.5
    e.on_sample(1.0);
    assert_eq!(e.get(), Some((1.0, 0.5)));
    // §2.3 with R' = 2: RTTVAR = 3/4·0.5 + 1/4·|1 - 2| = 0.625 (the old SRTT), SRTT = 7/8·1 + 1/8·2
    e.on_sample(2.0);
    assert_eq!(e.get(), Some((1.125, 0.625)));
    // R' = 0.5: RTTVAR = 3/4·0.625 + 1/4·|1.125 - 0.5| = 0.625, SRTT = 7/8·1.125 + 1/8·0.5
    e.on_sample(0.5);
    assert_eq!(e.get(), Some((1.046875, 0.625)));
}

#[test]
fn a_nan_measurement_spoils_the_estimate_for_good() {
    let mut e = Srtt::default();
    e.on_sample(1.0);
    e.on_sample(f64::NAN);
    e.on_sample(1.0);
    assert!(e.get().is_some_and(|(a, b)| a.is_nan() && b.is_nan()));
}

#[test]
fn each_direction_smooths_its_seq_samples_or_else_its_ts_ones() {
    // flow 0 dir 0 has seq and ts samples: only seq counts; flow 0 dir 1 and flow 3 dir 0
    // have only ts ones; the input is ordered by method then row, as `rtt.samples` gives it
    let flow = [0, 0, 0, 0, 0, 0, 3];
    let dir = [0, 0, 0, 0, 1, 1, 0];
    let row = [4, 9, 2, 6, 7, 3, 5];
    let seq = [true, true, false, false, false, false, false];
    let rtt = [1.0, 2.0, 8.0, 8.0, 0.25, 0.5, 4.0];
    let s = Samples {
        flow: &flow,
        dir: &dir,
        row: &row,
        seq: &seq,
        rtt: &rtt,
    };
    // by row: 3 (0/1 ts), 4 (0/0 seq), 5 (3/0 ts), 7 (0/1 ts), 9 (0/0 seq); 0/1 in row order:
    // 0.5, then 0.25: SRTT 7/8·0.5 + 1/8·0.25, RTTVAR 3/4·0.25 + 1/4·|0.5 - 0.25|
    let want = Smoothed {
        idx: vec![5, 0, 6, 4, 1],
        srtt: vec![0.5, 1.0, 4.0, 0.46875, 1.125],
        rttvar: vec![0.25, 0.5, 2.0, 0.25, 0.625],
    };
    assert_eq!(smooth(&s).unwrap(), want);
}

#[test]
fn smooth_refuses_bad_columns() {
    let s = Samples {
        flow: &[0, 0],
        dir: &[0, 2],
        row: &[0, 1],
        seq: &[true, true],
        rtt: &[1.0, 1.0],
    };
    assert!(smooth(&s).unwrap_err().contains("dir 2"));
    let s = Samples {
        rtt: &[1.0],
        dir: &[0, 0],
        ..s
    };
    assert!(smooth(&s).unwrap_err().contains("rtt"));
}

#[test]
fn est_gives_the_estimate_on_each_row_in_row_order() {
    // unsorted, row 5 twice (the later one counts), a NaN reads as none
    let rows = [5, 2, 5, 7];
    let srtt = [0.1, 0.2, 0.3, f64::NAN];
    let mut e = Est::new(&rows, &srtt, 8).unwrap();
    let got: Vec<Option<f64>> = (0..8).map(|r| e.at(r)).collect();
    let want = [None, None, Some(0.2), None, None, Some(0.3), None, None];
    assert_eq!(got, want);
    // a row skipped over is passed, not read later
    let mut e = Est::new(&rows, &srtt, 8).unwrap();
    assert_eq!((e.at(6), e.at(7)), (None, None));
    assert!(Est::new(&rows, &srtt, 7).unwrap_err().contains("row 7"));
    assert!(Est::new(&rows, &srtt[..2], 8).is_err());
}

#[test]
fn latest_keeps_each_directions_estimate_from_the_other_ones_acks() {
    let mut l = Latest::default();
    assert_eq!((l.of(0), l.of(1)), (None, None));
    l.on_packet(1, Some(0.1)); // an ACK of direction 1 closed a sample of direction 0's data
    l.on_packet(1, None);
    assert_eq!((l.of(0), l.of(1)), (Some(0.1), None));
    l.on_packet(0, Some(0.3));
    l.on_packet(1, Some(0.2));
    assert_eq!((l.of(0), l.of(1)), (Some(0.2), Some(0.3)));
}

#[test]
fn sparse_connection_ids_smooth_the_same() {
    // a connection id far above the sample count: the per-direction map instead of the table
    let s = Samples {
        flow: &[4_000_000_000, 4_000_000_000, 7],
        dir: &[1, 1, 1],
        row: &[3, 8, 5],
        seq: &[false, false, true],
        rtt: &[1.0, 2.0, 0.5],
    };
    let want = Smoothed {
        idx: vec![0, 2, 1],
        srtt: vec![1.0, 0.5, 1.125],
        rttvar: vec![0.5, 0.25, 0.625],
    };
    assert_eq!(smooth(&s).unwrap(), want);
}

#[test]
fn a_nan_estimate_keeps_its_bits() {
    // (as polars' kernel on x86: the estimate's NaN, sign included, not the sample's)
    let neg = -f64::NAN;
    assert_eq!(step(neg, 0.3, ALPHA).to_bits(), neg.to_bits());
    assert_eq!(step(neg, f64::NAN, BETA).to_bits(), neg.to_bits());
    assert_eq!(step(0.5, 0.25, ALPHA), 0.46875);
}
