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

/// `pk` as [`Conn::on_packet`] reads it (one flow, the state made by `seq::analyze`).
fn packets(pk: &[P]) -> Vec<Pkt<'static>> {
    let n = pk.len();
    let col = |f: fn(&P) -> i64| pk.iter().map(f).collect::<Vec<i64>>();
    let (seq, ack) = (col(|p| p.2), col(|p| p.5));
    let dir: Vec<i8> = pk.iter().map(|p| p.0).collect();
    let len: Vec<u32> = pk.iter().map(|p| p.3).collect();
    let flags: Vec<u8> = pk.iter().map(|p| p.4).collect();
    let st = analyze(&Packets {
        flow: &vec![0; n],
        dir: &dir,
        seq: &seq,
        len: &len,
        flags: &flags,
        ack: &ack,
        win: &vec![M; n],
    })
    .expect("valid");
    let one = |(i, p): (usize, &P)| Pkt {
        row: i as u32,
        dir: usize::from(p.0 == 1),
        time: p.1,
        seq: p.2,
        len: i64::from(p.3),
        nxt: st.nxt[i],
        ack: p.5,
        r_hi_ack: st.r_hi_ack[i],
        flags: p.4,
        bits: st.bits[i],
        srtt: None,
        sack: p.6,
    };
    pk.iter().enumerate().map(one).collect()
}

/// What a streaming driver's first pass learns of `ps` (`stream::conn::Scout`'s rules).
fn scout(ps: &[Pkt]) -> Bounds {
    let (mut asks, mut dsacks) = ([vec![], vec![]], [vec![], vec![]]);
    let (mut last_ack, mut last_t, mut from) = ([M; 2], [None; 2], [0u32; 2]);
    for p in ps {
        let d = p.dir;
        if candidate(p.len, p.flags, p.bits, p.seq, p.nxt, last_ack[1 - d]).is_some() {
            asks[d].push(p.seq);
        }
        last_ack[d] = p.ack;
        dsacks[1 - d].extend(dsack_block(p.ack, p.sack).map(|b| b.0));
        if last_t[d].is_some_and(|t| falls(t, p.time)) {
            from[d] = p.row;
        }
        last_t[d] = Some(p.time);
    }
    Bounds {
        resent: asks.map(Uses::new),
        dsacked: Some(dsacks.map(Uses::new)),
        rising_from: from,
    }
}

/// Fed to the whole state and to the bounded one, `pk` gets the same verdict at every packet:
/// the verdicts, the most entries each kept at once (sent log, re-sends, holes: whole and
/// bounded) and what the bounded one still holds at the end.
fn both(pk: &[P], ooo_s: f64) -> (Vec<Verdict>, [[usize; 2]; 3], [usize; 3]) {
    let ps = packets(pk);
    let mut all = Conn::new(ooo_s, 0.2);
    let mut some = Conn::new(ooo_s, 0.2).bounded(scout(&ps));
    let (mut out, mut most) = (vec![], [[0; 2]; 3]);
    let sum = |c: &Conn| {
        c.sizes()
            .iter()
            .fold([0; 3], |a, s| [a[0] + s[0], a[1] + s[1], a[2] + s[2]])
    };
    for p in &ps {
        let v = all.on_packet(p);
        assert_eq!(v, some.on_packet(p), "row {}", p.row);
        out.push(v);
        for (k, x) in [sum(&all), sum(&some)].into_iter().enumerate() {
            for j in 0..3 {
                most[j][k] = most[j][k].max(x[j]);
            }
        }
    }
    (out, most, sum(&some))
}

