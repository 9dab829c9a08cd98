//! libpcap files (tcpdump, Wireshark, ns-3): a 24-byte file header, then records of a 16-byte
//! header (24 in Kuznetzov's patched libpcap) and the packet bytes.
//!
//! The file header is read by pcap-parser; magic `a1b2c3d4` means microsecond fractions,
//! `a1b23c4d` nanoseconds, byte-swapped magics big-endian header fields (libpcap's
//! sf-pcap.c). The record walk is ours: its stop reasons and located errors are tracekit's.

use super::bytes::{Endian, Source};
use super::{commas, Failure, Kind, Limits, Meta, Records, Warn};
use pcap_parser::pcap::parse_pcap_header;

const FILE_HEADER: usize = 24;
/// LT_LINKTYPE_EXT: the upper bits of the link type field carry the FCS length.
const LT_MASK: u32 = 0x03FF_FFFF;
const LT_FCS_PRESENT: u32 = 0x0400_0000;

/// (big-endian header fields, nanosecond fractions, record header length) of a magic.
fn magic(head: &[u8]) -> Option<(bool, bool, usize)> {
    match head.get(..4)? {
        [0xd4, 0xc3, 0xb2, 0xa1] => Some((false, false, 16)),
        [0xa1, 0xb2, 0xc3, 0xd4] => Some((true, false, 16)),
        [0x4d, 0x3c, 0xb2, 0xa1] => Some((false, true, 16)),
        [0xa1, 0xb2, 0x3c, 0x4d] => Some((true, true, 16)),
        [0x34, 0xcd, 0xb2, 0xa1] => Some((false, false, 24)), // Kuznetzov's patched libpcap
        [0xa1, 0xb2, 0xcd, 0x34] => Some((true, false, 24)),
        _ => None,
    }
}

/// The file header fields (pcap-parser; it lacks the big-endian Kuznetzov magic, which is
/// the big-endian microsecond layout with longer records).
fn header(data: &[u8], big: bool) -> Option<(u16, u16, u32, u32)> {
    let mut head: [u8; FILE_HEADER] = data.get(..FILE_HEADER)?.try_into().ok()?;
    if head[..4] == [0xa1, 0xb2, 0xcd, 0x34] {
        head[..4].copy_from_slice(&[0xa1, 0xb2, 0xc3, 0xd4]);
    }
    let (_, h) = parse_pcap_header(&head).ok()?;
    debug_assert_eq!(h.is_bigendian(), big);
    Some((
        h.version_major,
        h.version_minor,
        h.snaplen,
        h.network.0 as u32,
    ))
}

/// Read a pcap file's header and records (not their packets).
pub fn read(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
) -> Result<(Records, Meta), Failure> {
    let h = file_header(src, warnings)?;
    let linktype = h.lt_field & LT_MASK;
    let meta = meta_of(&h);
    let mut recs = Records {
        linktype,
        ..Records::default()
    };
    if super::link::name(linktype).is_none() {
        return Ok((recs, meta)); // tshark reads it
    }
    let walk = Walk::of(&h);
    let (stop, tallies) = walk.run(src, limits, &mut recs)?;
    tail_warnings(stop, tallies, recs.data_off.len() as u64, warnings);
    Ok((recs, meta))
}

/// The file's metadata from its header (`read` and [`Batches`] alike).
fn meta_of(h: &FileHeader) -> Meta {
    Meta::Pcap {
        linktype: h.lt_field & LT_MASK,
        snaplen: h.snaplen,
        nanos: h.nanos,
        version: h.version,
    }
}

/// The warnings of the record walk, once it has ended: where it stopped short, the counts of
/// `Walk::run`, no record at all (`nrec`: the records read).
fn tail_warnings(stop: Stop, tallies: [u64; 3], nrec: u64, warnings: &mut Vec<Warn>) {
    if let Some((reason, at)) = stop {
        let msg = format!(
            "last record is cut short ({reason}); kept the {} packets before it",
            commas(nrec)
        );
        let w = Warn::new("W-TRUNCATED", msg, 1).at(Some(at), Some(nrec + 1));
        warnings.push(w.hint("the capture was cut short; rerun without --strict to keep them"));
    }
    let texts = [
        "microsecond fraction >= 1,000,000 (carried into the seconds)",
        "captured length larger than the original length (original length raised)",
        "records longer than the file's snaplen (accepted, as libpcap does)",
    ];
    for ((code, text), k) in ["W-TIMESTAMP", "W-CAPLEN", "W-SNAPLEN"]
        .into_iter()
        .zip(texts)
        .zip(tallies)
    {
        if k > 0 {
            warnings.push(Warn::new(code, text, k));
        }
    }
    if nrec == 0 {
        warnings.push(Warn::new("W-EMPTY", "the capture holds no packets", 1));
    }
}

