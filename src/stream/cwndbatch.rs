//! When the cwnd stage runs ([`super::cwnd::run`]): once per batch of connections as `analyze`
//! cuts the capture, as soon as pass 2 has fed the last packet of the batch (pass 1 learns each
//! connection's packet count and last row), so the logs of one batch at a time are alive.

use super::cwnd::{run, segment_size, ConnCwnd, DirIn, Est, Failed};
use super::cwndstory::Story;
use super::facts::CwndFacts;
use crate::state::dirstats::Directions;

/// What the cwnd stage reads of a connection closed at its last packet (`drive::Pass2::close`)
/// until its batch runs: its log and, per direction, its least RTT sample (`tol_s`; 0 without
/// one).
pub struct Pending {
    pub log: ConnCwnd,
    pub tol: [f64; 2],
}

/// The batches, by their last row, and what their directions got.
#[derive(Default)]
pub struct Batches {
    /// Per batch: its last packet's row and its connections (ids `lo..hi`), by last row.
    ends: Vec<(u64, u32, u32)>,
    next: usize,
    /// Per direction `2·flow + dir`: its statistics (None: none, or not yet run).
    out: Vec<Option<Est>>,
    /// Per direction: the account's cwnd events (`cwndstory`), until taken.
    stories: Vec<Option<Story>>,
    /// Each connection's packets, and how long its packets are held for the capture order
    /// (`held::Order::lag`; None: its batch is logged).
    packets: Vec<u64>,
    lag: Vec<Option<f64>>,
    /// A live run's fact the batch did not confirm (`cwnd::Failed::Live`): the stream refuses.
    pub refused: Option<String>,
}

impl Batches {
    /// The batches of the connections (by id: their packets, their last packet's row, their
    /// batch, `fstats::batch_ids`, and how far their times fall, `held::Order::lag`).
    pub fn new(conns: impl Iterator<Item = (u64, u64, Option<u32>, Option<f64>)>) -> Self {
        let mut ends: Vec<(u64, u32, u32)> = Vec::new();
        let (mut packets, mut batch, mut back) = (Vec::new(), None, Vec::new());
        let mut lag = Vec::new();
        for (f, (n, last, id, l)) in conns.enumerate() {
            let f = f as u32;
            packets.push(n);
            lag.push(l);
            let falls = l.is_none();
            let Some(id) = id else { continue };
            match ends.last_mut() {
                Some(b) if batch == Some(id) => {
                    b.0 = b.0.max(last);
                    b.2 = f + 1;
                    if let Some(x) = back.last_mut() {
                        *x |= falls;
                    }
                }
                _ => {
                    ends.push((last, f, f + 1));
                    back.push(falls);
                }
            }
            batch = Some(id);
        }
        // a batch is logged whole where a time is NaN or infinite in any of its connections
        // (the capture order then needs `rows_frames`' sort), else its rows are fed live
        for (&(_, lo, hi), &b) in ends.iter().zip(&back) {
            if b {
                lag[lo as usize..hi as usize].fill(None);
            }
        }
        ends.sort_by_key(|b| b.0);
        Batches {
            ends,
            next: 0,
            out: Vec::new(),
            stories: Vec::new(),
            packets,
            lag,
            refused: None,
        }
    }

    /// How many batches there are.
    pub fn count(&self) -> usize {
        self.ends.len()
    }

    /// Each connection's shard of `n`: a batch's connections share one (its cwnd stage reads
    /// them together), the batches dealt largest first to the shard with the fewest packets so
    /// far (ties: the lower shard), so the result does not depend on anything but the counts.
    /// A connection outside every batch (no packet) is shard 0's.
    pub fn shards(&self, n: usize) -> Vec<u16> {
        let n = n.clamp(1, usize::from(u16::MAX));
        let size = |&(_, lo, hi): &(u64, u32, u32)| -> u64 {
            self.packets[lo as usize..hi as usize].iter().sum()
        };
        let mut order: Vec<usize> = (0..self.ends.len()).collect();
        order.sort_by_key(|&b| (std::cmp::Reverse(size(&self.ends[b])), b));
        let (mut load, mut owner) = (vec![0u64; n], vec![0u16; self.packets.len()]);
        for b in order {
            let k = (0..n).min_by_key(|&k| (load[k], k)).unwrap_or(0);
            let (_, lo, hi) = self.ends[b];
            load[k] += size(&self.ends[b]);
            owner[lo as usize..hi as usize].fill(k as u16);
        }
        owner
    }

    /// The batches of shard `k` alone (`owner`: [`Batches::shards`]'s), for its own pass 2.
    pub fn of_shard(&self, owner: &[u16], k: u16) -> Batches {
        Batches {
            ends: self
                .ends
                .iter()
                .copied()
                .filter(|&(_, lo, _)| owner.get(lo as usize) == Some(&k))
                .collect(),
            next: 0,
            out: Vec::new(),
            stories: Vec::new(),
            packets: self.packets.clone(),
            lag: self.lag.clone(),
            refused: None,
        }
    }

    /// Connection `flow`'s cwnd state, `data`: its data segments per direction (pass 1's
    /// counts: the room its rows, or its log, take).
    pub fn start(&self, flow: u32, data: [i64; 2], facts: [CwndFacts; 2]) -> ConnCwnd {
        let n = self.packets.get(flow as usize).copied().unwrap_or(0);
        let lag = self.lag.get(flow as usize).copied().flatten();
        ConnCwnd::new(lag, usize::try_from(n).unwrap_or(0), data, facts)
    }

