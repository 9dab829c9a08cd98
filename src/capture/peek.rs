//! Savvius EtherPeek/AiroPeek "classic" files, versions 5-7 (Wireshark's wiretap/peekclassic.c).
//!
//! A 2-byte master header (version, status) and a 48-byte big-endian secondary header (file
//! length, packet count, timeDate in seconds since 1904, start/stop, media type, physical
//! medium 0 Ethernet / 1 802.11, application version, link speed, reserved). Records:
//! V7: 16 bytes (protocol, length, slice length, flags, status, timestamp in µs since 1904),
//!     data padded to an even length;
//! V5/V6: 26 bytes (length, slice length, flags, status, timestamp in ms since timeDate,
//!     destination/source/protocol numbers, 8-byte protocol string), no padding.
//! A slice length of 0 means the whole packet. AiroPeek (802.11) data starts with 4 bytes of
//! radio information and ends with the 4-byte FCS.

use super::bytes::{Endian, Source};
use super::{commas, Failure, Kind, Limits, Meta, Records, Warn};

const FILE_HEADER: u64 = 50;
/// Seconds from 1904-01-01 (the Macintosh epoch) to 1970-01-01.
const MAC_EPOCH: i64 = 2_082_844_800;

/// Whether `head` is a Peek classic V5-V7 file (peekclassic_open's checks).
pub fn plausible(head: &[u8]) -> bool {
    let be = |at: usize| {
        head.get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    matches!(head.first(), Some(5..=7))
        && head.get(1) == Some(&0)
        && matches!(be(26), Some(0 | 1))
        && be(2).is_some_and(|l| l >= FILE_HEADER as u32)
}

/// Read a Peek classic file's records (not their packets).
pub fn read(
    src: &mut dyn Source,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
) -> Result<(Records, Meta), Failure> {
    let head = src.get(0, 50).unwrap_or(&[]).to_vec();
    if !plausible(&head) {
        return Err(
            Failure::new(Kind::Unknown, "not a Peek classic (V5-V7) file").at(Some(0), None),
        );
    }
    let be = Endian { big: true };
    let version = head[0];
    let date = i64::from(src.u32(be, 10).unwrap_or(0));
    let wlan = src.u32(be, 26) == Some(1);
    let lt = if wlan { super::linkx::LT_WLAN } else { 1 };
    let mut recs = Records {
        linktype: lt,
        ..Records::default()
    };
    let (hlen, n) = (if version == 7 { 16 } else { 26 }, src.size());
    let mut p = FILE_HEADER;
    while p < n {
        let frame = recs.len() as u64 + 1;
        let at = if version == 7 { 2 } else { 0 };
        let (Some(len), Some(slice), Some(ts)) = (
            src.u16(be, p + at),
            src.u16(be, p + at + 2),
            if version == 7 {
                src.get(p + 8, 8)
                    .map(|b| i64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
            } else {
                src.u32(be, p + 6).map(i64::from)
            },
        ) else {
            let msg = format!(
                "last record is cut short (record header); kept the {} packets before it",
                commas(recs.len() as u64)
            );
            warnings.push(Warn::new("W-TRUNCATED", msg, 1).at(Some(p), Some(frame)));
            break;
        };
        let cap = u64::from(if slice == 0 { len } else { slice });
        if cap > limits.max_caplen {
            return Err(
                Failure::corrupt("captured length over the maximum", p).at(Some(p), Some(frame))
            );
        }
        let data = p + hlen;
        if data + cap > n {
            let msg = format!(
                "last record is cut short (packet data); kept the {} packets before it",
                commas(recs.len() as u64)
            );
            warnings.push(Warn::new("W-TRUNCATED", msg, 1).at(Some(p), Some(frame)));
            break;
        }
        // AiroPeek: 4 bytes of radio information before the frame, its FCS after
        let (skip, fcs) = if wlan { (4u64, 4u64) } else { (0, 0) };
        let body = cap.saturating_sub(skip + fcs) as u32;
        recs.data_off.push(data + skip.min(cap));
        recs.caplen.push(body);
        recs.origlen
            .push((u64::from(len).saturating_sub(skip + fcs) as u32).max(body));
        let ns = if version == 7 {
            ts.wrapping_sub(MAC_EPOCH * 1_000_000).wrapping_mul(1000)
        } else {
            (date - MAC_EPOCH) * 1_000_000_000 + ts * 1_000_000
        };
        recs.ts_ns.push(ns);
        p = data + cap + if version == 7 { cap % 2 } else { 0 };
    }
    if recs.is_empty() {
        warnings.push(Warn::new("W-EMPTY", "the capture holds no packets", 1));
    }
    Ok((
        recs,
        Meta::Pcap {
            linktype: lt,
            snaplen: 0,
            nanos: false,
            version: (u16::from(version), 0),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::bytes::Mem;

    fn file(version: u8, recs: &[&[u8]]) -> Vec<u8> {
        let mut v = vec![version, 0];
        v.extend(1000u32.to_be_bytes());
        v.extend(vec![0u8; 44]);
        for d in recs {
            let n = d.len() as u16;
            if version == 7 {
                v.extend([0, 0]);
                v.extend(n.to_be_bytes());
                v.extend([0, 0, 0, 1]);
                v.extend(((MAC_EPOCH + 1) * 1_000_000).to_be_bytes());
            } else {
                v.extend(n.to_be_bytes());
                v.extend([0, 0, 0, 0]);
                v.extend(7u32.to_be_bytes());
                v.extend([0u8; 16]);
            }
            v.extend(*d);
            if version == 7 && d.len() % 2 == 1 {
                v.push(0);
            }
        }
        v
    }

    #[test]
    fn v7_padding_v6_layout_and_a_cut_record() {
        let f = file(7, &[&[1, 2, 3], &[4; 4]]);
        let (mut w, lim) = (Vec::new(), Limits::default());
        let (r, _) = read(&mut Mem(&f), &lim, &mut w).unwrap();
        assert_eq!(r.data_off, vec![66, 86]);
        assert_eq!(r.ts_ns[0], 1_000_000_000);
        let (r, _) = read(&mut Mem(&file(6, &[&[1; 5]])), &lim, &mut w).unwrap();
        assert_eq!((r.data_off[0], r.caplen[0]), (76, 5));
        let mut w = Vec::new();
        let (r, _) = read(&mut Mem(&f[..f.len() - 1]), &lim, &mut w).unwrap();
        assert_eq!((r.len(), w[0].code), (1, "W-TRUNCATED"));
        assert!(read(&mut Mem(&[9u8; 60]), &lim, &mut Vec::new()).is_err());
    }
}
