//! Exact percentiles of values read twice, in memory bounded by where they lie rather than by
//! how many there are.
//!
//! polars' linear quantile (`summary::quantile`) reads the sorted values at two adjacent ranks
//! ([`place`]). A trace read twice can find those values without keeping every sample: the
//! first read counts the values per bucket ([`Counts`]: a bucket is the top 20 bits of the
//! float, sign, exponent and 8 mantissa bits, so 256 buckets per octave, each under 0.4 % wide),
//! which says which buckets hold the wanted ranks ([`Counts::plan`]); the second read keeps only
//! the values falling in those buckets, counted by value ([`Picked`]), and reads the ranks off
//! them. The answer is the value a full sort gives, bit for bit; the memory is the buckets
//! (a few thousand at most for RTTs) plus the distinct values of at most four buckets.

use std::collections::{BTreeMap, HashMap};

/// Bits dropped from a value to make its bucket.
const SHIFT: u32 = 44;

fn bucket(x: f64) -> u32 {
    (x.to_bits() >> SHIFT) as u32
}

/// polars' linear quantile of `n` sorted values: ranks `lo` and `hi` (`lo` or `lo + 1`) and
/// where between them (`at`, from `lo`): the value is `low + (at - lo)·(high - low)`.
pub fn place(n: usize, q: f64) -> Option<(usize, usize, f64)> {
    let last = n.checked_sub(1)?;
    let at = last as f64 * q;
    Some((at.floor() as usize, at.ceil() as usize, at))
}

/// The value at `at` between ranks `lo` (value `low`) and `lo + 1` (value `high`).
pub fn between(low: f64, high: f64, lo: usize, hi: usize, at: f64) -> f64 {
    if lo == hi {
        return low;
    }
    let p = at - lo as f64;
    p * (high - low) + low
}

/// First read: how many values above 0 (or at 0 too, [`Counts::from_zero`]) fell in each
/// bucket (others are not counted).
#[derive(Clone, Debug, Default)]
pub struct Counts {
    by: HashMap<u32, u64>,
    n: u64,
    zero: bool,
}

impl Counts {
    /// Counts that take values at 0 too (0 is a bucket of its own, below all others).
    pub fn from_zero() -> Counts {
        Counts {
            zero: true,
            ..Counts::default()
        }
    }

    pub fn add(&mut self, x: f64) {
        if x > 0.0 || (self.zero && x == 0.0) {
            *self.by.entry(bucket(x)).or_default() += 1;
            self.n += 1;
        }
    }

    /// What the second read keeps to find the values at the ranks [`place`] gives for `qs`.
    pub fn plan(&self, qs: &[f64]) -> Picked {
        let n = usize::try_from(self.n).unwrap_or(usize::MAX);
        let mut ranks: Vec<usize> = qs
            .iter()
            .filter_map(|&q| place(n, q))
            .flat_map(|(lo, hi, _)| [lo, hi])
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        let mut keys: Vec<(u32, u64)> = self.by.iter().map(|(&k, &c)| (k, c)).collect();
        keys.sort_unstable();
        // each rank's bucket and the count of values in the buckets below it
        let (mut want, mut before, mut k) = (Vec::new(), 0u64, 0usize);
        for r in ranks {
            while let Some(&(b, c)) = keys.get(k) {
                if (r as u64) < before + c {
                    want.push((r, b, before));
                    break;
                }
                before += c;
                k += 1;
            }
        }
        Picked {
            want,
            kept: BTreeMap::new(),
            n,
            zero: self.zero,
        }
    }
}

/// Second read: the values in the wanted buckets, by value (bits) with their count.
#[derive(Clone, Debug, Default)]
pub struct Picked {
    /// (rank, its bucket, values in the buckets below it), by rank.
    want: Vec<(usize, u32, u64)>,
    kept: BTreeMap<u64, u64>,
    /// The first read's count, and whether it took values at 0.
    n: usize,
    zero: bool,
}

