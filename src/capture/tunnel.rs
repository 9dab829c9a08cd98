//! Tunnels (issue 24 point 4): where the inner packet of an encapsulating header starts.
//!
//! Each decoder takes the frame and the offset of the tunnel header (the outer IP payload or
//! the outer UDP payload) and returns the inner network header's offset and IP version, or
//! None when the header does not parse as that tunnel: a UDP port match that is not the tunnel
//! stays plain UDP, as Wireshark's heuristic and port-table dissectors do. Every length read
//! from the packet is checked against the captured bytes; the caller bounds the nesting depth.

use super::bytes::{be16, u8_at};
use super::link::{link, LT_ETHERNET, LT_PPP, LT_RAW};

/// Nested tunnels followed at most (deeper nesting is decoded as the last outer packet).
pub const MAX_DEPTH: usize = 4;

/// Tunnel names by code (code 0 = no tunnel); the `tunnel` column's values.
pub const NAMES: [&str; 10] = [
    "", "vxlan", "geneve", "gre", "erspan", "wccp", "gtpu", "ipip", "l2tp", "capwap",
];
const VXLAN: u8 = 1;
const GENEVE: u8 = 2;
const GRE: u8 = 3;
const ERSPAN: u8 = 4;
const WCCP: u8 = 5;
const GTPU: u8 = 6;
const IPIP: u8 = 7;
const L2TP: u8 = 8;
const CAPWAP: u8 = 9;

/// An inner packet: (tunnel code, offset of its network header, IP version 4 or 6).
pub type Inner = (u8, usize, u8);

/// The inner packet of an IP payload with protocol `nh` at `at` (`end`: its last byte + 1).
pub fn over_ip(pkt: &[u8], at: usize, nh: u8) -> Option<Inner> {
    match nh {
        // IP in IP: RFC 2003 (4), RFC 2473/4213 (41); the inner version must match the number
        4 | 41 => {
            let (l3, v) = inner(pkt, at, LT_RAW)?;
            (v == if nh == 4 { 4 } else { 6 }).then_some((IPIP, l3, v))
        }
        47 => gre(pkt, at),
        _ => None,
    }
}

/// The inner packet of a UDP payload at `at`, by the well-known port of either side.
pub fn over_udp(pkt: &[u8], at: usize, sport: u16, dport: u16) -> Option<Inner> {
    let port = |p: u16| sport == p || dport == p;
    if port(4789) {
        // VXLAN (RFC 7348 §5; packet-vxlan.c): 8 bytes, flags with the I bit (0x08), VNI; Ethernet
        if u8_at(pkt, at)? & 0x08 == 0 {
            return None;
        }
        let (l3, v) = inner(pkt, at + 8, LT_ETHERNET)?;
        return Some((VXLAN, l3, v));
    }
    if port(6081) {
        return geneve(pkt, at);
    }
    if port(2152) {
        return gtpu(pkt, at);
    }
    if port(1701) {
        return l2tp(pkt, at);
    }
    if dport == 5247 || sport == 5247 {
        return capwap(pkt, at);
    }
    None
}

/// The network header behind a link header of type `lt` starting at `at`: (offset, version).
fn inner(pkt: &[u8], at: usize, lt: u32) -> Option<(usize, u8)> {
    let rest = pkt.get(at..)?;
    let (l3, v) = link(rest, lt);
    // the inner fixed IP header must be captured and carry the announced version
    let need = if v == 6 { 40 } else { 20 };
    let nibble = u8_at(rest, l3).map(|b| b >> 4);
    (v != 0 && l3 + need <= rest.len() && nibble == Some(v)).then_some((at + l3, v))
}

/// The inner packet of an ethertype-like protocol number (GRE, GENEVE) at `at`.
fn by_type(pkt: &[u8], at: usize, proto: u16) -> Option<(usize, u8)> {
    match proto {
        0x0800 | 0x86DD => inner(pkt, at, LT_RAW),
        0x6558 => inner(pkt, at, LT_ETHERNET), // transparent Ethernet bridging
        _ => None,
    }
}

