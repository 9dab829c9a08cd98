//! The cwnd stage of a batch fed live (`cwnd::run_live`), run a stretch at a time straight into
//! its consumers: each data direction's rows are read where `DirRows` holds them
//! ([`DirRows::sent`], [`DirRows::acked`]) and never written out as the estimate's columns, the
//! estimate runs one stretch at a time (`stretch::stretches`, the frames path's own
//! `DirEstimate`), and the rows it gives out feed the reductions pass (`events::Decreases`,
//! `Backing`, `Stats`) and the account's story (`story::Story::on_row`) as they come. What
//! `cwndest::stats` computes over columns, the same values (`cwndrun_tests.rs` compares both on
//! the same rows).
//!
//! The batch's couplings stay: more than 64 directions make the minimum RTT strict, a direction
//! without ACKs searches the whole batch's ACK stream for its events' ends, and the SACK place of
//! every row is read once any direction's segments get SACKed. (The frames' fourth, a
//! direction's first row taking its new-ACK mark from the previous direction, changes nothing
//! the estimate reads: [`Rows::ack_marks`].)
//!
//! Memory beyond the held rows: one stretch's rows and estimate (about 60 B a row), the story's
//! rows of one instant, and the events and reductions of one direction.

use super::conn::CwndFacts;
use super::cwnd::{DirIn, Est};
use super::cwndlive::DirLive;
use super::cwndstory::Story;
use crate::state::cwnd::episodes::{find, Dir, Episode, RowsAt, SackedAt};
use crate::state::cwnd::estimate::{ACK_CLOCKED_S, RESTART_S};
use crate::state::cwnd::events::{Backing, Decreases, Evidence, Row, Stats};
use crate::state::cwnd::rows::{Acked, DirRows, RowCols};
use crate::state::cwnd::story::{Story as Steps, CAP};
use crate::state::cwnd::stretch::{cuts, stretches, DirEstimate, Input};
use crate::state::cwnd::{
    sent_on_ack, Pipe, RowIn, SackInfo, DUP, EPOCH, NEW_ACK, RECOVERY, SEG, TIMEOUT,
};

/// Rows of the pipe's key buffer reserved up front (it grows past this only inside a stretch).
const KEYS: usize = 1 << 12;

/// One data direction's rows, its late marks placed, read row by row.
struct View {
    b: DirRows,
    /// Rows with SACKed bytes above una (ascending, each once): row, bytes, flight place.
    sack: (Vec<i64>, Vec<i64>, Vec<i64>),
    /// Rows whose segments get SACKed (ascending, each once: a repeated row's last place, as
    /// the estimate's scatter keeps it) and from which flight place on.
    seg: (Vec<i64>, Vec<i64>),
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
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        (f.top >= 0).then(|| {
            same(f.min_rtt, min_rtt) && Some(f.low) == self.b.low() && f.top == self.b.max_pay
        })
    }
}

/// `(rows, values)` sorted by row, a repeated row keeping its last value (a stable sort).
fn last_of_each((rows, vals): (Vec<i64>, Vec<i64>)) -> (Vec<i64>, Vec<i64>) {
    if rows.windows(2).all(|w| w[0] < w[1]) {
        return (rows, vals);
    }
    let mut k: Vec<(i64, i64)> = rows.into_iter().zip(vals).collect();
    k.sort_by_key(|x| x.0);
    let mut out: (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for (j, &(r, v)) in k.iter().enumerate() {
        if k.get(j + 1).is_none_or(|x| x.0 != r) {
            out.0.push(r);
            out.1.push(v);
        }
    }
    out
}

impl RowsAt for View {
    fn time(&self, i: usize) -> f64 {
        self.b.sent(i).0
    }
    fn seq_end(&self, i: usize) -> i64 {
        self.b.sent(i).1
    }
    fn pay(&self, i: usize) -> i64 {
        self.b.sent(i).2
    }
    fn una(&self, i: usize) -> i64 {
        self.b.acked(i).una
    }
}

impl SackedAt for View {
    fn sacked(&self, i: usize) -> i64 {
        match self.sack.0.binary_search(&(i as i64)) {
            Ok(k) => self.sack.1[k],
            Err(_) => 0,
        }
    }
}

/// The place of row `i` in `rows` (ascending), from `k` on (rows read in ascending order, a row
/// possibly twice: `k` never passes `i`).
fn seek(rows: &[i64], k: &mut usize, i: usize) -> Option<usize> {
    while rows.get(*k).is_some_and(|&r| r < i as i64) {
        *k += 1;
    }
    (rows.get(*k) == Some(&(i as i64))).then_some(*k)
}

/// A view's rows as the pipe takes them (`DirPipe::input`'s values): the duplicate- and
/// new-ACK marks, the events' marks (`estimate::pipe_of`), the SACK columns.
struct Rows<'a> {
    v: &'a View,
    /// The events' marks by row (ascending, each row once).
    marks: Vec<(usize, u8)>,
    /// Whether the SACK places are read (some direction of the batch gets segments SACKed).
    info: bool,
    km: usize,
    ks: usize,
    ka: usize,
}

