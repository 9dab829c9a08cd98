//! Hand-checked sequences for the stall rules. The state columns come from `seq::analyze`
//! (the same pass `prepare` runs), so each test is a packet trace.

use super::super::seq::{self, ACK, SYN as SYN_FLAG};
use super::*;

/// One packet: (time, dir, seq, len, flags, ack, win); ack and win MISSING for none.
type Pk = (f64, i8, i64, u32, u8, i64, i64);

/// RTT inputs of a test: rto rows, (row, srtt) samples, (dir, rtt) samples of flow 0.
#[derive(Default)]
struct Inputs {
    rto: Vec<u32>,
    est: Vec<(u32, f64)>,
    rs: Vec<(i8, f64)>,
}

/// Stalls of the packets of flows `flows[i]` as (flow, dir, start, end, cause).
fn run_flows(pk: &[Pk], flows: &[u32], inp: &Inputs) -> Vec<(u32, u8, f64, f64, Cause)> {
    let dir: Vec<i8> = pk.iter().map(|p| p.1).collect();
    let sq: Vec<i64> = pk.iter().map(|p| p.2).collect();
    let ln: Vec<u32> = pk.iter().map(|p| p.3).collect();
    let flags: Vec<u8> = pk.iter().map(|p| p.4).collect();
    let ack: Vec<i64> = pk.iter().map(|p| p.5).collect();
    let win: Vec<i64> = pk.iter().map(|p| p.6).collect();
    let p = seq::Packets {
        flow: flows,
        dir: &dir,
        seq: &sq,
        len: &ln,
        flags: &flags,
        ack: &ack,
        win: &win,
    };
    let st = seq::analyze(&p).expect("valid packets");
    let g: Vec<u32> = st.g.iter().map(|&g| g as u32).collect();
    let time: Vec<f64> = pk.iter().map(|p| p.0).collect();
    let len: Vec<i64> = ln.iter().map(|&l| i64::from(l)).collect();
    let new_ack: Vec<bool> = st.bits.iter().map(|b| b & seq::NEW_ACK != 0).collect();
    let syn_rows: Vec<u32> = (0..pk.len() as u32)
        .filter(|&i| flags[i as usize] & SYN_FLAG != 0)
        .collect();
    let c = Columns {
        g: &g,
        time: &time,
        len: &len,
        hi_dend: Ints::I64(&st.hi_dend),
        ack: &ack,
        win: &win,
        new_ack: &new_ack,
        syn_rows: &syn_rows,
    };
    let (est_rows, est_srtt): (Vec<u32>, Vec<f64>) = inp.est.iter().copied().unzip();
    let rs_flow = vec![0u32; inp.rs.len()];
    let (rs_dir, rs_rtt): (Vec<i8>, Vec<f64>) = inp.rs.iter().copied().unzip();
    let r = Rtt {
        rto_rows: &inp.rto,
        est_rows: &est_rows,
        est_srtt: &est_srtt,
        rs_flow: &rs_flow,
        rs_dir: &rs_dir,
        rs_rtt: &rs_rtt,
    };
    let got: Vec<_> = stalls(&c, &r)
        .expect("valid columns")
        .into_iter()
        .map(|(g, s)| (g >> 1, s.dir, s.start, s.end, s.cause))
        .collect();
    // the same from the 32-bit column the prepared state keeps for small numbers
    let narrow: Vec<i32> = st
        .hi_dend
        .iter()
        .map(|&h| if h == M { i32::MIN } else { h as i32 })
        .collect();
    let c = Columns {
        hi_dend: Ints::I32(&narrow),
        ..c
    };
    let got32: Vec<_> = stalls(&c, &r)
        .expect("valid columns")
        .into_iter()
        .map(|(g, s)| (g >> 1, s.dir, s.start, s.end, s.cause))
        .collect();
    assert_eq!(got, got32);
    got
}

fn run(pk: &[Pk], inp: &Inputs) -> Vec<(f64, f64, Cause)> {
    run_flows(pk, &vec![0; pk.len()], inp)
        .into_iter()
        .map(|(_, _, s, e, c)| (s, e, c))
        .collect()
}

const A: u8 = ACK;
const M: i64 = MISSING;
const W: i64 = 65535;

/// SYN, SYN-ACK, ACK (rows 0-2), 10 ms RTT.
fn hs() -> Vec<Pk> {
    vec![
        (0.0, 0, 0, 0, SYN_FLAG, M, W),
        (0.01, 1, 0, 0, SYN_FLAG | A, 1, W),
        (0.01001, 0, 1, 0, A, 1, W),
    ]
}

fn with(mut a: Vec<Pk>, b: &[Pk]) -> Vec<Pk> {
    a.extend_from_slice(b);
    a
}

