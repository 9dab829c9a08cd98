//! Network and transport headers: one row per IP packet, in frame order.
//!
//! The rules are those of Wireshark's packet-ip.c/packet-ipv6.c/packet-tcp.c/packet-udp.c
//! for what a row holds; lengths are never trusted beyond the captured bytes (headers-only
//! captures keep their TCP header; payload lengths come from the IP header).

use super::bytes::{be16, be32, be64, u8_at, Source};
use super::link::link;
use super::reasm::{Fragment, Head, Reassembler};
use super::tunnel;
use super::{Limits, Records, Warn};
use etherparse::{ip_number, UdpHeaderSlice};

/// Decoded rows as columns (see `tracekit.parsers._decode.Rows`). TCP fields are meaningful
/// on TCP rows (`proto == 0`), options where their `*_ok` flag is set.
#[derive(Default, Debug)]
pub struct Rows {
    pub frame: Vec<u64>,
    pub time: Vec<f64>,
    pub proto: Vec<u8>,
    pub size: Vec<u32>,
    pub caplen: Vec<u32>,
    pub payload: Vec<u32>,
    pub ports: Vec<bool>,
    pub sport: Vec<i32>,
    pub dport: Vec<i32>,
    pub is4: Vec<bool>,
    pub s4: Vec<u32>,
    pub d4: Vec<u32>,
    pub seq_raw: Vec<u32>,
    pub ack_raw: Vec<u32>,
    pub flags: Vec<u8>,
    pub win_raw: Vec<u16>,
    pub mss: Vec<u16>,
    pub mss_ok: Vec<bool>,
    pub wscale: Vec<u8>,
    pub wscale_ok: Vec<bool>,
    pub ts_val: Vec<u32>,
    pub ts_ecr: Vec<u32>,
    pub ts_ok: Vec<bool>,
    /// IPv6 rows: row, source and destination as (high, low) 64-bit halves.
    pub v6_row: Vec<i64>,
    pub v6: [Vec<u64>; 4],
    /// SACK blocks (RFC 2018): row and raw 32-bit edges, in option order within a row.
    pub sack_row: Vec<i64>,
    pub sack_left: Vec<i64>,
    pub sack_right: Vec<i64>,
    /// Tunnelled rows (issue 24 point 4): row, outer IP version, tunnel code (index into
    /// `tunnel::NAMES`) and the outer source and destination as (high, low) halves.
    pub outer_row: Vec<i64>,
    pub outer_is4: Vec<bool>,
    pub outer_code: Vec<u8>,
    pub outer: [Vec<u64>; 4],
    /// TCP rows whose IP length runs beyond the frame's original length: (row, the payload
    /// the frame can hold); settled by `confirm` once every row is decoded.
    pub(super) beyond: Vec<(usize, u32)>,
}

/// The per-frame part of a row.
#[derive(Clone, Copy)]
struct RowHead {
    frame: u64,
    time: f64,
    size: u32,
    caplen: u32,
    is4: bool,
    s4: u32,
    d4: u32,
}

/// One row's transport part before it is appended.
#[derive(Default, Clone, Copy)]
struct Row {
    proto: u8,
    payload: u32,
    ports: bool,
    sport: i32,
    dport: i32,
    seq: u32,
    ack: u32,
    flags: u8,
    win: u16,
    mss: Option<u16>,
    wscale: Option<u8>,
    ts: Option<(u32, u32)>,
}

