//! Per-direction summary of a TCP connection: counts, bytes, time span, unique bytes, the SYN
//! options (MSS, window scale) and the handshake times: the `flows.basic` columns, the
//! handshake RTT, the connection's first SYN and the cwnd analysis' data directions.
//!
//! One accumulator per direction ([`DirStats`]), fed every TCP packet of that direction in
//! capture order ([`DirStats::on_packet`]); it keeps a few numbers, never the packets, so a
//! streaming driver can feed it record by record. The only look across to the peer is one
//! flag (has the peer sent its SYN-ACK yet?), which the driver passes in.
//!
//! Which packets count: every TCP packet with a connection id (the `flows.basic` rows);
//! the handshake and first-SYN times only from the packets the sequence analysis keeps
//! (direction and sequence number known: `tracekit.analysis._state.prepare`), as Wireshark
//! only times the handshake of packets it tracked.

use super::seq::MISSING;
use std::collections::HashMap;

/// One TCP packet as the accumulator reads it.
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub time: f64,
    /// TCP payload bytes (0 when unknown).
    pub payload: i64,
    /// Bytes on the wire (0 when unknown).
    pub size: i64,
    /// Relative sequence number ([`MISSING`]: none).
    pub seq: i64,
    pub syn: bool,
    /// The ACK flag with an ACK number.
    pub has_ack: bool,
    /// Direction and sequence number known (a row of the sequence analysis).
    pub in_state: bool,
    /// The MSS option's value (-1: no option).
    pub mss: i32,
    /// The window-scale option's shift count (-1: no option).
    pub wscale: i32,
}

/// Min and max as polars' `min`/`max` aggregate floats: NaN only when every value is NaN.
fn fold(acc: f64, x: f64, max: bool) -> f64 {
    // f64::min/max return the other operand when one is NaN; NaN is also "none yet"
    if max {
        acc.max(x)
    } else {
        acc.min(x)
    }
}

/// What one direction of a connection accumulates ([`f64::NAN`] / [`MISSING`] / -1: none).
#[derive(Clone, Debug)]
pub struct DirStats {
    /// Row of the direction's first packet (its addresses and ports are read there).
    pub first_row: i64,
    /// Earliest and latest packet time.
    pub start: f64,
    pub end: f64,
    pub packets: i64,
    /// Segments with payload (RFC 9293 §3.4: only they occupy sequence space besides SYN/FIN).
    pub data_packets: i64,
    pub data_bytes: i64,
    pub wire_bytes: i64,
    /// Lowest sequence number and highest end (`seq + payload`) of the data segments.
    pub seq_lo: i64,
    pub end_hi: i64,
    /// Largest payload.
    pub max_payload: i64,
    /// First MSS and window-scale option values seen in this direction (any segment).
    pub mss: i32,
    pub wscale: i32,
    /// First MSS option on a SYN of this direction. RFC 9293 §3.7.1: it bounds what the
    /// *peer* may send; the cwnd analysis takes it as this direction's own segment size, as
    /// before the port (equal when both SYNs carry the usual value).
    pub syn_mss: i32,
    /// A SYN of this direction carried the window-scale option (RFC 7323 §2.2).
    pub syn_wscale: bool,
    /// Earliest SYN (any: SYN, SYN-ACK or a stray one), and the latest SYN without ACK before
    /// the handshake's ACK ([`DirStats::handshake_rtt`]).
    pub syn_t: f64,
    pub pure_syn_t: f64,
    /// This direction sent a SYN-ACK.
    pub synack: bool,
    /// Earliest ACK without SYN sent after the peer's first SYN-ACK (the third handshake packet).
    pub ack3_t: f64,
}

impl DirStats {
    pub fn new(first_row: i64) -> Self {
        DirStats {
            first_row,
            start: f64::NAN,
            end: f64::NAN,
            packets: 0,
            data_packets: 0,
            data_bytes: 0,
            wire_bytes: 0,
            seq_lo: MISSING,
            end_hi: MISSING,
            max_payload: 0,
            mss: -1,
            wscale: -1,
            syn_mss: -1,
            syn_wscale: false,
            syn_t: f64::NAN,
            pure_syn_t: f64::NAN,
            synack: false,
            ack3_t: f64::NAN,
        }
    }

