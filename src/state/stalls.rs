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
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Every stall is longer than this (seconds): Linux's minimum RTO.
pub const MIN_STALL_S: f64 = 0.2;
/// A stall is longer than this many smoothed RTTs.
pub const RTT_FACTOR: f64 = 4.0;

/// Why a sender stalled (the `cause` column's values are the names in this order:
/// `CAUSES` in tracekit/analysis/stalls.py).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cause {
    ZeroWindow = 0,
    Rto = 1,
    RwndLimited = 2,
    AppLimited = 3,
    Unknown = 4,
}

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
    /// direction's data); NaN reads as none.
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
    /// The sender's `rto` retransmissions.
    n_rto: u32,
}

impl Evidence {
    const NONE: Evidence = Evidence {
        zero: false,
        slack: i64::MAX,
        n_rto: 0,
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
    /// The latest smoothed RTT its ACKs closed (the other direction's RTT).
    srtt: Option<f64>,
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
            srtt: None,
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
}

impl Connection {
    /// One packet of direction `dir` (0 or 1), `row` its number in capture order.
    pub fn on_packet(&mut self, row: u32, dir: usize, p: &Packet) {
        let (me, peer) = match &mut self.dirs {
            [a, b] if dir == 0 => (a, b),
            [a, b] => (b, a),
        };
        if p.srtt.is_some() {
            me.srtt = p.srtt;
        }
        me.mss = me.mss.max(p.len);
        // as the sender: its own RTO retransmissions count in the silence they fall in
        if let Some(open) = me.open.as_mut() {
            open.ev.n_rto += u32::from(p.rto);
        }
        // new data (the state's `new`): it raises the highest data end (None < Some)
        if p.hi_dend > me.hi_dend {
            let start = Start {
                row,
                time: p.time,
                hi_dend: p.hi_dend,
                srtt: peer.srtt,
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
            if let Some(Open {
                start,
                fin: Some(fin),
                ..
            }) = dir.open
            {
                dir.silences.push(Silence {
                    start,
                    end: fin.time,
                    tail: true,
                    ev: fin.ev,
                    acked: -1,
                });
            }
            for s in &dir.silences {
                if let Some(cause) = judge(s, dir.mss, floor[d]) {
                    out.push(Stall {
                        dir: d as u8,
                        row: s.start.row,
                        start: s.start.time,
                        end: s.end,
                        cause,
                    });
                }
            }
        }
    }
}

fn clamp(x: i128) -> i64 {
    i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX })
}

/// The cause of a silence, or None when it is no stall (not above its threshold).
fn judge(s: &Silence, mss: i64, floor: Option<f64>) -> Option<Cause> {
    let rtt = s
        .start
        .srtt
        .filter(|v| !v.is_nan())
        .or(floor)
        .unwrap_or(0.0);
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
    Some(if s.ev.zero || st.r_win == Some(0) {
        Cause::ZeroWindow
    } else if s.ev.n_rto > 0 {
        Cause::Rto
    } else if s.ev.slack < mss || full_at_start {
        Cause::RwndLimited
    } else if !s.tail && st.hi_dend.is_some_and(|h| s.acked >= h) {
        Cause::AppLimited
    } else {
        Cause::Unknown
    })
}

/// An integer state column: the prepared state keeps sequence state in 32 bits when the
/// trace's numbers fit (`i32::MIN` for null), else in 64 ([`MISSING`] for null).
#[derive(Clone, Copy)]
pub enum Ints<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl Ints<'_> {
    fn len(&self) -> usize {
        match self {
            Ints::I32(x) => x.len(),
            Ints::I64(x) => x.len(),
        }
    }

    fn get(&self, i: usize) -> Option<i64> {
        match self {
            Ints::I32(x) => Some(x[i]).filter(|&v| v != i32::MIN).map(i64::from),
            Ints::I64(x) => opt(x[i]),
        }
    }
}

/// The prepared state's columns (one entry per packet, capture order). i64 columns hold
/// [`MISSING`] for null.
pub struct Columns<'a> {
    /// Direction id `2·flow + dir`.
    pub g: &'a [u32],
    pub time: &'a [f64],
    pub len: &'a [i64],
    pub hi_dend: Ints<'a>,
    pub ack: &'a [i64],
    pub win: &'a [i64],
    pub new_ack: &'a [bool],
    /// Rows of the SYNs (ascending).
    pub syn_rows: &'a [u32],
}

/// The RTT and retransmission inputs.
pub struct Rtt<'a> {
    /// Rows of the `rto` retransmissions (any order).
    pub rto_rows: &'a [u32],
    /// Smoothed RTT per sample: the row of the ACK that closed it and the value (a row with
    /// several samples: the last one counts).
    pub est_rows: &'a [u32],
    pub est_srtt: &'a [f64],
    /// Every RTT sample's data direction and value (the floor is the smallest above 0).
    pub rs_flow: &'a [u32],
    pub rs_dir: &'a [i8],
    pub rs_rtt: &'a [f64],
}

