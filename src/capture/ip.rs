//! Network and transport headers: one row per IP packet, in frame order.
//!
//! The rules are those of Wireshark's packet-ip.c/packet-ipv6.c/packet-tcp.c/packet-udp.c
//! for what a row holds; lengths are never trusted beyond the captured bytes (headers-only
//! captures keep their TCP header; payload lengths come from the IP header). The IP headers
//! are read in `l3`, the TCP header and options in `tcp`, the columns live in `rows`; spans of
//! records are decoded on several threads by `spans`.

use super::bytes::{be16, u8_at, Source};
use super::l3::{ipv4, ipv6, Frag, Net};
use super::link::link;
use super::reasm::{Fragment, Head, Reassembler};
pub use super::rows::Rows;
use super::rows::{Row, RowHead, Sink};
use super::tally::{report, Tallies};
use super::tcp::tcp;
use super::tunnel;
use super::{spans, Limits, Records, Warn};
use etherparse::{ip_number, UdpHeaderSlice};

/// Records decoded per "chunk" by the reader this replaces: warnings and counts keep the
/// order in which it logged them (first chunk where each appeared), so that a log that
/// keeps the first message per code says what it said.
const CHUNK: usize = 1 << 17;

/// Decode every record into rows, in spans of `span` records (`spans`); warnings and counts are
/// appended in log order.
pub fn decode_in(
    src: &mut dyn Source,
    recs: &Records,
    t0: i64,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
    counts: &mut Vec<(&'static str, u64)>,
    span: usize,
) -> Rows {
    let mut ra = Reassembler::new(limits);
    let (mut rows, mut t) = spans::decode(src, recs, t0, &mut ra, span);
    confirm_lengths(&mut rows, &[], &mut t);
    report(&t, warnings, counts);
    ra.finish(warnings, counts);
    rows
}

/// Settles the rows whose IP length runs beyond the frame (`iplen::confirm_across`, `later`:
/// the batches after `rows`), counting those limited to the frame (W-IPLEN).
pub(super) fn confirm_lengths(rows: &mut Rows, later: &[&Rows], t: &mut Tallies) {
    for r in super::iplen::confirm_across(rows, later) {
        let frame = rows.frame.get(r).copied().unwrap_or(0);
        t.beyond
            .add(frame.saturating_sub(1) as usize / CHUNK, frame);
    }
}

/// Decode records `range` into `sink`, in order. Without a reassembler (a span decoded apart
/// from the others), stop at the first IP fragment and return false: reassembly depends on
/// every fragment before, so such a span is decoded again in order, with it.
pub(super) fn records(
    src: &mut dyn Source,
    recs: &Records,
    range: std::ops::Range<usize>,
    t0: i64,
    mut ra: Option<&mut Reassembler>,
    t: &mut Tallies,
    sink: &mut Sink,
) -> bool {
    for i in range {
        let off = recs.data_off.get(i).copied().unwrap_or(0);
        let cap = recs.caplen.get(i).map_or(0, |&c| c as usize);
        let pkt = src.get(off, cap).unwrap_or(&[]);
        let ts = recs.ts_ns.get(i).copied().unwrap_or(0);
        let g = recs.first + i; // the record's index in the file
        let p = Packet {
            frame: g as u64 + 1,
            chunk: g / CHUNK,
            time: (ts.wrapping_sub(t0)) as f64 * (1.0 / 1e9),
            size: recs.origlen.get(i).copied().unwrap_or(0),
            caplen: cap as u32,
        };
        if !packet(pkt, recs.linktype_of(i), &p, ra.as_deref_mut(), t, sink) {
            return false;
        }
    }
    true
}

/// Per-record facts of the packet being decoded.
struct Packet {
    frame: u64,
    chunk: usize,
    time: f64,
    size: u32,
    caplen: u32,
}

/// One record's row (if it has one); false when it is a fragment and `ra` is None.
fn packet(
    pkt: &[u8],
    lt: u32,
    p: &Packet,
    ra: Option<&mut Reassembler>,
    t: &mut Tallies,
    rows: &mut Sink,
) -> bool {
    let (l3, ipv) = link(pkt, lt);
    if ipv == 0 {
        t.non_ip.add(p.chunk, p.frame);
        if super::linkx::protected(pkt, lt) {
            t.protected.add(p.chunk, p.frame);
        }
        return true;
    }
    let Some((mut net, mut is4)) = network(pkt, l3, ipv, p, t) else {
        return true;
    };
    let mut l3 = l3;
    // Tunnels (issue 24 point 4): the inner packet is the row; the outermost tunnel's name and
    // endpoints are kept. An inner header that does not decode leaves the outer packet as it is.
    if net.offload {
        t.offload.add(p.chunk, p.frame);
    }
    let mut outer: Option<Outer> = None;
    for _ in 0..tunnel::MAX_DEPTH {
        let whole = !net.bad && !net.frag.is_some_and(|f| f.is_frag);
        let Some((code, il3, iv)) = whole.then(|| inner_of(pkt, &net)).flatten() else {
            break;
        };
        let mut probe = Tallies::default();
        let Some((n2, v4)) = network(pkt, il3, iv, p, &mut probe) else {
            break;
        };
        outer.get_or_insert(Outer {
            code,
            is4,
            src: net.src,
            dst: net.dst,
        });
        if n2.offload {
            t.offload.add(p.chunk, p.frame);
        }
        (l3, net, is4) = (il3, n2, v4);
    }
    if let Some(o) = outer {
        let r = rows.len() as i64;
        let side = &mut rows.side;
        side.outer_row.push(r);
        side.outer_is4.push(o.is4);
        side.outer_code.push(o.code);
        for (k, v) in [o.src >> 64, o.src, o.dst >> 64, o.dst]
            .into_iter()
            .enumerate()
        {
            side.outer[k].push(v as u64);
        }
    }
    finish(pkt, l3, is4, net, p, ra, t, rows)
}

/// The outermost tunnel of a row.
struct Outer {
    code: u8,
    is4: bool,
    src: u128,
    dst: u128,
}

/// The tunnel inside an IP packet's payload (IP protocols, then UDP ports).
fn inner_of(pkt: &[u8], net: &Net) -> Option<tunnel::Inner> {
    if net.nh == ip_number::UDP.0 {
        let (sp, dp) = (be16(pkt, net.l4)?, be16(pkt, net.l4 + 2)?);
        return tunnel::over_udp(pkt, net.l4 + 8, sp, dp);
    }
    tunnel::over_ip(pkt, net.l4, net.nh)
}

/// The IP header at `l3` (version `ipv` per the link or tunnel); None when the packet is
/// skipped as malformed (counted in `t`).
fn network(pkt: &[u8], l3: usize, ipv: u8, p: &Packet, t: &mut Tallies) -> Option<(Net, bool)> {
    // Wireshark's packet-ip.c (dissect_ip) hands an IPv6 header under the IPv4 type to IPv6;
    // any other version nibble that disagrees with the link layer's type is "Bogus IP version"
    // and decodes nothing (issue 24 point 5). Raw IP link types decide by the nibble.
    let nibble = u8_at(pkt, l3).map(|b| b >> 4);
    let ipv = if ipv == 4 && nibble == Some(6) {
        6
    } else {
        ipv
    };
    // Headers-only captures keep the IP header; a frame cut before its fixed IP header is unusable.
    let need = if ipv == 6 { 40 } else { 20 };
    if l3.saturating_add(need) > pkt.len() {
        t.short.add(p.chunk, p.frame);
        return None;
    }
    if nibble != Some(ipv) {
        t.version.add(p.chunk, p.frame);
        return None;
    }
    let is4 = ipv == 4;
    let wire = i64::from(p.size) - l3 as i64; // the datagram's bytes on the wire, per the frame
    let net = if is4 {
        ipv4(pkt, l3, wire)
    } else {
        ipv6(pkt, l3, wire)
    };
    Some((net, is4))
}

/// Reassembly, the transport header and the row of the (innermost) IP packet (false, and
/// no row, for a fragment without a reassembler).
#[allow(clippy::too_many_arguments)]
fn finish(
    pkt: &[u8],
    l3: usize,
    is4: bool,
    net: Net,
    p: &Packet,
    ra: Option<&mut Reassembler>,
    t: &mut Tallies,
    rows: &mut Sink,
) -> bool {
    let (mut size, mut caplen) = (p.size, p.caplen);
    let (mut l4, mut l4len, mut nh) = (net.l4, net.l4len, net.nh);
    let mut head = None;
    let mut frag = net.frag.is_some_and(|f| f.is_frag) && !net.bad;
    if let (true, Some(f)) = (frag, net.frag) {
        let Some(ra) = ra else {
            return false;
        };
        if f.unread {
            ra.unread += 1; // a Fragment header cut by the snap length: nothing to reassemble
        } else if let Some(d) = ra.add(&fragment(p, pkt, l3, is4, &net, &f)) {
            // Wireshark: the completing frame carries the datagram's transport header.
            head = Some(d.head);
            l4 = 0;
            l4len = d.l4len;
            nh = d.head.proto;
            size = u32::try_from(d.size).unwrap_or(u32::MAX);
            caplen = u32::try_from(d.caplen).unwrap_or(u32::MAX);
            frag = false;
        }
    }
    if net.bad {
        t.impossible.add(p.chunk, p.frame);
    }
    let l4len = l4len.max(0);
    let seg = head.as_ref().map_or(pkt, |h| h.header());
    let row = if frag || net.bad {
        Row {
            proto: 2,
            ..Row::default()
        }
    } else {
        transport(seg, l4, l4len, nh, p, t, rows)
    };
    if head.is_none() && row.proto == 0 {
        // the payload the frame's original length can hold after the TCP header (point 3)
        let doff = l4len - i64::from(row.payload);
        let room = i64::from(p.size) - l4 as i64 - doff;
        if i64::from(row.payload) > room {
            let room = u32::try_from(room.max(0)).unwrap_or(0);
            rows.side.beyond.push((rows.len(), room));
        }
    }
    append(rows, p, &net, is4, (size, caplen), &row);
    true
}

/// The transport header of a whole datagram (its own frame, or the completing frame's copy).
fn transport(
    seg: &[u8],
    l4: usize,
    l4len: i64,
    nh: u8,
    p: &Packet,
    t: &mut Tallies,
    rows: &mut Sink,
) -> Row {
    let mut row = Row {
        proto: 2,
        ..Row::default()
    };
    if nh == ip_number::TCP.0 {
        if !tcp(seg, l4, l4len, &mut row, rows) {
            t.tcp_bad.add(p.chunk, p.frame);
        } else if row.wscale.is_some_and(|w| w > 14) {
            // RFC 7323 §2.3: a shift count above 14 is used as 14.
            t.wscale.add(p.chunk, p.frame);
            row.wscale = Some(14);
        }
    } else if nh == ip_number::UDP.0 {
        // UDP (RFC 768): the 8-byte header must be captured; the payload length is the IP one's
        if let Some(u) = seg
            .get(l4..)
            .and_then(|s| UdpHeaderSlice::from_slice(s).ok())
        {
            row.proto = 1;
            row.ports = true;
            row.sport = u.source_port().into();
            row.dport = u.destination_port().into();
            row.payload = u32::try_from((l4len - 8).max(0)).unwrap_or(u32::MAX);
        }
    }
    row
}

/// Append one row (IPv6 addresses to their own columns).
fn append(
    rows: &mut Sink,
    p: &Packet,
    net: &Net,
    is4: bool,
    (size, caplen): (u32, u32),
    row: &Row,
) {
    let r = rows.len() as i64;
    if !is4 {
        rows.side.v6_row.push(r);
        for (k, v) in [net.src >> 64, net.src, net.dst >> 64, net.dst]
            .into_iter()
            .enumerate()
        {
            rows.side.v6[k].push(v as u64);
        }
    }
    let (s4, d4) = if is4 {
        (net.src as u32, net.dst as u32)
    } else {
        (0, 0)
    };
    let head = RowHead {
        frame: p.frame,
        time: p.time,
        size,
        caplen,
        is4,
        s4,
        d4,
        ttl: net.ttl,
    };
    rows.push(&head, row);
}

/// The reassembler's view of a fragment.
fn fragment(p: &Packet, pkt: &[u8], l3: usize, is4: bool, net: &Net, f: &Frag) -> Fragment {
    let tot = net.l4len + (net.l4 - l3) as i64; // the IP total length, back from l4len
    let dlen = tot - (f.data - l3) as i64;
    // the unfragmentable part counted in the 65,535 limit: IPv4 header; IPv6 extension headers
    let hdr = if is4 {
        (f.data - l3) as i64
    } else {
        (f.data - l3) as i64 - 48
    };
    let end = pkt.len().min(f.data.saturating_add(dlen.max(0) as usize));
    let key = if is4 {
        (4, net.src, net.dst, net.nh, f.ident)
    } else {
        (6, net.src, net.dst, 0, f.ident)
    };
    Fragment {
        key,
        frame: p.frame,
        time: p.time,
        offset: f.offset,
        length: dlen,
        more: f.more,
        hdr,
        head: Head::new(
            pkt.get(..end).unwrap_or(pkt),
            net.l4,
            net.l4 as i64 - f.data as i64,
            net.nh,
        ),
        size: p.size.into(),
        caplen: p.caplen.into(),
    }
}

#[cfg(test)]
#[path = "ip_tests.rs"]
mod tests;
