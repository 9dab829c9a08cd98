//! Hand-checked sequences for the RTT samples.

use super::*;
use crate::state::seq::{analyze, Packets, ACK};

const A: u8 = ACK;
const S: u8 = SYN;
const M: i64 = MISSING;

/// One packet: (flow, dir, time, seq, len, flags, ack, ts_val, ts_ecr); ts_val M: none.
type Pk = (u32, i8, f64, i64, u32, u8, i64, i64, u32);

/// A sample as (ACK row, timed row, RTT).
type Got = Vec<(u32, u32, f64)>;

/// The `(seq, ts)` samples of some packets.
fn run(pk: &[Pk]) -> (Got, Got) {
    let flow: Vec<u32> = pk.iter().map(|p| p.0).collect();
    let dir: Vec<i8> = pk.iter().map(|p| p.1).collect();
    let seq: Vec<i64> = pk.iter().map(|p| p.3).collect();
    let len: Vec<u32> = pk.iter().map(|p| p.4).collect();
    let flags: Vec<u8> = pk.iter().map(|p| p.5).collect();
    let ack: Vec<i64> = pk.iter().map(|p| p.6).collect();
    let win = vec![65535i64; pk.len()];
    let p = Packets {
        flow: &flow,
        dir: &dir,
        seq: &seq,
        len: &len,
        flags: &flags,
        ack: &ack,
        win: &win,
    };
    let st = analyze(&p).expect("valid");
    let g: Vec<u32> = pk.iter().map(|p| 2 * p.0 + u32::from(p.1 == 1)).collect();
    let time: Vec<f64> = pk.iter().map(|p| p.2).collect();
    let len64: Vec<i64> = len.iter().map(|&l| i64::from(l)).collect();
    let ts_val: Vec<i64> = pk.iter().map(|p| p.7).collect();
    let ts_ecr: Vec<u32> = pk.iter().map(|p| p.8).collect();
    let c = Columns {
        g: &g,
        time: &time,
        seq: &seq,
        len: &len64,
        flags: &flags,
        ack: &ack,
        ts_val: &ts_val,
        ts_ecr: &ts_ecr,
        bits: &st.bits,
        nxt: &st.nxt,
    };
    let (sq, ts) = samples(&c).expect("valid");
    let f = |v: Vec<Sample>| v.iter().map(|s| (s.ack_row, s.sent_row, s.rtt)).collect();
    (f(sq), f(ts))
}

/// A handshake at times 0, 1, 2 (ISNs 0; data then starts at sequence 1).
fn hs() -> Vec<Pk> {
    vec![
        (0, 0, 0.0, 0, 0, S, M, M, 0),
        (0, 1, 1.0, 0, 0, S | A, 1, M, 0),
        (0, 0, 2.0, 1, 0, A, 1, M, 0),
    ]
}

fn with(mut a: Vec<Pk>, b: &[Pk]) -> Vec<Pk> {
    a.extend_from_slice(b);
    a
}

#[test]
fn the_ack_of_a_segment_end_closes_a_sample() {
    // the SYN (SYN-ACK 1 s later: the SYN counts one byte), the SYN-ACK (ACK 1 s later) and
    // the segment (ACK 3 s later)
    let (sq, ts) = run(&with(
        hs(),
        &[
            (0, 0, 3.0, 1, 100, A, 1, M, 0),
            (0, 1, 6.0, 1, 0, A, 101, M, 0),
        ],
    ));
    assert_eq!(sq, vec![(1, 0, 1.0), (2, 1, 1.0), (4, 3, 3.0)]);
    assert!(ts.is_empty());
}

#[test]
fn an_ack_inside_a_segment_or_repeated_gives_none_and_a_delayed_ack_times_the_last() {
    let (sq, _) = run(&with(
        hs(),
        &[
            (0, 0, 3.0, 1, 200, A, 1, M, 0),
            (0, 1, 4.0, 1, 0, A, 101, M, 0),   // inside the segment
            (0, 1, 5.0, 1, 0, A, 201, M, 0),   // its end
            (0, 1, 6.0, 1, 0, A, 201, M, 0),   // again: not a new ACK
            (0, 0, 7.0, 201, 100, A, 1, M, 0), // two segments, one delayed ACK
            (0, 0, 8.0, 301, 100, A, 1, M, 0),
            (0, 1, 10.0, 1, 0, A, 401, M, 0),
        ],
    ));
    assert_eq!(&sq[2..], &[(5, 3, 2.0), (9, 8, 2.0)]);
}

