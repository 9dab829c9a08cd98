//! Connections and relative sequence numbers: one state machine fed packets in capture order.
//!
//! Every reader (captures, ns-3 ASCII, NetSim, tshark) turns its packets into the same
//! columns; [`Table`] numbers their connections and makes their sequence numbers relative:
//!
//! * `flow`: one id per connection (both directions), numbered 0, 1, ... in order of first
//!   appearance, as Wireshark's `tcp.stream` / `udp.stream` (packet-tcp.c gives a
//!   conversation `tcp_stream_count++` when it is created). A port pair is a connection until
//!   a *pure SYN* whose sequence number differs from the one its sender already used in the
//!   current connection opens a new one (the pair was reused, e.g. after a FIN or RST;
//!   packet-tcp.c: a SYN without ACK with `th_seq != base_seq` creates a new conversation); a
//!   retransmitted SYN (same sequence number) does not.
//! * `dir`: 0 for packets from the initiator (the sender of the connection's first pure SYN,
//!   else of its first packet), 1 for the other way.
//! * `seq`/`ack`/SACK edges: relative to the direction's initial sequence number, unwrapped
//!   over 2^32 within the direction (see [`Half`]).
//! * `win`: the advertised window shifted by the sender's window scale (RFC 7323 §2.2).
//!
//! The per-packet step ([`Table::on_packet`]) settles `flow`, `seq` and `ack` as the packet
//! arrives. Two things are only known once the trace has ended, and are applied by
//! [`Table::settle`]: the direction (a connection's first pure SYN may be captured after
//! packets of the other side) and the window scale (it needs both SYNs, and a SYN-less
//! direction is scaled unless the other side's SYN was captured without the option).

mod driver;
mod py;

pub use driver::{number, Columns, Ints};
pub use py::register;

use std::collections::HashMap;

use super::seq::{ACK, SYN};

const TWO32: i64 = 1 << 32;
const HALF: i64 = 1 << 31;

/// One packet of a connection (a TCP or UDP packet with addresses and ports).
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    /// The sender's and receiver's endpoints: address id · 65536 + port.
    pub src: i64,
    pub dst: i64,
    /// The protocol (a UDP pair is not the TCP pair of the same endpoints).
    pub tcp: bool,
    pub udp: bool,
    /// TCP fields (ignored unless `tcp`): flags, raw 32-bit numbers, the window scale option.
    pub flags: u8,
    pub seq: u32,
    pub ack: u32,
    pub wscale: Option<u8>,
}

/// What [`Table::on_packet`] gives a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Numbered {
    pub flow: u32,
    /// Which endpoint of the port pair sent it (true: the lower one); the direction is this
    /// side compared with the initiator's, see [`Settled::dir`].
    pub side: bool,
    /// Relative sequence number (0 off TCP).
    pub seq: i64,
    /// Relative ACK, when the packet has the ACK flag.
    pub ack: Option<i64>,
}

/// Undoes 32-bit wraps of one direction's numbers, in packet order.
///
/// Sequence numbers are modulo 2^32 (RFC 9293 §3.4): relative to the base they are taken
/// into [-2^31, 2^31) (serial-number arithmetic, RFC 1982 §3.2), so a number just below the
/// base (an ACK of data sent before the captured start, a SACK edge) is negative rather than
/// near 2^32. A step of more than 2^31 from the direction's previous number is a wrap: down
/// means the numbers went past 2^32 (one more lap), up means a late number of the lap before.
#[derive(Clone, Copy, Debug, Default)]
struct Unwrap {
    prev: Option<i64>,
    laps: i64,
}

impl Unwrap {
    fn step(&mut self, raw: u32, base: u32) -> i64 {
        let rel = i64::from(raw.wrapping_sub(base).wrapping_add(1 << 31)) - HALF;
        if let Some(p) = self.prev {
            let d = rel - p;
            if d < -HALF {
                self.laps += 1;
            } else if d > HALF {
                self.laps -= 1;
            }
        }
        self.prev = Some(rel);
        rel + self.laps * TWO32
    }
}

/// The state of one direction of a connection.
#[derive(Clone, Copy, Debug, Default)]
struct Half {
    /// Sequence number of the direction's first segment in this connection, minus 1 unless
    /// it was a SYN: what a pure SYN is compared with to tell a reused port pair.
    first: Option<u32>,
    /// The initial sequence number the relative numbers count from (Wireshark's
    /// `base_seq`): the SYN's sequence number when the SYN was captured, else the first
    /// segment's minus 1, so the first data byte is 1 either way (RFC 9293 §3.4: the SYN
    /// occupies the ISN); or, when the other side's ACK comes before any segment of this
    /// direction, that ACK minus 1 (packet-tcp.c sets the reverse `base_seq` from `th_ack`).
    base: Option<u32>,
    seq: Unwrap,
    ack: Unwrap,
    /// The window scale option of the direction's first SYN that carries one, clamped to
    /// 14 (RFC 7323 §2.3).
    wscale: Option<u8>,
    /// Whether a SYN of this direction was captured.
    syn: bool,
}

/// One connection: its two directions, indexed by the sender's side.
#[derive(Clone, Copy, Debug, Default)]
struct Conn {
    half: [Half; 2],
    /// Side of the connection's first packet and of its first pure SYN.
    first_side: bool,
    syn_side: Option<bool>,
}

/// Port pair -> its current connection.
///
/// The keys come from the capture (ports, and ids of its addresses), which is hostile input:
/// the map keeps the standard library's keyed hasher (SipHash with a per-process random key),
/// so a crafted capture cannot choose keys that all land in one slot.
type Pairs = HashMap<(i64, i64), u32>;