impl Rows {
    fn push(&mut self, h: &RowHead, r: &Row) {
        let RowHead {
            frame,
            time,
            size,
            caplen,
            is4,
            s4,
            d4,
        } = *h;
        self.frame.push(frame);
        self.time.push(time);
        self.size.push(size);
        self.caplen.push(caplen);
        self.is4.push(is4);
        self.s4.push(s4);
        self.d4.push(d4);
        self.proto.push(r.proto);
        self.payload.push(r.payload);
        self.ports.push(r.ports);
        self.sport.push(r.sport);
        self.dport.push(r.dport);
        self.seq_raw.push(r.seq);
        self.ack_raw.push(r.ack);
        self.flags.push(r.flags);
        self.win_raw.push(r.win);
        self.mss.push(r.mss.unwrap_or(0));
        self.mss_ok.push(r.mss.is_some());
        self.wscale.push(r.wscale.unwrap_or(0));
        self.wscale_ok.push(r.wscale.is_some());
        let (v, e) = r.ts.unwrap_or((0, 0));
        self.ts_val.push(v);
        self.ts_ecr.push(e);
        self.ts_ok.push(r.ts.is_some());
    }
    /// Room for `n` rows in every per-row column (one allocation each, no regrowth copies).
    fn with_capacity(n: usize) -> Rows {
        let mut r = Rows::default();
        macro_rules! reserve {
            ($($f:ident),*) => { $( r.$f.reserve_exact(n); )* };
        }
        reserve!(
            frame, time, proto, size, caplen, payload, ports, sport, dport, is4, s4, d4, seq_raw,
            ack_raw
        );
        reserve!(flags, win_raw, mss, mss_ok, wscale, wscale_ok, ts_val, ts_ecr, ts_ok);
        r
    }
    pub fn len(&self) -> usize {
        self.frame.len()
    }
    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }
}

/// Records decoded per "chunk" by the reader this replaces: warnings and counts keep the
/// order in which it logged them (first chunk where each appeared), so that a log that
/// keeps the first message per code says what it said.
const CHUNK: usize = 1 << 17;

/// Something counted while decoding, with where it first happened.
#[derive(Default, Clone, Copy)]
struct Tally {
    n: u64,
    chunk: usize,
    frame: u64,
}

impl Tally {
    fn add(&mut self, chunk: usize, frame: u64) {
        if self.n == 0 {
            self.chunk = chunk;
            self.frame = frame;
        }
        self.n += 1;
    }
}

#[derive(Default)]
struct Tallies {
    non_ip: Tally,
    short: Tally,
    version: Tally,
    impossible: Tally,
    tcp_bad: Tally,
    wscale: Tally,
    offload: Tally,
    beyond: Tally,
    protected: Tally,
}

/// Where the IP header puts the transport header, and the fragment facts.
struct Net {
    l4: usize,
    /// Transport header + payload (may be negative: a damaged length).
    l4len: i64,
    nh: u8,
    bad: bool,
    frag: Option<Frag>,
    src: u128,
    dst: u128,
    /// The length came from the frame or a jumbo option (segmentation offload).
    offload: bool,
}

#[derive(Clone, Copy)]
struct Frag {
    is_frag: bool,
    unread: bool,
    offset: i64,
    more: bool,
    ident: u32,
    /// Where the fragment's data starts in the frame.
    data: usize,
}

