//! Round-trip time samples: one streaming pass over the packets, a state machine per connection.
//!
//! Two methods; a sample belongs to the direction whose data (or timestamps) it times and sits
//! on the ACK that closed it (the other direction's packet):
//!
//! - `seq` (Wireshark's `tcp.analysis.ack_rtt`, packet-tcp.c): an ACK that raises the
//!   cumulative ACK to exactly the end of a segment closes a sample, RTT = ACK time - that
//!   segment's time. Unlike Wireshark (which then times the *first* transmission), Karn's rule
//!   applies (RFC 6298 §3): no sample when bytes ending there were sent again before the ACK.
//! - `ts` (RFC 7323 §4.1): an ACK that raises the cumulative ACK and echoes TSecr = v closes a
//!   sample from the first packet of the other direction that carried TSval = v.
//!
//! Each direction keeps its first transmissions not yet acknowledged (their ends strictly
//! increase) and the first packet of each TSval (strictly increasing once unwrapped); an ACK
//! looks its value up there. Memory per direction: the unacknowledged segments, plus one
//! entry per timestamp clock tick within the last 2^31 ticks.

use super::seq::{is_seg, ADV, FIN, KEEPALIVE, MISSING, NEW_ACK, SYN, ZWP};
use super::{guard, slice};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use std::collections::{HashMap, VecDeque};

const TWO32: i64 = 1 << 32;
const HALF: i64 = 1 << 31;

/// One packet as the RTT rules see it: its columns and its sequence state (`seq::State`).
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub row: u32,
    /// 0 or 1.
    pub dir: usize,
    /// Seconds.
    pub time: f64,
    pub seq: i64,
    /// Payload bytes.
    pub len: i64,
    /// The TCP flags byte (only SYN and FIN are read).
    pub flags: u8,
    /// [`MISSING`]: none.
    pub ack: i64,
    /// [`MISSING`]: no timestamp option.
    pub ts_val: i64,
    /// [`MISSING`] or 0: no echo.
    pub ts_ecr: i64,
    /// The state bits of `seq` (`seq::State::bits`: [`ADV`], [`KEEPALIVE`], [`ZWP`], [`NEW_ACK`]
    /// and `STRAY` are read).
    pub bits: u8,
    /// Highest end sent by this direction before the packet ([`MISSING`]: none).
    pub nxt: i64,
}

/// A sample: the closing ACK's row, the timed packet's row and the RTT in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub ack_row: u32,
    pub sent_row: u32,
    pub rtt: f64,
}

/// A first transmission not acknowledged yet.
struct Pending {
    end: i64,
    row: u32,
    time: f64,
    /// Karn: it re-sent bytes sent before, or bytes ending at `end` were sent again since.
    ambiguous: bool,
}

/// The first packet of one (unwrapped) TSval.
struct First {
    tsv: i64,
    row: u32,
    time: f64,
}

/// One direction as a sender: what its peer's ACKs can close.
#[derive(Default)]
struct Sender {
    pending: VecDeque<Pending>,
    /// Strictly increasing `tsv`; those before `firsts_from` are dropped (see `on_timestamp`).
    firsts: Vec<First>,
    firsts_from: usize,
    /// The previous TSval as sent (32-bit) and the 2^32 epoch of the latest one.
    prev_ts: Option<i64>,
    epoch: i64,
    /// Highest unwrapped TSval sent so far.
    hi_ts: Option<i64>,
    /// The highest echo looked up so far (unwrapped), and the most any echo fell below the
    /// highest before it: what a first pass learns for `keep_lag`.
    echo_hi: Option<i64>,
    echo_lag: i64,
    /// Given (a streaming driver's first pass measured it): no echo will fall more than this
    /// below the highest before it, so firsts further below can go.
    keep_lag: Option<i64>,
    /// Given (a streaming driver): firsts further than this below the highest TSval sent go
    /// too; `forgot` is the TSval below which they went, `missed` whether an echo fell below it
    /// since (then its answer may not be the one keeping every first gives).
    keep_window: Option<i64>,
    forgot: Option<i64>,
    missed: bool,
}

