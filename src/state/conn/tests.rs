//! Hand-checked sequences for the connection table.

use super::*;

const A: i64 = (1 << 16) | 40000; // address 1, port 40000
const B: i64 = (2 << 16) | 80; // address 2, port 80

fn tcp(src: i64, dst: i64, flags: u8, seq: u32, ack: u32) -> Packet {
    Packet {
        src,
        dst,
        tcp: true,
        flags,
        seq,
        ack,
        ..Packet::default()
    }
}

fn ws(mut p: Packet, w: u8) -> Packet {
    p.wscale = Some(w);
    p
}

#[test]
fn handshake_counts_from_the_isn() {
    let mut t = Table::default();
    let syn = t.on_packet(&ws(tcp(A, B, SYN, 1000, 0), 7));
    let synack = t.on_packet(&ws(tcp(B, A, SYN | ACK, 5000, 1001), 2));
    let data = t.on_packet(&tcp(A, B, ACK, 1001, 5001));
    let back = t.on_packet(&tcp(B, A, ACK, 5001, 1101));
    assert_eq!((syn.seq, syn.ack), (0, None));
    assert_eq!((synack.seq, synack.ack), (0, Some(1)));
    assert_eq!((data.seq, data.ack), (1, Some(1)));
    assert_eq!((back.seq, back.ack), (1, Some(101)));
    assert!([synack.flow, data.flow, back.flow].iter().all(|&f| f == 0));
    let s = t.settle();
    // A is the lower endpoint (side true) and sent the SYN: direction 0
    assert_eq!(s.dir(0, syn.side), 0);
    assert_eq!(s.dir(0, synack.side), 1);
    assert_eq!((s.shift(0, syn.side), s.shift(0, synack.side)), (7, 2));
}

#[test]
fn without_the_syn_the_first_byte_is_one() {
    let mut t = Table::default();
    // the capture starts mid-connection: B's ACK comes before any segment of A
    let ack = t.on_packet(&tcp(B, A, ACK, 7000, 300));
    let data = t.on_packet(&tcp(A, B, ACK, 300, 7000));
    assert_eq!((ack.seq, ack.ack), (1, Some(1)));
    assert_eq!((data.seq, data.ack), (1, Some(1)));
    // an ACK of data sent before the captured start is negative, not near 2^32
    let old = t.on_packet(&tcp(B, A, ACK, 7000, 200));
    assert_eq!(old.ack, Some(-99));
    // no pure SYN: the first packet's sender is the initiator
    assert_eq!(t.settle().dir(0, ack.side), 0);
}

#[test]
fn numbers_are_unwrapped_past_four_gib() {
    let mut t = Table::default();
    let isn = u32::MAX - 99;
    t.on_packet(&tcp(A, B, SYN, isn, 0));
    let before = t.on_packet(&tcp(A, B, ACK, isn.wrapping_add(1), 1));
    let after = t.on_packet(&tcp(A, B, ACK, 500, 1)); // past 2^32
    let late = t.on_packet(&tcp(A, B, ACK, u32::MAX, 1)); // a retransmission from before
    let again = t.on_packet(&tcp(A, B, ACK, 600, 1));
    assert_eq!(before.seq, 1);
    assert_eq!(after.seq, 100 + 500);
    assert_eq!(late.seq, 99);
    assert_eq!(again.seq, 700);
    // more than 2^32 ahead: the second lap
    for k in 1..=4u32 {
        t.on_packet(&tcp(A, B, ACK, 600u32.wrapping_add(k << 30), 1));
    }
    let far = t.on_packet(&tcp(A, B, ACK, 600 + 1000, 1));
    assert_eq!(far.seq, 700 + (1 << 32) + 1000);
}

