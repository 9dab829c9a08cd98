//! Wireshark's bytes in flight (`tcp.analysis.bytes_in_flight`), one streaming pass per connection.
//!
//! Wireshark (epan/dissectors/packet-tcp.c, `tcp_analyze_sequence_number`) keeps per direction
//! the list of segments no ACK from the other side has covered yet (`tcp_unacked_t`):
//! - every segment with data, SYN or FIN is added, retransmissions included, while the list
//!   holds fewer than `TCP_MAX_UNACKED_SEGMENTS` (10,000: a one-way capture stops growing it);
//! - each packet's ACK number then trims the *other* direction's list: a segment whose end
//!   it reaches leaves, a segment it falls inside starts at the ACK from then on;
//! - at a data segment, bytes in flight = highest end - lowest start in its direction's list,
//!   the segment itself included.
//!
//! The value is *valid* from the start of every connection (`valid_bif = 1` when the
//! conversation is made, Wireshark 4.0): one-way captures, captures that start mid-stream and
//! the first segments before any ACK all get a value, counting only the segments seen. A
//! segment that skips bytes (`tcp.analysis.lost_segment`) clears it for its direction until
//! a packet with the ACK flag comes the other way.
//!
//! [`Corrected`] then applies Wireshark's SACK and SYN/FIN corrections: the value the flight
//! frame's `flight_bytes` column (and so the flows table's `flight_*_bytes`) holds.

#[cfg(test)]
use super::seq::Packets;
use super::seq::{ACK, FIN, GAP, MISSING, STRAY, SYN};
#[cfg(test)]
use rayon::prelude::*;
use std::collections::{BTreeSet, VecDeque};

/// packet-tcp.h: the most unacknowledged segments Wireshark stores per direction.
pub const MAX_UNACKED: usize = 10_000;

/// Wireshark keeps bytes in flight only below this (`tcp.analysis.bytes_in_flight` is empty
/// for a negative or absurd value).
const MAX_FLIGHT: i64 = 2_000_000_000;

/// One direction's unacknowledged segments. Wireshark scans its whole list for the lowest
/// start and highest end at every data segment; here segments that extend the sequence
/// (start and end not below the last such one: the usual case) are kept in a deque sorted by
/// both, and the others (retransmissions, reordering) in two ordered sets, so each look-up
/// and each ACK costs O(log n) at most. The ids of segments that left are reused, so the
/// state holds only the segments in the list (at most [`MAX_UNACKED`]).
#[derive(Default)]
struct Unacked {
    /// (start, end), both non-decreasing front to back.
    run: VecDeque<(i64, i64)>,
    /// The other segments by (end, id) and (start, id); `start[id]` is the current start.
    by_end: BTreeSet<(i64, u32)>,
    by_start: BTreeSet<(i64, u32)>,
    start: Vec<i64>,
    /// Ids of `start` whose segment left (an id only tells segments apart: no look-up
    /// depends on its value).
    free: Vec<u32>,
}

impl Unacked {
    fn len(&self) -> usize {
        self.run.len() + self.by_end.len()
    }

    fn add(&mut self, seq: i64, end: i64) {
        if self.run.back().is_none_or(|&(s, e)| seq >= s && end >= e) {
            self.run.push_back((seq, end));
            return;
        }
        let k = match self.free.pop() {
            Some(k) => {
                if let Some(v) = self.start.get_mut(k as usize) {
                    *v = seq;
                }
                k
            }
            None => {
                self.start.push(seq);
                (self.start.len() - 1) as u32
            }
        };
        self.by_end.insert((end, k));
        self.by_start.insert((seq, k));
    }

