//! The two passes over a streamed capture, and the per-direction summary they give.
//!
//! Pass 1 numbers the connections (`conn::Table`, fed the rows in capture order, as
//! `read_capture`'s pipeline does) and settles each connection's initiator and window shifts.
//! Pass 2 numbers them again (the table is deterministic: the same flows, sides and relative
//! numbers) and feeds every TCP packet of a connection, in capture order, to that
//! connection's state: the per-direction counts (`dirstats::Directions::on_packet`), the
//! sequence state (`seq::Side::on_packet`, the one step of `tcp_state`'s walk) and the RTT
//! samples (`rtt::Connection::on_packet`), whose values go to the direction's
//! `flowstats::summary::Summary`, the RFC 6298 estimate (`srtt::Srtt`) and the
//! retransmission rules (`retrans::Conn::on_packet`, with the packet's SACK blocks made
//! relative as `conn::driver` does). Pass 1 runs the same sequence state and RTT samples
//! (`super::conn::Scout`). The rules are those of the column passes; only the driver differs.

use super::conn::{sack_ack, Conn, CwndFacts, Pk, Prior, Scout};
use super::cwndbatch::{Batches, Pending};
use super::fstats;
use super::number::{Addrs, Num, Numbering, SackRow};
use super::source::{Checked, Reader};
use super::Refusal;
use crate::capture::Rows;
use crate::state::conn::{sack_edge, Settled};
use crate::state::dirstats::{self, Directions};
use crate::state::retrans::OOO_DEFAULT_S;
use crate::state::seq::{ACK, SYN};
use crate::state::stalls::Whole;
use std::path::Path;

use super::row::{Done, Part};
pub use super::row::{Flows, Retrans, Row};

/// What pass 1 settles.
pub(super) struct First {
    settled: Settled,
    nflows: usize,
    /// Per connection, what its retransmission and smoothed-RTT state need (boxed: a
    /// connection's is dropped once its state is made, so each connection holds a pointer).
    priors: Vec<Option<Box<Prior>>>,
    /// The base of a direction without one (`conn::driver::sack_edges`' fallback): the last
    /// row's sequence number.
    fallback: u32,
    /// A pcapng file's check, which pass 2's read resumes from.
    checked: Option<Checked>,
    /// Per connection, the row of its last packet: pass 2 closes the connection there.
    last: Vec<u64>,
    /// The batches of connections the cwnd stage runs (`cwndbatch`).
    cwnd: super::cwndbatch::Batches,
}

/// How far (TSval ticks) pass 1's RTT samples expect an echo to fall below the highest echo
/// before it, and below the highest TSval sent: its TSval tables keep that much (at most
/// 4,096 entries a direction, not one per TSval).
const ECHO_WINDOW: i64 = 4096;

/// Pass 1: every connection packet through the table and each TCP connection's sequence
/// state and RTT samples; what the whole trace settles. Its TSval tables keep the
/// [`ECHO_WINDOW`] below the highest echo and below the highest TSval; when an echo fell
/// further (TS.Recent only moves forward, RFC 7323 §4.3: ACKs reordered by more, or a peer
/// echoing an old TSval), the pass runs again keeping the falls it measured and every TSval
/// above them (`rtt::Connection::keeping`), so every sample is the one keeping everything
/// gives; pass 2 keeps what pass 1 kept. (`window`: [`ECHO_WINDOW`] but in tests.)
fn pass1(path: &Path, window: i64) -> Result<First, Refusal> {
    let (first, lags, missed) = scan(path, Err(window), None)?;
    if !missed && lags.iter().flatten().all(|&l| l <= window) {
        return Ok(first);
    }
    drop(first);
    Ok(scan(path, Ok(lags), None)?.0)
}

/// How far each connection's echoes fell below the highest before them (by side).
#[cfg(test)]
pub(super) fn echo_falls(path: &Path) -> Result<Vec<[i64; 2]>, Refusal> {
    Ok(scan(path, Err(0), None)?.1)
}

