//! The cwnd stage of a batch fed live (`cwnd::run_live`), run a stretch at a time straight into
//! its consumers: each data direction's rows are read where `DirRows` holds them
//! ([`DirRows::sent`], [`DirRows::acked`]) and never written out as the estimate's columns, the
//! estimate runs one stretch at a time (`stretch::stretches`, the frames path's own
//! `DirEstimate`), and the rows it gives out feed the reductions pass (`events::Decreases`,
//! `Backing`, `Stats`) and the account's story (`story::Story::on_row`) as they come. What
//! `cwndest::stats` computes over columns, the same values (`cwndrun_tests.rs` compares both on
//! the same rows).
//!
//! The batch's couplings stay: more than 64 directions make the minimum RTT strict, and a
//! direction without ACKs searches the whole batch's ACK stream for its events' ends. Two more
//! of the frames change nothing the estimate reads: a direction's first row taking its new-ACK
//! mark from the previous direction ([`Rows::ack_marks`]), and the SACK place of every row read
//! once any direction of the batch gets a segment SACKed ([`Rows`]' `info`: read always here).
//!
//! A direction run live (`cwndgo`) has run its stretches as its rows came: it is finished by
//! its own run and takes no part in the rest.
//!
//! Memory beyond the held rows: one stretch's rows and estimate (about 60 B a row), the story's
//! rows of one instant, and the events and reductions of one direction.

use super::cwnd::{same_value, DirIn, Est};
use super::cwndlive::DirLive;
use super::cwndstory::Story;
use super::cwndview::{last_of_each, marks_of, Rows, SackCols, SegCols, Window};
use super::facts::CwndFacts;
use crate::state::cwnd::episodes::{find, Dir};
use crate::state::cwnd::estimate::{ACK_CLOCKED_S, RESTART_S};
use crate::state::cwnd::events::{Backing, Decreases, Evidence, Reduction, Row, Stats};
use crate::state::cwnd::rows::{DirRows, RowCols};
use crate::state::cwnd::story::{Ends, Story as Steps, CAP};
use crate::state::cwnd::stretch::{cuts, stretches, DirEstimate};
use crate::state::cwnd::{sent_on_ack, Pipe, RECOVERY};

/// Rows of the pipe's key buffer reserved up front (it grows past this only inside a stretch).
const KEYS: usize = 1 << 12;

/// One data direction's rows, its late marks placed, read row by row.
struct View {
    b: DirRows,
    sack: SackCols,
    /// (a repeated row's last place, as the estimate's scatter keeps it)
    seg: SegCols,
    /// Retransmitted rows (ascending), the highest byte sent before each, timer-sent.
    retx: (Vec<i64>, Vec<i64>, Vec<bool>),
    /// What pass 1 settled of the direction.
    facts: CwndFacts,
}

impl View {
    /// Direction rows `l` with `timeouts`, its timer re-sends (an error, never met, where its
    /// sparse columns are not in row order: `DirLive::on_data` writes them so).
    fn new(l: DirLive, timeouts: &[u32]) -> Result<View, String> {
        let facts = l.facts;
        let (b, out) = l.settled(timeouts);
        let RowCols {
            sack, seg, retx, ..
        } = out;
        let up = |v: &[i64]| v.windows(2).all(|w| w[0] < w[1]);
        if !up(&sack.0) || !up(&retx.0) {
            return Err("a direction's SACK or retransmission rows are out of row order".into());
        }
        Ok(View {
            b,
            sack,
            seg: last_of_each(seg),
            retx,
            facts,
        })
    }

    fn n(&self) -> usize {
        self.b.len()
    }

    /// Whether pass 1's facts are the rows' own (None: pass 1 settled none): what a stream that
    /// runs the estimate as the rows come would have read from the first row.
    fn facts_hold(&self, min_rtt: f64) -> Option<bool> {
        let f = &self.facts;
        (f.top >= 0).then(|| {
            same_value(f.min_rtt, min_rtt)
                && Some(f.low) == self.b.lowest()
                && f.top == self.b.max_pay
        })
    }
}

