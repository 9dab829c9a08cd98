//! A data direction's cwnd estimate run as its rows come, so the stream holds its rows only since
//! the latest loss event that cuts them (issue 21's memory target; `docs/architecture.md`, "The
//! streamed summary").
//!
//! What the estimate reads of the whole direction from its first row comes from pass 1
//! (`facts::CwndFacts`: Karn's minimum RTT, the lowest data byte, the largest payload where no
//! SYN carried an MSS option); whether the capture is the sender's own view turns true within the
//! first rows of a sender-side capture (`cwnd::sent_on_ack`), and until it does the rows are held.
//! Then, per data row, in capture order:
//!
//! - each re-send above snd_una goes to the direction's `episodes::Finder`, with the timer mark
//!   its episode has so far (the first re-send of an episode the timer sent, RFC 6298 §5), and
//!   the events settle as the rows and ACKs that decide them are fed (`cwndview::Window`);
//! - a settled event whose first row `c` comes at or after the end of the event before it, and
//!   after a row of an earlier time (no later event can then read a row before `c`: its ending
//!   ACK comes after its own first row, which is after `c`), cuts the rows: the stretch before
//!   `c` runs through the direction's `stretch::DirEstimate` into the consumers
//!   (`cwndrun::Sink`) and its rows and the ACKs no later row reads are dropped;
//! - a segment SACKed whole after its row was fed to the pipe goes into the pipe's scoreboard
//!   then (`Pipe::late_sack`: only later rows read it); its bytes are kept while a later block
//!   may still name it ([`Go::gone`]).
//!
//! When the batch runs, the last stretch runs and the facts are checked: pass 1's against the
//! rows' own, the MSS against the batch's, each timer mark against the batch's final one (a later
//! D-SACK can still take the timeout out of an episode). If one differs the stream refuses the
//! file and the frames path answers (`cwndrun::run`), so the numbers stay those of one pass over
//! the whole direction (`tests/test_stream_document.py`; `cwndgo_tests.rs` compares the two on
//! random connections).
//!
//! Memory: the rows since the latest cut (a few thousand on big.pcap) and their ACKs, the bytes
//! of the dropped segments not yet ACKed, the events not run, one entry per re-sent episode.

use super::cwnd::{same_value, segment_size, DirIn, Est};
use super::cwndlive::DirLive;
use super::cwndrun::Sink;
use super::cwndstory::Story;
use super::cwndview::{last_of_each, marks_of, Rows, Window};
use super::facts::CwndFacts;
use crate::state::cwnd::episodes::{Cand, Episode, Finder};
use crate::state::cwnd::estimate::{ACK_CLOCKED_S, RESTART_S};
use crate::state::cwnd::stretch::DirEstimate;
use crate::state::cwnd::{sent_on_ack, Pipe};

/// Rows of the pipe's key buffer reserved up front.
const KEYS: usize = 1 << 12;

/// Late marks kept waiting for their rows at most (each data row is checked against them).
const WAITING: usize = 64;

/// A live run's state (see the module docs).
pub struct Go {
    facts: CwndFacts,
    finder: Finder,
    /// The estimate (None until the capture shows it is the sender's view and the first cut
    /// comes), and the segment size it reads.
    de: Option<DirEstimate>,
    mss: f64,
    sink: Sink,
    /// The capture is the sender's own view.
    here: bool,
    /// The current stretch's first row; rows below `piped` were fed to the pipe.
    s: usize,
    piped: usize,
    /// The latest settled event's end row; the settled events not run yet (first rows from `s`
    /// on) and the ends of settled events from `s` on (the pipe's filter restarts there).
    prev_end: Option<usize>,
    events: Vec<Episode>,
    ends: Vec<usize>,
    /// Dropped first transmissions an ACK has not covered yet: (packet row, seq, end, SACKed
    /// whole already).
    gone: Vec<(u32, i64, i64, bool)>,
    /// The highest packet row of a data row fed.
    max_fed: u32,
    /// The first data re-send of each episode (packet row) and the timer mark it was given.
    firsts: Vec<(u32, bool)>,
    /// Late marks whose segment was not fed yet (its time fell below the SACK's): (its packet
    /// row, the SACKing packet's row + 1).
    waiting: Vec<(u32, i64)>,
    /// The highest packet row fed to the pipe; a late mark came after a row it should reach was
    /// fed (a time fell there), or too many wait: the batch refuses the run.
    top_piped: u32,
    doubt: bool,
    /// The data rows are out of packet order (a time fell): found by a scan, not a search.
    unsorted: bool,
}

