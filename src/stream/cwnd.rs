//! The cwnd stage of the streamed summary: `max_cwnd_bytes`, `cwnd_source` and `loss_events`.
//!
//! Per connection ([`ConnCwnd`]) pass 2 keeps each retransmission as `retrans::Conn::on_packet`
//! judged it (its kind, turned `spurious` when a later D-SACK says so, RFC 2883, and its
//! recovery episode), and feeds each TCP packet with the SACK scoreboard's two marks
//! (`sack::ConnFlight`, the step `tcp_flight_sack` calls: the SACKed bytes above una of each
//! data segment, unacked − pipe, RFC 6675 "pipe", and, once a later block covers a first
//! transmission whole, the packet that SACKed it) to the estimate's row builders as it comes
//! (`cwndlive`: `cwnd::rows::DirRows`, the frames path's own). Only a batch with a NaN or
//! infinite time logs what the frames path hands `_core.cwnd_rows` instead: each packet's kind
//! bits, time, row (the frame's place), relative sequence and ACK numbers and payload.
//!
//! When the last packet of a batch of connections as `analyze` cuts them
//! (`tracekit.analysis._batches`) has been fed, [`run`] runs the estimate and the reductions
//! pass (`cwnd::events`) the frames path runs, backed by the batch's loss evidence (re-sends
//! with data that are not spurious) within each direction's least RTT sample: a batch fed live
//! one direction and one stretch at a time from the rows where they are held, its consumers fed
//! as the rows come (`cwndrun`); a logged batch over the columns `rows_frames::build` makes of
//! its packets and marks, with its batch-wide rules (the capture order, the first row's new
//! ACK, the strict minimum RTT over 64 directions), then the same `estimate` (`cwndest`).
//!
//! Memory: the rows (`cwndlive`: 46 B per data segment, 16 B per ACK) and 24 B per
//! retransmission until the batch runs, then one stretch's rows at a time (a logged batch: 40 B
//! per TCP packet, 16 B per SACK mark, then the columns).

use super::conn::{CwndFacts, Pk};
use super::cwndest::stats;
use super::cwndlive::{DirLive, Live};
use super::cwndrun;
use super::cwndstory::Story;
use crate::state::cwnd::events::Evidence;
use crate::state::cwnd::rows_frames::{self as rf, build, Frames, Keys, Packets};
use crate::state::retrans::{Verdict, RTO, SPURIOUS};
use crate::state::sack::FlightRow;
use crate::state::seq::{ACK, MISSING, SYN};
use std::collections::HashMap;

/// One retransmission (a row of the retransmissions frame).
#[derive(Clone, Copy, Debug)]
struct Rx {
    time: f64,
    episode: i32,
    row: u32,
    d: u8,
    kind: u8,
    data: bool,
}

/// What one connection hands the cwnd estimate (see the module docs).
#[derive(Default)]
pub struct ConnCwnd {
    /// Its packets as `rows_frames::Packets`' columns (`flow` left empty: the connection's).
    pk: Cols,
    rx: Vec<Rx>,
    /// Data segments with SACKed bytes above una: (row, bytes, direction).
    sacked: Vec<(u32, i64, u8)>,
    /// First transmissions SACKed: (their row, the row of the packet whose block covered them
    /// whole, their direction).
    seg: Vec<(u32, u32, u8)>,
    /// Its data directions' rows fed live (`cwndlive`; None: its packets are logged instead).
    live: Option<Box<Live>>,
    /// Each direction's latest retransmission episode (0: none yet).
    episode: [i32; 2],
}

impl ConnCwnd {
    /// A connection of `packets` packets and `data` data segments per direction (pass 1's
    /// counts); `lag`: its batch's rows are fed live, each packet held that long for the
    /// capture order (`held::Order`), else (None) its packets are logged; `facts`: what pass 1
    /// settled of each direction.
    pub fn new(lag: Option<f64>, packets: usize, data: [i64; 2], facts: [CwndFacts; 2]) -> Self {
        let mut c = ConnCwnd::default();
        match lag {
            Some(lag) => c.live = Some(Box::new(Live::new(packets, data, lag).with(facts))),
            None => c.reserve(packets),
        }
        c
    }

