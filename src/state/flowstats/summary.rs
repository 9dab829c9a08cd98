//! Per direction, the flows table's summaries of the other analyses' rows: the RTT samples
//! (min, mean, median, 95th percentile, count and method), the retransmissions (count, bytes
//! and kinds), the bytes in flight (max, mean) and the stalls (count, time).
//!
//! One accumulator per direction ([`Summary`]) fed each frame's rows in their order. The
//! aggregates are polars' (which this replaces), so the numbers stay bit-identical: a float sum
//! is a Kahan sum in row order without the final correction (`polars_utils::KahanSum`, what a
//! polars group-by `sum`/`mean` folds), a mean is that sum ÷ the count, and a percentile is
//! polars' `quantile(q, "linear")` (`median` = the 0.5 one): the sorted values at
//! `(n − 1)·q`, interpolated between the two around it.

use super::ranks::{self, Counts, Picked};
use super::MISSING;
use crate::state::slots::Slots;
use rayon::prelude::*;

/// polars' `KahanSum`: compensated, the correction never added back at the end; a value that is
/// not finite is added plainly.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kahan {
    sum: f64,
    err: f64,
    n: i64,
    /// The only value so far (a group of one is that value itself in polars).
    first: f64,
}

impl Kahan {
    pub fn add(&mut self, x: f64) {
        if self.n == 0 {
            self.first = x;
        }
        self.n += 1;
        if x.is_finite() {
            let y = x - self.err;
            let s = self.sum + y;
            self.err = (s - self.sum) - y;
            self.sum = s;
        } else {
            self.sum += x;
        }
    }

    /// The sum (0 for none).
    pub fn sum(&self) -> f64 {
        if self.n == 1 {
            self.first
        } else {
            self.sum
        }
    }

    /// The mean (NaN for none).
    pub fn mean(&self) -> f64 {
        match self.n {
            0 => f64::NAN,
            1 => self.first,
            n => self.sum / n as f64,
        }
    }
}

/// polars' linear quantile (none: NaN): the values at `(n − 1)·q`, interpolated between the
/// two around it; found by selection (`v` is reordered), not a full sort.
pub fn quantile(v: &mut [f64], q: f64) -> f64 {
    let Some((lo, hi, at)) = ranks::place(v.len(), q) else {
        return f64::NAN;
    };
    let (_, &mut low, above) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let high = above.iter().copied().fold(f64::INFINITY, f64::min);
    ranks::between(low, high, lo, hi, at)
}

/// The RTT columns of one direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RttRow {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub n: i64,
    /// The `seq` samples (else the `ts` ones).
    pub seq: bool,
}

/// A retransmission's kind (`src/state/retrans.rs`), as the flows table counts it.
pub const FAST: u8 = 1;
pub const RTO: u8 = 2;
pub const SPURIOUS: u8 = 3;

/// One direction's accumulator.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// RTT samples above 0 by method: a sample of 0 s (the same timestamp) says nothing about
    /// the path; the sequence-number samples (Karn's rule, RFC 6298 section 3) are used when
    /// there are any, the timestamp ones (RFC 7323 section 4) otherwise.
    rtt_seq: Vec<f64>,
    rtt_ts: Vec<f64>,
    pub retrans: i64,
    pub retrans_bytes: i64,
    /// By kind: fast, rto, spurious.
    pub kinds: [i64; 3],
    pub flight_max: i64,
    flight: Kahan,
    pub stalls: i64,
    stall_time: Kahan,
    /// Set by a driver that read the trace before ([`Summary::picking`]): the samples are not
    /// kept, only their running min and sum and the values at the percentiles' ranks.
    picked: Option<Box<Pick>>,
}

/// The RTT columns of a direction whose trace was read before (see [`super::ranks`]).
#[derive(Clone, Debug)]
struct Pick {
    /// The method whose samples count (the first read found a `seq` sample above 0 or not).
    seq: bool,
    ranks: Picked,
    sum: Kahan,
    min: f64,
}

impl Summary {
    /// The accumulator of a direction whose samples a first read counted (`counts`: of the
    /// `seq` samples when it found one above 0, else of the `ts` ones): the same RTT columns
    /// as keeping every sample, in memory bounded by the values' spread (`ranks`).
    pub fn picking(seq: bool, counts: &Counts) -> Summary {
        Summary {
            picked: Some(Box::new(Pick {
                seq,
                ranks: counts.plan(&[0.5, 0.95]),
                sum: Kahan::default(),
                min: f64::INFINITY,
            })),
            ..Summary::default()
        }
    }

