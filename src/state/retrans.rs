//! Retransmissions and their kinds (fast, rto, spurious), one streaming pass per connection.
//!
//! Which segments re-send bytes follows Wireshark's `tcp_analyze_sequence_number`
//! (epan/dissectors/packet-tcp.c); why each was sent follows RFC 5681 §3.2 (three duplicate
//! ACKs), RFC 6675 (SACK), RFC 6298 §5 (the retransmission timer) and RFC 2883 (D-SACK).
//! `tracekit/analysis/retrans.py` states the rules in prose; here each is one block of
//! [`Conn::on_packet`], fed the prepared state of one connection's packets in order
//! (`tracekit/analysis/_state.py`: `nxt`, the other side's highest ACK, the TCP flags and the
//! state bits of `seq`: duplicate ACK, gap, keep-alive, zero-window probe, stray SYN) plus the
//! RTT estimate of each sample row.
//! A packet is judged when it arrives; only a later D-SACK block can turn an earlier
//! retransmission into a spurious one.

use super::seq::{is_seg, DUP, GAP, KEEPALIVE, MISSING, ZWP};
use super::srtt::{Est, Latest};
pub use bounds::{falls, Bounds, Uses};
use sent::{Sent, SentLog};
use std::collections::{BTreeMap, HashMap};

mod bounds;
mod sent;

/// Kind codes in the output: the `kind` column's value is [`KIND_NAMES`] by code.
pub const FAST: u8 = 0;
pub const RTO: u8 = 1;
pub const SPURIOUS: u8 = 2;
/// The `kind` column's value of each code, the one declaration of them
/// (`tracekit._core.RETRANS_KINDS`, read by the frames path and the stream's account).
pub const KIND_NAMES: [&str; 3] = ["fast", "rto", "spurious"];

/// Wireshark's default out-of-order window when no RTT is known (packet-tcp.c: 3 ms).
pub const OOO_DEFAULT_S: f64 = 0.003;
/// Tolerance on the silence before a timeout (simulators fire the timer exactly one RTO after the ACK).
const EPS_S: f64 = 1e-6;
/// A re-send this soon after a duplicate ACK was sent while processing it (a simulator: the same
/// instant; a Linux host: tens of µs, more behind its own queue, but then its SACK blocks count).
pub const DUP_CLOCKED_S: f64 = 1e-4;

/// The prepared state of a trace (packet order). i64 columns hold [`MISSING`] for null;
/// `est_rows`/`est_srtt` are the RFC 6298 smoothed RTT after each sample and the row it was
/// taken on (`super::srtt::Est`).
pub struct Columns<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub time: &'a [f64],
    pub seq: &'a [i64],
    pub len: &'a [i64],
    pub nxt: &'a [i64],
    pub ack: &'a [i64],
    pub r_hi_ack: &'a [i64],
    /// The TCP flags byte (SYN and FIN are read).
    pub flags: &'a [u8],
    /// The state bits `seq` made (`seq::State::bits`).
    pub bits: &'a [u8],
    pub est_rows: &'a [u32],
    pub est_srtt: &'a [f64],
    /// SACK blocks: owner row (ascending, a row's blocks in order), left and right edges.
    pub sack_row: &'a [i64],
    pub sack_left: &'a [i64],
    pub sack_right: &'a [i64],
}

/// Whether a packet is a retransmission candidate (then Some: whether it is Wireshark's
/// spurious retransmission), from its length, flags, `seq` state bits, start, the direction's
/// nextseq before it and the other side's latest ACK number ([`MISSING`]: none). The one test
/// [`Conn::on_packet`] makes, also run by a streaming driver's first pass to learn which starts
/// a direction's [`SentLog`] will be asked about.
pub fn candidate(len: i64, flags: u8, bits: u8, seq: i64, nxt: i64, r_ack: i64) -> Option<bool> {
    // a candidate (packet-tcp.c): a segment, no keep-alive or zero-window probe, starting
    // below nextseq, except a segment longer than one byte at nextseq - 1 (after a 1-byte probe)
    let seg = is_seg(len, flags, bits) && bits & (KEEPALIVE | ZWP) == 0;
    let behind = nxt != MISSING && seq < nxt && !(len > 1 && seq == nxt - 1);
    // Wireshark's spurious retransmission: data at or below the other side's latest ACK
    let spur = len > 0 && r_ack != MISSING && r_ack > 0 && seq + len <= r_ack;
    (seg && (behind || spur)).then_some(spur)
}

