//! Per-direction TCP sequence state, one streaming pass over the packets.
//!
//! This is the state Wireshark's `tcp_analyze_sequence_number` (epan/dissectors/packet-tcp.c)
//! keeps per direction (`tcp_flow_t`): the highest sequence end sent (`nextseq`), the highest
//! ACK sent (`lastack`), the previous segment's window and ACK (for duplicate ACKs), plus the
//! flags the analyses read (new data, gaps, keep-alives, zero-window probes).
//!
//! Input is the packets of a trace in capture order, as columns. One pass in that order feeds
//! each packet to its direction's state (`g = 2·flow + dir`), which also reads the other
//! direction's latest packet; the results come out in packet order. (The passes that need a
//! direction's rows together group them themselves: [`group_keys`].)

use std::collections::HashMap;

/// Stand-in for "missing" in i64 columns (below every sequence number, ACK and window).
pub const MISSING: i64 = -(1 << 62);

/// Bits of the TCP flags byte (RFC 9293 §3.1), the reader's `flags` column as it is.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

/// The state bits: one byte per packet ([`State::bits`]), the one layout of the per-packet
/// flags. `tcp_state` returns it, `tracekit/analysis/_state.py::prepare` keeps it unchanged
/// (column `_b`, beside the TCP flags as `_f`) and hands it to the later passes (`rtt`, `sack`,
/// `retrans`), which read it with these constants:
///
/// - [`GAP`]: the packet starts above `nxt` (Wireshark's lost segment);
/// - [`KEEPALIVE`], [`ZWP`]: Wireshark's keep-alive and zero-window-probe rules;
/// - [`DUP`]: Wireshark's duplicate ACK;
/// - [`NEW`]: data whose end raises the highest data end sent;
/// - [`NEW_ACK`]: the packet raises the highest ACK its direction has sent;
/// - [`ADV`]: data, SYN or FIN whose end exceeds `nxt` (a first transmission of that end);
/// - [`STRAY`]: a stray SYN, outside the state (all other bits 0).
pub const GAP: u8 = 1 << 0;
pub const KEEPALIVE: u8 = 1 << 1;
pub const ZWP: u8 = 1 << 2;
pub const DUP: u8 = 1 << 3;
pub const NEW: u8 = 1 << 4;
pub const NEW_ACK: u8 = 1 << 5;
pub const ADV: u8 = 1 << 6;
/// A SYN with another sequence number inside a direction that has already started (a stray
/// SYN-ACK): it takes no part in the state.
pub const STRAY: u8 = 1 << 7;

/// The packet columns (one entry per packet, capture order). `ack` and `win` hold [`MISSING`]
/// where the packet has none.
pub struct Packets<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub seq: &'a [i64],
    pub len: &'a [u32],
    pub flags: &'a [u8],
    pub ack: &'a [i64],
    pub win: &'a [i64],
}

/// Per-packet state, packet order. i64 columns hold [`MISSING`] for "none yet".
#[derive(Debug, Default)]
pub struct State {
    /// Direction id `2·flow + dir` of every packet.
    pub g: Vec<u64>,
    /// Highest segment end sent by this direction before the packet (Wireshark's `nextseq`).
    pub nxt: Vec<i64>,
    /// Highest data end sent up to and including the packet.
    pub hi_dend: Vec<i64>,
    /// The bits [`GAP`] .. [`STRAY`].
    pub bits: Vec<u8>,
    /// Row of the other direction's latest packet before this one (-1: none).
    pub r_i: Vec<i64>,
    /// Highest ACK the other direction had sent by `r_i`.
    pub r_hi_ack: Vec<i64>,
    /// The window of the packet `r_i`.
    pub r_win: Vec<i64>,
}

/// A segment: payload, SYN or FIN (each occupies sequence space, RFC 9293 §3.4), not a stray
/// SYN. `flags` is the TCP flags byte, `bits` the packet's state bits.
pub fn is_seg(len: i64, flags: u8, bits: u8) -> bool {
    (len > 0 || flags & (SYN | FIN) != 0) && bits & STRAY == 0
}