/// One pass 1 read, the TSval tables kept within `lags` (by connection and side; Err: the
/// same window for all, below the highest echo and below the highest TSval); what it settles,
/// how far each connection's echoes fell (by side), and whether an echo fell below what the
/// window dropped. `from`: the walk to read with (a pcapng file's sections before a damaged
/// one, `source::Reader::again`: the read then starts over with it).
fn scan(
    path: &Path,
    lags: Result<Vec<[i64; 2]>, i64>,
    from: Option<Checked>,
) -> Result<(First, Vec<[i64; 2]>, bool), Refusal> {
    let mut scouts: Vec<Scout> = Vec::new();
    let mut last: Vec<u64> = Vec::new();
    let (mut row, mut fallback) = (0u64, 0u32);
    let mut all_tcp = (0u64, true); // rows, and every one a TCP packet of a connection
                                    // pass 1's passes do less than decoding does: this thread numbers the packets
    let mut numbering = Numbering::default();
    let mut sack = SackRow::default();
    let mut reader = Reader::start(path, from, false);
    for batch in &mut reader {
        let batch = batch?;
        let rows = &batch.rows;
        all_tcp.0 += rows.len() as u64;
        if let Some(l) = rows.len().checked_sub(1) {
            fallback = rows.seq_raw[l].wrapping_sub(u32::from(rows.flags[l] & SYN == 0));
        }
        let nums = numbering.batch(rows);
        sack.k = 0;
        for &Num { nb, i, flags, .. } in &nums {
            let i = i as usize;
            while nb.flow as usize >= scouts.len() {
                let lag = match &lags {
                    Ok(l) => l.get(scouts.len()).copied().unwrap_or_default(),
                    Err(w) => [*w; 2],
                };
                scouts.push(Scout::keeping(lag, lags.as_ref().err().copied()));
                last.push(u64::MAX);
            }
            last[nb.flow as usize] = row;
            let x = Pk::of(rows, i, flags, &nb, row, i64::from(rows.win_raw[i]));
            let scout = &mut scouts[nb.flow as usize];
            scout.on_packet(usize::from(nb.side), &x);
            // the SACK blocks as pass 2 makes them (the base never changes once set)
            let base = numbering.table.base(nb.flow, !nb.side);
            if sack.blocks(rows, i, |raw| {
                base.map(|b| sack_edge(raw, b, sack_ack(&nb)))
            }) {
                scout.on_sack(usize::from(nb.side), &x, sack.known.then_some(&sack.edges));
            }
            row += 1;
        }
        all_tcp.1 &= nums.len() == rows.len();
    }
    if let Some(again) = reader.again.take() {
        drop((scouts, reader));
        return scan(path, lags, Some(again));
    }
    let table = numbering.table;
    let settled = table.settle();
    // each scout settled into its prior and the few facts read below, the last first, and the
    // scouts' room given back as they go (an eighth at a time), so a scout (1.6 KB) and its prior
    // (0.9 KB) are not both held for every connection at once
    let n = scouts.len();
    let (mut priors, mut facts) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut lags_out, mut missed) = (Vec::with_capacity(n), false);
    let step = (n / 8).max(1024);
    while let Some(mut s) = scouts.pop() {
        let f = scouts.len();
        priors.push(Box::new(
            s.settle(usize::from(settled.dir(f as u32, false) != 0)),
        ));
        facts.push((s.fs.packets, s.order.lag()));
        lags_out.push(s.echo_lags());
        missed |= s.missed();
        if scouts.capacity() - scouts.len() >= step {
            scouts.shrink_to_fit();
        }
    }
    priors.reverse();
    facts.reverse();
    lags_out.reverse();
    // `analyze` cuts a capture of at least two batches' worth of TCP packets into batches
    let batched = all_tcp.1 && all_tcp.0 >= 2 * fstats::BATCH_ROWS;
    let ids = fstats::batch_ids(facts.iter().map(|x| x.0), batched);
    fstats::positions(
        priors
            .iter_mut()
            .map(|p| &mut p.fs)
            .zip(ids.iter().copied()),
    );
    let conns = facts.iter().zip(&last).zip(ids);
    let cwnd = Batches::new(conns.map(|((&(n, lag), &l), id)| (n, l, id, lag)));
    let first = First {
        cwnd,
        settled,
        nflows: table.len(),
        priors: priors.into_iter().map(Some).collect(),
        fallback,
        checked: reader.checked.take(),
        last,
    };
    Ok((first, lags_out, missed))
}

