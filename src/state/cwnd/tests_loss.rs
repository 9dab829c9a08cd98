//! Loss events, recoveries and the estimate's driver on small hand-checked sequences.

use super::episodes::{episodes_of, go_back_n, Cand, Episode, Finder, RowsAt, Seen};
use super::estimate::{estimate, search_left, search_right, EstRows};
use super::recoveries::{recoveries, ssthresh, Recover, Rows};
use super::stretch::cuts;
use super::{APP, HELD, RECOVERY, SLOW_START};

/// One direction's columns, owned (rows: `(time, seq, len, una)`; ACKs: `(time, cumulative ACK)`).
struct Owned {
    time: Vec<f64>,
    seq_end: Vec<i64>,
    pay: Vec<i64>,
    una: Vec<i64>,
    no: Vec<bool>,
    ack_t: Vec<f64>,
    retx: (Vec<i64>, Vec<i64>, Vec<bool>),
    acks: (Vec<f64>, Vec<i64>),
    dirs: (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>),
    syn_lost: Vec<bool>,
}

const NONE: &[i64] = &[];

impl Owned {
    fn new(rows: &[(f64, i64, i64, i64)], acks: &[(f64, i64)]) -> Self {
        let n = rows.len() as i64;
        Owned {
            time: rows.iter().map(|r| r.0).collect(),
            seq_end: rows.iter().map(|r| r.1 + r.2).collect(),
            pay: rows.iter().map(|r| r.2).collect(),
            una: rows.iter().map(|r| r.3).collect(),
            no: vec![false; rows.len()],
            ack_t: vec![f64::NAN; rows.len()],
            retx: (vec![], vec![], vec![]),
            acks: (
                acks.iter().map(|a| a.0).collect(),
                acks.iter().map(|a| a.1).collect(),
            ),
            dirs: (vec![0], vec![n], vec![0], vec![acks.len() as i64]),
            syn_lost: vec![false],
        }
    }

    fn view(&self) -> EstRows<'_> {
        EstRows {
            time: &self.time,
            seq_end: &self.seq_end,
            pay: &self.pay,
            una: &self.una,
            dup: &self.no,
            new_ack: &self.no,
            ack_t: &self.ack_t,
            sack_at: NONE,
            sack_val: NONE,
            sack_pos: NONE,
            seg_rows: NONE,
            seg_at: NONE,
            retx_rows: &self.retx.0,
            retx_hi: &self.retx.1,
            retx_timeout: &self.retx.2,
            a_time: &self.acks.0,
            a_una: &self.acks.1,
            lo: &self.dirs.0,
            hi: &self.dirs.1,
            alo: &self.dirs.2,
            ahi: &self.dirs.3,
            mss: &[1000.0],
            min_rtt: &[0.1],
            syn_lost: &self.syn_lost,
        }
    }
}

/// Rows 0..8 with re-sends at rows 2 (seq_end 2000, recovery point 5000), 4 (3000, below it)
/// and 6 (6000, point 7000; sent once snd_una reached 5000), and four ACKs.
fn resends(timeout_at_4: bool, acks: usize) -> Owned {
    let rows = [
        (0.0, 0, 1000, 0),
        (0.1, 1000, 1000, 0),
        (0.2, 1000, 1000, 1000),
        (0.3, 3000, 1000, 1000),
        (2.4, 2000, 1000, 2000),
        (2.5, 4000, 1000, 2000),
        (3.5, 5000, 1000, 5000),
        (4.5, 7000, 1000, 7000),
    ];
    let all = [(1.0, 1000), (2.0, 2000), (3.0, 5000), (4.0, 7000)];
    let mut o = Owned::new(&rows, &all[..acks]);
    o.retx = (
        vec![2, 4, 6],
        vec![5000, 5000, 7000],
        vec![false, timeout_at_4, false],
    );
    o
}