/// Decode every record into rows; warnings and counts are appended in log order.
pub fn decode(
    src: &mut dyn Source,
    recs: &Records,
    t0: i64,
    limits: &Limits,
    warnings: &mut Vec<Warn>,
    counts: &mut Vec<(&'static str, u64)>,
) -> Rows {
    let mut rows = Rows::with_capacity(recs.len());
    let mut ra = Reassembler::new(limits);
    let mut t = Tallies::default();
    for i in 0..recs.len() {
        let off = recs.data_off.get(i).copied().unwrap_or(0);
        let cap = recs.caplen.get(i).map_or(0, |&c| c as usize);
        let pkt = src.get(off, cap).unwrap_or(&[]);
        let ts = recs.ts_ns.get(i).copied().unwrap_or(0);
        let p = Packet {
            frame: i as u64 + 1,
            chunk: i / CHUNK,
            time: (ts.wrapping_sub(t0)) as f64 * (1.0 / 1e9),
            size: recs.origlen.get(i).copied().unwrap_or(0),
            caplen: cap as u32,
        };
        packet(pkt, recs.linktype_of(i), &p, &mut ra, &mut t, &mut rows);
    }
    for r in super::iplen::confirm(&mut rows) {
        let frame = rows.frame.get(r).copied().unwrap_or(0);
        t.beyond
            .add(frame.saturating_sub(1) as usize / CHUNK, frame);
    }
    report(&t, warnings, counts);
    ra.finish(warnings, counts);
    rows
}

/// The decoder's warnings and counts, in the order the reader logged them.
fn report(t: &Tallies, warnings: &mut Vec<Warn>, counts: &mut Vec<(&'static str, u64)>) {
    let mut items: Vec<(usize, usize, Warn)> = Vec::new();
    let mut add = |k: usize, tl: &Tally, w: Warn| {
        if tl.n > 0 {
            items.push((tl.chunk, k, w));
        }
    };
    add(
        0,
        &t.short,
        Warn::new(
            "W-MALFORMED",
            "packets too short for their IP header (skipped)",
            t.short.n,
        )
        .at(None, Some(t.short.frame)),
    );
    let msg = "packets whose IP version disagrees with their link layer's type (skipped)";
    add(
        1,
        &t.version,
        Warn::new("W-MALFORMED", msg, t.version.n).at(None, Some(t.version.frame)),
    );
    add(
        1,
        &t.impossible,
        Warn::new(
            "W-MALFORMED",
            "packets with impossible IP header/total lengths (kept as 'other')",
            t.impossible.n,
        ),
    );
    add(
        2,
        &t.tcp_bad,
        Warn::new(
            "W-MALFORMED",
            "TCP segments with a bad data offset or cut before the TCP header (kept as 'other')",
            t.tcp_bad.n,
        ),
    );
    add(
        3,
        &t.wscale,
        Warn::new(
            "W-WSCALE",
            "window scale options above 14 (clamped to 14, RFC 7323)",
            t.wscale.n,
        ),
    );
    let msg = "IP total length 0 or a jumbo payload (segmentation offload on the capturing host): length taken from the frame";
    add(
        4,
        &t.offload,
        Warn::new("W-OFFLOAD", msg, t.offload.n).at(None, Some(t.offload.frame)),
    );
    let msg = "TCP segments whose IP length exceeds the frame and that no later sequence or ACK number confirms: payload limited to what the frame can hold";
    add(
        5,
        &t.beyond,
        Warn::new("W-IPLEN", msg, t.beyond.n).at(None, Some(t.beyond.frame)),
    );
    let msg = "protected (encrypted) 802.11 data frames: not decoded (no key), counted as non-IP";
    add(
        6,
        &t.protected,
        Warn::new("W-ENCRYPTED", msg, t.protected.n).at(None, Some(t.protected.frame)),
    );
    items.sort_by_key(|(c, k, _)| (*c, *k));
    warnings.extend(items.into_iter().map(|(_, _, w)| w));
    let mut cs: Vec<(usize, usize, &'static str, u64)> = Vec::new();
    if t.non_ip.n > 0 {
        cs.push((t.non_ip.chunk, 0, "non_ip", t.non_ip.n));
    }
    let bad = Tally {
        n: t.short.n + t.version.n,
        chunk: t.short.chunk.min(t.version.chunk),
        frame: 0,
    };
    let bad_chunk = match (t.short.n, t.version.n) {
        (0, _) => t.version.chunk,
        (_, 0) => t.short.chunk,
        _ => bad.chunk,
    };
    if bad.n > 0 {
        cs.push((bad_chunk, 1, "malformed", bad.n));
    }
    cs.sort_by_key(|c| (c.0, c.1));
    counts.extend(cs.into_iter().map(|c| (c.2, c.3)));
}

/// Per-record facts of the packet being decoded.
struct Packet {
    frame: u64,
    chunk: usize,
    time: f64,
    size: u32,
    caplen: u32,
}

fn packet(pkt: &[u8], lt: u32, p: &Packet, ra: &mut Reassembler, t: &mut Tallies, rows: &mut Rows) {
    let (l3, ipv) = link(pkt, lt);
    if ipv == 0 {
        t.non_ip.add(p.chunk, p.frame);
        if super::linkx::protected(pkt, lt) {
            t.protected.add(p.chunk, p.frame);
        }
        return;
    }
    let Some((mut net, mut is4)) = network(pkt, l3, ipv, p, t) else {
        return;
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
        rows.outer_row.push(rows.len() as i64);
        rows.outer_is4.push(o.is4);
        rows.outer_code.push(o.code);
        for (k, v) in [o.src >> 64, o.src, o.dst >> 64, o.dst]
            .into_iter()
            .enumerate()
        {
            rows.outer[k].push(v as u64);
        }
    }
    finish(pkt, l3, is4, net, p, ra, t, rows);
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

/// Reassembly, the transport header and the row of the (innermost) IP packet.
#[allow(clippy::too_many_arguments)]
fn finish(
    pkt: &[u8],
    l3: usize,
    is4: bool,
    net: Net,
    p: &Packet,
    ra: &mut Reassembler,
    t: &mut Tallies,
    rows: &mut Rows,
) {
    let (mut size, mut caplen) = (p.size, p.caplen);
    let (mut l4, mut l4len, mut nh) = (net.l4, net.l4len, net.nh);
    let mut head = None;
    let mut frag = net.frag.is_some_and(|f| f.is_frag) && !net.bad;
    if let (true, Some(f)) = (frag, net.frag) {
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
            rows.beyond.push((rows.len(), room));
        }
    }
    append(rows, p, &net, is4, (size, caplen), &row);
}

/// The transport header of a whole datagram (its own frame, or the completing frame's copy).
fn transport(
    seg: &[u8],
    l4: usize,
    l4len: i64,
    nh: u8,
    p: &Packet,
    t: &mut Tallies,
    rows: &mut Rows,
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
    rows: &mut Rows,
    p: &Packet,
    net: &Net,
    is4: bool,
    (size, caplen): (u32, u32),
    row: &Row,
) {
    let r = rows.len() as i64;
    if !is4 {
        rows.v6_row.push(r);
        for (k, v) in [net.src >> 64, net.src, net.dst >> 64, net.dst]
            .into_iter()
            .enumerate()
        {
            rows.v6[k].push(v as u64);
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

/// IPv4 (RFC 791 §3.1): the 20 fixed bytes are captured (checked by the caller). The version
/// nibble is not checked: the link layer said IPv4, as Wireshark's dissector table does.
///
/// A total length of 0 is what TCP segmentation offload (and Linux BIG TCP) leaves in segments
/// captured on the sending host: the length is taken from the frame, as Wireshark does with its
/// default "support packet capture from IP TSO-enabled hardware" (packet-ip.c) and tcpdump
/// (print-ip.c, "length 0 ... assume TSO"), and counted (issue 24 point 2).
fn ipv4(pkt: &[u8], l3: usize, wire: i64) -> Net {
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
fn ipv6(pkt: &[u8], l3: usize, wire: i64) -> Net {
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

/// Linux lays out the timestamp option as NOP, NOP, kind 8 length 10 on every segment.
const TS_PREFIX: u32 = 0x0101_080A;

/// TCP (RFC 9293 §3.1) into `row`; false when the header is unusable: cut before its 20
/// fixed bytes, or a data offset below 20 or beyond the segment (Wireshark: "bogus").
fn tcp(seg: &[u8], b: usize, l4len: i64, row: &mut Row, rows: &mut Rows) -> bool {
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
fn options(seg: &[u8], b: usize, he: usize, row: &mut Row, rows: &mut Rows) {
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
                        rows.sack_row.push(r);
                        rows.sack_left.push(l.into());
                        rows.sack_right.push(rt.into());
                    }
                }
            }
            _ => {}
        }
        pos += olen;
    }
}

#[cfg(test)]
#[path = "ip_tests.rs"]
mod tests;
