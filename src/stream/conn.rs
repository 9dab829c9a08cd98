//! One connection's per-packet state in the two passes, and what pass 1 hands to pass 2.
//!
//! Both passes feed every TCP packet of a connection to the same sequence state
//! (`seq::Side::on_packet`) and RTT samples (`rtt::Connection::on_packet`) ([`Tcp`]). Pass 1
//! ([`Scout`], indexed by side: the directions are not settled yet) keeps what the smoothed
//! RTT and the retransmission rules need of the whole trace: whether each direction has a
//! `seq` sample (`tracekit.analysis.rtt.smoothed` uses a direction's `seq` samples, its `ts`
//! ones only when it has none), the connection's least RTT sample and its handshake times
//! (the out-of-order window of `retrans.rs`: the handshake RTT, else the least sample), and
//! per direction what the stall rules read of it whole (`stalls::Whole`: its largest payload
//! and least RTT sample).
//! Pass 2 ([`Conn`], indexed by direction) runs one RFC 6298 estimator per direction fed
//! the chosen method's samples as they close, and `retrans::Conn::on_packet` per packet.

pub use super::facts::CwndFacts;
use super::facts::CwndWalk;
use super::fstats;
use crate::capture::Rows;
use crate::state::conn::Numbered;
use crate::state::dirstats::{self, DirStats};
use crate::state::flowstats::ranks::Counts;
use crate::state::flowstats::summary as fs;
use crate::state::flowstats::summary::Summary;
use crate::state::retrans::{self, Bounds, Uses, OOO_DEFAULT_S};
use crate::state::rtt::{self, Sample};
use crate::state::seq::{self, Peer, Step, MISSING, NEW_ACK, SYN};
use crate::state::srtt::Srtt;
use crate::state::stalls::{self, Whole};

// The flows accumulator's kind codes are the retransmission kinds' plus one.
const _: () = assert!(
    retrans::FAST + 1 == fs::FAST
        && retrans::RTO + 1 == fs::RTO
        && retrans::SPURIOUS + 1 == fs::SPURIOUS
);

/// One TCP packet's fields as the passes read them (relative numbers, the window as given).
#[derive(Clone, Copy, Debug)]
pub struct Pk {
    pub row: u32,
    pub time: f64,
    pub seq: i64,
    pub len: i64,
    pub flags: u8,
    /// Relative ACK ([`MISSING`]: no ACK flag).
    pub ack: i64,
    pub win: i64,
    /// [`MISSING`]: no timestamp option.
    pub ts_val: i64,
    pub ts_ecr: i64,
    /// The IP TTL (hop limit; 0: unknown).
    pub ttl: u8,
    /// Its MSS option (-1: none).
    pub mss: i32,
}

impl Pk {
    /// Packet `i` of a batch as the passes read it (`win`: as given, or shifted).
    pub fn of(rows: &Rows, i: usize, flags: u8, nb: &Numbered, row: u64, win: i64) -> Pk {
        let ts = rows.ts_ok[i];
        Pk {
            row: row as u32,
            time: rows.time[i],
            seq: nb.seq,
            len: i64::from(rows.payload[i]),
            flags,
            ack: nb.ack.unwrap_or(MISSING),
            win,
            ts_val: if ts {
                i64::from(rows.ts_val[i])
            } else {
                MISSING
            },
            ts_ecr: if ts { i64::from(rows.ts_ecr[i]) } else { 0 },
            ttl: rows.ttl[i],
            mss: if rows.mss_ok[i] {
                i32::from(rows.mss[i])
            } else {
                -1
            },
        }
    }
}

/// The sequence state and RTT samples of one connection, by index 0/1.
#[derive(Default)]
pub struct Tcp {
    pub seq: [seq::Side; 2],
    pub rtt: rtt::Connection,
}

/// What [`Tcp::on_packet`] found: the other index as the packet found it, the packet's
/// sequence state, and the `seq` and `ts` samples it closed (they time index `1 - d`).
pub struct Found {
    pub peer: Peer,
    pub step: Step,
    pub samples: (Option<Sample>, Option<Sample>),
}