    /// Packet `p` of direction `d`, after the retransmission and flight steps: their verdict
    /// `v`, flight row `fl` and the other direction's segments its blocks SACKed first
    /// (`newly`: their rows).
    pub fn on_packet(
        &mut self,
        d: usize,
        p: &Pk,
        v: &Verdict,
        fl: Option<FlightRow>,
        newly: &[u32],
    ) {
        self.on_verdict(d, p, v);
        let to = self.first_resend(d, p, v);
        match self.live.as_deref_mut() {
            Some(live) => {
                live.on_packet((d, p), (v.retrans.is_some(), to), p.mss, sacked(fl), newly)
            }
            None => {
                self.on_log(d, p);
                self.on_flight(d, p, fl, newly);
            }
        }
    }

    /// For a data segment that is the first re-send of its episode (`retrans::Conn` numbers
    /// them per direction, ascending), whether the timer sent it (`retrans.timeout_resends`
    /// marks the first re-send of an episode any of whose re-sends is `rto`: a later re-send of
    /// the episode, or a D-SACK, can still change that, and the batch checks it).
    fn first_resend(&mut self, d: usize, p: &Pk, v: &Verdict) -> Option<bool> {
        let (kind, ep) = v.retrans?;
        let last = self.episode.get_mut(d)?;
        if *last == ep {
            return None;
        }
        *last = ep;
        (p.len > 0).then_some(kind == RTO)
    }

    /// Room for `n` packets (pass 1 counted them: the columns are never moved as they grow).
    fn reserve(&mut self, n: usize) {
        let c = &mut self.pk;
        c.dir.reserve_exact(n);
        c.kind.reserve_exact(n);
        c.time.reserve_exact(n);
        c.frame.reserve_exact(n);
        c.seq.reserve_exact(n);
        c.ack.reserve_exact(n);
        c.payload.reserve_exact(n);
    }

    /// Packet `p` of direction `d`: a data segment (payload > 0), an ACK (the flag and a
    /// number), a SYN (`_cwnd_rows._packets`' kinds).
    fn on_log(&mut self, d: usize, p: &Pk) {
        let mut kind = rf::TCP;
        if p.len > 0 {
            kind |= rf::DATA;
        }
        if p.flags & ACK != 0 && p.ack != MISSING {
            kind |= rf::ACK;
        }
        if p.flags & SYN != 0 {
            kind |= rf::SYN;
        }
        if kind == rf::TCP {
            return; // (no direction reads it)
        }
        let c = &mut self.pk;
        c.dir.push(d as i8);
        c.kind.push(kind);
        c.time.push(p.time);
        c.frame.push(u64::from(p.row));
        c.seq.push(p.seq);
        // (`_cwnd_rows._packets`: a missing ACK number filled with 0)
        c.ack.push(if p.ack == MISSING { 0 } else { p.ack });
        c.payload.push(u32::try_from(p.len).unwrap_or(0));
    }

    /// The retransmission verdict on packet `p` of direction `d`: a retransmission (its kind
    /// and episode), and an earlier one a D-SACK now turns spurious (RFC 2883).
    fn on_verdict(&mut self, d: usize, p: &Pk, v: &Verdict) {
        if let Some((kind, episode)) = v.retrans {
            self.rx.push(Rx {
                time: p.time,
                episode,
                row: p.row,
                d: d as u8,
                kind,
                data: p.len > 0,
            });
        }
        if let Some((row, _)) = v.spurious_now {
            // (the retransmissions are in row order)
            if let Ok(k) = self.rx.binary_search_by_key(&row, |x| x.row) {
                self.rx[k].kind = SPURIOUS;
            }
        }
    }

