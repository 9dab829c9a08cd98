//! Timestamps that go backwards (`W-NONMONOTONIC`): how often, by how much at most, and where.
//!
//! A capture's records are kept in file order, as Wireshark and tcptrace keep them. A time below
//! the one before it is common in captures of fast links: a multi-queue NIC, or a veth pair,
//! stamps packets on several CPUs, and the capture ring delivers them out of order by
//! microseconds (big.pcap of `bench/make_capture.sh`: 61 steps of 1 µs in 1.3 million records);
//! merged or hand-edited files fall by seconds. A time measured across such a step (an RTT
//! sample, a gap, a bin) is off by up to the step, so the warning names the largest one and
//! its frame: the reader can tell a harmless jitter from a broken file.

use super::{commas, Warn};

/// The steps back among record times fed in file order.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeBack {
    /// Steps back so far.
    count: u64,
    /// The largest step back (ns) and the record after it (0-based).
    max_ns: i64,
    at: u64,
    /// The previous record's time and the records fed.
    last: Option<i64>,
    n: u64,
}

impl TimeBack {
    /// The next record's time (ns).
    #[inline]
    pub fn on(&mut self, t: i64) {
        if let Some(l) = self.last.filter(|&l| t < l) {
            self.count += 1;
            let d = l.saturating_sub(t);
            if d > self.max_ns {
                (self.max_ns, self.at) = (d, self.n);
            }
        }
        self.last = Some(t);
        self.n += 1;
    }

    /// Steps back so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The warning (None: no time went back), located at the frame (1-based, as Wireshark
    /// numbers them) whose time fell the most.
    pub fn warning(&self) -> Option<Warn> {
        (self.count > 0).then(|| {
            let frame = self.at + 1;
            let msg = format!(
                "timestamps go backwards (frame order kept); the largest step back is {}, at frame {}",
                step_text(self.max_ns),
                commas(frame)
            );
            Warn::new("W-NONMONOTONIC", msg, self.count).at(None, Some(frame))
        })
    }
}

/// A step in ns as people read it: `250 ns`, `1 µs`, `3.2 ms`, `1.5 s` (three significant digits,
/// trailing zeros dropped).
fn step_text(ns: i64) -> String {
    let ns = ns.max(0) as f64;
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(ts: &[i64]) -> TimeBack {
        let mut b = TimeBack::default();
        ts.iter().for_each(|&t| b.on(t));
        b
    }

    #[test]
    fn counts_steps_back_and_locates_the_largest() {
        // frames 3 (1 µs back) and 5 (2.5 ms back); equal times are no step back
        let b = fed(&[0, 5_000, 4_000, 4_000, 2_000_000, -500_000]);
        assert_eq!(b.count(), 2);
        let w = b.warning().expect("a warning");
        assert_eq!(w.code, "W-NONMONOTONIC");
        assert_eq!(w.count, 2);
        assert_eq!(w.frame, Some(6));
        assert_eq!(
            w.message,
            "timestamps go backwards (frame order kept); the largest step back is 2.5 ms, at frame 6"
        );
    }

    #[test]
    fn rising_times_give_no_warning() {
        assert!(fed(&[1, 2, 2, 3]).warning().is_none());
        assert!(fed(&[]).warning().is_none());
    }

    #[test]
    fn steps_read_in_their_unit() {
        assert_eq!(step_text(250), "250 ns");
        assert_eq!(step_text(1_000), "1 µs");
        assert_eq!(step_text(12_345), "12.3 µs");
        assert_eq!(step_text(3_200_000), "3.2 ms");
        assert_eq!(step_text(1_500_000_000), "1.5 s");
        assert_eq!(step_text(86_400_000_000_000), "86400 s");
    }
}