impl Tcp {
    /// Packet `p` sent by index `d` (the one step of `tcp_state`'s walk, then `tcp_rtt`'s).
    pub fn on_packet(&mut self, d: usize, p: &Pk) -> Found {
        let peer = self.seq[1 - d].peer();
        let s = seq::Seg {
            seq: p.seq,
            len: p.len,
            flags: p.flags,
            ack: p.ack,
            win: p.win,
        };
        let step = self.seq[d].on_packet(&peer, i64::from(p.row), &s);
        let samples = self.rtt.on_packet(&rtt::Packet {
            row: p.row,
            dir: d,
            time: p.time,
            seq: p.seq,
            len: p.len,
            flags: p.flags,
            ack: p.ack,
            ts_val: p.ts_val,
            ts_ecr: p.ts_ecr,
            bits: step.bits,
            nxt: step.nxt,
        });
        Found {
            peer,
            step,
            samples,
        }
    }
}

/// Pass 1's state of one connection, by side.
pub struct Scout {
    tcp: Tcp,
    /// The handshake times (`dirstats`: only its SYN and ACK times are read here).
    hs: [DirStats; 2],
    /// A `seq` sample timed this side's data; one above 0 s did.
    has_seq: [bool; 2],
    pos_seq: [bool; 2],
    /// The RTT samples timing this side's data above 0 s, counted by bucket: `seq`, `ts`.
    counts: [[Counts; 2]; 2],
    /// The least RTT sample above 0 s (either method, either direction; +inf: none).
    min_rtt: f64,
    /// Each side's latest ACK number ([`MISSING`]: none yet, or its latest packet had no ACK).
    last_ack: [i64; 2],
    /// The starts of each side's retransmission candidates (`retrans::candidate`), once per
    /// candidate: the only sends pass 2's retransmission log is asked about, and how often.
    asks: [Vec<i64>; 2],
    /// The left edges of the D-SACK blocks (`retrans::dsack_block`) naming each side's
    /// re-sends (sent by the other side), once per block; `dsack_known`: every SACK block's
    /// relative edges were known in pass 1 (the other side's base was set).
    dsacks: [Vec<i64>; 2],
    dsack_known: bool,
    /// Each side's latest capture time, and its latest packet whose time fell below the one
    /// before it (0: none): from there on its times never fall.
    last_t: [Option<f64>; 2],
    rising_from: [u32; 2],
    /// What the stall rules read of each side's whole direction.
    stall: [Whole; 2],
    /// What the cwnd estimate reads of each side's whole direction ([`CwndWalk`]).
    cwnd: CwndWalk,
    /// The flow statistics' data extents.
    pub fs: fstats::Scout,
    /// Whether its times fall (the cwnd stage's rows are fed live where none does).
    pub order: super::held::Order,
    /// The window its TSval tables were kept within (`Scout::keeping`; pass 2 keeps the same).
    ts_window: Option<i64>,
}

impl Default for Scout {
    fn default() -> Self {
        Scout {
            tcp: Tcp::default(),
            hs: [DirStats::new(0), DirStats::new(0)],
            has_seq: [false; 2],
            pos_seq: [false; 2],
            counts: Default::default(),
            min_rtt: f64::INFINITY,
            last_ack: [MISSING; 2],
            asks: Default::default(),
            dsacks: Default::default(),
            dsack_known: true,
            last_t: [None; 2],
            rising_from: [0; 2],
            stall: [Whole::NONE; 2],
            cwnd: CwndWalk::default(),
            fs: fstats::Scout::default(),
            order: Default::default(),
            ts_window: None,
        }
    }
}

