//! [`Pipe`]: the pipe at each data segment of one direction and its causal max filter over two
//! minimum RTTs (see the parent module), with the application-limited bursts and the bytes a
//! timeout marked lost.

use super::{SackInfo, APP, DUP, EPOCH, FILTER_RTTS, HELD, NEW_ACK, SEG, TIMEOUT};
use std::collections::VecDeque;

/// A window spans this many key units (thousandths of the filter width, rounded).
const SPAN: i64 = 1000;
/// Step of the key at a segment start (no window reaches back across it).
const CUT: i64 = SPAN + 1;

/// One burst: the segments one ACK releases (its keys at the first and last row, its maximum,
/// its first row, and whether the application had given nothing more: see [`Pipe::on_row`]).
struct Burst {
    k_first: i64,
    k_last: i64,
    max: f64,
    row: usize,
    app: bool,
}

/// One data segment as [`Pipe::on_row`] reads it (see there).
#[derive(Clone, Copy, Debug)]
pub struct RowIn {
    pub time: f64,
    pub seq_end: i64,
    pub una: i64,
    pub sacked: i64,
    pub sk: SackInfo,
    pub marks: u8,
    pub ack_t: f64,
}

/// The previous row, as the application-limited test needs it.
#[derive(Clone, Copy)]
struct Prev {
    /// Its end (seq + len).
    end: i64,
    /// It extended HighData (new data beyond everything sent before).
    top: bool,
}

/// The pipe and its max filter over one direction's data segments.
///
/// `on_row` takes the rows in capture order; `finish` gives the filtered estimate of every row
/// (-1 where the window holds only duplicate-ACK sends is filled with the last value, 0 at a
/// direction's start).
pub struct Pipe {
    /// Filter width in seconds.
    width: f64,
    /// Highest segment end since the last loss event (snd_nxt as a go-back-N sender resets it).
    snd_nxt: i64,
    /// Highest segment end of the direction (HighData).
    hi: i64,
    /// A segment sent longer than this after the latest ACK was not clocked by it (seconds).
    clocked: f64,
    /// The capture sees what the sender sends when it sends it ([`super::at_sender`]).
    here: bool,
    /// A burst that starts from an empty pipe after an idle shorter than this is
    /// application-limited (seconds; 0: the rule is off). See [`Pipe::on_row`].
    restart: f64,
    /// When the previous row was sent.
    prev_time: f64,
    prev: Option<Prev>,
    /// Since a timeout: the byte ranges sent (new or re-sent) since it, merged and ascending
    /// (None: the latest loss event was no timeout).
    since: Option<Vec<(i64, i64)>>,
    /// HighData when the timer fired: once snd_una passes it nothing is lost any more.
    lost_to: i64,
    /// The segments SACKed (now or later) and not yet cumulatively ACKed, by end: (seq, end,
    /// from which data packet place on they count as SACKed: [`SackInfo::at`]).
    sacks: VecDeque<(i64, i64, i64)>,
    /// The cumulative ACK of the latest row fed.
    una: i64,
    prev_tau: f64,
    key: i64,
    /// Rows fed so far, and the keys and bursts of those not yet settled ([`Pipe::settle`]:
    /// a burst's `row` counts from the first of them).
    fed: usize,
    keys: Vec<i64>,
    bursts: Vec<Burst>,
    /// The filter's held value (the last row settled).
    last: f64,
}

impl Pipe {
    /// A direction whose minimum RTT is `min_rtt_s` (NaN: no sample; a 1 µs window then keeps
    /// only the segments of one instant together) and whose segments sent within `clocked_s`
    /// of an ACK's arrival were clocked by it; `at_sender`: the capture is the sender's own
    /// view ([`super::at_sender`]; else neither application-limited bursts nor the lost bytes after a
    /// timeout are looked for).
    pub fn new(min_rtt_s: f64, clocked_s: f64, at_sender: bool, rows: usize) -> Self {
        let width = if min_rtt_s.is_nan() {
            1e-6
        } else {
            (FILTER_RTTS * min_rtt_s).max(1e-6)
        };
        Pipe {
            width,
            snd_nxt: 0,
            hi: 0,
            clocked: clocked_s,
            here: at_sender,
            restart: 0.0,
            prev_time: f64::NAN,
            prev: None,
            since: None,
            lost_to: 0,
            sacks: VecDeque::new(),
            una: i64::MIN,
            prev_tau: 0.0,
            key: 0,
            fed: 0,
            keys: Vec::with_capacity(rows),
            bursts: Vec::new(),
            last: 0.0,
        }
    }

