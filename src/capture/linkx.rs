//! More link layers (issue 24 point 6): 802.11 data frames (plain, radiotap, PPI), Cisco HDLC,
//! Frame Relay, ARCNET, FDDI, IP over InfiniBand, Linux NFLOG, Juniper Ethernet and SLIP.
//!
//! Each returns (offset of the network header, the IP version the link announces); every
//! length read from the frame is checked against the captured bytes by the caller's `get`s.

use super::bytes::{be16, le32, u8_at};
use super::link::Ip;

pub const LT_SLIP: u32 = 8;
pub const LT_FDDI: u32 = 10;
pub const LT_CHDLC: u32 = 104;
pub const LT_WLAN: u32 = 105;
pub const LT_FRELAY: u32 = 107;
pub const LT_RADIOTAP: u32 = 127;
pub const LT_ARCNET: u32 = 129;
pub const LT_JUNIPER_ETH: u32 = 178;
pub const LT_PPI: u32 = 192;
pub const LT_NFLOG: u32 = 239;
pub const LT_IPOIB: u32 = 242;

fn ethertype(t: Option<u16>) -> Ip {
    match t {
        Some(0x0800) => Ip::V4,
        Some(0x86DD) => Ip::V6,
        _ => Ip::Other,
    }
}

/// LLC/SNAP (IEEE 802.2 + RFC 1042): AA AA 03, OUI 00 00 00 (or 00 00 F8), then an ethertype.
fn snap(pkt: &[u8], at: usize) -> (usize, Ip) {
    if be16(pkt, at) != Some(0xAAAA) || u8_at(pkt, at + 2) != Some(0x03) {
        return (at, Ip::Other);
    }
    (at + 8, ethertype(be16(pkt, at + 6)))
}

/// The link layers of this module; None for a link type they do not handle.
pub fn link(pkt: &[u8], lt: u32) -> Option<(usize, Ip)> {
    Some(match lt {
        // tcpdump print-sl.c: a 16-byte BSD pseudo-header (direction, then the SLIP type in
        // the high nibble: 0x40 TYPE_IP; compressed TCP headers (RFC 1144) are not decoded).
        LT_SLIP => match u8_at(pkt, 1).map(|b| b & 0xF0) {
            Some(0x40) => (16, Ip::Nibble),
            _ => (16, Ip::Other),
        },
        // packet-chdlc.c: address (0x0F/0x8F), control, ethertype
        LT_CHDLC => (4, ethertype(be16(pkt, 2))),
        // packet-fddi.c: frame control, destination, source (13 bytes), then LLC/SNAP
        LT_FDDI => snap(pkt, 13),
        LT_FRELAY => frelay(pkt),
        LT_ARCNET => arcnet(pkt),
        // packet-ipoib.c (LINKTYPE_IPOIB as libpcap writes it): a 40-byte pseudo-header (GRH
        // or zeros, destination QPN and GID), then RFC 4391 §6's type and 2 reserved bytes.
        LT_IPOIB => (44, ethertype(be16(pkt, 40))),
        LT_NFLOG => nflog(pkt),
        LT_JUNIPER_ETH => juniper(pkt),
        LT_WLAN => wlan(pkt, 0),
        // radiotap.org: version 0, pad, little-endian header length
        LT_RADIOTAP => {
            let len = usize::from(u16::from_le_bytes([u8_at(pkt, 2)?, u8_at(pkt, 3)?]));
            wlan(pkt, len)
        }
        // PPI 1.0.10 (packet-ppi.c): version 0, flags, LE header length, LE DLT (105 only)
        LT_PPI => {
            let len = usize::from(u16::from_le_bytes([u8_at(pkt, 2)?, u8_at(pkt, 3)?]));
            if le32(pkt, 4) != Some(LT_WLAN) {
                return Some((len, Ip::Other));
            }
            wlan(pkt, len)
        }
        _ => return None,
    })
}

