//! A file read forward once: the reader thread's bytes.
//!
//! A batch is walked first (its record headers, `capture::pcap::Batches::next`) and decoded
//! after (its records' bytes, `capture::spans::BatchDecoder::decode`): through the capture
//! reader's one-window `FileSource`, the decode goes back to the batch's first record after
//! the walk has moved the window past its last one, and the next walk moves it forward again,
//! so that every byte was read from the file two or three times. [`Ahead`] keeps the bytes
//! from the current batch's start on and reads only past its end ([`Ahead::keep_from`] drops
//! what the decoded batches no longer need), so each byte is read once: memory stays at a
//! batch's bytes plus one read ahead (a read that goes back, or runs past [`CAP`] bytes kept,
//! starts over at its offset, as the window does).

use crate::capture::bytes::Source;
use std::os::unix::fs::FileExt;

/// Bytes read past the end at a time (more for a longer read).
const CHUNK: usize = 1 << 18;
/// At most this many bytes are kept before a read starts over (a batch's bytes are about
/// `source::BATCH_BYTES`).
const CAP: usize = 1 << 23;

/// A file's bytes from `start` on, read forward: `buf[..used]` (the rest of `buf` is room
/// for the next reads, zeroed once when it grows rather than before every read).
pub struct Ahead {
    file: std::fs::File,
    size: u64,
    start: u64,
    buf: Vec<u8>,
    used: usize,
    /// The first read error (reported as a damaged file rather than ignored).
    error: Option<std::io::Error>,
}

impl Ahead {
    pub fn open(path: &std::path::Path) -> std::io::Result<Ahead> {
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        Ok(Ahead {
            file,
            size,
            start: 0,
            buf: Vec::new(),
            used: 0,
            error: None,
        })
    }

    /// The bytes before `off` are no longer read (the records before it are decoded).
    pub fn keep_from(&mut self, off: u64) {
        let end = self.start + self.used as u64;
        if off <= self.start {
            return;
        }
        if off >= end {
            self.used = 0;
            self.start = off;
            return;
        }
        // (off - start < used: fits in usize)
        let k = (off - self.start) as usize;
        self.buf.copy_within(k..self.used, 0);
        self.used -= k;
        self.start = off;
    }

    /// Reads the file's bytes from `from` up to at least `to` (and a chunk ahead, within
    /// the file) into the buffer's end; false on a read error (kept).
    fn fill(&mut self, from: u64, to: u64) -> bool {
        let upto = to.max(from.saturating_add(CHUNK as u64)).min(self.size);
        let Ok(more) = usize::try_from(upto.saturating_sub(from)) else {
            return false;
        };
        let (at, need) = (self.used, self.used + more);
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
        if let Err(e) = self.file.read_exact_at(&mut self.buf[at..need], from) {
            self.error.get_or_insert(e);
            return false;
        }
        self.used = need;
        true
    }
}

impl Source for Ahead {
    fn size(&self) -> u64 {
        self.size
    }

    fn get(&mut self, off: u64, n: usize) -> Option<&[u8]> {
        let to = off.checked_add(n as u64)?;
        if to > self.size {
            return None;
        }
        let end = self.start + self.used as u64;
        if off < self.start || to > end {
            if off < self.start || to - self.start > CAP as u64 {
                // back, or too much kept: start over at `off` (a gap ahead is read: a
                // walk skips the records' bytes that the decode reads after)
                self.used = 0;
                self.start = off;
                if !self.fill(off, to) {
                    return None;
                }
            } else if !self.fill(end, to) {
                return None;
            }
        }
        let at = usize::try_from(off - self.start).ok()?;
        self.buf[..self.used].get(at..at.checked_add(n)?)
    }

    fn take_error(&mut self) -> Option<std::io::Error> {
        self.error.take()
    }

    fn keep_error(&mut self, e: std::io::Error) {
        self.error.get_or_insert(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_memory_forward_back_and_past_the_end() {
        let data: Vec<u8> = (0..(3 * CHUNK + 77)).map(|i| (i * 7 % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("ahead_{}.bin", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let mut a = Ahead::open(&path).unwrap();
        let n = data.len() as u64;
        for (off, len) in [
            (0u64, 16usize),
            (10, 2 * CHUNK),
            (5, 9),
            (n - 3, 3),
            (100, 1),
        ] {
            let want = &data[off as usize..off as usize + len];
            assert_eq!(a.get(off, len), Some(want));
            a.keep_from(off + 1);
        }
        assert_eq!(a.get(n - 3, 4), None);
        a.keep_from(n + 5);
        assert_eq!(a.get(0, 4), Some(&data[..4]));
        assert!(a.used <= CAP && a.buf.len() <= CAP + CHUNK);
        std::fs::remove_file(&path).unwrap();
    }
}
