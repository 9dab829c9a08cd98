//! The SACK measures of bytes in flight: one pass in packet order, a state machine per connection.
//!
//! Beside Wireshark's bytes in flight with its SACK correction (`flight::Corrected`), each
//! data packet gets:
//! - the outstanding data (tcptrace): highest data end sent - highest cumulative ACK received;
//! - RFC 6675's *pipe* without loss marking (§4 `SetPipe` with no segment deemed lost): the
//!   outstanding data minus the bytes SACKed above the cumulative ACK, from a scoreboard of
//!   every SACK block received so far (RFC 2018 §3: a receiver reports at most 3-4 blocks, the
//!   most recent first, so the latest ACK alone under-counts when there are more holes).
//!
//! The scoreboard counts first transmissions (`seq::NEW` segments: their ends strictly
//! increase) as wholes: a segment is SACKed from the first ACK with a block that covers it
//! from its start to its end, and leaves when the cumulative ACK reaches its end. A block
//! repeated while its right edge grows is only read for its new part (above the highest right
//! edge reported before with the same left edge), so each segment is looked at about once.

use super::flight::Corrected;
use super::seq::{Packets, MISSING, NEW, NEW_ACK};
use super::slots::Slots;
use std::collections::{HashMap, VecDeque};

/// A first transmission not yet cumulatively acknowledged.
struct Seg {
    seq: i64,
    end: i64,
    sacked: bool,
    /// The caller's label of the segment ([`Pkt::id`]): reported once it is SACKed.
    id: u32,
}

/// One direction of a connection, as sender (its segments) and as receiver (its ACKs).
#[derive(Default)]
struct Side {
    /// Its first transmissions above the other side's cumulative ACK, `end` increasing.
    segs: VecDeque<Seg>,
    /// Highest data end sent (`seq::State::hi_dend`).
    hi_dend: Option<i64>,
    /// Highest ACK sent (Wireshark's `lastack`).
    hi_ack: Option<i64>,
    /// Bytes of the other side's segments SACKed by this side and not yet cumulatively ACKed.
    sacked: i64,
    /// Labels of the other side's segments this side's latest packet SACKed first.
    newly: Vec<u32>,
    /// The highest right edge reported so far per left edge ([`MISSING`]: a block without one).
    edges: HashMap<i64, i64>,
    /// `edges` is pruned when it grows past this ([`Side::prune`]).
    prune_at: usize,
}

/// `edges` is first pruned at this many entries.
const PRUNE_MIN: usize = 64;

impl Side {
    /// Drops the edges no block can read any more: a block covers only segments from its left
    /// edge, raised to the highest right edge reported with it, and every segment held starts at
    /// or above the first one's start `t` (they are sent in order and leave in order), so a
    /// left edge and its right edge both at or below `t` give the same cover as no entry (the
    /// segments from the first on); `t` never falls. Without this the map grew by one entry per
    /// hole the receiver ever reported (16 B each, for the whole capture).
    fn prune(&mut self, t: Option<i64>) {
        if self.edges.len() <= self.prune_at {
            return;
        }
        if let Some(t) = t {
            self.edges
                .retain(|&l, &mut r| l == MISSING || l > t || r > t);
        }
        self.prune_at = (2 * self.edges.len()).max(PRUNE_MIN);
    }
}

/// One packet's inputs to the scoreboard.
pub struct Pkt {
    pub seq: i64,
    pub len: i64,
    /// The packet's ACK number ([`MISSING`]: none).
    pub ack: i64,
    /// `seq::NEW`: its data end raises the highest one sent.
    pub new: bool,
    /// `seq::NEW_ACK`: it raises the highest ACK its direction has sent.
    pub new_ack: bool,
    /// The caller's label of this segment (e.g. its row): [`Scoreboard::newly_sacked`] names
    /// it when a block first covers it.
    pub id: u32,
}

/// The SACK scoreboard of one connection (both directions), fed packet by packet.
#[derive(Default)]
pub struct Scoreboard {
    side: [Side; 2],
}

/// The measures of one data packet, [`MISSING`] where there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measures {
    /// Outstanding data: highest data end sent - highest ACK received (>= 0).
    pub unacked: i64,
    /// `unacked` minus the bytes SACKed above the cumulative ACK (>= 0).
    pub pipe: i64,
}

