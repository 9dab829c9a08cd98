//! IP headers: IPv4 (with AH in transport mode) and IPv6 with its extension-header chain and
//! Jumbo Payload, down to where the transport header starts and the fragment facts.
//!
//! The rules are those of Wireshark's packet-ip.c/packet-ipv6.c; lengths are never trusted
//! beyond the captured bytes.

use super::bytes::{be16, be32, be64, u8_at};

/// Where the IP header puts the transport header, and the fragment facts.
pub(super) struct Net {
    pub(super) l4: usize,
    /// Transport header + payload (may be negative: a damaged length).
    pub(super) l4len: i64,
    pub(super) nh: u8,
    pub(super) bad: bool,
    pub(super) frag: Option<Frag>,
    pub(super) src: u128,
    pub(super) dst: u128,
    /// The length came from the frame or a jumbo option (segmentation offload).
    pub(super) offload: bool,
    /// IPv4's TTL or IPv6's hop limit (RFC 791 §3.1, RFC 8200 §3): a sender sets it, each
    /// router lowers it by one (the vantage point's evidence, `state::vantage`).
    pub(super) ttl: u8,
}

#[derive(Clone, Copy)]
pub(super) struct Frag {
    pub(super) is_frag: bool,
    pub(super) unread: bool,
    pub(super) offset: i64,
    pub(super) more: bool,
    pub(super) ident: u32,
    /// Where the fragment's data starts in the frame.
    pub(super) data: usize,
}

/// IPv4 (RFC 791 §3.1): the 20 fixed bytes are captured (checked by the caller). The version
/// nibble is not checked: the link layer said IPv4, as Wireshark's dissector table does.
///
/// A total length of 0 is what TCP segmentation offload (and Linux BIG TCP) leaves in segments
/// captured on the sending host: the length is taken from the frame, as Wireshark does with its
/// default "support packet capture from IP TSO-enabled hardware" (packet-ip.c) and tcpdump
/// (print-ip.c, "length 0 ... assume TSO"), and counted (issue 24 point 2).
pub(super) fn ipv4(pkt: &[u8], l3: usize, wire: i64) -> Net {
    let b0 = u8_at(pkt, l3).unwrap_or(0);
    let ihl = i64::from(b0 & 0x0F) * 4;
    let tot = i64::from(be16(pkt, l3 + 2).unwrap_or(0));
    let offload = tot == 0 && ihl >= 20 && wire >= ihl;
    let tot = if offload { wire } else { tot };
    let ident = u32::from(be16(pkt, l3 + 4).unwrap_or(0));
    let ff = be16(pkt, l3 + 6).unwrap_or(0);
    let offset = i64::from(ff & 0x1FFF) * 8; // in 8-byte units
    let more = ff & 0x2000 != 0; // MF
    let mut l4 = l3 + ihl as usize;
    let mut l4len = tot - ihl;
    let mut nh = u8_at(pkt, l3 + 9).unwrap_or(0);
    // AH (RFC 4302 §2; packet-ipsec.c): next header, length in 4-byte units minus 2; the
    // transport header follows it (transport mode) in an unfragmented datagram.
    if nh == 51 && offset == 0 && !more {
        if let (Some(next), Some(len)) = (u8_at(pkt, l4), u8_at(pkt, l4 + 1)) {
            let ah = (usize::from(len) + 2) * 4;
            nh = next;
            l4 += ah;
            l4len -= ah as i64;
        }
    }
    Net {
        l4,
        l4len,
        nh,
        // a header shorter than its 20 fixed bytes, or longer than the whole datagram
        bad: ihl < 20 || tot < ihl || l4len < 0,
        frag: Some(Frag {
            is_frag: offset != 0 || more,
            unread: false,
            offset,
            more,
            ident,
            data: l4,
        }),
        src: be32(pkt, l3 + 12).unwrap_or(0).into(),
        dst: be32(pkt, l3 + 16).unwrap_or(0).into(),
        offload,
        ttl: u8_at(pkt, l3 + 8).unwrap_or(0),
    }
}

/// Extension headers walked at most (RFC 8200 §4.1 allows each once, Destination Options twice).
const MAX_EXT: usize = 8;

fn is_ext(nh: u8) -> bool {
    // Hop-by-Hop 0, Routing 43, Destination Options 60, Fragment 44, AH 51 (RFC 8200 §4, RFC 4302)
    matches!(nh, 0 | 43 | 60 | 44 | 51)
}