impl<'a> Rows<'a> {
    /// `v`'s rows with events `eps`: each event's first row starts an epoch and a filter
    /// segment (a timeout's is marked so), its end row (inside the rows) a filter segment.
    fn new(v: &'a View, eps: &[Episode], info: bool) -> Self {
        let n = v.n();
        let mut marks: Vec<(usize, u8)> = Vec::with_capacity(2 * eps.len());
        for e in eps {
            marks.push((e.i, EPOCH | SEG | if e.to { TIMEOUT } else { 0 }));
            if e.j_end < n {
                marks.push((e.j_end, SEG));
            }
        }
        marks.sort_by_key(|m| m.0);
        marks.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 |= b.1;
            }
            same
        });
        Rows {
            v,
            marks,
            info,
            km: 0,
            ks: 0,
            ka: 0,
        }
    }

    /// The duplicate- and new-ACK marks of row `i`. (The frames give a direction's first row
    /// the previous direction's new-ACK mark, but the first row reads none of it: it starts a
    /// burst and a filter segment anyway, `Pipe::on_row`, and `at_sender` skips it.)
    fn ack_marks(&self, i: usize) -> (u8, Acked) {
        let a = self.v.b.acked(i);
        (
            if a.dup { DUP } else { 0 } | if a.new_ack { NEW_ACK } else { 0 },
            a,
        )
    }
}

impl Input for Rows<'_> {
    fn input(&mut self, i: usize) -> RowIn {
        let v = self.v;
        let (time, seq_end, len) = v.b.sent(i);
        let (mut m, a) = self.ack_marks(i);
        while self.marks.get(self.km).is_some_and(|x| x.0 < i) {
            self.km += 1;
        }
        if let Some(x) = self.marks.get(self.km).filter(|x| x.0 == i) {
            m |= x.1;
        }
        let s = seek(&v.sack.0, &mut self.ks, i);
        let sk = if self.info {
            SackInfo {
                len,
                pos: s.map_or(-1, |k| v.sack.2[k]),
                at: seek(&v.seg.0, &mut self.ka, i).map_or(-1, |k| v.seg.1[k]),
            }
        } else {
            SackInfo {
                len,
                ..SackInfo::NONE
            }
        };
        RowIn {
            time,
            seq_end,
            una: a.una,
            sacked: s.map_or(0, |k| v.sack.1[k]),
            sk,
            marks: m,
            ack_t: a.ack_t,
        }
    }
}

/// The consumers of one direction's estimate rows (`cwndest::stats`' reductions pass and
/// `cwndstory::of_direction`, fed as the rows come): the story's rows wait until a later time
/// comes, since a row's cut is a reduction at its time, which a later row of the same time
/// may make.
struct Sink<'a> {
    dec: Decreases,
    back: Backing<'a>,
    stats: Stats,
    steps: Steps,
    rows: usize,
    /// The reductions' times and loss flags (in row order: the times ascend).
    red_t: Vec<f64>,
    backed: Vec<bool>,
    /// Rows of the latest time (time, estimate, phase) and the reductions among them.
    same: Vec<(f64, f64, i8)>,
    same_red: usize,
}

impl<'a> Sink<'a> {
    fn new(evidence: &'a [f64], tol: f64) -> Self {
        Sink {
            dec: Decreases::new(false),
            back: Backing::new(evidence, Some(tol)),
            stats: Stats::default(),
            steps: Steps::new(CAP),
            rows: 0,
            red_t: Vec::new(),
            backed: Vec::new(),
            same: Vec::new(),
            same_red: 0,
        }
    }

