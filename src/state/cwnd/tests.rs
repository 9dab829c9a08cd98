//! Hand-checked sequences for the cwnd estimate's per-segment passes.

use super::*;

/// One direction's rows as (time, seq_end, una, sacked, marks), min RTT `mr`: (filtered, raw).
fn run_pipe(mr: f64, rows: &[(f64, i64, i64, i64, u8)]) -> (Vec<f64>, Vec<f64>) {
    let mut p = Pipe::new(mr, f64::INFINITY, false, rows.len());
    let raw = rows
        .iter()
        .map(|&(t, e, u, s, m)| p.on_row(t, e, u, s, SackInfo::NONE, m, f64::NAN))
        .collect();
    let mut f = vec![f64::NAN; rows.len()];
    p.finish(i64::MIN, &mut f, &mut vec![0; rows.len()]);
    (f, raw)
}

#[test]
fn an_acks_burst_shares_the_pipe_after_its_last_segment() {
    // three segments of 1000 bytes; the ACK of the first releases the third
    let (f, raw) = run_pipe(
        1.0,
        &[
            (0.0, 1000, 0, 0, NEW_ACK),
            (0.1, 2000, 0, 0, 0),
            (0.2, 3000, 1000, 0, NEW_ACK),
        ],
    );
    assert_eq!(raw, vec![1000.0, 2000.0, 2000.0]);
    // the first burst's value is its last segment's pipe (2000), for both its rows
    assert_eq!(f, vec![2000.0, 2000.0, 2000.0]);
}

#[test]
fn sacked_bytes_leave_the_pipe_and_it_never_goes_below_zero() {
    let (_, raw) = run_pipe(
        1.0,
        &[(0.0, 4000, 0, 1000, NEW_ACK), (0.1, 5000, 6000, 0, NEW_ACK)],
    );
    assert_eq!(raw, vec![3000.0, 0.0]);
}

#[test]
fn the_filter_keeps_the_largest_burst_of_two_min_rtts() {
    // min RTT 0.5 s: a 1 s window; the 4000-byte burst at t = 0 is still inside at 0.9 s,
    // gone at 1.1 s (only the 1000-byte burst of 0.9 s is left)
    let (f, _) = run_pipe(
        0.5,
        &[
            (0.0, 4000, 0, 0, NEW_ACK),
            (0.9, 5000, 4000, 0, NEW_ACK),
            (1.1, 6000, 5000, 0, NEW_ACK),
        ],
    );
    assert_eq!(f, vec![4000.0, 4000.0, 1000.0]);
}

#[test]
fn a_segment_on_a_duplicate_ack_is_no_measurement() {
    // RFC 3042 limited transmit: the dupACK send alone in its window takes the last value
    let (f, raw) = run_pipe(
        0.5,
        &[(0.0, 2000, 0, 0, NEW_ACK), (5.0, 3000, 0, 0, NEW_ACK | DUP)],
    );
    assert_eq!(raw, vec![2000.0, 3000.0]);
    assert_eq!(f, vec![2000.0, 2000.0]);
}

#[test]
fn a_loss_event_restarts_snd_nxt_and_the_filter() {
    // go-back-N: the retransmission of 1000..2000 after 5000 was sent; the pipe counts from
    // the highest byte sent since (2000), and the 5000-byte window is not carried across
    let (f, raw) = run_pipe(
        1.0,
        &[
            (0.0, 5000, 0, 0, NEW_ACK),
            (0.1, 2000, 1000, 0, NEW_ACK | EPOCH | SEG),
            (0.2, 3000, 1000, 0, 0),
        ],
    );
    assert_eq!(raw, vec![5000.0, 1000.0, 2000.0]);
    assert_eq!(f, vec![5000.0, 2000.0, 2000.0]);
    // a dupACK mark at an event's first row is ignored (the event row always measures)
    let (f, _) = run_pipe(
        1.0,
        &[
            (0.0, 5000, 0, 0, 0),
            (0.1, 2000, 1000, 0, DUP | EPOCH | SEG),
        ],
    );
    assert_eq!(f, vec![5000.0, 1000.0]);
}

