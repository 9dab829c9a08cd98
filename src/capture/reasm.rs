//! IPv4 and IPv6 fragment reassembly, as Wireshark does it (`ip.defragment`/`ipv6.defragment`,
//! on by default): the frame that *completes* a datagram carries its transport header (read
//! from the offset-0 fragment) and the whole datagram's length; the other fragments stay
//! "other" rows. Only lengths are needed, so headers-only captures reassemble too.
//!
//! A datagram is keyed by (src, dst, protocol, id) for IPv4 (RFC 791 §3.2) and (src, dst, id)
//! for IPv6 (RFC 8200 §4.5). What a receiver refuses is refused, each reason counted:
//! overlaps, a second end or bytes past the end (RFC 5722; Linux `inet_frag_queue_insert`
//! drops the whole queue for IPv4 too since 4.19), exact duplicates ignored (Linux
//! IPFRAG_DUP), datagrams over 65,535 bytes (Linux `ip_frag_reasm`, RFC 8200 §4.5), buffers
//! full (`max_frag_datagrams`/`max_frag_bytes`, Linux's `ipfrag_high_thresh`) or older than
//! `frag_timeout_s` (Linux's `ipfrag_time`).

use super::{commas, Limits, Warn};
use std::collections::{HashMap, VecDeque};

/// Largest IPv4 total length / IPv6 payload length (the 16-bit length field).
pub const MAX_DATAGRAM: i64 = 65535;

/// (IP version, source, destination, protocol (IPv4 only), identification).
pub type Key = (u8, u128, u128, u8, u32);

/// The offset-0 fragment's transport header (a copy: the frame itself is gone by the time
/// the datagram completes) and what the completing row needs from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Its captured bytes from the transport header on, at most a TCP header's 60.
    bytes: [u8; 60],
    len: u8,
    /// Bytes of extension headers between the fragment's data and the transport header.
    pub skip: i64,
    /// Transport protocol number.
    pub proto: u8,
}

impl Head {
    /// The header at `l4` of `captured` (the fragment's captured data).
    pub fn new(captured: &[u8], l4: usize, skip: i64, proto: u8) -> Head {
        let mut bytes = [0u8; 60];
        let src = captured.get(l4..).unwrap_or(&[]);
        let n = src.len().min(60);
        bytes[..n].copy_from_slice(&src[..n]);
        Head {
            bytes,
            len: n as u8,
            skip,
            proto,
        }
    }
    /// The copied header bytes (what the frame had captured of them).
    pub fn header(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// One fragment as the decoder read it.
#[derive(Clone, Copy, Debug)]
pub struct Fragment {
    pub key: Key,
    pub frame: u64,
    pub time: f64,
    /// Byte offset of the fragment's data in the datagram.
    pub offset: i64,
    pub length: i64,
    /// MF / M flag: not the last fragment.
    pub more: bool,
    /// Bytes of the unfragmentable part counted in the 65,535 limit.
    pub hdr: i64,
    pub head: Head,
    pub size: u64,
    pub caplen: u64,
}

/// A completed datagram: what the completing frame's row needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub head: Head,
    /// Transport header + payload of the whole datagram.
    pub l4len: i64,
    /// Original and captured lengths of all its frames (bytes on the wire).
    pub size: u64,
    pub caplen: u64,
}

#[derive(Default)]
struct Pending {
    serial: u64,
    first_time: f64,
    first_frame: u64,
    parts: Vec<(i64, i64)>,
    total: Option<i64>,
    held: i64,
    head: Option<Head>,
    size: u64,
    caplen: u64,
    frames: u64,
}

#[derive(Clone, Copy)]
enum Why {
    Overlap,
    Oversize,
    Limit,
    Timeout,
}

/// An empty fragment, one overlapping bytes already received, a second end, or bytes past the
/// end (RFC 5722; Linux drops the whole queue for IPv4 too since 4.19). `i`: where it goes.
fn refused(p: &Pending, f: &Fragment, i: usize, end: i64) -> bool {
    f.length <= 0
        || (i > 0 && p.parts.get(i - 1).is_some_and(|x| x.1 > f.offset))
        || p.parts.get(i).is_some_and(|x| x.0 < end)
        || p.total.is_some_and(|t| end > t || (!f.more && end != t))
        || (!f.more && p.parts.last().is_some_and(|x| x.1 > end))
}

/// Pending datagrams of one capture, fed in frame order.
pub struct Reassembler {
    limits: Limits,
    pending: HashMap<Key, Pending>,
    order: VecDeque<(Key, u64)>,
    serial: u64,
    held: i64,
    n: [u64; 4],
    first: [Option<u64>; 4],
    pub unread: u64,
    duplicate: u64,
    done: u64,
}

impl Reassembler {
    pub fn new(limits: &Limits) -> Reassembler {
        Reassembler {
            limits: limits.clone(),
            pending: HashMap::new(),
            order: VecDeque::new(),
            serial: 0,
            held: 0,
            n: [0; 4],
            first: [None; 4],
            unread: 0,
            duplicate: 0,
            done: 0,
        }
    }