impl Scout {
    /// Pass 1's state with its TSval tables kept within `lags` (by side) below the highest
    /// echo (`rtt::Connection::keeping`) and, given a `window`, within it below the highest
    /// TSval (`Connection::within`): the same samples as long as no echo falls further
    /// ([`Scout::echo_lags`], measured whatever is kept) and none was missed ([`Scout::missed`]).
    pub fn keeping(lags: [i64; 2], window: Option<i64>) -> Scout {
        let mut s = Scout::default();
        s.tcp.rtt = rtt::Connection::keeping(lags);
        if let Some(w) = window {
            s.tcp.rtt = std::mem::take(&mut s.tcp.rtt).within(w);
        }
        s.ts_window = window;
        s
    }

    /// By side, the most an echo fell below the highest echo before it.
    pub fn echo_lags(&self) -> [i64; 2] {
        self.tcp.rtt.echo_lags()
    }

    /// An echo fell below what the window dropped.
    pub fn missed(&self) -> bool {
        self.tcp.rtt.missed()
    }

    /// Packet `p` of side `s` (the window unshifted: the shifts are settled after this pass;
    /// a shift changes no zero window, and only the duplicate-ACK bit, which no sample reads,
    /// compares windows otherwise).
    pub fn on_packet(&mut self, s: usize, p: &Pk) {
        let seg = dirstats::Seg {
            time: p.time,
            payload: p.len,
            size: 0,
            seq: p.seq,
            syn: p.flags & SYN != 0,
            has_ack: p.flags & seq::ACK != 0,
            in_state: true,
            mss: -1,
            wscale: -1,
        };
        // `Directions::on_packet`'s rule: the initiator's ACKs after the peer's SYN-ACK (the
        // initiator is not known yet: both sides' times are kept, the initiator's read)
        let peer_synack = seg.has_ack && !seg.syn && self.hs[1 - s].synack;
        self.hs[s].on_packet(&seg, peer_synack);
        self.fs.on_packet(s, p);
        self.order.on_time(p.time);
        let f = self.tcp.on_packet(s, p);
        // `retrans::Conn::on_packet`'s candidate test, against the other side's latest ACK
        let (nxt, bits) = (f.step.nxt, f.step.bits);
        if retrans::candidate(p.len, p.flags, bits, p.seq, nxt, self.last_ack[1 - s]).is_some() {
            self.asks[s].push(p.seq);
        }
        self.last_ack[s] = p.ack;
        if self.last_t[s].is_some_and(|t| retrans::falls(t, p.time)) {
            self.rising_from[s] = p.row;
        }
        self.last_t[s] = Some(p.time);
        let (sq, ts) = f.samples;
        self.has_seq[1 - s] |= sq.is_some();
        self.pos_seq[1 - s] |= sq.is_some_and(|x| x.rtt > 0.0);
        if let Some(x) = sq {
            self.fs.on_seq_sample(1 - s, x.rtt);
        }
        for (m, x) in [sq, ts].into_iter().enumerate() {
            if let Some(x) = x {
                self.counts[1 - s][m].add(x.rtt);
            }
        }
        self.stall[s].on_packet(p.len);
        self.cwnd.on_packet(s, p);
        for x in [sq, ts].into_iter().flatten() {
            self.stall[1 - s].on_sample(x.rtt);
            if x.rtt > 0.0 {
                self.min_rtt = self.min_rtt.min(x.rtt);
            }
        }
    }

    /// Packet `p` of side `s` carried SACK blocks, made relative as pass 2 makes them (None:
    /// the other side's base was not known yet).
    pub fn on_sack(&mut self, s: usize, p: &Pk, sack: Option<&[(i64, i64)]>) {
        match sack {
            // `retrans::Conn::on_packet`'s D-SACK test: it names the other side's re-sends
            Some(b) => self.dsacks[1 - s].extend(retrans::dsack_block(p.ack, b).map(|d| d.0)),
            None => self.dsack_known = false,
        }
    }

