//! What a streaming driver's first pass learns of a connection's later look-ups, so that the
//! second pass keeps of each per-retransmission map only the entries a later packet can still
//! ask for (every answer the one keeping everything gives).

/// Sequence starts a direction's later packets will look up, each with how many look-ups
/// remain: sorted, with a cursor for the starts that rise from packet to packet (new data),
/// a binary search for the others. Built from every look-up's start, in any order.
#[derive(Clone, Debug, Default)]
pub struct Uses {
    starts: Vec<i64>,
    left: Vec<u32>,
    /// Where the last start searched for lies (`starts.partition_point(|&x| x < seq)`).
    cursor: usize,
}

impl Uses {
    /// The starts of every look-up to come (a start once per look-up).
    pub fn new(mut asks: Vec<i64>) -> Uses {
        asks.sort_unstable();
        let (mut starts, mut left) = (Vec::new(), Vec::new());
        for x in asks {
            match (starts.last(), left.last_mut()) {
                (Some(&s), Some(n)) if s == x => *n += 1,
                _ => {
                    starts.push(x);
                    left.push(1u32);
                }
            }
        }
        starts.shrink_to_fit();
        left.shrink_to_fit();
        Uses {
            starts,
            left,
            cursor: 0,
        }
    }

    /// The index of `seq` among the starts, if it is one.
    fn find(&mut self, seq: i64) -> Option<usize> {
        let s = &self.starts;
        let at = |k: usize| (k == 0 || s[k - 1] < seq) && s.get(k).is_none_or(|&x| x >= seq);
        let c = self.cursor;
        let k = if c <= s.len() && at(c) {
            c
        } else if c < s.len() && at(c + 1) {
            c + 1
        } else {
            s.partition_point(|&x| x < seq)
        };
        self.cursor = k;
        (s.get(k) == Some(&seq)).then_some(k)
    }

    /// Whether a later look-up will ask for `seq`.
    pub fn wanted(&mut self, seq: i64) -> bool {
        self.find(seq).is_some_and(|k| self.left[k] > 0)
    }

    /// One look-up of `seq` made: true when it was the last one (its entry can go).
    pub fn asked(&mut self, seq: i64) -> bool {
        match self.find(seq) {
            Some(k) if self.left[k] > 0 => {
                self.left[k] -= 1;
                self.left[k] == 0
            }
            _ => false,
        }
    }

    /// Distinct starts still to be asked for.
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.left.iter().filter(|&&n| n > 0).count()
    }
}

/// Whether capture time `t` falls below the `prev` one before it (a NaN either side falls:
/// no order holds); [`Bounds::rising_from`] is the last packet that does.
pub fn falls(prev: f64, t: f64) -> bool {
    t.partial_cmp(&prev).is_none_or(std::cmp::Ordering::is_lt)
}

/// What pass 1 settles for a connection's retransmission state, by direction.
#[derive(Clone, Debug, Default)]
pub struct Bounds {
    /// The starts of the direction's retransmission candidates (`super::candidate`), once per
    /// candidate: the only starts its sent log is asked about, and how often.
    pub resent: [Uses; 2],
    /// The left edges of the D-SACK blocks (`super::dsack_block`) the other direction reports,
    /// once per block: the only starts of this direction's re-sends a D-SACK can turn spurious
    /// (None: not known, keep every re-send).
    pub dsacked: Option<[Uses; 2]>,
    /// From this row on, the direction's capture times never fall (each packet's time at or
    /// above the one before it): where its out-of-order holes can be dropped for good.
    pub rising_from: [u32; 2],
}

impl super::Sender {
    /// Drops the holes no later packet can take for out-of-order (with [`super::Conn::bounded`]).
    /// Wireshark's rule (packet-tcp.c, `judge`): the first segment into a hole is out of order
    /// while `p.time - h_time < ooo_s`. From `rising_from` on, every later packet of the
    /// direction comes at `p.time` or after (no NaN), and a rounded difference only grows with
    /// its first term, so a hole with `!(p.time - h_time < ooo_s)` now never passes again.
    /// Only the lowest holes go: holes open at `nxt`, which never falls (`seq::Flow::step`
    /// raises it), so every hole kept lies above every hole dropped, and a look-up (the
    /// highest hole at or below the start) that found a dropped hole finds none instead,
    /// which is the same answer (a hole that does not pass).
    pub(super) fn prune_holes(&mut self, p: &super::Pkt, ooo_s: f64) {
        if self.rising_from.is_none_or(|r| p.row < r) || p.time.is_nan() {
            return;
        }
        while let Some(h) = self.holes.first_entry() {
            if p.time - h.get().1 < ooo_s {
                break;
            }
            h.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_count_the_look_ups_of_each_start_in_any_order() {
        let mut u = Uses::new(vec![30, 10, 30, 50, 30]);
        assert_eq!(u.live(), 3);
        // rising starts walk the cursor; a re-send goes back
        for s in [0, 5, 10, 20, 30, 40, 50, 60] {
            assert_eq!(u.wanted(s), [10, 30, 50].contains(&s), "{s}");
        }
        assert!(u.wanted(10)); // back again
        assert!(!u.asked(30));
        assert!(!u.asked(30));
        assert!(u.asked(30)); // the third and last
        assert!(!u.wanted(30));
        assert!(!u.asked(30)); // (one more than counted: nothing to drop)
        assert!(u.asked(50) && u.asked(10));
        assert_eq!(u.live(), 0);
        assert!(!u.wanted(99) && !u.wanted(-5));
        let mut none = Uses::default();
        assert!(!none.wanted(0) && !none.asked(0));
    }
}
