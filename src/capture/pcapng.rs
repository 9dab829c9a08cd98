//! pcapng files (draft-ietf-opsawg-pcapng): blocks of type u32 | total length u32 | body |
//! total length u32, padded to 4 bytes.
//!
//! Byte order is per section (each SHB's byte-order magic says which); interface ids count
//! the IDBs of the current section only. Link type, snaplen, time resolution and offset, and
//! FCS length are per interface. Frame numbers count packet blocks (EPB, obsolete PB, SPB),
//! as Wireshark numbers them. pcap-parser's block type constants name the blocks; the block
//! walk and checks are ours, so that every refusal names the block number and its offset.

use super::bytes::{Endian, Source};
use super::{commas, Failure, Interface, Limits, Meta, Records, Shb, Text, Warn};
use pcap_parser::pcapng::{
    DSB_MAGIC, EPB_MAGIC, IDB_MAGIC, ISB_MAGIC, NRB_MAGIC, SHB_MAGIC, SPB_MAGIC,
};

/// The obsolete Packet Block (pcapng appendix), which pcap-parser does not name.
const PB_MAGIC: u32 = 2;

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
const OPT_NAME: u16 = 2;
const OPT_HARDWARE: u16 = 2;
const OPT_OS: u16 = 3;
const OPT_USERAPPL: u16 = 4;
const OPT_TSRESOL: u16 = 9;
const OPT_FCSLEN: u16 = 13;
const OPT_TSOFFSET: u16 = 14;
/// Largest timestamp accepted, in seconds from the epoch either way (int64 ns stays exact).
pub const MAX_SEC: i64 = 9_000_000_000;

/// One block found by the walk.
#[derive(Clone, Copy)]
struct Block {
    off: u64,
    btype: u32,
    len: u32,
    e: Endian,
    section: usize,
}