    /// The flight step's row of packet `p` of direction `d` (a data segment's: SACKed bytes
    /// above una are unacked − pipe, RFC 6675 "pipe", none without an ACK yet) and the other
    /// direction's segments its blocks SACKed first (`newly`: their rows).
    fn on_flight(&mut self, d: usize, p: &Pk, r: Option<FlightRow>, newly: &[u32]) {
        let v = sacked(r);
        if v != 0 {
            self.sacked.push((p.row, v, d as u8));
        }
        for &s in newly {
            self.seg.push((s, p.row, (1 - d) as u8));
        }
    }
}

/// A data segment's SACKed bytes above una from its flight row: unacked − pipe (RFC 6675
/// "pipe"), none without an ACK yet.
fn sacked(r: Option<FlightRow>) -> i64 {
    r.filter(|r| r.unacked != MISSING && r.pipe != MISSING)
        .map_or(0, |r| (r.unacked - r.pipe).max(0))
}

/// One data direction of a batch (sorted by `(flow, dir)`): its segment size (the MSS option
/// of its own SYN, else NaN: the largest payload), and the reach of its loss evidence (its
/// least RTT sample, 0 without one: `tol_s`).
#[derive(Clone, Copy, Debug)]
pub struct DirIn {
    pub flow: u32,
    pub dir: i8,
    pub mss: f64,
    pub tol: f64,
}

impl DirIn {
    /// Its segment size, `max_pay` (its rows' largest payload) where none is known.
    pub fn mss_or(&self, max_pay: i64) -> f64 {
        if self.mss.is_nan() {
            max_pay as f64
        } else {
            self.mss
        }
    }
}

/// `cwnd.data_directions`' segment size: the MSS option of the direction's own SYN (-1: none),
/// else its largest payload.
pub fn segment_size(syn_mss: i32, max_payload: i64) -> f64 {
    if syn_mss >= 0 {
        f64::from(syn_mss)
    } else {
        max_payload as f64
    }
}

/// Two values the same (bit for bit, or both NaN): a fact a live estimate read is confirmed.
pub fn same_value(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// A direction's cwnd statistics: the largest estimate (None: none set) and its loss events;
/// whether pass 1's facts of the direction (`facts::CwndFacts`) are the rows' own (None: the
/// batch was logged, or pass 1 settled none), and whether it ran live.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Est {
    pub max_cwnd: Option<f64>,
    pub loss_events: u32,
    pub facts: Option<bool>,
    /// The estimate ran as the rows came (`cwndgo`), not over rows held for the batch.
    pub live: bool,
}

/// The batch's packets as `rows_frames::Packets`' columns, in row order.
#[derive(Default)]
struct Cols {
    flow: Vec<u32>,
    dir: Vec<i8>,
    kind: Vec<u8>,
    time: Vec<f64>,
    frame: Vec<u64>,
    seq: Vec<i64>,
    ack: Vec<i64>,
    payload: Vec<u32>,
}

/// Keys `(flow, dir, frame)` of another frame's rows.
#[derive(Default)]
struct KeyCols {
    flow: Vec<u32>,
    dir: Vec<i8>,
    frame: Vec<u64>,
}

impl KeyCols {
    fn push(&mut self, flow: u32, d: u8, row: u32) {
        self.flow.push(flow);
        self.dir.push(d as i8);
        self.frame.push(u64::from(row));
    }

    fn keys(&self) -> Keys<'_> {
        Keys {
            flow: &self.flow,
            dir: &self.dir,
            frame: &self.frame,
            ok: &[],
        }
    }
}

