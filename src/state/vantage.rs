//! Where a capture was taken: `sender`, `receiver` or `middle` of each TCP connection.
//!
//! One accumulator per connection ([`FlowVantage`]), fed its TCP packets in capture order
//! ([`FlowVantage::on_packet`]); it keeps the payload bytes per direction and three
//! handshake times, never the packets, so a streaming driver can feed it record by record.
//!
//! The handshake is timed from the flags alone, without sequence or ACK numbers (unlike
//! `dirstats`, which times Wireshark's `tcp.analysis.initial_rtt` from the packets the
//! sequence analysis keeps): the initiator's (`dir` 0) first SYN without ACK, the responder's
//! first SYN-ACK, and the initiator's first ACK without SYN timed at or after that SYN-ACK
//! (RFC 9293 §3.5: SYN, SYN-ACK, ACK). A simulator's trace may lack the ACK numbers, and the
//! flags still tell the three packets apart.
//!
//! At the initiator the SYN-ACK comes one round trip after the SYN and the ACK right after
//! it; at the responder the other way round; in the middle both delays take part of the
//! round trip. Without a handshake, the median data→ACK delay of the direction that carried
//! more payload (the `seq` RTT samples) tells: ACKs sent right here (under 2 ms) put the
//! capture at the `receiver`, else at the `sender`.
//!
//! On a path of a few tens of microseconds both handshake delays are host delays (under
//! [`QUICK_S`]), and the shorter one can be either side's (`samples/linux/kernel/bbr`: the
//! SYN-ACK 20 µs after the SYN, the ACK 38 µs after it, captured at the initiator). There the
//! IP TTL tells, where it can ([`FlowVantage::ttl_near`]): a host sends with an initial TTL
//! (64 on Linux and macOS, 128 on Windows, 255 on network stacks; RFC 1700's 64 default) and
//! every router lowers it by one (RFC 791 §3.2, RFC 8200 §3 for the hop limit), so a side whose
//! packets carry an initial value while the other side's carry lowered ones is next to the
//! capture. A bridged or same-link path (both sides initial) tells nothing; there a median
//! data→ACK delay of [`RECEIVER_MEDIAN_S`] or more says the ACKs came from afar and puts the
//! capture at the `sender` ([`FlowVantage::point`]), and otherwise the handshake rule stands.

use super::flowstats::summary::quantile;
use super::seq::{ACK, SYN};
use super::slots::Slots;
use crate::state::slice;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use std::collections::HashMap;

/// The side that answered within this share of SYN→ACK is next to the vantage point.
const QUICK_SHARE: f64 = 0.1;
/// ... or within this many seconds (loopback and LAN round trips are that short).
const QUICK_S: f64 = 0.0005;
/// A median data→ACK delay under this (seconds) means the ACKs were sent right here.
const RECEIVER_MEDIAN_S: f64 = 0.002;
/// The TTLs (IPv6 hop limits) hosts send with: Linux, macOS and BSD 64, Windows 128, network
/// stacks and Solaris 255, old stacks 32.
const INITIAL_TTLS: [u8; 4] = [32, 64, 128, 255];

/// Where the packets were observed, relative to the direction that carried more payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    Sender = 0,
    Receiver = 1,
    Middle = 2,
}

/// The earliest of two times as polars' `min` aggregate: NaN only when both are (NaN is also
/// "none yet").
fn earliest(acc: f64, t: f64) -> f64 {
    acc.min(t)
}

/// One connection's accumulator ([`f64::NAN`]: no such packet yet).
#[derive(Clone, Debug)]
pub struct FlowVantage {
    /// Payload bytes per direction (a direction with packets but no payload: 0).
    bytes: [i64; 2],
    /// The direction sent a packet.
    seen: [bool; 2],
    /// The initiator's earliest SYN without ACK.
    syn: f64,
    /// The responder's earliest SYN-ACK.
    synack: f64,
    /// The initiator's earliest ACK without SYN at or after the responder's earliest SYN-ACK
    /// seen before it.
    ack3: f64,
    /// Per direction: the lowest and highest IP TTL seen (`(255, 0)`: none known).
    ttl: [(u8, u8); 2],
}

