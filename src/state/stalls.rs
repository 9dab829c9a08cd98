//! Stalls: intervals in which a sender sent no new data for much longer than its RTT.
//!
//! Per direction, the *new-data* packets are those that raise the highest data byte sent
//! (the state's `new`, read here as `hi_dend` rising above the direction's previous one). A stall is a silence between two consecutive new-data packets
//! — or between the last one and the first ACK of its last byte (a *tail* that needed a
//! timeout) — longer than `max(4 × srtt, 200 ms)`, with srtt the RFC 6298 smoothed RTT of
//! the direction at the silence's start (before its first sample: the direction's smallest
//! RTT sample; 200 ms alone when none is known). Four RTTs cover the normal pauses of a
//! cwnd-limited sender (an ACK-clock hiccup, a delayed ACK, a recovery round); 200 ms is
//! Linux's minimum RTO (`TCP_RTO_MIN`), so sub-millisecond LAN RTTs cannot turn scheduling
//! jitter into stalls.
//!
//! The cause, first that applies:
//! - `zero_window`: the receiver advertised a zero window (RFC 9293 §3.8.6.1) at the start
//!   or during the silence (a SYN's window excepted: it is never scaled, RFC 7323 §2.2);
//! - `rto`: a retransmission classified `rto` (RFC 6298 §5) came in it;
//! - `rwnd_limited`: at the start, or at a packet of the receiver during the silence, the data
//!   outstanding plus one MSS exceeded the window it advertised (RFC 9293 §3.8.6.2.1: the
//!   sender may not send beyond the window);
//! - `app_limited`: everything sent had been acknowledged before the next new data (RFC 7661
//!   §3: nothing outstanding, window open: the application had nothing to send);
//! - `unknown`: none of these (a loss recovery without timeout, a path stall).
//!
//! [`Connection`] is the state machine of one connection, fed its packets in capture order
//! ([`Connection::on_packet`]); per direction it keeps the latest new data and the evidence
//! gathered since (O(1) memory), plus the silences above 200 ms found so far. The threshold
//! and the window check need the direction's smallest RTT and largest segment over the whole
//! trace, so the silences are judged at [`Connection::finish`]. [`stalls`] drives it over
//! the prepared state's columns (one pass in packet order).

use super::guard;
use super::seq::MISSING;
use super::srtt::{Est, Latest};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// Every stall is longer than this (seconds): Linux's minimum RTO.
pub const MIN_STALL_S: f64 = 0.2;
/// A stall is longer than this many smoothed RTTs.
pub const RTT_FACTOR: f64 = 4.0;

/// Why a sender stalled (the `cause` column's values are [`CAUSE_NAMES`] by this code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cause {
    ZeroWindow = 0,
    Rto = 1,
    RwndLimited = 2,
    AppLimited = 3,
    Unknown = 4,
}

/// The `cause` column's value of each [`Cause`] code, the one declaration of them
/// (`tracekit._core.STALL_CAUSES`, read by the frames path and the stream's account).
pub const CAUSE_NAMES: [&str; 5] = [
    "zero_window",
    "rto",
    "rwnd_limited",
    "app_limited",
    "unknown",
];

/// One packet as the stall rules read it: its own columns and the prepared state's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    pub time: f64,
    /// Payload bytes.
    pub len: i64,
    /// The highest data end its direction has sent, this packet included (a packet that
    /// raises it is new data).
    pub hi_dend: Option<i64>,
    /// ACK number (None without the ACK flag).
    pub ack: Option<i64>,
    /// Advertised window (bytes).
    pub win: Option<i64>,
    /// It raises the highest ACK its direction has sent (Wireshark's `lastack`).
    pub new_ack: bool,
    pub syn: bool,
    /// A retransmission classified `rto`.
    pub rto: bool,
    /// The smoothed RTT after the RTT sample this packet closes (it acknowledges the other
    /// direction's data): `super::srtt::Est::at`.
    pub srtt: Option<f64>,
}