    /// The empty-pipe rule of [`Pipe::on_row`] (off by default): `restart_s` is the idle after
    /// which a sender may restart its window (RFC 5681 §4.1; Linux `tcp_cwnd_restart` after one
    /// RTO, at least `TCP_RTO_MIN`).
    pub fn restart_after(mut self, restart_s: f64) -> Self {
        self.restart = restart_s;
        self
    }

    /// One data segment: its time, end (seq + len), the cumulative ACK before it (una), the
    /// bytes SACKed above una, what the scoreboard says of it (`sk`: its length at least), its
    /// marks ([`EPOCH`] .. [`TIMEOUT`]) and when the latest ACK before it arrived (`ack_t`, NaN:
    /// none). Returns its pipe before duplicate-ACK sends are dropped (the recoveries read it at
    /// the bursts).
    ///
    /// **Application-limited bursts.** A burst whose last segment extended HighData, after which
    /// an ACK advanced snd_una and the sender sent nothing on it (its next segment comes later
    /// than `clocked` after the latest ACK, or never), had nothing more to send: the application
    /// had given no more (a receiver window that opens again is an ACK, and the segments it
    /// releases are clocked by it). Its pipe is a lower bound of cwnd, not a reading: RFC 7661
    /// §4 does not validate cwnd while the sender is application-limited, Linux
    /// `tcp_cwnd_validate` / `tcp_is_cwnd_limited` grow it only when the window was filled.
    ///
    /// **A burst from an empty pipe** ([`Pipe::restart_after`]): its first segment left when
    /// everything sent before had been ACKed, after an idle shorter than `restart`. Outside a loss
    /// event cwnd falls only after an idle of one RTO (RFC 5681 §4.1, Linux `tcp_cwnd_restart`),
    /// and a cwnd-limited sender whose pipe empties sends its whole window on that ACK: such a
    /// burst is what the application had given (a write's tail, a write once the socket buffer
    /// drained), a lower bound of cwnd, however soon after the ACK it left. Not at a filter
    /// restart (a loss event's start or end reads the window that event left).
    #[allow(clippy::too_many_arguments)]
    pub fn on_row(
        &mut self,
        time: f64,
        seq_end: i64,
        una: i64,
        sacked: i64,
        sk: SackInfo,
        marks: u8,
        ack_t: f64,
    ) -> f64 {
        let first = self.fed == 0;
        self.fed += 1;
        if let Some(p) = self.prev.filter(|_| self.here) {
            // the previous row ended an application-limited burst (no clocked send on the ACK)
            // (no ACK before it, NaN: not clocked either)
            let clocked = time - ack_t <= self.clocked;
            if p.top && una >= p.end && !clocked {
                if let Some(b) = self.bursts.last_mut() {
                    b.app = true;
                }
            }
        }
        // a new burst from an empty pipe, not at a filter restart, after a short idle
        let empty = self.here
            && !first
            && marks & SEG == 0
            && una >= self.hi
            && seq_end > self.hi
            && time - self.prev_time < self.restart;
        self.prev_time = time;
        self.prev = Some(Prev {
            end: seq_end,
            top: first || seq_end > self.hi,
        });
        // snd_nxt restarts at each loss event: the highest byte sent since
        if first || marks & EPOCH != 0 {
            self.snd_nxt = seq_end;
            self.since = (marks & TIMEOUT != 0 && self.here).then(Vec::new);
            self.lost_to = if first { seq_end } else { self.hi.max(seq_end) };
        } else {
            self.snd_nxt = self.snd_nxt.max(seq_end);
        }
        self.hi = if first { seq_end } else { self.hi.max(seq_end) };
        let sacked = self.sacked_below(una, sacked, sk, seq_end);
        let mut pipe = self.snd_nxt.wrapping_sub(una).wrapping_sub(sacked).max(0);
        if self.since.is_some() {
            pipe = (pipe - self.lost_unsent(una, sk, seq_end)).max(0);
        }
        let pipe = pipe as f64;
        // a segment sent on a duplicate ACK may exceed cwnd: not a measurement (-1)
        let v = if marks & DUP != 0 && marks & EPOCH == 0 && !first {
            -1.0
        } else {
            pipe
        };
        // the key: time in thousandths of the filter width, rounded; each step capped at
        // CUT (non-finite or absurd times stay small), and CUT at every filter restart
        let tau = ((time / self.width) * 1000.0).round_ties_even();
        let step = if first || marks & SEG != 0 {
            CUT
        } else {
            let s = tau - self.prev_tau;
            (if s.is_nan() {
                CUT as f64
            } else {
                s.min(CUT as f64)
            })
            .max(0.0) as i64
        };
        self.prev_tau = tau;
        self.key += step;
        self.keys.push(self.key);
        // the segments one ACK releases leave together (a capture spaces them by the link's
        // serialisation time): the window is what is outstanding after the last of them
        if first || marks & (SEG | NEW_ACK) != 0 {
            self.bursts.push(Burst {
                k_first: self.key,
                k_last: self.key,
                max: v,
                row: self.keys.len() - 1,
                app: empty,
            });
        } else if let Some(b) = self.bursts.last_mut() {
            b.k_last = self.key;
            b.max = b.max.max(v);
        }
        pipe
    }