/// The logged packets as columns, connection after connection (each in packet order: what
/// `rows_frames::build` reads of a direction is in the same order as in the whole capture's
/// columns): the first connection's log itself, the others' moved onto it.
fn packets(conns: &mut [(u32, ConnCwnd)]) -> Cols {
    let mut it = conns.iter_mut();
    let Some((f0, first)) = it.next() else {
        return Cols::default();
    };
    let mut c = std::mem::take(&mut first.pk);
    c.flow = vec![*f0; c.time.len()];
    for (f, log) in it {
        let mut x = std::mem::take(&mut log.pk);
        c.flow.extend(std::iter::repeat_n(*f, x.time.len()));
        c.dir.append(&mut x.dir);
        c.kind.append(&mut x.kind);
        c.time.append(&mut x.time);
        c.frame.append(&mut x.frame);
        c.seq.append(&mut x.seq);
        c.ack.append(&mut x.ack);
        c.payload.append(&mut x.payload);
    }
    c
}

/// The flight frame's rows the estimate reads (those with SACKed bytes or SACKed later), in row
/// order, with their SACKed bytes and from which of these rows on they count as SACKed: a
/// segment SACKed by the packet at row `s` is SACKed as of each row after `s` (the frame's
/// `sacked_at`: the data packets up to and including the SACKing one; only the order matters,
/// so the rows kept here number them as well).
fn flight(conns: &[(u32, ConnCwnd)]) -> (KeyCols, Vec<i64>, Vec<i64>) {
    // row -> (flow, dir, SACKed bytes, SACKing row)
    let mut by: Vec<(u32, u32, u8, i64, Option<u32>)> = Vec::new();
    for (f, c) in conns {
        by.extend(c.sacked.iter().map(|&(r, v, d)| (r, *f, d, v, None)));
        by.extend(c.seg.iter().map(|&(r, s, d)| (r, *f, d, 0, Some(s))));
    }
    by.sort_unstable_by_key(|x| x.0);
    let mut keys = KeyCols::default();
    let (mut sacked, mut from): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for x in &by {
        if keys.frame.last() == Some(&u64::from(x.0)) {
            let k = sacked.len() - 1;
            sacked[k] += x.3;
            from[k] = from[k].max(x.4.map_or(-1, i64::from));
            continue;
        }
        keys.push(x.1, x.2, x.0);
        sacked.push(x.3);
        from.push(x.4.map_or(-1, i64::from));
    }
    let rows = &keys.frame;
    let at = from
        .iter()
        .map(|&s| {
            if s < 0 {
                -1
            } else {
                rows.partition_point(|&r| r as i64 <= s) as i64
            }
        })
        .collect();
    (keys, sacked, at)
}

/// The retransmissions' keys, the timer's re-sends (`retrans.timeout_resends`: the first
/// re-send of every episode any of whose re-sends is `rto`, RFC 6298 §5) and the loss evidence
/// (`analysis._loss_evidence`: re-sends with data that are not spurious): (flow, dir, time).
fn retrans(conns: &[(u32, ConnCwnd)]) -> (KeyCols, KeyCols, Evidence) {
    let (mut all, mut to) = (KeyCols::default(), KeyCols::default());
    let (mut ef, mut ed, mut et) = (Vec::new(), Vec::new(), Vec::new());
    for (f, c) in conns {
        let mut eps: HashMap<(u8, i32), (u32, bool)> = HashMap::new();
        for x in &c.rx {
            all.push(*f, x.d, x.row);
            let e = eps.entry((x.d, x.episode)).or_insert((x.row, false));
            e.1 |= x.kind == RTO;
            if x.data && x.kind != SPURIOUS {
                ef.push(i64::from(*f));
                ed.push(i64::from(x.d));
                et.push(x.time);
            }
        }
        let mut first: Vec<(u32, u8)> = eps
            .into_iter()
            .filter(|e| e.1 .1)
            .map(|((d, _), (row, _))| (row, d))
            .collect();
        first.sort_unstable();
        first.into_iter().for_each(|(row, d)| to.push(*f, d, row));
    }
    (all, to, Evidence::new(&ef, &ed, &et))
}