fn corrupt(msg: String, block: usize, offset: u64) -> Failure {
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

/// A block's options (first value of each code) and whether they are well formed (pcapng §3.5).
fn options(src: &mut dyn Source, start: u64, end: u64, e: Endian) -> (Vec<(u16, Vec<u8>)>, bool) {
    let region = usize::try_from(end.saturating_sub(start))
        .ok()
        .and_then(|n| src.get(start, n))
        .unwrap_or(&[]);
    let end = region.len();
    let mut out: Vec<(u16, Vec<u8>)> = Vec::new();
    let mut off = 0usize;
    while off + 4 <= end {
        let (Some(code), Some(len)) = (e.u16(region, off), e.u16(region, off + 2)) else {
            break;
        };
        if code == 0 {
            return (out, true); // opt_endofopt
        }
        let len = usize::from(len);
        let Some(v) = region.get(off + 4..off + 4 + len) else {
            return (out, false);
        };
        if !out.iter().any(|(c, _)| *c == code) {
            out.push((code, v.to_vec()));
        }
        off += 4 + len + ((4 - len % 4) % 4);
    }
    (out, true)
}

fn opt(opts: &[(u16, Vec<u8>)], code: u16) -> Option<&[u8]> {
    opts.iter()
        .find(|(c, _)| *c == code)
        .map(|(_, v)| v.as_slice())
}

fn text(v: Option<&[u8]>) -> Text {
    v.map(<[u8]>::to_vec)
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

/// Every IDB's interface.
fn interfaces(
    src: &mut dyn Source,
    blocks: &[Block],
    warnings: &mut Vec<Warn>,
) -> Result<Vec<Interface>, Failure> {
    let mut out = Vec::new();
    for (i, b) in blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.btype == IDB_MAGIC)
    {
        let (o, e) = (b.off, b.e);
        let (opts, ok) = options(src, o + 16, o + u64::from(b.len) - 4, e);
        if !ok {
            warnings.push(
                Warn::new(
                    "W-OPTION",
                    "interface option runs past its block (options after it ignored)",
                    1,
                )
                .at(Some(o), None),
            );
        }
        let mut itf = Interface {
            linktype: src.u16(e, o + 8).unwrap_or(0).into(),
            snaplen: src.u32(e, o + 12).unwrap_or(0),
            tsresol: 6, // default: 10^-6 s
            tsoffset: 0,
            fcslen: 0,
            name: text(opt(&opts, OPT_NAME)),
            section: b.section,
        };
        if let Some(&r) = opt(&opts, OPT_TSRESOL).and_then(|v| v.first()) {
            // 10^-19 s still fits a u64 tick count; finer resolutions (libpcap: "too high") cannot.
            if (r & 0x80 != 0 && (r & 0x7F) > 63) || (r & 0x80 == 0 && r > 19) {
                let what = if r & 0x80 != 0 {
                    format!("2^-{}", r & 0x7F)
                } else {
                    format!("10^-{r}")
                };
                return Err(corrupt(
                    format!("interface time resolution {what} s is beyond 64-bit timestamps"),
                    i + 1,
                    o,
                )
                .hint("the if_tsresol option is corrupt"));
            }
            itf.tsresol = r;
        }
        if let Some(v) = opt(&opts, OPT_TSOFFSET).filter(|v| v.len() == 8) {
            itf.tsoffset = e.i64(v, 0).unwrap_or(0);
        }
        if let Some(&f) = opt(&opts, OPT_FCSLEN).and_then(|v| v.first()) {
            itf.fcslen = f;
        }
        out.push(itf);
    }
    Ok(out)
}

/// A raw 64-bit timestamp of an interface as epoch ns, with exact integer math (float seconds
/// would lose sub-µs precision); true when it was out of range and clamped.
pub fn ts_to_ns(ts: u64, itf: &Interface) -> (i64, bool) {
    let r = itf.tsresol;
    let (sec, frac) = if r & 0x80 != 0 {
        let mut n = u32::from(r & 0x7F).min(63);
        let sec = ts >> n;
        let mut frac = ts & ((1u64 << n) - 1);
        if n > 32 {
            frac >>= n - 32; // keep frac * 1e9 below 2^64: drop bits finer than 2^-32 s
            n = 32;
        }
        (sec, (frac * 1_000_000_000) >> n)
    } else {
        let unit = 10u64.pow(u32::from(r.min(19)));
        let (sec, frac) = (ts / unit, ts % unit);
        (
            sec,
            if r <= 9 {
                frac * 10u64.pow(u32::from(9 - r))
            } else {
                frac / 10u64.pow(u32::from(r - 9))
            },
        )
    };
    let mut bad = sec > MAX_SEC as u64;
    let s = (sec.min(MAX_SEC as u64) as i64).wrapping_add(itf.tsoffset);
    bad |= !(-MAX_SEC..=MAX_SEC).contains(&s);
    (
        s.clamp(-MAX_SEC, MAX_SEC) * 1_000_000_000 + frac as i64,
        bad,
    )
}

/// One packet block's fixed fields.
struct Pkt {
    block: usize,
    off: u64,
    spb: bool,
    iface: usize,
    caplen: u64,
    origlen: u64,
}

/// Every packet block's interface (checked against its section's IDBs) and lengths; the
/// counts of simple and obsolete packet blocks.
fn packet_blocks(src: &mut dyn Source, blocks: &[Block]) -> Result<(Vec<Pkt>, u64, u64), Failure> {
    let mut pk: Vec<Pkt> = Vec::new();
    let (mut idb_total, mut idb_at_section, mut section) = (0usize, 0usize, usize::MAX);
    let (mut simple, mut obsolete) = (0u64, 0u64);
    for (i, b) in blocks.iter().enumerate() {
        if b.section != section {
            section = b.section;
            idb_at_section = idb_total;
        }
        if b.btype == IDB_MAGIC {
            idb_total += 1;
            continue;
        }
        let (o, e) = (b.off, b.e);
        let local = match b.btype {
            EPB_MAGIC => src.u32(e, o + 8).unwrap_or(0) as usize,
            PB_MAGIC => usize::from(src.u16(e, o + 8).unwrap_or(0)), // then a 16-bit drop count
            SPB_MAGIC => 0, // SPB: interface 0 (pcapng §4.4)
            _ => continue,
        };
        let known = idb_total - idb_at_section;
        if local >= known {
            return Err(corrupt(
                format!("packet for interface {local}, but its section has only {known} interface(s) described before it"),
                i + 1,
                o,
            )
            .hint("an interface description block is missing or the interface id is corrupt"));
        }
        let spb = b.btype == SPB_MAGIC;
        simple += u64::from(spb);
        obsolete += u64::from(b.btype == PB_MAGIC);
        let caplen = if spb {
            0
        } else {
            src.u32(e, o + 20).unwrap_or(0).into()
        };
        let origlen = src.u32(e, o + if spb { 8 } else { 24 }).unwrap_or(0).into();
        pk.push(Pkt {
            block: i,
            off: o,
            spb,
            iface: idb_at_section + local,
            caplen,
            origlen,
        });
    }
    Ok((pk, simple, obsolete))
}

/// Packet blocks: interface, lengths (checked), timestamps; returns the records, the link
/// types used, and the counts of simple and obsolete packet blocks.
fn packets(
    src: &mut dyn Source,
    blocks: &[Block],
    ifaces: &[Interface],
    limits: &Limits,
    warnings: &mut Vec<Warn>,
) -> Result<(Records, Vec<u32>, u64, u64), Failure> {
    let (mut pk, simple, obsolete) = packet_blocks(src, blocks)?;
    for p in pk.iter_mut() {
        let room =
            u64::from(blocks.get(p.block).map_or(0, |b| b.len)) - if p.spb { 16 } else { 32 };
        if !p.spb && p.caplen > room {
            return Err(corrupt(
                format!(
                    "packet claims {} captured bytes but its block holds {}",
                    commas(p.caplen),
                    commas(room)
                ),
                p.block + 1,
                p.off,
            ));
        }
        if p.spb {
            // SPB: the captured length is implied by the block length, original length and snaplen.
            let snap = ifaces.get(p.iface).map_or(0, |f| u64::from(f.snaplen));
            p.caplen = p.origlen.min(room).min(if snap > 0 { snap } else { room });
        }
    }
    if let Some(p) = pk.iter().find(|p| p.caplen > limits.max_caplen) {
        return Err(corrupt(
            format!(
                "packet of {} captured bytes, beyond the maximum of {}",
                commas(p.caplen),
                commas(limits.max_caplen)
            ),
            p.block + 1,
            p.off,
        )
        .hint("raise max_caplen in [limits] if the file is genuine"));
    }
    let recs = records(src, &pk, blocks, ifaces, warnings);
    let mut used: Vec<u32> = pk
        .iter()
        .filter_map(|p| ifaces.get(p.iface))
        .map(|f| f.linktype)
        .collect();
    used.sort_unstable();
    used.dedup();
    Ok((recs, used, simple, obsolete))
}

/// Per-record lengths, link types and timestamps, with their warnings.
fn records(
    src: &mut dyn Source,
    pk: &[Pkt],
    blocks: &[Block],
    ifaces: &[Interface],
    warnings: &mut Vec<Warn>,
) -> Records {
    let mut r = Records::default();
    let (mut n_cap, mut n_snap, mut clamped, mut last_ts) = (0u64, 0u64, 0u64, 0i64);
    let none = Interface {
        linktype: 0,
        snaplen: 0,
        tsresol: 6,
        tsoffset: 0,
        fcslen: 0,
        name: None,
        section: 0,
    };
    for p in pk {
        let itf = ifaces.get(p.iface).unwrap_or(&none);
        let (mut cap, mut orig) = (p.caplen, p.origlen);
        if cap > orig {
            n_cap += 1;
            orig = cap;
        }
        if itf.snaplen > 0 && cap > u64::from(itf.snaplen) {
            n_snap += 1;
        }
        let ts = if p.spb {
            last_ts // an SPB has no timestamp: the previous timed packet's time (0 before any)
        } else {
            let e = blocks.get(p.block).map_or(Endian { big: false }, |b| b.e);
            let raw = (u64::from(src.u32(e, p.off + 12).unwrap_or(0)) << 32)
                | u64::from(src.u32(e, p.off + 16).unwrap_or(0));
            let (ns, bad) = ts_to_ns(raw, itf);
            clamped += u64::from(bad);
            last_ts = ns;
            ns
        };
        if itf.fcslen > 0 {
            // The FCS trails the frame: it is in the captured bytes only if the capture reached it.
            let fcs = u64::from(itf.fcslen);
            cap = cap.min(orig.saturating_sub(fcs));
            orig = orig.saturating_sub(fcs);
        }
        r.data_off.push(p.off + if p.spb { 12 } else { 28 });
        r.caplen.push(cap as u32);
        r.origlen.push(orig as u32);
        r.ts_ns.push(ts);
        r.linktypes.push(itf.linktype);
    }
    let simple = pk.iter().filter(|p| p.spb).count() as u64;
    record_warnings([n_cap, n_snap, clamped, simple], warnings);
    r
}

/// The warnings of the packet records: captured > original length, over the snaplen, clamped
/// timestamps, simple packet blocks.
fn record_warnings([n_cap, n_snap, clamped, simple]: [u64; 4], warnings: &mut Vec<Warn>) {
    if n_cap > 0 {
        warnings.push(Warn::new(
            "W-CAPLEN",
            "captured length larger than the original length (original length raised)",
            n_cap,
        ));
    }
    if n_snap > 0 {
        warnings.push(Warn::new(
            "W-SNAPLEN",
            "packets longer than their interface's snaplen (accepted, as libpcap does)",
            n_snap,
        ));
    }
    if clamped > 0 {
        let msg = format!(
            "timestamps beyond ±{} s from the epoch (clamped)",
            commas(MAX_SEC as u64)
        );
        warnings.push(Warn::new("W-TIMESTAMP", msg, clamped));
    }
    if simple > 0 {
        warnings.push(Warn::new(
            "W-NO-TIMESTAMP",
            "simple packet blocks carry no timestamp (previous packet's time used)",
            simple,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::bytes::Mem;

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
