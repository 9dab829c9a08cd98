//! The TCP header and its options (RFC 9293 §3.1, §3.2; RFC 7323; RFC 2018) into a row.

use super::bytes::{be16, be32, be64, u8_at};
use super::rows::{Row, Sink};

/// Linux lays out the timestamp option as NOP, NOP, kind 8 length 10 on every segment.
const TS_PREFIX: u32 = 0x0101_080A;

/// TCP (RFC 9293 §3.1) into `row`; false when the header is unusable: cut before its 20
/// fixed bytes, or a data offset below 20 or beyond the segment (Wireshark: "bogus").
pub(super) fn tcp(seg: &[u8], b: usize, l4len: i64, row: &mut Row, rows: &mut Sink) -> bool {
    let (Some(w0), Some(w1)) = (be64(seg, b), be64(seg, b + 8)) else {
        return false;
    };
    if b + 20 > seg.len() {
        return false;
    }
    let doff = ((w1 >> 28) & 0xF) as i64 * 4;
    if doff < 20 || doff > l4len {
        return false;
    }
    row.proto = 0;
    row.ports = true;
    row.sport = (w0 >> 48) as i32;
    row.dport = ((w0 >> 32) & 0xFFFF) as i32;
    row.seq = w0 as u32;
    row.ack = (w1 >> 32) as u32;
    row.flags = (w1 >> 16) as u8;
    row.win = w1 as u16;
    row.payload = u32::try_from(l4len - doff).unwrap_or(u32::MAX);
    options(seg, b, seg.len().min(b + doff as usize), row, rows);
    true
}

/// The options walk (RFC 9293 §3.2): kind 0 ends the list, kind 1 is one byte, every other
/// option has a length >= 2 that must fit the header, else parsing stops (Wireshark marks
/// it malformed; the zero-length option is the classic infinite-loop trap). Later options of
/// a kind overwrite earlier ones. Headers cut by the snap length keep what was captured.
fn options(seg: &[u8], b: usize, he: usize, row: &mut Row, rows: &mut Sink) {
    let mut pos = b + 20;
    if he >= b + 32 && be32(seg, pos) == Some(TS_PREFIX) {
        row.ts = be32(seg, b + 24).zip(be32(seg, b + 28));
        pos += 12;
    }
    // at most 40 option bytes and every step advances by >= 1 byte
    for _ in 0..40 {
        if pos >= he {
            break;
        }
        let kind = u8_at(seg, pos).unwrap_or(0);
        let olen = if kind == 1 {
            1
        } else {
            usize::from(u8_at(seg, pos + 1).unwrap_or(0))
        };
        if kind == 0 || (kind != 1 && (olen < 2 || pos + olen > he)) {
            break;
        }
        match (kind, olen) {
            (2, 4) => row.mss = be16(seg, pos + 2), // MSS (RFC 9293 §3.7.1)
            (3, 3) => row.wscale = u8_at(seg, pos + 2), // window scale (RFC 7323 §2.2)
            (8, 10) => row.ts = be32(seg, pos + 2).zip(be32(seg, pos + 6)), // RFC 7323 §3.2
            (5, n) if n >= 10 && (n - 2).is_multiple_of(8) => {
                // SACK (RFC 2018 §3): up to 4 blocks of (left, right) edges
                let r = rows.len() as i64;
                for k in 0..((n - 2) / 8).min(4) {
                    let q = pos + 2 + 8 * k;
                    if let (Some(l), Some(rt)) = (be32(seg, q), be32(seg, q + 4)) {
                        rows.side.sack_row.push(r);
                        rows.side.sack_left.push(l.into());
                        rows.side.sack_right.push(rt.into());
                    }
                }
            }
            _ => {}
        }
        pos += olen;
    }
}