/// Frame Relay (RFC 2427 §3; packet-fr.c): a Q.922 address of 2-4 bytes ending at the byte
/// with the EA bit, UI control 0x03, an optional 0x00 pad, then the NLPID: 0xCC IPv4, 0x8E
/// IPv6, 0x80 SNAP (OUI 3 bytes, then an ethertype).
fn frelay(pkt: &[u8]) -> (usize, Ip) {
    let mut p = 0;
    while p < 4 && u8_at(pkt, p).is_some_and(|b| b & 1 == 0) {
        p += 1;
    }
    p += 1;
    if u8_at(pkt, p) != Some(0x03) {
        return (p, Ip::Other);
    }
    p += 1;
    if u8_at(pkt, p) == Some(0x00) {
        p += 1;
    }
    match u8_at(pkt, p) {
        Some(0xCC) => (p + 1, Ip::V4),
        Some(0x8E) => (p + 1, Ip::V6),
        Some(0x80) => (p + 6, ethertype(be16(pkt, p + 4))),
        _ => (p, Ip::Other),
    }
}

/// Linux ARCNET (packet-arcnet.c, has_offset): source, destination, 2-byte offset, then the
/// protocol: RFC 1201 IP 0xD4 with split flag and sequence (+4 more on an exception packet,
/// split flag 0xFF), RFC 1051 IP 0xF0 with none.
fn arcnet(pkt: &[u8]) -> (usize, Ip) {
    match u8_at(pkt, 4) {
        Some(0xD4) if u8_at(pkt, 5) == Some(0xFF) => (12, Ip::V4),
        Some(0xD4) => (8, Ip::V4),
        Some(0xF0) => (5, Ip::V4),
        _ => (5, Ip::Other),
    }
}

/// TLVs of an NFLOG record walked at most.
const MAX_TLV: usize = 64;

/// Linux NFLOG (tcpdump.org LINKTYPE_NFLOG; packet-nflog.c): family, version, resource id,
/// then TLVs with host-order (here little-endian) length and type, each padded to 4 bytes;
/// type 9 (NFULA_PAYLOAD) holds the packet, of the header's family (2 IPv4, 10 IPv6).
fn nflog(pkt: &[u8]) -> (usize, Ip) {
    let ip = match u8_at(pkt, 0) {
        Some(2) => Ip::V4,
        Some(10) => Ip::V6,
        _ => return (4, Ip::Other),
    };
    let mut p = 4;
    for _ in 0..MAX_TLV {
        let (Some(l0), Some(l1), Some(t0), Some(t1)) = (
            u8_at(pkt, p),
            u8_at(pkt, p + 1),
            u8_at(pkt, p + 2),
            u8_at(pkt, p + 3),
        ) else {
            break;
        };
        let len = usize::from(u16::from_le_bytes([l0, l1]));
        if u16::from_le_bytes([t0, t1]) & 0x7FFF == 9 {
            return (p + 4, ip);
        }
        if len < 4 {
            break;
        }
        p += (len + 3) & !3;
    }
    (p, Ip::Other)
}

/// Juniper Ethernet (packet-juniper.c): "MGC", flags; with the extension flag (0x80) a 2-byte
/// extension length and its TLVs; then an Ethernet frame, or IP when the no-L2 flag (0x02) is set.
fn juniper(pkt: &[u8]) -> (usize, Ip) {
    if pkt.get(..3) != Some(b"MGC") {
        return (4, Ip::Other);
    }
    let flags = u8_at(pkt, 3).unwrap_or(0);
    let mut p = 4;
    if flags & 0x80 != 0 {
        p += 2 + usize::from(be16(pkt, 4).unwrap_or(0));
    }
    if flags & 0x02 != 0 {
        return (p, Ip::Nibble);
    }
    let (l3, code) = super::link::link(pkt.get(p..).unwrap_or(&[]), super::link::LT_ETHERNET);
    let ip = match code {
        4 => Ip::V4,
        6 => Ip::V6,
        _ => Ip::Other,
    };
    (p + l3, ip)
}

