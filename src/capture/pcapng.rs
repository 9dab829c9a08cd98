//! pcapng files (draft-ietf-opsawg-pcapng): blocks of type u32 | total length u32 | body |
//! total length u32, padded to 4 bytes.
//!
//! Byte order is per section (each SHB's byte-order magic says which); interface ids count
//! the IDBs of the current section only. Link type, snaplen, time resolution and offset, and
//! FCS length are per interface. Frame numbers count packet blocks (EPB, obsolete PB, SPB),
//! as Wireshark numbers them. pcap-parser's block type constants name the blocks; the block
//! walk and checks are ours, so that every refusal names the block number and its offset.
//! Options and the interface table are read in `ngiface`, the packet blocks in `ngpkt`.

use super::bytes::{Endian, Source};
pub use super::ngiface::{ts_to_ns, MAX_SEC};
use super::ngscan::Scan;
use super::{commas, Failure, Limits, Meta, Records, Warn};
use pcap_parser::pcapng::{
    DSB_MAGIC, EPB_MAGIC, IDB_MAGIC, ISB_MAGIC, NRB_MAGIC, SHB_MAGIC, SPB_MAGIC,
};

/// The obsolete Packet Block (pcapng appendix), which pcap-parser does not name.
pub(super) const PB_MAGIC: u32 = 2;

pub(super) const BT_JOURNAL: u32 = 9;
/// Blocks that hold no packets and are skipped silently (names, statistics, TLS secrets, journal).
pub(super) const QUIET: [u32; 4] = [NRB_MAGIC, ISB_MAGIC, DSB_MAGIC, BT_JOURNAL];
/// Smallest legal total length of each block type, checked in this order.
pub(super) const MIN_LEN: [(u32, u32); 5] = [
    (EPB_MAGIC, 32),
    (PB_MAGIC, 32),
    (SPB_MAGIC, 16),
    (IDB_MAGIC, 20),
    (SHB_MAGIC, 28),
];
/// Bytes of a block's start kept with it ([`Block::u32`]): an EPB's fixed fields (interface,
/// timestamp, captured and original lengths, pcapng §4.3) in one read, not a read per field.
const HEAD: usize = 28;
/// Blocks of at most this many bytes are read whole by the walk, so that the trailing length
/// comes from the same read as the head (larger ones are read in two places, as the checks ask).
const WHOLE: usize = 4096;

/// One block found by the walk.
#[derive(Clone, Copy)]
pub(super) struct Block {
    pub(super) off: u64,
    pub(super) btype: u32,
    pub(super) len: u32,
    pub(super) e: Endian,
    pub(super) section: usize,
    /// The block's first `hl` bytes (at most [`HEAD`], never past its end).
    head: [u8; HEAD],
    hl: usize,
    /// The trailing length, where the block was read whole (see [`WHOLE`]).
    pub(super) tail: Option<u32>,
}

impl Block {
    /// The field `k` bytes into the block (from its head, else from `src`: the same bytes).
    pub(super) fn u32(&self, src: &mut dyn Source, k: u64) -> Option<u32> {
        match usize::try_from(k).ok().filter(|&k| k + 4 <= self.hl) {
            Some(k) => self.e.u32(&self.head[..self.hl], k),
            None => src.u32(self.e, self.off + k),
        }
    }

    /// The 16-bit field `k` bytes into the block (as [`Block::u32`]).
    pub(super) fn u16(&self, src: &mut dyn Source, k: u64) -> Option<u16> {
        match usize::try_from(k).ok().filter(|&k| k + 2 <= self.hl) {
            Some(k) => self.e.u16(&self.head[..self.hl], k),
            None => src.u16(self.e, self.off + k),
        }
    }
}

pub(super) fn corrupt(msg: String, block: usize, offset: u64) -> Failure {
    Failure::corrupt(format!("block {}: {msg}", commas(block as u64)), offset)
        .hint("the file is damaged from here on; `editcap -r` can keep the packets before it")
}

/// The checks after the block walk, in the order their failures are reported (the first
/// failure of the earliest check wins, wherever it is in the file): trailing lengths, the
/// minimum length of each type of `MIN_LEN`, section versions, interface time resolutions,
/// packets' interfaces, captured lengths against their blocks, then against the limit.
pub(super) const TRAILER: usize = 0;
pub(super) const VERSION: usize = 1 + MIN_LEN.len();
pub(super) const IFACE: usize = VERSION + 1;
pub(super) const PKT_IFACE: usize = IFACE + 1;
pub(super) const ROOM: usize = PKT_IFACE + 1;
pub(super) const CAPLEN: usize = ROOM + 1;

