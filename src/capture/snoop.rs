//! Sun snoop files (RFC 1761; Wireshark's wiretap/snoop.c): a 16-byte header ("snoop\0\0\0",
//! version 2 big-endian, datalink type), then records of a 24-byte big-endian header
//! (original length, included length, record length, cumulative drops, seconds, microseconds),
//! the packet bytes and padding up to the record length.

use super::bytes::{Endian, Source};
use super::{commas, Failure, Kind, Limits, Meta, Records, Warn};

const FILE_HEADER: u64 = 16;
const REC_HEADER: u64 = 24;
pub const MAGIC: &[u8; 8] = b"snoop\0\0\0";

/// The LINKTYPE_* of a snoop datalink type (wiretap/snoop.c's table): 802.3 and Ethernet (0,
/// 4) are Ethernet, FDDI (8) is FDDI; others keep a number no link table has (0x10000 + type),
/// so the file is read through tshark or refused with the type named.
fn linktype(dl: u32) -> u32 {
    match dl {
        0 | 4 => 1,
        8 => 10,
        _ => 0x1_0000u32.saturating_add(dl),
    }
}

/// Read a snoop file's header and records (not their packets).
pub fn read(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
) -> Result<(Records, Meta), Failure> {
    let e = Endian { big: true };
    let head = src.get(0, 8).unwrap_or(&[]);
    if head != MAGIC {
        return Err(Failure::new(Kind::Unknown, "not a snoop file").at(Some(0), None));
    }
    let (Some(version), Some(dl)) = (src.u32(e, 8), src.u32(e, 12)) else {
        return Err(Failure::corrupt("truncated snoop file header", 8)
            .hint("the file was cut short before the first packet; re-copy it"));
    };
    if !(2..=5).contains(&version) {
        let msg = format!("unusual snoop version {version} (read as 2)");
        warnings.push(Warn::new("W-VERSION", msg, 1).at(Some(8), None));
    }
    let lt = linktype(dl);
    let meta = Meta::Pcap {
        linktype: lt,
        snaplen: 0,
        nanos: false,
        version: (u16::try_from(version).unwrap_or(u16::MAX), 0),
    };
    let mut recs = Records {
        linktype: lt,
        ..Records::default()
    };
    if super::link::name(lt).is_none() {
        return Ok((recs, meta));
    }
    walk(src, limits, &mut recs, warnings)?;
    if recs.is_empty() {
        warnings.push(Warn::new("W-EMPTY", "the capture holds no packets", 1));
    }
    Ok((recs, meta))
}

/// The record chain: each header's record length says where the next one starts.
fn walk(
    src: &mut dyn Source,
    limits: &Limits,
    recs: &mut Records,
    warnings: &mut Vec<Warn>,
) -> Result<(), Failure> {
    let e = Endian { big: true };
    let n = src.size();
    let mut p = FILE_HEADER;
    while p < n {
        let frame = recs.len() as u64 + 1;
        let mut f = |k: u64| src.u32(e, p + k);
        let (Some(orig), Some(incl), Some(rlen), Some(sec), Some(usec)) =
            (f(0), f(4), f(8), f(16), f(20))
        else {
            let msg = format!(
                "last record is cut short (record header); kept the {} packets before it",
                commas(recs.len() as u64)
            );
            warnings.push(Warn::new("W-TRUNCATED", msg, 1).at(Some(p), Some(frame)));
            break;
        };
        if u64::from(incl) > limits.max_caplen || u64::from(rlen) < REC_HEADER + u64::from(incl) {
            let msg = format!("record length {rlen} cannot hold its header and {incl} captured bytes (or above the maximum)");
            return Err(Failure::corrupt(msg, p)
                .at(Some(p), Some(frame))
                .hint("the file is corrupt from here on"));
        }
        if p + REC_HEADER + u64::from(incl) > n {
            let msg = format!(
                "last record is cut short (packet data); kept the {} packets before it",
                commas(recs.len() as u64)
            );
            warnings.push(Warn::new("W-TRUNCATED", msg, 1).at(Some(p), Some(frame)));
            break;
        }
        recs.data_off.push(p + REC_HEADER);
        recs.caplen.push(incl);
        recs.origlen.push(orig.max(incl));
        recs.ts_ns
            .push(i64::from(sec) * 1_000_000_000 + i64::from(usec) * 1000);
        p += u64::from(rlen);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::bytes::Mem;

    fn file(recs: &[(&[u8], u32)]) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend(2u32.to_be_bytes());
        v.extend(4u32.to_be_bytes());
        for (data, pad) in recs {
            let incl = data.len() as u32;
            for x in [incl, incl, 24 + incl + pad, 0, 1_000, 5] {
                v.extend(x.to_be_bytes());
            }
            v.extend(*data);
            v.extend(vec![0u8; *pad as usize]);
        }
        v
    }

    #[test]
    fn records_padding_and_a_cut_last_record() {
        let f = file(&[(&[1, 2, 3], 1), (&[4; 8], 0)]);
        let (mut w, lim) = (Vec::new(), Limits::default());
        let (r, _) = read(&mut Mem(&f), &lim, &mut w).unwrap();
        assert_eq!(r.data_off, vec![40, 68]);
        assert_eq!(r.ts_ns[0], 1_000_000_005_000);
        assert!(w.is_empty());
        let (r, _) = read(&mut Mem(&f[..f.len() - 2]), &lim, &mut w).unwrap();
        assert_eq!((r.len(), w[0].code), (1, "W-TRUNCATED"));
        let mut bad = f.clone();
        bad[16 + 11] = 3; // record length below its header
        assert!(read(&mut Mem(&bad), &lim, &mut Vec::new()).is_err());
        assert!(read(&mut Mem(b"snoop"), &lim, &mut Vec::new()).is_err());
    }
}