    /// Takes one packet of this direction; `peer_synack`: the peer has sent its SYN-ACK.
    pub fn on_packet(&mut self, s: &Seg, peer_synack: bool) {
        self.packets += 1;
        self.start = fold(self.start, s.time, false);
        self.end = fold(self.end, s.time, true);
        self.wire_bytes += s.size;
        self.max_payload = self.max_payload.max(s.payload);
        if s.payload > 0 {
            // a data segment; the bytes it covers are [seq, seq + payload) (RFC 9293 §3.4), so
            // the unique bytes are the highest end minus the lowest start seen, retransmissions
            // and reordering included once
            self.data_packets += 1;
            self.data_bytes += s.payload;
            if s.seq != MISSING {
                let end = s.seq + s.payload;
                if self.seq_lo == MISSING {
                    (self.seq_lo, self.end_hi) = (s.seq, end);
                } else {
                    self.seq_lo = self.seq_lo.min(s.seq);
                    self.end_hi = self.end_hi.max(end);
                }
            }
        }
        // the options as the first segment carrying them gave them (RFC 9293 §3.7.1: MSS is
        // sent on the SYN only; RFC 7323 §2.2: so is the window scale)
        if self.mss < 0 {
            self.mss = s.mss;
        }
        if self.wscale < 0 {
            self.wscale = s.wscale;
        }
        if s.syn {
            if self.syn_mss < 0 {
                self.syn_mss = s.mss;
            }
            // RFC 7323 §2.2: scaling is in effect only when both SYNs carried the option
            self.syn_wscale |= s.wscale >= 0;
        }
        if s.in_state {
            self.on_handshake(s, peer_synack);
        }
    }

    /// The handshake times (Wireshark's `tcp.analysis.initial_rtt`: the latest SYN -> the
    /// initiator's first ACK after the SYN-ACK, one full round trip wherever the capture was
    /// taken).
    fn on_handshake(&mut self, s: &Seg, peer_synack: bool) {
        if s.syn {
            self.syn_t = fold(self.syn_t, s.time, false);
            if s.has_ack {
                self.synack = true;
            } else if self.ack3_t.is_nan() && !s.time.is_nan() {
                // the most recent SYN before the handshake's ACK (Wireshark's `ts_mru_syn`): a SYN
                // sent again after a timeout (RFC 6298 §5.7) starts the round trip that ACK ends,
                // and timing it from the first SYN would add the timeout to the RTT
                self.pure_syn_t = s.time;
            }
        } else if s.has_ack && peer_synack {
            self.ack3_t = fold(self.ack3_t, s.time, false);
        }
    }

    /// Handshake RTT of the connection this (initiator's, `dir` 0) direction opened: its
    /// ACK of the SYN-ACK minus its SYN; NaN when either is missing or it would be negative.
    pub fn handshake_rtt(&self) -> f64 {
        let d = self.ack3_t - self.pure_syn_t;
        if d >= 0.0 {
            d
        } else {
            f64::NAN
        }
    }
}

/// Marks a missing direction in the `dir` column (any `i8` is a direction value).
pub const NO_DIR: i16 = i16::MIN;
/// Marks a packet to leave out (not TCP, or no connection id) in the `dir` column.
pub const SKIP: i16 = i16::MIN + 1;

/// The accumulators of a trace, one per (flow, dir) in order of first appearance.
pub struct Directions {
    pub keys: Vec<(u32, i16)>,
    pub stats: Vec<DirStats>,
    /// `2·flow + dir` -> index + 1 (0: none) for the usual directions 0 and 1 of small flow ids.
    dense: Vec<u32>,
    other: HashMap<(u32, i16), u32>,
    /// The last packet's direction and its index (packets of one direction come in runs).
    last: Option<(u32, i16, usize)>,
}

impl Directions {
    pub fn new(max_flow: Option<u32>, rows: usize) -> Self {
        // readers number connections 0, 1, 2, ...: a table; any other id goes to the map
        let width = match max_flow {
            Some(f) if (f as usize) <= rows + 1024 => 2 * (f as usize + 1),
            _ => 0,
        };
        Directions {
            keys: Vec::new(),
            stats: Vec::new(),
            dense: vec![0; width],
            other: HashMap::new(),
            last: None,
        }
    }

    /// The index of direction (`flow`, `dir`) in `keys` and `stats`, if it has been seen.
    pub fn find(&self, flow: u32, dir: i16) -> Option<usize> {
        let j = if (dir == 0 || dir == 1) && 2 * (flow as usize) + 1 < self.dense.len() {
            self.dense[2 * flow as usize + dir as usize]
        } else {
            self.other.get(&(flow, dir)).copied().unwrap_or(0)
        };
        (j > 0).then(|| j as usize - 1)
    }

    fn slot(&mut self, flow: u32, dir: i16, row: i64) -> usize {
        if let Some(j) = self.find(flow, dir) {
            return j;
        }
        let j = self.stats.len();
        self.stats.push(DirStats::new(row));
        self.keys.push((flow, dir));
        let id = j as u32 + 1;
        if (dir == 0 || dir == 1) && 2 * (flow as usize) + 1 < self.dense.len() {
            self.dense[2 * flow as usize + dir as usize] = id;
        } else {
            self.other.insert((flow, dir), id);
        }
        j
    }

