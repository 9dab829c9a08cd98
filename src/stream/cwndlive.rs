//! The cwnd stage's input rows built live, as pass 2 feeds the packets: each data direction's
//! [`DirRows`] (the frames path's own per-direction builder, `rows_frames::feed`) gets its data
//! segments and the ACKs reaching its sender as they come, so no packet is logged.
//!
//! `rows_frames::build` feeds them in capture order (time, then frame). Pass 1 measures how far
//! each connection's times fall below the latest before them (`held::Order`); pass 2 holds each
//! packet that long ([`Live`]: usually no time falls and nothing is held), so the rows see the
//! same order; a connection's first 64 packets wait too, so a short connection makes no rows
//! until its batch runs. A batch with a NaN or infinite time is logged and sorted as before
//! (`cwnd::run`).
//! What only a later packet or the batch's end tells settles there ([`DirLive::settled`], read
//! by `cwndrun`): a segment SACKed whole by a later block and the first re-send of an episode a
//! later re-send makes a timeout (`DirLive::settle`), snd_una before the first ACK and the
//! strict minimum RTT over more than 64 directions. (`built`, the same rows as the columns
//! `rows_frames::build` gives, is what `cwndrun`'s test compares with.)
//!
//! Memory per data direction, until its batch runs: the rows (`DirRows`: 24 B per data segment,
//! 16 B per ACK, 17 B per retransmission), 4 B per data segment (its packet row: where a late
//! mark lands), 16 B per row with SACKed bytes and 8 B per segment SACKed whole; per connection
//! about 130 B and the packets held (48 B each: its first 64, then none unless its times fall).

use super::conn::{CwndFacts, Pk};
use super::cwndgo::Go;
use super::held::{Held, Queue};
use crate::state::cwnd::rows::{DirRows, Marks, RowCols};
#[cfg(test)]
use crate::state::cwnd::rows_frames::Built;
use crate::state::seq::{ACK, MISSING, SYN};

/// A connection's packets held before its rows are made: the rows and their buffers cost
/// about 1.5 KB a data direction, so a short connection's packets wait (48 B each) and are fed
/// when its batch runs.
const SHORT: u32 = 64;

/// A connection's data directions fed live, in capture order.
pub struct Live {
    /// Its data segments per direction (pass 1), until the rows are made.
    data: [i64; 2],
    /// (boxed: a connection without data holds two pointers' room)
    dirs: [Option<Box<DirLive>>; 2],
    made: bool,
    /// Packets not yet fed ([`Queue`]: earliest in capture order first), and how many came.
    held: Queue,
    seen: u32,
    top: f64,
    lag: f64,
    /// Per direction, its first transmissions SACKed whole: (their packet row, the row of the
    /// packet whose block covered them), placed when the batch runs ([`DirLive::settle`]).
    late: [Vec<(u32, u32)>; 2],
    /// What pass 1 settled of each direction.
    facts: [CwndFacts; 2],
    /// Late marks for directions run live, until their SACKing packet is fed.
    late_q: Vec<(u32, u32)>,
}

impl Live {
    /// `packets`, and `data` data segments of each direction (pass 1; a direction without any
    /// has no rows); `lag`: [`Order::lag`].
    pub fn new(packets: usize, data: [i64; 2], lag: f64) -> Self {
        Live {
            data,
            dirs: [None, None],
            made: false,
            held: Queue::with_capacity(packets.min(SHORT as usize)),
            seen: 0,
            top: f64::NEG_INFINITY,
            lag,
            late: Default::default(),
            facts: [CwndFacts::NONE; 2],
            late_q: Vec::new(),
        }
    }

    /// With what pass 1 settled of each direction.
    pub fn with(mut self, facts: [CwndFacts; 2]) -> Self {
        self.facts = facts;
        self
    }

    /// Packet `p` of direction `d`: named a retransmission and, the first re-send of its
    /// episode, whether the timer sent the episode so far (`to`), its MSS option (-1: none),
    /// with `sacked` bytes SACKed above una (a data segment's), and the other direction's
    /// segments its blocks SACKed first (`newly`: their rows).
    pub fn on_packet(
        &mut self,
        (d, p): (usize, &Pk),
        (named, to): (bool, Option<bool>),
        mss: i32,
        sacked: i64,
        newly: &[u32],
    ) {
        if self.data[1 - d] > 0 {
            // (a direction run live takes them when the packet is fed, in capture order)
            let q = if self.facts[1 - d].top >= 0 {
                &mut self.late_q
            } else {
                &mut self.late[1 - d]
            };
            newly.iter().for_each(|&s| q.push((s, p.row)));
        }
        let h = Held {
            d: d as u8,
            syn: p.flags & SYN != 0,
            ack: p.flags & ACK != 0 && p.ack != MISSING,
            named,
            to,
            mss,
            time: p.time,
            row: p.row,
            seq: p.seq,
            len: p.len,
            ackno: p.ack,
            sacked,
        };
        self.top = self.top.max(h.time);
        if self.made && self.lag == 0.0 {
            // (no time falls: each packet comes in capture order)
            return self.feed(&h);
        }
        self.held.push(h);
        self.seen = self.seen.saturating_add(1);
        if !self.made {
            if self.seen < SHORT {
                return;
            }
            self.make();
        }
        // a held packet no later packet can precede: every later time is at least top − lag
        // (the margin of 2 covers the rounding of the differences)
        while let Some(x) = self
            .held
            .first()
            .filter(|x| self.lag == 0.0 || self.top - x.time > 2.0 * self.lag)
        {
            self.held.pop();
            self.feed(&x);
        }
    }

