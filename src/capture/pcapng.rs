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
use super::ngiface::{interfaces, opt, options, text, OPT_HARDWARE, OPT_OS, OPT_USERAPPL};
pub use super::ngiface::{ts_to_ns, MAX_SEC};
use super::ngpkt::packets;
use super::{commas, Failure, Limits, Meta, Records, Shb, Warn};
use pcap_parser::pcapng::{
    DSB_MAGIC, EPB_MAGIC, IDB_MAGIC, ISB_MAGIC, NRB_MAGIC, SHB_MAGIC, SPB_MAGIC,
};

/// The obsolete Packet Block (pcapng appendix), which pcap-parser does not name.
pub(super) const PB_MAGIC: u32 = 2;

const BT_JOURNAL: u32 = 9;
/// Blocks that hold no packets and are skipped silently (names, statistics, TLS secrets, journal).
const QUIET: [u32; 4] = [NRB_MAGIC, ISB_MAGIC, DSB_MAGIC, BT_JOURNAL];
/// Smallest legal total length of each block type, checked in this order.
const MIN_LEN: [(u32, u32); 5] = [
    (EPB_MAGIC, 32),
    (PB_MAGIC, 32),
    (SPB_MAGIC, 16),
    (IDB_MAGIC, 20),
    (SHB_MAGIC, 28),
];
/// One block found by the walk.
#[derive(Clone, Copy)]
pub(super) struct Block {
    pub(super) off: u64,
    pub(super) btype: u32,
    pub(super) len: u32,
    pub(super) e: Endian,
    pub(super) section: usize,
}

pub(super) fn corrupt(msg: String, block: usize, offset: u64) -> Failure {
    Failure::corrupt(format!("block {}: {msg}", commas(block as u64)), offset)
        .hint("the file is damaged from here on; `editcap -r` can keep the packets before it")
}

