//! What the account in words (`tracekit.explain_rules`) reads of a direction beside its cwnd
//! events (`cwndstory`): its retransmissions, the other direction's zero-window
//! advertisements and, from the reader, the warnings' inputs over every decoded row.
//!
//! The retransmissions are the verdicts of the same per-packet step the frames path runs
//! (`retrans::Conn::on_packet`, fed by `conn::Conn`), with the kind a later D-SACK gives
//! (RFC 2883: `Verdict::spurious_now` turns an earlier re-send `spurious`, as
//! `retrans::classify` rewrites its row). A connection keeps them (17 B each) until the file
//! ends; the output keeps of each direction only their count, first and last times and
//! counts by kind (`far_losses`), and those inside the windows `losses` reads around the
//! first `story::CAP` reductions ([`picked`]). The zero-window rule is the account's
//! (`explain_parts.Parts.get("zero_windows")`): a window of 0 (RFC 9293 §3.8.6.1) on a packet
//! that is neither a SYN nor a RST; kept as a count and the first and last times.

use super::conn::Pk;
use super::cwndstory::Story;
use crate::capture::Rows;
use crate::state::cwnd::story::CAP;
use crate::state::retrans::{Verdict, FAST, RTO, SPURIOUS};
use crate::state::stalls::{Cause, Stall};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Count, first and last time of some events (NaN: none; NaN times are skipped, as polars'
/// `min`/`max` skip them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub n: u64,
    pub t0: f64,
    pub t1: f64,
}

impl Default for Span {
    fn default() -> Self {
        Span {
            n: 0,
            t0: f64::NAN,
            t1: f64::NAN,
        }
    }
}

impl Span {
    pub fn add(&mut self, t: f64) {
        self.n += 1;
        // (`f64::min`/`max` return the other operand when one is NaN)
        self.t0 = self.t0.min(t);
        self.t1 = self.t1.max(t);
    }
}

/// One connection's account inputs, by direction.
#[derive(Default)]
pub struct Account {
    /// Each direction's retransmissions: (row, time, kind), in row order.
    rt: [Vec<(u32, f64, u8)>; 2],
    /// Each direction's zero-window advertisements.
    zw: [Span; 2],
}

impl Account {
    /// Packet `p` of direction `d` and its retransmission verdict.
    pub fn on_packet(&mut self, d: usize, p: &Pk, v: &Verdict) {
        // RFC 9293 §3.8.6.1: a zero window advertised (a SYN's or RST's is not, flags 0x06)
        if p.win == 0 && p.flags & 0x06 == 0 {
            self.zw[d].add(p.time);
        }
        if let Some((kind, _)) = v.retrans {
            self.rt[d].push((p.row, p.time, kind));
        }
        // RFC 2883: this packet's D-SACK names an earlier re-send of the other direction
        if let Some((row, _)) = v.spurious_now {
            let o = &mut self.rt[1 - d];
            // (a direction's retransmissions are in row order)
            if let Ok(k) = o.binary_search_by_key(&row, |r| r.0) {
                o[k].2 = SPURIOUS;
            }
        }
    }

    /// Direction `d`'s inputs, dropped from the connection: its retransmissions, the other
    /// direction's zero-window advertisements and its `stalls` (the stalls stage's, by start).
    pub fn take(&mut self, d: usize, stalls: Vec<Stall>) -> Held {
        Held {
            rt: std::mem::take(&mut self.rt[d]),
            zw_peer: self.zw[1 - d],
            stalls,
        }
    }
}

/// A closed connection's direction, until the file ends (its story is known then).
#[derive(Clone, Debug, Default)]
pub struct Held {
    rt: Vec<(u32, f64, u8)>,
    zw_peer: Span,
    stalls: Vec<Stall>,
}

/// What the output gives of a direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Told {
    /// Every retransmission: count, first and last times; and the count by kind (fast, rto).
    pub rt: Span,
    pub fast: u64,
    pub rto: u64,
    /// The retransmissions inside the windows `losses` reads: (time, kind), row order.
    pub picked: Vec<(f64, u8)>,
    /// The other direction's zero-window advertisements.
    pub zw_peer: Span,
    /// The direction's stalls: (start, end, cause code), by start.
    pub stalls: Vec<(f64, f64, u8)>,
}