impl Packets<'_> {
    /// Checks that every column has one entry per packet and every `dir` is 0 or 1.
    pub fn validate(&self) -> Result<usize, String> {
        let n = self.flow.len();
        let lens = [
            ("dir", self.dir.len()),
            ("seq", self.seq.len()),
            ("len", self.len.len()),
            ("flags", self.flags.len()),
            ("ack", self.ack.len()),
            ("win", self.win.len()),
        ];
        for (name, l) in lens {
            if l != n {
                return Err(format!("column {name} has {l} values, flow has {n}"));
            }
        }
        if n >= u32::MAX as usize {
            return Err(format!("{n} packets: at most 2^32 - 2 per call"));
        }
        if let Some(i) = self.dir.iter().position(|&d| d != 0 && d != 1) {
            return Err(format!("packet {i}: dir {} is not 0 or 1", self.dir[i]));
        }
        Ok(n)
    }

    fn gid(&self, i: usize) -> u64 {
        2 * u64::from(self.flow[i]) + u64::from(self.dir[i] == 1)
    }
}

/// Rows grouped by a key: dense ids in ascending key order, their bounds and the stable order.
pub struct Groups {
    /// The distinct keys, ascending.
    pub keys: Vec<u64>,
    /// Dense id (index into `keys`) of every row.
    #[allow(dead_code)] // (no pass reads it since the flight pass runs in packet order)
    pub id: Vec<u32>,
    /// Rows of group k: `order[starts[k]..starts[k + 1]]`.
    pub starts: Vec<usize>,
    /// Row numbers, grouped (a stable counting sort: packet order within a group).
    pub order: Vec<u32>,
}

/// Groups rows by `keys` (one per row).
pub fn group_keys(keys: &[u64]) -> Groups {
    let n = keys.len();
    let top = keys.iter().copied().max().unwrap_or(0);
    // keys dense enough to count (the usual flow ids), else sorted and searched
    let (uniq, id): (Vec<u64>, Vec<u32>) = if top < 4 * n as u64 + 1024 {
        let mut lut = vec![u32::MAX; top as usize + 1];
        for &key in keys {
            lut[key as usize] = 0;
        }
        let mut uniq = Vec::new();
        for (key, slot) in lut.iter_mut().enumerate() {
            if *slot == 0 {
                *slot = uniq.len() as u32;
                uniq.push(key as u64);
            }
        }
        let id = keys.iter().map(|&key| lut[key as usize]).collect();
        (uniq, id)
    } else {
        let mut uniq = keys.to_vec();
        uniq.sort_unstable();
        uniq.dedup();
        let id = keys
            .iter()
            .map(|&key| uniq.binary_search(&key).map_or(0, |k| k as u32))
            .collect();
        (uniq, id)
    };
    let mut starts = vec![0usize; uniq.len() + 1];
    for &k in &id {
        starts[k as usize + 1] += 1;
    }
    for k in 0..uniq.len() {
        starts[k + 1] += starts[k];
    }
    let mut fill = starts.clone();
    let mut order = vec![0u32; n];
    for (i, &k) in id.iter().enumerate() {
        order[fill[k as usize]] = i as u32;
        fill[k as usize] += 1;
    }
    Groups {
        keys: uniq,
        id,
        starts,
        order,
    }
}

/// The running state of one direction (Wireshark's `tcp_flow_t`, the parts used here).
#[derive(Default)]
struct Flow {
    /// `nextseq` from every packet: the keep-alive rule of the duplicate-ACK test reads it.
    nxt_all: Option<i64>,
    /// `nextseq` from every packet that cannot be a zero-window probe: the probe rule reads it.
    nxt_plain: Option<i64>,
    /// `nextseq` as Wireshark keeps it (zero-window probes do not advance it).
    nxt: Option<i64>,
    hi_dend: Option<i64>,
    hi_ack: Option<i64>,
    prev_win: i64,
    prev_ack: i64,
    /// The sequence number of this direction's SYN, when it started with one.
    syn_seq: Option<i64>,
}

fn above(x: i64, m: Option<i64>) -> bool {
    m.is_none_or(|m| x > m)
}

fn raise(m: &mut Option<i64>, x: i64) {
    *m = Some(m.map_or(x, |m| m.max(x)));
}

impl Flow {
    fn new() -> Self {
        Flow {
            prev_win: MISSING,
            prev_ack: MISSING,
            ..Flow::default()
        }
    }

    /// A SYN with another ISN after this direction has started (a stray SYN-ACK inside an
    /// established connection) lies outside the connection's sequence space: it never moves
    /// nextseq, the highest data end or the highest ACK (it once gave 99 MB in flight).
    /// Wireshark 4.0 re-bases the direction on it instead and then shows no bytes in flight
    /// (docs/analysis.md). A retransmitted SYN (same sequence number) is no stray.
    fn stray(&mut self, seq: i64, fl: u8) -> bool {
        if fl & SYN == 0 {
            return false;
        }
        if self.nxt_all.is_some() && self.syn_seq != Some(seq) {
            return true;
        }
        self.syn_seq = Some(seq);
        false
    }