#[test]
fn retransmissions_below_the_recovery_point_join_its_event_and_a_timeout_starts_one() {
    let at = |o: &Owned, live: bool| -> Vec<(usize, f64, usize, usize)> {
        episodes_of(&o.view(), 0, (0, 8), (0, 3), live)
            .iter()
            .map(|e| (e.i, e.end, e.j_end, e.last))
            .collect()
    };
    // the second re-send is below the first's recovery point (5000): one event until ACK 5000
    // at 3.0, whose first row after is row 6; the next ends at ACK 7000 (4.0, row 7)
    let o = resends(false, 4);
    assert_eq!(at(&o, false), vec![(2, 3.0, 6, 6), (6, 4.0, 7, 7)]);
    // a timeout always starts its own event
    let o = resends(true, 4);
    assert_eq!(
        at(&o, false).iter().map(|e| e.0).collect::<Vec<_>>(),
        vec![2, 4, 6]
    );
    // never ACKed: no end (the rows' end)
    let o = resends(false, 3);
    assert_eq!(at(&o, false)[1], (6, f64::INFINITY, 8, 8));
    // re-sends out of row order or outside the direction (only a hand-made call gives them):
    // found over the whole
    for (rows, hi) in [(vec![6, 4, 2], 8), (vec![4, 0, 6], 8), (vec![2, 4, 7], 6)] {
        let mut o = resends(false, 4);
        o.retx.0 = rows;
        let v = o.view();
        let whole = episodes_of(&v, 0, (2, hi), (0, 3), false);
        assert_eq!(episodes_of(&v, 0, (2, hi), (0, 3), true), whole);
    }
    // found as a stream reads the rows: the same events
    for (to, acks) in [(false, 4), (true, 4), (false, 3), (true, 2), (false, 0)] {
        let o = resends(to, acks);
        assert_eq!(
            episodes_of(&o.view(), 0, (0, 8), (0, 3), true),
            episodes_of(&o.view(), 0, (0, 8), (0, 3), false)
        );
    }
}

/// A source that has seen the rows before `n` and the ACKs before `m` of [`resends`].
fn seen(o: &Owned, n: usize, m: usize, done: bool) -> impl Seen + '_ {
    struct S<'a>(EstRows<'a>, usize, usize, bool);
    impl RowsAt for S<'_> {
        fn time(&self, i: usize) -> f64 {
            assert!(i < self.1, "row {i} not seen");
            self.0.time(i)
        }
        fn seq_end(&self, i: usize) -> i64 {
            assert!(i < self.1, "row {i} not seen");
            self.0.seq_end(i)
        }
        fn pay(&self, i: usize) -> i64 {
            self.0.pay(i)
        }
        fn una(&self, i: usize) -> i64 {
            self.0.una(i)
        }
    }
    impl Seen for S<'_> {
        fn sacked(&self, _: usize) -> i64 {
            0
        }
        fn ack_end(&self, rp: i64) -> Option<f64> {
            let k = self.0.a_una[..self.2].partition_point(|&y| y < rp);
            if k < self.2 {
                Some(self.0.a_time[k])
            } else {
                self.3.then_some(f64::INFINITY)
            }
        }
        fn row_from(&self, t: f64) -> Option<usize> {
            let k = search_left(&self.0.time[..self.1], t);
            (k < self.1 || self.3).then_some(k)
        }
        fn row_after(&self, t: f64) -> Option<usize> {
            let k = search_right(&self.0.time[..self.1], t);
            (k < self.1 || self.3).then_some(k)
        }
    }
    S(o.view(), n, m, done)
}

#[test]
fn an_event_settles_once_the_next_has_started_and_its_end_is_seen() {
    let o = resends(false, 4);
    let c = |row: usize, seq_end: i64, hi: i64, una: i64| Cand {
        row,
        seq_end,
        hi,
        una,
        to: false,
    };
    let mut f = Finder::new(0, 0.1);
    let mut out = Vec::new();
    f.on_cand(c(2, 2000, 5000, 1000), &seen(&o, 3, 1, false));
    f.on_cand(c(4, 3000, 5000, 2000), &seen(&o, 5, 2, false));
    f.poll(&seen(&o, 5, 2, false), &mut out);
    assert!(out.is_empty(), "the first event goes on: {out:?}");
    // the re-send at row 6 starts the next event; ACK 5000 (3.0) ended the first before it
    f.on_cand(c(6, 6000, 7000, 5000), &seen(&o, 7, 3, false));
    f.poll(&seen(&o, 7, 3, false), &mut out);
    assert_eq!(
        out.iter().map(|e| (e.i, e.end, e.last)).collect::<Vec<_>>(),
        vec![(2, 3.0, 6)]
    );
    // the last waits for the direction's end
    f.poll(&seen(&o, 8, 4, false), &mut out);
    assert_eq!(out.len(), 1);
    f.end(8);
    f.poll(&seen(&o, 8, 4, true), &mut out);
    assert_eq!(out, episodes_of(&o.view(), 0, (0, 8), (0, 3), false));
}

