//! The connection numbering of a streamed capture, run on the reader thread.
//!
//! Every connection packet goes through the connection table (`state::conn::Table`, fed the
//! rows in capture order, as `read_capture`'s pipeline does) right after its batch is
//! decoded, on the thread that decoded it: the passes receive each batch with its TCP
//! packets already numbered ([`Num`]), and the table itself once the file is read. Numbering
//! is sequential (a packet's connection depends on every packet before it), decoding is
//! too; the passes are the other thread's, so the two threads share the per-packet work.

use crate::capture::Rows;
use crate::state::conn::{Numbered, Packet, Table};
use std::collections::HashMap;

/// An address: IPv4 (kind 4) or IPv6 (kind 6), as high and low 64-bit halves.
pub type Addr = (u8, u64, u64);

/// Address -> id (first-seen order): the connection table only compares endpoints. The
/// addresses come from the capture, so the map keeps the standard keyed hasher (see
/// `state::conn`'s port-pair map).
#[derive(Default)]
pub struct Addrs {
    ids: HashMap<Addr, i64>,
    /// The addresses by id.
    pub by_id: Vec<Addr>,
    /// The last packet's two addresses and ids (packets come in runs of one connection).
    last: [(Addr, i64); 2],
}

impl Addrs {
    fn id(&mut self, key: Addr) -> i64 {
        if let Some(&(_, id)) = self.last.iter().find(|(k, _)| *k == key) {
            return id;
        }
        let next = self.ids.len() as i64;
        let id = *self.ids.entry(key).or_insert_with(|| {
            self.by_id.push(key);
            next
        });
        self.last = [self.last[1], (key, id)];
        id
    }
}

/// One TCP packet of a batch, numbered: what the table gave it, its endpoints (address id ·
/// 65536 + port), its row in the batch and its TCP flags (the rest the passes read off the
/// rows).
#[derive(Clone, Copy, Debug)]
pub struct Num {
    pub nb: Numbered,
    pub src: i64,
    pub dst: i64,
    pub i: u32,
    pub flags: u8,
}

/// The connection table and the addresses' ids, fed every batch in order.
#[derive(Default)]
pub struct Numbering {
    pub table: Table,
    pub addrs: Addrs,
}

impl Numbering {
    /// Every connection packet of a batch through the table, in capture order; the TCP ones
    /// (the passes are TCP's; the table numbers UDP pairs too).
    pub fn batch(&mut self, rows: &Rows) -> Vec<Num> {
        let mut v6 = rows.v6_row.iter().enumerate().peekable();
        let mut out = Vec::with_capacity(rows.len());
        for i in 0..rows.len() {
            let mut addr = ((4, 0, u64::from(rows.s4[i])), (4, 0, u64::from(rows.d4[i])));
            while v6.peek().is_some_and(|(_, &r)| (r as usize) < i) {
                v6.next();
            }
            if !rows.is4[i] {
                let Some((k, _)) = v6.peek().filter(|(_, &r)| r as usize == i) else {
                    continue; // (every IPv6 row has its addresses listed)
                };
                let h = |j: usize| rows.v6[j].get(*k).copied().unwrap_or(0);
                addr = ((6, h(0), h(1)), (6, h(2), h(3)));
            }
            if !rows.ports[i] {
                continue;
            }
            let (s, d) = (self.addrs.id(addr.0), self.addrs.id(addr.1));
            let tcp = rows.proto[i] == 0;
            let p = Packet {
                // endpoint = address id · 65536 + port, as `conn::number` makes it
                src: (s << 16).wrapping_add(i64::from(rows.sport[i])),
                dst: (d << 16).wrapping_add(i64::from(rows.dport[i])),
                tcp,
                udp: rows.proto[i] == 1,
                flags: rows.flags[i],
                seq: rows.seq_raw[i],
                ack: rows.ack_raw[i],
                wscale: rows.wscale_ok[i].then_some(rows.wscale[i]),
            };
            let nb = self.table.on_packet(&p);
            if tcp {
                let (src, dst, flags) = (p.src, p.dst, p.flags);
                let i = i as u32; // (a batch holds at most `source::BATCH` rows)
                out.push(Num {
                    nb,
                    src,
                    dst,
                    i,
                    flags,
                });
            }
        }
        out
    }
}

/// One row's SACK blocks with relative edges (pass 1), walking a batch's blocks by row.
#[derive(Default)]
pub(super) struct SackRow {
    /// The batch's next block.
    pub(super) k: usize,
    pub(super) edges: Vec<(i64, i64)>,
    /// Every edge of the row was made (`edge` gave Some).
    pub(super) known: bool,
}

impl SackRow {
    /// The blocks of row `i` (rows ascending within a batch); whether it has any.
    pub(super) fn blocks(
        &mut self,
        rows: &Rows,
        i: usize,
        edge: impl Fn(i64) -> Option<i64>,
    ) -> bool {
        let r = &rows.sack_row;
        while self.k < r.len() && (r[self.k] as usize) < i {
            self.k += 1;
        }
        self.edges.clear();
        self.known = true;
        let start = self.k;
        while self.k < r.len() && r[self.k] as usize == i {
            let (l, h) = (edge(rows.sack_left[self.k]), edge(rows.sack_right[self.k]));
            match l.zip(h) {
                Some(b) => self.edges.push(b),
                None => self.known = false,
            }
            self.k += 1;
        }
        self.k > start
    }
}