impl Go {
    /// A direction whose whole-direction facts pass 1 settled.
    pub fn new(facts: CwndFacts) -> Self {
        Go {
            facts,
            finder: Finder::new(0, facts.min_rtt),
            de: None,
            mss: f64::NAN,
            sink: Sink::default(),
            here: false,
            s: 0,
            piped: 0,
            prev_end: None,
            events: Vec::new(),
            ends: Vec::new(),
            gone: Vec::new(),
            max_fed: 0,
            firsts: Vec::new(),
            waiting: Vec::new(),
            top_piped: 0,
            doubt: false,
            unsorted: false,
        }
    }

    /// Some stretch ran (the rows before `s` are gone).
    pub fn ran(&self) -> bool {
        self.piped > 0
    }
}

impl DirLive {
    /// Runs the estimate as the rows come, from what pass 1 settled (`facts`).
    pub fn go(&mut self, facts: CwndFacts) {
        self.b.set_low(Some(facts.low));
        self.go = Some(Box::new(Go::new(facts)));
    }

    /// A live run that has cut nothing yet gives its rows back to the batch (`cwndrun`), which
    /// reads them as it reads held rows.
    pub fn hold(&mut self) {
        if self.go.take().is_some() {
            self.b.set_low(None);
        }
    }

    /// Some stretch ran: the batch finishes the direction with [`DirLive::go_finish`].
    pub fn ran(&self) -> bool {
        self.go.as_ref().is_some_and(|g| g.ran())
    }

    /// After data row `row` (packet row) was fed: its episode's timer mark if it is the first
    /// re-send of one, the sender's view, the finder's candidate, the events that settle.
    pub(super) fn go_row(&mut self, row: u32, to: Option<bool>) {
        let i = self.b.len() - 1;
        let Some(g) = self.go.as_mut() else { return };
        if let Some(t) = to {
            g.firsts.push((row, t));
        }
        // (late marks find their rows by packet row: searched, unless a time fell)
        let n = self.rows.len();
        g.unsorted |= n > 1 && self.rows[n - 2] > row;
        g.max_fed = g.max_fed.max(row);
        if let Some(k) = g.waiting.iter().position(|w| w.0 == row) {
            let (_, at) = g.waiting.swap_remove(k);
            self.out.seg.0.push(i as i64);
            self.out.seg.1.push(at);
        }
        if !g.here && i > 0 {
            let (m, a) = Rows::ack_marks(&self.b, i);
            g.here = sent_on_ack(std::iter::once((self.b.sent(i).0, a.ack_t, m)));
        }
        let retx = &self.out.retx;
        if retx.0.last() == Some(&(i as i64)) {
            let (_, end, _) = self.b.sent(i);
            let una = self.b.acked(i).una;
            if end > una {
                let c = Cand {
                    row: i,
                    seq_end: end,
                    hi: retx.1.last().copied().unwrap_or(0),
                    una,
                    to: retx.2.last().copied().unwrap_or(false),
                };
                let w = Window {
                    b: &self.b,
                    sack: &self.out.sack,
                    done: false,
                };
                g.finder.on_cand(c, &w);
            }
        }
        self.go_poll();
    }

    /// Settles the events the rows and ACKs fed so far decide, cutting where one may.
    pub(super) fn go_poll(&mut self) {
        let Some(g) = self.go.as_mut() else { return };
        let w = Window {
            b: &self.b,
            sack: &self.out.sack,
            done: false,
        };
        let mut out = Vec::new();
        g.finder.poll(&w, &mut out);
        // (the event after each: the next one settled, else the first still open)
        let last = g.finder.pending();
        let nexts: Vec<Option<(usize, bool)>> = (0..out.len())
            .map(|k| out.get(k + 1).map(|e| (e.i, e.to)).or(last))
            .collect();
        for (e, nxt) in out.into_iter().zip(nexts) {
            let (first, end) = (e.i, e.j_end);
            let after = self.go_settled(e);
            // at its own first row (where the event before it ended before), or already at the
            // next event's first row once this one ended before it (that event has started:
            // its first row and timer mark are known), so the rows held span one stretch
            if after && self.go_cuts(first) {
                self.go_run(Some(first), None);
            }
            if let Some((c, to)) = nxt.filter(|x| end <= x.0) {
                if self.go_cuts(c) {
                    self.go_run(Some(c), Some((c, to)));
                }
            }
        }
    }

