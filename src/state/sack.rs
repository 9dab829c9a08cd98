//! The SACK measures of bytes in flight, one streaming pass per connection.
//!
//! Beside Wireshark's list (`flight`), each data packet gets:
//! - Wireshark's SACK correction (packet-tcp.c, `tcp_analyze_sequence_number`): its bytes in
//!   flight minus the bytes of every SACK block carried by the other side's latest packet
//!   (all of them, D-SACK ones included), kept only in (0, 2e9), minus the virtual byte of a
//!   SYN or FIN;
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

use super::flight::ListFlight;
use super::seq::{group_keys, Packets, FIN, GAP, MISSING, NEW, NEW_ACK, STRAY, SYN};
use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use rayon::prelude::*;
use std::collections::{HashMap, VecDeque};

/// Wireshark keeps bytes in flight only below this (`tcp.analysis.bytes_in_flight` is empty
/// for a negative or absurd value).
const MAX_FLIGHT: i64 = 2_000_000_000;

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
    /// Bytes in the SACK blocks of this side's latest packet.
    last_blocks: i64,
    /// Labels of the other side's segments this side's latest packet SACKed first.
    newly: Vec<u32>,
    /// The highest right edge reported so far per left edge ([`MISSING`]: a block without one).
    edges: HashMap<i64, i64>,
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
    /// Bytes in the SACK blocks of the other side's latest packet.
    pub blocks: i64,
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
        // Wireshark subtracts every block's bytes, D-SACK ones too (a missing edge: none)
        me.last_blocks = blocks
            .iter()
            .map(|&(l, r)| {
                if l == MISSING || r == MISSING {
                    0
                } else {
                    r - l
                }
            })
            .sum();
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
        Measures {
            unacked,
            pipe,
            blocks: peer.last_blocks,
        }
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

type Out = (u32, i64, bool, i64, i64);
/// (data packet row, row of the packet that SACKed it first)
type Sacked = (u32, u32);

/// One connection: its rows in packet order and its blocks (row order); `bits` are the state
/// bits of every packet (`seq::State::bits`).
fn connection(
    p: &Packets,
    bits: &[u8],
    bl: &Blocks,
    rows: &[u32],
    blocks: &[u32],
) -> (Vec<Out>, Vec<Sacked>) {
    let mut list = ListFlight::default();
    let mut board = Scoreboard::default();
    let mut out = Vec::with_capacity(rows.len());
    let mut sacked = Vec::new();
    let mut k = 0;
    let mut mine = Vec::new();
    for &row in rows {
        let i = row as usize;
        mine.clear();
        while let Some(&j) = blocks.get(k) {
            if bl.row[j as usize] != i64::from(row) {
                break;
            }
            mine.push((bl.left[j as usize], bl.right[j as usize]));
            k += 1;
        }
        let d = usize::from(p.dir[i] == 1);
        let (seq, len, fl, ack, b) = (p.seq[i], i64::from(p.len[i]), p.flags[i], p.ack[i], bits[i]);
        // a stray SYN takes no part in Wireshark's list, but its blocks are read like any other
        let raw = if b & STRAY != 0 {
            None
        } else {
            list.on_packet(d, seq, len, fl, ack, b & GAP != 0)
        };
        let pk = Pkt {
            seq,
            len,
            ack,
            new: b & NEW != 0,
            new_ack: b & NEW_ACK != 0,
            id: row,
        };
        board.on_packet(d, &pk, &mine);
        sacked.extend(board.newly_sacked(d).iter().map(|&s| (s, row)));
        if len == 0 {
            continue;
        }
        let m = board.measures(d);
        let (raw, only) = raw.unwrap_or((MISSING, false));
        let v = if raw == MISSING {
            MISSING
        } else {
            raw - m.blocks
        };
        let fb = if v > 0 && v < MAX_FLIGHT {
            v - i64::from(fl & (SYN | FIN) != 0)
        } else {
            MISSING
        };
        out.push((row, fb, only && fb != MISSING, m.pipe, m.unacked));
    }
    (out, sacked)
}