    /// An ACK from the other side: segments it reaches the end of leave; one it falls
    /// inside starts at the ACK (`ual->seq = ack`).
    fn ack(&mut self, ack: i64) {
        while self.run.front().is_some_and(|&(_, e)| e <= ack) {
            self.run.pop_front();
        }
        for seg in self.run.iter_mut() {
            if seg.0 >= ack {
                break;
            }
            seg.0 = ack; // (starts stay sorted: every trimmed one becomes `ack`)
        }
        while let Some(&(end, k)) = self.by_end.first() {
            if end > ack {
                break;
            }
            self.by_end.pop_first();
            if let Some(&s) = self.start.get(k as usize) {
                self.by_start.remove(&(s, k));
            }
            self.free.push(k);
        }
        while let Some(&(s, k)) = self.by_start.first() {
            if s >= ack {
                break;
            }
            self.by_start.pop_first();
            self.by_start.insert((ack, k));
            if let Some(v) = self.start.get_mut(k as usize) {
                *v = ack;
            }
        }
    }

    /// Highest end - lowest start (None when empty).
    fn span(&self) -> Option<i64> {
        // (a plain match: this runs at every data segment)
        let lo = match (self.run.front(), self.by_start.first()) {
            (Some(r), Some(o)) => r.0.min(o.0),
            (Some(r), None) => r.0,
            (None, Some(o)) => o.0,
            (None, None) => return None,
        };
        let hi = match (self.run.back(), self.by_end.last()) {
            (Some(r), Some(o)) => r.1.max(o.0),
            (Some(r), None) => r.1,
            (None, Some(o)) => o.0,
            (None, None) => return None,
        };
        Some(hi - lo)
    }
}

/// Per packet: Wireshark's raw bytes in flight before the SACK and SYN/FIN corrections
/// ([`MISSING`] where it gives none), and whether the other direction had sent no ACK yet
/// (the value then rests on the sender's segments only).
#[cfg(test)]
pub struct Flight {
    pub raw: Vec<i64>,
    pub sender_only: Vec<bool>,
}

/// One data packet's result: its row, the raw value and whether it is from the sender's side only.
#[cfg(test)]
type Row = (u32, i64, bool);

/// One connection's Wireshark bytes-in-flight state (both directions), fed packet by packet.
#[derive(Default)]
pub struct ListFlight {
    list: [Unacked; 2],
    /// Bytes in flight are valid in this direction (cleared by a lost segment).
    invalid: [bool; 2],
    /// The other direction has sent an ACK.
    acked: [bool; 2],
}

impl ListFlight {
    /// One packet of direction `d` (0 or 1; never a stray SYN: `seq::STRAY` packets lie
    /// outside the connection's sequence space and are not fed). Returns, for a data packet,
    /// the raw bytes in flight ([`MISSING`] when Wireshark gives none) and whether the other
    /// direction had sent no ACK yet.
    pub fn on_packet(
        &mut self,
        d: usize,
        seq: i64,
        len: i64,
        fl: u8,
        ack: i64,
        gap: bool,
    ) -> Option<(i64, bool)> {
        let end = seq + len + i64::from(fl & (SYN | FIN) != 0);
        // the ACK flag with an ACK number (a simulator's trace may lack the number)
        let has_ack = fl & ACK != 0 && ack != MISSING;
        // an ACK re-enables the other direction's bytes in flight
        if has_ack {
            self.invalid[1 - d] = false;
        }
        // lost segment (`seq::State`'s GAP: above nextseq, no RST): disabled until the other
        // side ACKs
        if gap {
            self.invalid[d] = true;
        }
        if (len > 0 || fl & (SYN | FIN) != 0) && self.list[d].len() < MAX_UNACKED {
            self.list[d].add(seq, end);
        }
        if has_ack {
            self.list[1 - d].ack(ack);
            self.acked[1 - d] = true;
        }
        if len == 0 {
            return None;
        }
        let raw = if self.invalid[d] {
            MISSING
        } else {
            self.list[d].span().unwrap_or(MISSING)
        };
        Some((raw, !self.acked[d]))
    }
}