impl Picked {
    pub fn add(&mut self, x: f64) {
        let counted = x > 0.0 || (self.zero && x == 0.0);
        if counted && self.want.iter().any(|w| w.1 == bucket(x)) {
            *self.kept.entry(x.to_bits()).or_default() += 1;
        }
    }

    /// The value at `rank` of the sorted values (NaN: a rank the plan did not ask for, or a
    /// second read that did not give the first read's values).
    pub fn at(&self, rank: usize) -> f64 {
        let Some(&(_, b, before)) = self.want.iter().find(|w| w.0 == rank) else {
            return f64::NAN;
        };
        let lo = u64::from(b) << SHIFT;
        let mut seen = before;
        for (&bits, &c) in self.kept.range(lo..lo + (1 << SHIFT)) {
            seen += c;
            if (rank as u64) < seen {
                return f64::from_bits(bits);
            }
        }
        f64::NAN
    }

    /// polars' linear quantile `q` of the first read's values, for a `q` the plan asked for
    /// (None: no value).
    pub fn value(&self, q: f64) -> Option<f64> {
        (self.n > 0).then(|| self.quantile(self.n, q))
    }

    /// polars' linear quantile `q` of the `n` values (NaN: none).
    pub fn quantile(&self, n: usize, q: f64) -> f64 {
        place(n, q).map_or(f64::NAN, |(lo, hi, at)| {
            between(self.at(lo), self.at(hi), lo, hi, at)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::flowstats::summary::quantile;

    /// Two reads give the quantiles a full sort gives, bit for bit, on values with repeats,
    /// a narrow cluster and a long tail.
    #[test]
    fn two_reads_equal_a_sort() {
        let mut v: Vec<f64> = (0..5000u32)
            .map(|i| {
                let x = f64::from(i.wrapping_mul(2_654_435_761) % 10_007);
                0.010 + x * 1e-7 + if i % 97 == 0 { 0.5 } else { 0.0 }
            })
            .chain([0.0, 0.0, 0.02, 0.02, 0.02])
            .collect();
        for q in [0.0, 0.5, 0.95, 1.0] {
            let mut c = Counts::default();
            v.iter().for_each(|&x| c.add(x));
            let mut p = c.plan(&[q]);
            v.iter().for_each(|&x| p.add(x));
            let mut pos: Vec<f64> = v.iter().copied().filter(|&x| x > 0.0).collect();
            assert_eq!(
                p.quantile(pos.len(), q).to_bits(),
                quantile(&mut pos, q).to_bits()
            );
        }
        v.clear();
        let c = Counts::default();
        assert!(c.plan(&[0.5]).quantile(0, 0.5).is_nan());
    }

    /// Counted from 0, zeros are values like the others (the vantage point's median).
    #[test]
    fn zeros_count_when_asked() {
        let v = [0.0, 0.0, 0.0, 0.3, 0.1];
        let mut c = Counts::from_zero();
        v.iter().for_each(|&x| c.add(x));
        let mut p = c.plan(&[0.5]);
        v.iter().for_each(|&x| p.add(x));
        assert_eq!(p.value(0.5), Some(0.0));
        let mut c = Counts::default();
        v.iter().for_each(|&x| c.add(x));
        let mut p = c.plan(&[0.5]);
        v.iter().for_each(|&x| p.add(x));
        assert_eq!(p.value(0.5), Some(0.2));
        assert_eq!(Counts::from_zero().plan(&[0.5]).value(0.5), None);
    }

    /// One value repeated keeps one entry, however many times it comes.
    #[test]
    fn repeats_are_counted_not_kept() {
        let mut c = Counts::default();
        (0..100_000).for_each(|_| c.add(0.04));
        let mut p = c.plan(&[0.5, 0.95]);
        (0..100_000).for_each(|_| p.add(0.04));
        assert_eq!(p.kept.len(), 1);
        assert_eq!(p.quantile(100_000, 0.95), 0.04);
    }
}