    /// A settled event kept for its stretch; whether the event before it ended at or before its
    /// first row.
    fn go_settled(&mut self, e: Episode) -> bool {
        let Some(g) = self.go.as_mut() else {
            return false;
        };
        let after = g.prev_end.is_none_or(|j| j <= e.i);
        g.prev_end = Some(e.j_end);
        if e.j_end < self.b.len() {
            g.ends.push(e.j_end);
        }
        g.events.push(e);
        after
    }

    /// Whether the rows may be cut at row `c`, where an event starts after the end of the one
    /// before it; makes the estimate at the first cut.
    fn go_cuts(&mut self, c: usize) -> bool {
        let Some(g) = self.go.as_mut() else {
            return false;
        };
        // (a row of an earlier time before it: no later event reads a row before `c`)
        let rising = c > g.s
            && c > self.b.base()
            && c < self.b.len()
            && self.b.sent(c - 1).0 < self.b.sent(c).0;
        if !(g.here && rising) {
            return false;
        }
        if g.de.is_none() {
            let f = g.facts;
            g.mss = segment_size(self.syn_mss, f.top);
            let pipe = Pipe::new(f.min_rtt, ACK_CLOCKED_S, true, KEYS).restart_after(RESTART_S);
            g.de = Some(DirEstimate::new(pipe, g.mss, i64::MIN, f64::NAN, true));
        }
        true
    }

    /// Runs the stretch from `s` up to row `c` (None: the last, to the direction's end) and
    /// drops what no later row reads; `open`: the event starting at `c` when it has not settled
    /// yet (its first row and timer mark: the pipe reads them at `c`).
    fn go_run(&mut self, c: Option<usize>, open: Option<(usize, bool)>) {
        let n = self.b.len();
        let Some(g) = self.go.as_mut() else { return };
        let Some(de) = g.de.as_mut() else { return };
        let (s, hi) = (g.s, c.unwrap_or(n));
        let k = g.events.partition_point(|e| e.i < hi);
        let marks = marks_of(&g.events, open, g.ends.iter().copied());
        let seg = last_of_each(self.out.seg.clone());
        let mut input = Rows::new(&self.b, (&self.out.sack, &seg), marks, true);
        let sink = &mut g.sink;
        let mut emit = |t: &[f64], e: &[f64], x: &[f64], p: &[u8]| sink.rows(t, e, x, p);
        let span = (hi - s, c.is_none());
        de.stretch(&mut input, (s, 0), span, &g.events[..k], &mut emit);
        let Some(c) = c else { return };
        let top = self.rows[..=c - self.b.base()].iter().max().copied();
        g.top_piped = g.top_piped.max(top.unwrap_or(0));
        g.events.drain(..k);
        g.ends.retain(|&j| j >= c);
        // the dropped segments a later block may still SACK whole (an ACK past them: never)
        let una = self.b.acked(c).una;
        let seg = &self.out.seg.0;
        for i in s..c {
            let (_, end, pay) = self.b.sent(i);
            if end > una {
                let row = self.rows[i - self.b.base()];
                let marked = seg.contains(&(i as i64));
                g.gone.push((row, end.wrapping_sub(pay), end, marked));
            }
        }
        g.gone.retain(|x| x.2 > una);
        let base = self.b.base();
        self.rows.drain(..c - base);
        self.b.drop_before(c);
        let below = |v: &[i64]| v.partition_point(|&r| r < c as i64);
        let o = &mut self.out;
        let d = below(&o.sack.0);
        o.sack.0.drain(..d);
        o.sack.1.drain(..d);
        o.sack.2.drain(..d);
        // (late marks come in the order of the packets that SACK them, not by row)
        let seg: Vec<(i64, i64)> = o
            .seg
            .0
            .iter()
            .copied()
            .zip(o.seg.1.iter().copied())
            .collect();
        (o.seg.0, o.seg.1) = seg.into_iter().filter(|x| x.0 >= c as i64).unzip();
        let d = below(&o.retx.0);
        o.retx.0.drain(..d);
        o.retx.1.drain(..d);
        o.retx.2.drain(..d);
        g.s = c;
        g.piped = c + 1;
    }

