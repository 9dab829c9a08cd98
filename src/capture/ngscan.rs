//! A pcapng file's blocks one at a time, in file order: the block walk (`pcapng::Walk`), then
//! every check `read_capture` makes of a block (trailing length, minimum length, section
//! version, interface, packet), each check's first failure kept so that the one reported is
//! the earliest check's (see `pcapng::Errs`), and the warnings once the walk has ended.
//! `pcapng::read` runs it over the whole file; `ngbatch::Batches` resumes it batch by batch.

use super::bytes::Source;
use super::ngiface::{interface, opt, options, text, OPT_HARDWARE, OPT_OS, OPT_USERAPPL};
use super::ngpkt::Packets;
use super::pcapng::{
    corrupt, Block, Errs, Walk, IFACE, MIN_LEN, PB_MAGIC, QUIET, TRAILER, VERSION,
};
use super::{commas, Failure, Interface, Limits, Meta, Records, Shb, Warn};
use pcap_parser::pcapng::{EPB_MAGIC, IDB_MAGIC, SHB_MAGIC, SPB_MAGIC};

/// The blocks read so far and what they said.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) walk: Walk,
    errs: Errs,
    /// The first section's version, application, OS and hardware.
    shb: Option<Shb>,
    ifaces: Vec<Interface>,
    /// W-OPTION warnings, with their block's index.
    options: Vec<(usize, Warn)>,
    pkts: Packets,
    /// Blocks of unknown or custom types, and the first one's offset.
    other: (u64, Option<u64>),
}

impl Scan {
    /// The next block through every check, its record (if a packet) into `recs`; false once
    /// the chain has ended, an error where it breaks.
    pub(super) fn step(
        &mut self,
        src: &mut dyn Source,
        limits: &Limits,
        recs: Option<&mut Records>,
    ) -> Result<bool, Failure> {
        let Some(b) = self.walk.step(src, limits)? else {
            return Ok(false);
        };
        let i = self.walk.blocks - 1;
        self.check(src, &b, i);
        match b.btype {
            SHB_MAGIC => self.section(src, &b, i),
            IDB_MAGIC => {
                let (itf, w, f) = interface(src, &b, i);
                self.ifaces.push(itf);
                if let Some(w) = w {
                    self.options.push((i, w));
                }
                if let Some(f) = f {
                    self.errs.set(IFACE, i, || f);
                }
            }
            EPB_MAGIC | PB_MAGIC | SPB_MAGIC => {}
            t if !QUIET.contains(&t) => {
                self.other.0 += 1;
                self.other.1.get_or_insert(b.off);
            }
            _ => {}
        }
        let ifaces = &self.ifaces;
        (self.pkts).on_block(src, (&b, i), ifaces, limits, &mut self.errs, recs);
        Ok(true)
    }

    /// Trailing length, then the minimum length of its type.
    fn check(&mut self, src: &mut dyn Source, b: &Block, i: usize) {
        let at = b.off + u64::from(b.len) - 4;
        let trailer = b.tail.or_else(|| src.u32(b.e, at)).unwrap_or(0);
        if trailer != b.len {
            self.errs.set(TRAILER, i, || {
                corrupt(
                    format!(
                        "trailing length {} differs from the leading length {}",
                        commas(trailer.into()),
                        commas(b.len.into())
                    ),
                    i + 1,
                    b.off,
                )
            });
        }
        if let Some(k) = MIN_LEN.iter().position(|&(bt, _)| bt == b.btype) {
            let need = MIN_LEN[k].1;
            if b.len < need {
                self.errs.set(TRAILER + 1 + k, i, || {
                    corrupt(
                        format!(
                            "block of type {:#x} has length {}, less than its minimum {need}",
                            b.btype, b.len
                        ),
                        i + 1,
                        b.off,
                    )
                });
            }
        }
    }

    /// A section's version (only 1.x exists); the first section's application/OS/hardware.
    fn section(&mut self, src: &mut dyn Source, b: &Block, i: usize) {
        let (major, minor) = (b.u16(src, 12).unwrap_or(0), b.u16(src, 14).unwrap_or(0));
        if major != 1 {
            self.errs.set(VERSION, i, || {
                corrupt(
                    format!("section version {major}.{minor} (only 1.x exists)"),
                    i + 1,
                    b.off,
                )
            });
            return;
        }
        if self.shb.is_none() {
            let (o, _) = options(src, b.off + 24, b.off + u64::from(b.len) - 4, b.e);
            self.shb = Some((
                major,
                minor,
                text(opt(&o, OPT_USERAPPL)),
                text(opt(&o, OPT_OS)),
                text(opt(&o, OPT_HARDWARE)),
            ));
        }
    }

    /// The packet blocks seen.
    pub(super) fn packets(&self) -> u64 {
        self.pkts.count
    }

    /// Once the walk has ended (`n`: the file's size): the failure reported, or the warnings
    /// and the file's metadata.
    pub(super) fn finish(mut self, n: u64, warnings: &mut Vec<Warn>) -> Result<Meta, Failure> {
        let (sections, nb) = (self.walk.sections, self.walk.blocks as u64);
        if sections == 0 || nb == 0 {
            let f = Failure::corrupt(format!("truncated section header block: {n} bytes"), n);
            return Err(f.hint("the file was cut short before the first packet"));
        }
        if let Some(Some(stop)) = self.walk.cut {
            let msg = format!(
                "last block is cut short; kept the {} blocks before it",
                commas(nb)
            );
            let w = Warn::new("W-TRUNCATED", msg, 1).at(Some(stop), None);
            warnings.push(w.hint("the capture was cut short; rerun without --strict to keep them"));
        }
        let failed = self.errs.first();
        // the interface warnings are logged up to the first interface that fails
        let upto = match &failed {
            Some((k, _, _)) if *k < IFACE => 0,
            Some((IFACE, i, _)) => i + 1,
            _ => usize::MAX,
        };
        let options = self.options.into_iter().filter(|(i, _)| *i < upto);
        warnings.extend(options.map(|(_, w)| w));
        if let Some((_, _, f)) = failed {
            return Err(f);
        }
        self.pkts.warnings(warnings);
        let (n_other, first) = self.other;
        if let Some(off) = first {
            let w = Warn::new(
                "W-UNKNOWN-BLOCK",
                "blocks of unknown or custom types skipped",
                n_other,
            );
            warnings.push(w.at(Some(off), None));
        }
        if self.pkts.count == 0 {
            warnings.push(Warn::new("W-EMPTY", "the capture holds no packets", 1));
        }
        let mut used = std::mem::take(&mut self.pkts.used);
        if used.is_empty() {
            used = self.ifaces.iter().map(|f| f.linktype).collect();
            used.sort_unstable();
            used.dedup();
        }
        Ok(Meta::Pcapng {
            sections,
            interfaces: self.ifaces,
            shb: self.shb,
            blocks: nb,
            simple: self.pkts.simple,
            obsolete: self.pkts.obsolete,
            used,
        })
    }
}
