//! The flow-statistics stage of the stream: ACK timing, the initial window, the peer's largest
//! window, the time shares limited by cwnd, receive window and application
//! (`state::flowstats`), the duplicate ACKs against each direction's data (`state::flowdirs`'
//! count of the sequence state's DUP bit) and the connection's vantage point
//! (`state::vantage::FlowVantage`).
//!
//! `flowstats` runs two passes per direction: [`Extent`] (the data span and largest segment)
//! settles in the stream's pass 1 ([`Scout`]), [`DirStats`] is fed in pass 2 ([`Stage`]), as
//! `flowstats::flow_stats` feeds them over the state's rows. The shares' sums are added in
//! blocks of [`BLOCK`] data segments counted over the directions in ascending id, per batch
//! of connections `tracekit.analyze` cuts ([`positions`]), so that they round as the frames
//! path's do. Memory per connection: two extents, two accumulators, the handshake times; per
//! segment nothing (the vantage point's median keeps the values at its ranks, `ranks`).

use super::conn::{Found, Pk};
use crate::state::flowstats::ranks::{Counts, Picked};
use crate::state::flowstats::{DirStats, Extent};
use crate::state::seq::{DUP, MISSING, NEW_ACK};
use crate::state::vantage::{FlowVantage, Point};

/// Data segments per summing block of the shares (`tracekit.analysis._flowstats._BLOCK`).
pub const BLOCK: usize = 1 << 18;
/// Packets per batch of connections (`tracekit.analysis._batches.BATCH_ROWS`).
pub const BATCH_ROWS: u64 = 1 << 18;

/// Pass 1 of one connection, by side: each side's data extent and the packets.
#[derive(Clone, Debug)]
pub struct Scout {
    ext: [Extent; 2],
    pub packets: u64,
    /// The `seq` RTT samples timing each side's data, 0 s included (the vantage point's median).
    seq: [Counts; 2],
}

impl Default for Scout {
    fn default() -> Self {
        Scout {
            ext: Default::default(),
            packets: 0,
            seq: [Counts::from_zero(), Counts::from_zero()],
        }
    }
}

impl Scout {
    /// Packet `p` of side `s` (the window is not read: pass 2 takes the largest, shifted).
    pub fn on_packet(&mut self, s: usize, p: &Pk) {
        self.packets += 1;
        self.ext[s].on_packet(p.len, p.time, p.seq.wrapping_add(p.len), MISSING);
    }

    /// A `seq` RTT sample timing side `s`'s data.
    pub fn on_seq_sample(&mut self, s: usize, rtt: f64) {
        self.seq[s].add(rtt);
    }

    /// The extents by direction, `init` the initiator's side.
    pub fn settle(&self, init: usize) -> Prior {
        let median = |s: usize| self.seq[s].plan(&[0.5]);
        Prior {
            ext: [self.ext[init], self.ext[1 - init]],
            pos: [0; 2],
            median: [median(init), median(1 - init)],
        }
    }
}

/// What pass 1 settles for a connection's stage, by direction.
#[derive(Clone, Debug, Default)]
pub struct Prior {
    pub ext: [Extent; 2],
    /// The position of the direction's first data segment in its summing order.
    pub pos: [usize; 2],
    /// What pass 2 keeps of the direction's `seq` samples for their median (`ranks`).
    pub median: [Picked; 2],
}

/// Each connection's batch (by connection id; None: no packets), as
/// `tracekit.analysis._batches.batches` cuts a capture. `packets`: each connection's packets;
/// `batched`: the capture is cut (every row a TCP packet of a connection, at least two
/// batches' worth), a new batch starting at the connection where the running count of packets
/// passes a multiple of [`BATCH_ROWS`] (`_batch_rows`); else one batch. The limit shares'
/// summing positions ([`positions`]) and the cwnd stage's batches (`cwndbatch`) both read it.
pub fn batch_ids(packets: impl Iterator<Item = u64>, batched: bool) -> Vec<Option<u32>> {
    let (mut cum, mut end, mut id) = (0u64, None, 0u32);
    let mut out = Vec::new();
    for n in packets {
        if n == 0 {
            out.push(None); // (not a connection of the packets)
            continue;
        }
        cum += n;
        let e = cum / BATCH_ROWS;
        if batched && end.is_some_and(|x| x != e) {
            id += 1;
        }
        end = Some(e);
        out.push(Some(id));
    }
    out
}

