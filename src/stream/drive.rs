//! The two passes over a streamed capture, and the per-direction summary they give.
//!
//! Pass 1 numbers the connections (`conn::Table`, fed the rows in capture order, as
//! `read_capture`'s pipeline does) and settles each connection's initiator and window shifts.
//! Pass 2 numbers them again (the table is deterministic: the same flows, sides and relative
//! numbers) and feeds every TCP packet of a connection, in capture order, to that
//! connection's state: the per-direction counts (`dirstats::Directions::on_packet`), the
//! sequence state (`seq::Side::on_packet`, the one step of `tcp_state`'s walk) and the RTT
//! samples (`rtt::Connection::on_packet`), whose values go to the direction's
//! `flowstats::summary::Summary`. The rules are those of the column passes; only the driver
//! differs.

use super::source::Reader;
use super::Refusal;
use crate::capture::Rows;
use crate::state::conn::{Fx, Packet, Settled, Table};
use crate::state::dirstats::{self, DirStats, Directions};
use crate::state::flowstats::summary::{RttRow, Summary};
use crate::state::rtt;
use crate::state::seq::{self, ACK, MISSING, SYN};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::Path;

/// An address: IPv4 (kind 4) or IPv6 (kind 6), as high and low 64-bit halves.
type Addr = (u8, u64, u64);

/// Address -> id (first-seen order): the connection table only compares endpoints.
#[derive(Default)]
struct Addrs {
    ids: HashMap<Addr, i64, BuildHasherDefault<Fx>>,
    /// The last packet's two addresses and ids (packets come in runs of one connection).
    last: [(Addr, i64); 2],
}

impl Addrs {
    fn id(&mut self, key: Addr) -> i64 {
        if let Some(&(_, id)) = self.last.iter().find(|(k, _)| *k == key) {
            return id;
        }
        let next = self.ids.len() as i64;
        let id = *self.ids.entry(key).or_insert(next);
        self.last = [self.last[1], (key, id)];
        id
    }

    /// The connection packets of a batch: (row, the table's packet), capture order.
    fn packets(&mut self, rows: &Rows) -> Vec<(usize, Packet)> {
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
            let (s, d) = (self.id(addr.0), self.id(addr.1));
            let tcp = rows.proto[i] == 0;
            out.push((
                i,
                Packet {
                    // endpoint = address id · 65536 + port, as `conn::number` makes it
                    src: (s << 16).wrapping_add(i64::from(rows.sport[i])),
                    dst: (d << 16).wrapping_add(i64::from(rows.dport[i])),
                    tcp,
                    udp: rows.proto[i] == 1,
                    flags: rows.flags[i],
                    seq: rows.seq_raw[i],
                    ack: rows.ack_raw[i],
                    wscale: rows.wscale_ok[i].then_some(rows.wscale[i]),
                },
            ));
        }
        out
    }
}

/// One connection's per-packet state in pass 2.
#[derive(Default)]
struct Conn {
    /// Sequence state by direction.
    seq: [seq::Side; 2],
    rtt: rtt::Connection,
    /// The RTT (and later: retransmission, flight, stall) accumulators by direction.
    sum: [Summary; 2],
}

/// One direction's row of the summary.
#[derive(Clone, Debug)]
pub struct Row {
    pub flow: u32,
    pub dir: i8,
    pub stats: DirStats,
    /// The connection's handshake RTT (NaN: none).
    pub hs_rtt: f64,
    pub rtt: Option<RttRow>,
}

impl Row {
    /// Highest data end minus lowest data sequence (0: no data with a sequence number).
    pub fn unique_bytes(&self) -> i64 {
        let s = &self.stats;
        if s.seq_lo == MISSING || s.end_hi == MISSING {
            0
        } else {
            s.end_hi - s.seq_lo
        }
    }
}

/// The summary of a streamed capture: a row per direction that carried data.
#[derive(Debug, Default)]
pub struct Flows {
    pub rows: Vec<Row>,
    /// Packets of pass 2 fed to the per-connection state.
    pub packets: u64,
}

/// Pass 1: every connection packet through the table; what the whole trace settles.
fn pass1(path: &Path) -> Result<(Settled, usize), Refusal> {
    let (mut table, mut addrs) = (Table::default(), Addrs::default());
    for batch in Reader::start(path) {
        for (_, p) in addrs.packets(&batch?) {
            table.on_packet(&p);
        }
    }
    Ok((table.settle(), table.len()))
}

