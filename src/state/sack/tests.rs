//! Hand-checked sequences for the SACK scoreboard and the flight columns.

use super::*;
use crate::state::seq::{analyze, ACK, FIN};

const A: u8 = ACK;
const M: i64 = MISSING;

/// (dir, seq, len, flags, ack, SACK blocks)
type Pk<'a> = (i8, i64, u32, u8, i64, &'a [(i64, i64)]);

/// Packets of one flow as (dir, seq, len, flags, ack, SACK blocks): the flight columns.
fn run(pk: &[Pk]) -> FlightColumns {
    run_flows(&vec![0; pk.len()], pk)
}

/// [`run`] with each packet's connection id.
fn run_flows(flow: &[u32], pk: &[Pk]) -> FlightColumns {
    let dir: Vec<i8> = pk.iter().map(|p| p.0).collect();
    let seq: Vec<i64> = pk.iter().map(|p| p.1).collect();
    let len: Vec<u32> = pk.iter().map(|p| p.2).collect();
    let flags: Vec<u8> = pk.iter().map(|p| p.3).collect();
    let ack: Vec<i64> = pk.iter().map(|p| p.4).collect();
    let win = vec![1000i64; pk.len()];
    let p = Packets {
        flow,
        dir: &dir,
        seq: &seq,
        len: &len,
        flags: &flags,
        ack: &ack,
        win: &win,
    };
    let bits = analyze(&p).expect("valid").bits;
    let (mut row, mut left, mut right) = (vec![], vec![], vec![]);
    for (i, p) in pk.iter().enumerate() {
        for &(l, r) in p.5 {
            row.push(i as i64);
            left.push(l);
            right.push(r);
        }
    }
    let bl = Blocks {
        row: &row,
        left: &left,
        right: &right,
    };
    flight_columns(&p, &bits, &bl).expect("valid")
}

const NO: &[(i64, i64)] = &[];

#[test]
fn latest_blocks_are_subtracted_and_the_scoreboard_keeps_all() {
    // 1..1001 and 3001..4001 lost; the receiver reports 1001..3001, then 4001..7001 only
    let mut pk: Vec<Pk> = (0..7).map(|k| (0, 1 + 1000 * k, 1000, A, 1, NO)).collect();
    pk.push((1, 1, 0, A, 1, &[(1001, 3001)]));
    pk.push((1, 1, 0, A, 1, &[(4001, 7001)]));
    pk.push((0, 7001, 1000, A, 1, NO));
    let c = run(&pk);
    assert_eq!(c.unacked[7], 8000);
    assert_eq!(c.flight[7], 8000 - 3000); // Wireshark: only the latest ACK's block
    assert_eq!(c.pipe[7], 8000 - 5000); // both blocks
    assert_eq!(c.unacked[0], M); // no ACK from the peer yet
                                 // which segments, and from when: data packets 1-2 (1001..3001) by the ACK at row 7, 4-6 by
                                 // the one at row 8 (seven data packets up to either); so data packet 7 sees them all
    assert_eq!(c.sacked_at, vec![M, 7, 7, M, 7, 7, 7, M]);
}

#[test]
fn no_ack_from_the_peer_gives_no_outstanding_data() {
    let c = run(&[(0, 1, 100, A, 1, NO), (0, 101, 100, A, 1, NO)]);
    assert_eq!(c.unacked, vec![M, M]);
    assert_eq!(c.pipe, vec![M, M]);
    assert_eq!(c.flight, vec![100, 200]);
    assert_eq!(c.sender_only, vec![true, true]);
}

#[test]
fn a_growing_block_counts_each_segment_once_and_the_ack_removes_them() {
    let c = run(&[
        (1, 1, 0, A, 1, NO),
        (0, 1, 100, A, 1, NO),
        (0, 101, 100, A, 1, NO),
        (0, 201, 100, A, 1, NO),
        (0, 301, 100, A, 1, NO),
        (1, 1, 0, A, 1, &[(101, 201)]),
        (1, 1, 0, A, 1, &[(101, 301)]), // the same hole: only 201..301 is new
        (0, 401, 100, A, 1, NO),        // 500 outstanding, 200 SACKed
        (1, 1, 0, A, 401, NO),          // the hole filled: everything below 401 leaves
        (0, 501, 100, A, 1, NO),
    ]);
    assert_eq!(c.unacked, vec![100, 200, 300, 400, 500, 200]);
    assert_eq!(c.pipe, vec![100, 200, 300, 400, 300, 200]);
    // Wireshark: list 1..501 minus the latest ACK's 200 block bytes
    assert_eq!(c.flight[4], 300);
}

#[test]
fn dsack_and_partial_blocks_mark_nothing() {
    let c = run(&[
        (1, 1, 0, A, 1, NO),
        (0, 1, 100, A, 1, NO),
        (0, 101, 100, A, 1, NO),
        (0, 201, 100, A, 1, NO),
        // a D-SACK below the ACK and a block ending inside a segment
        (1, 1, 0, A, 101, &[(1, 101), (151, 251)]),
        (0, 301, 100, A, 1, NO),
    ]);
    assert_eq!(c.unacked[3], 300);
    assert_eq!(c.pipe[3], 300); // 101..201 and 201..301 are not covered whole
    assert_eq!(c.flight[3], 300 - 200); // Wireshark subtracts both blocks' bytes
}

