//! Hand-checked sequences for Wireshark's bytes in flight.

use super::*;
use crate::state::seq::analyze;

const A: u8 = ACK;

/// Packets of one flow as (dir, seq, len, flags, ack): the raw values and "sender only" of every packet.
fn run(pk: &[(i8, i64, u32, u8, i64)]) -> (Vec<i64>, Vec<bool>) {
    let flow = vec![0u32; pk.len()];
    let dir: Vec<i8> = pk.iter().map(|p| p.0).collect();
    let seq: Vec<i64> = pk.iter().map(|p| p.1).collect();
    let len: Vec<u32> = pk.iter().map(|p| p.2).collect();
    let flags: Vec<u8> = pk.iter().map(|p| p.3).collect();
    let ack: Vec<i64> = pk.iter().map(|p| p.4).collect();
    let win = vec![1000i64; pk.len()];
    let p = Packets {
        flow: &flow,
        dir: &dir,
        seq: &seq,
        len: &len,
        flags: &flags,
        ack: &ack,
        win: &win,
    };
    let bits = analyze(&p).expect("valid").bits;
    let f = flight(&p, &bits).expect("valid");
    (f.raw, f.sender_only)
}

const M: i64 = MISSING;

#[test]
fn one_way_capture_counts_every_segment_seen() {
    // a capture of one direction, starting mid-stream: no ACK ever seen
    let (raw, only) = run(&[
        (0, 1001, 100, A, 1),
        (0, 1101, 100, A, 1),
        (0, 1201, 100, A, 1),
    ]);
    assert_eq!(raw, vec![100, 200, 300]);
    assert_eq!(only, vec![true, true, true]);
}

#[test]
fn acks_trim_and_remove_segments() {
    let (raw, only) = run(&[
        (0, 1, 100, A, 1),
        (0, 101, 100, A, 1),
        (1, 1, 0, A, 51), // inside the first segment: it now starts at 51
        (0, 201, 100, A, 1),
        (1, 1, 0, A, 201), // both first segments leave
        (0, 301, 100, A, 1),
    ]);
    assert_eq!(raw, vec![100, 200, M, 250, M, 200]);
    assert_eq!(only, vec![true, true, false, false, false, false]);
}

#[test]
fn lost_segment_clears_until_the_other_side_acks() {
    let (raw, _) = run(&[
        (0, 1, 100, A, 1),
        (0, 201, 100, A, 1), // 101..201 never seen
        (0, 301, 100, A, 1),
        (1, 1, 0, A, 101),
        (0, 401, 100, A, 1), // valid again: list 201..501
    ]);
    assert_eq!(raw, vec![100, M, M, M, 300]);
}

#[test]
fn retransmission_of_acknowledged_data_stays_until_the_next_ack() {
    let (raw, _) = run(&[
        (0, 1, 100, A, 1),
        (1, 1, 0, A, 101),
        (0, 1, 100, A, 1),   // spurious retransmission: in the list again
        (0, 101, 100, A, 1), // list 1..201
        (1, 1, 0, A, 101),   // removes it
        (0, 201, 100, A, 1),
    ]);
    assert_eq!(raw, vec![100, M, 100, 200, M, 200]);
}

#[test]
fn the_list_stops_growing_at_its_limit() {
    let pk: Vec<(i8, i64, u32, u8, i64)> = (0..MAX_UNACKED as i64 + 2)
        .map(|k| (0, 1 + 10 * k, 10, A, 1))
        .collect();
    let (raw, _) = run(&pk);
    assert_eq!(raw[MAX_UNACKED - 1], 10 * MAX_UNACKED as i64);
    assert_eq!(raw[MAX_UNACKED + 1], 10 * MAX_UNACKED as i64);
}

#[test]
fn reordered_and_overlapping_segments() {
    let (raw, _) = run(&[
        (0, 1, 100, A, 1),
        (0, 201, 100, A, 1), // a gap: no value until the peer ACKs
        (1, 1, 0, A, 51),    // trims 1..101 to 51..101
        (0, 101, 100, A, 1), // the hole's segment arrives late (outside the sorted run)
        (0, 51, 200, A, 1),  // overlapping retransmission 51..251
        (1, 1, 0, A, 151),   // 51..101, 101..201 leave the list... 151..201? no: 101..201 trimmed
        (0, 301, 100, A, 1),
        (1, 1, 0, A, 401),
        (0, 401, 10, A, 1),
    ]);
    assert_eq!(raw[1], M);
    assert_eq!(raw[3], 301 - 51);
    assert_eq!(raw[4], 301 - 51);
    // after ACK 151: 101..201 -> 151..201, 51..251 -> 151..251, 201..301 stays
    assert_eq!(raw[6], 401 - 151);
    assert_eq!(raw[8], 10);
}

#[test]
fn ids_of_segments_that_left_are_reused() {
    let mut u = Unacked::default();
    u.add(1001, 1101);
    u.add(1, 101); // below the run: kept in the sets
    u.add(501, 601);
    u.ack(601); // both leave: their ids are free
    assert_eq!((u.len(), u.span()), (1, Some(100)));
    u.add(201, 301);
    u.add(101, 151);
    assert_eq!((u.len(), u.span(), u.start.len()), (3, Some(1000), 2));
    u.ack(251); // 101..151 leaves, 201..301 starts at 251
    assert_eq!(u.span(), Some(1101 - 251));
    u.ack(1101);
    assert_eq!((u.len(), u.span()), (0, None));
}