impl Sender {
    fn on_segment(&mut self, p: &Packet) {
        if !is_seg(p.len, p.flags, p.bits) {
            return;
        }
        // SYN and FIN occupy one sequence number each (RFC 9293 §3.4)
        let end = p.seq + p.len + i64::from(p.flags & (SYN | FIN) != 0);
        let ka = p.bits & KEEPALIVE != 0;
        if p.bits & ADV != 0 {
            if !ka {
                // the first transmission of this end (`seq::ADV`: ends strictly increase);
                // Karn: a first transmission that also re-sends bytes sent before is ambiguous
                self.pending.push_back(Pending {
                    end,
                    row: p.row,
                    time: p.time,
                    ambiguous: p.nxt != MISSING && p.seq < p.nxt,
                });
            }
        } else if !ka && p.bits & ZWP == 0 {
            // Karn: another transmission ending there (keep-alives and zero-window probes,
            // which Wireshark tells apart, are not re-sent data)
            if let Ok(k) = self.pending.binary_search_by_key(&end, |s| s.end) {
                self.pending[k].ambiguous = true;
            }
        }
    }

    fn on_timestamp(&mut self, p: &Packet) {
        let v = p.ts_val;
        if v == MISSING {
            return;
        }
        // 32-bit wrap: a drop by more than 2^31 from the previous TSval starts the next
        // epoch, a rise by more than 2^31 goes back one (RFC 7323 §5.2's modular order)
        if let Some(prev) = self.prev_ts {
            let d = v - prev;
            if d < -HALF {
                self.epoch += 1;
            } else if d > HALF {
                self.epoch -= 1;
            }
        }
        self.prev_ts = Some(v);
        let tsv = v + self.epoch * TWO32;
        if self.hi_ts.is_none_or(|h| tsv > h) {
            self.hi_ts = Some(tsv);
            // an echo is placed within 2^31 of the highest TSval (see `on_ack`), so firsts
            // that far below it can never match again
            self.forget_below(tsv - HALF + 1);
            self.firsts.push(First {
                tsv,
                row: p.row,
                time: p.time,
            });
            if let Some(w) = self.keep_window {
                self.forgot = Some(tsv.saturating_sub(w));
                self.forget_below(tsv.saturating_sub(w));
            }
        }
    }

    /// Drops the firsts whose TSval is below `tsv` (they can never match again).
    fn forget_below(&mut self, tsv: i64) {
        while self
            .firsts
            .get(self.firsts_from)
            .is_some_and(|f| f.tsv < tsv)
        {
            self.firsts_from += 1;
        }
        if self.firsts_from > 1024 && self.firsts_from * 2 > self.firsts.len() {
            self.firsts.drain(..self.firsts_from);
            self.firsts_from = 0;
        }
    }

    /// A new cumulative ACK from the peer: the `seq` sample it closes, if any. Segments it
    /// reaches leave (later ACKs are higher: none of them can end there).
    fn seq_sample(&mut self, ack: i64, row: u32, time: f64) -> Option<Sample> {
        while self.pending.front().is_some_and(|s| s.end < ack) {
            self.pending.pop_front();
        }
        let s = self.pending.front().filter(|s| s.end == ack)?;
        let out = (!s.ambiguous).then_some(Sample {
            ack_row: row,
            sent_row: s.row,
            rtt: time - s.time,
        });
        self.pending.pop_front();
        out
    }

    /// The `ts` sample of an ACK echoing `ecr` (32-bit): placed in the 2^32 epoch nearest to
    /// the highest TSval sent so far, then looked up among the first packets of each TSval.
    ///
    /// The echoes' highest value and their largest fall below it are kept: a first pass over
    /// a trace measures that fall, and a second one given it (`keep_lag`) keeps only the
    /// firsts an echo can still reach, memory by that window rather than by the connection's
    /// length, the same samples (an echo is TS.Recent, RFC 7323 §4.3, which only moves
    /// forward; reordered ACKs are what make it fall back).
    fn ts_sample(&mut self, ecr: i64, row: u32, time: f64) -> Option<Sample> {
        let ecr = match self.hi_ts {
            Some(h) => ecr + (h - ecr + HALF).div_euclid(TWO32) * TWO32,
            None => ecr,
        };
        let hi = self.echo_hi.map_or(ecr, |h| h.max(ecr));
        self.echo_hi = Some(hi);
        self.echo_lag = self.echo_lag.max(hi - ecr);
        self.missed |= self.forgot.is_some_and(|f| ecr < f);
        let f = find_recent(&self.firsts[self.firsts_from..], ecr);
        let out = f.map(|f| Sample {
            ack_row: row,
            sent_row: f.row,
            rtt: time - f.time,
        });
        if let Some(lag) = self.keep_lag {
            self.forget_below(hi.saturating_sub(lag));
        }
        out
    }
}