/// IEEE 802.11 data frames (802.11-2016 §9.2-9.3; packet-ieee80211.c) at `at`: type 2; QoS
/// subtypes add 2 bytes (and 4 of HT control with the Order bit), four addresses (ToDS and
/// FromDS) 6; null-data subtypes carry nothing; protected frames are encrypted (not decoded,
/// see `protected`). The body is LLC/SNAP.
fn wlan(pkt: &[u8], at: usize) -> (usize, Ip) {
    let (Some(fc0), Some(fc1)) = (u8_at(pkt, at), u8_at(pkt, at + 1)) else {
        return (at, Ip::Other);
    };
    let sub = fc0 >> 4;
    if (fc0 >> 2) & 3 != 2 || sub & 0x04 != 0 || fc1 & 0x40 != 0 {
        return (at, Ip::Other);
    }
    let mut h = 24;
    if fc1 & 0x03 == 0x03 {
        h += 6;
    }
    if sub & 0x08 != 0 {
        h += 2;
        if fc1 & 0x80 != 0 {
            h += 4;
        }
    }
    snap(pkt, at + h)
}

/// Whether an 802.11 frame (of link type `lt`) is a protected (encrypted) data frame.
pub fn protected(pkt: &[u8], lt: u32) -> bool {
    let at = match lt {
        LT_WLAN => 0,
        LT_RADIOTAP | LT_PPI => match (u8_at(pkt, 2), u8_at(pkt, 3)) {
            (Some(a), Some(b)) => usize::from(u16::from_le_bytes([a, b])),
            _ => return false,
        },
        _ => return false,
    };
    matches!((u8_at(pkt, at), u8_at(pkt, at + 1)), (Some(f0), Some(f1)) if (f0 >> 2) & 3 == 2 && f1 & 0x40 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_link_headers() {
        let ip = |v: &[u8]| [v, &[0x45u8; 20][..]].concat();
        assert_eq!(
            link(
                &ip(&[1, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
                LT_SLIP
            ),
            Some((16, Ip::Nibble))
        );
        assert_eq!(link(&ip(&[0x0F, 0, 8, 0]), LT_CHDLC), Some((4, Ip::V4)));
        assert_eq!(
            link(&ip(&[0x18, 0x41, 3, 0xCC]), LT_FRELAY),
            Some((4, Ip::V4))
        );
        assert_eq!(
            link(&ip(&[1, 2, 0, 0, 0xD4, 0, 0, 0]), LT_ARCNET),
            Some((8, Ip::V4))
        );
        let mut f = vec![0x50; 13];
        f.extend([0xAA, 0xAA, 3, 0, 0, 0, 0x86, 0xDD]);
        assert_eq!(link(&f, LT_FDDI), Some((21, Ip::V6)));
        let n = [
            2, 0, 0, 24, 8, 0, 1, 0, 8, 0, 3, 0, 9, 0, 10, 0, 1, 2, 3, 4, 0, 0, 0, 0, 64, 0, 9, 0,
        ];
        assert_eq!(link(&n, LT_NFLOG), Some((28, Ip::V4)));
        assert_eq!(
            link(&[2, 0, 0, 0, 2, 0, 1, 0], LT_NFLOG).map(|r| r.1),
            Some(Ip::Other)
        ); // len < 4
        let mut j = b"MGC\x80\x00\x02\x01\x00".to_vec();
        j.extend([0u8; 12]);
        j.extend([8, 0, 0x45]);
        assert_eq!(link(&j, LT_JUNIPER_ETH), Some((22, Ip::V4)));
        assert_eq!(link(&[], 9999), None);
    }

    #[test]
    fn wlan_data_qos_four_addresses_and_protected() {
        let mut w = vec![0x08, 0x01];
        w.extend([0u8; 22]);
        w.extend([0xAA, 0xAA, 3, 0, 0, 0, 8, 0]);
        assert_eq!(link(&w, LT_WLAN), Some((32, Ip::V4)));
        let mut q = vec![0x88, 0x03];
        q.extend([0u8; 30]);
        q.extend([0xAA, 0xAA, 3, 0, 0, 0, 8, 0]);
        assert_eq!(link(&q, LT_WLAN), Some((40, Ip::V4)));
        w[1] = 0x41;
        assert_eq!(link(&w, LT_WLAN).map(|r| r.1), Some(Ip::Other));
        assert!(protected(&w, LT_WLAN));
        let mut r = vec![0, 0, 8, 0, 0, 0, 0, 0];
        r.extend(&w);
        assert!(protected(&r, LT_RADIOTAP));
    }
}
