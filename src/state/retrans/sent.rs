//! The log of what a direction has sent, by sequence start: what a retransmission is
//! compared with (its previous send at the same start, however old).

use super::bounds::Uses;
use std::collections::HashMap;

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
/// A streaming driver that knows beforehand which starts will be asked about, and how often
/// (its first pass runs `super::candidate`), sets `only`: then the log keeps those starts
/// alone, in the map, each from its first send to its last look-up ([`SentLog::asked`]), and
/// holds one entry per re-sent start still to be asked for instead of one per segment; the
/// answers are the same, since [`SentLog::get`] is only called for a candidate's start.
#[derive(Default)]
pub(super) struct SentLog {
    run: Vec<Vec<(i64, Sent)>>,
    other: HashMap<i64, Sent>,
    pub only: Option<Uses>,
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

    /// A look-up of `seq` made ([`SentLog::get`]): with `only`, its entry goes after the last.
    pub fn asked(&mut self, seq: i64) {
        if self.only.as_mut().is_some_and(|u| u.asked(seq)) {
            self.other.remove(&seq);
            shrink(&mut self.other);
        }
    }

    /// Starts kept, and starts still to be asked for (`only`).
    #[cfg(test)]
    pub fn sizes(&self) -> (usize, usize) {
        let run: usize = self.run.iter().map(Vec::len).sum();
        let live = self.only.as_ref().map_or(0, Uses::live);
        (run + self.other.len(), live)
    }

    pub fn record(&mut self, seq: i64, row: u32, time: f64, fills: bool) {
        let new = |filled: bool| Sent {
            row,
            time,
            filled: filled || fills,
        };
        if let Some(only) = &mut self.only {
            if only.wanted(seq) {
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

/// A map that emptied gives back most of its table (the memory follows what is kept).
pub(super) fn shrink<K: Eq + std::hash::Hash, V>(m: &mut HashMap<K, V>) {
    if m.capacity() > 64 && m.len() * 4 < m.capacity() {
        m.shrink_to(m.len() * 2);
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

    /// Kept to the starts it will be asked about, each to its last look-up, the log gives
    /// the same answers as the whole one, and holds nothing once every look-up is made.
    #[test]
    fn a_log_kept_to_its_look_ups_answers_as_the_whole_one() {
        // (start, fills, looked up before this send): rising data, then re-sends that look up
        // their start first, some starts re-sent twice, one re-send of a start sent out of order
        let sends = (0..(2 * CHUNK as i64)).map(|k| (10 * k, k % 3 == 0, false));
        let resends = [
            (30, true, true),
            (70, false, true),
            (5, false, false), // out of order, not a candidate
            (30, false, true),
            (0, false, true),
            (5, true, true),
            (30, false, false), // after its last look-up: not kept
        ];
        let events: Vec<_> = sends.chain(resends).collect();
        let asks = events.iter().filter(|e| e.2).map(|e| e.0).collect();
        let (mut all, mut some) = (SentLog::default(), SentLog::default());
        some.only = Some(Uses::new(asks));
        let key = |s: Option<Sent>| s.map(|s| (s.row, s.time.to_bits(), s.filled));
        let mut most = 0;
        for (i, &(seq, fills, ask)) in events.iter().enumerate() {
            if ask {
                assert_eq!(key(all.get(seq)), key(some.get(seq)), "{seq}");
                some.asked(seq);
            }
            all.record(seq, i as u32, i as f64, fills);
            some.record(seq, i as u32, i as f64, fills);
            most = most.max(some.other.len());
        }
        assert_eq!(most, 3); // 0, 30 and 70 from their first sends, until 70 is asked for
        assert_eq!(some.sizes(), (0, 0));
    }
}