    /// An RTT sample (`seq`: from the sequence numbers, else from timestamps).
    pub fn on_rtt(&mut self, rtt_s: f64, seq: bool) {
        if let Some(p) = self.picked.as_deref_mut() {
            if rtt_s > 0.0 && seq == p.seq {
                p.sum.add(rtt_s);
                p.min = p.min.min(rtt_s);
                p.ranks.add(rtt_s);
            }
            return;
        }
        if rtt_s > 0.0 {
            if seq {
                &mut self.rtt_seq
            } else {
                &mut self.rtt_ts
            }
            .push(rtt_s);
        }
    }

    /// A retransmission: `bytes` of it had been sent before (Wireshark's retransmission, only
    /// the part below the highest byte sent counts as re-sent), `kind` one of [`FAST`],
    /// [`RTO`], [`SPURIOUS`] (anything else: counted in no kind).
    pub fn on_retrans(&mut self, bytes: i64, kind: u8) {
        self.retrans += 1;
        self.retrans_bytes += bytes;
        match kind {
            FAST => self.kinds[0] += 1,
            RTO => self.kinds[1] += 1,
            SPURIOUS => self.kinds[2] += 1,
            _ => {}
        }
    }

    /// An earlier retransmission of kind `was` turned spurious (a later D-SACK, RFC 2883).
    pub fn now_spurious(&mut self, was: u8) {
        let k = match was {
            FAST => 0,
            RTO => 1,
            _ => return,
        };
        self.kinds[k] -= 1;
        self.kinds[2] += 1;
    }

    /// A data segment's bytes in flight ([`MISSING`]: unknown, left out).
    pub fn on_flight(&mut self, bytes: i64) {
        if bytes != MISSING {
            self.flight_max = if self.flight.n == 0 {
                bytes
            } else {
                self.flight_max.max(bytes)
            };
            self.flight.add(bytes as f64);
        }
    }

    /// A stall interval of `duration` seconds.
    pub fn on_stall(&mut self, duration: f64) {
        self.stalls += 1;
        self.stall_time.add(duration);
    }

    /// Takes the flight values of `other` (the same direction's, fed separately).
    pub fn take_flight(&mut self, other: &Summary) {
        self.flight_max = other.flight_max;
        self.flight = other.flight;
    }

    /// The RTT columns (None: no sample above 0).
    pub fn rtt(&mut self) -> Option<RttRow> {
        if let Some(p) = self.picked.as_deref() {
            let n = usize::try_from(p.sum.n).ok().filter(|&n| n > 0)?;
            return Some(RttRow {
                min: p.min,
                mean: p.sum.mean(),
                p50: p.ranks.quantile(n, 0.5),
                p95: p.ranks.quantile(n, 0.95),
                n: p.sum.n,
                seq: p.seq,
            });
        }
        let seq = !self.rtt_seq.is_empty();
        let v = if seq {
            &mut self.rtt_seq
        } else {
            &mut self.rtt_ts
        };
        if v.is_empty() {
            return None;
        }
        let mut sum = Kahan::default();
        let mut min = f64::INFINITY;
        for &x in v.iter() {
            sum.add(x);
            min = min.min(x);
        }
        Some(RttRow {
            min,
            mean: sum.mean(),
            p50: quantile(v, 0.5),
            p95: quantile(v, 0.95),
            n: v.len() as i64,
            seq,
        })
    }

    /// The least RTT sample of [`Summary::rtt`]'s (None: no sample), without reading the others.
    pub fn rtt_min(&self) -> Option<f64> {
        if let Some(p) = self.picked.as_deref() {
            return (p.sum.n > 0).then_some(p.min);
        }
        let v = if self.rtt_seq.is_empty() {
            &self.rtt_ts
        } else {
            &self.rtt_seq
        };
        (!v.is_empty()).then(|| v.iter().fold(f64::INFINITY, |m, &x| m.min(x)))
    }

    /// Max and mean bytes in flight (None: no value).
    pub fn flight(&self) -> Option<(i64, f64)> {
        (self.flight.n > 0).then(|| (self.flight_max, self.flight.mean()))
    }

    /// The stalls' total time (0 s without one).
    pub fn stall_time(&self) -> f64 {
        self.stall_time.sum()
    }
}

/// One frame's rows: each row's connection id and direction (0 or 1).
#[derive(Clone, Copy)]
pub struct Keys<'a> {
    pub flow: &'a [u32],
    pub dir: &'a [i8],
}