/// The block chain. The SHB type `0A0D0D0A` reads the same in both byte orders, so a section
/// is recognised before its byte order is known (pcapng §4.1).
fn walk(
    src: &mut dyn Source,
    limits: &Limits,
    blocks: &mut Vec<Block>,
    shbs: &mut Vec<u64>,
) -> Result<(Option<u64>, usize), Failure> {
    let n = src.size();
    let mut off = 0u64;
    let mut e = Endian { big: false };
    let mut sections = 0usize;
    while let Some(btype) = src.u32(e, off) {
        if btype == SHB_MAGIC {
            shbs.push(off);
            match src.get(off + 8, 4) {
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => e = Endian { big: false },
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => e = Endian { big: true },
                Some(bom) => {
                    let hex: String = bom.iter().map(|b| format!("{b:02x}")).collect();
                    return Err(corrupt(
                        format!("section header with a bad byte-order magic {hex}"),
                        blocks.len() + 1,
                        off,
                    ));
                }
                None => return Ok((Some(off), sections)), // cut inside the section header
            }
            sections += 1;
        }
        let Some(len) = src.u32(e, off + 4) else {
            break;
        };
        if len < 12 || len & 3 != 0 || u64::from(len) > limits.max_block_bytes {
            if u64::from(len) > limits.max_block_bytes && len & 3 == 0 {
                return Err(corrupt(
                    format!("block length {} is over the maximum of {} bytes", commas(len.into()), commas(limits.max_block_bytes)),
                    blocks.len() + 1,
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
                blocks.len() + 1,
                off,
            ));
        }
        let end = off + u64::from(len);
        if end > n {
            return Ok((Some(off), sections)); // the last block runs past the end of the file
        }
        blocks.push(Block {
            off,
            btype,
            len,
            e,
            section: sections.saturating_sub(1),
        });
        off = end;
    }
    Ok(((off != n).then_some(off), sections))
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
    let mut shbs = Vec::new();
    let mut first = Vec::new();
    let f = match read_upto(src, limits, &mut first, &mut shbs) {
        Ok(r) => {
            warnings.extend(first);
            return Ok(r);
        }
        Err(f) => f,
    };
    let at = f.offset.unwrap_or(0);
    let start = shbs.iter().copied().filter(|&s| s <= at).max().unwrap_or(0);
    if f.kind != super::Kind::Corrupt || start == 0 {
        warnings.extend(first);
        return Err(f);
    }
    let mut part = Limited {
        inner: src,
        size: start,
    };
    let (recs, meta) = read_upto(&mut part, limits, warnings, &mut Vec::new())?;
    let msg = format!(
        "the section starting at byte {} is damaged ({}); kept the {} packets of the sections before it",
        commas(start),
        f.message,
        commas(recs.len() as u64)
    );
    let w = Warn::new("W-SECTION", msg, 1).at(f.offset, None);
    warnings.push(w.hint("a later section of the file is damaged; `editcap -r` can cut it off"));
    Ok((recs, meta))
}

/// The first `size` bytes of a source.
struct Limited<'a> {
    inner: &'a mut dyn Source,
    size: u64,
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

/// [`read`] without the recovery (`shbs` gets the offset of every section header seen).
fn read_upto(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
    shbs: &mut Vec<u64>,
) -> Result<(Records, Meta), Failure> {
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
    let mut blocks = Vec::new();
    let (cut, sections) = walk(src, limits, &mut blocks, shbs)?;
    if sections == 0 || blocks.first().is_none_or(|b| b.btype != SHB_MAGIC) {
        let f = Failure::corrupt(format!("truncated section header block: {n} bytes"), n);
        return Err(f.hint("the file was cut short before the first packet"));
    }
    let nb = blocks.len() as u64;
    if let Some(stop) = cut {
        let msg = format!(
            "last block is cut short; kept the {} blocks before it",
            commas(nb)
        );
        let w = Warn::new("W-TRUNCATED", msg, 1).at(Some(stop), None);
        warnings.push(w.hint("the capture was cut short; rerun without --strict to keep them"));
    }
    check_blocks(src, &blocks)?;
    let shb = sections_of(src, &blocks)?;
    let ifaces = interfaces(src, &blocks, warnings)?;
    let (recs, used, simple, obsolete) = packets(src, &blocks, &ifaces, limits, warnings)?;
    let is_other = |b: &&Block| {
        !matches!(
            b.btype,
            SHB_MAGIC | IDB_MAGIC | EPB_MAGIC | PB_MAGIC | SPB_MAGIC
        ) && !QUIET.contains(&b.btype)
    };
    let n_other = blocks.iter().filter(is_other).count() as u64;
    if let Some(first) = blocks.iter().find(is_other) {
        let w = Warn::new(
            "W-UNKNOWN-BLOCK",
            "blocks of unknown or custom types skipped",
            n_other,
        );
        warnings.push(w.at(Some(first.off), None));
    }
    if recs.is_empty() {
        warnings.push(Warn::new("W-EMPTY", "the capture holds no packets", 1));
    }
    let mut used = used;
    if used.is_empty() {
        used = ifaces.iter().map(|f| f.linktype).collect();
        used.sort_unstable();
        used.dedup();
    }
    let meta = Meta::Pcapng {
        sections,
        interfaces: ifaces,
        shb,
        blocks: nb,
        simple,
        obsolete,
        used,
    };
    Ok((recs, meta))
}

/// Trailing lengths, then the minimum length of each block type.
fn check_blocks(src: &mut dyn Source, blocks: &[Block]) -> Result<(), Failure> {
    for (i, b) in blocks.iter().enumerate() {
        let trailer = src.u32(b.e, b.off + u64::from(b.len) - 4).unwrap_or(0);
        if trailer != b.len {
            return Err(corrupt(
                format!(
                    "trailing length {} differs from the leading length {}",
                    commas(trailer.into()),
                    commas(b.len.into())
                ),
                i + 1,
                b.off,
            ));
        }
    }
    for (bt, need) in MIN_LEN {
        if let Some((i, b)) = blocks
            .iter()
            .enumerate()
            .find(|(_, b)| b.btype == bt && b.len < need)
        {
            return Err(corrupt(
                format!(
                    "block of type {bt:#x} has length {}, less than its minimum {need}",
                    b.len
                ),
                i + 1,
                b.off,
            ));
        }
    }
    Ok(())
}

/// Section versions (only 1.x exists) and the first section's application/OS/hardware.
fn sections_of(src: &mut dyn Source, blocks: &[Block]) -> Result<Option<Shb>, Failure> {
    let mut shb = None;
    for (i, b) in blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.btype == SHB_MAGIC)
    {
        let (major, minor) = (
            src.u16(b.e, b.off + 12).unwrap_or(0),
            src.u16(b.e, b.off + 14).unwrap_or(0),
        );
        if major != 1 {
            return Err(corrupt(
                format!("section version {major}.{minor} (only 1.x exists)"),
                i + 1,
                b.off,
            ));
        }
        if shb.is_none() {
            let (o, _) = options(src, b.off + 24, b.off + u64::from(b.len) - 4, b.e);
            shb = Some((
                major,
                minor,
                text(opt(&o, OPT_USERAPPL)),
                text(opt(&o, OPT_OS)),
                text(opt(&o, OPT_HARDWARE)),
            ));
        }
    }
    Ok(shb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::bytes::Mem;
    use crate::capture::Interface;

    fn block(btype: u32, body: &[u8]) -> Vec<u8> {
        let len = (12 + body.len()).div_ceil(4) * 4;
        let mut b = btype.to_le_bytes().to_vec();
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b.extend_from_slice(body);
        b.resize(len - 4, 0);
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b
    }

    fn shb() -> Vec<u8> {
        block(
            SHB_MAGIC,
            &[
                0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ],
        )
    }

    fn idb(opts: &[u8]) -> Vec<u8> {
        let mut body = vec![1, 0, 0, 0, 0xff, 0xff, 0, 0];
        body.extend_from_slice(opts);
        block(IDB_MAGIC, &body)
    }

    fn epb(iface: u32, ts: u64, pkt: &[u8]) -> Vec<u8> {
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
        let mut d = shb();
        d.extend(idb(&[]));
        let mut p = epb(0, 0, &[1]);
        let n = p.len();
        p[n - 4] = 7;
        d.extend(p.clone());
        let e = read(&mut Mem(&d), &Limits::default(), &mut Vec::new()).unwrap_err();
        assert!(e.message.contains("trailing length 7 differs"));
        d.truncate(d.len() - 6);
        let mut w = Vec::new();
        read(&mut Mem(&d), &Limits::default(), &mut w).unwrap();
        assert_eq!(w[0].code, "W-TRUNCATED");
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