/// The entry of `firsts` with `tsv` = `v`. The echo is usually about one round trip old, near
/// the end: a search galloping back from there touches few entries of a long list.
fn find_recent(firsts: &[First], v: i64) -> Option<&First> {
    let mut hi = firsts.len();
    let mut step = 1;
    let lo = loop {
        if step > hi {
            break 0;
        }
        let i = hi - step;
        if firsts[i].tsv <= v {
            break i;
        }
        hi = i;
        step *= 2;
    };
    let k = firsts[lo..hi].binary_search_by_key(&v, |f| f.tsv).ok()?;
    Some(&firsts[lo + k])
}

/// One connection's RTT state: its two directions as senders.
#[derive(Default)]
pub struct Connection {
    side: [Sender; 2],
}

impl Connection {
    /// The state of a second pass over a trace whose first pass measured `lags` (by index,
    /// [`Connection::echo_lags`]): the same samples, the TSval table kept within those lags.
    pub fn keeping(lags: [i64; 2]) -> Connection {
        let mut c = Connection::default();
        for (s, lag) in c.side.iter_mut().zip(lags) {
            s.keep_lag = Some(lag);
        }
        c
    }

    /// The same state keeping of each TSval table only the `window` below the highest TSval
    /// sent (a first pass that cannot know the echoes yet): the same samples unless an echo
    /// falls below what went ([`Connection::missed`]), whatever else is kept.
    pub fn within(mut self, window: i64) -> Connection {
        for s in &mut self.side {
            s.keep_window = Some(window);
        }
        self
    }

    /// An echo fell below what [`Connection::within`] dropped.
    pub fn missed(&self) -> bool {
        self.side.iter().any(|s| s.missed)
    }

    /// By index, the most an echo fell below the highest echo before it (0: never).
    pub fn echo_lags(&self) -> [i64; 2] {
        [self.side[0].echo_lag, self.side[1].echo_lag]
    }

    /// Feeds one packet (in capture order): the `seq` and `ts` samples it closes as an ACK
    /// for the other direction. Samples with a negative RTT (time going back) are dropped.
    pub fn on_packet(&mut self, p: &Packet) -> (Option<Sample>, Option<Sample>) {
        let d = p.dir & 1;
        self.side[d].on_segment(p);
        self.side[d].on_timestamp(p);
        // only an ACK that raises the highest ACK this direction has sent (Wireshark's
        // lastack) closes a sample: duplicates would time the same segment again
        if p.bits & NEW_ACK == 0 || p.ack == MISSING {
            return (None, None);
        }
        let peer = &mut self.side[1 - d];
        let s = peer.seq_sample(p.ack, p.row, p.time);
        let t = if p.ts_ecr != MISSING && p.ts_ecr != 0 {
            peer.ts_sample(p.ts_ecr, p.row, p.time)
        } else {
            None
        };
        let ok = |x: Option<Sample>| x.filter(|x| x.rtt >= 0.0);
        (ok(s), ok(t))
    }
}

/// The packet columns (one entry per packet, capture order), see [`Packet`]; `g` is the
/// direction id `2·flow + dir`.
pub struct Columns<'a> {
    pub g: &'a [u32],
    pub time: &'a [f64],
    pub seq: &'a [i64],
    pub len: &'a [i64],
    pub flags: &'a [u8],
    pub ack: &'a [i64],
    pub ts_val: &'a [i64],
    /// 0: no echo (or none).
    pub ts_ecr: &'a [u32],
    pub bits: &'a [u8],
    pub nxt: &'a [i64],
}