/// The rows of the four frames, each a [`Keys`] and its value columns.
pub struct Inputs<'a> {
    pub rtt: Keys<'a>,
    pub rtt_s: &'a [f64],
    pub rtt_seq: &'a [bool],
    pub rt: Keys<'a>,
    pub rt_bytes: &'a [i64],
    pub rt_kind: &'a [u8],
    pub fl: Keys<'a>,
    pub fl_bytes: &'a [i64],
    pub st: Keys<'a>,
    pub st_dur: &'a [f64],
}

/// Per direction seen in any frame (ascending key), the summary columns.
#[derive(Debug, Default)]
pub struct Columns {
    /// `2·flow + dir`.
    pub key: Vec<u64>,
    /// RTT: count 0 for none (then the floats are NaN).
    pub rtt_n: Vec<i64>,
    pub rtt_seq: Vec<bool>,
    pub rtt: [Vec<f64>; 4],
    pub retrans: [Vec<i64>; 5],
    /// [`MISSING`] / NaN: no flight value.
    pub flight_max: Vec<i64>,
    pub flight_mean: Vec<f64>,
    pub stalls: Vec<i64>,
    pub stall_time: Vec<f64>,
}

/// The accumulators by direction key (`2 · flow + dir`).
type Table = Slots<Summary>;

/// An empty table for the direction keys of `frames`.
fn table(frames: &[Keys]) -> Table {
    let rows: usize = frames.iter().map(|k| k.flow.len()).sum();
    let max = frames.iter().flat_map(|k| k.flow.iter().copied()).max();
    Slots::new(max.map(|f| 2 * u64::from(f) + 1), rows)
}

/// Feeds each row `i` of a frame to its direction's accumulator.
fn feed(
    t: &mut Table,
    k: Keys,
    what: &str,
    mut f: impl FnMut(&mut Summary, usize),
) -> Result<(), String> {
    if k.dir.len() != k.flow.len() {
        return Err(format!("flow_summary: {what} columns of different lengths"));
    }
    for (i, (&flow, &dir)) in k.flow.iter().zip(k.dir).enumerate() {
        if dir != 0 && dir != 1 {
            return Err(format!("flow_summary: {what} row {i} has direction {dir}"));
        }
        f(t.get(2 * u64::from(flow) + dir as u64), i);
    }
    Ok(())
}

fn same_len(n: usize, b: &[usize], what: &str) -> Result<(), String> {
    if b.iter().any(|&l| l != n) {
        return Err(format!("flow_summary: {what} columns of different lengths"));
    }
    Ok(())
}