/// Five segments of 1000 B sent from 0 with una 0, then the fast retransmission of 0 (row 5)
/// and `rest` (seq, una).
fn after_loss(rest: &[(i64, i64)]) -> Owned {
    let mut rows: Vec<(f64, i64, i64, i64)> =
        (0..5).map(|k| (k as f64, k * 1000, 1000, 0)).collect();
    rows.push((5.0, 0, 1000, 0));
    rows.extend(
        rest.iter()
            .enumerate()
            .map(|(k, &(s, u))| (6.0 + k as f64, s, 1000, u)),
    );
    Owned::new(&rows, &[])
}

#[test]
fn go_back_n_resends_beyond_the_hole_contiguously() {
    // Tahoe: 1000, 2000, 3000, 4000 re-sent from snd_una, then new data
    let o = after_loss(&[
        (1000, 1000),
        (2000, 1000),
        (3000, 1000),
        (4000, 1000),
        (5000, 1000),
    ]);
    assert_eq!(go_back_n(&o.view(), 5, 11, 5000), Some(true));
    // Reno: new data on dupACK inflation right after the fast retransmission
    let o = after_loss(&[(5000, 0), (6000, 0)]);
    assert_eq!(go_back_n(&o.view(), 5, 8, 5000), Some(false));
    // SACK: the hole at 2000 is repaired, the SACKed 1000..2000 skipped
    let o = after_loss(&[(2000, 0), (5000, 0)]);
    assert_eq!(go_back_n(&o.view(), 5, 8, 5000), Some(false));
    // only the fast retransmission: neither shown
    let o = after_loss(&[]);
    assert_eq!(go_back_n(&o.view(), 5, 6, 5000), None);
}

fn ep(i: usize, last: usize, to: bool, una: i64) -> Episode {
    Episode {
        d: 0,
        i,
        end: 10.0,
        to,
        j_end: last,
        last,
        gbn: Some(false),
        burst: None,
        hi: 10_000,
        una,
        sacked: 0,
    }
}

#[test]
fn ssthresh_is_half_the_window_in_whole_segments_at_least_two() {
    let e = ep(0, 1, false, 0);
    assert_eq!(ssthresh(10_000.0, &e, 1000.0), 5000.0);
    assert_eq!(ssthresh(10_500.0, &e, 1000.0), 5000.0);
    assert_eq!(ssthresh(3000.0, &e, 1000.0), 2000.0);
    assert_eq!(ssthresh(3000.0, &e, 0.0), 1500.0);
    // with SACK information, half the un-SACKed flight when smaller (10000 - 0 - 6000)
    let sk = Episode { sacked: 6000, ..e };
    assert_eq!(ssthresh(10_000.0, &sk, 1000.0), 2000.0);
}

#[test]
fn a_recovery_holds_ssthresh_inside_and_until_the_next_reading() {
    let mut est = vec![8000.0; 8];
    let raw = vec![
        3000.0, 3000.0, 3000.0, 3000.0, 3000.0, 6000.0, 3000.0, 9000.0,
    ];
    // rows 4 and 5 read no window (5: an application-limited burst above ssthresh); row 6 reads
    let flags = [0, 0, 0, 0, HELD, HELD | APP, 0, 0];
    let mut in_rec = vec![false; 8];
    let eps = [ep(2, 4, false, 0)];
    let out = recoveries(
        &eps,
        &mut est,
        &raw,
        &flags,
        &mut in_rec,
        (&[0], &[8]),
        &[1000.0],
        true,
    );
    assert!(out[0].recovery && out[0].ssthresh == 4000.0);
    assert_eq!(
        est,
        vec![8000.0, 8000.0, 4000.0, 4000.0, 4000.0, 6000.0, 8000.0, 8000.0]
    );
    assert_eq!(
        in_rec,
        vec![false, false, true, true, false, false, false, false]
    );
}