fn opt(x: i64) -> Option<i64> {
    (x != MISSING).then_some(x)
}

/// Dense numbers of connection ids.
enum Ids {
    Table(Vec<u32>),
    Sorted(Vec<u32>),
}

impl Ids {
    fn new(flows: impl Iterator<Item = u32> + Clone, n: usize) -> Self {
        let top = flows.clone().max().unwrap_or(0) as usize;
        if top < 4 * n + 1024 {
            let mut t = vec![u32::MAX; top + 1];
            let mut k = 0;
            for f in flows {
                if t[f as usize] == u32::MAX {
                    t[f as usize] = k;
                    k += 1;
                }
            }
            Ids::Table(t)
        } else {
            let mut s: Vec<u32> = flows.collect();
            s.sort_unstable();
            s.dedup();
            Ids::Sorted(s)
        }
    }

    fn count(&self) -> usize {
        match self {
            Ids::Table(t) => t.iter().filter(|&&k| k != u32::MAX).count(),
            Ids::Sorted(s) => s.len(),
        }
    }

    fn get(&self, flow: u32) -> Option<usize> {
        match self {
            Ids::Table(t) => t
                .get(flow as usize)
                .filter(|&&k| k != u32::MAX)
                .map(|&k| k as usize),
            Ids::Sorted(s) => s.binary_search(&flow).ok(),
        }
    }
}

fn check(c: &Columns, r: &Rtt) -> Result<usize, String> {
    let n = c.g.len();
    let lens = [
        ("time", c.time.len()),
        ("len", c.len.len()),
        ("hi_dend", c.hi_dend.len()),
        ("ack", c.ack.len()),
        ("win", c.win.len()),
        ("new_ack", c.new_ack.len()),
    ];
    for (name, l) in lens {
        if l != n {
            return Err(format!("column {name} has {l} values, g has {n}"));
        }
    }
    if n >= u32::MAX as usize {
        return Err(format!("{n} packets: at most 2^32 - 2 per call"));
    }
    if r.est_rows.len() != r.est_srtt.len() {
        return Err("est_rows and est_srtt differ in length".into());
    }
    if r.rs_flow.len() != r.rs_dir.len() || r.rs_flow.len() != r.rs_rtt.len() {
        return Err("rs_flow, rs_dir and rs_rtt differ in length".into());
    }
    for (name, rows) in [
        ("syn_rows", c.syn_rows),
        ("rto_rows", r.rto_rows),
        ("est_rows", r.est_rows),
    ] {
        if let Some(&x) = rows.iter().find(|&&x| x as usize >= n) {
            return Err(format!("{name}: row {x} beyond the {n} packets"));
        }
    }
    if let Some(&d) = r.rs_dir.iter().find(|&&d| d != 0 && d != 1) {
        return Err(format!("rs_dir: {d} is not 0 or 1"));
    }
    Ok(n)
}

/// The smallest RTT sample above 0 per direction (as polars' `min` after `rtt_s > 0`: a NaN
/// passes the filter and is skipped by the minimum unless it is all there is).
fn floors(ids: &Ids, r: &Rtt) -> Vec<[Option<f64>; 2]> {
    let mut out = vec![[None; 2]; ids.count()];
    for ((&f, &d), &v) in r.rs_flow.iter().zip(r.rs_dir).zip(r.rs_rtt) {
        let Some(k) = ids.get(f) else { continue };
        if !(v > 0.0 || v.is_nan()) {
            continue;
        }
        let m = &mut out[k][d as usize];
        *m = Some(match *m {
            Some(c) if v.is_nan() || c < v => c,
            _ => v,
        });
    }
    out
}

/// A set of rows, read in ascending row order.
struct Marks {
    rows: Vec<u32>,
    next: usize,
}

impl Marks {
    fn new(rows: &[u32]) -> Self {
        let mut rows = rows.to_vec();
        rows.sort_unstable();
        Marks { rows, next: 0 }
    }

    /// Whether `row` is one (rows must come in ascending order).
    fn at(&mut self, row: u32) -> bool {
        let mut hit = false;
        while self.rows.get(self.next).is_some_and(|&r| r <= row) {
            hit |= self.rows[self.next] == row;
            self.next += 1;
        }
        hit
    }
}