    /// Final rows: times, estimates, ssthresh (NaN: none yet), phase codes.
    fn rows(&mut self, t: &[f64], e: &[f64], st: &[f64], ph: &[u8]) {
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
                let loss = self.back.backed(&red);
                if loss {
                    self.stats.loss(red.time);
                }
                self.red_t.push(red.time);
                self.backed.push(loss);
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
        let nred = self.red_t.len();
        let from = nred - self.same_red;
        let cut = (self.same_red > 0).then(|| self.backed[from]);
        for (q, &(t, v, p)) in self.same.iter().enumerate() {
            let anchors = if q == 0 { from..nred } else { nred..nred };
            self.steps.on_row(t, v, p, cut, anchors);
        }
        self.same.clear();
        self.same_red = 0;
    }

    /// The direction's statistics (`facts`: [`View::facts_hold`]) and story (the estimate's
    /// rule reduces at its own row, so `Decreases::finish` has no run left to close).
    fn finish(mut self, facts: Option<bool>) -> (Est, Story) {
        self.tell();
        let est = Est {
            max_cwnd: self.stats.max_cwnd.get(),
            loss_events: self.stats.losses,
            facts,
        };
        let mut told = self.steps.finish();
        told.cuts.sort_by_key(|c| c.index);
        let story = Story {
            rows: self.rows,
            red_t: self.red_t,
            backed: self.backed,
            told,
        };
        (est, story)
    }
}

/// What every direction of the batch shares.
struct Batch<'a> {
    strict: bool,
    info: bool,
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
        find(v, &d, true)
    };
    let mut input = Rows::new(v, &eps, b.info);
    let here = sent_on_ack((1..n).map(|i| {
        let (m, a) = input.ack_marks(i);
        (v.b.sent(i).0, a.ack_t, m)
    }));
    let pipe = Pipe::new(min_rtt, ACK_CLOCKED_S, here, n.min(KEYS)).restart_after(RESTART_S);
    let end_una = v.b.acks().1.last().copied().unwrap_or(i64::MIN);
    let mss = if x.mss.is_nan() {
        v.b.max_pay as f64
    } else {
        x.mss
    };
    // (a capture's stack holds ssthresh on a backed-off expiry and starts its data without
    // one after a lost SYN: `estimate::ssthresh_at_start`)
    let mut de = DirEstimate::new(pipe, mss, end_una, f64::NAN, true);
    let cut = cuts(&eps, 0);
    let mut sink = Sink::new(b.evidence.of((i64::from(x.flow), i64::from(x.dir))), x.tol);
    let mut emit = |t: &[f64], e: &[f64], s: &[f64], p: &[u8]| sink.rows(t, e, s, p);
    stretches(&mut input, &mut de, (0, n), (&eps, &cut), &mut emit);
    sink.finish(v.facts_hold(min_rtt))
}

/// The batch's `dirs.len()` data directions (`(flow, dir)` order, each with the packet rows of
/// its timer re-sends), each direction's statistics and story (None: no rows; all None when
/// the batch has no rows or no ACK).
pub fn run(
    live: impl Iterator<Item = (DirLive, Vec<u32>)>,
    dirs: &[DirIn],
    evidence: &Evidence,
) -> Result<Vec<Option<(Est, Story)>>, String> {
    let mut views: Vec<View> = Vec::with_capacity(dirs.len());
    for (l, to) in live {
        views.push(View::new(l, &to)?);
    }
    let none = || Ok(vec![None; dirs.len()]);
    if views.iter().all(|v| v.n() == 0) || views.iter().all(|v| v.b.acks_fed() == 0) {
        return none();
    }
    let needs_all = views
        .iter()
        .any(|v| v.b.acks_fed() == 0 && !v.retx.0.is_empty());
    let all_acks = if needs_all {
        let t = views.iter().flat_map(|v| v.b.acks().0.iter().copied());
        let u = views.iter().flat_map(|v| v.b.acks().1.iter().copied());
        (t.collect(), u.collect())
    } else {
        Default::default()
    };
    let b = Batch {
        strict: dirs.len() > 64,
        info: views.iter().any(|v| !v.seg.0.is_empty()),
        evidence,
        all_acks,
    };
    let out = views
        .into_iter()
        .zip(dirs)
        .enumerate()
        .map(|(k, (v, x))| (v.n() > 0).then(|| direction(&v, k, x, &b)))
        .collect();
    Ok(out)
}

#[cfg(test)]
#[path = "cwndrun_tests.rs"]
mod tests;