/// Sets each connection's positions (`priors` by connection id, with its batch from
/// [`batch_ids`]): the data segments of the directions before it (ascending `2·flow + dir`)
/// in its batch.
pub fn positions<'a>(priors: impl Iterator<Item = (&'a mut Prior, Option<u32>)>) {
    let (mut acc, mut batch) = (0usize, None);
    for (p, id) in priors {
        let Some(id) = id else { continue };
        if batch.is_some_and(|b| b != id) {
            acc = 0;
        }
        batch = Some(id);
        for d in 0..2 {
            p.pos[d] = acc;
            acc += usize::try_from(p.ext[d].n_data).unwrap_or(0);
        }
    }
}

/// Pass 2 of one connection, by direction.
#[derive(Clone, Debug)]
pub struct Stage {
    stats: [Option<DirStats>; 2],
    /// The direction's first data time and largest (shifted) window.
    ext: [Extent; 2],
    /// The smoothed RTT of each direction's data as of the packet (`srtt::Latest`).
    latest: [Option<f64>; 2],
    /// Duplicate ACKs against each direction's data.
    pub dups: [i64; 2],
    vantage: FlowVantage,
    /// The values at the median's ranks of each direction's `seq` RTT samples (`ranks`).
    median: [Picked; 2],
    /// Each direction's source and destination endpoints (`number::Numbering::batch`).
    ends: [Option<(i64, i64)>; 2],
}

/// One direction's values ([`f64::NAN`] / [`MISSING`]: none).
#[derive(Clone, Copy, Debug)]
pub struct Out {
    pub t0: f64,
    pub acked_t: f64,
    pub ack_t: f64,
    pub ack_bytes: i64,
    pub iw_bytes: i64,
    pub iw_segments: i64,
    pub max_rwnd: i64,
    /// cwnd, rwnd, app.
    pub shares: [f64; 3],
    pub dup_acks: i64,
}

impl Default for Out {
    fn default() -> Self {
        Out {
            t0: f64::NAN,
            acked_t: f64::NAN,
            ack_t: f64::NAN,
            ack_bytes: MISSING,
            iw_bytes: MISSING,
            iw_segments: MISSING,
            max_rwnd: MISSING,
            shares: [f64::NAN; 3],
            dup_acks: 0,
        }
    }
}

impl Stage {
    pub fn new(prior: &Prior) -> Stage {
        let st = |d: usize| {
            let e = &prior.ext[d];
            (e.n_data > 0).then(|| DirStats::new(e, prior.pos[d], BLOCK))
        };
        Stage {
            stats: [st(0), st(1)],
            ext: [Extent::default(), Extent::default()],
            latest: [None; 2],
            dups: [0; 2],
            vantage: FlowVantage::default(),
            median: prior.median.clone(),
            ends: [None; 2],
        }
    }

    /// Packet `p` of direction `d`, what the sequence state and RTT samples found (`f`) and
    /// the estimate of the other direction's RTT its sample gave (`srtt`); the order of
    /// `flowstats::flow_stats`' row.
    pub fn on_packet(&mut self, d: usize, p: &Pk, f: &Found, srtt: Option<f64>) {
        let o = 1 - d;
        let dend = p.seq.wrapping_add(p.len);
        self.ext[d].on_packet(p.len, p.time, dend, p.win);
        self.vantage.on_packet(d, p.time, p.len, p.flags);
        self.vantage.on_ttl(d, p.ttl);
        if let Some(x) = f.samples.0 {
            self.median[o].add(x.rtt);
        }
        // `srtt::Latest`: the estimate on this row is the other direction's RTT
        if srtt.is_some() {
            self.latest[o] = srtt;
        }
        // Wireshark's `tcp.analysis.duplicate_ack`, counted against the data it acknowledges
        if f.step.bits & DUP != 0 {
            self.dups[o] += 1;
        }
        if f.step.bits & NEW_ACK != 0 {
            if let Some(s) = self.stats[o].as_mut() {
                s.on_peer_ack(p.time, p.ack);
            }
        }
        if p.len > 0 {
            if let Some(s) = self.stats[d].as_mut() {
                let (peer, hi) = (&f.peer, f.step.hi_dend);
                s.on_data(p.time, p.len, hi, peer.hi_ack, peer.win, self.latest[d]);
            }
        }
    }

