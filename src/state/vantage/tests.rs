//! Hand-checked handshakes and data directions.

use super::*;

const SA: u8 = SYN | ACK;

/// Feeds `(dir, time, payload, flags)` packets to one connection's accumulator.
fn feed(pkts: &[(usize, f64, i64, u8)]) -> FlowVantage {
    let mut v = FlowVantage::default();
    for &(d, t, n, f) in pkts {
        v.on_packet(d, t, n, f);
    }
    v
}

/// A handshake (SYN at 0, SYN-ACK at `t1`, ACK at `t2`) then data from the initiator.
fn handshake(t1: f64, t2: f64) -> FlowVantage {
    feed(&[
        (0, 0.0, 0, SYN),
        (1, t1, 0, SA),
        (0, t2, 0, ACK),
        (0, t2 + 0.001, 1000, ACK),
    ])
}

#[test]
fn at_the_initiator_the_ack_follows_the_synack_at_once() {
    // 100 ms round trip, the ACK 50 us after the SYN-ACK: next to the initiator (the sender)
    let v = handshake(0.1, 0.10005);
    assert_eq!(v.near(), Some(1.0));
    assert_eq!(v.point(None), Some(Point::Sender));
}

#[test]
fn at_the_responder_the_synack_follows_the_syn_at_once() {
    // the SYN-ACK 50 us after the SYN, the ACK 100 ms later: next to the responder
    let v = handshake(0.00005, 0.10005);
    assert_eq!(v.near(), Some(0.0));
    assert_eq!(v.point(None), Some(Point::Receiver));
}

#[test]
fn in_the_middle_both_delays_are_long() {
    // 40 ms then 60 ms: neither under a tenth of 100 ms nor under 0.5 ms
    let v = handshake(0.04, 0.1);
    assert_eq!(v.near(), Some(0.5));
    assert_eq!(v.point(None), Some(Point::Middle));
}

#[test]
fn both_quick_the_shorter_one_wins() {
    // loopback: 0.1 ms and 0.3 ms, both under 0.5 ms; h1 < h2, so the responder's side
    let v = handshake(0.0001, 0.0004);
    assert_eq!(v.near(), Some(0.0));
    // 0.3 ms then 0.1 ms: the initiator's side
    let v = handshake(0.0003, 0.0004);
    assert_eq!(v.near(), Some(1.0));
}

#[test]
fn the_data_direction_decides_sender_and_receiver() {
    // next to the initiator, but the responder sends the data: the capture is at the receiver
    let v = feed(&[
        (0, 0.0, 0, SYN),
        (1, 0.1, 0, SA),
        (0, 0.10005, 0, ACK),
        (1, 0.2, 1000, ACK),
    ]);
    assert_eq!(v.data_dir(), Some((1, 1000)));
    assert_eq!(v.point(None), Some(Point::Receiver));
}

#[test]
fn an_ack_before_the_synack_is_not_the_third_packet() {
    // a pure ACK of the initiator before any SYN-ACK (a stray one) is not timed
    let v = feed(&[
        (0, 0.0, 0, SYN),
        (0, 0.05, 0, ACK),
        (1, 0.1, 0, SA),
        (0, 0.3, 1000, ACK),
    ]);
    assert_eq!(v.ack3, 0.3);
    // a SYN-ACK from the initiator or a SYN from the responder take no part
    let v = feed(&[(0, 0.0, 0, SA), (1, 0.0, 0, SYN), (0, 0.1, 10, ACK)]);
    assert_eq!(v.near(), None);
}

#[test]
fn without_a_handshake_the_median_rtt_tells() {
    let v = feed(&[(0, 1.0, 1000, ACK), (1, 1.1, 0, ACK)]);
    assert_eq!(v.near(), None);
    assert_eq!(v.point(Some(0.001)), Some(Point::Receiver));
    assert_eq!(v.point(Some(0.002)), Some(Point::Sender));
    assert_eq!(v.point(None), None);
}

#[test]
fn no_payload_no_vantage_point() {
    let v = feed(&[(0, 0.0, 0, SYN), (1, 0.1, 0, SA), (0, 0.10005, 0, ACK)]);
    assert_eq!(v.data_dir(), Some((0, 0)));
    assert_eq!(v.point(Some(0.001)), None);
    assert_eq!(FlowVantage::default().data_dir(), None);
}