    /// [`Pipe::on_row`] of `r`.
    pub fn feed(&mut self, r: &RowIn) -> f64 {
        self.on_row(r.time, r.seq_end, r.una, r.sacked, r.sk, r.marks, r.ack_t)
    }

    /// After a timeout, the bytes below snd_nxt neither sent since it nor SACKed: RFC 5681 §3.1
    /// (and Linux `tcp_enter_loss` → `tcp_timeout_mark_lost`) takes every outstanding segment
    /// not SACKed for lost when the timer fires, and RFC 6675 §4's pipe leaves a lost segment
    /// out until it is re-sent. So after a timeout the pipe is what was sent since (new or
    /// re-sent), not yet ACKed or SACKed, and a hole the sender has not re-sent yet (Linux sends
    /// new data beyond it when cwnd allows) is no part of it. `seq_end` is this row's end.
    fn lost_unsent(&mut self, una: i64, sk: SackInfo, seq_end: i64) -> i64 {
        if una >= self.lost_to {
            self.since = None; // every byte the timeout took for lost is ACKed
        }
        let Some(since) = self.since.as_mut() else {
            return 0;
        };
        // this segment joins the ranges sent since the timeout (merged, ascending)
        let (a, b) = (seq_end.wrapping_sub(sk.len.max(0)), seq_end);
        let at = since.partition_point(|r| r.1 < a);
        let mut end = at;
        let (mut lo, mut hi) = (a, b);
        while end < since.len() && since[end].0 <= hi {
            lo = lo.min(since[end].0);
            hi = hi.max(since[end].1);
            end += 1;
        }
        since.splice(at..end, [(lo, hi)]);
        let gone = since.partition_point(|r| r.1 <= una);
        since.drain(..gone);
        // the gaps between una and snd_nxt that nothing sent since the timeout covers
        let mut gaps = Vec::new();
        let mut from = una;
        for &(s, e) in since.iter() {
            if s >= self.snd_nxt {
                break;
            }
            if s > from {
                gaps.push((from, s));
            }
            from = from.max(e);
        }
        if from < self.snd_nxt {
            gaps.push((from, self.snd_nxt));
        }
        // SACKed segments in the gaps were never lost (nor in the pipe)
        let mut out = 0;
        for (g0, g1) in gaps {
            let sacked: i64 = if sk.pos >= 0 {
                // (kept by end, and they do not overlap: those ending above g0 until one starts at g1)
                let from = self.sacks.partition_point(|s| s.1 <= g0);
                self.sacks
                    .range(from..)
                    .take_while(|s| s.0 < g1)
                    .filter(|s| s.2 <= sk.pos)
                    .map(|s| s.1.min(g1) - s.0.max(g0))
                    .sum()
            } else {
                0
            };
            out += (g1 - g0 - sacked).max(0);
        }
        out
    }

    /// The bytes of `sacked` (SACKed above una, as the scoreboard counts them) that lie below
    /// snd_nxt. RFC 6675 §2 counts in the pipe only octets between HighACK and HighData, and
    /// after a restart (snd_nxt back at the loss event: a timeout, RFC 5681 §3.1 / Linux
    /// `tcp_enter_loss`, resends from una) the data is what lies below the restarted snd_nxt:
    /// SACKed blocks above it are neither in the pipe nor to be taken out of it (Linux keeps
    /// their SACKed marks across the loss: `tcp_timeout_mark_lost` skips SACKed skbs, and
    /// `tcp_packets_in_flight` counts only what it retransmits). Exact: each first
    /// transmission SACKed is known with the data packet place from which it counts.
    fn sacked_below(&mut self, una: i64, sacked: i64, sk: SackInfo, seq_end: i64) -> i64 {
        self.una = una;
        if sk.at >= 0 {
            // a first transmission that gets SACKed: kept by end (ends increase in capture order)
            let seg = (seq_end.wrapping_sub(sk.len), seq_end, sk.at);
            let at = self.sacks.partition_point(|s| s.1 <= seq_end);
            self.sacks.insert(at, seg);
        }
        while self.sacks.front().is_some_and(|s| s.1 <= una) {
            self.sacks.pop_front();
        }
        // every segment kept ends at or below hi: nothing lies above an un-restarted snd_nxt
        if sacked <= 0 || self.snd_nxt >= self.hi || sk.pos < 0 {
            return sacked;
        }
        let x = self.snd_nxt.max(una);
        let from = self.sacks.partition_point(|s| s.1 <= x);
        let above: i64 = self
            .sacks
            .range(from..)
            .filter(|s| s.2 <= sk.pos)
            .map(|s| s.1 - s.0.max(x))
            .sum();
        (sacked - above).max(0)
    }