#[test]
fn sacked_data_above_a_restarted_snd_nxt_stays_out_of_the_pipe() {
    // ten 1000-byte segments (data packets 0-9); segment 5000..6000 counts as SACKed from data
    // packet 12 on, 8000..9000 from 10, 9000..10000 from 11. Timeouts resend 3000.. and
    // 4000.. (EPOCH): RFC 6675 §2 counts only octets between una and the restarted snd_nxt,
    // so the blocks above it are not taken out of it (before: 4000 - 3000 - 1000 = 0)
    let raw = restarted(false);
    let want: Vec<f64> = (1..=10).map(|k| 1000.0 * k as f64).collect();
    assert_eq!(raw[..10], want[..]);
    // 4000-3000; 5000-4000; 6000-4000-1000 (5000..6000 is below snd_nxt); ... then snd_nxt
    // passes the highest byte sent and every SACKed byte is below it: 11000-4000-3000
    assert_eq!(raw[10..], [1000.0, 1000.0, 1000.0, 2000.0, 3000.0, 4000.0]);
}

/// The raw pipe of [`sacked_data_above_a_restarted_snd_nxt_stays_out_of_the_pipe`]'s rows, the
/// three segments SACKed later marked on their rows (`late = false`) or given to
/// [`Pipe::late_sack`] once their rows were fed (`late = true`, as a stream that ran them already
/// does), with a segment an ACK covered before its mark came (which the pipe drops either way).
fn restarted(late: bool) -> Vec<f64> {
    restarted_with(late, true)
}

/// [`restarted`]; `told`: the late marks are given at all.
fn restarted_with(late: bool, told: bool) -> Vec<f64> {
    let mut p = Pipe::new(1.0, f64::INFINITY, false, 16);
    let sk = |pos: i64, at: i64| SackInfo { len: 1000, pos, at };
    let mut raw = vec![];
    let marks = [(5, 12), (8, 10), (9, 11)];
    for k in 0..10i64 {
        let at = marks.iter().find(|m| m.0 == k).map_or(-1, |m| m.1);
        let m = if k == 0 { NEW_ACK } else { 0 };
        let at = if late { -1 } else { at };
        raw.push(p.on_row(
            0.001 * k as f64,
            1000 * (k + 1),
            0,
            0,
            sk(k, at),
            m,
            f64::NAN,
        ));
    }
    let ev = NEW_ACK | EPOCH | SEG;
    let rows = [
        (1.0, 4000, 3000, 1000, ev),
        (1.1, 5000, 4000, 2000, ev),
        (1.2, 6000, 4000, 3000, 0),
        (1.3, 7000, 4000, 3000, 0),
        (1.4, 8000, 4000, 3000, 0),
        (1.5, 11000, 4000, 3000, 0),
    ];
    for (k, &(t, e, u, s, m)) in rows.iter().enumerate() {
        if late && told && k == 0 {
            for &(r, at) in &marks {
                p.late_sack(1000 * r, 1000 * (r + 1), at);
            }
        }
        if late && k == 2 {
            // 2000..3000 is below una (4000) by now: nothing of it is in the pipe
            p.late_sack(2000, 3000, 12);
        }
        raw.push(p.on_row(t, e, u, s, sk(10 + k as i64, -1), m, f64::NAN));
    }
    raw
}

#[test]
fn a_segment_sacked_after_its_row_was_fed_gives_the_same_pipe() {
    let (marked, late) = (restarted(false), restarted(true));
    assert_eq!(late, marked);
    assert_eq!(
        marked[10..],
        [1000.0, 1000.0, 1000.0, 2000.0, 3000.0, 4000.0]
    );
    // (the marks matter: without them the SACKed bytes above the restarted snd_nxt count)
    assert_ne!(restarted_with(true, false), marked);
}

#[test]
fn segments_of_one_instant_stay_together_without_an_rtt() {
    // no RTT sample: a 1 µs window; a burst starting at the same instant is included
    let (f, _) = run_pipe(
        f64::NAN,
        &[
            (1.0, 1000, 0, 0, NEW_ACK),
            (1.0, 3000, 0, 0, NEW_ACK),
            (2.0, 3500, 3000, 0, NEW_ACK),
        ],
    );
    assert_eq!(f, vec![3000.0, 3000.0, 500.0]);
}

#[test]
fn absurd_times_give_capped_steps() {
    let (f, _) = run_pipe(
        0.1,
        &[
            (0.0, 1000, 0, 0, NEW_ACK),
            (f64::NAN, 2000, 0, 0, NEW_ACK),
            (1e300, 2500, 2000, 0, NEW_ACK),
        ],
    );
    assert_eq!(f, vec![1000.0, 2000.0, 500.0]);
}

