//! Hand-checked sequences for the retransmission rules.

use super::*;
use crate::state::seq::{analyze, Packets, ACK, SYN};

const A: u8 = ACK;
const M: i64 = MISSING;

/// One packet of flow 0: (dir, time, seq, len, flags, ack, SACK blocks).
type P = (i8, f64, i64, u32, u8, i64, &'static [(i64, i64)]);

/// The retransmissions of one flow's packets (the state made by `seq::analyze`), `est` the
/// smoothed RTT samples (row, srtt).
fn run_with(pk: &[P], est: &[(u32, f64)], ooo_s: Option<f64>) -> Vec<Retrans> {
    let n = pk.len();
    let flow = vec![0u32; n];
    let dir: Vec<i8> = pk.iter().map(|p| p.0).collect();
    let time: Vec<f64> = pk.iter().map(|p| p.1).collect();
    let seq: Vec<i64> = pk.iter().map(|p| p.2).collect();
    let len32: Vec<u32> = pk.iter().map(|p| p.3).collect();
    let flags: Vec<u8> = pk.iter().map(|p| p.4).collect();
    let ack: Vec<i64> = pk.iter().map(|p| p.5).collect();
    let win = vec![M; n];
    let st = analyze(&Packets {
        flow: &flow,
        dir: &dir,
        seq: &seq,
        len: &len32,
        flags: &flags,
        ack: &ack,
        win: &win,
    })
    .expect("valid");
    let len: Vec<i64> = len32.iter().map(|&l| i64::from(l)).collect();
    let (est_rows, est_srtt): (Vec<u32>, Vec<f64>) = est.iter().copied().unzip();
    let (mut sr, mut sl, mut sh) = (vec![], vec![], vec![]);
    for (i, p) in pk.iter().enumerate() {
        for &(l, r) in p.6 {
            sr.push(i as i64);
            sl.push(l);
            sh.push(r);
        }
    }
    let c = Columns {
        flow: &flow,
        dir: &dir,
        time: &time,
        seq: &seq,
        len: &len,
        nxt: &st.nxt,
        ack: &ack,
        r_hi_ack: &st.r_hi_ack,
        flags: &flags,
        bits: &st.bits,
        est_rows: &est_rows,
        est_srtt: &est_srtt,
        sack_row: &sr,
        sack_left: &sl,
        sack_right: &sh,
    };
    classify(&c, &|_| ooo_s, 0.2).expect("valid")
}

fn run(pk: &[P]) -> Vec<Retrans> {
    run_with(pk, &[], None)
}

/// Handshake at 0-10 ms, then `k` segments of 1000 bytes from 20 ms, 1 ms apart.
fn start(k: i64) -> Vec<P> {
    let mut v: Vec<P> = vec![
        (0, 0.0, 0, 0, SYN, M, &[]),
        (1, 0.0001, 0, 0, SYN | A, 1, &[]),
        (0, 0.0101, 1, 0, A, 1, &[]),
    ];
    for i in 0..k {
        v.push((0, 0.020 + 0.001 * i as f64, 1 + 1000 * i, 1000, A, 1, &[]));
    }
    v
}

#[test]
fn three_duplicate_acks_then_a_resend_is_fast() {
    let mut pk = start(5);
    pk.push((1, 0.050, 1, 0, A, 1001, &[]));
    for t in [0.051, 0.052, 0.053] {
        pk.push((1, t, 1, 0, A, 1001, &[])); // duplicate ACKs 1..3
    }
    pk.push((0, 0.0531, 1001, 1000, A, 1, &[]));
    assert_eq!(run(&pk), vec![(12, FAST, 1)]);
}

#[test]
fn two_duplicate_acks_and_a_short_pause_is_still_fast() {
    // no third duplicate ACK and only 10 ms of silence: no timeout, so fast (RACK/TLP-like)
    let mut pk = start(3);
    pk.push((1, 0.030, 1, 0, A, 1001, &[]));
    pk.push((1, 0.031, 1, 0, A, 1001, &[]));
    pk.push((1, 0.032, 1, 0, A, 1001, &[]));
    pk.push((0, 0.042, 1001, 1000, A, 1, &[]));
    assert_eq!(run(&pk), vec![(9, FAST, 1)]);
}

#[test]
fn a_resend_after_more_than_the_rto_without_dup_acks_is_rto() {
    let mut pk = start(4);
    pk.push((1, 0.050, 1, 0, A, 1001, &[]));
    pk.push((0, 0.450, 1001, 1000, A, 1, &[])); // 400 ms of silence > 200 ms floor
    pk.push((1, 0.480, 1, 0, A, 2001, &[]));
    pk.push((0, 0.4801, 2001, 1000, A, 1, &[])); // same episode: rto too
    pk.push((0, 0.4802, 3001, 1000, A, 1, &[]));
    assert_eq!(run(&pk), vec![(8, RTO, 1), (10, RTO, 1), (11, RTO, 1)]);
}

#[test]
fn the_rto_grows_with_the_smoothed_rtt() {
    // 400 ms of silence, but an srtt of 500 ms (sampled at the ACK): no timeout yet
    let mut pk = start(4);
    pk.push((1, 0.050, 1, 0, A, 1001, &[]));
    pk.push((0, 0.450, 1001, 1000, A, 1, &[]));
    assert_eq!(run_with(&pk, &[(7, 0.5)], None), vec![(8, FAST, 1)]);
    // a NaN estimate reads as none: the 200 ms floor
    assert_eq!(run_with(&pk, &[(7, f64::NAN)], None), vec![(8, RTO, 1)]);
}

#[test]
fn sack_above_the_ack_makes_a_resend_fast_even_after_silence_shorter_than_half_an_rto() {
    let mut pk = start(4);
    pk.push((1, 0.050, 1, 0, A, 1001, &[(2001, 3001)]));
    pk.push((0, 0.051, 1001, 1000, A, 1, &[]));
    assert_eq!(run(&pk), vec![(8, FAST, 1)]);
}

#[test]
fn acknowledged_data_sent_again_is_spurious() {
    let mut pk = start(2);
    pk.push((1, 0.050, 1, 0, A, 2001, &[]));
    pk.push((0, 0.300, 1, 1000, A, 1, &[]));
    assert_eq!(run(&pk), vec![(6, SPURIOUS, 1)]);
}

#[test]
fn a_dsack_covering_the_resend_makes_it_spurious() {
    let mut pk = start(3);
    pk.push((0, 0.400, 1, 1000, A, 1, &[])); // a timeout: the ACKs were only late
    pk.push((1, 0.410, 1, 0, A, 3001, &[]));
    pk.push((1, 0.420, 1, 0, A, 3001, &[(1, 1001)])); // D-SACK: below the ACK
    assert_eq!(run(&pk), vec![(6, SPURIOUS, 1)]);
    // a D-SACK for other bytes leaves it a timeout
    pk[8].6 = &[(1001, 2001)];
    assert_eq!(run(&pk), vec![(6, RTO, 1)]);
}

#[test]
fn keepalives_and_zero_window_probes_are_not_retransmissions() {
    let mut pk = start(2);
    pk.push((1, 0.05, 1, 0, A, 2001, &[]));
    pk.push((0, 5.0, 2000, 0, A, 1, &[])); // keep-alive: 0 bytes at nextseq - 1
    pk.push((0, 10.0, 2000, 1, A, 1, &[])); // 1-byte keep-alive
    assert_eq!(run(&pk), vec![]);
}

#[test]
fn a_hole_filled_within_one_rtt_is_reordering_later_a_retransmission() {
    let mut pk = start(0);
    pk.push((0, 0.020, 1, 1000, A, 1, &[]));
    pk.push((0, 0.021, 2001, 1000, A, 1, &[])); // 1001..2001 skipped: a hole
    pk.push((0, 0.0215, 1001, 1000, A, 1, &[])); // 0.5 ms later: overtaken, not lost
    pk.push((0, 0.031, 4001, 1000, A, 1, &[])); // 3001..4001 skipped
    pk.push((0, 0.045, 3001, 1000, A, 1, &[])); // 14 ms later: re-sent
    assert_eq!(run_with(&pk, &[], Some(0.010)), vec![(7, FAST, 1)]);
    // the same bytes a second time are a retransmission, however soon
    pk.push((0, 0.0451, 3001, 1000, A, 1, &[]));
    assert_eq!(
        run_with(&pk, &[], Some(0.010)),
        vec![(7, FAST, 1), (8, FAST, 1)]
    );
}

#[test]
fn a_new_episode_starts_once_the_ack_passes_what_was_outstanding() {
    let mut pk = start(4);
    pk.push((1, 0.050, 1, 0, A, 1001, &[]));
    pk.push((0, 0.450, 1001, 1000, A, 1, &[])); // rto (episode 1)
    pk.push((1, 0.460, 1, 0, A, 5001, &[])); // everything outstanding acknowledged
    pk.push((0, 0.461, 5001, 1000, A, 1, &[])); // new data
    pk.push((0, 0.462, 6001, 1000, A, 1, &[]));
    pk.push((1, 0.470, 1, 0, A, 5001, &[(6001, 7001)]));
    pk.push((0, 0.471, 5001, 1000, A, 1, &[])); // SACK recovery: fast (episode 2)
    assert_eq!(run(&pk), vec![(8, RTO, 1), (13, FAST, 2)]);
}

#[test]
fn bad_columns_are_an_error_not_a_panic() {
    let c = Columns {
        flow: &[0, 0],
        dir: &[0, 2],
        time: &[0.0, 1.0],
        seq: &[0, 0],
        len: &[0, 0],
        nxt: &[M, M],
        ack: &[M, M],
        r_hi_ack: &[M, M],
        flags: &[0, 0],
        bits: &[0, 0],
        est_rows: &[],
        est_srtt: &[],
        sack_row: &[],
        sack_left: &[],
        sack_right: &[],
    };
    assert!(classify(&c, &|_| None, 0.2).is_err());
    let c = Columns {
        dir: &[0, 1],
        time: &[0.0],
        ..c
    };
    assert!(classify(&c, &|_| None, 0.2).is_err());
    let c = Columns {
        time: &[0.0, 1.0],
        est_rows: &[2],
        est_srtt: &[0.1],
        ..c
    };
    assert!(classify(&c, &|_| None, 0.2).unwrap_err().contains("row 2"));
}
