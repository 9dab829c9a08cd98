//! Pass 2 on every core (issue 21: "connections are spread over threads"): the connections are
//! dealt to shards, each shard's [`Pass2`] runs on a thread of its own over every batch the
//! reader gives (skipping the other shards' packets), and the shards' rows are merged in
//! first-appearance order.
//!
//! A connection's state reads only its own packets, in capture order, and the rows' numbers
//! (which each shard is given, not counts): so a connection's values are the same whichever
//! shard runs it. The cwnd stage reads the connections of one of `analyze`'s batches together
//! (the batch's minimum-RTT rule, its limit shares' summing blocks), so a batch's connections
//! share a shard ([`Batches::shards`]). A capture of one batch (any capture under 2 · 2^18 TCP
//! packets, as `analyze` cuts them) runs on the calling thread as before.
//!
//! Memory: each shard holds its own connections' state (what one pass held, divided), a table
//! of its directions (`Directions`, 8 B a connection) and at most [`QUEUE`] batches queued
//! (shared, not copied: `Arc`).

use super::conn::Prior;
use super::cwndbatch::Batches;
use super::drive::{First, Flows, Pass2, Row};
use super::source::{Batch, Reader};
use super::Refusal;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

/// Batches queued for a shard beyond the one it runs. Every shard reads every batch, so the
/// reader waits for the slowest. Pass 2 runs three threads (the reader and two shards) on a
/// 2-core machine, so the system takes a shard off its core for a whole time slice now and
/// then: on big.pcap a batch costs a shard 0.74 ms of CPU at the median and 1.3-1.5 ms at the
/// 99th percentile, but 4-9 ms of wall at the 99th percentile. With 2 queued, the reader
/// blocked on the shard that was off its core while the other shard ran dry: each shard
/// waited 0.09-0.11 s of pass 2's 0.24 s. Sixteen ride out a time slice: `analyze --json` 4 %
/// faster on big.pcap and 5 % on big4.pcap (paired runs, bench/README.md). A batch is about
/// 1 MiB, shared by the shards, so at most about 20 are alive: peak RSS 37 -> 53 MiB on
/// big.pcap, a fixed cost that does not grow with the file.
const QUEUE: usize = 16;

/// Pass 2 over `reader`'s batches, on at most `threads` threads (1: the calling thread).
pub(super) fn run(
    first: &First,
    mut reader: Reader,
    priors: Vec<Option<Box<Prior>>>,
    cwnd: Batches,
    rto_floor_s: f64,
    threads: usize,
) -> Result<Flows, Refusal> {
    let n = threads.min(cwnd.count()).max(1);
    if n == 1 {
        let mut p = Pass2::new(first, rto_floor_s, (&[], 0), priors, cwnd);
        let mut row0 = 0u64;
        for batch in &mut reader {
            let b = batch?;
            p.batch(&b.rows, &b.nums, row0);
            row0 += b.nums.len() as u64;
        }
        let addrs = reader.numbering.take().unwrap_or_default().addrs;
        return Ok(Flows {
            rows: p.finish(&addrs)?,
            packets: row0,
        });
    }
    let owner = cwnd.shards(n);
    let parts = dealt(&owner, priors, n);
    let (rows, packets) = std::thread::scope(|s| -> Result<(Vec<Row>, u64), Refusal> {
        let (mut txs, mut handles) = (Vec::new(), Vec::new());
        for (k, part) in parts.into_iter().enumerate() {
            let (tx, rx) = sync_channel::<(Arc<Batch>, u64)>(QUEUE);
            let mine = cwnd.of_shard(&owner, k as u16);
            let mut p = Pass2::new(first, rto_floor_s, (&owner, k as u16), part, mine);
            let shard = std::thread::Builder::new().name(format!("tk-pass2-{k}"));
            let spawned = shard.spawn_scoped(s, move || {
                for (b, row0) in rx {
                    p.batch(&b.rows, &b.nums, row0);
                }
                p
            });
            // (the shards started so far end when `txs` is dropped on the way out)
            let msg = |e: std::io::Error| format!("cannot start a pass-2 thread: {e}");
            handles.push(spawned.map_err(|e| Refusal::new("TracekitError", msg(e)))?);
            txs.push(tx);
        }
        let mut row0 = 0u64;
        let mut failed = None;
        for batch in &mut reader {
            let b = match batch {
                Ok(b) => Arc::new(b),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            // a shard that stopped (it panicked) is found at its join below
            for tx in &txs {
                let _ = tx.send((Arc::clone(&b), row0));
            }
            row0 += b.nums.len() as u64;
        }
        drop(txs);
        let passes: Vec<Pass2> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect();
        if let Some(e) = failed {
            return Err(e);
        }
        let addrs = reader.numbering.take().unwrap_or_default().addrs;
        Ok((merged(passes, &addrs)?, row0))
    })?;
    Ok(Flows { rows, packets })
}

/// Pass 1's settled facts per connection, dealt to their shards (`None` elsewhere).
fn dealt(owner: &[u16], priors: Vec<Option<Box<Prior>>>, n: usize) -> Vec<Vec<Option<Box<Prior>>>> {
    let mut parts: Vec<Vec<Option<Box<Prior>>>> = (0..n).map(|_| Vec::new()).collect();
    for part in &mut parts {
        part.resize_with(priors.len(), || None);
    }
    for (f, p) in priors.into_iter().enumerate() {
        let k = usize::from(owner.get(f).copied().unwrap_or(0));
        if let Some(part) = parts.get_mut(k) {
            part[f] = p;
        }
    }
    parts
}

/// The shards' rows in first-appearance order: each direction's first packet's row (one
/// direction a row, so no two are equal), as one pass gives them.
fn merged(passes: Vec<Pass2>, addrs: &super::number::Addrs) -> Result<Vec<Row>, Refusal> {
    let mut rows: Vec<Row> = Vec::new();
    for p in passes {
        rows.extend(p.finish(addrs)?);
    }
    rows.sort_by_key(|r| r.stats.first_row);
    Ok(rows)
}