    /// Feeds packet `row` of direction (`flow`, `dir`).
    pub fn on_packet(&mut self, flow: u32, dir: i16, row: i64, s: &Seg) {
        let j = match self.last {
            Some((f, x, j)) if f == flow && x == dir => j,
            _ => self.slot(flow, dir, row),
        };
        self.last = Some((flow, dir, j));
        // only the initiator's ACKs need the peer's state (the SYN-ACK seen before them)
        let peer_synack = dir == 0
            && s.in_state
            && s.has_ack
            && !s.syn
            && self.find(flow, 1).is_some_and(|p| self.stats[p].synack);
        self.stats[j].on_packet(s, peer_synack);
    }
}

/// The packet columns (one entry per packet).
pub struct Columns<'a> {
    pub flow: &'a [u32],
    /// Direction, [`NO_DIR`] for none, [`SKIP`] for a packet that is no TCP packet of a connection.
    pub dir: &'a [i16],
    pub time: &'a [f64],
    pub payload: &'a [u32],
    /// [`MISSING`]: none.
    pub seq: &'a [i64],
    /// TCP flags; the ACK bit only with an ACK number.
    pub flags: &'a [u8],
    /// Bytes on the wire and the options (-1: none); empty: none known for any packet.
    pub size: &'a [u32],
    pub mss: &'a [i32],
    pub wscale: &'a [i16],
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

/// Runs the accumulators over every kept packet in order.
pub fn dir_stats(c: &Columns) -> Result<Directions, String> {
    let n = c.flow.len();
    let lens = [
        c.dir.len(),
        c.time.len(),
        c.payload.len(),
        c.seq.len(),
        c.flags.len(),
    ];
    let optional = [c.size.len(), c.mss.len(), c.wscale.len()];
    if lens.iter().any(|&l| l != n) || optional.iter().any(|&l| l != n && l != 0) {
        return Err("dir_stats: columns of different lengths".into());
    }
    let (has_size, has_mss, has_ws) = (!c.size.is_empty(), !c.mss.is_empty(), !c.wscale.is_empty());
    let max_flow = (0..n)
        .filter(|&i| c.dir[i] != SKIP)
        .map(|i| c.flow[i])
        .max();
    let mut d = Directions::new(max_flow, n);
    for i in 0..n {
        if c.dir[i] == SKIP {
            continue;
        }
        let f = c.flags[i];
        let s = Seg {
            time: c.time[i],
            payload: c.payload[i] as i64,
            size: if has_size { c.size[i] as i64 } else { 0 },
            seq: c.seq[i],
            syn: f & SYN != 0,
            has_ack: f & ACK != 0,
            in_state: c.dir[i] != NO_DIR && c.seq[i] != MISSING,
            mss: if has_mss { c.mss[i] } else { -1 },
            wscale: if has_ws { c.wscale[i] as i32 } else { -1 },
        };
        d.on_packet(c.flow[i], c.dir[i], i as i64, &s);
    }
    Ok(d)
}