/// What decides a silence's cause, gathered while it lasts.
#[derive(Clone, Copy, Debug)]
struct Evidence {
    /// The receiver advertised a zero window (not on a SYN).
    zero: bool,
    /// Smallest `window - outstanding` at the receiver's packets (outstanding = the
    /// sender's highest data end - the receiver's highest ACK; `i64::MAX`: none yet): the
    /// window was full at one of them when this is below the sender's MSS.
    slack: i64,
    /// The sender's `rto` retransmissions, and the rows of the first and last of them.
    n_rto: u32,
    rto_rows: (u32, u32),
}

impl Evidence {
    const NONE: Evidence = Evidence {
        zero: false,
        slack: i64::MAX,
        n_rto: 0,
        rto_rows: (0, 0),
    };
}

/// The new data a silence starts at, and the receiver's state then.
#[derive(Clone, Copy, Debug)]
struct Start {
    row: u32,
    time: f64,
    hi_dend: Option<i64>,
    srtt: Option<f64>,
    /// The receiver's latest window and highest ACK.
    r_win: Option<i64>,
    r_hi_ack: Option<i64>,
}

/// The first ACK of the latest new data's last byte (what ends a tail silence).
#[derive(Clone, Copy, Debug)]
struct Fin {
    /// Earliest capture time of the ACKs of that byte (a capture's clock can step back).
    time: f64,
    /// The evidence up to (not including) the first of them.
    ev: Evidence,
}

/// The silence since a direction's latest new data.
#[derive(Clone, Copy, Debug)]
struct Open {
    start: Start,
    ev: Evidence,
    fin: Option<Fin>,
}

/// A silence above [`MIN_STALL_S`], to be judged at the end.
#[derive(Clone, Copy, Debug)]
struct Silence {
    start: Start,
    end: f64,
    /// Ended by the ACK of the last byte, not by new data.
    tail: bool,
    ev: Evidence,
    /// The receiver's highest ACK at the new data that ended it (-1: none, or a tail).
    acked: i64,
}

/// One stall of a direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stall {
    pub dir: u8,
    /// The packet (row) of the new data it starts at.
    pub row: u32,
    pub start: f64,
    pub end: f64,
    pub cause: Cause,
    /// The cause without the `rto` retransmissions, and the rows of the first and last of
    /// those that made it `rto` (every `rto` packet of the direction between them counted): a
    /// streaming driver's retransmission a later D-SACK turns `spurious` (RFC 2883) is not
    /// `rto` in the retransmissions frame these rules read in the column path.
    pub without_rto: Cause,
    pub rto_rows: (u32, u32),
}

/// One direction's running state.
#[derive(Debug)]
struct Dir {
    /// `hi_dend` of its latest packet.
    hi_dend: Option<i64>,
    /// The highest ACK it has sent.
    hi_ack: Option<i64>,
    /// The window of its latest packet (None: none yet, or without one).
    win: Option<i64>,
    /// Its largest payload so far (the MSS the window checks add).
    mss: i64,
    open: Option<Open>,
    silences: Vec<Silence>,
}

impl Default for Dir {
    fn default() -> Self {
        Dir {
            hi_dend: None,
            hi_ack: None,
            win: None,
            mss: i64::MIN,
            open: None,
            silences: Vec::new(),
        }
    }
}

/// The stall state machine of one connection (both directions).
#[derive(Debug, Default)]
pub struct Connection {
    dirs: [Dir; 2],
    /// Each direction's smoothed RTT (RFC 6298).
    rtt: Latest,
}