/// Feeds every row to its direction's [`Summary`] and collects the columns.
pub fn flow_summary(r: &Inputs) -> Result<Columns, String> {
    same_len(r.rtt.flow.len(), &[r.rtt_s.len(), r.rtt_seq.len()], "rtt")?;
    same_len(
        r.rt.flow.len(),
        &[r.rt_bytes.len(), r.rt_kind.len()],
        "retrans",
    )?;
    same_len(r.fl.flow.len(), &[r.fl_bytes.len()], "flight")?;
    same_len(r.st.flow.len(), &[r.st_dur.len()], "stalls")?;
    // the flight rows (one per data segment: the most) on one thread, the others on another
    let (a, b) = rayon::join(
        || -> Result<Table, String> {
            let mut t = table(&[r.rtt, r.rt, r.st]);
            feed(&mut t, r.rtt, "rtt", |s, i| {
                s.on_rtt(r.rtt_s[i], r.rtt_seq[i])
            })?;
            feed(&mut t, r.rt, "retrans", |s, i| {
                s.on_retrans(r.rt_bytes[i], r.rt_kind[i])
            })?;
            feed(&mut t, r.st, "stalls", |s, i| s.on_stall(r.st_dur[i]))?;
            Ok(t)
        },
        || -> Result<Table, String> {
            let mut t = table(&[r.fl]);
            feed(&mut t, r.fl, "flight", |s, i| s.on_flight(r.fl_bytes[i]))?;
            Ok(t)
        },
    );
    let (mut t, fl) = (a?, b?);
    for (k, f) in fl.keys.into_iter().zip(fl.items) {
        t.get(k).take_flight(&f);
    }
    let mut dirs: Vec<(u64, Summary)> = t.keys.into_iter().zip(t.items).collect();
    dirs.sort_unstable_by_key(|d| d.0);
    // the percentiles' selections, a direction per task
    let rtts: Vec<Option<RttRow>> = dirs.par_iter_mut().map(|(_, s)| s.rtt()).collect();
    let mut o = Columns::default();
    for ((k, s), rt) in dirs.into_iter().zip(rtts) {
        o.key.push(k);
        o.rtt_n.push(rt.map_or(0, |x| x.n));
        o.rtt_seq.push(rt.is_some_and(|x| x.seq));
        let f = rt.map_or([f64::NAN; 4], |x| [x.min, x.mean, x.p50, x.p95]);
        o.rtt.iter_mut().zip(f).for_each(|(c, v)| c.push(v));
        let n = [
            s.retrans,
            s.retrans_bytes,
            s.kinds[0],
            s.kinds[1],
            s.kinds[2],
        ];
        o.retrans.iter_mut().zip(n).for_each(|(c, v)| c.push(v));
        let (fmax, fmean) = s.flight().unwrap_or((MISSING, f64::NAN));
        o.flight_max.push(fmax);
        o.flight_mean.push(fmean);
        o.stalls.push(s.stalls);
        o.stall_time.push(s.stall_time());
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kahan_is_polars_fold() {
        let mut k = Kahan::default();
        assert!(k.mean().is_nan());
        assert_eq!(k.sum(), 0.0);
        for x in [0.1, 0.2, 0.3] {
            k.add(x);
        }
        // compensated: 0.1 + 0.2 + 0.3 summed plainly is 0.6000000000000001
        assert_eq!(k.sum(), 0.6);
        let mut one = Kahan::default();
        one.add(-0.0);
        assert!(one.sum().is_sign_negative());
    }

    #[test]
    fn quantiles_interpolate_linearly() {
        let mut v = [8.0, 2.0, 4.0, 1.0];
        assert_eq!(quantile(&mut v, 0.5), 3.0); // between 2 and 4
        assert_eq!(quantile(&mut v, 0.95), 7.399999999999999); // polars 2.1: 7.399999999999999
        assert_eq!(quantile(&mut [5.0], 0.95), 5.0);
        assert!(quantile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn rtt_prefers_seq_samples_above_zero() {
        let mut s = Summary::default();
        s.on_rtt(0.0, true); // a zero sample says nothing
        s.on_rtt(0.3, false);
        assert!(!s.clone().rtt().unwrap().seq);
        s.on_rtt(0.2, true);
        s.on_rtt(0.1, true);
        let r = s.rtt().unwrap();
        assert!(r.seq);
        assert_eq!((r.n, r.min, r.p50), (2, 0.1, 0.15000000000000002));
    }

    #[test]
    fn counts_and_directions() {
        let k = |flow, dir| Keys { flow, dir };
        let r = Inputs {
            rtt: k(&[1], &[1]),
            rtt_s: &[0.5],
            rtt_seq: &[false],
            rt: k(&[0, 0, 0], &[0, 0, 0]),
            rt_bytes: &[100, 0, 50],
            rt_kind: &[FAST, SPURIOUS, 0],
            fl: k(&[0, 0, 0], &[0, 0, 0]),
            fl_bytes: &[10, MISSING, 20],
            st: k(&[1], &[0]),
            st_dur: &[1.5],
        };
        let o = flow_summary(&r).unwrap();
        assert_eq!(o.key, vec![0, 2, 3]);
        assert_eq!(o.rtt_n, vec![0, 0, 1]);
        assert_eq!(o.retrans[0], vec![3, 0, 0]);
        assert_eq!(o.retrans[1], vec![150, 0, 0]);
        assert_eq!(
            (o.retrans[2][0], o.retrans[3][0], o.retrans[4][0]),
            (1, 0, 1)
        );
        assert_eq!((o.flight_max[0], o.flight_mean[0]), (20, 15.0));
        assert_eq!(o.flight_max[1], MISSING);
        assert_eq!(
            (o.stalls[1], o.stall_time[1], o.stall_time[0]),
            (1, 1.5, 0.0)
        );
        let bad = Inputs { rt_kind: &[], ..r };
        assert!(flow_summary(&bad).is_err());
        let bad = Inputs {
            st: k(&[1], &[2]),
            ..r
        };
        assert!(flow_summary(&bad).unwrap_err().contains("direction 2"));
        let far = Inputs {
            st: k(&[u32::MAX], &[1]),
            ..r
        };
        assert_eq!(
            *flow_summary(&far).unwrap().key.last().unwrap(),
            2 * u64::from(u32::MAX) + 1
        );
    }
}
