//! IP lengths beyond the frame (issue 24 point 3).
//!
//! Where a TCP segment's IP length exceeds what the frame's original length can hold, two
//! cases differ: old capture writers recorded the snap-cut length as the original length (the
//! IP length is true, and the next segment's sequence number, or the peer's ACK, confirms it),
//! while damaged or fuzzed files have nothing confirming it. The IP length is kept only when a
//! later segment of the same connection confirms its end; otherwise the payload is limited to
//! what the frame can hold (never invented). Wireshark trusts neither: it takes the captured
//! bytes (packet-ip.c reports "IPv4 total length exceeds packet length").

use super::ip::Rows;

/// Rows looked at after a segment to confirm it, itself included (a bound for hostile input).
const HORIZON: usize = 4096;

/// The two endpoints of a row: (source, destination) as 128-bit values.
fn addrs(rows: &Rows, r: usize) -> (u128, u128) {
    if rows.is4.get(r).copied().unwrap_or(true) {
        let s = rows.s4.get(r).copied().unwrap_or(0);
        let d = rows.d4.get(r).copied().unwrap_or(0);
        return (s.into(), d.into());
    }
    let Ok(k) = rows.v6_row.binary_search(&(r as i64)) else {
        return (0, 0);
    };
    let h = |i: usize| u128::from(rows.v6[i].get(k).copied().unwrap_or(0));
    ((h(0) << 64) | h(1), (h(2) << 64) | h(3))
}

/// Settle every row of `rows.beyond`; returns the rows whose payload was limited.
pub fn confirm(rows: &mut Rows) -> Vec<usize> {
    confirm_across(rows, &[])
}

/// [`confirm`] for a batch of rows followed by `later` batches (a capture read in batches):
/// the rows looked at after a segment run on into them, so the answer is the one the whole
/// capture gives as long as [`settled_by`] holds (or the capture ends with them).
pub fn confirm_across(rows: &mut Rows, later: &[&Rows]) -> Vec<usize> {
    let beyond = std::mem::take(&mut rows.beyond);
    let mut cut = Vec::new();
    for (r, room) in beyond {
        if !confirmed(rows, later, r) {
            if let Some(p) = rows.payload.get_mut(r) {
                *p = room;
                cut.push(r);
            }
        }
    }
    cut
}

/// Whether the rows after `rows`' last segment to settle, within it and `later`, reach the
/// horizon (so [`confirm_across`] needs no more batches).
pub fn settled_by(rows: &Rows, later: &[&Rows]) -> bool {
    let Some(&(last, _)) = rows.beyond.last() else {
        return true;
    };
    let after = rows.len() - last - 1 + later.iter().map(|b| b.len()).sum::<usize>();
    after >= HORIZON - 1
}

/// Whether a later segment confirms the end of row `r`'s segment as its IP length says:
/// the same direction continues at that sequence number (RFC 9293 §3.4), or the peer
/// acknowledges at least that far (within 2^30, modulo 2^32); `later`: the batches after `rows`.
fn confirmed(rows: &Rows, later: &[&Rows], r: usize) -> bool {
    let (src, dst) = addrs(rows, r);
    let (Some(&sp), Some(&dp), Some(&seq), Some(&len), Some(&fl)) = (
        rows.sport.get(r),
        rows.dport.get(r),
        rows.seq_raw.get(r),
        rows.payload.get(r),
        rows.flags.get(r),
    ) else {
        return false;
    };
    // SYN and FIN take one sequence number each (RFC 9293 §3.4)
    let end = seq
        .wrapping_add(len)
        .wrapping_add(u32::from(fl & 0x03 != 0));
    let own = std::iter::once((rows, r + 1));
    // rows r + 1 up to r + HORIZON - 1, as one capture read whole has them
    let mut left = HORIZON - 1;
    for (b, from) in own.chain(later.iter().map(|&b| (b, 0))) {
        let stop = b.len().min(from.saturating_add(left));
        left -= stop.saturating_sub(from);
        for j in from..stop {
            if b.proto.get(j) != Some(&0) {
                continue;
            }
            let (s, d) = addrs(b, j);
            let (js, jd) = (b.sport[j], b.dport[j]);
            if (s, d, js, jd) == (src, dst, sp, dp) && b.seq_raw[j] == end {
                return true;
            }
            let acks = b.flags[j] & 0x10 != 0;
            if (s, d, js, jd) == (dst, src, dp, sp) && acks {
                let ahead = b.ack_raw[j].wrapping_sub(end);
                if ahead < 1 << 30 {
                    return true;
                }
            }
        }
        if left == 0 {
            break;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rows: &mut Rows, s: u32, d: u32, seq: u32, ack: u32, len: u32, flags: u8) {
        rows.frame.push(rows.frame.len() as u64 + 1);
        rows.proto.push(0);
        rows.is4.push(true);
        rows.s4.push(s);
        rows.d4.push(d);
        rows.sport.push(if s == 1 { 1000 } else { 80 });
        rows.dport.push(if s == 1 { 80 } else { 1000 });
        rows.seq_raw.push(seq);
        rows.ack_raw.push(ack);
        rows.payload.push(len);
        rows.flags.push(flags);
    }

    #[test]
    fn a_later_sequence_number_or_ack_confirms_else_the_frame_limits() {
        let mut rows = Rows::default();
        row(&mut rows, 1, 2, 100, 0, 1000, 0x18); // confirmed by row 1's seq
        row(&mut rows, 1, 2, 1100, 0, 1000, 0x18); // confirmed by row 2's ACK
        row(&mut rows, 2, 1, 5, 2100, 0, 0x10);
        row(&mut rows, 2, 1, 5, 2100, 4044, 0x12); // a SYN-ACK nothing confirms
        row(&mut rows, 1, 2, 2100, 6, 0, 0x10);
        rows.beyond = vec![(0, 62), (1, 62), (3, 0)];
        assert_eq!(confirm(&mut rows), vec![3]);
        assert_eq!(rows.payload, vec![1000, 1000, 0, 0, 0]);
    }
}