/// One connection's `tcp.analysis.bytes_in_flight` as Wireshark shows it (both directions),
/// fed packet by packet: the list ([`ListFlight`]) with Wireshark's SACK and SYN/FIN
/// corrections (packet-tcp.c, `tcp_analyze_sequence_number`): minus the bytes of every SACK
/// block carried by the other side's latest packet (all of them, D-SACK ones included), kept
/// only in (0, 2e9), minus the virtual byte of a SYN or FIN.
#[derive(Default)]
pub struct Corrected {
    list: ListFlight,
    /// Bytes in the SACK blocks of each direction's latest packet.
    last_blocks: [i64; 2],
}

impl Corrected {
    /// One packet of direction `d` with its state bits `b` (`seq::State::bits`: GAP and STRAY
    /// are read) and SACK blocks `(left, right)` ([`MISSING`] for a missing edge). Returns, for
    /// a data packet (payload > 0), its bytes in flight ([`MISSING`]: none) and whether that
    /// value rests on the sender's segments alone (no ACK from the other side yet).
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
    ) -> Option<(i64, bool)> {
        // a stray SYN takes no part in Wireshark's list, but its blocks are read like any other
        let raw = if b & STRAY != 0 {
            None
        } else {
            self.list.on_packet(d, seq, len, fl, ack, b & GAP != 0)
        };
        // Wireshark subtracts every block's bytes, D-SACK ones too (a missing edge: none)
        self.last_blocks[d] = blocks
            .iter()
            .map(|&(l, r)| {
                if l == MISSING || r == MISSING {
                    0
                } else {
                    r - l
                }
            })
            .sum();
        if len == 0 {
            return None;
        }
        let (raw, only) = raw.unwrap_or((MISSING, false));
        let v = if raw == MISSING {
            MISSING
        } else {
            raw - self.last_blocks[1 - d]
        };
        // Wireshark keeps the corrected value only in (0, 2e9), then takes off a SYN's or a
        // FIN's virtual byte
        let flight = if v > 0 && v < MAX_FLIGHT {
            v - i64::from(fl & (SYN | FIN) != 0)
        } else {
            MISSING
        };
        Some((flight, only && flight != MISSING))
    }
}

/// One connection's packets (`rows`, packet order): (row, raw value, sender only) per data packet.
#[cfg(test)]
fn connection(p: &Packets, bits: &[u8], rows: &[u32]) -> Vec<Row> {
    let mut st = ListFlight::default();
    let mut out = Vec::new();
    for &row in rows {
        let i = row as usize;
        if bits[i] & STRAY != 0 {
            continue; // a stray SYN: outside the connection's sequence space
        }
        let d = usize::from(p.dir[i] == 1);
        let (seq, len) = (p.seq[i], i64::from(p.len[i]));
        let gap = bits[i] & GAP != 0;
        if let Some((raw, only)) = st.on_packet(d, seq, len, p.flags[i], p.ack[i], gap) {
            out.push((row, raw, only));
        }
    }
    out
}

/// Wireshark's bytes in flight of every data packet (see the module docs): the list alone,
/// which the tests check rule by rule (Python reads it with the SACK measures, `super::sack`).
#[cfg(test)]
///
/// `bits` are the state bits of every packet (`seq::State::bits`: [`GAP`], Wireshark's
/// lost-segment rule, and [`STRAY`], stray SYNs take no part, are read).
pub fn flight(p: &Packets, bits: &[u8]) -> Result<Flight, String> {
    let n = p.validate()?;
    if bits.len() != n {
        return Err(format!(
            "column bits has {} values, flow has {n}",
            bits.len()
        ));
    }
    let flows: Vec<u64> = p.flow.iter().map(|&f| u64::from(f)).collect();
    let gr = super::seq::group_keys(&flows);
    let bounds: Vec<(usize, usize)> = gr.starts.windows(2).map(|w| (w[0], w[1])).collect();
    let per: Vec<Vec<Row>> = bounds
        .par_iter()
        .map(|&(s, e)| connection(p, bits, &gr.order[s..e]))
        .collect();
    let mut out = Flight {
        raw: vec![MISSING; n],
        sender_only: vec![false; n],
    };
    for (row, raw, only) in per.into_iter().flatten() {
        out.raw[row as usize] = raw;
        out.sender_only[row as usize] = only;
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