impl Default for FlowVantage {
    fn default() -> Self {
        FlowVantage {
            bytes: [0; 2],
            seen: [false; 2],
            syn: f64::NAN,
            synack: f64::NAN,
            ack3: f64::NAN,
            ttl: [(u8::MAX, 0); 2],
        }
    }
}

impl FlowVantage {
    /// Takes one TCP packet of direction `d` (0: from the initiator, 1: back) with its
    /// `payload` bytes and flags byte.
    pub fn on_packet(&mut self, d: usize, time: f64, payload: i64, flags: u8) {
        self.seen[d] = true;
        self.bytes[d] += payload;
        match (d, flags & (SYN | ACK)) {
            (0, SYN) => self.syn = earliest(self.syn, time),
            (1, f) if f == SYN | ACK => self.synack = earliest(self.synack, time),
            // the third packet: the initiator's first ACK at or after the SYN-ACK (a packet fed
            // before any SYN-ACK is not one; a comparison with NaN is false)
            (0, ACK) if time >= self.synack => self.ack3 = earliest(self.ack3, time),
            _ => {}
        }
    }

    /// The IP TTL (IPv6 hop limit) of a packet of direction `d` (a capture's; 0: unknown).
    #[inline]
    pub fn on_ttl(&mut self, d: usize, ttl: u8) {
        // (0: unknown; branch-free, as it runs on every packet)
        let t = &mut self.ttl[d & 1];
        let known = ttl != 0;
        t.0 = t.0.min(if known { ttl } else { u8::MAX });
        t.1 = t.1.max(ttl);
    }

    /// The side next to the capture by the TTLs (see the module docs): `d` when every packet of
    /// `d` carried one initial TTL and none of the other side's did; None when that holds for
    /// neither or both, or a TTL is unknown.
    pub fn ttl_near(&self) -> Option<usize> {
        // (a highest TTL of 0: none known, and then the lowest is 255)
        let initial = |(lo, hi): (u8, u8)| hi != 0 && lo == hi && INITIAL_TTLS.contains(&hi);
        let lowered = |(lo, hi): (u8, u8)| {
            hi != 0 && !INITIAL_TTLS.contains(&lo) && !INITIAL_TTLS.contains(&hi)
        };
        let near = |d: usize| initial(self.ttl[d]) && lowered(self.ttl[1 - d]);
        match (near(0), near(1)) {
            (true, false) => Some(0),
            (false, true) => Some(1),
            _ => None,
        }
    }

    /// The direction that carried more payload and its bytes (the lower direction on a tie);
    /// None before any packet.
    pub fn data_dir(&self) -> Option<(usize, i64)> {
        match self.seen {
            [false, false] => None,
            [true, false] => Some((0, self.bytes[0])),
            [false, true] => Some((1, self.bytes[1])),
            [true, true] if self.bytes[1] > self.bytes[0] => Some((1, self.bytes[1])),
            [true, true] => Some((0, self.bytes[0])),
        }
    }

    /// The handshake's two delays, SYN → SYN-ACK (the responder's side of the path) and SYN-ACK →
    /// ACK (the initiator's side); None without the three handshake packets.
    fn delays(&self) -> Option<(f64, f64)> {
        if self.syn.is_nan() || self.synack.is_nan() || self.ack3.is_nan() {
            return None;
        }
        Some((self.synack - self.syn, self.ack3 - self.synack))
    }

    /// Which end the handshake puts next to the vantage point: 1.0 the initiator, 0.0 the
    /// responder, 0.5 neither (the middle); None without the three handshake packets.
    pub fn near(&self) -> Option<f64> {
        let (h1, h2) = self.delays()?;
        if h1 < QUICK_S && h2 < QUICK_S {
            // both host delays: the TTLs tell where they can (module docs)
            if let Some(d) = self.ttl_near() {
                return Some(if d == 0 { 1.0 } else { 0.0 });
            }
        }
        // the side that answered at once is next to the vantage point: its delay is under a
        // tenth of the round trip, or under 0.5 ms
        let quick = |h: f64| h < QUICK_SHARE * (h1 + h2) || h < QUICK_S;
        Some(if quick(h2) && !(quick(h1) && h1 < h2) {
            1.0
        } else if quick(h1) {
            0.0
        } else {
            0.5
        })
    }