#[test]
fn karn_a_retransmitted_segment_gives_no_sample() {
    let (sq, _) = run(&with(
        hs(),
        &[
            (0, 0, 3.0, 1, 100, A, 1, M, 0),
            (0, 0, 6.0, 1, 100, A, 1, M, 0), // retransmission of the same bytes
            (0, 1, 7.0, 1, 0, A, 101, M, 0), // ambiguous: no sample
            (0, 0, 8.0, 101, 100, A, 1, M, 0),
            (0, 1, 9.0, 1, 0, A, 201, M, 0), // sent once: a sample
        ],
    ));
    assert_eq!(&sq[2..], &[(7, 6, 1.0)]);
}

#[test]
fn karn_a_first_transmission_that_resends_bytes_is_ambiguous() {
    // the second segment re-sends bytes 51..101 and adds 101..151 (a repacketised retransmission)
    let (sq, _) = run(&with(
        hs(),
        &[
            (0, 0, 3.0, 1, 100, A, 1, M, 0),
            (0, 0, 4.0, 51, 100, A, 1, M, 0),
            (0, 1, 5.0, 1, 0, A, 101, M, 0), // the first segment, sent once: a sample
            (0, 1, 6.0, 1, 0, A, 151, M, 0), // the second: no sample
        ],
    ));
    assert_eq!(&sq[2..], &[(5, 3, 2.0)]);
}

#[test]
fn a_retransmission_after_the_ack_does_not_undo_its_sample() {
    let (sq, _) = run(&with(
        hs(),
        &[
            (0, 0, 3.0, 1, 100, A, 1, M, 0),
            (0, 1, 5.0, 1, 0, A, 101, M, 0),
            (0, 0, 6.0, 1, 100, A, 1, M, 0), // spurious, after the ACK
        ],
    ));
    assert_eq!(&sq[2..], &[(4, 3, 2.0)]);
}

#[test]
fn an_ack_before_its_segment_or_backwards_in_time_gives_none() {
    // the ACK is seen before the segment it acknowledges (a capture point past the
    // receiver); then a segment whose ACK carries an earlier time stamp
    let (sq, _) = run(&with(
        hs(),
        &[
            (0, 1, 3.0, 1, 0, A, 101, M, 0),
            (0, 0, 4.0, 1, 100, A, 1, M, 0),
            (0, 0, 5.0, 101, 100, A, 1, M, 0),
            (0, 1, 4.5, 1, 0, A, 201, M, 0),
        ],
    ));
    assert_eq!(sq.len(), 2);
}

#[test]
fn a_timestamp_echo_times_the_first_segment_with_that_tsval() {
    let (_, ts) = run(&[
        (0, 0, 0.0, 1, 100, A, 1, 100, 7),
        (0, 0, 1.0, 101, 100, A, 1, 100, 7), // same TSval: not the first
        (0, 0, 2.0, 201, 100, A, 1, 110, 7),
        (0, 1, 4.0, 1, 0, A, 201, 9, 100), // echoes 100: from the first packet
        (0, 1, 6.0, 1, 0, A, 301, 9, 110),
        (0, 1, 7.0, 1, 0, A, 301, 9, 110), // not a new ACK: no sample
        (0, 1, 8.0, 1, 0, A, 302, 9, 123), // a TSval never sent: no sample
        (0, 1, 9.0, 1, 0, A, 303, 9, 0),   // no echo
    ]);
    assert_eq!(ts, vec![(3, 0, 4.0), (4, 2, 4.0)]);
}

#[test]
fn timestamps_across_the_32_bit_wrap() {
    let top = (1i64 << 32) - 2;
    let (_, ts) = run(&[
        (0, 0, 0.0, 1, 100, A, 1, top, 1),
        (0, 0, 1.0, 101, 100, A, 1, top + 1, 1),
        (0, 0, 2.0, 201, 100, A, 1, 3, 1), // wrapped: top + 5
        (0, 0, 2.5, 301, 100, A, 1, M, 1), // no timestamp option
        (0, 1, 3.0, 1, 0, A, 101, 2, top as u32),
        (0, 1, 4.5, 1, 0, A, 301, 2, 3),
    ]);
    assert_eq!(ts, vec![(4, 0, 3.0), (5, 2, 2.5)]);
}