impl Scoreboard {
    /// One packet of direction `d` with its SACK blocks `(left, right)` ([`MISSING`] for a
    /// missing edge), in the order the option lists them.
    pub fn on_packet(&mut self, d: usize, p: &Pkt, blocks: &[(i64, i64)]) {
        let [a, b] = &mut self.side;
        let (me, peer) = if d == 0 { (a, b) } else { (b, a) };
        if p.new_ack {
            // the cumulative ACK reaches these ends: they leave the scoreboard
            me.hi_ack = Some(p.ack);
            while let Some(s) = peer.segs.front() {
                if s.end > p.ack {
                    break;
                }
                if s.sacked {
                    me.sacked -= s.end - s.seq;
                }
                peer.segs.pop_front();
            }
        }
        me.newly.clear();
        let own_ack = if p.ack == MISSING { -1 } else { p.ack };
        for &(left, right) in blocks {
            // a block at or below the packet's own ACK is a D-SACK (RFC 2883): a duplicate, no hole
            if right == MISSING || right <= own_ack {
                continue;
            }
            let prev = me.edges.get(&left).copied();
            me.edges.insert(left, prev.map_or(right, |v| v.max(right)));
            let lo = match (left, prev) {
                (MISSING, p) => p,
                (l, p) => Some(p.map_or(l, |v| v.max(l))),
            };
            if let Some(lo) = lo.filter(|&lo| lo < right) {
                me.sacked += cover(&mut peer.segs, lo, right, &mut me.newly);
            }
        }
        me.prune(peer.segs.front().map(|s| s.seq));
        if p.new && p.len > 0 {
            let end = p.seq + p.len;
            me.hi_dend = Some(end);
            // already cumulatively acknowledged (an ACK above the data seen): never SACKed
            if peer.hi_ack.is_none_or(|h| end > h) {
                me.segs.push_back(Seg {
                    seq: p.seq,
                    end,
                    sacked: false,
                    id: p.id,
                });
            }
        }
    }

    /// The labels of the other side's segments that the latest packet of direction `d` SACKed
    /// for the first time (each segment is named once, by the packet whose block covers it whole).
    pub fn newly_sacked(&self, d: usize) -> &[u32] {
        &self.side[d].newly
    }

    /// The measures of a data packet of direction `d`, just after [`Scoreboard::on_packet`].
    pub fn measures(&self, d: usize) -> Measures {
        let (me, peer) = (&self.side[d], &self.side[1 - d]);
        let unacked = peer
            .hi_ack
            .map_or(MISSING, |a| me.hi_dend.map_or(0, |h| (h - a).max(0)));
        let pipe = if unacked == MISSING {
            MISSING
        } else {
            (unacked - peer.sacked).max(0)
        };
        Measures { unacked, pipe }
    }
}

/// Marks the segments that lie within `[lo, right)` SACKed (their labels go to `newly`);
/// returns their bytes.
fn cover(segs: &mut VecDeque<Seg>, lo: i64, right: i64, newly: &mut Vec<u32>) -> i64 {
    // ends increase: the candidates are the segments ending in (lo, right]
    let from = segs.partition_point(|s| s.end <= lo);
    let mut bytes = 0;
    for s in segs.range_mut(from..) {
        if s.end > right {
            break;
        }
        if !s.sacked && s.seq >= lo {
            s.sacked = true;
            bytes += s.end - s.seq;
            newly.push(s.id);
        }
    }
    bytes
}

/// The flight frame's columns, one entry per data packet (payload > 0) in packet order.
pub struct FlightColumns {
    /// Wireshark's bytes in flight with its SACK and SYN/FIN corrections ([`MISSING`]: none).
    pub flight: Vec<i64>,
    /// The value rests on the sender's segments alone (no ACK from the other side yet).
    pub sender_only: Vec<bool>,
    /// RFC 6675 pipe without loss marking ([`MISSING`]: no ACK received yet).
    pub pipe: Vec<i64>,
    /// Outstanding data ([`MISSING`]: no ACK received yet).
    pub unacked: Vec<i64>,
    /// When a first transmission got SACKed: the number of data packets up to and including the
    /// packet whose block covered it ([`MISSING`]: never, or not a first transmission). Data
    /// packet `k` (its place among the data packets) sees it SACKed iff this is `<= k`: the cwnd
    /// estimate needs *which* bytes are SACKed, not only how many (RFC 6675 §2: only SACKed
    /// octets between HighACK and HighData leave the pipe).
    pub sacked_at: Vec<i64>,
}

/// Every SACK block of a trace: the row carrying it (ascending), its left and right edge.
pub struct Blocks<'a> {
    pub row: &'a [i64],
    pub left: &'a [i64],
    pub right: &'a [i64],
}