    /// The handshake's two delays are both host delays (under [`QUICK_S`]) and the TTLs do not
    /// tell: which side answered first is then a race between two hosts, not the path.
    pub fn host_delays_only(&self) -> bool {
        self.delays()
            .is_some_and(|(h1, h2)| h1 < QUICK_S && h2 < QUICK_S)
            && self.ttl_near().is_none()
    }

    /// Whether [`FlowVantage::point`] reads the median `seq` RTT of the data direction: without a
    /// handshake, or when the handshake's delays are both host delays ([`Self::host_delays_only`]).
    pub fn needs_median(&self) -> bool {
        self.near().is_none() || self.host_delays_only()
    }

    /// The vantage point, given the median `seq` RTT of the data direction (read where
    /// [`Self::needs_median`]); None when the connection carried no payload or nothing tells.
    ///
    /// Where the handshake's delays are both host delays and the TTLs do not tell (a bridged
    /// path of microseconds, as in `bench/make_capture.sh`), a median data→ACK delay of
    /// [`RECEIVER_MEDIAN_S`] or more says the ACKs were not sent right here, so the capture is
    /// at the sender: a receiver's own ACKs follow its data by microseconds (Linux ACKs every
    /// second full segment at once, RFC 9293 §3.8.6.3), while at the sender the delay holds the
    /// path's queue. A smaller median leaves the handshake's answer.
    pub fn point(&self, median: Option<f64>) -> Option<Point> {
        let (ddir, bytes) = self.data_dir()?;
        if bytes == 0 {
            return None;
        }
        if self.host_delays_only() && median.is_some_and(|m| m >= RECEIVER_MEDIAN_S) {
            return Some(Point::Sender);
        }
        match self.near().filter(|f| f.is_finite()) {
            Some(f) => {
                let (at_sender, at_receiver) = if ddir == 0 {
                    (f == 1.0, f == 0.0)
                } else {
                    (f == 0.0, f == 1.0)
                };
                Some(if at_sender {
                    Point::Sender
                } else if at_receiver {
                    Point::Receiver
                } else {
                    Point::Middle
                })
            }
            None => median.map(|m| {
                if m < RECEIVER_MEDIAN_S {
                    Point::Receiver
                } else {
                    Point::Sender
                }
            }),
        }
    }
}

/// The median as polars computes it (linear interpolation between the two middle values):
/// the flows' percentiles' own `quantile` (the stream reads the same ranks off
/// `flowstats::ranks`); None for no values.
fn median(v: &mut [f64]) -> Option<f64> {
    (!v.is_empty()).then(|| quantile(v, 0.5))
}

/// One packet column set of [`vantage_points`].
pub struct Packets<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    /// A TCP packet with a connection id and a direction (the others are left out).
    pub keep: &'a [bool],
    pub time: &'a [f64],
    pub payload: &'a [u32],
    pub flags: &'a [u8],
    /// The packets' IP TTLs (empty: none known, as in a simulator's trace).
    pub ttl: &'a [u8],
}

/// The RTT samples: connection, direction, seconds, and whether it is a `seq` sample.
pub struct Samples<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
    pub rtt: &'a [f64],
    pub seq: &'a [bool],
}

fn same_len(what: &str, n: usize, cols: &[(&str, usize)]) -> Result<(), String> {
    match cols.iter().find(|c| c.1 != n) {
        Some((name, l)) => Err(format!("{what} column {name} has {l} values, flow has {n}")),
        None => Ok(()),
    }
}