    /// Makes the rows of the directions with data.
    fn make(&mut self) {
        for (d, slot) in self.dirs.iter_mut().enumerate() {
            let n = usize::try_from(self.data[d]).unwrap_or(0);
            *slot = (n > 0).then(|| {
                let mut o = Box::new(DirLive::new(n));
                // (run as the rows come where pass 1 settled the direction's facts)
                if self.facts[d].top >= 0 {
                    o.go(self.facts[d]);
                }
                o
            });
        }
        self.made = true;
    }

    /// Feeds what is still held (after the connection's last packet).
    pub fn flush(&mut self) {
        if !self.made {
            self.make();
        }
        while let Some(x) = self.held.pop() {
            self.feed(&x);
        }
    }

    /// `rows_frames::group`: a SYN and a data segment (payload > 0) belong to their own
    /// direction, an ACK (the flag and a number) to the other one, whose sender it reaches.
    fn feed(&mut self, x: &Held) {
        let d = usize::from(x.d);
        if let Some(o) = self.dirs[d].as_mut() {
            if x.syn {
                o.on_syn(x.time, x.mss);
            }
            if x.len > 0 {
                o.on_data(x.row, (x.time, x.seq, x.len), (x.named, x.to), x.sacked);
            }
        }
        if let Some(b) = self.dirs[1 - d].as_mut().filter(|_| x.ack) {
            b.on_ack(x.time, x.ackno);
        }
        // the segments of the other direction this packet's blocks SACKed whole (few wait:
        // those of the packets not yet fed)
        if self.late_q.iter().any(|m| m.1 == x.row) {
            let (now, wait) = std::mem::take(&mut self.late_q)
                .into_iter()
                .partition(|m| m.1 == x.row);
            self.late_q = wait;
            if let Some(b) = self.dirs[1 - d].as_mut() {
                now.into_iter().for_each(|(s, at)| b.on_late(s, at));
            }
        }
    }

    /// Direction `d`'s rows (taken, with its late marks; after [`Live::flush`]).
    pub fn take(&mut self, d: usize) -> Option<DirLive> {
        let mut x = *self.dirs.get_mut(d).and_then(Option::take)?;
        x.late = std::mem::take(&mut self.late[d]);
        x.facts = self.facts.get(d).copied().unwrap_or(CwndFacts::NONE);
        Some(x)
    }
}

/// One data direction's rows as they are fed.
pub struct DirLive {
    pub(super) b: DirRows,
    pub(super) out: RowCols,
    /// The packet row of each data row (from `b.base()` on): where a late mark lands.
    pub(super) rows: Vec<u32>,
    /// First transmissions SACKed whole: (their packet row, the row of the packet whose block
    /// covered them), placed once the batch runs ([`DirLive::settle`]; a direction run live
    /// places them as they come, `cwndgo`).
    late: Vec<(u32, u32)>,
    /// What pass 1 settled of the direction.
    pub facts: CwndFacts,
    /// The MSS option of its first SYN that carries one (-1: none yet).
    pub(super) syn_mss: i32,
    /// The estimate run as the rows come (`cwndgo`; None: the rows are held for the batch).
    pub(super) go: Option<Box<Go>>,
}

#[cfg(test)]
impl Clone for DirLive {
    /// (the rows a live run has not dropped; its state is not cloned)
    fn clone(&self) -> Self {
        DirLive {
            b: self.b.clone(),
            out: self.out.clone(),
            rows: self.rows.clone(),
            late: self.late.clone(),
            facts: self.facts,
            syn_mss: self.syn_mss,
            go: None,
        }
    }
}