/// The state of pass 2.
struct Pass2<'a> {
    settled: &'a Settled,
    table: Table,
    addrs: Addrs,
    dirs: Directions,
    conns: Vec<Conn>,
    /// Rows of the sequence state so far (the column path's `_i`).
    row: u64,
}

impl Pass2<'_> {
    /// One batch's TCP packets, capture order.
    fn batch(&mut self, rows: &Rows) {
        for (i, p) in self.addrs.packets(rows) {
            let nb = self.table.on_packet(&p);
            if !p.tcp {
                continue; // the connection table numbers UDP pairs too; the passes are TCP's
            }
            let (flow, dir) = (nb.flow, self.settled.dir(nb.flow, nb.side));
            // RFC 7323 §2.2: the window is shifted by the sender's scale, a SYN's never
            let sh = self.settled.shift(flow, nb.side);
            let mut win = i64::from(rows.win_raw[i]);
            if p.flags & SYN == 0 && sh > 0 {
                win = win.wrapping_shl(u32::from(sh));
            }
            let ack = nb.ack.unwrap_or(MISSING);
            let (time, len) = (rows.time[i], i64::from(rows.payload[i]));
            let seg = dirstats::Seg {
                time,
                payload: len,
                size: i64::from(rows.size[i]),
                seq: nb.seq,
                syn: p.flags & SYN != 0,
                has_ack: p.flags & ACK != 0,
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
            if flow as usize >= self.conns.len() {
                self.conns.resize_with(flow as usize + 1, Conn::default);
            }
            let c = &mut self.conns[flow as usize];
            let d = usize::from(dir == 1);
            let peer = c.seq[1 - d].peer();
            let s = seq::Seg {
                seq: nb.seq,
                len,
                flags: p.flags,
                ack,
                win,
            };
            let step = c.seq[d].on_packet(&peer, self.row as i64, &s);
            let ts = rows.ts_ok[i];
            let rp = rtt::Packet {
                row: self.row as u32,
                dir: d,
                time,
                seq: nb.seq,
                len,
                flags: p.flags,
                ack,
                ts_val: if ts {
                    i64::from(rows.ts_val[i])
                } else {
                    MISSING
                },
                ts_ecr: if ts { i64::from(rows.ts_ecr[i]) } else { 0 },
                bits: step.bits,
                nxt: step.nxt,
            };
            // a sample times the other direction's data (it sits on this direction's ACK)
            let (sq, tv) = c.rtt.on_packet(&rp);
            if let Some(x) = sq {
                c.sum[1 - d].on_rtt(x.rtt, true);
            }
            if let Some(x) = tv {
                c.sum[1 - d].on_rtt(x.rtt, false);
            }
            self.row += 1;
        }
    }

    /// The rows of the directions that carried data, in first-appearance order.
    fn finish(mut self) -> Flows {
        let d = &self.dirs;
        let mut out = Vec::new();
        for (k, &(flow, dir)) in d.keys.iter().enumerate() {
            let s = &d.stats[k];
            if s.data_bytes <= 0 || !(dir == 0 || dir == 1) {
                continue;
            }
            let hs = d
                .find(flow, 0)
                .map_or(f64::NAN, |j| d.stats[j].handshake_rtt());
            let rtt = self
                .conns
                .get_mut(flow as usize)
                .and_then(|c| c.sum[dir as usize].rtt());
            out.push(Row {
                flow,
                dir: dir as i8,
                stats: s.clone(),
                hs_rtt: hs,
                rtt,
            });
        }
        Flows {
            rows: out,
            packets: self.row,
        }
    }
}

/// The per-direction summary of the pcap file at `path` (see the module docs).
pub fn summary(path: &Path) -> Result<Flows, Refusal> {
    let (settled, nflows) = pass1(path)?;
    super::source::check_flows(nflows)?;
    let top = u32::try_from(nflows).ok().and_then(|n| n.checked_sub(1));
    let mut p = Pass2 {
        settled: &settled,
        table: Table::default(),
        addrs: Addrs::default(),
        dirs: Directions::new(top, nflows),
        conns: Vec::new(),
        row: 0,
    };
    for batch in Reader::start(path) {
        p.batch(&batch?);
    }
    Ok(p.finish())
}