/// Every connection's vantage point, connections in ascending id order.
pub fn vantage_points(p: &Packets, s: &Samples) -> Result<(Vec<u32>, Vec<Option<Point>>), String> {
    let n = p.flow.len();
    let cols = [
        ("dir", p.dir.len()),
        ("keep", p.keep.len()),
        ("time", p.time.len()),
        ("payload", p.payload.len()),
        ("flags", p.flags.len()),
    ];
    same_len("packet", n, &cols)?;
    if !p.ttl.is_empty() {
        same_len("packet", n, &[("ttl", p.ttl.len())])?;
    }
    let m = s.flow.len();
    let rcols = [
        ("dir", s.dir.len()),
        ("rtt", s.rtt.len()),
        ("seq", s.seq.len()),
    ];
    same_len("RTT sample", m, &rcols)?;
    let mut flows: Slots<FlowVantage> = Slots::new(p.flow.iter().copied().max().map(u64::from), n);
    for i in (0..n).filter(|&i| p.keep[i]) {
        let d = match p.dir[i] {
            0 => 0,
            1 => 1,
            x => return Err(format!("packet {i}: dir {x} is not 0 or 1")),
        };
        let acc = flows.get(u64::from(p.flow[i]));
        acc.on_packet(d, p.time[i], i64::from(p.payload[i]), p.flags[i]);
        if let Some(&t) = p.ttl.get(i) {
            acc.on_ttl(d, t);
        }
    }
    // the median RTT only of the data directions of connections without a handshake
    let mut wanted: HashMap<(u32, i8), Vec<f64>> = HashMap::new();
    for (&k, a) in flows.keys.iter().zip(&flows.items) {
        if let Some((d, b)) = a.data_dir() {
            if b > 0 && a.needs_median() {
                wanted.insert((k as u32, d as i8), Vec::new());
            }
        }
    }
    if !wanted.is_empty() {
        for j in (0..m).filter(|&j| s.seq[j]) {
            if let Some(v) = wanted.get_mut(&(s.flow[j], s.dir[j])) {
                v.push(s.rtt[j]);
            }
        }
    }
    let mut order: Vec<usize> = (0..flows.keys.len()).collect();
    order.sort_unstable_by_key(|&j| flows.keys[j]);
    let points = order
        .iter()
        .map(|&j| {
            let (k, a) = (flows.keys[j] as u32, &flows.items[j]);
            let med = a
                .data_dir()
                .and_then(|(d, _)| wanted.get_mut(&(k, d as i8)))
                .and_then(|v| median(v));
            a.point(med)
        })
        .collect();
    Ok((
        order.iter().map(|&j| flows.keys[j] as u32).collect(),
        points,
    ))
}

type VantageArrays<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<i8>>);

/// Every TCP connection's vantage point: `(flow, point)`, flows ascending, point 0 sender,
/// 1 receiver, 2 middle, -1 none (no payload, or nothing tells).
///
/// Packets: `keep` marks the TCP packets with a connection id and a direction (0 or 1);
/// `flags` is the TCP flags byte (0 for none), `payload` 0 for none. RTT samples: `r_seq`
/// marks the `seq` samples with a value.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_vantage<'py>(
    py: Python<'py>,
    flow: PyReadonlyArray1<'py, u32>,
    dir: PyReadonlyArray1<'py, i8>,
    keep: PyReadonlyArray1<'py, bool>,
    time: PyReadonlyArray1<'py, f64>,
    payload: PyReadonlyArray1<'py, u32>,
    flags: PyReadonlyArray1<'py, u8>,
    ttl: PyReadonlyArray1<'py, u8>,
    r_flow: PyReadonlyArray1<'py, u32>,
    r_dir: PyReadonlyArray1<'py, i8>,
    r_rtt: PyReadonlyArray1<'py, f64>,
    r_seq: PyReadonlyArray1<'py, bool>,
) -> PyResult<VantageArrays<'py>> {
    let p = Packets {
        flow: slice(&flow, "flow")?,
        dir: slice(&dir, "dir")?,
        keep: slice(&keep, "keep")?,
        time: slice(&time, "time")?,
        payload: slice(&payload, "payload")?,
        flags: slice(&flags, "flags")?,
        ttl: slice(&ttl, "ttl")?,
    };
    let s = Samples {
        flow: slice(&r_flow, "r_flow")?,
        dir: slice(&r_dir, "r_dir")?,
        rtt: slice(&r_rtt, "r_rtt")?,
        seq: slice(&r_seq, "r_seq")?,
    };
    let (flows, points) = py.detach(|| super::guard(|| vantage_points(&p, &s)))?;
    let codes: Vec<i8> = points.iter().map(|v| v.map_or(-1, |p| p as i8)).collect();
    Ok((flows.into_pyarray(py), codes.into_pyarray(py)))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tcp_vantage, m)?)
}

#[cfg(test)]
mod tests;