#[test]
fn congestion_avoidance_is_interpolated_between_one_segment_steps() {
    let mut ph = Phase::new(1000.0, 5);
    let rows = [
        (0.0, 10000.0, 5000.0, false),
        (1.0, 10000.0, 5000.0, false),
        (2.0, 11000.0, 5000.0, false),
        (3.0, 11000.0, 5000.0, false),
        (4.0, 5000.0, 5000.0, true),
    ];
    let codes: Vec<u8> = rows
        .iter()
        .map(|&(t, e, s, r)| ph.on_row(t, e, s, r))
        .collect();
    assert_eq!(codes, vec![1, 1, 1, 1, RECOVERY]);
    // 10000 -> 11000 over 2 s; the run before the recovery has no next step: kept
    assert_eq!(
        ph.finish(),
        vec![10000.0, 10500.0, 11000.0, 11000.0, 5000.0]
    );
}

#[test]
fn slow_start_and_big_steps_are_not_interpolated() {
    let mut ph = Phase::new(1000.0, 4);
    let rows = [
        (0.0, 2000.0, f64::NAN, false),
        (1.0, 4000.0, f64::NAN, false),
        (2.0, 8000.0, 4000.0, false),
        (3.0, 10000.0, 4000.0, false),
    ];
    let codes: Vec<u8> = rows
        .iter()
        .map(|&(t, e, s, r)| ph.on_row(t, e, s, r))
        .collect();
    assert_eq!(codes, vec![SLOW_START, SLOW_START, 1, 1]);
    // 8000 -> 10000 is two segments: a slow-start-like jump, not CA growth
    assert_eq!(ph.finish(), vec![2000.0, 4000.0, 8000.0, 10000.0]);
}

#[test]
fn bad_bounds_are_errors() {
    let r = PipeRows {
        time: &[0.0],
        seq_end: &[1],
        una: &[0],
        sacked: Sparse {
            rows: &[],
            vals: &[],
        },
        pos: &[],
        pay: &[],
        at: Sparse {
            rows: &[],
            vals: &[],
        },
        marks: &[0],
        ack_t: &[],
        lo: &[0],
        hi: &[2],
        min_rtt: &[1.0],
        clocked: &[],
        end_una: &[],
        restart: &[],
    };
    assert!(pipe(&r).is_err());
    assert!(phases(&[0.0], vec![1.0], &[1.0], &[false], &[0], &[1], &[]).is_err());
}

/// One direction's rows as (time, seq_end, una, marks, ack_t) of 1000-byte segments, clocked
/// within 1 ms, `here`: the sender's own view; the last ACK is `end_una`: (filtered, raw, flags).
fn run_clocked(
    here: bool,
    rows: &[(f64, i64, i64, u8, f64)],
    end_una: i64,
) -> (Vec<f64>, Vec<f64>, Vec<u8>) {
    let mut p = Pipe::new(0.1, 1e-3, here, rows.len());
    let sk = SackInfo {
        len: 1000,
        ..SackInfo::NONE
    };
    let raw = rows
        .iter()
        .map(|&(t, e, u, m, a)| p.on_row(t, e, u, 0, sk, m, a))
        .collect();
    let (mut f, mut fl) = (vec![f64::NAN; rows.len()], vec![0; rows.len()]);
    p.finish(end_una, &mut f, &mut fl);
    (f, raw, fl)
}

#[test]
fn an_application_limited_burst_reads_no_window() {
    // ten segments out (10000); the ACK of all of them releases one 376-byte tail (the write's
    // end), its ACK at 1.1 s releases nothing until the application writes again at 1.5 s
    let rows = [
        (0.0, 10000, 0, NEW_ACK, f64::NAN),
        (1.0005, 10376, 10000, NEW_ACK, 1.0),
        (1.5, 11376, 10376, NEW_ACK, 1.1),
    ];
    let (f, raw, fl) = run_clocked(true, &rows, 11376);
    assert_eq!(raw, vec![10000.0, 376.0, 1000.0]);
    // RFC 7661 §4: neither the tail nor the next write (also ACKed in full, nothing after) lowers it
    assert_eq!(f, vec![10000.0, 10000.0, 10000.0]);
    assert_eq!(fl, vec![0, APP | HELD, APP | HELD]);
    // a segment sent on the ACK that covered the tail: cwnd-limited, a reading
    let clocked = [rows[0], rows[1], (1.1002, 11376, 10376, NEW_ACK, 1.1)];
    let (f, _, fl) = run_clocked(true, &clocked, 10376);
    assert_eq!(f, vec![10000.0, 376.0, 1000.0]);
    assert_eq!(fl, vec![0, 0, 0]);
    // away from the sender the ACK clock cannot be read: every burst is a reading, as before
    let (f, _, fl) = run_clocked(false, &rows, 11376);
    assert_eq!(f, vec![10000.0, 376.0, 1000.0]);
    assert_eq!(fl, vec![0, 0, 0]);
}