#[test]
fn a_segment_acked_before_it_is_sacked_is_never_counted() {
    let c = run(&[
        (1, 1, 0, A, 1, NO),
        (0, 1, 100, A, 1, NO),
        (0, 101, 100, A, 1, NO),
        // the ACK covers 1..201 and its block repeats 101..201: no SACKed bytes
        (1, 1, 0, A, 201, &[(101, 201), (301, 401)]),
        (0, 201, 100, A, 1, NO),
    ]);
    assert_eq!(c.unacked[2], 100);
    assert_eq!(c.pipe[2], 100);
}

#[test]
fn syn_fin_byte_and_the_range_wireshark_keeps() {
    let c = run(&[
        (1, 1, 0, A, 1, NO),
        (0, 1, 100, A | FIN, 1, NO), // data with FIN: the virtual byte is not in flight
    ]);
    assert_eq!(c.flight, vec![100]);
    // blocks larger than the list: Wireshark then shows nothing
    let c = run(&[
        (0, 1, 100, A, 1, NO),
        (1, 1, 0, A, 1, &[(1001, 5001)]),
        (0, 101, 100, A, 1, NO),
    ]);
    assert_eq!(c.flight, vec![100, M]);
    assert_eq!(c.sender_only, vec![true, false]);
}

#[test]
fn bad_block_rows_are_an_error() {
    let flow = [0u32];
    let p = Packets {
        flow: &flow,
        dir: &[0],
        seq: &[1],
        len: &[10],
        flags: &[A],
        ack: &[1],
        win: &[M],
    };
    let bl = Blocks {
        row: &[3],
        left: &[1],
        right: &[2],
    };
    assert!(flight_columns(&p, &[0], &bl).is_err());
    // a bits column of another length
    let ok = Blocks {
        row: &[0],
        left: &[1],
        right: &[2],
    };
    assert!(flight_columns(&p, &[0, 0], &ok).is_err());
}

#[test]
fn interleaved_connections_keep_their_own_state() {
    // one connection's 7 segments, a SACK of the 2nd, then a cumulative ACK of the 1st
    let one: Vec<Pk> = (0..7)
        .map(|k| (0, 1 + 1000 * k, 1000, A, 1, NO))
        .chain([(1, 1, 0, A, 1, &[(1001, 2001)][..]), (1, 1, 0, A, 1001, NO)])
        .collect();
    let alone = run(&one);
    // the same packets twice, alternating between connection 7 and connection 3
    let pk: Vec<Pk> = one.iter().flat_map(|&p| [p, p]).collect();
    let flow: Vec<u32> = (0..pk.len())
        .map(|i| if i % 2 == 0 { 7 } else { 3 })
        .collect();
    let both = run_flows(&flow, &pk);
    for (k, v) in alone.flight.iter().enumerate() {
        assert_eq!((both.flight[2 * k], both.flight[2 * k + 1]), (*v, *v));
        assert_eq!(both.pipe[2 * k], alone.pipe[k]);
        assert_eq!(both.unacked[2 * k + 1], alone.unacked[k]);
    }
    // the 2nd segment (data packet 1 alone; 2 and 3 here) SACKed by the 8th packet, which
    // comes after 7 data packets alone and 14 here
    assert_eq!(alone.sacked_at[1], 7);
    assert_eq!((both.sacked_at[2], both.sacked_at[3]), (14, 14));
    assert!(both
        .sacked_at
        .iter()
        .enumerate()
        .all(|(k, &v)| v == M || k == 2 || k == 3));
}

#[test]
fn edges_no_block_can_read_are_dropped_without_changing_the_scoreboard() {
    // splitmix64
    let mut s = 20_261_129u64;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let (mut pruned, mut kept) = (Scoreboard::default(), Scoreboard::default());
    kept.side.iter_mut().for_each(|x| x.prune_at = usize::MAX);
    // direction 0 sends 100-byte segments; direction 1 ACKs, SACKing holes above its ACK
    let (mut hi, mut una) = (0i64, 0i64);
    for id in 0..20_000u32 {
        let (d, p, blocks) = if next() % 2 == 0 {
            hi += 100;
            let p = Pkt {
                seq: hi - 100,
                len: 100,
                ack: MISSING,
                new: true,
                new_ack: false,
                id,
            };
            (0, p, vec![])
        } else {
            let old = una;
            if next() % 3 == 0 {
                una = (una + 100 * (next() % 4) as i64).min(hi);
            }
            let mut blocks = vec![];
            for _ in 0..next() % 3 {
                let l = una + 100 * (next() % 8) as i64;
                blocks.push((l, (l + 100 * (1 + next() % 3) as i64).min(hi.max(l + 1))));
            }
            let p = Pkt {
                seq: 0,
                len: 0,
                ack: una,
                new: false,
                new_ack: una > old,
                id,
            };
            (1, p, blocks)
        };
        pruned.on_packet(d, &p, &blocks);
        kept.on_packet(d, &p, &blocks);
        assert_eq!(pruned.side[1].sacked, kept.side[1].sacked, "packet {id}");
        assert_eq!(pruned.newly_sacked(1), kept.newly_sacked(1), "packet {id}");
    }
    // (the map holds the edges near the ACK, not one per hole ever reported)
    let (a, b) = (pruned.side[1].edges.len(), kept.side[1].edges.len());
    assert!(b > 1000 && a * 10 < b, "{a} edges kept of {b}");
}