    /// What pass 2 needs, by direction; `init` the initiator's side.
    pub fn settle(&mut self, init: usize) -> Prior {
        // `retrans.min_rtt`: the handshake RTT when above 0, else the least sample
        let hs = self.hs[init].handshake_rtt();
        let ooo_s = if hs > 0.0 {
            hs
        } else if self.min_rtt.is_finite() {
            self.min_rtt
        } else {
            OOO_DEFAULT_S
        };
        let by_dir = [init, 1 - init];
        let lags = self.tcp.rtt.echo_lags();
        let uses = |v: &mut [Vec<i64>; 2]| by_dir.map(|s| Uses::new(std::mem::take(&mut v[s])));
        let dsacked = uses(&mut self.dsacks);
        Prior {
            seq_rtt: by_dir.map(|s| self.has_seq[s]),
            ooo_s,
            resent: Some(Bounds {
                resent: uses(&mut self.asks),
                dsacked: self.dsack_known.then_some(dsacked),
                rising_from: by_dir.map(|s| self.rising_from[s]),
            }),
            echo_lag: Some((by_dir.map(|s| lags[s]), self.ts_window)),
            // `Summary::rtt`: the `seq` samples above 0 s when there are any, else the `ts` ones
            sum: Some(by_dir.map(|s| {
                let seq = self.pos_seq[s];
                Summary::picking(seq, &self.counts[s][usize::from(!seq)])
            })),
            stall: [self.stall[init], self.stall[1 - init]],
            cwnd: by_dir.map(|s| self.cwnd.facts(s)),
            fs: self.fs.settle(init),
        }
    }
}

/// What pass 1 settles for a connection, by direction.
#[derive(Clone, Debug)]
pub struct Prior {
    /// The direction's smoothed RTT follows its `seq` samples (else its `ts` ones).
    pub seq_rtt: [bool; 2],
    /// The out-of-order window (seconds).
    pub ooo_s: f64,
    /// What the direction's retransmission state will be asked for (`retrans::Bounds`: the
    /// starts of its candidates and of the D-SACKs naming its re-sends, and where its times
    /// stop falling; None: unknown, keep every send, re-send and hole).
    pub resent: Option<Bounds>,
    /// How far the echoes of the direction's TSvals fell back (`rtt::Connection::echo_lags`),
    /// and the window below the highest TSval no echo fell below (`Connection::within`; None:
    /// not known); None: unknown, keep every TSval.
    pub echo_lag: Option<([i64; 2], Option<i64>)>,
    /// The direction's accumulators, made knowing its RTT samples (`Summary::picking`; None:
    /// every sample is kept).
    pub sum: Option<[Summary; 2]>,
    /// What the stall rules read of each whole direction.
    pub stall: [Whole; 2],
    /// What the cwnd estimate reads of each whole direction.
    pub cwnd: [CwndFacts; 2],
    /// The flow statistics' extents and summing positions.
    pub fs: fstats::Prior,
}

/// Pass 2's state of one connection, by direction.
pub struct Conn {
    pub tcp: Tcp,
    /// RFC 6298 §2: the smoothed RTT of each direction's data.
    srtt: [Srtt; 2],
    seq_rtt: [bool; 2],
    retrans: retrans::Conn,
    flight: super::flight::Flight,
    stalls: super::stalls::Stalls,
    /// The RTT, retransmission, flight and stall accumulators.
    pub sum: [Summary; 2],
    /// The flow statistics, duplicate ACKs and vantage point.
    pub fs: fstats::Stage,
    /// What the cwnd estimate reads of the connection.
    pub cwnd: super::cwnd::ConnCwnd,
    /// What the account in words reads of it.
    pub account: super::account::Account,
}

impl Conn {
    /// `prior`'s bounds are taken (pass 2 makes one `Conn` per connection).
    pub fn new(prior: &mut Prior, rto_floor_s: f64) -> Conn {
        let mut retrans = retrans::Conn::new(prior.ooo_s, rto_floor_s);
        if let Some(b) = prior.resent.take() {
            retrans = retrans.bounded(b);
        }
        let rtt = prior
            .echo_lag
            .map_or_else(rtt::Connection::default, |(l, w)| {
                let c = rtt::Connection::keeping(l);
                match w {
                    Some(w) => c.within(w),
                    None => c,
                }
            });
        Conn {
            tcp: Tcp {
                seq: Default::default(),
                rtt,
            },
            srtt: [Srtt::default(); 2],
            seq_rtt: prior.seq_rtt,
            retrans,
            flight: super::flight::Flight::default(),
            stalls: super::stalls::Stalls::new(prior.stall),
            sum: prior.sum.take().unwrap_or_default(),
            fs: fstats::Stage::new(&prior.fs),
            cwnd: Default::default(),
            account: Default::default(),
        }
    }