/// One connection's bytes in flight, all three measures (both directions), fed packet by
/// packet: Wireshark's corrected value ([`Corrected`]) and the SACK scoreboard side by side.
#[derive(Default)]
pub struct ConnFlight {
    wireshark: Corrected,
    board: Scoreboard,
}

/// One data packet's row of the flight frame ([`MISSING`]: no value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlightRow {
    /// Wireshark's bytes in flight with its SACK and SYN/FIN corrections.
    pub flight: i64,
    /// `flight` rests on the sender's segments alone (no ACK from the other side yet).
    pub sender_only: bool,
    pub pipe: i64,
    pub unacked: i64,
}

impl ConnFlight {
    /// One packet of direction `d` with its state bits (`seq::State::bits`: GAP, STRAY, NEW
    /// and NEW_ACK are read) and SACK blocks; `id` labels it for [`ConnFlight::newly_sacked`].
    /// Returns the flight row of a data packet (payload > 0).
    #[allow(clippy::too_many_arguments)]
    pub fn on_packet(
        &mut self,
        d: usize,
        seq: i64,
        len: i64,
        fl: u8,
        ack: i64,
        b: u8,
        blocks: &[(i64, i64)],
        id: u32,
    ) -> Option<FlightRow> {
        let ws = self.wireshark.on_packet(d, seq, len, fl, ack, b, blocks);
        let pk = Pkt {
            seq,
            len,
            ack,
            new: b & NEW != 0,
            new_ack: b & NEW_ACK != 0,
            id,
        };
        self.board.on_packet(d, &pk, blocks);
        let (flight, sender_only) = ws?;
        let m = self.board.measures(d);
        Some(FlightRow {
            flight,
            sender_only,
            pipe: m.pipe,
            unacked: m.unacked,
        })
    }

    /// The labels of the other direction's segments that the latest packet of direction `d`
    /// SACKed first ([`Scoreboard::newly_sacked`]).
    pub fn newly_sacked(&self, d: usize) -> &[u32] {
        self.board.newly_sacked(d)
    }
}

/// The flight columns of every data packet (see the module docs); `bits` are the state bits
/// of every packet (`seq::State::bits`: GAP, STRAY, NEW and NEW_ACK are read).
///
/// One pass in packet order, each packet fed to its connection's [`ConnFlight`]: the rows
/// come out in packet order, and a segment's label is its place among the data packets.
pub fn flight_columns(p: &Packets, bits: &[u8], bl: &Blocks) -> Result<FlightColumns, String> {
    let n = p.validate()?;
    if bits.len() != n {
        return Err(format!(
            "column bits has {} values, flow has {n}",
            bits.len()
        ));
    }
    let nb = bl.row.len();
    if bl.left.len() != nb || bl.right.len() != nb {
        return Err(format!(
            "SACK blocks: {nb} rows, {} left, {} right",
            bl.left.len(),
            bl.right.len()
        ));
    }
    if bl.row.iter().any(|&r| r < 0 || r as usize >= n) || bl.row.windows(2).any(|w| w[0] > w[1]) {
        return Err("SACK block rows must be ascending packet rows".into());
    }
    let m = p.len.iter().filter(|&&l| l > 0).count();
    let mut out = FlightColumns {
        flight: Vec::with_capacity(m),
        sender_only: Vec::with_capacity(m),
        pipe: Vec::with_capacity(m),
        unacked: Vec::with_capacity(m),
        sacked_at: vec![MISSING; m],
    };
    let mut conns: Slots<ConnFlight> =
        Slots::new(p.flow.iter().copied().max().map(u64::from), p.flow.len());
    let (mut k, mut blocks) = (0, Vec::new());
    // the data packets in rows 0..=i (a data packet's label: their number before it)
    let mut upto = 0u32;
    for (i, &b) in bits.iter().enumerate() {
        blocks.clear();
        while k < nb && bl.row[k] == i as i64 {
            blocks.push((bl.left[k], bl.right[k]));
            k += 1;
        }
        let id = upto;
        let len = i64::from(p.len[i]);
        upto += u32::from(len > 0);
        let d = usize::from(p.dir[i] == 1);
        let c = conns.get(u64::from(p.flow[i]));
        let row = c.on_packet(d, p.seq[i], len, p.flags[i], p.ack[i], b, &blocks, id);
        for &s in c.newly_sacked(d) {
            out.sacked_at[s as usize] = i64::from(upto);
        }
        if let Some(r) = row {
            out.flight.push(r.flight);
            out.sender_only.push(r.sender_only);
            out.pipe.push(r.pipe);
            out.unacked.push(r.unacked);
        }
    }
    Ok(out)
}

mod py;
pub use py::register;

#[cfg(test)]
mod tests;
