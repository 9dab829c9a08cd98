//! Loss events of the cwnd estimate, found before the pipe is built (see the parent module).
//!
//! A retransmission starts a loss event unless one is under way: an event lasts until the
//! cumulative ACK passes its *recovery point*, the highest byte sent before it (RFC 6582
//! "recover"), so NewReno partial-ACK and SACK retransmissions of one window count once. A
//! timeout always starts a new event (a Reno recovery that stalls ends in one; the simulators cut
//! cwnd twice: samples/ns2/lab_reno/Window.tr 66 → 33 → 1). Which re-sends are timeouts is the
//! retransmission analysis' judgement (RFC 6298 §5 against the sender's RTO floor), never a rule
//! of this module. Each event then gets its go-back-N verdict ([`go_back_n`]) and, when the
//! sender sent nothing inside it, the burst the ending ACK releases (decided in `recoveries`).

use super::estimate::{search_left, search_right, EstRows, ACK_CLOCKED_S};

/// One loss event (all absolute row numbers).
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// Its direction.
    pub d: usize,
    /// Its first row (the retransmission that starts it).
    pub i: usize,
    /// When the cumulative ACK passed its recovery point (+inf: never).
    pub end: f64,
    /// The retransmission timer sent its first row.
    pub to: bool,
    /// The first row sent at or after `end` (the direction's end: none).
    pub j_end: usize,
    /// Its rows are `i..last` (up to its end or the next event).
    pub last: usize,
    /// Go-back-N (Some(true)), fast recovery (Some(false)), or neither shown (None).
    pub gbn: Option<bool>,
    /// The row of the burst the ending ACK releases when nothing was sent inside (None: none).
    pub burst: Option<usize>,
    /// At its first row: the highest byte sent before it, snd_una, and the SACKed bytes.
    pub hi: i64,
    pub una: i64,
    pub sacked: i64,
}

/// One event found by [`chain`]: (its first candidate's place, end time, recovery point, timeout?).
pub type Event = (usize, f64, i64, bool);

/// Python's `bisect_left` over `v` (the first place whose value is not below `x`).
fn bisect(v: &[i64], x: i64) -> usize {
    v.partition_point(|&y| y < x)
}

/// Loss events of one direction from its retransmissions above snd_una (`cand`: rows, with
/// their `seq_end`, highest byte sent before (`hi`), snd_una and timeout mark), against the
/// ACKs that reach its sender (`t_ack`, `una_ack`: their times and cumulative ACKs).
///
/// One step per event: the next event starts at the first candidate at or above the recovery
/// point (`max(hi, seq_end)`, RFC 6582 "recover"), or at the next timeout if that comes first.
pub fn chain(cand: &[(usize, i64, i64, i64, bool)], t_ack: &[f64], una_ack: &[i64]) -> Vec<Event> {
    let m = cand.len();
    // the next timeout at or after each position (m: none)
    let mut nxt_to = vec![m; m + 1];
    for p in (0..m).rev() {
        nxt_to[p] = if cand[p].4 { p } else { nxt_to[p + 1] };
    }
    let una: Vec<i64> = cand.iter().map(|c| c.3).collect();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < m {
        let (_, seq_end, hi, _, to) = cand[pos];
        let rp = hi.max(seq_end);
        let k = bisect(una_ack, rp);
        let end = t_ack.get(k).copied().unwrap_or(f64::INFINITY);
        out.push((pos, end, rp, to));
        pos = bisect(&una, rp).max(pos + 1).min(nxt_to[pos + 1]);
    }
    out
}