/// GRE (RFC 2784 §2.1, RFC 2890 §2; packet-gre.c): version 0 only; C adds checksum+reserved,
/// K the key, S the sequence number (4 bytes each); routing (R, RFC 1701) is not followed.
/// ERSPAN (draft-foschiano-erspan; packet-erspan.c): type II 0x88BE carries an 8-byte header
/// when S is set (type I has none), type III 0x22EB a 12-byte one (+8 with the O bit).
/// WCCP 0x883E (draft-wilson-wrec-wccp-v2 §4.12): a 4-byte redirect header unless the next
/// nibble is 4 (packet-gre.c looks at it the same way).
fn gre(pkt: &[u8], at: usize) -> Option<Inner> {
    let flags = be16(pkt, at)?;
    if flags & 0x4007 != 0 {
        return None; // routing present or a version other than 0 (PPTP's enhanced GRE)
    }
    let proto = be16(pkt, at + 2)?;
    let mut p = at + 4;
    for bit in [0x8000u16, 0x2000, 0x1000] {
        if flags & bit != 0 {
            p += 4;
        }
    }
    let (code, l3) = match proto {
        0x88BE => {
            let h = if flags & 0x1000 != 0 { 8 } else { 0 };
            (ERSPAN, inner(pkt, p + h, LT_ETHERNET)?)
        }
        0x22EB => {
            let o = u8_at(pkt, p + 11)? & 0x01 != 0;
            (
                ERSPAN,
                inner(pkt, p + if o { 20 } else { 12 }, LT_ETHERNET)?,
            )
        }
        0x883E => {
            let skip = if u8_at(pkt, p)? >> 4 == 4 { 0 } else { 4 };
            (WCCP, inner(pkt, p + skip, LT_RAW)?)
        }
        _ => (GRE, by_type(pkt, p, proto)?),
    };
    Some((code, l3.0, l3.1))
}

/// GENEVE (RFC 8926 §3.4; packet-geneve.c): version 0, options length in 4-byte words,
/// protocol type; the payload follows the 8 fixed bytes and the options.
fn geneve(pkt: &[u8], at: usize) -> Option<Inner> {
    let b0 = u8_at(pkt, at)?;
    if b0 >> 6 != 0 {
        return None;
    }
    let opts = usize::from(b0 & 0x3F) * 4;
    let (l3, v) = by_type(pkt, at + 8 + opts, be16(pkt, at + 2)?)?;
    Some((GENEVE, l3, v))
}

/// Extension headers of a GTP-U packet followed at most.
const MAX_GTP_EXT: usize = 8;

/// GTPv1-U G-PDU (3GPP TS 29.281 §5.1; packet-gtp.c): version 1, PT 1, message type 255;
/// E, S or PN add 4 bytes (sequence, N-PDU, next extension type); each extension header
/// gives its length in 4-byte units and ends with the next type (0: none). Payload: IP.
fn gtpu(pkt: &[u8], at: usize) -> Option<Inner> {
    let flags = u8_at(pkt, at)?;
    if flags >> 5 != 1 || flags & 0x10 == 0 || u8_at(pkt, at + 1)? != 0xFF {
        return None;
    }
    let mut p = at + 8;
    if flags & 0x07 != 0 {
        let mut next = u8_at(pkt, p + 3)?;
        p += 4;
        for _ in 0..MAX_GTP_EXT {
            if flags & 0x04 == 0 || next == 0 {
                break;
            }
            let len = usize::from(u8_at(pkt, p)?) * 4;
            if len == 0 {
                return None;
            }
            next = u8_at(pkt, p + len - 1)?;
            p += len;
        }
        if flags & 0x04 != 0 && next != 0 {
            return None;
        }
    }
    let (l3, v) = inner(pkt, p, LT_RAW)?;
    Some((GTPU, l3, v))
}

/// L2TPv2 data messages (RFC 2661 §3.1; packet-l2tp.c): T 0 (data), version 2; L adds the
/// length, S the Ns/Nr pair, O the offset size and its padding; then PPP (RFC 1661).
fn l2tp(pkt: &[u8], at: usize) -> Option<Inner> {
    let flags = be16(pkt, at)?;
    if flags & 0x8000 != 0 || flags & 0x000F != 2 {
        return None;
    }
    let mut p = at + 2;
    if flags & 0x4000 != 0 {
        p += 2;
    }
    p += 4; // tunnel id, session id
    if flags & 0x0800 != 0 {
        p += 4;
    }
    if flags & 0x0200 != 0 {
        p += 2 + usize::from(be16(pkt, p)?);
    }
    let (l3, v) = inner(pkt, p, LT_PPP)?;
    Some((L2TP, l3, v))
}