    /// A first transmission `seq..end` whose row was fed before the block that SACKed it whole
    /// arrived (`at`: [`SackInfo::at`], after every row fed so far): kept as a row carrying the
    /// mark keeps it ([`Pipe::on_row`]), unless an ACK of a row fed since covers it, which
    /// would have dropped it. Only rows fed later read it, so a stream that has already fed the
    /// row gets the same pipe.
    pub fn late_sack(&mut self, seq: i64, end: i64, at: i64) {
        if end <= self.una {
            return;
        }
        let k = self.sacks.partition_point(|s| s.1 <= end);
        self.sacks.insert(k, (seq, end, at));
    }

    /// The filtered estimate of every row not yet settled: the largest burst value whose last
    /// row lies in (key − SPAN, key], bursts starting at the same key after the row included; and
    /// each row's flags ([`APP`], [`HELD`]). `end_una`: the highest cumulative ACK the sender got
    /// after its last segment (its last burst is application-limited when that ACK advanced
    /// snd_una and nothing more was sent).
    ///
    /// An application-limited burst (and a duplicate-ACK send) reads no window: while the window
    /// holds no other burst, the estimate keeps its last value (RFC 7661 §4: cwnd is neither
    /// validated nor reduced while application-limited), raised where such a burst's pipe is
    /// higher (cwnd is at least what is outstanding).
    pub fn finish(&mut self, end_una: i64, out: &mut [f64], flags: &mut [u8]) {
        if let (Some(p), Some(b)) = (self.prev, self.bursts.last_mut()) {
            if p.top && end_una >= p.end && self.here {
                b.app = true;
            }
        }
        self.settle(self.keys.len(), out, flags);
    }

    /// [`Pipe::finish`] for the first `n` rows not yet settled, once the row after them has been
    /// fed and starts a filter restart ([`SEG`]: its key steps past every window before it, so
    /// no later row reads their bursts, and its `on_row` has told whether the burst before it
    /// was application-limited). Their keys and bursts are dropped; the held value carries over.
    pub fn settle(&mut self, n: usize, out: &mut [f64], flags: &mut [u8]) {
        let m = self.bursts.partition_point(|b| b.row < n);
        let bursts = &self.bursts[..m];
        for (k, b) in bursts.iter().enumerate() {
            if b.app && b.max >= 0.0 {
                let end = bursts.get(k + 1).map_or(n, |x| x.row);
                flags[b.row..end].iter_mut().for_each(|f| *f |= APP);
            }
        }
        // measured[k]: cwnd-limited bursts among the first k
        let mut measured = Vec::with_capacity(m + 1);
        measured.push(0u32);
        for b in bursts {
            let c = measured[measured.len() - 1] + u32::from(!b.app && b.max >= 0.0);
            measured.push(c);
        }
        let mut win: VecDeque<usize> = VecDeque::new(); // bursts in the window, decreasing max
        let (mut left, mut right) = (0usize, 0usize); // next burst to enter; first inside
        let mut last = self.last;
        let rows = self.keys[..n]
            .iter()
            .zip(out.iter_mut())
            .zip(flags.iter_mut());
        for ((&k, slot), f) in rows {
            while right < m && bursts[right].k_first <= k {
                let x = bursts[right].max;
                while win.back().is_some_and(|&q| bursts[q].max <= x) {
                    win.pop_back();
                }
                win.push_back(right);
                right += 1;
            }
            while bursts[left].k_last <= k - SPAN {
                left += 1;
            }
            while win.front().is_some_and(|&q| q < left) {
                win.pop_front();
            }
            let v = win.front().map_or(-1.0, |&q| bursts[q].max);
            if measured[right] > measured[left] {
                last = v;
            } else {
                // no reading in the window (only dupACK sends or application-limited bursts):
                // the last value (0 at the start), or the pipe where it is higher
                last = f64::max(last, v);
                *f |= HELD;
            }
            *slot = last;
        }
        self.last = last;
        self.keys.drain(..n);
        self.bursts.drain(..m);
        self.bursts.iter_mut().for_each(|b| b.row -= n);
    }
}