#[test]
fn a_hold_after_a_recovery_carries_over_a_cut() {
    // a recovery (rows 1..4) whose hold runs on past the timeout at row 6, which cuts the rows
    // there (the recovery ended at row 4): rows 4..9 read no window, row 7 is an
    // application-limited burst above ssthresh
    let mut raw = vec![3000.0; 12];
    raw[7] = 7000.0;
    let mut flags = [0u8; 12];
    flags[4..9].fill(HELD);
    flags[7] |= APP;
    let eps = [ep(1, 4, false, 0), ep(6, 9, true, 500)];
    assert_eq!(cuts(&eps, 0), vec![1, 6]);
    let (mut est, mut in_rec) = (vec![8000.0; 12], vec![false; 12]);
    let whole = recoveries(
        &eps,
        &mut est,
        &raw,
        &flags,
        &mut in_rec,
        (&[0], &[12]),
        &[1000.0],
        true,
    );
    assert_eq!(est[4..10], [4000.0, 4000.0, 4000.0, 7000.0, 7000.0, 8000.0]);
    // the same a stretch at a time
    let (mut est2, mut in_rec2) = (vec![8000.0; 12], vec![false; 12]);
    let (mut r, mut out, mut pre) = (Recover::new(true), Vec::new(), f64::NAN);
    for (s, c) in [(0, 1), (1, 6), (6, 12)] {
        let (e2, f2, r2) = (&mut est2[s..c], &flags[s..c], &raw[s..c]);
        r.resume(e2, r2, f2, c - s);
        let at = Rows {
            lo: 0,
            base: s,
            pre,
            end: c - s,
        };
        for e in eps.iter().filter(|e| (s..c).contains(&e.i)) {
            out.push(r.event(e, e2, r2, f2, &mut in_rec2[s..c], at, 1000.0));
        }
        pre = est2[c - 1];
    }
    assert_eq!((out, est2, in_rec2), (whole, est, in_rec));
}

#[test]
fn no_cut_where_a_later_event_reads_a_row_before_it() {
    // the second event starts after the first ended, but (out-of-order times) its burst was
    // found before its first row: the rows are not cut there
    let eps = [ep(1, 4, false, 0), ep(6, 9, false, 500)];
    assert_eq!(cuts(&eps, 0), vec![1, 6]);
    let odd = [
        eps[0].clone(),
        Episode {
            burst: Some(5),
            ..eps[1].clone()
        },
    ];
    assert_eq!(cuts(&odd, 0), vec![1]);
}

#[test]
fn a_backed_off_expiry_holds_ssthresh_unless_ns2() {
    let run = |hold: bool| {
        let mut est = vec![8000.0, 8000.0, 1000.0, 1000.0, 1000.0];
        let (raw, flags) = (vec![0.0; 5], [0u8; 5]);
        let mut in_rec = vec![false; 5];
        // two expiries at the same snd_una (nothing ACKed between): RFC 6298 §5.5 back-off
        let eps = [ep(1, 2, true, 1000), ep(3, 4, true, 1000)];
        let out = recoveries(
            &eps,
            &mut est,
            &raw,
            &flags,
            &mut in_rec,
            (&[0], &[5]),
            &[1000.0],
            hold,
        );
        assert!(!out[0].recovery && !out[1].recovery && !in_rec.contains(&true));
        (out[0].ssthresh, out[1].ssthresh)
    };
    assert_eq!(run(true), (4000.0, 4000.0));
    assert_eq!(run(false), (4000.0, 2000.0));
}

#[test]
fn searches_follow_numpy() {
    let v = [1.0, 2.0, 2.0, 3.0];
    assert_eq!((search_left(&v, 2.0), search_right(&v, 2.0)), (1, 3));
    assert_eq!(
        (search_left(&v, f64::INFINITY), search_right(&v, f64::NAN)),
        (4, 4)
    );
}

