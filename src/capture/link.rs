//! Link layers: where each frame's network header starts and which IP version it says it holds.
//!
//! Ethernet and its VLAN tags go through etherparse; the rest are thin shims for link types
//! etherparse does not decode (the LINKTYPE_* numbers of tcpdump.org's link-layer header list).

use super::bytes::{be16, be32, le32, u8_at};
use super::linkx;
use etherparse::{EtherType, Ethernet2HeaderSlice, SingleVlanHeaderSlice};

pub const LT_NULL: u32 = 0;
pub const LT_ETHERNET: u32 = 1;
pub const LT_PPP: u32 = 9;
pub const LT_RAW_A: u32 = 12;
pub const LT_RAW_B: u32 = 14;
pub const LT_PPP_HDLC: u32 = 50;
pub const LT_RAW: u32 = 101;
pub const LT_LOOP: u32 = 108;
pub const LT_SLL: u32 = 113;
pub const LT_IPV4: u32 = 228;
pub const LT_IPV6: u32 = 229;
pub const LT_SLL2: u32 = 276;

/// The link types decoded here, with their names (others go to tshark).
pub const SUPPORTED: [(u32, &str); 23] = [
    (LT_NULL, "BSD loopback (NULL)"),
    (LT_ETHERNET, "Ethernet"),
    (LT_PPP, "PPP"),
    (LT_RAW_A, "raw IP (DLT 12)"),
    (LT_RAW_B, "raw IP (DLT 14)"),
    (LT_PPP_HDLC, "PPP in HDLC"),
    (LT_RAW, "raw IP"),
    (LT_LOOP, "OpenBSD loopback (LOOP)"),
    (LT_SLL, "Linux cooked (SLL)"),
    (LT_IPV4, "raw IPv4"),
    (LT_IPV6, "raw IPv6"),
    (LT_SLL2, "Linux cooked v2 (SLL2)"),
    (linkx::LT_SLIP, "SLIP (BSD pseudo-header)"),
    (linkx::LT_FDDI, "FDDI"),
    (linkx::LT_CHDLC, "Cisco HDLC"),
    (linkx::LT_WLAN, "IEEE 802.11"),
    (linkx::LT_FRELAY, "Frame Relay"),
    (linkx::LT_RADIOTAP, "IEEE 802.11 with radiotap"),
    (linkx::LT_ARCNET, "ARCNET (Linux)"),
    (linkx::LT_JUNIPER_ETH, "Juniper Ethernet"),
    (linkx::LT_PPI, "IEEE 802.11 with PPI"),
    (linkx::LT_NFLOG, "Linux NFLOG"),
    (linkx::LT_IPOIB, "IP over InfiniBand"),
];

/// The name of a supported link type.
pub fn name(lt: u32) -> Option<&'static str> {
    SUPPORTED.iter().find(|(k, _)| *k == lt).map(|(_, v)| *v)
}

/// Nested VLAN tags followed at most (QinQ is two; more is a damaged frame).
const MAX_VLAN: usize = 8;
const ETH_IPV4: u16 = EtherType::IPV4.0;
const ETH_IPV6: u16 = EtherType::IPV6.0;
const ETH_PPPOE_SESSION: u16 = 0x8864;

/// The IP version a link header announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ip {
    V4,
    V6,
    /// The link says nothing (raw IP): the version nibble decides.
    Nibble,
    Other,
}

/// (offset of the network header in the frame, IP version code: 4, 6 or 0 for non-IP).
pub fn link(pkt: &[u8], lt: u32) -> (usize, u8) {
    let (l3, ip) = match lt {
        LT_ETHERNET => ethernet(pkt),
        // Linux cooked v1: 16-byte header, protocol type at bytes 14-15 (libpcap sll.h).
        LT_SLL => (16, ethertype(be16(pkt, 14))),
        // Linux cooked v2: 20-byte header, protocol type first (libpcap sll.h, SLL2).
        LT_SLL2 => (20, ethertype(be16(pkt, 0))),
        LT_RAW | LT_RAW_A | LT_RAW_B | LT_IPV4 | LT_IPV6 => (0, Ip::Nibble),
        LT_PPP | LT_PPP_HDLC => ppp(pkt, 0),
        LT_NULL | LT_LOOP => null(pkt, lt == LT_LOOP),
        _ => super::linkx::link(pkt, lt).unwrap_or((0, Ip::Other)),
    };
    let code = match ip {
        Ip::V4 => 4,
        Ip::V6 => 6,
        Ip::Nibble => match u8_at(pkt, l3).map(|b| b >> 4) {
            Some(4) => 4,
            Some(6) => 6,
            _ => 0,
        },
        Ip::Other => 0,
    };
    (l3, code)
}