/// The consumers of one direction's estimate rows (`cwndest::stats`' reductions pass and
/// `cwndstory::of_direction`, fed as the rows come): the story's rows wait until a later time
/// comes, since a row's cut is a reduction at its time, which a later row of the same time may
/// make; the reductions are weighed against the loss evidence when the direction ends (a stream
/// sees the evidence of a reduction only up to its time plus the reach, and a later D-SACK may
/// still take a re-send out of it), and the story takes their flags then (`story::Ends`).
pub struct Sink {
    dec: Decreases,
    stats: Stats,
    steps: Steps,
    rows: usize,
    /// The reductions (in row order: the times ascend).
    reds: Vec<Reduction>,
    /// Rows of the latest time (time, estimate, phase) and the reductions among them.
    same: Vec<(f64, f64, i8)>,
    same_red: usize,
}

impl Default for Sink {
    fn default() -> Self {
        Sink {
            dec: Decreases::new(false),
            stats: Stats::default(),
            steps: Steps::new(CAP),
            rows: 0,
            reds: Vec::new(),
            same: Vec::new(),
            same_red: 0,
        }
    }
}

impl Sink {
    /// Final rows: times, estimates, ssthresh (NaN: none yet), phase codes.
    pub fn rows(&mut self, t: &[f64], e: &[f64], st: &[f64], ph: &[u8]) {
        for (((&t, &e), &st), &ph) in t.iter().zip(e).zip(st).zip(ph) {
            if self.same.first().is_some_and(|x| x.0 != t) {
                self.tell();
            }
            self.stats.row(Some(e));
            let r = Row {
                time: t,
                cwnd: Some(e),
                ssthresh: (!st.is_nan()).then_some(st),
                recovery: ph == RECOVERY,
            };
            if let Some(red) = self.dec.push(self.rows, r) {
                self.reds.push(red);
                self.same_red += 1;
            }
            // (the estimate's codes are each below the Enum's 3 categories)
            self.same.push((t, e, i8::try_from(ph).unwrap_or(-1)));
            self.rows += 1;
        }
    }

    /// Tells the rows of the latest time: a reduction among them is each one's cut (`tell`:
    /// the first reduction at that time) and anchors at the first of them.
    fn tell(&mut self) {
        let nred = self.reds.len();
        let from = nred - self.same_red;
        let cut = (self.same_red > 0).then_some(Ends::Later(from));
        for (q, &(t, v, p)) in self.same.iter().enumerate() {
            let anchors = if q == 0 { from..nred } else { nred..nred };
            self.steps.on_row_at(t, v, p, cut, anchors);
        }
        self.same.clear();
        self.same_red = 0;
    }

    /// The direction's statistics (`facts`: [`View::facts_hold`]) and story, its reductions
    /// backed by the loss evidence (`evidence`, ascending) within `tol` (the estimate's rule
    /// reduces at its own row, so `Decreases::finish` has no run left to close).
    pub fn finish(mut self, (evidence, tol): (&[f64], f64), facts: Option<bool>) -> (Est, Story) {
        self.tell();
        let mut back = Backing::new(evidence, Some(tol));
        let backed: Vec<bool> = self.reds.iter().map(|r| back.backed(r)).collect();
        for (r, _) in self.reds.iter().zip(&backed).filter(|x| *x.1) {
            self.stats.loss(r.time);
        }
        let est = Est {
            max_cwnd: self.stats.max_cwnd.get(),
            loss_events: self.stats.losses,
            facts,
            live: false,
        };
        let mut told = self.steps.finish_with(&backed);
        told.cuts.sort_by_key(|c| c.index);
        let story = Story {
            rows: self.rows,
            red_t: self.reds.iter().map(|r| r.time).collect(),
            backed,
            told,
        };
        (est, story)
    }
}

/// What every direction of the batch shares.
struct Batch<'a> {
    strict: bool,
    evidence: &'a Evidence,
    /// The whole batch's ACKs (for a direction without any: see the module docs).
    all_acks: (Vec<f64>, Vec<i64>),
}