#[test]
fn the_estimate_marks_a_fast_recovery_and_spreads_ssthresh() {
    // Reno: segments 0..5000, the fast retransmission of 0, new data; ACK 6000 ends the event
    let mut o = after_loss(&[(5000, 0), (6000, 0), (7000, 0), (8000, 0)]);
    o.retx = (vec![5], vec![5000], vec![false]);
    o.acks = (vec![7.5, 10.5], vec![0, 6000]);
    o.dirs.3 = vec![2];
    o.syn_lost = vec![true];
    let out = estimate(&o.view(), false, true).expect("consistent columns");
    assert_eq!(out.events.len(), 1);
    let e = &out.events[0];
    assert!(e.recovery && !e.timeout && e.i == 5 && e.end == 10.5);
    // rows 5..8 (up to the first sent after the ending ACK) are the recovery, at ssthresh
    assert!((5..9).all(|i| out.phase[i] == RECOVERY && out.est[i] == e.ssthresh));
    // a lost SYN on ns-2: 2 MSS from the first row, then the event's
    assert_eq!(out.ssthresh[0], 2000.0);
    assert_eq!(out.ssthresh[9], e.ssthresh);
    // Linux and ns-3 start their data with no ssthresh after it (tcp_init_metrics; ns-3's timer
    // only re-sends the SYN): slow start up to the event, as the kernel's ss log shows
    let linux = estimate(&o.view(), true, true).expect("consistent columns");
    assert!(linux.ssthresh[..5].iter().all(|x| x.is_nan()));
    assert!(linux.phase[..5].iter().all(|&p| p == SLOW_START));
    assert_eq!(linux.ssthresh[9], e.ssthresh);
}

#[test]
fn inconsistent_columns_are_errors() {
    let mut o = after_loss(&[]);
    o.retx = (vec![9], vec![5000], vec![false]);
    assert!(estimate(&o.view(), true, true).is_err_and(|e| e.contains("outside")));
    o.retx = (vec![5], vec![], vec![false]);
    assert!(estimate(&o.view(), true, true).is_err_and(|e| e.contains("values")));
    o.retx = (vec![], vec![], vec![]);
    o.dirs.1 = vec![99];
    assert!(estimate(&o.view(), true, true).is_err_and(|e| e.contains("outside")));
}

/// splitmix64: the random cases' numbers.
pub(crate) fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn events_found_as_a_stream_reads_equal_those_of_the_whole_direction() {
    let mut s = 20_261_129u64;
    let mut events = 0;
    for case in 0..2000 {
        let n = 2 + (next(&mut s) % 60) as usize;
        // times ascending (ties too), ACKs interleaved, snd_una their running maximum
        let (mut t, mut una, mut hi, mut seq) = (0.0, 0i64, 0i64, 0i64);
        let (mut rows, mut acks, mut retx) = (Vec::new(), Vec::new(), (vec![], vec![], vec![]));
        for i in 0..n {
            t += (next(&mut s) % 4) as f64 * 0.01;
            if next(&mut s).is_multiple_of(2) {
                let at = t - 0.005 * (next(&mut s) % 2) as f64;
                una = una.max((una + (next(&mut s) % 3) as i64 * 1000).min(hi));
                acks.push((at.max(acks.last().map_or(0.0, |a: &(f64, i64)| a.0)), una));
            }
            // a re-send from snd_una or a hole above it, else new data
            let r = next(&mut s) % 5;
            let start = if r == 0 && hi > una {
                una + (next(&mut s) % 2) as i64 * 1000
            } else {
                seq
            };
            if start < hi || (r == 0 && hi > 0) {
                retx.0.push(i as i64);
                retx.1.push(hi);
                retx.2.push(next(&mut s).is_multiple_of(4));
            }
            rows.push((t, start, 1000, una));
            if start >= seq {
                seq = start + 1000;
            }
            hi = hi.max(start + 1000);
        }
        let mut o = Owned::new(&rows, &acks);
        o.retx = retx;
        let nr = o.retx.0.len();
        let whole = episodes_of(&o.view(), 0, (0, n), (0, nr), false);
        let live = episodes_of(&o.view(), 0, (0, n), (0, nr), true);
        assert_eq!(live, whole, "case {case}: {rows:?} {acks:?}");
        events += whole.len();
    }
    // (the cases do have events, several per direction)
    assert!(events > 2000, "{events} events");
}