fn ethertype(t: Option<u16>) -> Ip {
    match t {
        Some(ETH_IPV4) => Ip::V4,
        Some(ETH_IPV6) => Ip::V6,
        _ => Ip::Other,
    }
}

/// Ethernet II with 802.1Q/802.1ad/QinQ tags (each 4 bytes) and PPPoE sessions (RFC 2516:
/// 6-byte header, then the 2-byte PPP protocol field), as Wireshark's packet-eth.c/vlan.c.
fn ethernet(pkt: &[u8]) -> (usize, Ip) {
    let Ok(eth) = Ethernet2HeaderSlice::from_slice(pkt) else {
        return (14, Ip::Other);
    };
    let mut et = eth.ether_type();
    let mut pos = 14;
    for _ in 0..MAX_VLAN {
        if !matches!(
            et,
            EtherType::VLAN_TAGGED_FRAME
                | EtherType::PROVIDER_BRIDGING
                | EtherType::VLAN_DOUBLE_TAGGED_FRAME
        ) {
            break;
        }
        match pkt
            .get(pos..)
            .and_then(|s| SingleVlanHeaderSlice::from_slice(s).ok())
        {
            Some(tag) => et = tag.ether_type(),
            None => return (pos + 4, Ip::Other), // a tag cut short: not IP
        }
        pos += 4;
    }
    if et.0 == 0x8847 || et.0 == 0x8848 {
        return mpls(pkt, pos);
    }
    if et.0 == ETH_PPPOE_SESSION {
        let ip = match be16(pkt, pos + 6) {
            Some(0x0021) => Ip::V4,
            Some(0x0057) => Ip::V6,
            _ => Ip::Other,
        };
        return (pos + 8, ip);
    }
    (pos, ethertype(Some(et.0)))
}

/// Labels of an MPLS stack followed at most.
const MAX_LABELS: usize = 8;

/// MPLS label stacks (RFC 3032 §2.1; packet-mpls.c): 4-byte entries until the bottom-of-stack
/// bit; the payload has no type field, so its first nibble decides (4, 6; 0 is a pseudowire
/// control word followed by an Ethernet frame, RFC 4448 §3, not followed here).
fn mpls(pkt: &[u8], mut pos: usize) -> (usize, Ip) {
    for _ in 0..MAX_LABELS {
        let Some(e) = be32(pkt, pos) else {
            return (pos, Ip::Other);
        };
        pos += 4;
        if e & 0x100 != 0 {
            return (pos, Ip::Nibble);
        }
    }
    (pos, Ip::Other)
}

/// PPP (RFC 1661) and PPP in HDLC-like framing (RFC 1662): real links put address 0xff and
/// control 0x03 before the protocol field; ns-3 writes the bare 2-byte protocol field.
/// Protocol 0x0021 is IPv4, 0x0057 IPv6 (RFC 5072).
fn ppp(pkt: &[u8], at: usize) -> (usize, Ip) {
    // Cisco HDLC framing on a PPP link type (address 0x0F unicast / 0x8F broadcast, control 0,
    // then an ethertype): packet-ppp.c's dissect_ppp_hdlc hands it to packet-chdlc.c.
    if matches!(u8_at(pkt, at), Some(0x0F | 0x8F)) && u8_at(pkt, at + 1) == Some(0) {
        return (at + 4, ethertype(be16(pkt, at + 2)));
    }
    let p = if be16(pkt, at) == Some(0xFF03) {
        at + 2
    } else {
        at
    };
    let ip = match be16(pkt, p) {
        Some(0x0021) => Ip::V4,
        Some(0x0057) => Ip::V6,
        _ => Ip::Other,
    };
    (p + 2, ip)
}