/// One packet as [`Conn::on_packet`] reads it.
#[derive(Clone, Copy, Debug)]
pub struct Pkt<'a> {
    pub row: u32,
    pub dir: usize,
    pub time: f64,
    pub seq: i64,
    pub len: i64,
    pub nxt: i64,
    pub ack: i64,
    pub r_hi_ack: i64,
    pub flags: u8,
    pub bits: u8,
    /// The smoothed RTT taken on its row (`Est::at`: of the other direction's data).
    pub srtt: Option<f64>,
    /// Its SACK blocks (left, right), [`MISSING`] for an edge not given.
    pub sack: &'a [(i64, i64)],
}

impl Pkt<'_> {
    /// Payload, SYN or FIN, not a stray SYN (`seq::is_seg`).
    fn is_seg(&self) -> bool {
        is_seg(self.len, self.flags, self.bits)
    }
}

/// What one direction has sent as the ACKing side (its loss signals to the other one).
#[derive(Default)]
struct AckSide {
    /// Its latest packet: (row, time, ACK number); None before it sends.
    last: Option<(u32, f64, i64)>,
    /// Where its ACK number last changed (first packet included): row, time.
    since: (u32, f64),
    /// Duplicate ACKs since then, and the third of them (RFC 5681 §3.2 fast retransmit).
    dups: u32,
    third: Option<(u32, f64)>,
    /// Its latest packet with a SACK block above its ACK (RFC 6675 loss evidence).
    sack_above: Option<u32>,
}

impl AckSide {
    fn on_packet(&mut self, p: &Pkt) {
        if self.last.is_none_or(|l| l.2 != p.ack) {
            self.since = (p.row, p.time);
            self.dups = 0;
            self.third = None;
        }
        if p.bits & DUP != 0 {
            self.dups += 1;
            if self.dups == 3 {
                self.third = Some((p.row, p.time));
            }
        }
        // a block reaching above the cumulative ACK (a row without blocks counts as edge -1)
        let hi = p.sack.iter().map(|b| b.1).filter(|&r| r != MISSING).max();
        if p.ack != MISSING && hi.unwrap_or(-1) > p.ack {
            self.sack_above = Some(p.row);
        }
        self.last = Some((p.row, p.time, p.ack));
    }
}

/// One direction as the sender.
#[derive(Default)]
struct Sender {
    sent: SentLog,
    /// Bytes skipped when a later segment arrived first: lower edge -> (upper edge, time).
    holes: BTreeMap<i64, (i64, f64)>,
    /// `nxt` of the previous retransmission (Some(MISSING): it had none); None before the first.
    prev_nxt: Option<i64>,
    /// Time of the latest retransmission that passed the timeout rule.
    last_to: Option<f64>,
    episode: i32,
    episode_kind: u8,
    /// The retransmissions a D-SACK can still turn spurious: per start, the latest one (row,
    /// data end, kind) when it is not spurious already (a later one at the same start hides it).
    by_seq: HashMap<i64, (u32, i64, u8)>,
    /// With [`Conn::bounded`]: the D-SACK left edges still to come (`by_seq` keeps those
    /// starts alone), and the row from which this direction's times never fall.
    dsacked: Option<Uses>,
    rising_from: Option<u32>,
}

/// One retransmission: its row, kind and recovery episode (numbered per direction from 1).
pub type Retrans = (u32, u8, i32);

/// What [`Conn::on_packet`] found: the packet's kind and episode when it is a retransmission,
/// and an earlier retransmission of the other direction its D-SACK block turned spurious (its
/// row and the kind it had).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Verdict {
    pub retrans: Option<(u8, i32)>,
    pub spurious_now: Option<(u32, u8)>,
}

/// The state machine of one connection.
pub struct Conn {
    side: [AckSide; 2],
    snd: [Sender; 2],
    /// Each direction's smoothed RTT (RFC 6298).
    rtt: Latest,
    /// The out-of-order window: the connection's handshake or least RTT (seconds).
    ooo_s: f64,
    rto_floor_s: f64,
}

impl Conn {
    pub fn new(ooo_s: f64, rto_floor_s: f64) -> Self {
        Conn {
            side: [AckSide::default(), AckSide::default()],
            snd: [Sender::default(), Sender::default()],
            rtt: Latest::default(),
            ooo_s,
            rto_floor_s,
        }
    }

