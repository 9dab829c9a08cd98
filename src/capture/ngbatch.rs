//! A pcapng file's records in batches, for a reader that never holds them all (`crate::stream`).
//!
//! The batches walk the blocks through `pcapng::read`'s own walk and checks (`ngscan::Scan`),
//! resumed where the last batch ended, and the file is settled once the walk ends
//! ([`Batches::finish`]): `read`'s warnings and metadata, or its error, or, where a later
//! section is damaged, the walk to run instead: `read` then keeps the sections before it
//! (W-SECTION), and so does that walk. So a sound file is walked once, with no check of the
//! whole file before the first batch: that check was a whole walk in which the passes waited
//! (0.15–0.2 s of a 1.2M-packet capture), for a verdict that changes the answer only for a
//! refused or damaged file, whose reader starts over (`crate::stream::source`).

use super::bytes::Source;
use super::ngscan::Scan;
use super::pcapng::{check_head, damaged_section, section_warning, Limited};
use super::{Failure, Limits, Meta, Records, Warn};

/// The batches of one pcapng file.
pub struct Batches {
    scan: Scan,
    /// The bytes walked: the file's, or those before a damaged section.
    size: u64,
    /// The walk's own failure (a block it cannot step over), which ends it.
    failed: Option<Failure>,
    /// Where a damaged section starts (the walk stops there) and its failure, for W-SECTION.
    section: Option<(u64, Failure)>,
}

/// Why a walk did not settle into warnings and metadata.
pub enum Ended {
    /// `read`'s error for the file.
    Failed(Failure),
    /// A section after the first is damaged: `read` keeps the sections before it
    /// (W-SECTION), and so does this walk, to run from the start instead.
    Damaged(Box<Batches>),
}

impl Batches {
    /// The walk from the file's start, once its first bytes say pcapng (else `read`'s error).
    pub fn start(src: &mut dyn Source) -> Result<Batches, Failure> {
        check_head(src)?;
        Ok(Batches::over(src.size(), None))
    }

    /// A walk from the file's start over its first `size` bytes (`section`: the damaged one
    /// that begins there).
    fn over(size: u64, section: Option<(u64, Failure)>) -> Batches {
        Batches {
            scan: Scan::default(),
            size,
            failed: None,
            section,
        }
    }

    /// The same walk from the file's start again (a second read of a file whose first read
    /// [`Batches::finish`] settled: its checks and warnings are the same).
    pub fn restart(&self) -> Batches {
        Batches::over(self.size, self.section.clone())
    }

    /// The next records into `recs` (emptied first): at most `max` of them and about
    /// `max_bytes` of blocks. False once the walk has ended. A block that fails a check stops
    /// the records (`ngpkt::Packets::on_block`) but not the walk, so that [`Batches::finish`]
    /// reports the failure `read` reports.
    pub fn next(
        &mut self,
        src: &mut dyn Source,
        limits: &Limits,
        recs: &mut Records,
        max: usize,
        max_bytes: u64,
    ) -> bool {
        *recs = Records::default();
        if self.failed.is_some() {
            return false;
        }
        let mut part = Limited {
            inner: src,
            size: self.size,
        };
        let start = self.scan.walk.off;
        while recs.len() < max && (recs.is_empty() || self.scan.walk.off - start < max_bytes) {
            match self.scan.step(&mut part, limits, Some(recs)) {
                Ok(true) => {}
                Ok(false) => break,
                Err(f) => {
                    self.failed = Some(f);
                    break;
                }
            }
        }
        !recs.is_empty()
    }