#[test]
fn a_lower_tsval_is_no_first_packet() {
    // a TSval below the highest sent (a reordered packet) times nothing; its echo finds the
    // first packet that carried it, if any
    let (_, ts) = run(&[
        (0, 0, 0.0, 1, 100, A, 1, 50, 1),
        (0, 0, 1.0, 101, 100, A, 1, 60, 1),
        (0, 0, 2.0, 201, 100, A, 1, 55, 1),
        (0, 1, 3.0, 1, 0, A, 301, 2, 55),
        (0, 1, 4.0, 1, 0, A, 302, 2, 50),
    ]);
    assert_eq!(ts, vec![(4, 0, 4.0)]);
}

#[test]
fn connections_are_separate_and_samples_come_in_row_order() {
    let (sq, ts) = run(&[
        (0, 0, 0.0, 1, 100, A, 1, 10, 1),
        (1, 0, 0.5, 1, 100, A, 1, 10, 1),
        (1, 1, 1.0, 1, 0, A, 101, 5, 10),
        (0, 1, 2.0, 1, 0, A, 101, 5, 10),
    ]);
    assert_eq!(sq, vec![(2, 1, 0.5), (3, 0, 2.0)]);
    assert_eq!(ts, sq);
}

#[test]
fn the_state_machine_alone_gives_the_same_samples() {
    // fed packet by packet, as a streaming driver would
    let mut c = Connection::default();
    let p = |row, dir, time, seq, len, bits, ack, nxt| Packet {
        row,
        dir,
        time,
        seq,
        len,
        flags: A,
        ack,
        ts_val: MISSING,
        ts_ecr: 0,
        bits,
        nxt,
    };
    assert_eq!(c.on_packet(&p(0, 0, 0.0, 1, 100, ADV, 1, M)), (None, None));
    let (s, t) = c.on_packet(&p(1, 1, 0.25, 1, 0, NEW_ACK, 101, M));
    assert_eq!(s.map(|s| (s.sent_row, s.rtt)), Some((0, 0.25)));
    assert_eq!(t, None);
}

#[test]
fn columns_of_unequal_length_are_an_error() {
    let c = Columns {
        g: &[0, 1],
        time: &[0.0],
        seq: &[0, 0],
        len: &[0, 0],
        flags: &[0, 0],
        ack: &[M, M],
        ts_val: &[M, M],
        ts_ecr: &[0, 0],
        bits: &[0, 0],
        nxt: &[M, M],
    };
    assert!(samples(&c).is_err());
}

#[test]
fn the_galloping_search_finds_exactly_the_entries_present() {
    for n in 0..40u32 {
        let firsts: Vec<First> = (0..n)
            .map(|i| First {
                tsv: 2 * i64::from(i),
                row: i,
                time: 0.0,
            })
            .collect();
        for v in -1..=2 * i64::from(n) + 1 {
            let want = (v >= 0 && v % 2 == 0 && v < 2 * i64::from(n)).then_some((v / 2) as u32);
            assert_eq!(find_recent(&firsts, v).map(|f| f.row), want, "n {n} v {v}");
        }
    }
}

#[test]
fn a_long_run_of_timestamps_keeps_the_last_2_31_ticks() {
    // 5000 segments, TSval stepping by 2^20 (wrapping every 4096), then ACKs echoing three of them
    let step = 1i64 << 20;
    let mut pk: Vec<Pk> = (0..5000i64)
        .map(|i| (0, 0, i as f64, 1 + i, 1, A, 1, (i * step) % (1 << 32), 1))
        .collect();
    for (k, &i) in [4990i64, 3000, 100].iter().enumerate() {
        let ecr = ((i * step) % (1 << 32)) as u32;
        pk.push((0, 1, 6000.0 + k as f64, 1, 0, A, 2 + k as i64, 7, ecr));
    }
    let (_, ts) = run(&pk);
    // 4990 and 3000 are within 2^31 ticks of the highest TSval; 100 is 4899·2^20 behind (its
    // entry was dropped): its 32-bit value is read in the epoch nearest the highest TSval,
    // where segment 4196 (= 100 + 4096) carried it
    assert_eq!(
        ts,
        vec![
            (5000, 4990, 1010.0),
            (5001, 3000, 3001.0),
            (5002, 4196, 1806.0)
        ]
    );
}