/// The stalls of every direction, ordered by the row of their start.
pub fn stalls(c: &Columns, r: &Rtt) -> Result<Vec<(u32, Stall)>, String> {
    let n = check(c, r)?;
    let ids = Ids::new(c.g.iter().map(|&g| g >> 1), n);
    let mut conns: Vec<Connection> = (0..ids.count()).map(|_| Connection::default()).collect();
    let mut rto = Marks::new(r.rto_rows);
    let mut syn = Marks::new(c.syn_rows);
    let mut est: Vec<u32> = (0..r.est_rows.len() as u32).collect();
    if !r.est_rows.is_sorted() {
        est.sort_by_key(|&k| r.est_rows[k as usize]); // stable: a row's samples keep their order
    }
    let mut ei = 0usize;
    for i in 0..n {
        let row = i as u32;
        let mut srtt = None;
        while ei < est.len() && r.est_rows[est[ei] as usize] == row {
            srtt = Some(r.est_srtt[est[ei] as usize]);
            ei += 1;
        }
        let p = Packet {
            time: c.time[i],
            len: c.len[i],
            hi_dend: c.hi_dend.get(i),
            ack: opt(c.ack[i]),
            win: opt(c.win[i]),
            new_ack: c.new_ack[i],
            syn: syn.at(row),
            rto: rto.at(row),
            srtt,
        };
        let g = c.g[i];
        let k = ids.get(g >> 1).ok_or("connection id not indexed")?;
        conns[k].on_packet(row, (g & 1) as usize, &p);
    }
    let fl = floors(&ids, r);
    let mut out = Vec::new();
    let mut found = Vec::new();
    for (k, conn) in conns.into_iter().enumerate() {
        conn.finish(fl[k], &mut found);
        out.extend(found.drain(..).map(|s| (s.row, s)));
    }
    // (connection ids only index the machines: the g of a stall is its start row's)
    let mut out: Vec<(u32, Stall)> = out
        .into_iter()
        .map(|(row, s)| (c.g[row as usize], s))
        .collect();
    out.sort_unstable_by_key(|(_, s)| s.row);
    Ok(out)
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| PyValueError::new_err(format!("column {name} is not contiguous")))
}

/// An int32 or int64 numpy column.
#[derive(FromPyObject)]
enum IntArray<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

type StallArrays<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u8>>,
);

/// Stalls and their causes (see `stalls`): `(g, start, end, cause)` ordered by start row,
/// `cause` a [`Cause`].
///
/// `ack` and `win` carry -2^62 for null, `hi_dend` -2^62 (int64) or -2^31 (int32); `syn_rows`,
/// `rto_rows` and `est_rows` are row numbers.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_stalls<'py>(
    py: Python<'py>,
    g: PyReadonlyArray1<'py, u32>,
    time: PyReadonlyArray1<'py, f64>,
    len: PyReadonlyArray1<'py, i64>,
    hi_dend: IntArray<'py>,
    ack: PyReadonlyArray1<'py, i64>,
    win: PyReadonlyArray1<'py, i64>,
    new_ack: PyReadonlyArray1<'py, bool>,
    syn_rows: PyReadonlyArray1<'py, u32>,
    rto_rows: PyReadonlyArray1<'py, u32>,
    est_rows: PyReadonlyArray1<'py, u32>,
    est_srtt: PyReadonlyArray1<'py, f64>,
    rs_flow: PyReadonlyArray1<'py, u32>,
    rs_dir: PyReadonlyArray1<'py, i8>,
    rs_rtt: PyReadonlyArray1<'py, f64>,
) -> PyResult<StallArrays<'py>> {
    let c = Columns {
        g: slice(&g, "g")?,
        time: slice(&time, "time")?,
        len: slice(&len, "len")?,
        hi_dend: match &hi_dend {
            IntArray::I32(a) => Ints::I32(slice(a, "hi_dend")?),
            IntArray::I64(a) => Ints::I64(slice(a, "hi_dend")?),
        },
        ack: slice(&ack, "ack")?,
        win: slice(&win, "win")?,
        new_ack: slice(&new_ack, "new_ack")?,
        syn_rows: slice(&syn_rows, "syn_rows")?,
    };
    let r = Rtt {
        rto_rows: slice(&rto_rows, "rto_rows")?,
        est_rows: slice(&est_rows, "est_rows")?,
        est_srtt: slice(&est_srtt, "est_srtt")?,
        rs_flow: slice(&rs_flow, "rs_flow")?,
        rs_dir: slice(&rs_dir, "rs_dir")?,
        rs_rtt: slice(&rs_rtt, "rs_rtt")?,
    };
    let found = py.detach(|| guard(|| stalls(&c, &r)))?;
    let g: Vec<u32> = found.iter().map(|(g, _)| *g).collect();
    let start: Vec<f64> = found.iter().map(|(_, s)| s.start).collect();
    let end: Vec<f64> = found.iter().map(|(_, s)| s.end).collect();
    let cause: Vec<u8> = found.iter().map(|(_, s)| s.cause as u8).collect();
    Ok((
        g.into_pyarray(py),
        start.into_pyarray(py),
        end.into_pyarray(py),
        cause.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tcp_stalls, m)?)
}

#[cfg(test)]
mod tests;
