//! Hand-checked sequences for the per-direction rules.

use super::*;

/// Packets of one flow as (dir, seq, len, flags, ack, win).
fn run(pk: &[(i8, i64, u32, u8, i64, i64)]) -> State {
    let flow = vec![0u32; pk.len()];
    let dir: Vec<i8> = pk.iter().map(|p| p.0).collect();
    let seq: Vec<i64> = pk.iter().map(|p| p.1).collect();
    let len: Vec<u32> = pk.iter().map(|p| p.2).collect();
    let flags: Vec<u8> = pk.iter().map(|p| p.3).collect();
    let ack: Vec<i64> = pk.iter().map(|p| p.4).collect();
    let win: Vec<i64> = pk.iter().map(|p| p.5).collect();
    let p = Packets {
        flow: &flow,
        dir: &dir,
        seq: &seq,
        len: &len,
        flags: &flags,
        ack: &ack,
        win: &win,
    };
    analyze(&p).expect("valid input")
}

const A: u8 = ACK;

#[test]
fn handshake_data_and_acks() {
    let st = run(&[
        (0, 0, 0, SYN, MISSING, 100),
        (1, 0, 0, SYN | A, 1, 100),
        (0, 1, 0, A, 1, 100),
        (0, 1, 10, A, 1, 100),
        (0, 11, 10, A, 1, 100),
        (1, 1, 0, A, 21, 100),
    ]);
    // nextseq before each packet: the SYN takes one sequence number
    assert_eq!(st.nxt, vec![MISSING, MISSING, 1, 1, 11, 1]);
    assert_eq!(st.hi_dend, vec![MISSING, MISSING, MISSING, 11, 21, MISSING]);
    assert_eq!(st.r_i, vec![-1, 0, 1, 1, 1, 4]);
    assert_eq!(st.r_hi_ack[5], 1);
    assert_eq!(st.r_hi_ack[2], 1);
    assert_eq!(group_keys(&st.g).order, vec![0, 2, 3, 4, 1, 5]);
    let b = |i: usize| st.bits[i];
    assert_eq!(b(0), ADV);
    assert_eq!(b(3), NEW | ADV);
    assert_eq!(b(4), NEW | ADV);
    assert_eq!(b(5), NEW_ACK);
    assert_eq!(b(2) & NEW_ACK, NEW_ACK);
}

#[test]
fn gap_retransmission_and_dup_acks() {
    let st = run(&[
        (0, 1, 10, A, 1, 100),
        (0, 21, 10, A, 1, 100), // bytes 11..21 never seen: a gap
        (1, 1, 0, A, 11, 50),
        (1, 1, 0, A, 11, 50),   // same ACK, same window, no data: duplicate
        (0, 11, 10, A, 1, 100), // retransmission fills the hole: not new, not adv
        (1, 1, 0, A, 31, 50),
    ]);
    assert_eq!(st.bits[1], GAP | NEW | ADV);
    assert_eq!(st.bits[3], DUP);
    assert_eq!(st.bits[4], 0);
    assert_eq!(st.nxt[4], 31);
    assert_eq!(st.hi_dend[4], 31);
    assert_eq!(st.bits[5], NEW_ACK);
}

#[test]
fn zero_window_probe() {
    let st = run(&[
        (0, 1, 10, A, 1, 100),
        (1, 1, 0, A, 11, 0),   // zero window
        (0, 11, 1, A, 1, 100), // probe: 1 byte at nextseq, does not advance it
        (0, 11, 1, A, 1, 100), // a probe again, not a retransmission
        (1, 1, 0, A, 11, 100),
    ]);
    assert_eq!(st.bits[2], ZWP | NEW);
    assert_eq!(st.bits[3], ZWP);
    assert_eq!(st.nxt[3], 11);
    assert_eq!(st.nxt[4], 1);
}

#[test]
fn keepalive_and_its_ack() {
    let st = run(&[
        (0, 1, 10, A, 1, 100),
        (1, 1, 0, A, 11, 100),
        (0, 10, 0, A, 1, 100), // keep-alive: nextseq - 1, no data
        (1, 1, 0, A, 11, 100), // its ACK: same ACK and window, but not a duplicate ACK
        (1, 1, 0, A, 11, 100), // a duplicate ACK (its peer packet is no keep-alive... still row 2)
    ]);
    assert_eq!(st.bits[2], KEEPALIVE);
    assert_eq!(st.bits[3] & DUP, 0);
    // row 4's latest peer packet is still the keep-alive: not a duplicate either
    assert_eq!(st.bits[4] & DUP, 0);
}