/// BSD loopback: a 4-byte address family, in the capturing host's byte order for NULL
/// (read it little-endian when that gives a small value, as Wireshark's packet-null.c does)
/// and in network order for LOOP. AF_INET is 2 everywhere; AF_INET6 is 10 (Linux), 24
/// (NetBSD/OpenBSD), 28 (FreeBSD), 30 (macOS).
fn null(pkt: &[u8], network_order: bool) -> (usize, Ip) {
    let (Some(be), Some(le)) = (be32(pkt, 0), le32(pkt, 0)) else {
        return (4, Ip::Other);
    };
    let fam = if network_order || le > 0xFFFF { be } else { le };
    let ip = match fam {
        2 => Ip::V4,
        10 | 24 | 28 | 30 => Ip::V6,
        _ => Ip::Other,
    };
    (4, ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(types: &[u16]) -> Vec<u8> {
        let mut p = vec![0u8; 12];
        for (i, t) in types.iter().enumerate() {
            if i > 0 {
                p.extend_from_slice(&[0, 5]); // TCI
            }
            p.extend_from_slice(&t.to_be_bytes());
        }
        p.extend_from_slice(&[0x45; 20]);
        p
    }

    #[test]
    fn ethernet_and_vlan_tags() {
        assert_eq!(link(&eth(&[0x0800]), LT_ETHERNET), (14, 4));
        assert_eq!(link(&eth(&[0x8100, 0x86DD]), LT_ETHERNET), (18, 6));
        assert_eq!(link(&eth(&[0x88A8, 0x8100, 0x0800]), LT_ETHERNET), (22, 4));
        assert_eq!(link(&eth(&[0x0806]), LT_ETHERNET).1, 0); // ARP
        assert_eq!(link(&[0u8; 13], LT_ETHERNET).1, 0);
        let mut m = eth(&[0x8847]);
        m.truncate(14);
        m.extend([0, 0x0C, 0x80, 64, 0, 0x06, 0x41, 64, 0x45]); // labels 200, 100 (S)
        assert_eq!(link(&m, LT_ETHERNET), (22, 4));
    }

    #[test]
    fn pppoe_session() {
        let mut p = eth(&[0x8864]);
        p.truncate(14);
        p.extend_from_slice(&[0x11, 0, 0, 1, 0, 40, 0x00, 0x21]);
        assert_eq!(link(&p, LT_ETHERNET), (22, 4));
    }

    #[test]
    fn ppp_with_and_without_hdlc_framing() {
        assert_eq!(link(&[0xff, 0x03, 0x00, 0x21, 0x45], LT_PPP), (4, 4));
        assert_eq!(link(&[0x00, 0x57, 0x60], LT_PPP), (2, 6));
        assert_eq!(link(&[0xc0, 0x21], LT_PPP_HDLC).1, 0); // LCP
        assert_eq!(link(&[0x0f, 0x00, 0x08, 0x00, 0x45], LT_PPP), (4, 4)); // Cisco HDLC
    }

    #[test]
    fn null_loop_and_raw() {
        assert_eq!(link(&[2, 0, 0, 0, 0x45], LT_NULL), (4, 4));
        assert_eq!(link(&[0, 0, 0, 30, 0x60], LT_NULL), (4, 6)); // big-endian host (macOS PPC)
        assert_eq!(link(&[0, 0, 0, 24, 0x60], LT_LOOP), (4, 6));
        assert_eq!(link(&[0x60], LT_RAW), (0, 6));
        assert_eq!(link(&[0x50], LT_RAW), (0, 0));
        assert_eq!(link(&[], LT_IPV4), (0, 0));
    }

    #[test]
    fn linux_cooked() {
        let mut p = vec![0u8; 14];
        p.extend_from_slice(&[0x08, 0x00]);
        assert_eq!(link(&p, LT_SLL), (16, 4));
        assert_eq!(link(&[0x86, 0xDD, 0, 0], LT_SLL2), (20, 6));
    }
}