impl Held {
    /// The output, `story` the direction's cwnd events and `tol_s` its least RTT (NaN: none).
    pub fn told(self, story: Option<&Story>, tol_s: f64) -> Told {
        let mut out = Told {
            zw_peer: self.zw_peer,
            stalls: self
                .stalls
                .iter()
                .map(|s| (s.start, s.end, cause(s, &self.rt) as u8))
                .collect(),
            ..Told::default()
        };
        for &(_, t, k) in &self.rt {
            out.rt.add(t);
            out.fast += u64::from(k == FAST);
            out.rto += u64::from(k == RTO);
        }
        if let Some(s) = story {
            let w = windows(s, tol_s);
            out.picked = picked(&self.rt, &w);
        }
        out
    }
}

/// A stall's cause as the column path judges it: its `rto` retransmissions are those whose
/// kind is still `rto` at the end (`tracekit.analysis.stalls` reads the retransmissions frame);
/// the stalls stage counted them as they came, before a later D-SACK (RFC 2883) could turn one
/// `spurious`. `rt`: the direction's retransmissions, row order.
fn cause(s: &Stall, rt: &[(u32, f64, u8)]) -> Cause {
    if s.cause != Cause::Rto {
        return s.cause;
    }
    let (lo, hi) = s.rto_rows;
    let from = rt.partition_point(|r| r.0 < lo);
    let still = rt[from..]
        .iter()
        .take_while(|r| r.0 <= hi)
        .any(|r| r.2 == RTO);
    if still {
        Cause::Rto
    } else {
        s.without_rto
    }
}

/// The time windows `tracekit.explain_rules.losses` selects retransmissions in, for each of the
/// first [`CAP`] reductions `i` at `te` (its cut's `tol` and `prev_t`): `[te - tol, next)`,
/// with `next` the next reduction's time less its `tol` (+inf after the last), and the
/// fallback `[prev_t - tol_s, te + tol_s]` (closed). A NaN bound selects nothing, as there.
pub fn windows(s: &Story, tol_s: f64) -> Vec<(f64, f64, bool)> {
    let cuts: Vec<(f64, f64)> = s
        .told
        .slots(s.red_t.len(), CAP)
        .map(|c| c.map_or((f64::NAN, f64::NAN), |c| (c.tol, c.prev_t)))
        .collect();
    let mut out = Vec::new();
    for (i, &te) in s.red_t.iter().enumerate().take(CAP) {
        let (tol, prev_t) = cuts.get(i).copied().unwrap_or((f64::NAN, f64::NAN));
        let hi = match (s.red_t.get(i + 1), cuts.get(i + 1)) {
            (Some(&t), Some(&(tl, _))) => t - tl,
            (Some(_), None) => f64::NAN,
            (None, _) => f64::INFINITY,
        };
        out.push((te - tol, hi, false));
        if tol_s.is_finite() && !prev_t.is_nan() {
            out.push((prev_t - tol_s, te + tol_s, true));
        }
    }
    out
}

/// The retransmissions inside any of `w` (`(lo, hi, closed)`: `lo <= t < hi`, or `<= hi`).
pub fn picked(rt: &[(u32, f64, u8)], w: &[(f64, f64, bool)]) -> Vec<(f64, u8)> {
    let inside = |t: f64| {
        w.iter()
            .any(|&(lo, hi, closed)| t >= lo && (t < hi || (closed && t <= hi)))
    };
    rt.iter()
        .filter(|r| inside(r.1))
        .map(|r| (r.1, r.2))
        .collect()
}

/// The warnings' inputs over every decoded row (`tracekit.explain_rules.warnings`): the last
/// time, the data rows (payload > 0), those captured short of their size (`caplen < size`)
/// and the first time of these.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowFacts {
    pub last_t: f64,
    pub data: u64,
    pub cut: Span,
}

impl Default for RowFacts {
    fn default() -> Self {
        RowFacts {
            last_t: f64::NAN,
            data: 0,
            cut: Span::default(),
        }
    }
}

impl RowFacts {
    /// The rows of one settled batch.
    pub fn add(&mut self, rows: &Rows) {
        for (i, &t) in rows.time.iter().enumerate() {
            self.last_t = self.last_t.max(t);
            if rows.payload.get(i).is_some_and(|&p| p > 0) {
                self.data += 1;
                if let (Some(c), Some(s)) = (rows.caplen.get(i), rows.size.get(i)) {
                    if c < s {
                        self.cut.add(t);
                    }
                }
            }
        }
    }
}