#[test]
fn after_a_timeout_only_what_was_sent_since_is_in_the_pipe() {
    // ten segments out; the timer re-sends the head, its ACK releases a new segment beyond the
    // nine not re-sent (lost: RFC 5681 §3.1, Linux tcp_timeout_mark_lost), then the next hole
    let to = NEW_ACK | EPOCH | SEG | TIMEOUT;
    let mut rows: Vec<_> = (0..10)
        .map(|k| {
            (
                0.001 * k as f64,
                1000 * (k + 1),
                0,
                if k == 0 { NEW_ACK } else { 0 },
                0.0,
            )
        })
        .collect();
    rows.extend([
        (1.0, 1000, 0, to, 0.0),
        (1.2, 11000, 1000, NEW_ACK, 1.2),
        (1.2, 2000, 1000, 0, 1.2),
    ]);
    let (_, raw, _) = run_clocked(true, &rows, 1000);
    assert_eq!(raw[10..], [1000.0, 1000.0, 2000.0]);
    // without the sender's view (or before: snd_nxt − una) the hole counted: 10000, 10000
    let (_, raw, _) = run_clocked(false, &rows, 1000);
    assert_eq!(raw[10..], [1000.0, 10000.0, 10000.0]);
}

/// One direction's rows as in [`run_clocked`] (minimum RTT 10 ms), windows restarting after an
/// idle of `restart_s` (0: the empty-pipe rule off): (filtered, flags).
fn run_restart(
    rows: &[(f64, i64, i64, u8, f64)],
    end_una: i64,
    restart_s: f64,
) -> (Vec<f64>, Vec<u8>) {
    let mut p = Pipe::new(0.01, 1e-3, true, rows.len()).restart_after(restart_s);
    let sk = SackInfo {
        len: 1000,
        ..SackInfo::NONE
    };
    for &(t, e, u, m, a) in rows {
        p.on_row(t, e, u, 0, sk, m, a);
    }
    let (mut f, mut fl) = (vec![f64::NAN; rows.len()], vec![0; rows.len()]);
    p.finish(end_una, &mut f, &mut fl);
    (f, fl)
}

#[test]
fn a_burst_from_an_empty_pipe_reads_no_window() {
    // ten segments out; the ACK of all of them releases one segment at once (the application's
    // next write), whose ACK releases two more at once: clocked bursts, yet from an empty pipe
    let mut rows: Vec<_> = (0..10)
        .map(|k| {
            (
                0.001 * k as f64,
                1000 * (k + 1),
                0,
                if k == 0 { NEW_ACK } else { 0 },
                f64::NAN,
            )
        })
        .collect();
    rows.extend([
        (0.1001, 11000, 10000, NEW_ACK, 0.1),
        (0.1501, 12000, 11000, NEW_ACK, 0.15),
        (0.1502, 13000, 11000, 0, 0.15),
    ]);
    let (f, fl) = run_restart(&rows, 12000, 0.2);
    // RFC 5681 §4.1: no idle of an RTO, so cwnd is still at least the 10000 read before
    assert_eq!(f[10..], [10000.0, 10000.0, 10000.0]);
    assert_eq!(fl[10..], [APP | HELD, APP | HELD, APP | HELD]);
    // the rule off: each burst is a reading (1000, then 2000)
    let (f, fl) = run_restart(&rows, 12000, 0.0);
    assert_eq!(f[10..], [1000.0, 2000.0, 2000.0]);
    assert_eq!(fl[10..], [0, 0, 0]);
    // after an idle longer than the restart limit the burst is a reading again (a restart)
    let mut idle = rows.clone();
    idle[10] = (0.5, 11000, 10000, NEW_ACK, 0.1);
    idle[11] = (0.5501, 12000, 11000, NEW_ACK, 0.55);
    idle[12] = (0.5502, 13000, 11000, 0, 0.55);
    let (f, fl) = run_restart(&idle, 12000, 0.2);
    assert_eq!(f[10], 1000.0);
    assert_eq!(fl[10], 0);
}