#[test]
fn bad_input_is_an_error() {
    let flow = [0u32, 0];
    let p = Packets {
        flow: &flow,
        dir: &[0, 2],
        seq: &[0, 0],
        len: &[0, 0],
        flags: &[0, 0],
        ack: &[0, 0],
        win: &[0, 0],
    };
    assert!(analyze(&p).unwrap_err().contains("dir 2"));
    let p = Packets {
        flow: &flow,
        dir: &[0],
        seq: &[0, 0],
        len: &[0, 0],
        flags: &[0, 0],
        ack: &[0, 0],
        win: &[0, 0],
    };
    assert!(analyze(&p).unwrap_err().contains("column dir"));
}

#[test]
fn sparse_flow_ids() {
    let flow = [4_000_000_000u32, 7, 4_000_000_000];
    let p = Packets {
        flow: &flow,
        dir: &[1, 0, 0],
        seq: &[0, 0, 0],
        len: &[5, 5, 5],
        flags: &[0, 0, 0],
        ack: &[MISSING; 3],
        win: &[MISSING; 3],
    };
    let st = analyze(&p).expect("valid");
    assert_eq!(group_keys(&st.g).order, vec![1, 2, 0]);
    assert_eq!(st.r_i, vec![-1, -1, 0]);
}

#[test]
fn stray_syn_ack_never_moves_the_sequence_state() {
    let st = run(&[
        (0, 0, 0, SYN, MISSING, 100),
        (1, 0, 0, SYN | A, 1, 100),
        (0, 1, 100, A, 1, 100),
        (1, 1, 0, A, 101, 100),
        (1, 99_000_000, 0, SYN | A, 1, 100), // another ISN: far outside the sequence space
        (0, 101, 100, A, 1, 100),
        (1, 1, 0, A, 201, 100),
    ]);
    assert_eq!(st.bits[4], STRAY);
    assert_eq!(st.nxt[6], 1);
    assert_eq!(st.bits[6], NEW_ACK);
    assert_eq!(st.r_hi_ack[5], 101);
}

#[test]
fn interleaved_flows_keep_their_own_state_and_sparse_ids_give_the_same() {
    // two connections, their packets interleaved; flow ids 0/1, then ids far apart (the map)
    let pk: [(u32, i8, i64, u32, u8, i64); 8] = [
        (0, 0, 1, 10, A, 1),
        (1, 0, 1, 20, A, 1),
        (0, 1, 1, 0, A, 11),
        (0, 0, 11, 10, A, 1),
        (1, 1, 1, 0, A, 21),
        (1, 0, 41, 20, A, 1), // skips 21..41 of flow 1 only
        (0, 1, 1, 0, A, 11),  // a duplicate ACK of flow 0
        (0, 1, 1, 0, A, 11),
    ];
    let state = |ids: [u32; 2]| {
        let flow: Vec<u32> = pk.iter().map(|p| ids[p.0 as usize]).collect();
        let dir: Vec<i8> = pk.iter().map(|p| p.1).collect();
        let seq: Vec<i64> = pk.iter().map(|p| p.2).collect();
        let len: Vec<u32> = pk.iter().map(|p| p.3).collect();
        let flags: Vec<u8> = pk.iter().map(|p| p.4).collect();
        let ack: Vec<i64> = pk.iter().map(|p| p.5).collect();
        let win = vec![100i64; pk.len()];
        let p = Packets {
            flow: &flow,
            dir: &dir,
            seq: &seq,
            len: &len,
            flags: &flags,
            ack: &ack,
            win: &win,
        };
        analyze(&p).expect("valid")
    };
    let st = state([0, 1]);
    assert_eq!(group_keys(&st.g).order, vec![0, 3, 2, 6, 7, 1, 5, 4]);
    assert_eq!(st.r_i, vec![-1, -1, 0, 2, 1, 4, 3, 3]);
    assert_eq!(
        st.nxt,
        vec![MISSING, MISSING, MISSING, 11, MISSING, 21, 1, 1]
    );
    assert_eq!(st.bits[5], GAP | NEW | ADV);
    assert_eq!(st.bits[3], NEW | ADV);
    assert_eq!((st.bits[6] & DUP, st.bits[7] & DUP), (DUP, DUP));
    assert_eq!(st.r_hi_ack, vec![MISSING, MISSING, 1, 11, 1, 21, 1, 1]);
    let sparse = state([3_000_000_000, 4_000_000_000]);
    assert_eq!(group_keys(&sparse.g).order, group_keys(&st.g).order);
    assert_eq!(sparse.nxt, st.nxt);
    assert_eq!(sparse.hi_dend, st.hi_dend);
    assert_eq!(sparse.bits, st.bits);
    assert_eq!(sparse.r_i, st.r_i);
    assert_eq!(sparse.r_hi_ack, st.r_hi_ack);
    assert_eq!(sparse.r_win, st.r_win);
}