/// Every connection of a trace, fed its packets in capture order.
#[derive(Default)]
pub struct Table {
    pairs: Pairs,
    conns: Vec<Conn>,
    /// The last packet's pair and connection (packets come in runs of one connection).
    last: Option<((i64, i64), u32)>,
}

/// What only the whole trace tells: each connection's initiator and window shifts.
pub struct Settled {
    /// Per connection, the initiator's side.
    init: Vec<bool>,
    /// Per connection and side, the window shift (RFC 7323 §2.2).
    shift: Vec<[u8; 2]>,
    /// Per connection and side, the relative numbers' base (None: neither a segment of the
    /// direction nor an ACK of the other was captured).
    base: Vec<[Option<u32>; 2]>,
}

impl Settled {
    /// Direction of a packet of connection `flow` sent by `side`: 0 from the initiator.
    pub fn dir(&self, flow: u32, side: bool) -> i8 {
        i8::from(side != self.init[flow as usize])
    }

    /// The window shift of `side` in connection `flow`.
    pub fn shift(&self, flow: u32, side: bool) -> u8 {
        self.shift[flow as usize][usize::from(side)]
    }

    /// The base of direction `dir` of connection `flow`.
    pub fn base(&self, flow: u32, dir: i8) -> Option<u32> {
        let side = (dir == 1) != self.init[flow as usize];
        self.base[flow as usize][usize::from(side)]
    }
}

impl Table {
    /// Number of connections so far.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// The base of `side` in connection `flow` so far (set once, never changed after).
    pub fn base(&self, flow: u32, side: bool) -> Option<u32> {
        let c = self.conns.get(flow as usize)?;
        c.half[usize::from(side)].base
    }

    /// Whether no packet has been fed yet.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// One packet: its connection, side and relative numbers.
    pub fn on_packet(&mut self, p: &Packet) -> Numbered {
        // The pair's key: its lower endpoint, then the higher one (the protocol tells TCP
        // and UDP pairs apart); the sender's side is whether it is the lower endpoint.
        let side = p.src <= p.dst;
        let (lo, hi) = if side { (p.src, p.dst) } else { (p.dst, p.src) };
        let key = (lo.wrapping_mul(2).wrapping_add(i64::from(p.udp)), hi);
        let tcp = p.tcp;
        let pure_syn = tcp && p.flags & (SYN | ACK) == SYN;
        let is_syn = tcp && p.flags & SYN != 0;
        let next = self.conns.len() as u32;
        let known = match self.last {
            Some((k, f)) if k == key => Some(f),
            _ => self.pairs.get(&key).copied(),
        };
        let flow = match known {
            // A reused port pair (packet-tcp.c): a pure SYN whose sequence number is not the
            // one its sender started this connection with opens the next connection.
            Some(f) if pure_syn => match self.conns[f as usize].half[usize::from(side)].first {
                Some(first) if first != p.seq => next,
                _ => f,
            },
            Some(f) => f,
            None => next,
        };
        self.last = Some((key, flow));
        if flow == next {
            self.pairs.insert(key, flow);
            self.conns.push(Conn {
                first_side: side,
                ..Conn::default()
            });
        }
        let c = &mut self.conns[flow as usize];
        if pure_syn && c.syn_side.is_none() {
            c.syn_side = Some(side);
        }
        let me = usize::from(side);
        // the SYN occupies its own sequence number (RFC 9293 §3.4): base = ISN
        let isn = p.seq.wrapping_sub(u32::from(!is_syn));
        let h = &mut c.half[me];
        h.first.get_or_insert(isn);
        if !tcp {
            return Numbered {
                flow,
                side,
                seq: 0,
                ack: None,
            };
        }
        if is_syn {
            h.syn = true;
            if h.wscale.is_none() {
                h.wscale = p.wscale.map(|w| w.min(14));
            }
        }
        let base = *h.base.get_or_insert(isn);
        let seq = h.seq.step(p.seq, base);
        let ack = (p.flags & ACK != 0).then(|| {
            // an ACK counts in the other direction's numbers; the first one sets that
            // direction's base when none of its segments came before (ack - 1)
            let other = *c.half[1 - me].base.get_or_insert(p.ack.wrapping_sub(1));
            c.half[me].ack.step(p.ack, other)
        });
        Numbered {
            flow,
            side,
            seq,
            ack,
        }
    }

    /// What the whole trace settles (see the module doc).
    pub fn settle(&self) -> Settled {
        let init = self
            .conns
            .iter()
            .map(|c| c.syn_side.unwrap_or(c.first_side))
            .collect();
        // A direction is scaled by its own shift unless the other side's SYN was captured
        // without the option (RFC 7323 §2.2: scaling needs both to send it); with the other
        // SYN unseen, agreement is assumed (as Wireshark does).
        let shift_of = |h: &Half, o: &Half| match h.wscale {
            Some(w) if !(o.syn && o.wscale.is_none()) => w,
            _ => 0,
        };
        let shift = self
            .conns
            .iter()
            .map(|c| {
                let [a, b] = &c.half;
                [shift_of(a, b), shift_of(b, a)]
            })
            .collect();
        let base = self
            .conns
            .iter()
            .map(|c| [c.half[0].base, c.half[1].base])
            .collect();
        Settled { init, shift, base }
    }
}

/// SACK edge `raw` (RFC 2018 §3) relative to `base`, in the 2^32 lap nearest the packet's
/// relative ACK `ack` (its blocks lie above the ACK, within 2^31 of it).
pub fn sack_edge(raw: i64, base: u32, ack: i64) -> i64 {
    let rel = raw.wrapping_sub(i64::from(base)).rem_euclid(TWO32);
    rel + (ack - rel + HALF).div_euclid(TWO32) * TWO32
}

#[cfg(test)]
mod tests;