impl Connection {
    /// One packet of direction `dir` (0 or 1), `row` its number in capture order.
    pub fn on_packet(&mut self, row: u32, dir: usize, p: &Packet) {
        let (me, peer) = match &mut self.dirs {
            [a, b] if dir == 0 => (a, b),
            [a, b] => (b, a),
        };
        self.rtt.on_packet(dir, p.srtt);
        me.mss = largest(me.mss, p.len);
        // as the sender: its own RTO retransmissions count in the silence they fall in
        if let Some(open) = me.open.as_mut().filter(|_| p.rto) {
            if open.ev.n_rto == 0 {
                open.ev.rto_rows.0 = row;
            }
            open.ev.rto_rows.1 = row;
            open.ev.n_rto += 1;
        }
        // new data (the state's `new`): it raises the highest data end (None < Some)
        if p.hi_dend > me.hi_dend {
            let start = Start {
                row,
                time: p.time,
                hi_dend: p.hi_dend,
                srtt: self.rtt.of(dir),
                r_win: peer.win,
                r_hi_ack: peer.hi_ack,
            };
            match me.open.as_mut() {
                Some(open) => {
                    if p.time - open.start.time > MIN_STALL_S {
                        me.silences.push(Silence {
                            start: open.start,
                            end: p.time,
                            tail: false,
                            ev: open.ev,
                            acked: peer.hi_ack.unwrap_or(-1),
                        });
                    }
                    *open = Open {
                        start,
                        ev: Evidence::NONE,
                        fin: None,
                    };
                }
                None => {
                    me.open = Some(Open {
                        start,
                        ev: Evidence::NONE,
                        fin: None,
                    })
                }
            }
        }
        me.hi_dend = p.hi_dend;
        me.win = p.win;
        if p.new_ack {
            me.hi_ack = p.ack;
        }
        // as the receiver of the other direction's silence
        let Some(open) = peer.open.as_mut() else {
            return;
        };
        // the first ACK of its last byte would end it (when no new data comes first)
        if let (true, Some(a), Some(h)) = (p.new_ack, p.ack, open.start.hi_dend) {
            if a >= h {
                match open.fin.as_mut() {
                    None => {
                        open.fin = Some(Fin {
                            time: p.time,
                            ev: open.ev,
                        })
                    }
                    Some(f) => f.time = f.time.min(p.time),
                }
            }
        }
        if let Some(w) = p.win.filter(|&w| w >= 0) {
            if w == 0 && !p.syn {
                open.ev.zero = true;
            }
            let out = i128::from(peer.hi_dend.unwrap_or(0)) - i128::from(me.hi_ack.unwrap_or(0));
            // (clamped: only the comparison with an MSS matters)
            let slack = clamp(i128::from(w) - out);
            open.ev.slack = open.ev.slack.min(slack);
        }
    }

    /// The stalls of both directions, in no particular order. `floor` is each direction's
    /// smallest RTT sample (the threshold before its first smoothed RTT).
    pub fn finish(mut self, floor: [Option<f64>; 2], out: &mut Vec<Stall>) {
        for (d, dir) in self.dirs.iter_mut().enumerate() {
            dir.close_tail();
            let whole = Whole {
                mss: dir.mss,
                floor: floor[d],
            };
            judge_all(d, &mut dir.silences, whole, out);
        }
    }

    /// The stalls among the silences closed so far, judged with each direction's [`Whole`]
    /// values known beforehand (a streaming driver's first pass): the silences go, so the
    /// state stays O(1) (`crate::stream`).
    pub fn take_stalls(&mut self, whole: &[Whole; 2], out: &mut Vec<Stall>) {
        for (d, dir) in self.dirs.iter_mut().enumerate() {
            if !dir.silences.is_empty() {
                // (the buffer goes too: a silence above 200 ms is rare, its memory need not stay)
                judge_all(d, &mut std::mem::take(&mut dir.silences), whole[d], out);
            }
        }
    }

    /// [`Connection::finish`] with each direction's [`Whole`] values known beforehand.
    pub fn finish_whole(mut self, whole: &[Whole; 2], out: &mut Vec<Stall>) {
        for dir in &mut self.dirs {
            dir.close_tail();
        }
        self.take_stalls(whole, out);
    }
}

