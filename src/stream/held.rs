//! The capture order of the packets the cwnd stage is fed live (`cwndlive`): how far a
//! connection's capture times fall (pass 1, [`Order`]), and the packets pass 2 holds that long
//! ([`Held`] in a [`Queue`]) so that the rows see the order `rows_frames` sorts by (time, then
//! frame).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// How far a connection's capture times fall below the latest before them (pass 1): pass 2
/// holds each packet that long before feeding it, so the rows see the capture order
/// `rows_frames` sorts by (time, then frame). A NaN or infinite time sorts where no bound
/// tells ([`Order::lag`] is None): such a batch is logged and sorted as before.
#[derive(Clone, Copy, Debug, Default)]
pub struct Order {
    top: Option<f64>,
    fall: f64,
    odd: bool,
}

impl Order {
    pub fn on_time(&mut self, t: f64) {
        if !t.is_finite() {
            self.odd = true;
            return;
        }
        if let Some(top) = self.top {
            self.fall = self.fall.max(top - t);
        }
        self.top = Some(self.top.map_or(t, |x| x.max(t)));
    }

    /// The largest fall (0: times never fall; None: a time is NaN or infinite).
    pub fn lag(&self) -> Option<f64> {
        (!self.odd).then_some(self.fall)
    }
}

/// One packet waiting for the capture order: its direction, time, row, sequence and ACK
/// numbers, payload, SYN and ACK kinds, and what the retransmission and flight steps said of it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Held {
    pub(super) d: u8,
    pub(super) syn: bool,
    pub(super) ack: bool,
    pub(super) named: bool,
    /// The first re-send of its episode: whether the timer sent the episode so far.
    pub(super) to: Option<bool>,
    /// A SYN's MSS option (-1: none).
    pub(super) mss: i32,
    pub(super) time: f64,
    pub(super) row: u32,
    pub(super) seq: i64,
    pub(super) len: i64,
    pub(super) ackno: i64,
    pub(super) sacked: i64,
}

/// Capture order (`rows_frames::capture`): time, then frame (the packet row). Held times are
/// finite ([`Order::lag`]), so the comparison is total.
impl Ord for Held {
    fn cmp(&self, o: &Self) -> Ordering {
        let t = self.time.partial_cmp(&o.time).unwrap_or(Ordering::Equal);
        t.then(self.row.cmp(&o.row))
    }
}

impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Held {}

/// Held packets, earliest in capture order first. Packets come in capture order but for the few
/// whose time falls (pass 1 measures by how much: [`Order::lag`]), so those in order go to a
/// deque (a push at the back, a pop at the front) and only a packet earlier than the deque's
/// last goes to a heap: a binary heap for all of them paid a sift each way on every packet
/// (5.5 % of the stream's samples on big.pcap), and a deque sorted by insertion alone would be
/// quadratic on a capture whose times keep falling (hostile input). The earlier of the two
/// heads is fed first.
pub(super) struct Queue {
    run: VecDeque<Held>,
    late: BinaryHeap<Reverse<Held>>,
}

impl Queue {
    pub(super) fn with_capacity(n: usize) -> Self {
        Queue {
            run: VecDeque::with_capacity(n),
            late: BinaryHeap::new(),
        }
    }

    pub(super) fn push(&mut self, h: Held) {
        if self.run.back().is_none_or(|b| *b <= h) {
            self.run.push_back(h);
        } else {
            self.late.push(Reverse(h));
        }
    }

    /// The earliest held packet.
    pub(super) fn first(&self) -> Option<Held> {
        if self.late_first() {
            self.late.peek().map(|x| x.0)
        } else {
            self.run.front().copied()
        }
    }

    /// Takes the earliest held packet.
    pub(super) fn pop(&mut self) -> Option<Held> {
        if self.late_first() {
            self.late.pop().map(|x| x.0)
        } else {
            self.run.pop_front()
        }
    }

    /// The heap's head comes before the deque's (or the deque is empty and the heap is not).
    fn late_first(&self) -> bool {
        match (self.run.front(), self.late.peek()) {
            (Some(a), Some(Reverse(b))) => b < a,
            (None, Some(_)) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_measures_the_largest_fall() {
        let mut o = Order::default();
        [1.0, 3.0, 2.5, 4.0, 3.75]
            .iter()
            .for_each(|&t| o.on_time(t));
        assert_eq!(o.lag(), Some(0.5));
        o.on_time(f64::NAN);
        assert_eq!(o.lag(), None);
    }

    #[test]
    fn the_queue_gives_capture_order_whatever_the_arrival() {
        let held = |row: u32, time: f64| Held {
            d: 0,
            syn: false,
            ack: false,
            named: false,
            to: None,
            mss: -1,
            time,
            row,
            seq: 0,
            len: 0,
            ackno: 0,
            sacked: 0,
        };
        let n = 1000u32;
        let in_order: Vec<f64> = (0..n).map(f64::from).collect();
        let falling: Vec<f64> = (0..n).map(|k| f64::from(n - k)).collect();
        // each packet lands in the middle of those held (a sorted insertion's worst case)
        let zigzag: Vec<f64> = (0..n)
            .map(|k| f64::from(if k % 2 == 0 { k / 2 } else { n - k / 2 }))
            .collect();
        let ties = vec![1.0; n as usize]; // (equal times: the frame decides)
        for times in [in_order, falling, zigzag, ties] {
            let mut q = Queue::with_capacity(4);
            let mut want: Vec<(f64, u32)> = Vec::new();
            for (row, &t) in times.iter().enumerate() {
                q.push(held(row as u32, t));
                want.push((t, row as u32));
                if row % 7 == 6 {
                    // a pop now and then, as `Live` feeds while packets still come
                    let first = q.first();
                    let x = q.pop().expect("held");
                    assert_eq!(first.map(|f| (f.time, f.row)), Some((x.time, x.row)));
                    let k = want
                        .iter()
                        .enumerate()
                        .min_by(|a, b| a.1.partial_cmp(b.1).unwrap_or(Ordering::Equal))
                        .map(|(k, _)| k)
                        .expect("held");
                    assert_eq!(want.remove(k), (x.time, x.row));
                }
            }
            want.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
            let mut got = Vec::new();
            while let Some(x) = q.pop() {
                got.push((x.time, x.row));
            }
            assert_eq!(got, want);
            assert!(q.first().is_none());
        }
    }
}