    /// Packet `p` of direction `d` with its SACK blocks (relative edges).
    pub fn on_packet(&mut self, d: usize, p: &Pk, sack: &[(i64, i64)]) {
        let f = self.tcp.on_packet(d, p);
        // a sample times the other direction's data (it sits on this direction's ACK)
        let (sq, ts) = f.samples;
        let o = 1 - d;
        if let Some(x) = sq {
            self.sum[o].on_rtt(x.rtt, true);
        }
        if let Some(x) = ts {
            self.sum[o].on_rtt(x.rtt, false);
        }
        // `srtt::smooth`: the estimate after the chosen method's sample taken on this row
        // (`Est::at`: none, or NaN, is no estimate)
        let used = if self.seq_rtt[o] { sq } else { ts };
        let srtt = used.and_then(|x| {
            self.srtt[o].on_sample(x.rtt);
            self.srtt[o].get().map(|e| e.0).filter(|v| !v.is_nan())
        });
        self.fs.on_packet(d, p, &f, srtt);
        let v = self.retrans.on_packet(&retrans::Pkt {
            row: p.row,
            dir: d,
            time: p.time,
            seq: p.seq,
            len: p.len,
            nxt: f.step.nxt,
            ack: p.ack,
            r_hi_ack: f.peer.hi_ack,
            flags: p.flags,
            bits: f.step.bits,
            srtt,
            sack,
        });
        self.account.on_packet(d, p, &v);
        if let Some((kind, _)) = v.retrans {
            // only the part below the highest end sent before counts as re-sent (`flows._summary`)
            let dend = p.seq + p.len;
            let upto = if f.step.nxt == MISSING {
                dend
            } else {
                dend.min(f.step.nxt)
            };
            self.sum[d].on_retrans((upto - p.seq).max(0), kind + 1);
        }
        if let Some((_, was)) = v.spurious_now {
            // RFC 2883: a later D-SACK turned an earlier retransmission spurious
            self.sum[o].now_spurious(was + 1);
        }
        let fl = self
            .flight
            .on_packet(d, p, f.step.bits, sack, &mut self.sum[d]);
        self.cwnd
            .on_packet(d, p, &v, fl, self.flight.newly_sacked(d));
        // the state columns `stalls::driver` reads ([`MISSING`]: none); `rto` as classified
        // now (a later D-SACK may turn it spurious: only the cause, not the stall, reads it)
        let opt = |x: i64| (x != MISSING).then_some(x);
        let sp = stalls::Packet {
            time: p.time,
            len: p.len,
            hi_dend: opt(f.step.hi_dend),
            ack: opt(p.ack),
            win: opt(p.win),
            new_ack: f.step.bits & NEW_ACK != 0,
            syn: p.flags & SYN != 0,
            rto: v.retrans.is_some_and(|(k, _)| k == retrans::RTO),
            srtt,
        };
        self.stalls.on_packet(p.row, d, &sp);
    }

    /// Direction `d`'s RFC 6298 estimate after its last sample: (srtt, rttvar) (None: no sample).
    pub fn srtt_end(&self, d: usize) -> Option<(f64, f64)> {
        self.srtt.get(d).and_then(Srtt::get)
    }

    /// The stalls still open at the end, then every stall to its direction's accumulator;
    /// each direction's stalls by start.
    pub fn finish(&mut self) -> [Vec<stalls::Stall>; 2] {
        self.stalls.finish(&mut self.sum)
    }
}

/// The relative ACK a packet's SACK edges are placed against (`conn::driver`: 0 without one).
pub fn sack_ack(nb: &Numbered) -> i64 {
    nb.ack.unwrap_or(0)
}