/// A second pass given the first pass's echo lags keeps a short TSval table and gives the
/// same samples, also when a reordered ACK echoes an older TSval.
#[test]
fn a_second_pass_keeps_the_tsvals_an_echo_can_reach() {
    use crate::state::seq::{ADV, NEW_ACK};
    let mut pk = Vec::new();
    for k in 0..3000i64 {
        let t = k as f64 * 0.001;
        pk.push(Packet {
            row: 0,
            dir: 0,
            time: t,
            seq: 1 + 100 * k,
            len: 100,
            flags: A,
            ack: 1,
            ts_val: 1000 + k,
            ts_ecr: 7,
            bits: ADV,
            nxt: 1 + 100 * k,
        });
        // the ACK of the segment sent 5 packets ago; every 50th echoes 3 TSvals further back
        let back = if k % 50 == 49 { 8 } else { 5 };
        if k >= back {
            pk.push(Packet {
                row: 0,
                dir: 1,
                time: t + 0.0005,
                seq: 1,
                len: 0,
                flags: A,
                ack: 1 + 100 * (k - 4),
                ts_val: 7,
                ts_ecr: 1000 + k - back,
                bits: NEW_ACK,
                nxt: 1,
            });
        }
    }
    for (i, p) in pk.iter_mut().enumerate() {
        p.row = i as u32;
    }
    let mut first = Connection::default();
    let a: Vec<_> = pk.iter().map(|p| first.on_packet(p)).collect();
    assert_eq!(first.echo_lags(), [2, 0]); // 1041 after 1043
    let mut second = Connection::keeping(first.echo_lags());
    let b: Vec<_> = pk.iter().map(|p| second.on_packet(p)).collect();
    assert_eq!(a, b);
    assert!(a.iter().filter(|s| s.1.is_some()).count() > 2900);
    let s = &second.side[0];
    assert!(
        s.firsts.len() - s.firsts_from < 20,
        "{}",
        s.firsts.len() - s.firsts_from
    );
    assert!(first.side[0].firsts.len() == 3000);
}

/// Kept within a window below the highest TSval sent (`Connection::within`), the TSval table
/// gives the samples keeping every TSval gives, unless an echo falls below what went: then
/// `missed` says so. Side 0 sends TSvals 1, 2, ... (one a packet), side 1's ACKs echo them
/// three behind, one of them `far` behind; side 1's own TSvals are never echoed.
#[test]
fn a_table_kept_within_a_window_below_the_highest_tsval_misses_only_what_it_says() {
    let trace = |far: i64| -> Vec<Packet> {
        let mut v = Vec::new();
        for k in 1..=200i64 {
            let row = v.len() as u32;
            let pk = |dir: usize, ts_val: i64, ts_ecr: i64, ack: i64, bits: u8| Packet {
                row,
                dir,
                time: k as f64 * 0.001 + dir as f64 * 0.0005,
                seq: 1,
                len: 0,
                flags: ACK,
                ack,
                ts_val,
                ts_ecr,
                bits,
                nxt: MISSING,
            };
            v.push(pk(0, k, 7, 1, 0));
            let echo = if k == 150 { k - far } else { (k - 3).max(1) };
            v.push(pk(1, 1000 + k, echo, 1 + k, NEW_ACK));
        }
        v
    };
    for (far, window, missed) in [
        (3, 16, false),
        (10, 16, false),
        (40, 16, true),
        (40, 64, false),
    ] {
        let (mut all, mut some) = (Connection::default(), Connection::default().within(window));
        for p in trace(far) {
            let (a, b) = (all.on_packet(&p), some.on_packet(&p));
            if !missed {
                assert_eq!(a, b, "row {}", p.row);
            }
        }
        assert_eq!(some.missed(), missed, "{far} {window}");
        assert!(some
            .side
            .iter()
            .all(|s| s.firsts.len() - s.firsts_from <= 1 + window as usize));
    }
}