/// A pcap file's records in batches, for a reader that never holds them all (`crate::stream`):
/// the same header checks and record walk as [`read`], resumed where the last batch ended.
pub struct Batches {
    walk: Walk,
    p: u64,
    frames: u64,
    done: bool,
    /// Where the walk stopped short, and its counts (see `Walk::run`).
    stop: Stop,
    k: [u64; 3],
    /// The file's link type.
    pub linktype: u32,
    /// The file's metadata, as [`read`] gives it.
    pub meta: Meta,
}

impl Batches {
    /// Reads the file header; `None` when the link type is one the decoder lacks.
    pub fn open(
        src: &mut dyn Source,
        warnings: &mut Vec<Warn>,
    ) -> Result<Option<Batches>, Failure> {
        let h = file_header(src, warnings)?;
        let linktype = h.lt_field & LT_MASK;
        if super::link::name(linktype).is_none() {
            return Ok(None);
        }
        Ok(Some(Batches {
            walk: Walk::of(&h),
            p: FILE_HEADER as u64,
            frames: 0,
            done: false,
            stop: None,
            k: [0; 3],
            linktype,
            meta: meta_of(&h),
        }))
    }

    /// The next records into `recs` (emptied first): at most `max` of them and about
    /// `max_bytes` of captured data. `Ok(false)` once the records have all been read.
    pub fn next(
        &mut self,
        src: &mut dyn Source,
        limits: &Limits,
        recs: &mut Records,
        max: usize,
        max_bytes: u64,
    ) -> Result<bool, Failure> {
        *recs = Records {
            linktype: self.linktype,
            ..Records::default()
        };
        let mut bytes = 0u64;
        while !self.done && recs.len() < max && bytes < max_bytes {
            let frame = self.frames + 1;
            match self
                .walk
                .step(src, limits, self.p, frame, recs, &mut self.k)?
            {
                Ok(next) => {
                    bytes += next - self.p;
                    self.p = next;
                    self.frames += 1;
                }
                Err(stop) => (self.stop, self.done) = (stop, true),
            }
        }
        Ok(!recs.is_empty())
    }

    /// The records read so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The warnings [`read`] gives after the records, once they have all been read.
    pub fn warnings(&self, warnings: &mut Vec<Warn>) {
        tail_warnings(self.stop, self.k, self.frames, warnings);
    }
}

/// What the file header says.
struct FileHeader {
    big: bool,
    nanos: bool,
    rec_len: usize,
    version: (u16, u16),
    snaplen: u32,
    lt_field: u32,
}

/// The file header, checked (empty, cut, unknown magic) and with its warnings.
fn file_header(src: &mut dyn Source, warnings: &mut Vec<Warn>) -> Result<FileHeader, Failure> {
    let n = usize::try_from(src.size()).unwrap_or(usize::MAX);
    let data = src.get(0, n.min(FILE_HEADER)).unwrap_or(&[]).to_vec();
    if n == 0 {
        return Err(
            Failure::new(Kind::Unknown, "empty file (0 bytes)").hint("the capture was not written")
        );
    }
    if n < FILE_HEADER {
        if magic(&data).is_some() || n < 4 {
            let msg = format!("truncated file header: {n} of {FILE_HEADER} bytes");
            return Err(Failure::corrupt(msg, n as u64)
                .hint("the file was cut short before the first packet; re-copy it"));
        }
        return Err(Failure::new(Kind::Unknown, "not a pcap file").at(Some(0), None));
    }
    let Some((big, nanos, rec_len)) = magic(&data) else {
        let hex: String = data.iter().take(4).map(|b| format!("{b:02x}")).collect();
        let f =
            Failure::new(Kind::Unknown, format!("not a pcap file (magic {hex})")).at(Some(0), None);
        return Err(f.hint("is it pcapng or a text trace? try without --format"));
    };
    let (vmaj, vmin, snaplen, lt_field) =
        header(&data, big).ok_or_else(|| Failure::corrupt("unreadable file header", 0))?;
    if !matches!((vmaj, vmin), (2, 4) | (2, 3) | (2, 2)) {
        // tshark reads these, libpcap refuses; we read them, as tshark does, and say so.
        let msg = format!("unusual pcap version {vmaj}.{vmin} (read as 2.4)");
        warnings.push(Warn::new("W-VERSION", msg, 1).at(Some(4), None));
    }
    if snaplen == 0 {
        warnings.push(
            Warn::new("W-SNAPLEN", "snaplen is 0 (pcap forbids it; ignored)", 1).at(Some(16), None),
        );
    }
    Ok(FileHeader {
        big,
        nanos,
        rec_len,
        version: (vmaj, vmin),
        snaplen,
        lt_field,
    })
}