    /// One packet: its state bits and `nxt` before it; then the running state advances.
    fn step(
        &mut self,
        seq: i64,
        len: i64,
        fl: u8,
        ack: i64,
        win: i64,
        peer_win: i64,
    ) -> (u8, Option<i64>, bool) {
        if self.stray(seq, fl) {
            return (STRAY, self.nxt, false);
        }
        let syn_fin = fl & (SYN | FIN) != 0;
        let sfr = fl & (SYN | FIN | RST) != 0;
        // SYN and FIN occupy one sequence number each (RFC 9293 §3.4)
        let end = seq + len + i64::from(syn_fin);
        let mut bits = 0u8;
        // keep-alive (packet-tcp.c): 0 or 1 byte at nextseq - 1, no SYN/FIN/RST
        let ka1 = len <= 1 && !sfr && self.nxt_all.is_some_and(|n| seq == n - 1);
        // zero-window probe (packet-tcp.c): 1 byte at nextseq while the peer's window is 0;
        // it does not advance nextseq, so a repeated probe is a probe again
        let cand = len == 1 && peer_win == 0;
        let zwp = cand && self.nxt_plain == Some(seq);
        let eff = if zwp { seq } else { end };
        let nxt = self.nxt;
        if len <= 1 && !sfr && nxt.is_some_and(|n| seq == n - 1) {
            bits |= KEEPALIVE;
        }
        // lost segment (tcp.analysis.lost_segment): starts above nextseq; RST excepted
        if fl & RST == 0 && nxt.is_some_and(|n| seq > n) {
            bits |= GAP;
        }
        // the first transmission of this end: data, SYN or FIN whose end exceeds nextseq
        if (len > 0 || syn_fin) && above(eff, nxt) {
            bits |= ADV;
        }
        // new data: its end raises the highest data end sent
        if len > 0 && above(seq + len, self.hi_dend) {
            bits |= NEW;
        }
        // duplicate ACK (tcp.analysis.duplicate_ack): no payload, no SYN/FIN/RST, at nextseq,
        // same ACK and same non-zero window as this direction's previous packet; a trace
        // without windows (simulators) skips the window conditions
        let same_win = win == MISSING || (win != 0 && win == self.prev_win);
        if same_win
            && len == 0
            && !sfr
            && nxt == Some(seq)
            && ack != MISSING
            && ack == self.prev_ack
        {
            bits |= DUP;
        }
        // the highest ACK this direction has sent (Wireshark's lastack); ACK flag needed
        let has_ack = fl & ACK != 0 && ack != MISSING;
        if has_ack && above(ack, self.hi_ack) {
            bits |= NEW_ACK;
        }
        if zwp {
            bits |= ZWP;
        }
        raise(&mut self.nxt_all, end);
        if !cand {
            raise(&mut self.nxt_plain, end);
        }
        raise(&mut self.nxt, eff);
        if len > 0 {
            raise(&mut self.hi_dend, seq + len);
        }
        if has_ack {
            raise(&mut self.hi_ack, ack);
        }
        self.prev_win = win;
        self.prev_ack = ack;
        (bits, nxt, ka1)
    }
}

/// One direction as its packets pass: its running state, and what the other direction's
/// packets read of it (its latest packet). The one per-packet step of the sequence state:
/// the column walk ([`analyze`]) and the streaming driver (`crate::stream`) both feed it.
pub struct Side {
    flow: Flow,
    /// Row of its latest packet (-1: none yet).
    last: i64,
    /// Its latest packet's window ([`MISSING`]: none).
    win: i64,
    /// Its latest packet was a keep-alive by the first-pass rule (`nextseq` with zero-window
    /// probes included); only the duplicate-ACK rule of the other direction reads it.
    ka1: bool,
}

/// What a packet reads of the other direction: its latest packet's row (-1: none), window
/// and keep-alive flag, and the highest ACK it has sent ([`MISSING`]: none).
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    pub last: i64,
    pub win: i64,
    pub hi_ack: i64,
    pub ka1: bool,
}

