//! pcapng packet blocks (EPB, obsolete PB, SPB), one at a time in file order: interface ids
//! checked against the section's IDBs, captured lengths against their blocks and the limits,
//! and the records with their timestamps and warnings.

use super::bytes::Source;
use super::ngiface::{ts_to_ns, MAX_SEC};
use super::pcapng::{corrupt, Block, Errs, CAPLEN, PB_MAGIC, PKT_IFACE, ROOM};
use super::{commas, Interface, Limits, Records, Warn};
use pcap_parser::pcapng::{EPB_MAGIC, IDB_MAGIC, SPB_MAGIC};

/// An interface for packets whose own is missing (the file is then refused anyway).
const NONE: Interface = Interface {
    linktype: 0,
    snaplen: 0,
    tsresol: 6,
    tsoffset: 0,
    fcslen: 0,
    name: None,
    section: 0,
};

/// The packet blocks seen so far (EPB, obsolete PB, SPB), one block at a time in file order:
/// the interface ids of the current section, the counts and the records' warnings.
#[derive(Default)]
pub(super) struct Packets {
    idb_total: usize,
    idb_at_section: usize,
    section: Option<usize>,
    pub(super) simple: u64,
    pub(super) obsolete: u64,
    /// Packet blocks.
    pub(super) count: u64,
    /// Link types of the packets' interfaces (sorted, once each).
    pub(super) used: Vec<u32>,
    n_cap: u64,
    n_snap: u64,
    clamped: u64,
    /// The previous timed packet's time (an SPB's).
    last_ts: i64,
}

impl Packets {
    /// Block `i` (0-based): an IDB is counted in its section, a packet block has its interface
    /// checked against the section's IDBs and its captured length against its block and the
    /// limits (each check's first failure into `errs`), and, while `errs` holds none, its
    /// record appended to `recs`.
    pub(super) fn on_block(
        &mut self,
        src: &mut dyn Source,
        (b, i): (&Block, usize),
        ifaces: &[Interface],
        limits: &Limits,
        errs: &mut Errs,
        recs: Option<&mut Records>,
    ) {
        if self.section != Some(b.section) {
            self.section = Some(b.section);
            self.idb_at_section = self.idb_total;
        }
        if b.btype == IDB_MAGIC {
            self.idb_total += 1;
            return;
        }
        let o = b.off;
        let local = match b.btype {
            EPB_MAGIC => b.u32(src, 8).unwrap_or(0) as usize,
            PB_MAGIC => usize::from(b.u16(src, 8).unwrap_or(0)), // then a 16-bit drop count
            SPB_MAGIC => 0,                                      // SPB: interface 0 (pcapng §4.4)
            _ => return,
        };
        let known = self.idb_total - self.idb_at_section;
        if local >= known {
            errs.set(PKT_IFACE, i, || corrupt(
                format!("packet for interface {local}, but its section has only {known} interface(s) described before it"),
                i + 1,
                o,
            )
            .hint("an interface description block is missing or the interface id is corrupt"));
        }
        let spb = b.btype == SPB_MAGIC;
        self.simple += u64::from(spb);
        self.obsolete += u64::from(b.btype == PB_MAGIC);
        self.count += 1;
        let mut caplen: u64 = if spb {
            0
        } else {
            b.u32(src, 20).unwrap_or(0).into()
        };
        let origlen: u64 = b.u32(src, if spb { 8 } else { 24 }).unwrap_or(0).into();
        let Some(room) = u64::from(b.len).checked_sub(if spb { 16 } else { 32 }) else {
            return; // under its type's minimum length: refused (`MIN_LEN`)
        };
        if !spb && caplen > room {
            errs.set(ROOM, i, || {
                corrupt(
                    format!(
                        "packet claims {} captured bytes but its block holds {}",
                        commas(caplen),
                        commas(room)
                    ),
                    i + 1,
                    o,
                )
            });
        }
        let itf = ifaces.get(self.idb_at_section + local);
        if spb {
            // SPB: the captured length is implied by the block length, original length and snaplen.
            let snap = itf.map_or(0, |f| u64::from(f.snaplen));
            caplen = origlen.min(room).min(if snap > 0 { snap } else { room });
        }
        if caplen > limits.max_caplen {
            errs.set(CAPLEN, i, || {
                corrupt(
                    format!(
                        "packet of {} captured bytes, beyond the maximum of {}",
                        commas(caplen),
                        commas(limits.max_caplen)
                    ),
                    i + 1,
                    o,
                )
                .hint("raise max_caplen in [limits] if the file is genuine")
            });
        }
        if let Some(f) = itf {
            if let Err(k) = self.used.binary_search(&f.linktype) {
                self.used.insert(k, f.linktype);
            }
        }
        let r = self.record(src, b, spb, itf.unwrap_or(&NONE), (caplen, origlen));
        if let Some(recs) = recs.filter(|_| !errs.any()) {
            recs.data_off.push(o + if spb { 12 } else { 28 });
            recs.caplen.push(r.0);
            recs.origlen.push(r.1);
            recs.ts_ns.push(r.2);
            recs.linktypes.push(itf.map_or(0, |f| f.linktype));
        }
    }

    /// A packet's captured and original lengths and time, counted for the warnings.
    fn record(
        &mut self,
        src: &mut dyn Source,
        b: &Block,
        spb: bool,
        itf: &Interface,
        (mut cap, mut orig): (u64, u64),
    ) -> (u32, u32, i64) {
        if cap > orig {
            self.n_cap += 1;
            orig = cap;
        }
        if itf.snaplen > 0 && cap > u64::from(itf.snaplen) {
            self.n_snap += 1;
        }
        let ts = if spb {
            self.last_ts // an SPB has no timestamp: the previous timed packet's time (0 before any)
        } else {
            let raw = (u64::from(b.u32(src, 12).unwrap_or(0)) << 32)
                | u64::from(b.u32(src, 16).unwrap_or(0));
            let (ns, bad) = ts_to_ns(raw, itf);
            self.clamped += u64::from(bad);
            self.last_ts = ns;
            ns
        };
        if itf.fcslen > 0 {
            // The FCS trails the frame: it is in the captured bytes only if the capture reached it.
            let fcs = u64::from(itf.fcslen);
            cap = cap.min(orig.saturating_sub(fcs));
            orig = orig.saturating_sub(fcs);
        }
        (cap as u32, orig as u32, ts)
    }

    /// The warnings of the packet records (once every block has been seen).
    pub(super) fn warnings(&self, warnings: &mut Vec<Warn>) {
        record_warnings(
            [self.n_cap, self.n_snap, self.clamped, self.simple],
            warnings,
        );
    }
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