impl Dir {
    /// A silence still open whose last byte was acknowledged ends there (a tail).
    fn close_tail(&mut self) {
        if let Some(Open {
            start,
            fin: Some(fin),
            ..
        }) = self.open
        {
            self.silences.push(Silence {
                start,
                end: fin.time,
                tail: true,
                ev: fin.ev,
                acked: -1,
            });
        }
    }
}

/// What the rules read of a whole direction: its largest payload (the MSS the window checks
/// add) and its smallest RTT sample (the threshold before its first smoothed RTT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Whole {
    /// `i64::MIN`: no packet.
    pub mss: i64,
    pub floor: Option<f64>,
}

impl Whole {
    pub const NONE: Whole = Whole {
        mss: i64::MIN,
        floor: None,
    };

    /// A packet of the direction with `len` payload bytes (as [`Connection::on_packet`] keeps
    /// its `mss`).
    pub fn on_packet(&mut self, len: i64) {
        self.mss = largest(self.mss, len);
    }

    /// An RTT sample of the direction's data (see [`floor_add`]).
    pub fn on_sample(&mut self, rtt: f64) {
        floor_add(&mut self.floor, rtt);
    }
}

/// The largest payload so far, `len` the next packet's.
fn largest(mss: i64, len: i64) -> i64 {
    mss.max(len)
}

/// The smallest RTT sample above 0 so far, `v` the next (as polars' `min` after `rtt_s > 0`:
/// a NaN passes the filter and is skipped by the minimum unless it is all there is).
pub fn floor_add(m: &mut Option<f64>, v: f64) {
    if !(v > 0.0 || v.is_nan()) {
        return;
    }
    *m = Some(match *m {
        Some(c) if v.is_nan() || c < v => c,
        _ => v,
    });
}

/// Judges the silences of direction `d` (they go), pushing the stalls to `out`.
fn judge_all(d: usize, silences: &mut Vec<Silence>, w: Whole, out: &mut Vec<Stall>) {
    for s in silences.drain(..) {
        if let Some((cause, without_rto)) = judge(&s, w.mss, w.floor) {
            out.push(Stall {
                dir: d as u8,
                row: s.start.row,
                start: s.start.time,
                end: s.end,
                cause,
                without_rto,
                rto_rows: s.ev.rto_rows,
            });
        }
    }
}

fn clamp(x: i128) -> i64 {
    i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX })
}

/// The cause of a silence, and its cause were none of its retransmissions `rto`; None when
/// it is no stall (not above its threshold).
fn judge(s: &Silence, mss: i64, floor: Option<f64>) -> Option<(Cause, Cause)> {
    let rtt = s.start.srtt.or(floor).unwrap_or(0.0);
    let t = RTT_FACTOR * rtt;
    // (a NaN RTT leaves the 200 ms)
    let thr = if t > MIN_STALL_S { t } else { MIN_STALL_S };
    // (a NaN time makes no stall)
    let longer = s.end - s.start.time > thr;
    if !longer {
        return None;
    }
    let st = &s.start;
    let full_at_start = match (st.hi_dend, st.r_hi_ack, st.r_win) {
        (Some(h), Some(a), Some(w)) => {
            i128::from(h) - i128::from(a) + i128::from(mss) > i128::from(w)
        }
        _ => false,
    };
    let rest = if s.ev.slack < mss || full_at_start {
        Cause::RwndLimited
    } else if !s.tail && st.hi_dend.is_some_and(|h| s.acked >= h) {
        Cause::AppLimited
    } else {
        Cause::Unknown
    };
    Some(if s.ev.zero || st.r_win == Some(0) {
        (Cause::ZeroWindow, Cause::ZeroWindow)
    } else if s.ev.n_rto > 0 {
        (Cause::Rto, rest)
    } else {
        (rest, rest)
    })
}

mod driver;
pub use driver::register;
#[cfg(test)]
use driver::{stalls, Columns, Ints, Rtt};

#[cfg(test)]
mod tests;