    /// The same state, keeping of each direction only what a later packet can still ask for
    /// (`b`, found beforehand: [`Bounds`]): of its sends those at the starts of its
    /// retransmission candidates ([`candidate`]) until their last look-up, of its re-sends
    /// those a later D-SACK names ([`dsack_block`]) until the last one, and its out-of-order
    /// holes while a later packet can still fall in the window. Memory by re-sent start still
    /// to be asked for rather than by segment or retransmission; the same verdicts.
    pub fn bounded(mut self, b: Bounds) -> Self {
        let dsacked = b.dsacked.map(|u| u.map(Some)).unwrap_or_default();
        let each = b.resent.into_iter().zip(dsacked).zip(b.rising_from);
        for (s, ((only, dsacked), from)) in self.snd.iter_mut().zip(each) {
            s.sent.only = Some(only);
            s.dsacked = dsacked;
            s.rising_from = Some(from);
        }
        self
    }

    /// Per direction: sent-log entries, by-start re-sends, holes (what [`Conn::bounded`] bounds).
    #[cfg(test)]
    pub fn sizes(&self) -> [[usize; 3]; 2] {
        self.snd
            .each_ref()
            .map(|s| [s.sent.sizes().0, s.by_seq.len(), s.holes.len()])
    }

    /// One packet, in order: judged as a possible retransmission of its direction, then
    /// taken as an ACK (with SACK/D-SACK blocks) for the other one.
    pub fn on_packet(&mut self, p: &Pkt) -> Verdict {
        let d = p.dir;
        let mut v = Verdict::default();
        if let Some(kind) = self.judge(p) {
            let s = &mut self.snd[d];
            if kind == SPURIOUS {
                s.by_seq.remove(&p.seq); // (a D-SACK would change nothing)
            } else if s.dsacked.as_mut().is_none_or(|u| u.wanted(p.seq)) {
                s.by_seq.insert(p.seq, (p.row, p.seq + p.len, kind));
            }
            v.retrans = Some((kind, s.episode));
        }
        v.spurious_now = self.dsack(p);
        self.side[d].on_packet(p);
        self.rtt.on_packet(d, p.srtt);
        let s = &mut self.snd[d];
        // a packet that may fill a hole: a segment below nextseq, or a zero-window probe (which
        // does not advance nextseq, so it can sit at the lower edge of a hole opened after it)
        let fills = p.is_seg() && ((p.nxt != MISSING && p.seq < p.nxt) || p.bits & ZWP != 0);
        s.sent.record(p.seq, p.row, p.time, fills);
        // Wireshark's lost segment (tcp.analysis.lost_segment): the bytes from nextseq are a hole
        if p.bits & GAP != 0 {
            s.holes.insert(p.nxt, (p.seq, p.time));
        }
        s.prune_holes(p, self.ooo_s);
        v
    }

    /// The kind of a retransmission, or None for any other packet.
    fn judge(&mut self, p: &Pkt) -> Option<u8> {
        let r_ack = self.side[1 - p.dir].last.map_or(MISSING, |l| l.2);
        let spur = candidate(p.len, p.flags, p.bits, p.seq, p.nxt, r_ack)?;
        // the previous packet at this start (original or re-send)
        let seq_seen = self.snd[p.dir].sent.get(p.seq);
        self.snd[p.dir].sent.asked(p.seq);
        // out-of-order, not retransmitted: the first segment into a hole (bytes never seen
        // here), within one round trip of the hole's appearance (Wireshark's threshold)
        if !spur && p.nxt != MISSING && p.seq < p.nxt && seq_seen.is_none_or(|s| !s.filled) {
            let hole = self.snd[p.dir].holes.range(..=p.seq).next_back();
            if let Some((_, &(hi, h_time))) = hole {
                if p.seq < hi && p.time - h_time < self.ooo_s {
                    return None;
                }
            }
        }
        let to = self.timeout(p, seq_seen);
        let s = &mut self.snd[p.dir];
        let (timeout, past) = to;
        s.prev_nxt = Some(p.nxt);
        // a recovery episode starts when the ACK passed all that was outstanding at the
        // previous retransmission, or at a timeout; its later re-sends take its first one's kind
        if past || timeout {
            s.episode += 1;
            s.episode_kind = if timeout { RTO } else { FAST };
        }
        Some(if spur { SPURIOUS } else { s.episode_kind })
    }

