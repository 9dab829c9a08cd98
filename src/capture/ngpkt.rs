//! pcapng packet blocks (EPB, obsolete PB, SPB): interface ids checked against the section's
//! IDBs, captured lengths against their blocks and the limits, and the records with their
//! timestamps and warnings.

use super::bytes::{Endian, Source};
use super::ngiface::{ts_to_ns, MAX_SEC};
use super::pcapng::{corrupt, Block, PB_MAGIC};
use super::{commas, Failure, Interface, Limits, Records, Warn};
use pcap_parser::pcapng::{EPB_MAGIC, IDB_MAGIC, SPB_MAGIC};

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
pub(super) fn packets(
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
