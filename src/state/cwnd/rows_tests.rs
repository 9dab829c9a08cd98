//! Hand-checked sequences for the cwnd estimate's input rows ([`super::rows`], fed by
//! [`super::rows_frames::build`] from packet columns).

use super::rows::RowCols;
use super::rows_frames::{build, Built, Frames, Keys, Packets, ACK, DATA, SYN, TCP};
use crate::state::seq::MISSING;

/// One direction (flow 0, dir 0): data rows (time, seq, end, frame, named) and ACKs from the
/// peer (time, ack, frame); `timeout`: per row, the timer sent it.
fn run_acks(
    rows: &[(f64, i64, i64, u64, bool)],
    acks_in: &[(f64, i64, u64)],
    timeout: &[bool],
) -> Result<Option<Built>, String> {
    // packets in frame order
    let mut pk: Vec<(u64, f64, i8, u8, i64, i64, u32)> = rows
        .iter()
        .map(|r| (r.3, r.0, 0, TCP | DATA, r.1, 0, (r.2 - r.1) as u32))
        .chain(acks_in.iter().map(|a| (a.2, a.0, 1, TCP | ACK, 0, a.1, 0)))
        .collect();
    pk.sort_by_key(|x| x.0);
    let frame: Vec<u64> = pk.iter().map(|x| x.0).collect();
    let time: Vec<f64> = pk.iter().map(|x| x.1).collect();
    let dir: Vec<i8> = pk.iter().map(|x| x.2).collect();
    let kind: Vec<u8> = pk.iter().map(|x| x.3).collect();
    let seq: Vec<i64> = pk.iter().map(|x| x.4).collect();
    let ack: Vec<i64> = pk.iter().map(|x| x.5).collect();
    let payload: Vec<u32> = pk.iter().map(|x| x.6).collect();
    let flow = vec![0u32; pk.len()];
    let named: Vec<u64> = rows.iter().filter(|r| r.4).map(|r| r.3).collect();
    let timer: Vec<u64> = rows
        .iter()
        .zip(timeout)
        .filter(|x| *x.1)
        .map(|x| x.0 .3)
        .collect();
    let (z1, z2) = (vec![0u32; named.len()], vec![0i8; named.len()]);
    let (t1, t2) = (vec![0u32; timer.len()], vec![0i8; timer.len()]);
    let none = Keys {
        flow: &[],
        dir: &[],
        frame: &[],
        ok: &[],
    };
    let p = Packets {
        flow: &flow,
        dir: &dir,
        kind: &kind,
        time: &time,
        frame: &frame,
        seq: &seq,
        ack: &ack,
        payload: &payload,
    };
    let fr = Frames {
        flight: none,
        sacked: &[],
        at: &[],
        retrans: Keys {
            flow: &z1,
            dir: &z2,
            frame: &named,
            ok: &[],
        },
        timeouts: Keys {
            flow: &t1,
            dir: &t2,
            frame: &timer,
            ok: &[],
        },
    };
    build(&p, (&[0], &[0], &[1000.0], &[false]), &fr)
}

fn cols(b: &Built) -> &RowCols {
    &b.cols
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || x.is_nan() && y.is_nan())
}

#[test]
fn una_dupacks_retransmissions_and_karns_rtt() {
    let b = run_acks(
        &[
            (0.0, 0, 1000, 1, false),
            (0.1, 1000, 2000, 2, false),
            (0.55, 2000, 3000, 4, false),
            (0.65, 1000, 2000, 6, false), // resent below the highest byte sent: a retransmission
            (0.8, 3000, 4000, 8, false),
        ],
        &[(0.5, 1000, 3), (0.6, 1000, 5), (0.7, 3000, 7)],
        &[false; 5],
    )
    .expect("valid")
    .expect("rows");
    let c = cols(&b);
    // the latest ACK before each row: none, none, 0.5, 0.6, 0.7
    let nan = f64::NAN;
    assert!(same(&c.ack_t, &[nan, nan, 0.5, 0.6, 0.7]), "{:?}", c.ack_t);
    assert_eq!(c.new_ack, vec![true, false, true, true, true]);
    assert_eq!(c.una, vec![0, 0, 1000, 1000, 3000]);
    // the second ACK of 1000 does not advance snd_una: a duplicate (RFC 5681 §2)
    assert_eq!(c.dup, vec![false, false, false, true, false]);
    assert_eq!(b.acks[0].1, vec![1000, 1000, 3000]);
    // highest byte before it 3000
    assert_eq!(c.retx, (vec![3], vec![3000], vec![false]));
    // samples 0.5 (0 -> 0.5), 0.6 (0.1 -> 0.7), 0.15 (0.55 -> 0.7): the smallest
    assert!((b.min_rtt[0] - 0.15).abs() < 1e-12, "{:?}", b.min_rtt);
}