/// The state of pass 2 (of one shard's connections: [`super::shards`]).
pub(super) struct Pass2<'a> {
    first: &'a First,
    /// Each connection's shard, and this pass's (empty: every connection is this pass's).
    owner: &'a [u16],
    me: u16,
    rto_floor_s: f64,
    dirs: Directions,
    /// The open connections (a connection is closed after its last packet; boxed, so a
    /// closed one holds a pointer's room).
    conns: Vec<Option<Box<Conn>>>,
    /// The closed connections' values, and their cwnd logs until their batch runs (by id,
    /// sized once; boxed, so a connection of another shard, or not closed yet, holds a
    /// pointer's room: 100,000 connections grew these to 125 MB when held inline).
    done: Vec<Option<Box<Done>>>,
    closed: Vec<Option<Box<Pending>>>,
    /// What pass 1 settled per connection (taken when its `Conn` is made).
    priors: Vec<Option<Box<Prior>>>,
    /// Rows of the sequence state so far (the column path's `_i`).
    row: u64,
    /// The packet's SACK blocks (relative edges).
    sack: Vec<(i64, i64)>,
    /// The cwnd stage's batches (pass 1's, run as each ends).
    cwnd: super::cwndbatch::Batches,
}

impl<'a> Pass2<'a> {
    /// Pass 2 of the connections of shard `me` (`owner`: each connection's; empty: all),
    /// with what pass 1 settled (`priors` and `cwnd`: of this pass's connections).
    pub(super) fn new(
        first: &'a First,
        rto_floor_s: f64,
        (owner, me): (&'a [u16], u16),
        priors: Vec<Option<Box<Prior>>>,
        cwnd: Batches,
    ) -> Self {
        let nflows = first.nflows;
        let top = u32::try_from(nflows).ok().and_then(|n| n.checked_sub(1));
        Pass2 {
            first,
            owner,
            me,
            rto_floor_s,
            dirs: Directions::new(top, nflows),
            conns: Vec::new(),
            done: std::iter::repeat_with(|| None).take(nflows).collect(),
            closed: std::iter::repeat_with(|| None).take(nflows).collect(),
            priors,
            row: 0,
            sack: Vec::new(),
            cwnd,
        }
    }

    /// One batch's TCP packets, capture order, the first at row `row0` (those of this pass's
    /// connections).
    pub(super) fn batch(&mut self, rows: &Rows, nums: &[Num], row0: u64) {
        let settled = &self.first.settled;
        let mut k = 0; // the batch's SACK blocks, by row
        for (
            j,
            &Num {
                nb,
                src,
                dst,
                i,
                flags,
            },
        ) in nums.iter().enumerate()
        {
            if !self.owner.is_empty() && self.owner.get(nb.flow as usize) != Some(&self.me) {
                continue;
            }
            self.row = row0 + j as u64;
            let i = i as usize;
            let (flow, dir) = (nb.flow, settled.dir(nb.flow, nb.side));
            // RFC 7323 §2.2: the window is shifted by the sender's scale, a SYN's never
            let sh = settled.shift(flow, nb.side);
            let mut win = i64::from(rows.win_raw[i]);
            if flags & SYN == 0 && sh > 0 {
                win = win.wrapping_shl(u32::from(sh));
            }
            let x = Pk::of(rows, i, flags, &nb, self.row, win);
            let seg = dirstats::Seg {
                time: x.time,
                payload: x.len,
                size: i64::from(rows.size[i]),
                seq: nb.seq,
                syn: flags & SYN != 0,
                has_ack: flags & ACK != 0,
                in_state: true,
                mss: if rows.mss_ok[i] {
                    i32::from(rows.mss[i])
                } else {
                    -1
                },
                wscale: if rows.wscale_ok[i] {
                    i32::from(rows.wscale[i])
                } else {
                    -1
                },
            };
            self.dirs
                .on_packet(flow, i16::from(dir), self.row as i64, &seg);
            // RFC 2018 §3: the blocks count in the other direction's numbers, in the ACK's lap
            self.sack.clear();
            while k < rows.sack_row.len() && (rows.sack_row[k] as usize) < i {
                k += 1;
            }
            let base = settled.base(flow, 1 - dir).unwrap_or(self.first.fallback);
            while k < rows.sack_row.len() && rows.sack_row[k] as usize == i {
                let e = |raw: i64| sack_edge(raw, base, sack_ack(&nb));
                self.sack
                    .push((e(rows.sack_left[k]), e(rows.sack_right[k])));
                k += 1;
            }
            if flow as usize >= self.conns.len() {
                self.conns.resize_with(flow as usize + 1, || None);
            }
            let (priors, floor) = (&mut self.priors, self.rto_floor_s);
            let cwnd = &self.cwnd;
            let c = self.conns[flow as usize].get_or_insert_with(|| {
                let none = || Prior {
                    seq_rtt: [false; 2],
                    ooo_s: OOO_DEFAULT_S,
                    resent: None,
                    echo_lag: None,
                    sum: None,
                    stall: [Whole::NONE; 2],
                    cwnd: [CwndFacts::NONE; 2],
                    fs: fstats::Prior::default(),
                };
                let mut prior = priors.get_mut(flow as usize).and_then(Option::take);
                let prior = prior.get_or_insert_with(|| Box::new(none()));
                let mut c = Box::new(Conn::new(prior, floor));
                c.cwnd = cwnd.start(flow, prior.fs.ext.map(|e| e.n_data), prior.cwnd);
                c
            });
            c.fs.on_ends(usize::from(dir == 1), src, dst);
            c.on_packet(usize::from(dir == 1), &x, &self.sack);
            if self.first.last.get(flow as usize) == Some(&self.row) {
                self.close(flow);
            }
            self.cwnd.after(self.row, &self.dirs, &mut self.closed);
            self.row += 1;
        }
    }

    /// Connection `flow` after its last packet: its values are kept and its state dropped,
    /// so pass 2 holds the state of the connections open at once, not of every connection.
    fn close(&mut self, flow: u32) {
        let Some(mut c) = self.conns.get_mut(flow as usize).and_then(Option::take) else {
            return;
        };
        if flow as usize >= self.done.len() {
            self.done.resize_with(flow as usize + 1, || None);
            self.closed.resize_with(flow as usize + 1, || None);
        }
        // what the cwnd stage reads when the connection's batch runs
        let tol = [0, 1].map(|d| c.sum[d].rtt_min().filter(|m| !m.is_nan()).unwrap_or(0.0));
        self.closed[flow as usize] = Some(Box::new(Pending {
            log: std::mem::take(&mut c.cwnd),
            tol,
        }));
        let mut stalls = c.finish().into_iter();
        c.fs.finish();
        let mut part = |d: usize| {
            let account = c.account.take(d, stalls.next().unwrap_or_default());
            let srtt = c.srtt_end(d);
            let s = &mut c.sum[d];
            Part {
                srtt,
                fs: c.fs.out(d),
                ends: c.fs.ends(d),
                rtt: s.rtt(),
                retrans: Retrans {
                    packets: s.retrans,
                    bytes: s.retrans_bytes,
                    kinds: s.kinds,
                },
                flight: s.flight(),
                stalls: (s.stalls, s.stall_time()),
                account,
            }
        };
        let dirs = [part(0), part(1)];
        self.done[flow as usize] = Some(Box::new(Done {
            dirs,
            vantage: c.fs.vantage(),
        }));
    }

    /// The rows of the directions that carried data, in first-appearance order (`addrs`: the
    /// addresses by id, once the reader has numbered every batch).
    pub(super) fn finish(mut self, addrs: &Addrs) -> Result<Vec<Row>, Refusal> {
        for flow in 0..self.conns.len() {
            self.close(flow as u32);
        }
        self.cwnd.finish(&self.dirs, &mut self.closed);
        if let Some(e) = self.cwnd.refused.take() {
            // (`analyze --json` then reads the file through the frames path)
            let msg = format!("the streamed summary cannot answer for this capture: {e}");
            return Err(Refusal::new("TracekitError", msg));
        }
        let d = &self.dirs;
        let mut out = Vec::new();
        let mut helds = Vec::new();
        for (k, &(flow, dir)) in d.keys.iter().enumerate() {
            let s = &d.stats[k];
            if s.data_bytes <= 0 || !(dir == 0 || dir == 1) {
                continue;
            }
            let hs = d
                .find(flow, 0)
                .map_or(f64::NAN, |j| d.stats[j].handshake_rtt());
            let side = |x: i16| d.find(flow, x).map(|j| &d.stats[j]);
            let (d0, d1) = (side(0), side(1));
            let mut done = self.done.get_mut(flow as usize).and_then(Option::as_mut);
            let held = done
                .as_mut()
                .map(|c| std::mem::take(&mut c.dirs[dir as usize].account));
            let done = self.done.get(flow as usize).and_then(Option::as_ref);
            let part = done.map(|c| &c.dirs[dir as usize]);
            // an endpoint is the address id · 65536 + the port (`number::Numbering::batch`)
            let at = |e: i64| {
                let a = usize::try_from(e >> 16)
                    .ok()
                    .and_then(|k| addrs.by_id.get(k));
                (a.copied().unwrap_or_default(), (e & 0xFFFF) as i32)
            };
            let ends = part.map_or((0, 0), |x| x.ends);
            out.push(Row {
                flow,
                dir: dir as i8,
                stats: s.clone(),
                hs_rtt: hs,
                rtt: part.and_then(|x| x.rtt),
                retrans: part.map(|x| x.retrans).unwrap_or_default(),
                flight: part.and_then(|x| x.flight),
                stalls: part.map_or((0, 0.0), |x| x.stalls),
                fs: part.map(|x| x.fs).unwrap_or_default(),
                vantage: done.and_then(|x| x.vantage),
                // `dir_stats`: the earliest SYN of either direction; both SYNs had the option
                syn_t: d0
                    .map_or(f64::NAN, |a| a.syn_t)
                    .min(d1.map_or(f64::NAN, |b| b.syn_t)),
                window_scaling: d0.is_some_and(|a| a.syn_wscale)
                    && d1.is_some_and(|b| b.syn_wscale),
                src: at(ends.0),
                dst: at(ends.1),
                cwnd: None,
                story: None,
                srtt: part.and_then(|x| x.srtt),
                account: Default::default(),
            });
            helds.push(held.unwrap_or_default());
        }
        for (r, held) in out.iter_mut().zip(helds) {
            r.cwnd = self.cwnd.get(r.flow, r.dir);
            r.story = self.cwnd.take_story(r.flow, r.dir);
            let tol_s = r.rtt.map_or(f64::NAN, |x| x.min);
            r.account = held.told(r.story.as_ref(), tol_s);
        }
        Ok(out)
    }
}

/// The per-direction summary of the pcap file at `path` (see the module docs).
/// `rto_floor_s`: the sender's minimum RTO (`tracekit.analysis.retrans.rto_floor`).
pub fn summary(path: &Path, rto_floor_s: f64) -> Result<Flows, Refusal> {
    summary_threads(path, rto_floor_s, rayon::current_num_threads())
}

/// [`summary`] with pass 2's connections spread over at most `threads` threads
/// ([`super::shards`]; the answer is the same for any count: `tests/test_stream_shards.py`).
pub fn summary_threads(path: &Path, rto_floor_s: f64, threads: usize) -> Result<Flows, Refusal> {
    summary_within(path, rto_floor_s, ECHO_WINDOW, threads)
}

/// [`summary_threads`], pass 1's TSval tables first kept within `window` ticks of the highest echo.
pub(super) fn summary_within(
    path: &Path,
    rto_floor_s: f64,
    window: i64,
    threads: usize,
) -> Result<Flows, Refusal> {
    let mut first = pass1(path, window)?;
    super::source::check_flows(first.nflows)?;
    let priors = std::mem::take(&mut first.priors);
    let cwnd = std::mem::take(&mut first.cwnd);
    let checked = first.checked.take();
    // pass 2's passes do more than decoding does: the reader thread numbers the packets
    let reader = Reader::start(path, checked, true);
    super::shards::run(&first, reader, priors, cwnd, rto_floor_s, threads)
}