/// The record chain: each header's captured length says where the next one starts.
struct Walk {
    e: Endian,
    rec_len: usize,
    cap_at: usize,
    nanos: bool,
    /// pcap before 2.3: original length before the captured length.
    swapped: bool,
    /// FCS bytes trailing every frame (LINKTYPE_EXT).
    fcs: u32,
    snaplen: u32,
}

impl Walk {
    /// The record walk a file header asks for (`read` and [`Batches`] both start from it).
    fn of(h: &FileHeader) -> Walk {
        // pcap before 2.3 wrote the original length before the captured length (libpcap swaps them).
        let swapped = h.version < (2, 3);
        // LINKTYPE_EXT: bits 28-31 give the FCS length in 16-bit words when bit 26 is set
        let fcs = if h.lt_field & LT_FCS_PRESENT != 0 {
            ((h.lt_field >> 28) & 0xF) * 2
        } else {
            0
        };
        Walk {
            e: Endian { big: h.big },
            rec_len: h.rec_len,
            cap_at: if swapped { 12 } else { 8 },
            nanos: h.nanos,
            swapped,
            fcs,
            snaplen: h.snaplen,
        }
    }
}

/// A record header's timestamp and lengths, when the whole record is in the file.
type Head = [u8; 16];

/// Where the record chain stops short (reason, offset), if it does.
type Stop = Option<(&'static str, u64)>;

impl Walk {
    /// Every complete record into `recs` (data offset, timestamp, lengths), in one pass over
    /// the headers; the stop reason and offset when the file ends inside a record; an error at
    /// a captured length over the maximum. Also returns the counts of microsecond fractions
    /// >= 10^6, captured > original lengths and captured > snaplen.
    fn run(
        &self,
        src: &mut dyn Source,
        limits: &Limits,
        recs: &mut Records,
    ) -> Result<(Stop, [u64; 3]), Failure> {
        let mut k = [0u64; 3];
        let mut p = FILE_HEADER as u64;
        let stop = loop {
            let frame = recs.data_off.len() as u64 + 1;
            match self.step(src, limits, p, frame, recs, &mut k)? {
                Ok(next) => p = next,
                Err(stop) => break stop,
            }
        };
        Ok((stop, k))
    }

    /// The record at `p` (frame number `frame`) into `recs`: the next record's offset, or
    /// where the chain stops (`run`'s stop reasons); an error at a captured length over the
    /// maximum.
    fn step(
        &self,
        src: &mut dyn Source,
        limits: &Limits,
        p: u64,
        frame: u64,
        recs: &mut Records,
        k: &mut [u64; 3],
    ) -> Result<Result<u64, Stop>, Failure> {
        let n = src.size();
        let head: Option<Head> = src.get(p, 16).and_then(|b| super::bytes::arr(b, 0));
        let cap = match head {
            Some(h) => self.e.u32(&h, self.cap_at),
            None => src.u32(self.e, p + self.cap_at as u64),
        };
        let Some(cap) = cap else {
            return Ok(Err((p < n).then_some(("truncated-header", p))));
        };
        if u64::from(cap) > limits.max_caplen {
            return Err(Failure::corrupt(
                format!(
                    "record claims a captured length of {} bytes, beyond the maximum of {}",
                    commas(cap.into()),
                    commas(limits.max_caplen)
                ),
                p,
            )
            .at(Some(p), Some(frame))
            .hint(format!(
                "the file is corrupt from here on; `editcap -r` can cut it to the first {} packets",
                commas(frame - 1)
            )));
        }
        let data = p.saturating_add(self.rec_len as u64);
        let end = data.saturating_add(u64::from(cap));
        match head {
            Some(h) if end <= n => self.record(&h, data, recs, k),
            // the last record runs past the end of the file: its data, or its header
            _ if data <= n => return Ok(Err(Some(("truncated-data", p)))),
            _ => return Ok(Err(Some(("truncated-header", p)))),
        }
        Ok(Ok(end))
    }

    /// One complete record's timestamp and lengths (`k`: the counts of `run`).
    fn record(&self, h: &Head, data: u64, recs: &mut Records, k: &mut [u64; 3]) {
        let f = |i: usize| i64::from(self.e.u32(h, 4 * i).unwrap_or(0));
        let (sec, frac, mut cap, mut orig) = (f(0), f(1), f(2), f(3));
        if self.swapped {
            std::mem::swap(&mut cap, &mut orig);
        }
        if !self.nanos && frac >= 1_000_000 {
            k[0] += 1; // carried into the seconds, as tshark does
        }
        if cap > orig {
            k[1] += 1;
        }
        orig = orig.max(cap);
        if self.snaplen > 0 && cap > i64::from(self.snaplen) {
            k[2] += 1;
        }
        if self.fcs > 0 {
            // The FCS trails the frame: it is in the captured bytes only if the capture reached it.
            orig = (orig - i64::from(self.fcs)).max(0);
            cap = cap.min(orig);
        }
        let ns = if self.nanos { frac } else { frac * 1000 };
        recs.ts_ns.push(sec * 1_000_000_000 + ns);
        recs.caplen.push(cap as u32);
        recs.origlen.push(orig as u32);
        recs.data_off.push(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::bytes::Mem;

    fn file(records: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut d = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
        d.extend_from_slice(&[0; 8]);
        d.extend_from_slice(&65535u32.to_le_bytes());
        d.extend_from_slice(&1u32.to_le_bytes());
        for (sec, usec, pkt) in records {
            for v in [*sec, *usec, pkt.len() as u32, pkt.len() as u32] {
                d.extend_from_slice(&v.to_le_bytes());
            }
            d.extend_from_slice(pkt);
        }
        d
    }

    #[test]
    fn records_and_timestamps() {
        let d = file(&[(1, 5, &[1, 2, 3]), (2, 0, &[4])]);
        let mut w = Vec::new();
        let (r, _) = read(&mut Mem(&d), &Limits::default(), &mut w).unwrap();
        assert_eq!(r.data_off, vec![40, 59]);
        assert_eq!(r.ts_ns, vec![1_000_005_000, 2_000_000_000]);
        assert_eq!(r.caplen, vec![3, 1]);
        assert!(w.is_empty());
    }

    #[test]
    fn truncated_data_keeps_the_records_before() {
        let mut d = file(&[(1, 0, &[1, 2, 3]), (2, 0, &[4, 5, 6, 7])]);
        d.truncate(d.len() - 2);
        let mut w = Vec::new();
        let (r, _) = read(&mut Mem(&d), &Limits::default(), &mut w).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(w[0].code, "W-TRUNCATED");
        assert!(w[0].message.contains("(truncated-data)"));
        assert_eq!((w[0].offset, w[0].frame), (Some(43), Some(2)));
    }

    #[test]
    fn a_header_cut_after_its_lengths_is_truncated_and_not_counted() {
        let mut d = file(&[(1, 0, &[1, 2, 3]), (2, 0, &[4])]);
        let at = d.len() as u64;
        // a third header with a microsecond fraction >= 10^6 and captured > original length,
        // cut after its captured length: neither is counted, the record is not kept
        for v in [3u32, 2_000_000, 9, 1] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.truncate(d.len() - 2);
        let mut w = Vec::new();
        let (r, _) = read(&mut Mem(&d), &Limits::default(), &mut w).unwrap();
        assert_eq!((r.len(), r.ts_ns.len(), r.origlen.len()), (2, 2, 2));
        assert_eq!(w.len(), 1);
        assert!(w[0].message.contains("(truncated-header)"));
        assert_eq!((w[0].offset, w[0].frame), (Some(at), Some(3)));
    }

    #[test]
    fn huge_caplen_is_a_located_error() {
        let mut d = file(&[(1, 0, &[1])]);
        d[32..36].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        let e = read(&mut Mem(&d), &Limits::default(), &mut Vec::new()).unwrap_err();
        assert_eq!(
            (e.kind, e.offset, e.frame),
            (Kind::Corrupt, Some(24), Some(1))
        );
    }

    #[test]
    fn not_pcap() {
        let e = read(
            &mut Mem(b"hello world, this is text"),
            &Limits::default(),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert_eq!(e.kind, Kind::Unknown);
        assert!(e.message.contains("68656c6c"));
    }
}
