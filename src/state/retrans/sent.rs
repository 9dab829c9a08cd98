//! The log of what a direction has sent, by sequence start: what a retransmission is
//! compared with (its previous send at the same start, however old).

use std::collections::{HashMap, HashSet};

/// A sequence number this direction has sent: its latest packet (any packet starting there,
/// RFC 6298 §5.5 backoff counts from it), and whether a packet that may fill a hole started there.
#[derive(Clone, Copy)]
pub(super) struct Sent {
    pub row: u32,
    pub time: f64,
    pub filled: bool,
}

/// Entries per chunk of [`SentLog`]'s run (24 bytes each: ~96 KiB).
const CHUNK: usize = 4096;

/// The latest packet at each sequence number a direction has sent. Starts mostly rise (new
/// data, then pure ACKs at nextseq): those are appended to a sorted run (a write per packet, a
/// binary search per retransmission), kept in fixed chunks so that it grows without copying;
/// the others (re-sends, keep-alives) go to a map, whose entry is always the later one.
///
/// A streaming driver that knows beforehand which starts will be asked about (its first pass
/// runs `super::candidate`) sets `only`: then the log keeps those starts alone, in the map, and
/// holds one entry per re-sent start instead of one per segment; the answers are the same,
/// since [`SentLog::get`] is only called for a candidate's start.
#[derive(Default)]
pub(super) struct SentLog {
    run: Vec<Vec<(i64, Sent)>>,
    other: HashMap<i64, Sent>,
    pub only: Option<HashSet<i64>>,
}

impl SentLog {
    pub fn get(&self, seq: i64) -> Option<Sent> {
        if let Some(s) = self.other.get(&seq) {
            return Some(*s);
        }
        // the first chunk whose last start is at or above seq, then the entry in it
        let c = self
            .run
            .partition_point(|ch| ch.last().is_some_and(|e| e.0 < seq));
        let ch = self.run.get(c)?;
        let k = ch.partition_point(|e| e.0 < seq);
        ch.get(k).filter(|e| e.0 == seq).map(|e| e.1)
    }

    pub fn record(&mut self, seq: i64, row: u32, time: f64, fills: bool) {
        let new = |filled: bool| Sent {
            row,
            time,
            filled: filled || fills,
        };
        if let Some(only) = &self.only {
            if only.contains(&seq) {
                let filled = self.other.get(&seq).is_some_and(|s| s.filled);
                self.other.insert(seq, new(filled));
            }
            return;
        }
        match self.run.last_mut().and_then(|ch| ch.last_mut()) {
            Some(last) if last.0 == seq => last.1 = new(last.1.filled),
            Some(last) if last.0 > seq => {
                let filled = self.get(seq).is_some_and(|s| s.filled);
                self.other.insert(seq, new(filled));
            }
            _ => {
                if self.run.last().is_none_or(|ch| ch.len() == CHUNK) {
                    self.run.push(Vec::with_capacity(CHUNK));
                }
                if let Some(ch) = self.run.last_mut() {
                    ch.push((seq, new(false)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sent_log_finds_the_latest_packet_at_a_start_across_chunks() {
        let mut log = SentLog::default();
        for k in 0..(3 * CHUNK as i64 + 5) {
            log.record(10 * k, k as u32, k as f64, k % 2 == 0);
        }
        log.record(30, 900_000, 1e6, false); // a re-send of an old start: the map
        log.record(10 * CHUNK as i64 + 10, 900_001, 2e6, false);
        let at = |seq: i64| log.get(seq).map(|s| (s.row, s.filled));
        assert_eq!(at(0), Some((0, true)));
        assert_eq!(at(30), Some((900_000, false))); // k = 3 was odd: never filled
        assert_eq!(at(10 * CHUNK as i64 + 10), Some((900_001, false))); // k = CHUNK + 1: odd
        assert_eq!(at(10 * (CHUNK as i64 - 1)), Some((CHUNK as u32 - 1, false)));
        assert_eq!(
            at(10 * (3 * CHUNK as i64 + 4)),
            Some((3 * CHUNK as u32 + 4, true))
        );
        assert_eq!(at(15), None);
        assert_eq!(at(10 * (3 * CHUNK as i64 + 5)), None);
    }

    /// Kept to the starts it will be asked about, the log gives the same answers for them.
    #[test]
    fn a_log_kept_to_some_starts_answers_as_the_whole_one() {
        let only: HashSet<i64> = [0, 30, 70, 10 * CHUNK as i64 + 10].into_iter().collect();
        let (mut all, mut some) = (
            SentLog::default(),
            SentLog {
                only: Some(only.clone()),
                ..SentLog::default()
            },
        );
        let sends = (0..(2 * CHUNK as i64)).map(|k| (10 * k, k % 3 == 0));
        let resends = [(30, true), (70, false), (30, false), (0, false)];
        for (i, (seq, fills)) in sends.chain(resends).enumerate() {
            all.record(seq, i as u32, i as f64, fills);
            some.record(seq, i as u32, i as f64, fills);
        }
        for seq in only {
            let key = |s: Option<Sent>| s.map(|s| (s.row, s.time.to_bits(), s.filled));
            assert_eq!(key(all.get(seq)), key(some.get(seq)), "{seq}");
        }
        assert_eq!(some.other.len(), 4);
    }
}