#[test]
fn a_reused_port_pair_is_a_new_connection() {
    let mut t = Table::default();
    let a = t.on_packet(&tcp(A, B, SYN, 100, 0));
    let retx = t.on_packet(&tcp(A, B, SYN, 100, 0)); // retransmitted SYN: same connection
    t.on_packet(&tcp(B, A, SYN | ACK, 900, 101));
    t.on_packet(&tcp(A, B, FIN_ACK, 101, 901));
    let reuse = t.on_packet(&tcp(A, B, SYN, 5555, 0));
    let answer = t.on_packet(&tcp(B, A, SYN | ACK, 77, 5556));
    let stray = t.on_packet(&tcp(B, A, SYN, 1234, 0)); // B has a first segment (the SYN-ACK)
    assert_eq!((a.flow, retx.flow), (0, 0));
    assert_eq!((reuse.flow, answer.flow), (1, 1));
    assert_eq!((reuse.seq, answer.seq, answer.ack), (0, 0, Some(1)));
    assert_eq!(stray.flow, 2);
    // a pure SYN whose sender has no segment yet in the connection does not split it
    let mut u = Table::default();
    u.on_packet(&tcp(B, A, SYN | ACK, 900, 101));
    let late_syn = u.on_packet(&tcp(A, B, SYN, 100, 0));
    assert_eq!(late_syn.flow, 0);
    // and the SYN's sender is the initiator although the SYN-ACK came first
    let s = u.settle();
    assert_eq!(s.dir(0, late_syn.side), 0);
    assert_eq!(s.dir(0, !late_syn.side), 1);
}

const FIN_ACK: u8 = 0x11;

#[test]
fn udp_and_tcp_of_one_port_pair_are_two_connections() {
    let mut t = Table::default();
    let tc = t.on_packet(&tcp(A, B, ACK, 10, 10));
    let ud = t.on_packet(&Packet {
        src: B,
        dst: A,
        udp: true,
        ..Packet::default()
    });
    assert_eq!((tc.flow, ud.flow), (0, 1));
    assert_eq!((ud.seq, ud.ack), (0, None));
}

#[test]
fn window_scaling_needs_both_syns() {
    let mut t = Table::default();
    t.on_packet(&ws(tcp(A, B, SYN, 1, 0), 7));
    t.on_packet(&tcp(B, A, SYN | ACK, 1, 2)); // no option: RFC 7323 §2.2, no scaling
    let s = t.settle();
    assert_eq!((s.shift(0, true), s.shift(0, false)), (0, 0));
    // the other SYN not captured: agreement is assumed
    let mut u = Table::default();
    u.on_packet(&ws(tcp(A, B, SYN, 1, 0), 20)); // clamped to 14 (RFC 7323 §2.3)
    assert_eq!(u.settle().shift(0, true), 14);
}

#[test]
fn sack_edges_lie_in_the_acks_lap() {
    // base 1000; edges above the ACK, the ACK past 2^32 after unwrapping
    assert_eq!(sack_edge(3000, 1000, 1000), 2000);
    assert_eq!(sack_edge(3000, 1000, (1 << 32) + 1000), (1 << 32) + 2000);
    // an edge just below the base (data from before the capture) is negative
    assert_eq!(sack_edge(900, 1000, 1), -100);
}

#[test]
fn columns_settle_direction_window_and_sack() {
    // rows: SYN-ACK from B first, then A's SYN, an ICMP row, A's ACK with a SACK block
    let src = [2u32, 1, 0, 1];
    let dst = [1u32, 2, 0, 2];
    let sport = [80i32, 40000, 0, 40000];
    let dport = [40000i32, 80, 0, 80];
    let c = Columns {
        src: Ints::U32(&src),
        dst: Ints::U32(&dst),
        sport: Ints::I32(&sport),
        dport: Ints::I32(&dport),
        l4: &[true, true, false, true],
        tcp: &[true, true, false, true],
        udp: &[false; 4],
        flags: &[SYN | ACK, SYN, 0, ACK],
        seq: &[5000, 1000, 0, 1001],
        ack: &[1001, 0, 0, 5001],
        win: Ints::U16(&[100, 200, 0, 300]),
        wscale: &[3, 4, 0, 0],
        wscale_ok: &[true, true, false, false],
        sack_row: &[3],
        sack_left: &[7001],
        sack_right: &[8001],
    };
    let o = number(&c).expect("valid columns");
    assert_eq!(o.nflows, 1);
    assert_eq!(o.dir, [1, 0, 0, 0]);
    assert_eq!(o.seq, [0, 0, 0, 1]);
    assert_eq!(o.ack, [1, 0, 0, 1]);
    assert_eq!(o.win, [100, 200, 0, 300 << 4]);
    assert_eq!((o.sack_left[0], o.sack_right[0]), (2001, 3001));
    let bad = Columns {
        sack_row: &[9],
        ..c
    };
    assert!(number(&bad).is_err());
}