    /// First transmission `s` (packet row) SACKed whole by the block of the packet at `at`: its
    /// row's mark while the row waits for the pipe, else into the pipe's scoreboard.
    pub(super) fn go_late(&mut self, s: u32, at: u32) {
        let Some(g) = self.go.as_mut() else { return };
        // (a row fed to the pipe after the SACKing packet in the file counts the segment as
        // SACKed: it came earlier in the capture order, so the mark is late for it)
        g.doubt |= g.piped > 0 && g.top_piped > at;
        let at = i64::from(at) + 1;
        let base = self.b.base();
        let (rows, gone) = (&self.rows, &g.gone);
        let (found, dropped) = if g.unsorted {
            (
                rows.iter().position(|&r| r == s),
                gone.iter().position(|x| x.0 == s),
            )
        } else {
            (
                rows.binary_search(&s).ok(),
                gone.binary_search_by_key(&s, |x| x.0).ok(),
            )
        };
        // (a segment marked twice counts from its last mark on, `cwndrun::last_of_each`: rows
        // fed to the pipe since the first cannot take that back)
        let seg = &mut self.out.seg;
        if let Some(k) = found {
            let i = base + k;
            if i < g.piped {
                g.doubt |= seg.0.contains(&(i as i64));
                if let Some(de) = g.de.as_mut() {
                    let (_, end, pay) = self.b.sent(i);
                    de.late_sack(end.wrapping_sub(pay), end, at);
                }
            }
            seg.0.push(i as i64);
            seg.1.push(at);
        } else if let Some(k) = dropped {
            let (_, seq, end, marked) = g.gone[k];
            g.doubt |= marked;
            g.gone[k].3 = true;
            if let Some(de) = g.de.as_mut() {
                de.late_sack(seq, end, at);
            }
        } else if s > g.max_fed {
            // (its row is not fed yet: a time fell)
            g.waiting.push((s, at));
            g.doubt |= g.waiting.len() > WAITING;
        } else {
            // a row dropped once an ACK covered it (no row fed from now on reads it), or no data
            // row of the direction; unless a time fell, and its row may still come
            g.doubt |= g.unsorted;
        }
    }

    /// The direction's statistics and story once its batch runs (`x`: its key, segment size
    /// and evidence reach; `timeouts`: the batch's timer re-sends of the direction, packet
    /// rows ascending; `strict`: the batch's minimum-RTT rule); an error where a fact the run
    /// read differs from the batch's (see the module docs).
    pub fn go_finish(
        mut self,
        x: &DirIn,
        timeouts: &[u32],
        (strict, evidence): (bool, &[f64]),
    ) -> Result<(Est, Story), String> {
        let n = self.b.len();
        let end_una = self.b.acks().1.last().copied().unwrap_or(i64::MIN);
        let Some(g) = self.go.as_mut() else {
            return Err("not a live direction".into());
        };
        let w = Window {
            b: &self.b,
            sack: &self.out.sack,
            done: true,
        };
        g.finder.end(n);
        let mut out = Vec::new();
        g.finder.poll(&w, &mut out);
        if let Some(de) = g.de.as_mut() {
            de.set_end_una(end_una);
        }
        // (the events left settle now; no cut: the last stretch runs to the end)
        for e in out {
            self.go_settled(e);
        }
        self.go_run(None, None);
        let g = self.go.take().ok_or("the live run was lost")?;
        let f = &g.facts;
        let mss = x.mss_or(self.b.max_pay);
        let marks = g
            .firsts
            .iter()
            .all(|&(r, t)| t == timeouts.binary_search(&r).is_ok());
        let checks = [
            (
                !g.doubt,
                "a segment SACKed whole after rows that read it were run",
            ),
            (same_value(f.min_rtt, self.b.min_rtt(strict)), "minimum RTT"),
            (self.b.lowest() == Some(f.low), "lowest data byte"),
            (same_value(g.mss, mss), "segment size"),
            (marks, "timer marks"),
        ];
        if let Some((_, what)) = checks.iter().find(|c| !c.0) {
            return Err(format!(
                "the live cwnd estimate of flow {} direction {} read a value its batch does not \
                 confirm ({what})",
                x.flow, x.dir
            ));
        }
        let (mut est, story) = g.sink.finish((evidence, x.tol), Some(true));
        est.live = true;
        Ok((est, story))
    }
}