/// The output columns of the rows' `told` (appended to `stream_summary`'s): per row `_rt_n`,
/// `_rt_t0`, `_rt_t1`, `_rt_fast`, `_rt_rto` (every retransmission), `_zw_n`, `_zw_t0`,
/// `_zw_t1` (the other direction's zero windows), `_rt_picked` and `_stalls` (how many of the
/// flat `_rt_t`/`_rt_kind` and `_stall_start`/`_stall_end`/`_stall_cause` are the row's).
pub fn output<'a>(d: &Bound<'_, PyDict>, per: impl Iterator<Item = &'a Told>) -> PyResult<()> {
    let all: Vec<&Told> = per.collect();
    out_col!(d, all, one "_rt_n", s => s.rt.n);
    out_col!(d, all, one "_rt_t0", s => s.rt.t0);
    out_col!(d, all, one "_rt_t1", s => s.rt.t1);
    out_col!(d, all, one "_rt_fast", s => s.fast);
    out_col!(d, all, one "_rt_rto", s => s.rto);
    out_col!(d, all, one "_zw_n", s => s.zw_peer.n);
    out_col!(d, all, one "_zw_t0", s => s.zw_peer.t0);
    out_col!(d, all, one "_zw_t1", s => s.zw_peer.t1);
    out_col!(d, all, one "_rt_picked", s => s.picked.len());
    out_col!(d, all, flat "_rt_t", s => s.picked.iter().map(|r| r.0));
    out_col!(d, all, flat "_rt_kind", s => s.picked.iter().map(|r| i64::from(r.1)));
    out_col!(d, all, one "_stalls", s => s.stalls.len());
    out_col!(d, all, flat "_stall_start", s => s.stalls.iter().map(|r| r.0));
    out_col!(d, all, flat "_stall_end", s => s.stalls.iter().map(|r| r.1));
    out_col!(d, all, flat "_stall_cause", s => s.stalls.iter().map(|r| i64::from(r.2)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_inside_the_windows_only() {
        let rt = [
            (1, 0.5, FAST),
            (2, 1.0, RTO),
            (3, 2.0, FAST),
            (4, 3.0, FAST),
        ];
        let w = [(0.9, 1.5, false), (2.5, 3.0, true)];
        assert_eq!(picked(&rt, &w), vec![(1.0, RTO), (3.0, FAST)]);
        // a NaN bound picks nothing
        assert!(picked(&rt, &[(f64::NAN, 9.0, false)]).is_empty());
    }

    #[test]
    fn a_stall_whose_timeouts_turned_spurious_takes_its_other_cause() {
        let st = Stall {
            dir: 0,
            row: 1,
            start: 1.0,
            end: 3.0,
            cause: Cause::Rto,
            without_rto: Cause::AppLimited,
            rto_rows: (3, 5),
        };
        let rt = [
            (2, 1.5, RTO),
            (3, 2.0, SPURIOUS),
            (5, 2.5, SPURIOUS),
            (6, 2.9, RTO),
        ];
        assert_eq!(cause(&st, &rt), Cause::AppLimited);
        let rt = [(3, 2.0, SPURIOUS), (5, 2.5, RTO)];
        assert_eq!(cause(&st, &rt), Cause::Rto);
    }

    #[test]
    fn a_later_dsack_turns_a_resend_spurious() {
        let p = |row: u32, win: i64| Pk {
            row,
            time: f64::from(row),
            seq: 0,
            len: 10,
            flags: 0x10,
            ack: 0,
            win,
            ts_val: 0,
            ts_ecr: 0,
            ttl: 0,
            mss: -1,
        };
        let mut a = Account::default();
        let rt = Verdict {
            retrans: Some((RTO, 0)),
            spurious_now: None,
        };
        a.on_packet(0, &p(3, 100), &rt);
        let ds = Verdict {
            retrans: None,
            spurious_now: Some((3, RTO)),
        };
        a.on_packet(1, &p(5, 0), &ds);
        let got = a.take(0, Vec::new()).told(None, f64::NAN);
        assert_eq!((got.rt.n, got.fast, got.rto), (1, 0, 0));
        assert_eq!(
            (got.zw_peer.n, got.zw_peer.t0, got.zw_peer.t1),
            (1, 5.0, 5.0)
        );
    }
}