    fn note(&mut self, why: Why, frame: u64, n: u64) {
        self.n[why as usize] += n;
        self.first[why as usize].get_or_insert(frame);
    }

    fn drop_key(&mut self, key: &Key) -> Option<Pending> {
        let p = self.pending.remove(key)?;
        self.held -= p.held;
        Some(p)
    }

    /// Discard datagrams older than `frag_timeout_s`, oldest first.
    fn expire(&mut self, now: f64, frame: u64) {
        while let Some(&(key, serial)) = self.order.front() {
            match self.pending.get(&key) {
                Some(p) if p.serial == serial => {
                    if now - p.first_time <= self.limits.frag_timeout_s {
                        break;
                    }
                    let frames = p.frames;
                    self.drop_key(&key);
                    self.note(Why::Timeout, frame, frames);
                }
                _ => {}
            }
            self.order.pop_front();
        }
    }

    /// Take one fragment; the completed datagram when this fragment completes it.
    pub fn add(&mut self, f: &Fragment) -> Option<Done> {
        self.expire(f.time, f.frame);
        let end = f.offset + f.length;
        if f.hdr + end > MAX_DATAGRAM {
            let dropped = self.drop_key(&f.key).map_or(0, |p| p.frames);
            self.note(Why::Oversize, f.frame, dropped + 1);
            return None;
        }
        let lim_bytes = self.limits.max_frag_bytes;
        match self.pending.get(&f.key) {
            None => {
                if self.pending.len() >= self.limits.max_frag_datagrams
                    || self.held + f.length > lim_bytes
                {
                    self.note(Why::Limit, f.frame, 1);
                    return None;
                }
                self.serial += 1;
                let p = Pending {
                    serial: self.serial,
                    first_time: f.time,
                    first_frame: f.frame,
                    ..Default::default()
                };
                self.pending.insert(f.key, p);
                self.order.push_back((f.key, self.serial));
            }
            Some(p) if self.held + f.length > lim_bytes => {
                let frames = p.frames;
                self.drop_key(&f.key);
                self.note(Why::Limit, f.frame, frames + 1);
                return None;
            }
            Some(_) => {}
        }
        let p = self.pending.get_mut(&f.key)?;
        // parts are sorted and disjoint: only the neighbours of the insertion point can overlap
        let i = p.parts.partition_point(|x| *x < (f.offset, end));
        if p.parts.get(i) == Some(&(f.offset, end)) {
            self.duplicate += 1; // an exact duplicate (a capture on several interfaces): ignored
            return None;
        }
        if refused(p, f, i, end) {
            let frames = p.frames;
            self.drop_key(&f.key);
            self.note(Why::Overlap, f.frame, frames + 1);
            return None;
        }
        p.parts.insert(i, (f.offset, end));
        p.held += f.length;
        p.size += f.size;
        p.caplen += f.caplen;
        p.frames += 1;
        self.held += f.length;
        if !f.more {
            p.total = Some(end);
        }
        if f.offset == 0 {
            p.head = Some(f.head);
        }
        // disjoint parts inside [0, total) whose lengths add up to total cover it
        let (Some(total), Some(head)) = (p.total, p.head) else {
            return None;
        };
        if p.held != total {
            return None;
        }
        let done = Done {
            head,
            l4len: total - head.skip,
            size: p.size,
            caplen: p.caplen,
        };
        self.drop_key(&f.key);
        self.done += 1;
        Some(done)
    }