    /// A packet of direction `d` from endpoint `src` to `dst` (the first one's are kept: the
    /// frame reads them on the direction's first row).
    pub fn on_ends(&mut self, d: usize, src: i64, dst: i64) {
        self.ends[d].get_or_insert((src, dst));
    }

    /// Direction `d`'s source and destination endpoints ((0, 0): no packet).
    pub fn ends(&self, d: usize) -> (i64, i64) {
        self.ends[d].unwrap_or_default()
    }

    /// After the connection's last packet.
    pub fn finish(&mut self) {
        for s in self.stats.iter_mut().flatten() {
            s.finish();
        }
    }

    /// Direction `d`'s values (after [`Stage::finish`]).
    pub fn out(&self, d: usize) -> Out {
        let mut o = Out {
            dup_acks: self.dups[d],
            max_rwnd: self.ext[1 - d].max_win,
            t0: self.ext[d].t0.unwrap_or(f64::NAN),
            ..Out::default()
        };
        if let Some(s) = &self.stats[d] {
            o.acked_t = s.acked_t.unwrap_or(f64::NAN);
            o.ack_t = s.ack_t.unwrap_or(f64::NAN);
            o.ack_bytes = s.ack_bytes();
            (o.iw_bytes, o.iw_segments) = s.initial_window().unwrap_or((MISSING, MISSING));
            let tot = s.sums[0] + s.sums[1] + s.sums[2];
            o.shares = s.sums.map(|x| x / tot);
        }
        o
    }

    /// The connection's vantage point (the median of the data direction's `seq` samples
    /// decides without a handshake, or beside one of host delays only: `vantage::median`,
    /// polars' median, is the linear quantile 0.5 the ranks give).
    pub fn vantage(&self) -> Option<Point> {
        let med = match (self.vantage.needs_median(), self.vantage.data_dir()) {
            (true, Some((d, _))) => self.median[d].value(0.5),
            _ => None,
        };
        self.vantage.point(med)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prior(n: [i64; 2]) -> (Prior, u64) {
        let mut p = Prior::default();
        p.ext[0].n_data = n[0];
        p.ext[1].n_data = n[1];
        (p, (n[0] + n[1]) as u64)
    }

    #[test]
    fn positions_restart_per_batch() {
        let big = BATCH_ROWS as i64;
        let mut v = [prior([big - 10, 0]), prior([20, 5]), prior([3, 0])];
        let n: Vec<u64> = v.iter().map(|x| x.1).collect();
        let ids = |batched| batch_ids(n.iter().copied(), batched);
        let one = ids(false);
        positions(v.iter_mut().zip(one).map(|((p, _), id)| (p, id)));
        let pos: Vec<_> = v.iter().map(|p| p.0.pos).collect();
        let b = big as usize;
        assert_eq!(pos, vec![[0, b - 10], [b - 10, b + 10], [b + 15, b + 18]]);
        // the second connection passes a multiple of BATCH_ROWS: a new batch starts there
        let cut = ids(true);
        positions(v.iter_mut().zip(cut).map(|((p, _), id)| (p, id)));
        let pos: Vec<_> = v.iter().map(|p| p.0.pos).collect();
        assert_eq!(pos, vec![[0, b - 10], [0, 20], [25, 28]]);
    }
}