#[test]
fn idle_sender_with_everything_acked_is_app_limited() {
    let pk = with(
        hs(),
        &[
            (0.02, 0, 1, 1000, A, 1, W),
            (0.03, 1, 1, 0, A, 1001, W),
            (2.0, 0, 1001, 1000, A, 1, W),
            (2.01, 1, 1, 0, A, 2001, W),
        ],
    );
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.02, 2.0, Cause::AppLimited)]
    );
}

#[test]
fn a_silence_at_the_threshold_is_no_stall() {
    // 4 x srtt exactly (binary fractions: 0.25 s apart, srtt 0.0625 s from the SYN-ACK)
    let pk = with(
        hs(),
        &[
            (0.25, 0, 1, 1000, A, 1, W),
            (0.26, 1, 1, 0, A, 1001, W),
            (0.5, 0, 1001, 1000, A, 1, W),
            (0.51, 1, 1, 0, A, 2001, W),
        ],
    );
    let inp = Inputs {
        est: vec![(1, 0.0625)],
        ..Inputs::default()
    };
    assert_eq!(run(&pk, &inp), vec![]);
    // one sample above: the threshold rises beyond the 0.25 s silence
    let inp = Inputs {
        est: vec![(1, 0.07)],
        ..Inputs::default()
    };
    assert_eq!(run(&pk, &inp), vec![]);
    // without any RTT: 200 ms, so 0.25 s is a stall
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.25, 0.5, Cause::AppLimited)]
    );
}

#[test]
fn the_smallest_rtt_counts_before_the_first_smoothed_one() {
    let pk = with(
        hs(),
        &[
            (0.02, 0, 1, 1000, A, 1, W),
            (0.03, 1, 1, 0, A, 1001, W),
            (0.5, 0, 1001, 1000, A, 1, W), // 0.48 s after: the floor (0.15 s) makes 0.6 s
            (0.51, 1, 1, 0, A, 2001, W),
            (1.5, 0, 2001, 1000, A, 1, W), // 1 s after: srtt (0.1 s, from row 4) makes 0.4 s
        ],
    );
    let inp = Inputs {
        est: vec![(4, 0.1)],
        rs: vec![(0, 0.3), (0, 0.15), (1, 0.01), (0, -1.0)],
        ..Inputs::default()
    };
    assert_eq!(run(&pk, &inp), vec![(0.5, 1.5, Cause::AppLimited)]);
    // a NaN srtt reads as none: the floor again (0.48 s < 0.6 s, 1 s > 0.6 s)
    let inp = Inputs {
        est: vec![(4, f64::NAN)],
        rs: vec![(0, 0.15)],
        ..Inputs::default()
    };
    assert_eq!(run(&pk, &inp), vec![(0.5, 1.5, Cause::AppLimited)]);
}

#[test]
fn zero_window_during_the_pause() {
    let pk = with(
        hs(),
        &[
            (0.02, 0, 1, 1000, A, 1, W),
            (0.03, 1, 1, 0, A, 1001, 0),
            (1.0, 1, 1, 0, A, 1001, 8000),
            (1.001, 0, 1001, 1000, A, 1, W),
            (1.01, 1, 1, 0, A, 2001, W),
        ],
    );
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.02, 1.001, Cause::ZeroWindow)]
    );
}

#[test]
fn a_zero_window_at_the_start_counts_but_not_a_syns() {
    // the receiver's latest packet before the new data advertised 0
    let pk = with(
        hs(),
        &[
            (0.02, 1, 1, 0, A, 1, 0),
            (0.03, 0, 1, 1000, A, 1, W),
            (1.0, 1, 1, 0, A, 1001, W),
            (1.5, 0, 1001, 1000, A, 1, W),
        ],
    );
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.03, 1.5, Cause::ZeroWindow)]
    );
    // a SYN-ACK with window 0 during the silence is no zero window (its full window still
    // counts: the window rule has no SYN exception)
    let pk = vec![
        (0.0, 0, 0, 0, SYN_FLAG, M, W),
        (0.01, 0, 1, 1000, A, 1, W),
        (0.5, 1, 0, 0, SYN_FLAG | A, 1001, 0),
        (1.0, 0, 1001, 1000, A, 1, W),
    ];
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.01, 1.0, Cause::RwndLimited)]
    );
}

#[test]
fn full_receive_window_is_rwnd_limited() {
    // 2000 bytes out, window 2000: outstanding + one MSS (1000) exceeds it
    let pk = with(
        hs(),
        &[
            (0.02, 0, 1, 1000, A, 1, W),
            (0.021, 0, 1001, 1000, A, 1, W),
            (0.03, 1, 1, 0, A, 1, 2000),
            (1.5, 1, 1, 0, A, 2001, 2000),
            (1.501, 0, 2001, 1000, A, 1, W),
        ],
    );
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.021, 1.501, Cause::RwndLimited)]
    );
    // window 3000 at the receiver's packets: 2000 + 1000 does not exceed it, and at the
    // end everything was acknowledged
    let pk: Vec<Pk> = pk
        .iter()
        .map(|&p| {
            if p.1 == 1 && p.0 > 0.02 {
                (p.0, p.1, p.2, p.3, p.4, p.5, 3000)
            } else {
                p
            }
        })
        .collect();
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.021, 1.501, Cause::AppLimited)]
    );
}