/// Is a fast-retransmit event a go-back-N restart (Some(true)), a fast recovery (Some(false)), or
/// neither (None)? Its rows after the first are `a..last` (`rp`: its recovery point).
///
/// A go-back-N sender (cwnd = 1, then slow start from snd_una: Tahoe, a timeout) resends old
/// data beyond the first hole (`una < seq < rp`) before it sends new data (`seq ≥ rp`), and
/// always contiguously from `max(snd_una, last sent)`. A Reno/NewReno sender retransmits only at
/// snd_una (one segment per partial ACK, RFC 6582 §3.2) and sends new data on dupACK inflation;
/// a SACK sender repairs holes above snd_una but *skips* the segments the receiver SACKed (RFC
/// 6675 §5). Neither: only the fast retransmission was sent (a single loss, or a Reno sender
/// stalled by the receiver window).
pub fn go_back_n(r: &EstRows, first: usize, last: usize, rp: i64) -> Option<bool> {
    let a = first + 1;
    if last <= a {
        return None;
    }
    let seq = |i: usize| r.seq_end[i].wrapping_sub(r.pay[i]);
    // where the new data starts (the rest's end when none is sent)
    let stop = (a..last).find(|&i| seq(i) >= rp).unwrap_or(last);
    let beyond = (a..stop).any(|i| seq(i) < rp && seq(i) > r.una[i]);
    // up to and including the first new segment: a SACK sender jumps over SACKed data
    let upto = (stop + 1).min(last);
    let skipped = (a..upto).any(|i| seq(i) > r.seq_end[i - 1].max(r.una[i]));
    Some(beyond && !skipped)
}

/// SACKed bytes at `row` (0: none; a row given twice: its first value).
fn sacked_at(r: &EstRows, row: usize) -> i64 {
    let k = r.sack_at.partition_point(|&x| x < row as i64);
    match (r.sack_at.get(k), r.sack_val.get(k)) {
        (Some(&at), Some(&v)) if at == row as i64 => v,
        _ => 0,
    }
}

/// Every loss event of direction `d` (rows `lo..hi`, its retransmitted rows `rx`: indices into
/// `r.retx_rows`), with its range, go-back-N verdict and burst row.
pub fn episodes_of(
    r: &EstRows,
    d: usize,
    (lo, hi): (usize, usize),
    rx: (usize, usize),
) -> Vec<Episode> {
    // retransmissions above snd_una (those at or below it repair nothing outstanding)
    let cand: Vec<(usize, i64, i64, i64, bool)> = (rx.0..rx.1)
        .filter_map(|k| {
            let row = usize::try_from(r.retx_rows[k]).ok()?;
            (r.seq_end[row] > r.una[row]).then_some((
                row,
                r.seq_end[row],
                r.retx_hi[k],
                r.una[row],
                r.retx_timeout[k],
            ))
        })
        .collect();
    let (alo, ahi) = r.acks_of(d);
    // (a direction without ACKs searches the whole ACK stream, as the join it replaced did)
    let (t_ack, una_ack) = if ahi > alo {
        (&r.a_time[alo..ahi], &r.a_una[alo..ahi])
    } else {
        (r.a_time, r.a_una)
    };
    let ch = chain(&cand, t_ack, una_ack);
    let tt = &r.time[lo..hi];
    let w = r.min_rtt[d];
    // the ACK clock's tolerance here: a twentieth of the minimum RTT, at most ACK_CLOCKED_S
    let clocked = if w.is_nan() {
        ACK_CLOCKED_S
    } else {
        ACK_CLOCKED_S.min(0.05 * w)
    };
    let mut out = Vec::with_capacity(ch.len());
    for (k, &(p, end, rp, to)) in ch.iter().enumerate() {
        let (i, _, hi_i, una_i, _) = cand[p];
        let nxt = ch.get(k + 1).map_or(hi, |e| cand[e.0].0);
        let j_end = lo + search_left(tt, end);
        let last = j_end.min(nxt);
        let gbn = go_back_n(r, i, last, rp);
        let mut burst = None;
        if gbn.is_none() && j_end < nxt {
            // nothing sent inside: the burst released by the ACK that ends the event tells
            // (rows from lo on: a place before them only with an ACK clock below zero)
            let kb = (lo + search_right(tt, r.time[j_end] + clocked)) as i64 - 1;
            burst = usize::try_from(kb.min(nxt as i64 - 1)).ok();
        }
        out.push(Episode {
            d,
            i,
            end,
            to,
            j_end,
            last,
            gbn,
            burst,
            hi: hi_i,
            una: una_i,
            sacked: sacked_at(r, i),
        });
    }
    out
}