    /// RFC 6298 §5 timeout rule (the module docstring of retrans.py): (a timeout, the other side's ACK
    /// passed everything outstanding at the previous retransmission).
    fn timeout(&mut self, p: &Pkt, seq_seen: Option<Sent>) -> (bool, bool) {
        let o = &self.side[1 - p.dir];
        let s = &self.snd[p.dir];
        // the least RTO the sender can have had: its floor, and srtt (not + 4·rttvar: the
        // sender's rttvar is its own)
        let rto = self
            .rtt
            .of(p.dir)
            .map_or(self.rto_floor_s, |s| self.rto_floor_s.max(s));
        let inf = f64::INFINITY;
        let adv_t = o.last.map(|_| o.since.1);
        let prev_t = seq_seen.map(|s| s.time);
        let since_ack = adv_t.map_or(inf, |a| p.time - a) + EPS_S;
        // Linux re-arms the timer from the head's last send (tcp_rearm_rto)
        let first_t = match (adv_t, prev_t) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let since_tx = first_t.map_or(inf, |f| p.time - f) + EPS_S;
        let quiet = o.last.map_or(inf, |l| p.time - l.1) + EPS_S;
        let waited = quiet >= 0.5 * rto;
        let silent = since_ack >= rto || (since_tx >= rto && waited);
        // RFC 6582 §3.2 "recover": the ACK passed what was outstanding at the previous re-send
        let r_hi = if p.r_hi_ack == MISSING {
            -1
        } else {
            p.r_hi_ack
        };
        let past = s.prev_nxt.is_none_or(|n| n == MISSING || r_hi >= n);
        // loss signals after the later of the ACK change and the previous send of the segment
        let lo = o
            .last
            .map_or(0, |_| i64::from(o.since.0))
            .max(seq_seen.map_or(0, |s| i64::from(s.row) + 1));
        let sack_new = o.last.is_some() && o.sack_above.is_some_and(|r| i64::from(r) >= lo);
        let dup3 = o.last.is_some()
            && o.third
                .is_some_and(|(r, t)| i64::from(r) >= lo && p.time - t < 0.5 * rto)
            && past;
        let dups = if o.last.is_some() { o.dups } else { 0 };
        let dup_clocked = dups >= 3 && quiet - EPS_S <= DUP_CLOCKED_S;
        let timeout0 = silent && (!(sack_new || dup3 || dup_clocked) || waited);
        // RFC 6298 §5.5-5.6: the timer restarts at a timeout, backed off
        let after_to = s.last_to.is_none_or(|t| (p.time - t) + EPS_S >= rto);
        if timeout0 {
            self.snd[p.dir].last_to = Some(p.time);
        }
        (timeout0 && after_to, past)
    }

    /// D-SACK (RFC 2883): the block [`dsack_block`] finds reports bytes that arrived twice:
    /// the latest retransmission starting at its left edge was not needed when the block
    /// covers it. Returns that retransmission (row, the kind it had) when it was not spurious yet.
    fn dsack(&mut self, p: &Pkt) -> Option<(u32, u8)> {
        let (l1, r1) = dsack_block(p.ack, p.sack)?;
        let s = &mut self.snd[1 - p.dir];
        let found = s.by_seq.get(&l1).copied();
        // with `bounded`: after the last D-SACK at this edge no packet asks for the re-send
        if s.dsacked.as_mut().is_some_and(|u| u.asked(l1)) {
            s.by_seq.remove(&l1);
            sent::shrink(&mut s.by_seq);
        }
        let (row, dend, kind) = found?;
        if dend > r1 {
            return None;
        }
        s.by_seq.remove(&l1); // spurious now: nothing more to change
        Some((row, kind))
    }
}

/// A packet's D-SACK block (RFC 2883 §4), from its ACK number ([`MISSING`]: none) and SACK
/// blocks: the first block when it lies below the ACK or inside the second block (left, right
/// edges). The one test [`Conn::on_packet`] makes, also run by a streaming driver's first pass
/// to learn which re-sends a D-SACK will name.
pub fn dsack_block(ack: i64, sack: &[(i64, i64)]) -> Option<(i64, i64)> {
    let &(l1, r1) = sack.first()?;
    if l1 == MISSING || r1 == MISSING {
        return None; // a block without edges says nothing
    }
    let ack = if ack == MISSING { -1 } else { ack };
    let inside = sack
        .get(1)
        .is_some_and(|&(l2, r2)| l2 != MISSING && r2 != MISSING && l2 <= l1 && r1 <= r2);
    (r1 <= ack || inside).then_some((l1, r1))
}