#[test]
fn a_full_window_at_the_start_is_rwnd_limited() {
    // the receiver's last packet before the silence: ACK 1, window 1500; 1000 out + MSS 1000
    let pk = with(
        hs(),
        &[
            (0.02, 1, 1, 0, A, 1, 1500),
            (0.03, 0, 1, 1000, A, 1, W),
            (1.5, 0, 1001, 1000, A, 1, W),
        ],
    );
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.03, 1.5, Cause::RwndLimited)]
    );
}

#[test]
fn a_lost_tail_recovered_by_timeout_is_an_rto_stall() {
    let pk = with(
        hs(),
        &[
            (0.02, 0, 1, 1000, A, 1, W),
            (0.021, 0, 1001, 1000, A, 1, W),
            (0.03, 1, 1, 0, A, 1001, W),
            (1.0, 0, 1001, 1000, A, 1, W), // row 6: the retransmission by timeout
            (1.01, 1, 1, 0, A, 2001, W),
        ],
    );
    let inp = Inputs {
        rto: vec![6],
        ..Inputs::default()
    };
    assert_eq!(run(&pk, &inp), vec![(0.021, 1.01, Cause::Rto)]);
    // without the rto mark: not everything was acknowledged and it is a tail: unknown
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.021, 1.01, Cause::Unknown)]
    );
}

#[test]
fn a_tail_ends_at_the_earliest_ack_of_the_last_byte() {
    // the capture clock steps back at the second ACK of byte 1001
    let pk = with(
        hs(),
        &[
            (0.02, 0, 1, 1000, A, 1, W),
            (1.0, 1, 1, 0, A, 1001, W),
            (0.9, 1, 1, 0, A, 1001, W),
        ],
    );
    // (the second ACK is no new ACK: the end is the first one's time)
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.02, 1.0, Cause::Unknown)]
    );
    let pk = with(
        hs(),
        &[
            (0.02, 0, 1, 1000, A, 1, W),
            (1.0, 1, 1, 0, A, 1001, W),
            (0.9, 1, 1, 0, A, 1002, W),
        ],
    );
    assert_eq!(
        run(&pk, &Inputs::default()),
        vec![(0.02, 0.9, Cause::Unknown)]
    );
}

#[test]
fn an_unacknowledged_tail_is_no_stall() {
    let pk = with(
        hs(),
        &[(0.02, 0, 1, 1000, A, 1, W), (1.0, 1, 1, 0, A, 501, W)],
    );
    assert_eq!(run(&pk, &Inputs::default()), vec![]);
}

#[test]
fn connections_interleave_and_come_out_by_start_row() {
    let pk: Vec<Pk> = vec![
        (0.0, 0, 1, 100, A, 1, W),   // flow 7
        (0.1, 0, 1, 100, A, 1, W),   // flow 3
        (0.11, 1, 1, 0, A, 101, W),  // flow 3
        (0.12, 1, 1, 0, A, 101, W),  // flow 7
        (1.0, 0, 101, 100, A, 1, W), // flow 3
        (2.0, 0, 101, 100, A, 1, W), // flow 7
    ];
    let got = run_flows(&pk, &[7, 3, 3, 7, 3, 7], &Inputs::default());
    assert_eq!(
        got,
        vec![
            (7, 0, 0.0, 2.0, Cause::AppLimited),
            (3, 0, 0.1, 1.0, Cause::AppLimited),
        ]
    );
}

#[test]
fn bad_columns_are_errors() {
    let g = [0u32, 1];
    let time = [0.0, 1.0];
    let x = [0i64, 0];
    let new_ack = [false];
    let c = Columns {
        g: &g,
        time: &time,
        len: &x,
        hi_dend: Ints::I64(&x),
        ack: &x,
        win: &x,
        new_ack: &new_ack,
        syn_rows: &[],
    };
    let r = Rtt {
        rto_rows: &[],
        est_rows: &[],
        est_srtt: &[],
        rs_flow: &[],
        rs_dir: &[],
        rs_rtt: &[],
    };
    assert!(stalls(&c, &r).unwrap_err().contains("new_ack"));
    let new_ack = [false, true];
    let c = Columns {
        new_ack: &new_ack,
        ..c
    };
    let r = Rtt {
        rto_rows: &[5],
        ..r
    };
    assert!(stalls(&c, &r).unwrap_err().contains("rto_rows"));
}