    /// The warnings and counts of what was refused or left incomplete (after the last frame).
    pub fn finish(&self, warnings: &mut Vec<Warn>, counts: &mut Vec<(&'static str, u64)>) {
        let left = self.pending.values().map(|p| p.frames).sum::<u64>() + self.unread;
        let left_first = self.pending.values().map(|p| p.first_frame).min();
        let lim = &self.limits;
        let [overlap, oversize, limit, timeout] = self.n;
        let limit_first = if limit > 0 {
            self.first[Why::Limit as usize]
        } else {
            self.first[Why::Timeout as usize]
        };
        let items = [
            ("W-FRAG-OVERLAP", overlap, self.first[Why::Overlap as usize],
             "IP fragments empty, overlapping others or past the datagram's end (datagram refused, RFC 5722)".to_string()),
            ("W-FRAG-OVERSIZE", oversize, self.first[Why::Oversize as usize],
             "IP fragments past 65,535 bytes (datagram refused)".to_string()),
            ("W-FRAG-LIMIT", limit + timeout, limit_first,
             format!("IP fragments dropped: reassembly buffers full ({} datagrams, {} bytes) or older than {} s",
                     commas(lim.max_frag_datagrams as u64), commas(lim.max_frag_bytes.max(0) as u64),
                     lim.frag_timeout_text)),
            ("W-FRAGMENT", left, left_first,
             "IP fragments of datagrams never completed (no transport header; kept as 'other')".to_string()),
        ];
        for (code, n, frame, msg) in items {
            if n > 0 {
                let mut w = Warn::new(code, msg, n).at(None, frame);
                if code == "W-FRAG-LIMIT" {
                    w = w.hint("see docs/limits.md");
                }
                warnings.push(w);
            }
        }
        if self.done > 0 {
            counts.push(("reassembled", self.done));
        }
        if self.duplicate > 0 {
            counts.push(("duplicate_fragments", self.duplicate));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(offset: i64, length: i64, more: bool, frame: u64) -> Fragment {
        Fragment {
            key: (4, 1, 2, 6, 7),
            frame,
            time: frame as f64,
            offset,
            length,
            more,
            hdr: 20,
            head: Head::new(&[0u8; 60], 34, 0, 6),
            size: 1514,
            caplen: 100,
        }
    }

    #[test]
    fn completes_in_any_order_on_the_last_frame() {
        let mut r = Reassembler::new(&Limits::default());
        assert!(r.add(&frag(1480, 520, false, 1)).is_none());
        let d = r.add(&frag(0, 1480, true, 2)).expect("complete");
        assert_eq!(d.l4len, 2000);
        assert_eq!((d.size, d.caplen), (3028, 200));
    }

    #[test]
    fn overlap_refuses_the_datagram_and_duplicates_are_ignored() {
        let mut r = Reassembler::new(&Limits::default());
        r.add(&frag(0, 1480, true, 1));
        assert!(r.add(&frag(0, 1480, true, 2)).is_none()); // duplicate (RFC 5722 allows ignoring)
        assert!(r.add(&frag(1000, 800, false, 3)).is_none()); // overlaps [0, 1480)
        let (mut w, mut c) = (Vec::new(), Vec::new());
        r.finish(&mut w, &mut c);
        assert_eq!(w[0].code, "W-FRAG-OVERLAP");
        assert_eq!((w[0].count, w[0].frame), (2, Some(3)));
        assert_eq!(c, vec![("duplicate_fragments", 1)]);
    }

    #[test]
    fn ping_of_death_is_refused() {
        let mut r = Reassembler::new(&Limits::default());
        assert!(r.add(&frag(65528, 100, false, 1)).is_none());
        let (mut w, mut c) = (Vec::new(), Vec::new());
        r.finish(&mut w, &mut c);
        assert_eq!(w[0].code, "W-FRAG-OVERSIZE");
    }

    #[test]
    fn timeout_and_limits() {
        let lim = Limits {
            max_frag_datagrams: 1,
            frag_timeout_s: 5.0,
            frag_timeout_text: "5".into(),
            ..Limits::default()
        };
        let mut r = Reassembler::new(&lim);
        r.add(&frag(0, 8, true, 1));
        let mut other = frag(0, 8, true, 2);
        other.key.4 = 9;
        assert!(r.add(&other).is_none()); // buffers full
        let mut late = frag(8, 8, false, 10);
        late.time = 100.0; // the first one expired
        assert!(r.add(&late).is_none());
        let (mut w, mut c) = (Vec::new(), Vec::new());
        r.finish(&mut w, &mut c);
        assert_eq!(w[0].code, "W-FRAG-LIMIT");
        assert_eq!(w[0].count, 2);
        assert!(w[0]
            .message
            .contains("(1 datagrams, 4,194,304 bytes) or older than 5 s"));
        assert_eq!(w[1].code, "W-FRAGMENT");
    }
}