impl Peer {
    /// A direction that has sent nothing yet.
    pub const NONE: Peer = Peer {
        last: -1,
        win: MISSING,
        hi_ack: MISSING,
        ka1: false,
    };
}

/// One packet's fields as the sequence state reads them (`ack`, `win`: [`MISSING`] for none).
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub seq: i64,
    pub len: i64,
    pub flags: u8,
    pub ack: i64,
    pub win: i64,
}

/// One packet's state: `nxt` before it, `hi_dend` after it ([`MISSING`]: none) and its bits.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub nxt: i64,
    pub hi_dend: i64,
    pub bits: u8,
}

impl Default for Side {
    fn default() -> Self {
        Side::new()
    }
}

impl Side {
    pub fn new() -> Self {
        Side {
            flow: Flow::new(),
            last: -1,
            win: MISSING,
            ka1: false,
        }
    }

    /// What the other direction's packets read of this one.
    pub fn peer(&self) -> Peer {
        Peer {
            last: self.last,
            win: self.win,
            hi_ack: self.flow.hi_ack.unwrap_or(MISSING),
            ka1: self.ka1,
        }
    }

    /// Packet `row` of this direction, `peer` the other direction as the packet finds it.
    pub fn on_packet(&mut self, peer: &Peer, row: i64, s: &Seg) -> Step {
        let (mut bits, nxt, ka1) = self
            .flow
            .step(s.seq, s.len, s.flags, s.ack, s.win, peer.win);
        // Wireshark: the ACK of a keep-alive is not a duplicate ACK
        if peer.ka1 {
            bits &= !DUP;
        }
        self.last = row;
        self.win = s.win;
        self.ka1 = ka1;
        Step {
            nxt: nxt.unwrap_or(MISSING),
            hi_dend: self.flow.hi_dend.unwrap_or(MISSING),
            bits,
        }
    }
}

/// The sides of every direction: a table by direction id when flow ids are dense (the
/// readers number them from 0), else a map.
enum Sides {
    Table(Vec<Side>),
    Map(HashMap<u64, Side>),
}

impl Sides {
    fn new(g: &[u64]) -> Self {
        let top = g.iter().copied().max().unwrap_or(0);
        if top < 8 * g.len() as u64 + 2048 {
            Sides::Table((0..=top | 1).map(|_| Side::new()).collect())
        } else {
            Sides::Map(HashMap::new())
        }
    }

    /// The other direction as a packet of direction `g` finds it.
    fn peer(&self, g: u64) -> Peer {
        let o = match self {
            Sides::Table(t) => t.get((g ^ 1) as usize),
            Sides::Map(m) => m.get(&(g ^ 1)),
        };
        o.map_or(Peer::NONE, Side::peer)
    }

    fn get(&mut self, g: u64) -> &mut Side {
        match self {
            Sides::Table(t) => &mut t[g as usize],
            Sides::Map(m) => m.entry(g).or_insert_with(Side::new),
        }
    }
}

/// The per-packet state of every direction (see the module docs).
pub fn analyze(p: &Packets) -> Result<State, String> {
    let n = p.validate()?;
    let g: Vec<u64> = (0..n).map(|i| p.gid(i)).collect();
    let mut st = walk(p, &g);
    st.g = g;
    Ok(st)
}

/// The one pass in packet order: each packet steps its direction's state, reading the other
/// direction's latest packet (every column is read once, front to back).
fn walk(p: &Packets, g: &[u64]) -> State {
    let n = g.len();
    let mut st = State {
        nxt: Vec::with_capacity(n),
        hi_dend: Vec::with_capacity(n),
        bits: Vec::with_capacity(n),
        r_i: Vec::with_capacity(n),
        r_hi_ack: Vec::with_capacity(n),
        r_win: Vec::with_capacity(n),
        ..State::default()
    };
    let mut sides = Sides::new(g);
    for (i, &gi) in g.iter().enumerate() {
        let peer = sides.peer(gi);
        let seg = Seg {
            seq: p.seq[i],
            len: i64::from(p.len[i]),
            flags: p.flags[i],
            ack: p.ack[i],
            win: p.win[i],
        };
        let s = sides.get(gi).on_packet(&peer, i as i64, &seg);
        st.nxt.push(s.nxt);
        st.hi_dend.push(s.hi_dend);
        st.bits.push(s.bits);
        st.r_i.push(peer.last);
        st.r_hi_ack.push(peer.hi_ack);
        st.r_win.push(peer.win);
    }
    st
}

#[cfg(test)]
mod tests;