/// The first failure of each check (`TRAILER`…`CAPLEN`) with its block's index, and whether
/// any is set (asked for every packet block: a flag, not a look at every slot).
#[derive(Default)]
pub(super) struct Errs([Option<(usize, Failure)>; CAPLEN + 1], bool);

impl Errs {
    /// Block `i`'s failure of check `k`, unless an earlier block failed it.
    pub(super) fn set(&mut self, k: usize, i: usize, f: impl FnOnce() -> Failure) {
        if let Some(slot) = self.0.get_mut(k).filter(|s| s.is_none()) {
            *slot = Some((i, f()));
            self.1 = true;
        }
    }
    pub(super) fn any(&self) -> bool {
        self.1
    }
    /// The failure reported: the earliest check's, with its check.
    pub(super) fn first(&mut self) -> Option<(usize, usize, Failure)> {
        let k = self.0.iter().position(Option::is_some)?;
        let got = self.0[k].take().map(|(i, f)| (k, i, f));
        self.1 = self.0.iter().any(Option::is_some);
        got
    }
}

/// The block chain, one block at a time. The SHB type `0A0D0D0A` reads the same in both byte
/// orders, so a section is recognised before its byte order is known (pcapng §4.1).
#[derive(Default)]
pub(super) struct Walk {
    pub(super) off: u64,
    e: Endian,
    pub(super) sections: usize,
    /// Blocks read.
    pub(super) blocks: usize,
    /// The offset of every section header seen.
    pub(super) shbs: Vec<u64>,
    /// Once the chain has ended: where it stops short of the file's end, if it does.
    pub(super) cut: Option<Option<u64>>,
}

impl Walk {
    /// The next whole block; `None` once the chain ends (`cut` then says where), an error
    /// where it breaks.
    pub(super) fn step(
        &mut self,
        src: &mut dyn Source,
        limits: &Limits,
    ) -> Result<Option<Block>, Failure> {
        if self.cut.is_some() {
            return Ok(None);
        }
        let (n, off) = (src.size(), self.off);
        // the block type and length in one read where the file holds both (the same bytes as
        // a read each, which is what is done where it does not)
        let mut first = [0u8; 8];
        let have = src.get(off, 8).map(|b| first.copy_from_slice(b)).is_some();
        let btype = if have {
            self.e.u32(&first, 0)
        } else {
            src.u32(self.e, off)
        };
        let Some(btype) = btype else {
            self.cut = Some((off != n).then_some(off));
            return Ok(None);
        };
        if btype == SHB_MAGIC {
            self.shbs.push(off);
            match src.get(off + 8, 4) {
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => self.e = Endian { big: false },
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => self.e = Endian { big: true },
                Some(bom) => {
                    let hex: String = bom.iter().map(|b| format!("{b:02x}")).collect();
                    return Err(corrupt(
                        format!("section header with a bad byte-order magic {hex}"),
                        self.blocks + 1,
                        off,
                    ));
                }
                None => {
                    self.cut = Some(Some(off)); // cut inside the section header
                    return Ok(None);
                }
            }
            self.sections += 1;
        }
        let e = self.e;
        let len = if have {
            e.u32(&first, 4)
        } else {
            src.u32(e, off + 4)
        };
        let Some(len) = len else {
            self.cut = Some((off != n).then_some(off));
            return Ok(None);
        };
        if len < 12 || len & 3 != 0 || u64::from(len) > limits.max_block_bytes {
            if u64::from(len) > limits.max_block_bytes && len & 3 == 0 {
                return Err(corrupt(
                    format!("block length {} is over the maximum of {} bytes", commas(len.into()), commas(limits.max_block_bytes)),
                    self.blocks + 1,
                    off,
                )
                .hint("the file is corrupt (libpcap refuses blocks over 16 MiB); raise max_block_bytes in [limits] only if the file is genuine"));
            }
            let what = if len < 12 {
                "less than 12"
            } else {
                "not a multiple of 4"
            };
            return Err(corrupt(
                format!("block length {} is {what}", commas(len.into())),
                self.blocks + 1,
                off,
            ));
        }
        let end = off + u64::from(len);
        if end > n {
            self.cut = Some(Some(off)); // the last block runs past the end of the file
            return Ok(None);
        }
        self.blocks += 1;
        self.off = end;
        // a block of at most WHOLE bytes (a packet block of a usual snap length) is read whole:
        // its head and its trailing length in one read
        let mut tail = None;
        let mut head = [0u8; HEAD];
        let mut hl = (len as usize).min(HEAD); // (the block lies within the file: end <= n)
        let whole = if len as usize <= WHOLE {
            src.get(off, len as usize)
        } else {
            None
        };
        match whole {
            Some(b) => {
                head[..hl].copy_from_slice(&b[..hl]);
                tail = e.u32(b, len as usize - 4);
            }
            None => match src.get(off, hl) {
                Some(h) => head[..hl].copy_from_slice(h),
                None => hl = 0,
            },
        }
        Ok(Some(Block {
            off,
            btype,
            len,
            e,
            section: self.sections.saturating_sub(1),
            head,
            hl,
            tail,
        }))
    }
}