/// The flight columns of every data packet (see the module docs); `bits` are the state bits
/// of every packet (`seq::State::bits`: GAP, STRAY, NEW and NEW_ACK are read).
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
    let flows: Vec<u64> = p.flow.iter().map(|&f| u64::from(f)).collect();
    let gr = group_keys(&flows);
    // the blocks per connection, row order (a stable counting sort by connection)
    let mut bstart = vec![0usize; gr.keys.len() + 1];
    for &r in bl.row {
        bstart[gr.id[r as usize] as usize + 1] += 1;
    }
    for k in 0..gr.keys.len() {
        bstart[k + 1] += bstart[k];
    }
    let mut fill = bstart.clone();
    let mut border = vec![0u32; nb];
    for (j, &r) in bl.row.iter().enumerate() {
        let c = gr.id[r as usize] as usize;
        border[fill[c]] = j as u32;
        fill[c] += 1;
    }
    let per: Vec<(Vec<Out>, Vec<Sacked>)> = (0..gr.keys.len())
        .into_par_iter()
        .map(|c| {
            let rows = &gr.order[gr.starts[c]..gr.starts[c + 1]];
            connection(p, bits, bl, rows, &border[bstart[c]..bstart[c + 1]])
        })
        .collect();
    // each data packet's place among the data packets, packet order; `upto[i]`: the data
    // packets in rows 0..=i
    let mut rank = vec![u32::MAX; n];
    let mut upto = vec![0u32; n];
    let mut m = 0u32;
    for (i, &l) in p.len.iter().enumerate() {
        if l > 0 {
            rank[i] = m;
            m += 1;
        }
        upto[i] = m;
    }
    let m = m as usize;
    let mut out = FlightColumns {
        flight: vec![MISSING; m],
        sender_only: vec![false; m],
        pipe: vec![MISSING; m],
        unacked: vec![MISSING; m],
        sacked_at: vec![MISSING; m],
    };
    for (cols, sacked) in per {
        for (row, fb, only, pipe, un) in cols {
            let k = rank[row as usize] as usize;
            out.flight[k] = fb;
            out.sender_only[k] = only;
            out.pipe[k] = pipe;
            out.unacked[k] = un;
        }
        for (seg, by) in sacked {
            out.sacked_at[rank[seg as usize] as usize] = i64::from(upto[by as usize]);
        }
    }
    Ok(out)
}

type FlightArrays<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
);

/// The flight frame's columns per data packet: `(flight, sender_only, pipe, unacked)`, and
/// `sacked_at` (see [`FlightColumns::sacked_at`]; not a column of the frame).
///
/// `flags` is the TCP flags byte, `bits` the state bits `tcp_state` returned
/// (`seq::State::bits`); `block_row`, `block_left`, `block_right` every SACK block (rows
/// ascending); -2^62 stands for none everywhere.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_flight_sack<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i8>,
    seq: PyReadonlyArray1<'py, i64>,
    len: PyReadonlyArray1<'py, u32>,
    flags: PyReadonlyArray1<'py, u8>,
    ack: PyReadonlyArray1<'py, i64>,
    bits: PyReadonlyArray1<'py, u8>,
    block_row: PyReadonlyArray1<'py, i64>,
    block_left: PyReadonlyArray1<'py, i64>,
    block_right: PyReadonlyArray1<'py, i64>,
) -> PyResult<FlightArrays<'py>> {
    let f = slice(&flow, "flow")?;
    let win = vec![MISSING; f.len()];
    let p = Packets {
        flow: f,
        dir: slice(&dir, "dir")?,
        seq: slice(&seq, "seq")?,
        len: slice(&len, "len")?,
        flags: slice(&flags, "flags")?,
        ack: slice(&ack, "ack")?,
        win: &win,
    };
    let bits = slice(&bits, "bits")?;
    let bl = Blocks {
        row: slice(&block_row, "block_row")?,
        left: slice(&block_left, "block_left")?,
        right: slice(&block_right, "block_right")?,
    };
    let out = py.detach(|| super::guard(|| flight_columns(&p, bits, &bl)))?;
    Ok((
        out.flight.into_pyarray(py),
        out.sender_only.into_pyarray(py),
        out.pipe.into_pyarray(py),
        out.unacked.into_pyarray(py),
        out.sacked_at.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tcp_flight_sack, m)?)
}

#[cfg(test)]
mod tests;