impl Columns<'_> {
    fn validate(&self) -> Result<usize, String> {
        let n = self.g.len();
        let lens = [
            ("time", self.time.len()),
            ("seq", self.seq.len()),
            ("len", self.len.len()),
            ("flags", self.flags.len()),
            ("ack", self.ack.len()),
            ("ts_val", self.ts_val.len()),
            ("ts_ecr", self.ts_ecr.len()),
            ("bits", self.bits.len()),
            ("nxt", self.nxt.len()),
        ];
        for (name, l) in lens {
            if l != n {
                return Err(format!("column {name} has {l} values, g has {n}"));
            }
        }
        if n >= u32::MAX as usize {
            return Err(format!("{n} packets: at most 2^32 - 2 per call"));
        }
        Ok(n)
    }

    fn packet(&self, row: u32) -> Packet {
        let i = row as usize;
        Packet {
            row,
            dir: (self.g[i] & 1) as usize,
            time: self.time[i],
            seq: self.seq[i],
            len: self.len[i],
            flags: self.flags[i],
            ack: self.ack[i],
            ts_val: self.ts_val[i],
            ts_ecr: i64::from(self.ts_ecr[i]),
            bits: self.bits[i],
            nxt: self.nxt[i],
        }
    }
}

/// Every sample of each method, in the ACK's row order: `(seq, ts)`.
///
/// One pass over the packets in capture order, each fed to its connection's state: the
/// columns are read once, front to back (a pass per connection would read every cache line of
/// every column once per connection when flows interleave), and the samples come out sorted.
pub fn samples(c: &Columns) -> Result<(Vec<Sample>, Vec<Sample>), String> {
    let n = c.validate()?;
    let top = c.g.iter().map(|&g| g >> 1).max().unwrap_or(0) as usize;
    // flow ids are dense (the readers number them from 0): a table, else a map
    let mut table: Vec<Connection> = Vec::new();
    let mut map: HashMap<u32, Connection> = HashMap::new();
    if top < 4 * n + 1024 {
        table.resize_with(top + 1, Connection::default);
    }
    let (mut sq, mut ts) = (Vec::new(), Vec::new());
    for row in 0..n as u32 {
        let p = c.packet(row);
        let flow = c.g[row as usize] >> 1;
        let conn = match table.get_mut(flow as usize) {
            Some(conn) => conn,
            None => map.entry(flow).or_default(),
        };
        let (a, b) = conn.on_packet(&p);
        sq.extend(a);
        ts.extend(b);
    }
    Ok((sq, ts))
}

type SampleArrays<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
);

/// RTT samples of every connection (see the module docs): `(seq_rows, seq_rtt, ts_rows,
/// ts_rtt)`, the closing ACKs' rows (ascending) and the RTTs in seconds.
///
/// `g` is `2·flow + dir`; `flags` the TCP flags byte; `bits` the state bits `tcp_state`
/// returned (`seq::State::bits`); `ack`, `ts_val` and `nxt` carry -2^62 where the packet has
/// none; `ts_ecr` 0.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn tcp_rtt<'py>(
    py: Python<'py>,
    g: PyReadonlyArray1<'py, u32>,
    time: PyReadonlyArray1<'py, f64>,
    seq: PyReadonlyArray1<'py, i64>,
    len: PyReadonlyArray1<'py, i64>,
    flags: PyReadonlyArray1<'py, u8>,
    ack: PyReadonlyArray1<'py, i64>,
    ts_val: PyReadonlyArray1<'py, i64>,
    ts_ecr: PyReadonlyArray1<'py, u32>,
    bits: PyReadonlyArray1<'py, u8>,
    nxt: PyReadonlyArray1<'py, i64>,
) -> PyResult<SampleArrays<'py>> {
    let c = Columns {
        g: slice(&g, "g")?,
        time: slice(&time, "time")?,
        seq: slice(&seq, "seq")?,
        len: slice(&len, "len")?,
        flags: slice(&flags, "flags")?,
        ack: slice(&ack, "ack")?,
        ts_val: slice(&ts_val, "ts_val")?,
        ts_ecr: slice(&ts_ecr, "ts_ecr")?,
        bits: slice(&bits, "bits")?,
        nxt: slice(&nxt, "nxt")?,
    };
    let (sq, ts) = py.detach(|| guard(|| samples(&c)))?;
    let split =
        |v: Vec<Sample>| -> (Vec<u32>, Vec<f64>) { v.iter().map(|s| (s.ack_row, s.rtt)).unzip() };
    let ((a, b), (c, d)) = (split(sq), split(ts));
    Ok((
        a.into_pyarray(py),
        b.into_pyarray(py),
        c.into_pyarray(py),
        d.into_pyarray(py),
    ))
}

/// Adds this module's functions to `tracekit._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tcp_rtt, m)?)
}

#[cfg(test)]
mod tests;