    /// Once [`Batches::next`] has given false: the file's warnings (into `warnings`) and
    /// metadata as `read` gives them, or why not, as `pcapng::read_kept` decides.
    pub fn finish(&mut self, warnings: &mut Vec<Warn>) -> Result<Meta, Ended> {
        let scan = std::mem::take(&mut self.scan);
        let (shbs, kept) = (scan.walk.shbs.clone(), scan.packets());
        let f = match self.failed.take() {
            Some(f) => f,
            None => match scan.finish(self.size, warnings) {
                Ok(meta) => {
                    if let Some((start, f)) = &self.section {
                        warnings.push(section_warning(*start, f, kept));
                    }
                    return Ok(meta);
                }
                Err(f) => f,
            },
        };
        // (the walk before a damaged section is not cut again: `read_kept` recovers once)
        match damaged_section(&f, &shbs).filter(|_| self.section.is_none()) {
            Some(start) => Err(Ended::Damaged(Box::new(Batches::over(
                start,
                Some((start, f)),
            )))),
            None => Err(Ended::Failed(f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::bytes::Mem;
    use crate::capture::pcapng::read;
    use crate::capture::pcapng::tests::{block, epb, idb, shb};
    use pcap_parser::pcapng::SPB_MAGIC;

    /// Every batch's records, and how the walk settled.
    fn walk(d: &[u8], max: usize) -> (Records, Result<Meta, Ended>, Vec<Warn>) {
        let mut b = Batches::start(&mut Mem(d)).unwrap();
        let (mut got, mut recs) = (Records::default(), Records::default());
        while b.next(&mut Mem(d), &Limits::default(), &mut recs, max, 1 << 20) {
            assert!(recs.len() <= max);
            got.data_off.extend(&recs.data_off);
            got.caplen.extend(&recs.caplen);
            got.ts_ns.extend(&recs.ts_ns);
            got.linktypes.extend(&recs.linktypes);
        }
        let mut w = Vec::new();
        let end = b.finish(&mut w);
        (got, end, w)
    }

    fn file(second: &[u8]) -> Vec<u8> {
        let mut d = shb();
        d.extend(idb(&[]));
        for k in 0..5u8 {
            d.extend(epb(0, 1000 + u64::from(k), &[k; 3]));
            d.extend(block(SPB_MAGIC, &[2, 0, 0, 0, k, k]));
            d.extend(block(0x0BAD, &[k]));
        }
        d.extend(shb());
        d.extend(second);
        d
    }

    #[test]
    fn batches_give_the_records_warnings_and_meta_of_read() {
        let mut second = idb(&[]);
        second.extend(epb(0, 7, &[1]));
        let d = file(&second);
        let mut want = Vec::new();
        let (r, meta) = read(&mut Mem(&d), &Limits::default(), &mut want).unwrap();
        assert_eq!(r.len(), 11);
        for max in [1, 2, 3, 64] {
            let (got, end, w) = walk(&d, max);
            assert_eq!(
                (got.data_off, got.caplen, got.ts_ns, got.linktypes),
                (
                    r.data_off.clone(),
                    r.caplen.clone(),
                    r.ts_ns.clone(),
                    r.linktypes.clone()
                )
            );
            let end = end.ok().expect("settled");
            assert_eq!(format!("{end:?}"), format!("{meta:?}"));
            assert_eq!(w, want);
        }
    }

    #[test]
    fn a_damaged_later_section_or_a_failure_is_what_read_says() {
        // a packet for an interface the second section never described: read keeps the first
        let d = file(&epb(0, 7, &[1]));
        let mut want = Vec::new();
        assert_eq!(
            read(&mut Mem(&d), &Limits::default(), &mut want)
                .unwrap()
                .0
                .len(),
            10
        );
        assert!(want.iter().any(|w| w.code == "W-SECTION"));
        let Err(Ended::Damaged(mut again)) = walk(&d, 4).1 else {
            panic!("not damaged")
        };
        // the walk before the damaged section: read's records and warnings
        let (mut recs, mut n) = (Records::default(), 0);
        while again.next(&mut Mem(&d), &Limits::default(), &mut recs, 3, 1 << 20) {
            n += recs.len();
        }
        let mut w = Vec::new();
        assert!(again.finish(&mut w).is_ok());
        assert_eq!((n, w), (10, want));
        // the same in the first section: read's error
        let mut d = shb();
        d.extend(epb(0, 7, &[1]));
        let e = read(&mut Mem(&d), &Limits::default(), &mut Vec::new()).unwrap_err();
        match walk(&d, 4).1 {
            Err(Ended::Failed(f)) => assert_eq!((f.message, f.offset), (e.message, e.offset)),
            _ => panic!("not read's error"),
        }
        // a block length the walk cannot step over, in the first section
        let mut d = shb();
        d.extend_from_slice(&[1, 0, 0, 0, 13, 0, 0, 0]);
        let e = read(&mut Mem(&d), &Limits::default(), &mut Vec::new()).unwrap_err();
        assert!(e.message.contains("not a multiple of 4"), "{}", e.message);
        match walk(&d, 4).1 {
            Err(Ended::Failed(f)) => assert_eq!(f.message, e.message),
            _ => panic!("not read's error"),
        }
    }
}