mod py;
pub use py::register;

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(time: f64, payload: i64, seq: i64, syn: bool, ack: bool) -> Seg {
        Seg {
            time,
            payload,
            size: payload + 52,
            seq,
            syn,
            has_ack: ack,
            in_state: true,
            mss: -1,
            wscale: -1,
        }
    }

    /// A handshake with options, two data segments, one retransmitted, and the peer's ACKs.
    #[test]
    fn handshake_counts_and_unique_bytes() {
        let mut d = Directions::new(Some(0), 8);
        let syn = Seg {
            mss: 1460,
            wscale: 7,
            ..seg(0.0, 0, 0, true, false)
        };
        d.on_packet(0, 0, 0, &syn);
        let synack = Seg {
            mss: 1400,
            wscale: -1, // the peer did not scale: no scaling either way
            ..seg(0.010, 0, 0, true, true)
        };
        d.on_packet(0, 1, 1, &synack);
        d.on_packet(0, 0, 2, &seg(0.011, 0, 1, false, true)); // the third packet
        d.on_packet(0, 0, 3, &seg(0.012, 100, 1, false, true));
        d.on_packet(0, 0, 4, &seg(0.013, 100, 101, false, true));
        d.on_packet(0, 0, 5, &seg(0.300, 100, 1, false, true)); // retransmission of 1..101
        d.on_packet(0, 1, 6, &seg(0.320, 0, 1, false, true));
        let a = &d.stats[0];
        assert_eq!((a.packets, a.data_packets, a.data_bytes), (5, 3, 300));
        assert_eq!(a.end_hi - a.seq_lo, 200); // the retransmission adds no unique bytes
        assert_eq!(a.wire_bytes, 300 + 5 * 52);
        assert_eq!((a.start, a.end), (0.0, 0.300));
        assert_eq!(
            (a.mss, a.wscale, a.syn_mss, a.syn_wscale),
            (1460, 7, 1460, true)
        );
        assert_eq!(a.max_payload, 100);
        assert_eq!(a.handshake_rtt(), 0.011);
        assert_eq!(a.syn_t, 0.0);
        let b = &d.stats[1];
        assert_eq!((b.packets, b.data_packets, b.seq_lo), (2, 0, MISSING));
        assert_eq!(
            (b.syn_mss, b.syn_wscale, b.synack, b.syn_t),
            (1400, false, true, 0.010)
        );
    }

    /// ACKs before the SYN-ACK do not close the handshake; without a SYN there is no RTT.
    #[test]
    fn handshake_needs_the_synack_first() {
        let mut d = Directions::new(Some(3), 4);
        d.on_packet(3, 0, 0, &seg(1.0, 0, 0, true, false));
        d.on_packet(3, 0, 1, &seg(1.1, 0, 1, false, true)); // before the SYN-ACK: ignored
        d.on_packet(3, 1, 2, &seg(1.2, 0, 0, true, true));
        d.on_packet(3, 0, 3, &seg(1.5, 0, 1, false, true));
        assert_eq!(d.stats[0].handshake_rtt(), 0.5);
        let mut e = Directions::new(Some(0), 2);
        e.on_packet(0, 1, 0, &seg(0.0, 0, 0, true, true));
        e.on_packet(0, 0, 1, &seg(0.1, 0, 1, false, true));
        assert!(e.stats[1].handshake_rtt().is_nan());
        assert!(e.stats[1].ack3_t == 0.1 && e.stats[1].pure_syn_t.is_nan());
    }

    /// A SYN sent again after a timeout (ns-2's dumbbell flow 1: lost at 0.6 s, re-sent at 3.6 s):
    /// the round trip is timed from the re-sent SYN, as Wireshark's `ts_mru_syn`; a SYN after the
    /// handshake's ACK moves nothing. The earliest SYN stays where the connection started.
    #[test]
    fn a_resent_syn_times_the_handshake() {
        let mut d = Directions::new(Some(1), 2);
        d.on_packet(1, 0, 0, &seg(0.6, 0, 0, true, false));
        d.on_packet(1, 0, 1, &seg(3.6, 0, 0, true, false));
        d.on_packet(1, 1, 2, &seg(3.69172, 0, 0, true, true));
        d.on_packet(1, 0, 3, &seg(3.721965, 0, 1, false, true));
        d.on_packet(1, 0, 4, &seg(9.0, 0, 0, true, false)); // after the ACK: moves nothing
        let a = &d.stats[0];
        assert!((a.handshake_rtt() - 0.121965).abs() < 1e-12);
        assert_eq!(a.syn_t, 0.6);
    }

    /// Large ids and odd directions go to the map; rows without direction or sequence
    /// number count but take no part in the handshake.
    #[test]
    fn columns_odd_keys_and_lengths() {
        let c = Columns {
            flow: &[1 << 31, 1 << 31, 0, 5],
            dir: &[0, NO_DIR, SKIP, 1],
            time: &[0.5, 0.25, 9.0, 1.0],
            payload: &[10, 20, 30, 0],
            size: &[60, 70, 80, 40],
            seq: &[0, MISSING, 0, 0],
            flags: &[SYN, SYN | ACK, 0, SYN],
            mss: &[536, -1, -1, -1],
            wscale: &[-1, 3, -1, -1],
        };
        let d = dir_stats(&c).unwrap();
        assert_eq!(d.keys, vec![(1 << 31, 0), (1 << 31, NO_DIR), (5, 1)]);
        assert_eq!(d.stats[0].seq_lo, 0);
        assert_eq!(d.stats[1].seq_lo, MISSING); // data without sequence number
        assert!(d.stats[1].syn_t.is_nan() && !d.stats[1].synack);
        assert!(d.stats[1].syn_wscale);
        assert!(!d.stats[2].synack && d.stats[2].syn_t == 1.0);
        let bad = Columns { size: &[1], ..c };
        assert!(dir_stats(&bad).is_err());
        let bad = Columns { dir: &[0], ..c };
        assert!(dir_stats(&bad).is_err());
        // no sizes or options known: none counted
        let bare = dir_stats(&Columns {
            size: &[],
            mss: &[],
            wscale: &[],
            ..c
        })
        .unwrap();
        assert_eq!((bare.stats[0].wire_bytes, bare.stats[0].mss), (0, -1));
        assert!(!bare.stats[1].syn_wscale);
    }
}