/// One batch of connections (`conns`: their logs, flow ascending; `dirs`: their data
/// directions, sorted by `(flow, dir)`): each direction's statistics and the account's events
/// (`cwndstory`; None: no estimate row, as when no ACK reaches any of the batch's senders).
pub fn run(
    conns: &mut [(u32, ConnCwnd)],
    dirs: &[DirIn],
) -> Result<Vec<Option<(Est, Story)>>, Failed> {
    if conns.iter().any(|c| c.1.live.is_some()) {
        return run_live(conns, dirs).map_err(Failed::Live);
    }
    run_logged(conns, dirs).map_err(Failed::Columns)
}

/// Why a batch has no statistics: its columns were refused (its directions have none), or a
/// direction run live read a fact the batch does not confirm (the stream cannot answer: the
/// frames path reads the file).
#[derive(Debug)]
pub enum Failed {
    Columns(#[allow(dead_code)] String),
    Live(String),
}

/// [`run`] over a logged batch's packets.
fn run_logged(
    conns: &mut [(u32, ConnCwnd)],
    dirs: &[DirIn],
) -> Result<Vec<Option<(Est, Story)>>, String> {
    let c = packets(conns);
    let p = Packets {
        flow: &c.flow,
        dir: &c.dir,
        kind: &c.kind,
        time: &c.time,
        frame: &c.frame,
        seq: &c.seq,
        ack: &c.ack,
        payload: &c.payload,
    };
    let (fk, sacked, at) = flight(conns);
    let (rk, tk, ev) = retrans(conns);
    let fr = Frames {
        flight: fk.keys(),
        sacked: &sacked,
        at: &at,
        retrans: rk.keys(),
        timeouts: tk.keys(),
    };
    let flow: Vec<u32> = dirs.iter().map(|d| d.flow).collect();
    let dir: Vec<i8> = dirs.iter().map(|d| d.dir).collect();
    let mss: Vec<f64> = dirs.iter().map(|d| d.mss).collect();
    let unknown: Vec<bool> = mss.iter().map(|m| m.is_nan()).collect();
    match build(&p, (&flow, &dir, &mss, &unknown), &fr)? {
        None => Ok(vec![None; dirs.len()]),
        Some(b) => {
            drop(c);
            stats(&b, dirs, &ev)
        }
    }
}

/// [`run`] over rows fed live (`cwndlive`): what is still held fed, then the estimate and
/// reductions a stretch at a time (`cwndrun`).
fn run_live(
    conns: &mut [(u32, ConnCwnd)],
    dirs: &[DirIn],
) -> Result<Vec<Option<(Est, Story)>>, String> {
    let (_, to, ev) = retrans(conns);
    let mut tos: Vec<(u32, i8, u32)> = (0..to.frame.len())
        .map(|j| (to.flow[j], to.dir[j], to.frame[j] as u32))
        .collect();
    tos.sort_unstable();
    drop(to);
    let live = dirs.iter().map(|x| {
        let k = conns.binary_search_by_key(&x.flow, |c| c.0).ok();
        let c = k.and_then(|k| conns[k].1.live.as_deref_mut());
        let d = usize::try_from(x.dir).unwrap_or(2);
        // (a data direction pass 1 counted no data segment of has no rows)
        let rows = c.and_then(|c| {
            c.flush();
            c.take(d)
        });
        // (both by `(flow, dir)`: the timer's re-sends of this direction are the next ones)
        let a = tos.partition_point(|t| (t.0, t.1) < (x.flow, x.dir));
        let b = a + tos[a..].partition_point(|t| (t.0, t.1) == (x.flow, x.dir));
        let timeouts = tos[a..b].iter().map(|t| t.2).collect();
        (rows.unwrap_or_else(|| DirLive::new(0)), timeouts)
    });
    cwndrun::run(live, dirs, &ev)
}

#[cfg(test)]
#[path = "cwnd_tests.rs"]
mod tests;