/// Direction `k` of the batch (`x`: its key, segment size and evidence reach), the estimate
/// run a stretch at a time into its consumers.
fn direction(v: &View, k: usize, x: &DirIn, b: &Batch) -> (Est, Story) {
    let n = v.n();
    let min_rtt = v.b.min_rtt(b.strict);
    let (t_ack, una_ack) = match v.b.acks() {
        ([], _) => (&b.all_acks.0[..], &b.all_acks.1[..]),
        own => own,
    };
    let eps = if v.retx.0.is_empty() {
        Vec::new()
    } else {
        let d = Dir {
            d: k,
            lo: 0,
            hi: n,
            tt: v.b.times(),
            t_ack,
            una_ack,
            retx: &v.retx.0,
            retx_hi: &v.retx.1,
            retx_to: &v.retx.2,
            min_rtt,
        };
        let w = Window {
            b: &v.b,
            sack: &v.sack,
            done: true,
        };
        find(&w, &d, true)
    };
    let marks = marks_of(&eps, None, eps.iter().map(|e| e.j_end).filter(|&j| j < n));
    let mut input = Rows::new(&v.b, (&v.sack, &v.seg), marks, true);
    let here = sent_on_ack((1..n).map(|i| {
        let (m, a) = Rows::ack_marks(&v.b, i);
        (v.b.sent(i).0, a.ack_t, m)
    }));
    let pipe = Pipe::new(min_rtt, ACK_CLOCKED_S, here, n.min(KEYS)).restart_after(RESTART_S);
    let end_una = v.b.acks().1.last().copied().unwrap_or(i64::MIN);
    let mss = x.mss_or(v.b.max_pay);
    // (a capture's stack holds ssthresh on a backed-off expiry and starts its data without
    // one after a lost SYN: `estimate::ssthresh_at_start`)
    let mut de = DirEstimate::new(pipe, mss, end_una, f64::NAN, true);
    let cut = cuts(&eps, 0);
    let mut sink = Sink::default();
    let mut emit = |t: &[f64], e: &[f64], s: &[f64], p: &[u8]| sink.rows(t, e, s, p);
    stretches(&mut input, &mut de, (0, n), (&eps, &cut), &mut emit);
    let ev = b.evidence.of((i64::from(x.flow), i64::from(x.dir)));
    sink.finish((ev, x.tol), v.facts_hold(min_rtt))
}

/// The batch's `dirs.len()` data directions (`(flow, dir)` order, each with the packet rows of
/// its timer re-sends), each direction's statistics and story (None: no rows; all None when
/// the batch has no rows or no ACK).
pub fn run(
    live: impl Iterator<Item = (DirLive, Vec<u32>)>,
    dirs: &[DirIn],
    evidence: &Evidence,
) -> Result<Vec<Option<(Est, Story)>>, String> {
    let strict = dirs.len() > 64;
    // directions run live are finished by their run (`cwndgo`), the others read here
    let (mut views, mut done): (Vec<View>, Vec<Option<(Est, Story)>>) = Default::default();
    for ((mut l, to), x) in live.zip(dirs) {
        if l.ran() {
            let ev = evidence.of((i64::from(x.flow), i64::from(x.dir)));
            done.push(Some(l.go_finish(x, &to, (strict, ev))?));
            views.push(View::new(DirLive::new(0), &[])?);
        } else {
            l.hold();
            done.push(None);
            views.push(View::new(l, &to)?);
        }
    }
    let ran = done.iter().any(Option::is_some);
    let none = || Ok(vec![None; dirs.len()]);
    if !ran && (views.iter().all(|v| v.n() == 0) || views.iter().all(|v| v.b.acks_fed() == 0)) {
        return none();
    }
    let needs_all = views
        .iter()
        .any(|v| v.b.acks_fed() == 0 && !v.retx.0.is_empty());
    if needs_all && ran {
        // (the ACKs of the directions run live are gone: the frames path answers)
        return Err("a direction without ACKs shares its batch with one run live".into());
    }
    let all_acks = if needs_all {
        let t = views.iter().flat_map(|v| v.b.acks().0.iter().copied());
        let u = views.iter().flat_map(|v| v.b.acks().1.iter().copied());
        (t.collect(), u.collect())
    } else {
        Default::default()
    };
    let b = Batch {
        strict,
        evidence,
        all_acks,
    };
    let out = views
        .into_iter()
        .zip(dirs)
        .zip(done)
        .enumerate()
        .map(|(k, ((v, x), d))| d.or_else(|| (v.n() > 0).then(|| direction(&v, k, x, &b))))
        .collect();
    Ok(out)
}

#[cfg(test)]
#[path = "cwndrun_tests.rs"]
mod tests;