/// CAPWAP data channel (RFC 5415 §4.1-4.3; packet-capwap.c): preamble version 0 type 0
/// (type 1 is DTLS: encrypted), HLEN in 4-byte words, T 0 = an IEEE 802.3 frame follows;
/// fragments (F) and native 802.11 frames (T 1) are not decoded.
fn capwap(pkt: &[u8], at: usize) -> Option<Inner> {
    if u8_at(pkt, at)? != 0 {
        return None;
    }
    let hlen = usize::from(u8_at(pkt, at + 1)? >> 3) * 4;
    let (b2, b3) = (u8_at(pkt, at + 2)?, u8_at(pkt, at + 3)?);
    if hlen < 8 || b2 & 0x01 != 0 || b3 & 0x80 != 0 {
        return None;
    }
    let (l3, v) = inner(pkt, at + hlen, LT_ETHERNET)?;
    Some((CAPWAP, l3, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip4() -> Vec<u8> {
        let mut v = vec![0u8; 20];
        v[0] = 0x45;
        v
    }
    fn eth(t: u16) -> Vec<u8> {
        let mut v = vec![0u8; 12];
        v.extend_from_slice(&t.to_be_bytes());
        v
    }

    #[test]
    fn ip_in_ip_checks_the_inner_version() {
        assert_eq!(over_ip(&ip4(), 0, 4), Some((IPIP, 0, 4)));
        assert_eq!(over_ip(&ip4(), 0, 41), None);
        assert_eq!(over_ip(&[0x45; 10], 0, 4), None); // cut short
    }

    #[test]
    fn gre_key_seq_erspan_wccp() {
        let mut p = vec![0x30, 0, 0x08, 0, 0, 0, 0, 42, 0, 0, 0, 1];
        p.extend(ip4());
        assert_eq!(gre(&p, 0), Some((GRE, 12, 4)));
        let mut p = vec![0x10, 0, 0x88, 0xBE, 0, 0, 0, 1, 0x10, 0, 0, 7, 0, 0, 0, 1];
        p.extend(eth(0x0800));
        p.extend(ip4());
        assert_eq!(gre(&p, 0), Some((ERSPAN, 30, 4)));
        let mut p = vec![0, 0, 0x88, 0x3E, 0, 0, 0, 7];
        p.extend(ip4());
        assert_eq!(gre(&p, 0), Some((WCCP, 8, 4)));
        assert_eq!(gre(&[0x40, 0, 8, 0], 0), None); // routing
        assert_eq!(gre(&[0x30, 0, 8, 0, 0], 0), None); // cut inside the key
    }

    #[test]
    fn udp_tunnels_and_non_matching_ports() {
        let mut v = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        v.extend(eth(0x86DD));
        let mut six = vec![0u8; 40];
        six[0] = 0x60;
        v.extend(six);
        assert_eq!(over_udp(&v, 0, 1, 4789), Some((VXLAN, 22, 6)));
        assert_eq!(over_udp(&[0u8; 60], 0, 1, 4789), None); // no I flag: plain UDP
        let mut g = vec![0x30, 0xFF, 0, 20, 0, 0, 0x10, 1];
        g.extend(ip4());
        assert_eq!(over_udp(&g, 0, 2152, 2152), Some((GTPU, 8, 4)));
        let mut g = vec![0x34, 0xFF, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0x85, 1, 0, 0, 0];
        g.extend(ip4());
        assert_eq!(over_udp(&g, 0, 2152, 2152), Some((GTPU, 16, 4)));
        let mut l = vec![0x40, 0x02, 0, 0, 0, 1, 0, 1, 0xFF, 0x03, 0x00, 0x21];
        l.extend(ip4());
        assert_eq!(over_udp(&l, 0, 1701, 1701), Some((L2TP, 12, 4)));
        let mut c = vec![0, 0x10, 0x42, 0, 0, 0, 0, 0];
        c.extend(eth(0x0800));
        c.extend(ip4());
        assert_eq!(over_udp(&c, 0, 12223, 5247), Some((CAPWAP, 22, 4)));
        let mut n = vec![1, 1, 0x65, 0x58, 0, 0, 42, 0, 0xFF, 1, 0, 0];
        n.extend(eth(0x0800));
        n.extend(ip4());
        assert_eq!(over_udp(&n, 0, 1, 6081), Some((GENEVE, 26, 4)));
        assert_eq!(over_udp(&n, 0, 1, 2), None);
    }
}
