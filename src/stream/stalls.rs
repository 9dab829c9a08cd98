//! The stalls stage of the stream: one connection's `stalls::Connection` fed every packet in
//! capture order, its silences judged as they close.
//!
//! The stall rules read two values of a whole direction (`stalls::Whole`): its largest
//! payload (the MSS the window checks add) and its smallest RTT sample (the threshold before
//! its first smoothed RTT); pass 1 settles them (`super::conn::Scout`), so each silence is
//! judged when it closes and only the stalls' times are kept, to be summed at the end in the
//! order of the `stalls` frame (by start time), which `flowstats::summary::Summary::on_stall`
//! folds. Memory per connection: 528 B (the state machine, O(1), and the whole-direction
//! values), a silence above 200 ms only until the packet that closes it, and 16 B per stall
//! (at most one per 200 ms of the direction's life), 40 B with its cause, kept for the
//! account (`super::account`).

use crate::state::flowstats::summary::Summary;
use crate::state::stalls::{self, Stall, Whole};
use std::cmp::Ordering;

/// The stalls state of one connection, by direction.
pub struct Stalls {
    conn: stalls::Connection,
    whole: [Whole; 2],
    /// The stalls found so far by direction (40 B each).
    found: [Vec<Stall>; 2],
}

impl Stalls {
    /// `whole`: what pass 1 settled of each direction.
    pub fn new(whole: [Whole; 2]) -> Stalls {
        Stalls {
            conn: stalls::Connection::default(),
            whole,
            found: [Vec::new(), Vec::new()],
        }
    }

    /// Packet `row` of direction `d` (its fields as `stalls::driver` reads the state columns).
    pub fn on_packet(&mut self, row: u32, d: usize, p: &stalls::Packet) {
        self.conn.on_packet(row, d, p);
        // (allocates only when a packet closes a silence above 200 ms)
        let mut out = Vec::new();
        self.conn.take_stalls(&self.whole, &mut out);
        self.keep(out);
    }

    fn keep(&mut self, out: Vec<Stall>) {
        for s in out {
            if let Some(v) = self.found.get_mut(usize::from(s.dir)) {
                v.push(s);
            }
        }
    }

    /// The last silences (a tail ended by the ACK of the last byte), then each direction's
    /// stalls to its accumulator: count and time, summed in the `stalls` frame's order
    /// (`tracekit.analysis.stalls` sorts by flow, direction and start; a stable sort here keeps
    /// the core's row order among equal starts). Returns each direction's stalls in that order
    /// (the account tells them: `tracekit.explain_rules.stalls`).
    pub fn finish(&mut self, sum: &mut [Summary; 2]) -> [Vec<Stall>; 2] {
        let mut out = Vec::new();
        std::mem::take(&mut self.conn).finish_whole(&self.whole, &mut out);
        self.keep(out);
        for (v, s) in self.found.iter_mut().zip(sum.iter_mut()) {
            v.sort_by(|a, b| a.start.partial_cmp(&b.start).unwrap_or(Ordering::Equal));
            for x in v.iter() {
                // (the frame's `duration`: end - start)
                s.on_stall(x.end - x.start);
            }
        }
        std::mem::take(&mut self.found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(time: f64, hi: i64) -> stalls::Packet {
        stalls::Packet {
            time,
            len: 100,
            hi_dend: Some(hi),
            win: Some(65535),
            ..Default::default()
        }
    }

    #[test]
    fn judged_as_they_close_equals_finish() {
        let ack = stalls::Packet {
            time: 4.0,
            ack: Some(400),
            new_ack: true,
            win: Some(65535),
            ..Default::default()
        };
        let pkts = [
            (0, data(0.0, 100)),
            (0, data(1.0, 200)),
            (0, data(1.1, 300)),
            (0, data(3.0, 400)),
            (1, ack),
        ];
        let whole = [
            Whole {
                mss: 100,
                floor: None,
            },
            Whole::NONE,
        ];
        let mut st = Stalls::new(whole);
        let mut frames = stalls::Connection::default();
        for (row, (d, p)) in pkts.iter().enumerate() {
            st.on_packet(row as u32, *d, p);
            frames.on_packet(row as u32, *d, p);
        }
        // closed silences are judged and dropped as the packets come; the tail at the end
        let ends: Vec<_> = st.found[0].iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(ends, vec![(0.0, 1.0), (1.1, 3.0)]);
        let mut want = Vec::new();
        frames.finish([None; 2], &mut want);
        let mut sum = [Summary::default(), Summary::default()];
        st.finish(&mut sum);
        let mut all = Summary::default();
        for s in &want {
            all.on_stall(s.end - s.start);
        }
        assert_eq!(want.len(), 3);
        assert_eq!((sum[0].stalls, sum[1].stalls), (3, 0));
        assert_eq!(sum[0].stall_time().to_bits(), all.stall_time().to_bits());
    }

    #[test]
    fn summed_in_start_order() {
        // a clock that steps back: the later stall starts earlier, and is summed first
        let mut st = Stalls::new([Whole::NONE; 2]);
        let at = |start: f64, end: f64| Stall {
            dir: 0,
            row: 0,
            start,
            end,
            cause: stalls::Cause::Unknown,
            without_rto: stalls::Cause::Unknown,
            rto_rows: (0, 0),
        };
        st.found[0] = vec![at(10.0, 10.5), at(1.0, 1.3)];
        let mut sum = [Summary::default(), Summary::default()];
        st.finish(&mut sum);
        let mut want = Summary::default();
        want.on_stall(1.3 - 1.0);
        want.on_stall(10.5 - 10.0);
        assert_eq!(sum[0].stall_time().to_bits(), want.stall_time().to_bits());
        assert_eq!(sum[0].stalls, 2);
    }
}