/// Read a pcapng file's blocks and records (not their packets).
///
/// A damaged later section does not cost the sections before it (issue 24 point 8; Wireshark
/// shows the packets read before the damage, then its error): the file is read again up to
/// the damaged section's header block, with a W-SECTION warning.
pub fn read(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
) -> Result<(Records, Meta), Failure> {
    let (recs, meta, _) = read_kept(src, limits, warnings, true)?;
    Ok((recs, meta))
}

/// [`read`], keeping the records or not (`keep`); also the bytes read (all the file's, or
/// those before the damaged section).
fn read_kept(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
    keep: bool,
) -> Result<(Records, Meta, u64), Failure> {
    let mut shbs = Vec::new();
    let mut first = Vec::new();
    let f = match read_upto(src, limits, &mut first, &mut shbs, keep) {
        Ok((r, m, _)) => {
            warnings.extend(first);
            return Ok((r, m, src.size()));
        }
        Err(f) => f,
    };
    let Some(start) = damaged_section(&f, &shbs) else {
        warnings.extend(first);
        return Err(f);
    };
    let mut part = Limited {
        inner: src,
        size: start,
    };
    let (recs, meta, kept) = read_upto(&mut part, limits, warnings, &mut Vec::new(), keep)?;
    warnings.push(section_warning(start, &f, kept));
    Ok((recs, meta, start))
}

/// W-SECTION: the section starting at `start` failed with `f`, and the `kept` packets of the
/// sections before it are read.
pub(super) fn section_warning(start: u64, f: &Failure, kept: u64) -> Warn {
    let msg = format!(
        "the section starting at byte {} is damaged ({}); kept the {} packets of the sections before it",
        commas(start),
        f.message,
        commas(kept)
    );
    let w = Warn::new("W-SECTION", msg, 1).at(f.offset, None);
    w.hint("a later section of the file is damaged; `editcap -r` can cut it off")
}

/// The first `size` bytes of a source.
pub(super) struct Limited<'a> {
    pub(super) inner: &'a mut dyn Source,
    pub(super) size: u64,
}

impl Source for Limited<'_> {
    fn size(&self) -> u64 {
        self.size
    }
    fn get(&mut self, off: u64, n: usize) -> Option<&[u8]> {
        if off.checked_add(n as u64)? > self.size {
            return None;
        }
        self.inner.get(off, n)
    }
}

/// The file's first bytes: a pcapng section header's block type (else why it is no pcapng file).
pub(super) fn check_head(src: &mut dyn Source) -> Result<(), Failure> {
    let n = src.size();
    let head = src.get(0, n.min(4) as usize).unwrap_or(&[]).to_vec();
    if head.is_empty() {
        return Err(Failure::new(super::Kind::Unknown, "empty file (0 bytes)")
            .hint("the capture was not written"));
    }
    if head != [0x0a, 0x0d, 0x0d, 0x0a] {
        let hex: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
        let msg = format!("not a pcapng file (first bytes {})", hex.join(" "));
        let f = Failure::new(super::Kind::Unknown, msg).at(Some(0), None);
        return Err(f.hint("is it a classic pcap or a text trace? try without --format"));
    }
    Ok(())
}

/// Where the section holding the failure `f` starts (`shbs`: the section headers' offsets), if
/// [`read`] keeps the sections before it (W-SECTION): a corrupt block after the first section.
pub(super) fn damaged_section(f: &Failure, shbs: &[u64]) -> Option<u64> {
    let at = f.offset.unwrap_or(0);
    let start = shbs.iter().copied().filter(|&s| s <= at).max().unwrap_or(0);
    (f.kind == super::Kind::Corrupt && start > 0).then_some(start)
}