#[test]
fn an_ack_at_the_same_instant_precedes_a_segment_of_a_higher_frame() {
    let b = run_acks(
        &[
            (1.0, 0, 1000, 1, false),
            (2.0, 1000, 2000, 5, false),
            (2.0, 2000, 3000, 7, false),
        ],
        &[(2.0, 1000, 6)],
        &[false; 3],
    )
    .expect("valid")
    .expect("rows");
    let c = cols(&b);
    assert!(same(&c.ack_t, &[f64::NAN, f64::NAN, 2.0]));
    assert_eq!(c.una, vec![0, 0, 1000]);
}

#[test]
fn named_retransmissions_give_no_rtt_sample_and_old_acks_never_lower_una() {
    let b = run_acks(
        &[(0.0, 0, 1000, 1, true), (0.1, 1000, 2000, 4, false)],
        // the second ACK is older than the first (reordered): una stays at 1000
        &[(0.05, 1000, 2), (0.06, 500, 3), (0.3, 2000, 5)],
        &[true, false],
    )
    .expect("valid")
    .expect("rows");
    let c = cols(&b);
    assert_eq!(c.una, vec![0, 1000]);
    assert_eq!(b.acks[0].1, vec![1000, 1000, 2000]);
    assert_eq!(c.dup, vec![false, true]);
    assert_eq!(c.retx, (vec![0], vec![MISSING], vec![true]));
    // the named row is no sample (Karn): only 0.1 -> 0.3
    assert!((b.min_rtt[0] - 0.2).abs() < 1e-12);
}

#[test]
fn no_rtt_without_a_later_covering_ack() {
    // the only ACK covering the segment came before it (capture order): no positive sample
    let b = run_acks(&[(1.0, 0, 1000, 2, false)], &[(0.5, 1000, 1)], &[false])
        .expect("valid")
        .expect("rows");
    assert!(b.min_rtt[0].is_nan());
    // no ACK at all: no rows
    assert!(run_acks(&[(1.0, 0, 1000, 2, false)], &[], &[false])
        .expect("valid")
        .is_none());
}

#[test]
fn segments_are_taken_in_capture_order_and_syns_counted() {
    // frame 3 was captured before frame 2 (time 0.2 < 0.3): it is the second row
    let b = run_acks(
        &[
            (0.0, 0, 1000, 1, false),
            (0.3, 2000, 3000, 2, false),
            (0.2, 1000, 2000, 3, false),
        ],
        &[(0.25, 1000, 4)],
        &[false; 3],
    )
    .expect("valid")
    .expect("rows");
    assert_eq!(b.cols.seq_end, vec![1000, 2000, 3000]);
    assert_eq!(b.cols.una, vec![0, 0, 1000]);
}

#[test]
fn bad_columns_are_errors() {
    let p = Packets {
        flow: &[0],
        dir: &[0],
        kind: &[TCP | DATA | SYN],
        time: &[0.0, 1.0],
        frame: &[1],
        seq: &[0],
        ack: &[0],
        payload: &[1],
    };
    let none = || Keys {
        flow: &[],
        dir: &[],
        frame: &[],
        ok: &[],
    };
    let fr = Frames {
        flight: none(),
        sacked: &[],
        at: &[],
        retrans: none(),
        timeouts: none(),
    };
    assert!(build(&p, (&[0], &[0], &[1.0], &[false]), &fr).is_err());
    let p = Packets { time: &[0.0], ..p };
    // directions not sorted
    assert!(build(&p, (&[1, 0], &[0, 0], &[1.0; 2], &[false; 2]), &fr).is_err());
}