impl DirLive {
    /// Room for `n` data segments (pass 1 counted them).
    pub fn new(n: usize) -> Self {
        let mut b = DirRows::new(0);
        b.reserve(n);
        DirLive {
            b,
            out: RowCols::default(),
            rows: Vec::with_capacity(n),
            late: Vec::new(),
            facts: CwndFacts::NONE,
            syn_mss: -1,
            go: None,
        }
    }

    /// A SYN of the direction (`DirRows::on_syn`: a retransmitted SYN is a loss, RFC 5681 §3.1)
    /// and its MSS option (-1: none; the first SYN's that carries one is kept, as
    /// `dirstats::DirStats` keeps it).
    pub fn on_syn(&mut self, time: f64, mss: i32) {
        self.b.on_syn(time);
        if self.syn_mss < 0 {
            self.syn_mss = mss;
        }
    }

    /// An ACK reaching the direction's sender (`DirRows::on_ack`).
    pub fn on_ack(&mut self, time: f64, ack: i64) {
        self.b.on_ack(time, ack);
        if self.go.is_some() {
            self.go_poll();
        }
    }

    /// The data segment at packet row `row`: named a retransmission (`retrans::Conn`) and,
    /// when it is the first re-send of its episode, whether that episode is a timeout so far
    /// (`to`: a live run's timer mark, checked when the batch runs), with `sacked` bytes SACKed
    /// above una (unacked − pipe, RFC 6675 "pipe") at its flight place, its packet row (the pipe
    /// only compares that place with the places from which segments count as SACKed, and the
    /// packet rows keep their order).
    pub fn on_data(
        &mut self,
        row: u32,
        (time, seq, pay): (f64, i64, i64),
        (named, to): (bool, Option<bool>),
        sacked: i64,
    ) {
        let k = self.b.len() as i64;
        if sacked != 0 {
            let s = &mut self.out.sack;
            s.0.push(k);
            s.1.push(sacked);
            s.2.push(i64::from(row));
        }
        let live = self.go.is_some();
        let m = Marks {
            named,
            timeout: live && to == Some(true),
            ..Marks::NONE
        };
        self.rows.push(row);
        self.b.on_data(&mut self.out, time, seq, pay, m);
        if live {
            self.go_row(row, to);
        }
    }

    /// First transmission `s` (its packet row) SACKed whole by the block of the packet at row
    /// `at`: placed when the batch runs, or at once in a live run (`cwndgo`).
    pub fn on_late(&mut self, s: u32, at: u32) {
        if self.go.is_some() {
            self.go_late(s, at);
        } else {
            self.late.push((s, at));
        }
    }

    /// The rows and their sparse columns once the late marks are placed ([`DirLive::settle`]):
    /// the row columns stay in the builder (read with `DirRows::sent`, `DirRows::acked`).
    pub fn settled(mut self, timeouts: &[u32]) -> (DirRows, RowCols) {
        self.settle(timeouts);
        (self.b, self.out)
    }

    /// Places the late marks: each first transmission SACKed whole counts as SACKed at each
    /// data row after the packet whose block covered it (`sack::FlightColumns::sacked_at`, RFC
    /// 6675 §2), i.e. at flight places from that packet's row + 1 on; and `timeouts`, the
    /// re-sends (packet rows) that are the first of an episode the timer sent (RFC 6298 §5:
    /// `retrans.timeout_resends`), get their rows' timeout mark. (Rows a live run dropped are
    /// not here: such a direction is finished by `cwndgo`.)
    fn settle(&mut self, timeouts: &[u32]) {
        // (the marks a live run set as it went are the batch's now)
        self.out.retx.2.fill(false);
        // data rows by packet row (they are in capture order: sorted unless a time fell)
        let mut by: Vec<(u32, u32)> = Vec::new();
        let sorted = self.rows.windows(2).all(|w| w[0] < w[1]);
        if !sorted {
            by = self
                .rows
                .iter()
                .enumerate()
                .map(|(k, &r)| (r, k as u32))
                .collect();
            by.sort_unstable();
        }
        let rows = &self.rows;
        let find = |s: u32| -> Option<usize> {
            if sorted {
                rows.binary_search(&s).ok()
            } else {
                let k = by.binary_search_by_key(&s, |x| x.0).ok()?;
                Some(by[k].1 as usize)
            }
        };
        for &(s, at) in &self.late {
            if let Some(k) = find(s) {
                self.out.seg.0.push(k as i64);
                self.out.seg.1.push(i64::from(at) + 1);
            }
        }
        for &s in timeouts {
            let Some(k) = find(s) else { continue };
            if let Ok(j) = self.out.retx.0.binary_search(&(k as i64)) {
                if let Some(x) = self.out.retx.2.get_mut(j) {
                    *x = true;
                }
            }
        }
        self.late = Vec::new();
        self.rows = Vec::new();
    }
}