/// [`read`] without the recovery (`shbs` gets the offset of every section header seen); also
/// the number of packets.
fn read_upto(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
    shbs: &mut Vec<u64>,
    keep: bool,
) -> Result<(Records, Meta, u64), Failure> {
    let n = src.size();
    check_head(src)?;
    let mut scan = Scan::default();
    let mut recs = Records::default();
    let stepped = loop {
        match scan.step(src, limits, keep.then_some(&mut recs)) {
            Ok(true) => {}
            Ok(false) => break Ok(()),
            Err(f) => break Err(f),
        }
    };
    shbs.extend_from_slice(&scan.walk.shbs);
    stepped?;
    let packets = scan.packets();
    let meta = scan.finish(n, warnings)?;
    Ok((recs, meta, packets))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::capture::bytes::Mem;
    use crate::capture::Interface;

    pub(crate) fn block(btype: u32, body: &[u8]) -> Vec<u8> {
        let len = (12 + body.len()).div_ceil(4) * 4;
        let mut b = btype.to_le_bytes().to_vec();
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b.extend_from_slice(body);
        b.resize(len - 4, 0);
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b
    }

    pub(crate) fn shb() -> Vec<u8> {
        block(
            SHB_MAGIC,
            &[
                0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ],
        )
    }

    pub(crate) fn idb(opts: &[u8]) -> Vec<u8> {
        let mut body = vec![1, 0, 0, 0, 0xff, 0xff, 0, 0];
        body.extend_from_slice(opts);
        block(IDB_MAGIC, &body)
    }

    pub(crate) fn epb(iface: u32, ts: u64, pkt: &[u8]) -> Vec<u8> {
        let mut body = iface.to_le_bytes().to_vec();
        body.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        body.extend_from_slice(&(ts as u32).to_le_bytes());
        body.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        body.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        body.extend_from_slice(pkt);
        block(EPB_MAGIC, &body)
    }

    #[test]
    fn epb_with_nanosecond_resolution() {
        let mut d = shb();
        d.extend(idb(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0])); // if_tsresol 10^-9
        d.extend(epb(0, 1_500_000_001, &[1, 2, 3]));
        let (r, m) = read(&mut Mem(&d), &Limits::default(), &mut Vec::new()).unwrap();
        assert_eq!(r.ts_ns, vec![1_500_000_001]);
        assert_eq!(r.caplen, vec![3]);
        assert!(matches!(
            m,
            Meta::Pcapng {
                sections: 1,
                blocks: 3,
                ..
            }
        ));
    }

    #[test]
    fn packet_for_a_missing_interface_is_located() {
        let mut d = shb();
        d.extend(epb(0, 0, &[1]));
        let e = read(&mut Mem(&d), &Limits::default(), &mut Vec::new()).unwrap_err();
        assert_eq!(e.offset, Some(28));
        assert!(e.message.starts_with("block 2: packet for interface 0"));
    }

    #[test]
    fn bad_trailer_and_cut_block() {
        // a block read whole by the walk (its trailer from that read) and one over `WHOLE`
        for size in [1, WHOLE] {
            let mut d = shb();
            d.extend(idb(&[]));
            let mut p = epb(0, 0, &vec![1; size]);
            let n = p.len();
            p[n - 4..].copy_from_slice(&7u32.to_le_bytes());
            d.extend(p.clone());
            let e = read(&mut Mem(&d), &Limits::default(), &mut Vec::new()).unwrap_err();
            assert!(
                e.message.contains("trailing length 7 differs"),
                "{size}: {}",
                e.message
            );
            assert_eq!(e.offset, Some(48), "{size}");
            d.truncate(d.len() - 6);
            let mut w = Vec::new();
            read(&mut Mem(&d), &Limits::default(), &mut w).unwrap();
            assert_eq!(w[0].code, "W-TRUNCATED");
        }
    }

    #[test]
    fn binary_resolution_and_offset() {
        let itf = Interface {
            linktype: 1,
            snaplen: 0,
            tsresol: 0x80 | 20,
            tsoffset: 10,
            fcslen: 0,
            name: None,
            section: 0,
        };
        assert_eq!(
            ts_to_ns((3 << 20) | (1 << 19), &itf),
            (13_500_000_000, false)
        );
        let far = Interface { tsresol: 0, ..itf };
        assert!(ts_to_ns(u64::MAX, &far).1);
    }
}