impl Columns<'_> {
    fn validate(&self) -> Result<usize, String> {
        let n = self.flow.len();
        let lens = [
            ("dir", self.dir.len()),
            ("time", self.time.len()),
            ("seq", self.seq.len()),
            ("len", self.len.len()),
            ("nxt", self.nxt.len()),
            ("ack", self.ack.len()),
            ("r_hi_ack", self.r_hi_ack.len()),
            ("flags", self.flags.len()),
            ("bits", self.bits.len()),
        ];
        for (name, l) in lens {
            if l != n {
                return Err(format!("column {name} has {l} values, flow has {n}"));
            }
        }
        let m = self.sack_row.len();
        if self.sack_left.len() != m || self.sack_right.len() != m {
            return Err("SACK block columns differ in length".into());
        }
        if self.sack_row.windows(2).any(|w| w[0] > w[1]) {
            return Err("SACK block rows are not ascending".into());
        }
        if self.sack_row.iter().any(|&r| r < 0 || r as usize >= n) {
            return Err("SACK block row out of range".into());
        }
        if n >= u32::MAX as usize {
            return Err(format!("{n} packets: at most 2^32 - 2 per call"));
        }
        if let Some(i) = self.dir.iter().position(|&d| d != 0 && d != 1) {
            return Err(format!("packet {i}: dir {} is not 0 or 1", self.dir[i]));
        }
        Ok(n)
    }
}

/// Every retransmission of a trace, in packet order (see the module docs).
///
/// `ooo` gives the out-of-order window of a flow (None: [`OOO_DEFAULT_S`]).
pub fn classify(
    c: &Columns,
    ooo: &dyn Fn(u32) -> Option<f64>,
    rto_floor_s: f64,
) -> Result<Vec<Retrans>, String> {
    let n = c.validate()?;
    // connections numbered as they appear (flow ids are dense: a table; else a map)
    let top = c.flow.iter().copied().max().unwrap_or(0) as usize;
    let mut table = vec![u32::MAX; if top < 4 * n + 1024 { top + 1 } else { 0 }];
    let mut map: HashMap<u32, u32> = HashMap::new();
    let mut conns: Vec<(Conn, Vec<Retrans>)> = Vec::new();
    // one pass in packet order (every column read once, front to back: the connections'
    // rows interleave, and a pass per connection would read each cache line once per connection)
    let mut est = Est::new(c.est_rows, c.est_srtt, n)?;
    let mut blocks: Vec<(i64, i64)> = Vec::new();
    let mut k = 0usize;
    for i in 0..n {
        blocks.clear();
        while k < c.sack_row.len() && c.sack_row[k] as usize == i {
            blocks.push((c.sack_left[k], c.sack_right[k]));
            k += 1;
        }
        let f = c.flow[i];
        let slot = match table.get_mut(f as usize) {
            Some(t) => t,
            None => map.entry(f).or_insert(u32::MAX),
        };
        if *slot == u32::MAX {
            *slot = conns.len() as u32;
            let c = Conn::new(ooo(f).unwrap_or(OOO_DEFAULT_S), rto_floor_s);
            conns.push((c, Vec::new()));
        }
        let (conn, out) = &mut conns[*slot as usize];
        let v = conn.on_packet(&Pkt {
            row: i as u32,
            dir: usize::from(c.dir[i] == 1),
            time: c.time[i],
            seq: c.seq[i],
            len: c.len[i],
            nxt: c.nxt[i],
            ack: c.ack[i],
            r_hi_ack: c.r_hi_ack[i],
            flags: c.flags[i],
            bits: c.bits[i],
            srtt: est.at(i as u32),
            sack: &blocks,
        });
        if let Some((kind, episode)) = v.retrans {
            out.push((i as u32, kind, episode));
        }
        if let Some((row, _)) = v.spurious_now {
            // (a connection's retransmissions are in row order)
            if let Ok(k) = out.binary_search_by_key(&row, |r| r.0) {
                out[k].1 = SPURIOUS;
            }
        }
    }
    let per = conns.into_iter().map(|c| c.1);
    let mut out: Vec<Retrans> = per.flatten().collect();
    out.sort_unstable_by_key(|r| r.0);
    Ok(out)
}

mod py;
pub use py::register;

#[cfg(test)]
mod tests;