#[cfg(test)]
/// `b`'s rows after `a`'s (row numbers moved by `a`'s rows; flight places are packet rows).
fn append(a: &mut RowCols, mut b: RowCols) {
    let off = a.time.len() as i64;
    a.time.append(&mut b.time);
    a.seq_end.append(&mut b.seq_end);
    a.pay.append(&mut b.pay);
    a.una.append(&mut b.una);
    a.dup.append(&mut b.dup);
    a.new_ack.append(&mut b.new_ack);
    a.ack_t.append(&mut b.ack_t);
    a.sack.0.extend(b.sack.0.iter().map(|r| r + off));
    a.sack.1.append(&mut b.sack.1);
    a.sack.2.append(&mut b.sack.2);
    a.seg.0.extend(b.seg.0.iter().map(|r| r + off));
    a.seg.1.append(&mut b.seg.1);
    a.retx.0.extend(b.retx.0.iter().map(|r| r + off));
    a.retx.1.append(&mut b.retx.1);
    a.retx.2.append(&mut b.retx.2);
}

#[cfg(test)]
/// A batch's `nd` data directions (`(flow, dir)` order, each with the packet rows of its timer
/// re-sends; their segment sizes in `mss`, NaN: unknown) as `rows_frames::build` gives them;
/// None when they hold no data segment or no ACK. One direction is settled at a time, its rows
/// written to the batch's columns (so a batch of many short connections holds one direction's
/// builder at a time).
pub fn built(
    live: impl Iterator<Item = (DirLive, Vec<u32>)>,
    nd: usize,
    mss: &[f64],
) -> Option<Built> {
    // many directions were searched on one axis, where a NaN or infinite RTT gave none
    let strict = nd > 64;
    let mut cols = RowCols::default();
    let (mut rows, mut acks, mut min_rtt) = (Vec::new(), Vec::new(), Vec::new());
    // the first row of each direction compares its latest ACK with the previous direction's
    // last row (the rows were one array): it is new unless neither had an ACK before it
    let mut prev: Option<bool> = None;
    let mut acked = false;
    for (mut l, timeouts) in live {
        l.settle(&timeouts);
        acked |= l.b.acks_fed() > 0;
        let (t, u, mr) = l.b.finish(&mut l.out, strict);
        if !l.b.is_empty() {
            let first = prev.is_none_or(|last| last || l.b.acked_first());
            if let Some(slot) = l.out.new_ack.first_mut() {
                *slot = first;
            }
            prev = Some(l.b.acked_last());
        }
        if rows.is_empty() {
            cols = l.out;
        } else {
            append(&mut cols, l.out);
        }
        acks.push((t, u));
        min_rtt.push(mr);
        rows.push(l.b);
    }
    if cols.time.is_empty() || !acked {
        return None;
    }
    let mss = rows
        .iter()
        .zip(mss)
        .map(|(b, &m)| if m.is_nan() { b.max_pay as f64 } else { m })
        .collect();
    Some(Built {
        cols,
        rows,
        acks,
        min_rtt,
        mss,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pk(row: u32, time: f64, seq: i64, len: i64, ack: i64) -> Pk {
        Pk {
            row,
            time,
            seq,
            len,
            flags: if ack == MISSING { 0 } else { ACK },
            ack,
            win: 0,
            ts_val: MISSING,
            ts_ecr: MISSING,
            ttl: 0,
            mss: -1,
        }
    }

    #[test]
    fn held_packets_are_fed_in_capture_order() {
        let mut l = Live::new(4, [3, 0], 0.5);
        l.on_packet((0, &pk(0, 1.0, 0, 10, MISSING)), (false, None), -1, 0, &[]);
        // an ACK reaching direction 0's sender, then a segment sent before it
        l.on_packet((1, &pk(1, 3.0, 0, 0, 10)), (false, None), -1, 0, &[]);
        l.on_packet((0, &pk(2, 2.5, 10, 10, MISSING)), (false, None), -1, 0, &[]);
        l.on_packet((0, &pk(3, 4.0, 20, 10, MISSING)), (false, None), -1, 0, &[]);
        l.flush();
        let d = l.take(0).expect("a data direction");
        assert_eq!(d.rows, vec![0, 2, 3]);
        let b = built([(d, Vec::new())].into_iter(), 1, &[10.0]).expect("rows and an ACK");
        assert_eq!(b.cols.time, vec![1.0, 2.5, 4.0]);
        let t: Vec<bool> = b.cols.ack_t.iter().map(|x| x.is_nan()).collect();
        assert_eq!(t, vec![true, true, false]);
        // (the batch's first row counts as released by a new ACK: `rows_frames::build`)
        assert_eq!(b.cols.new_ack, vec![true, false, true]);
    }
}
