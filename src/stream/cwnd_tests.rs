//! Unit tests of `stream::cwnd`'s batch columns.

use super::*;

fn rx(row: u32, episode: i32, kind: u8, data: bool) -> Rx {
    Rx {
        time: f64::from(row),
        episode,
        row,
        d: 0,
        kind,
        data,
    }
}

#[test]
fn sacked_from_keeps_the_order_of_the_sacking_packet_and_the_data_rows() {
    let mut c = ConnCwnd::default();
    c.sacked.push((10, 500, 0));
    // segments at rows 4 and 6, SACKed by the packets at rows 9 and 12
    c.seg.extend([(4, 9, 0), (6, 12, 0)]);
    let (keys, sacked, at) = flight(&[(3, c)]);
    assert_eq!(keys.frame, vec![4, 6, 10]);
    assert_eq!(keys.flow, vec![3; 3]);
    assert_eq!(sacked, vec![0, 0, 500]);
    // row 10 (place 2) sees row 4 SACKed (by row 9), not row 6 (by row 12)
    assert_eq!(at, vec![2, 3, -1]);
}

#[test]
fn timeouts_are_the_first_resends_of_episodes_with_an_rto() {
    let mut c = ConnCwnd::default();
    use crate::state::retrans::FAST;
    c.rx = vec![
        rx(2, 1, FAST, false),    // a SYN: no evidence
        rx(5, 2, RTO, true),      // opens a timeout
        rx(8, 2, SPURIOUS, true), // D-SACKed: no evidence
        rx(11, 3, FAST, true),
        rx(14, 4, SPURIOUS, true), // its only rto re-send D-SACKed: no timeout
    ];
    let (all, to, ev) = retrans(&[(7, c)]);
    assert_eq!(all.frame, vec![2, 5, 8, 11, 14]);
    assert_eq!(to.frame, vec![5]);
    assert_eq!(ev.of((7, 0)), &[5.0, 11.0]);
}