#[test]
fn median_interpolates_like_polars() {
    assert_eq!(median(&mut []), None);
    assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
}

#[test]
fn trace_columns_give_flows_in_order() {
    let p = Packets {
        flow: &[7, 7, 3, 7, 3, 9],
        dir: &[0, 1, 0, 0, 1, 0],
        keep: &[true, true, true, true, true, false],
        time: &[0.0, 0.1, 0.0, 0.10005, 0.5, 0.0],
        payload: &[0, 0, 500, 1000, 0, 100],
        flags: &[SYN, SA, ACK, ACK, ACK, ACK],
        ttl: &[],
    };
    // connection 3: no handshake; its data direction's seq samples 1, 3 ms (median 2 ms)
    let s = Samples {
        flow: &[3, 3, 3, 3],
        dir: &[0, 0, 0, 1],
        rtt: &[0.001, 0.003, 0.0001, 0.0001],
        seq: &[true, true, false, true],
    };
    let (flows, points) = vantage_points(&p, &s).unwrap();
    assert_eq!(flows, vec![3, 7]);
    assert_eq!(points, vec![Some(Point::Sender), Some(Point::Sender)]);
    let bad = Packets {
        dir: &[0, 2, 0, 0, 1, 0],
        ..p
    };
    assert!(vantage_points(&bad, &s).is_err());
}

/// A sub-millisecond handshake (SYN-ACK 20 us after the SYN, the ACK 38 us after it) whose
/// shorter delay is the responder's, with each side's TTLs.
fn quick(ttl0: &[u8], ttl1: &[u8]) -> FlowVantage {
    let mut v = handshake(0.000020, 0.000058);
    for &t in ttl0 {
        v.on_ttl(0, t);
    }
    for &t in ttl1 {
        v.on_ttl(1, t);
    }
    v
}

#[test]
fn on_a_sub_millisecond_handshake_the_ttl_tells_the_near_side() {
    // samples/linux/kernel/bbr: initiator 64 (sent here), responder 63 (one router away)
    let v = quick(&[64, 64], &[63, 63]);
    assert_eq!(v.ttl_near(), Some(0));
    assert_eq!(v.point(None), Some(Point::Sender));
    // the same handshake next to the responder (Windows, 128; the initiator one hop away)
    assert_eq!(quick(&[63], &[128]).point(None), Some(Point::Receiver));
    // without TTLs, bridged (both initial), both lowered or a side changing: the delays decide
    for (a, b) in [
        (&[][..], &[][..]),
        (&[64], &[64]),
        (&[63], &[62]),
        (&[64, 63], &[63]),
    ] {
        let v = quick(a, b);
        assert_eq!(v.ttl_near(), None, "{a:?} {b:?}");
        assert_eq!(v.point(None), Some(Point::Receiver)); // the shorter delay, the responder's
    }
    // 0 is no TTL; a handshake of 100 ms is the delays' call even against the TTLs
    assert_eq!(quick(&[0], &[63]).ttl_near(), None);
    let mut far = handshake(0.00005, 0.10005);
    far.on_ttl(0, 64);
    far.on_ttl(1, 63);
    assert_eq!(far.point(None), Some(Point::Receiver));
}

#[test]
fn a_race_of_two_hosts_defers_to_a_slow_ack_median() {
    // a bridged path: the SYN-ACK 20 us after the SYN, the ACK 38 us after it; no TTLs
    let v = handshake(0.00002, 0.000058);
    assert!(v.host_delays_only() && v.needs_median());
    assert_eq!(v.near(), Some(0.0));
    // the ACKs came 6 ms after their data: not sent here, so the capture is at the sender
    assert_eq!(v.point(Some(0.006)), Some(Point::Sender));
    // ACKs 50 us after their data (or no sample): the handshake's answer stands
    assert_eq!(v.point(Some(0.00005)), Some(Point::Receiver));
    assert_eq!(v.point(None), Some(Point::Receiver));
    // TTLs that tell, or a round trip that is not two host delays, need no median
    let mut t = handshake(0.00002, 0.000058);
    t.on_ttl(0, 64);
    t.on_ttl(1, 61);
    assert!(!t.host_delays_only() && !t.needs_median());
    assert_eq!(t.point(Some(0.006)), Some(Point::Sender));
    let slow = handshake(0.00005, 0.10005);
    assert!(!slow.needs_median());
    assert_eq!(slow.point(Some(0.006)), Some(Point::Receiver));
}