/// IPv6 (RFC 8200 §3) and its extension-header chain (the 40 fixed bytes are captured).
///
/// A payload length of 0 with a Hop-by-Hop Jumbo Payload option (RFC 2675 §2: type 0xC2,
/// length 4) takes the option's length (Linux BIG TCP, issue 24 point 2).
pub(super) fn ipv6(pkt: &[u8], l3: usize, wire: i64) -> Net {
    let mut tot = i64::from(be16(pkt, l3 + 4).unwrap_or(0)) + 40;
    let mut nh = u8_at(pkt, l3 + 6).unwrap_or(0);
    // RFC 2675 §3 wants a jumbo length above 65,535 (Wireshark's ipv6_check_jumbo_plen calls
    // smaller ones malformed); any length the frame's original length can hold is taken here.
    let jumbo = if tot == 40 && nh == 0 {
        jumbo_length(pkt, l3 + 40).filter(|&j| i64::from(j) + 40 <= wire)
    } else {
        None
    };
    // no Hop-by-Hop header at all (with one, a bad jumbo length leaves the packet malformed)
    let from_frame = tot == 40 && !matches!(nh, 0 | 59) && wire > 40;
    if let Some(j) = jumbo {
        tot = i64::from(j) + 40;
    } else if from_frame {
        // Linux >= 6.5 BIG TCP strips the Hop-by-Hop header before the tap and leaves payload
        // length 0 (issue 24 point 3): like IPv4 length 0, the length comes from the frame, as
        // tcpdump (print-ip6.c) and Wireshark with ipv6.tso_support do.
        tot = wire;
    }
    let addr = |at| u128::from_be_bytes(super::bytes::arr(pkt, at).unwrap_or([0; 16]));
    let mut l4 = l3 + 40;
    let mut frag: Option<Frag> = None;
    let mut ext = is_ext(nh);
    for _ in 0..MAX_EXT {
        if !ext {
            break;
        }
        let pe = l4;
        let b1 = usize::from(u8_at(pkt, pe + 1).unwrap_or(0));
        // lengths: Fragment 8 bytes; AH in 4-byte units minus 2 (RFC 4302 §2.2); others 8-byte units
        let hlen = match nh {
            44 => 8,
            51 => (b1 + 2) * 4,
            _ => (b1 + 1) * 8,
        };
        let mut stop = false;
        if nh == 44 {
            // RFC 8200 §4.5: offset (13 bits, 8-byte units) | res | M, then the identification.
            let f = match be64(pkt, pe) {
                Some(w) => {
                    let offset = ((w >> 32) & 0xFFF8) as i64;
                    let more = (w >> 32) & 1 != 0;
                    // an atomic fragment (offset 0, M 0; RFC 6946) is a whole datagram
                    Frag {
                        is_frag: offset != 0 || more,
                        unread: false,
                        offset,
                        more,
                        ident: w as u32,
                        data: pe + 8,
                    }
                }
                None => Frag {
                    is_frag: true,
                    unread: true,
                    offset: 0,
                    more: false,
                    ident: 0,
                    data: pe + 8,
                },
            };
            // a non-first fragment's data is not a header: the walk stops there
            stop = f.unread || f.offset != 0;
            frag = Some(f);
        }
        let ok = pe + 2 <= pkt.len();
        nh = if ok { u8_at(pkt, pe).unwrap_or(59) } else { 59 }; // 59: no next header
        l4 = if ok { pe + hlen } else { pe };
        ext = ok && !stop && is_ext(nh);
    }
    let l4len = tot - (l4 - l3) as i64;
    Net {
        l4,
        l4len,
        nh,
        bad: l4len < 0,
        frag,
        src: addr(l3 + 8),
        dst: addr(l3 + 24),
        offload: jumbo.is_some() || from_frame,
        ttl: u8_at(pkt, l3 + 7).unwrap_or(0),
    }
}

/// The Jumbo Payload length in the Hop-by-Hop header at `at`, if it has one (RFC 2675 §2).
fn jumbo_length(pkt: &[u8], at: usize) -> Option<u32> {
    let end = at + (usize::from(u8_at(pkt, at + 1)?) + 1) * 8;
    let mut p = at + 2;
    while p < end {
        match u8_at(pkt, p)? {
            0 => p += 1, // Pad1
            0xC2 if u8_at(pkt, p + 1)? == 4 => return be32(pkt, p + 2),
            _ => p += 2 + usize::from(u8_at(pkt, p + 1)?),
        }
    }
    None
}