    /// After pass 2 fed the packet at `row`: runs every batch whose last packet it was.
    pub fn after(&mut self, row: u64, dirs: &Directions, closed: &mut [Option<Box<Pending>>]) {
        while let Some(&(end, lo, hi)) = self.ends.get(self.next) {
            if end > row {
                break;
            }
            self.next += 1;
            self.settle(lo, hi, dirs, closed);
        }
    }

    /// Runs the batches not run yet (none, when every packet was fed).
    pub fn finish(&mut self, dirs: &Directions, closed: &mut [Option<Box<Pending>>]) {
        self.after(u64::MAX, dirs, closed);
    }

    /// The statistics of direction `dir` of connection `flow`.
    pub fn get(&self, flow: u32, dir: i8) -> Option<Est> {
        let k = 2 * flow as usize + usize::try_from(dir).ok()?;
        self.out.get(k).copied().flatten()
    }

    /// The account's cwnd events of direction `dir` of connection `flow` (taken: once).
    pub fn take_story(&mut self, flow: u32, dir: i8) -> Option<Story> {
        let k = 2 * flow as usize + usize::try_from(dir).ok()?;
        self.stories.get_mut(k).and_then(Option::take)
    }

    /// The batch of connections `lo..hi`: its data directions (`cwnd.data_directions`, sorted
    /// by flow and dir) and the logs of their connections, taken from `closed` (every
    /// connection of the batch has had its last packet).
    fn settle(&mut self, lo: u32, hi: u32, dirs: &Directions, closed: &mut [Option<Box<Pending>>]) {
        let mut logs: Vec<(u32, ConnCwnd)> = Vec::new();
        let mut ins: Vec<DirIn> = Vec::new();
        for flow in lo..hi {
            let Some(c) = closed.get_mut(flow as usize).and_then(Option::take) else {
                continue;
            };
            let log = c.log;
            let mut data = false;
            for dir in 0..2i8 {
                let Some(s) = dirs.find(flow, i16::from(dir)).map(|k| &dirs.stats[k]) else {
                    continue;
                };
                if s.data_bytes <= 0 {
                    continue;
                }
                data = true;
                ins.push(DirIn {
                    flow,
                    dir,
                    mss: segment_size(s.syn_mss, s.max_payload),
                    // `tol_s`: the flows row's `rtt_min_s`, 0 without one
                    tol: c.tol[dir as usize],
                });
            }
            if data {
                logs.push((flow, log));
            }
        }
        let got = match run(&mut logs, &ins) {
            Ok(got) => got,
            Err(Failed::Live(e)) => {
                self.refused.get_or_insert(e);
                vec![None; ins.len()]
            }
            Err(Failed::Columns(_)) => vec![None; ins.len()],
        };
        // the slots grow with the batches run (a shard runs only its own)
        if self.out.len() < 2 * hi as usize {
            self.out.resize(2 * hi as usize, None);
            self.stories.resize_with(2 * hi as usize, || None);
        }
        for (d, g) in ins.iter().zip(got) {
            let k = 2 * d.flow as usize + d.dir as usize;
            let (est, story) = g.map_or((None, None), |(e, s)| (Some(e), Some(s)));
            if let (Some(slot), Some(st)) = (self.out.get_mut(k), self.stories.get_mut(k)) {
                *slot = est;
                *st = story;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::fstats::{batch_ids, BATCH_ROWS};

    #[test]
    fn batches_cut_where_the_running_count_passes_a_multiple() {
        let b = BATCH_ROWS;
        // connection 1 has no packets; connection 2 passes the first multiple: a new batch
        let conns = [(b - 10, 50), (0, 0), (20, 40), (b, 90)];
        let with = |batched| {
            let ids = batch_ids(conns.iter().map(|c| c.0), batched);
            Batches::new(
                conns
                    .iter()
                    .zip(ids)
                    .map(|(c, id)| (c.0, c.1, id, Some(0.0))),
            )
        };
        let x = with(true);
        // connection 3 passes the second: another (batches sorted by their last row)
        assert_eq!(x.ends, vec![(40, 2, 3), (50, 0, 1), (90, 3, 4)]);
        let one = with(false);
        assert_eq!(one.ends, vec![(90, 0, 4)]);
    }

    #[test]
    fn shards_keep_a_batch_together_and_deal_the_largest_first() {
        let b = BATCH_ROWS;
        // batches: {0}, {1}, {3}, {4}; connection 2 has no packet (in no batch: shard 0)
        let conns = [(b - 10, 50), (30, 60), (0, 0), (b, 90), (2 * b, 95)];
        let ids = batch_ids(conns.iter().map(|c| c.0), true);
        let x = Batches::new(
            conns
                .iter()
                .zip(ids)
                .map(|(c, id)| (c.0, c.1, id, Some(0.0))),
        );
        assert_eq!(x.count(), 4);
        // largest first to the least loaded: 2b (conn 4) to 0, b (3) to 1, b - 10 (0) to 1,
        // then 30 (1) to 1 (2b - 10 < 2b)
        assert_eq!(x.shards(2), vec![1, 1, 0, 1, 0]);
        assert_eq!(x.shards(1), vec![0; 5]);
        // more shards than batches: the extra ones get none
        assert_eq!(x.shards(8), vec![2, 3, 0, 1, 0]);
        let mine = x.of_shard(&x.shards(2), 1);
        assert_eq!(mine.ends, vec![(50, 0, 1), (60, 1, 2), (90, 3, 4)]);
    }
}
