//! Unit tests of the network/transport decoder (ip.rs), kept apart for the file size.

use super::*;
use crate::capture::bytes::Mem;

/// Ethernet + IPv4 (total length `tot`) + a TCP header with `opts`, `payload` bytes after it.
fn v4_tcp(tot: Option<u16>, opts: &[u8], payload: usize) -> Vec<u8> {
    let doff = 20 + opts.len();
    let len = 20 + doff + payload;
    let mut p = vec![0u8; 12];
    p.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
    p.extend_from_slice(&tot.unwrap_or(len as u16).to_be_bytes());
    p.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    p.extend_from_slice(&[0x9c, 0x40, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 0]);
    p.extend_from_slice(&[((doff / 4) as u8) << 4, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(opts);
    p.resize(14 + len, b'x');
    p
}

fn decode_frames(frames: &[Vec<u8>]) -> (Rows, Vec<Warn>, Vec<(&'static str, u64)>) {
    let mut data = Vec::new();
    let mut recs = Records {
        linktype: 1,
        ..Records::default()
    };
    for f in frames {
        recs.data_off.push(data.len() as u64);
        recs.caplen.push(f.len() as u32);
        recs.origlen.push(f.len() as u32);
        recs.ts_ns.push(0);
        data.extend_from_slice(f);
    }
    let (mut w, mut c) = (Vec::new(), Vec::new());
    let rows = decode_in(
        &mut Mem(&data),
        &recs,
        0,
        &Limits::default(),
        &mut w,
        &mut c,
        crate::capture::spans::SPAN,
    );
    (rows, w, c)
}

#[test]
fn tcp_options_mss_wscale_sack_and_the_wscale_clamp() {
    // MSS 1460, NOP, window scale 15, SACK one block (1, 2), NOP NOP
    let opts = [
        2, 4, 5, 180, 1, 3, 3, 15, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1,
    ];
    let (r, w, _) = decode_frames(&[v4_tcp(None, &opts, 10)]);
    assert_eq!(
        (r.proto[0], r.payload[0], r.sport[0], r.dport[0]),
        (0, 10, 40000, 5001)
    );
    assert_eq!((r.mss[0], r.mss_ok[0]), (1460, true));
    assert_eq!((r.wscale[0], r.wscale_ok[0]), (14, true)); // RFC 7323 §2.3
    assert_eq!(
        (
            r.sack_row.clone(),
            r.sack_left.clone(),
            r.sack_right.clone()
        ),
        (vec![0], vec![1], vec![2])
    );
    assert_eq!(w[0].code, "W-WSCALE");
}

#[test]
fn zero_length_option_stops_the_walk() {
    let opts = [8, 0, 2, 4, 5, 180, 0, 0];
    let (r, _, _) = decode_frames(&[v4_tcp(None, &opts, 0)]);
    assert!(!r.mss_ok[0] && !r.ts_ok[0]);
}

#[test]
fn total_length_zero_is_taken_from_the_frame() {
    let (r, w, _) = decode_frames(&[v4_tcp(Some(0), &[], 1000)]);
    assert_eq!((r.proto[0], r.payload[0]), (0, 1000));
    assert_eq!((w[0].code, w[0].count), ("W-OFFLOAD", 1));
}

#[test]
fn impossible_lengths_and_bad_data_offsets_are_kept_as_other() {
    let mut bad_doff = v4_tcp(None, &[], 0);
    bad_doff[46] = 0x40; // data offset 16 bytes
    let (r, w, _) = decode_frames(&[v4_tcp(Some(10), &[], 0), bad_doff]);
    assert_eq!(r.proto, vec![2, 2]);
    let codes: Vec<_> = w.iter().map(|x| (x.code, x.count)).collect();
    assert_eq!(codes, vec![("W-MALFORMED", 1), ("W-MALFORMED", 1)]); // the log adds them up per code
}

#[test]
fn ipv4_header_under_the_ipv6_ethertype_is_malformed() {
    let mut f = v4_tcp(None, &[], 30);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    let (r, w, c) = decode_frames(&[f]);
    assert!(r.is_empty());
    assert!(w[0].message.contains("version disagrees"));
    assert_eq!(c, vec![("malformed", 1)]);
}

#[test]
fn ipv6_extension_headers_and_jumbo_payload() {
    // IPv6, payload length 0, Hop-by-Hop with a Jumbo Payload option of 28 bytes, then TCP
    let mut p = vec![0u8; 12];
    p.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 0, 0, 64]);
    p.extend_from_slice(&[0xfd; 32]);
    p.extend_from_slice(&[6, 0, 0xC2, 4, 0, 0, 0, 28]);
    p.extend_from_slice(&[
        0x9c, 0x40, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    let (r, w, _) = decode_frames(&[p]);
    assert_eq!((r.proto[0], r.is4[0], r.payload[0]), (0, false, 0)); // 28 - 8 (HBH) - 20 (TCP)
    assert_eq!(r.v6_row, vec![0]);
    assert_eq!(w[0].code, "W-OFFLOAD");
}
