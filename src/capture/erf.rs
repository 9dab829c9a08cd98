//! Endace ERF files (Endace "ERF types" reference; Wireshark's wiretap/erf.c): records with no
//! file header, each a 16-byte header (little-endian 32.32 fixed-point timestamp, type, flags,
//! big-endian record length, loss counter, wire length), extension headers while the type's
//! (then each extension's) high bit is set (8 bytes each), then the payload: Ethernet types
//! carry 2 bytes (offset, pad) before the frame; IPv4/IPv6 types the bare packet.

use super::bytes::{Endian, Source};
use super::{commas, Failure, Kind, Limits, Meta, Records, Warn};

const REC_HEADER: u64 = 16;
/// Extension headers followed at most per record.
const MAX_EXT: usize = 8;

/// (LINKTYPE_*, bytes before the frame) of an ERF type (without its extension bit).
fn kind(t: u8) -> Option<(u32, u64)> {
    match t {
        2 | 10 | 16 => Some((1, 2)), // ETH, COLOR_ETH, DSM_COLOR_ETH
        22 | 23 => Some((101, 0)),   // IPV4, IPV6: raw IP
        _ => None,
    }
}

/// Whether `head` looks like ERF (no magic: wiretap/erf.c checks the first records' fields).
pub fn plausible(head: &[u8]) -> bool {
    let mut p = 0usize;
    for _ in 0..2 {
        let (Some(&t), Some(r)) = (head.get(p + 8), head.get(p + 10..p + 12)) else {
            return p > 0;
        };
        let rlen = usize::from(u16::from_be_bytes([r[0], r[1]]));
        if kind(t & 0x7F).is_none()
            || rlen < 16 + 2
            || head.get(p + 9).is_some_and(|f| f & 0xF0 != 0)
        {
            return false;
        }
        p += rlen;
    }
    true
}

/// Read an ERF file's records (not their packets).
pub fn read(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
) -> Result<(Records, Meta), Failure> {
    let head = src
        .get(0, 32.min(src.size() as usize))
        .unwrap_or(&[])
        .to_vec();
    if !plausible(&head) {
        return Err(Failure::new(Kind::Unknown, "not an ERF file").at(Some(0), None));
    }
    let mut recs = Records::default();
    let (mut p, n, be) = (0u64, src.size(), Endian { big: true });
    while p < n {
        let frame = recs.len() as u64 + 1;
        let (Some(hd), Some(rlen), Some(wlen)) = (
            src.get(p, 16).map(<[u8]>::to_vec),
            src.u16(be, p + 10),
            src.u16(be, p + 14),
        ) else {
            let msg = format!(
                "last record is cut short (record header); kept the {} packets before it",
                commas(recs.len() as u64)
            );
            warnings.push(Warn::new("W-TRUNCATED", msg, 1).at(Some(p), Some(frame)));
            break;
        };
        let rlen = u64::from(rlen);
        let mut ext = 0u64;
        let mut more = hd[8] & 0x80 != 0;
        for _ in 0..MAX_EXT {
            if !more {
                break;
            }
            more = src
                .get(p + REC_HEADER + ext, 1)
                .is_some_and(|b| b[0] & 0x80 != 0);
            ext += 8;
        }
        let Some((lt, pad)) = kind(hd[8] & 0x7F) else {
            let msg = format!("record type {} is not decoded", hd[8] & 0x7F);
            return Err(Failure::corrupt(msg, p)
                .at(Some(p), Some(frame))
                .hint("read it with --format tshark"));
        };
        let start = REC_HEADER + ext + pad;
        if rlen < start || rlen - start > limits.max_caplen || more {
            let msg =
                format!("record length {rlen} cannot hold its headers (or is over the maximum)");
            return Err(Failure::corrupt(msg, p)
                .at(Some(p), Some(frame))
                .hint("the file is corrupt from here on"));
        }
        if p + rlen > n {
            let msg = format!(
                "last record is cut short (packet data); kept the {} packets before it",
                commas(recs.len() as u64)
            );
            warnings.push(Warn::new("W-TRUNCATED", msg, 1).at(Some(p), Some(frame)));
            break;
        }
        let ts = u64::from_le_bytes(hd[..8].try_into().unwrap_or([0; 8]));
        let ns =
            (ts >> 32) as i64 * 1_000_000_000 + (((ts & 0xFFFF_FFFF) * 1_000_000_000) >> 32) as i64;
        let cap = (rlen - start) as u32;
        recs.data_off.push(p + start);
        // the wire length counts the 4-byte Ethernet FCS where the record holds it (erf.c)
        recs.caplen.push(cap.min(u32::from(wlen)));
        recs.origlen
            .push(u32::from(wlen).max(cap.min(u32::from(wlen))));
        recs.ts_ns.push(ns);
        recs.linktypes.push(lt);
        p += rlen;
    }
    let lt = recs.linktypes.first().copied().unwrap_or(1);
    recs.linktype = lt;
    if recs.is_empty() {
        warnings.push(Warn::new("W-EMPTY", "the capture holds no packets", 1));
    }
    Ok((
        recs,
        Meta::Pcap {
            linktype: lt,
            snaplen: 0,
            nanos: true,
            version: (0, 0),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::bytes::Mem;

    fn rec(t: u8, data: &[u8], wlen: u16) -> Vec<u8> {
        let mut v = (5u64 << 32 | 1 << 31).to_le_bytes().to_vec();
        v.extend([t, 0x04]);
        v.extend((16 + 2 + data.len() as u16).to_be_bytes());
        v.extend([0, 0]);
        v.extend(wlen.to_be_bytes());
        v.extend([0, 0]);
        v.extend(data);
        v
    }

    #[test]
    fn ethernet_records_timestamps_and_damage() {
        let f = [rec(2, &[1; 20], 24), rec(2, &[2; 30], 30)].concat();
        let (mut w, lim) = (Vec::new(), Limits::default());
        let (r, _) = read(&mut Mem(&f), &lim, &mut w).unwrap();
        assert_eq!(r.data_off, vec![18, 56]);
        assert_eq!(r.ts_ns[0], 5_500_000_000);
        assert_eq!((r.caplen[0], r.origlen[0]), (20, 24));
        let (r, w) = {
            let mut w = Vec::new();
            (
                read(&mut Mem(&f[..f.len() - 3]), &lim, &mut w).unwrap().0,
                w,
            )
        };
        assert_eq!((r.len(), w[0].code), (1, "W-TRUNCATED"));
        assert!(read(&mut Mem(&[0u8; 40]), &lim, &mut Vec::new()).is_err());
    }
}