/// Re-sends looked up again, D-SACKs (RFC 2883) naming re-sends once, twice, after a later
/// re-send of the start, and naming bytes never re-sent: the same verdicts, and the bounded
/// state drops each entry after its last look-up.
#[test]
fn the_bounded_state_answers_as_the_whole_one_on_resends_and_dsacks() {
    let mut pk = start(6);
    pk.push((0, 0.400, 1, 1000, A, 1, &[])); // rto at 1
    pk.push((0, 0.401, 2001, 1000, A, 1, &[])); // and at 2001
    pk.push((1, 0.410, 1, 0, A, 3001, &[]));
    pk.push((1, 0.420, 1, 0, A, 3001, &[(1, 1001)])); // D-SACK: 1 spurious
    pk.push((1, 0.421, 1, 0, A, 3001, &[(1, 1001)])); // again: nothing more
    pk.push((0, 0.900, 3001, 1000, A, 1, &[])); // rto at 3001, twice
    pk.push((0, 1.500, 3001, 1000, A, 1, &[]));
    pk.push((1, 1.510, 1, 0, A, 4001, &[(3001, 4001)])); // the later one spurious
    pk.push((1, 1.520, 1, 0, A, 4001, &[(2001, 2500)])); // does not cover 2001..3001
    pk.push((1, 1.530, 1, 0, A, 4001, &[(5001, 6001), (4001, 7001)])); // inside: never re-sent
    pk.push((0, 1.540, 2001, 1000, A, 1, &[])); // acknowledged: spurious
    pk.push((1, 1.550, 1, 0, A, 7001, &[(2001, 3001)]));
    let (v, most, end) = both(&pk, 0.01);
    let kinds: Vec<_> = v.iter().filter_map(|v| v.retrans.map(|r| r.0)).collect();
    assert_eq!(kinds, [RTO, RTO, RTO, RTO, SPURIOUS]);
    let flipped: Vec<_> = v.iter().filter_map(|v| v.spurious_now).collect();
    assert_eq!(flipped, [(9, RTO), (15, RTO)]);
    assert_eq!(end, [0, 0, 0]);
    assert!(
        most[0][1] < most[0][0] && most[1][1] <= most[1][0],
        "{most:?}"
    );
}

/// Holes (Wireshark's out-of-order rule) dropped once the window has passed for good: the
/// same verdicts while times rise, and while they go back (no hole is dropped before the
/// last fall).
#[test]
fn the_bounded_state_drops_only_holes_no_later_packet_can_take() {
    let mut pk = start(0);
    let mut t = 0.020;
    for k in 0..40i64 {
        // each round: a segment, one skipped (a hole), the next, then the skipped one
        // soon (out of order) or late (re-sent)
        let s = 1 + 3000 * k;
        t += 0.001;
        pk.push((0, t, s, 1000, A, 1, &[]));
        pk.push((0, t + 0.0001, s + 2000, 1000, A, 1, &[]));
        let late = if k % 3 == 0 { 0.02 } else { 0.002 };
        pk.push((0, t + late, s + 1000, 1000, A, 1, &[]));
        t += 0.021;
    }
    let (v, most, end) = both(&pk, 0.01);
    assert_eq!(v.iter().filter(|v| v.retrans.is_some()).count(), 14);
    assert!(
        most[2][0] == 40 && most[2][1] <= 2 && end[2] <= 1,
        "{most:?} {end:?}"
    );
    // a time going back near the end: a hole 30 ms old is taken as out of order again
    let n = pk.len();
    pk.push((0, 0.020, 1 + 3000 * 40 + 2000, 1000, A, 1, &[]));
    pk.push((0, 0.021, 1 + 3000 * 40 + 1000, 1000, A, 1, &[]));
    pk.push((0, pk[5].1 + 0.003, 1 + 1000, 10, A, 1, &[])); // back into the first round
    let (w, most, _) = both(&pk, 0.01);
    assert_eq!(w[..n], v[..]);
    assert!(most[2][1] == 41, "{most:?}"); // nothing dropped before the last fall
}

/// Pseudo-random traces (re-sends at random starts, ACKs with SACK and D-SACK blocks, times
/// that sometimes go back): the bounded state always answers as the whole one.
#[test]
fn the_bounded_state_answers_as_the_whole_one_on_random_traces() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    const BLOCKS: [&[(i64, i64)]; 5] = [
        &[],
        &[(1, 1001)],
        &[(2001, 3001)],
        &[(4001, 5001), (3001, 6001)],
        &[(6001, 7001)],
    ];
    for _ in 0..200 {
        let mut pk = start(0);
        let mut t = 0.02;
        for _ in 0..60 {
            t += [0.001, 0.002, 0.005, 0.03, 0.001, 0.3, 0.001, -0.05][next(8) as usize];
            let k = next(12) as i64;
            if next(3) == 0 {
                let b = BLOCKS[next(5) as usize];
                pk.push((1, t, 1, 0, A, 1 + 1000 * next(8) as i64, b));
            } else {
                pk.push((0, t, 1 + 1000 * k, 1000, A, 1, &[]));
            }
        }
        let (_, _, end) = both(&pk, 0.01);
        assert_eq!(end[..2], [0, 0]);
    }
}
