use super::conn::Pk;
use super::drive::summary;
use std::path::Path;

fn write(name: &str, data: &[u8]) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("tk_stream_{}_{name}", std::process::id()));
    std::fs::write(&p, data).unwrap();
    p
}

/// A pcap file (Ethernet) of `frames`, a millisecond apart.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut f = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    for (i, p) in frames.iter().enumerate() {
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(&(i as u32 * 1000).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    f
}

/// Ethernet + IPv4 + TCP from `a` to `b` (ports 1000 -> 80 when `fwd`, else back).
fn seg(fwd: bool, seq: u32, ack: u32, flags: u8, payload: usize) -> Vec<u8> {
    let mut t = Vec::new();
    let (sp, dp) = if fwd { (1000u16, 80u16) } else { (80, 1000) };
    t.extend_from_slice(&sp.to_be_bytes());
    t.extend_from_slice(&dp.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    t.resize(t.len() + payload, b'x');
    let (s, d) = if fwd {
        ([10, 0, 0, 1], [10, 0, 0, 2])
    } else {
        ([10, 0, 0, 2], [10, 0, 0, 1])
    };
    let mut p = vec![0u8; 12];
    p.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
    p.extend_from_slice(&(20 + t.len() as u16).to_be_bytes());
    p.extend_from_slice(&[0, 1, 0, 0, 64, 6, 0, 0]);
    p.extend_from_slice(&s);
    p.extend_from_slice(&d);
    p.extend_from_slice(&t);
    p
}

#[test]
fn handshake_data_and_rtt() {
    let (syn, ack, synack) = (0x02, 0x10, 0x12);
    let frames = vec![
        seg(true, 100, 0, syn, 0),
        seg(false, 500, 101, synack, 0),
        seg(true, 101, 501, ack, 0),
        seg(true, 101, 501, ack, 100),
        seg(false, 501, 201, ack, 0),
        seg(true, 201, 501, ack, 100),
        seg(false, 501, 301, ack, 0),
    ];
    let path = write("hs.pcap", &pcap(&frames));
    let f = summary(&path, 0.2).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(f.packets, 7);
    assert_eq!(f.rows.len(), 1);
    let r = &f.rows[0];
    assert_eq!((r.flow, r.dir), (0, 0));
    assert_eq!(
        (r.stats.packets, r.stats.data_packets, r.stats.data_bytes),
        (4, 2, 200)
    );
    assert_eq!(r.unique_bytes(), 200);
    assert!((r.hs_rtt - 0.002).abs() < 1e-9);
    let rtt = r.rtt.unwrap();
    // the SYN's sample and the two data segments'
    assert_eq!(rtt.n, 3);
    assert!(rtt.seq);
}

#[test]
fn refusals_name_the_reason() {
    // a pcapng file is read by the reader's own block walk: its errors are the reader's
    let ng = write("x.pcapng", &[0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0]);
    let e = summary(&ng, 0.2).unwrap_err();
    assert_eq!(e.kind, "CorruptTraceError");
    assert!(e
        .message
        .starts_with("truncated section header block: 8 bytes"));
    let junk = write("junk.pcap", b"not a capture at all, no");
    assert_eq!(summary(&junk, 0.2).unwrap_err().kind, "UnknownFormatError");
    let mut cut = pcap(&[seg(true, 1, 0, 0x02, 0)]);
    cut[32..36].copy_from_slice(&u32::MAX.to_le_bytes()); // a huge captured length
    let cut_p = write("cut.pcap", &cut);
    assert_eq!(summary(&cut_p, 0.2).unwrap_err().kind, "CorruptTraceError");
    for p in [ng, junk, cut_p] {
        std::fs::remove_file(p).unwrap();
    }
    assert!(summary(Path::new("/nonexistent/x.pcap"), 0.2).is_err());
}

/// A timeout re-send counts as `rto` until a later D-SACK (RFC 2883) covers it: then the
/// direction's counts move it to `spurious`, the bytes and count unchanged.
#[test]
fn a_dsack_moves_a_counted_retransmission_to_spurious() {
    use super::conn::{Conn, Prior};
    use crate::state::seq::MISSING;
    let mut prior = Prior {
        seq_rtt: [true; 2],
        ooo_s: 0.01,
        resent: None,
        echo_lag: None,
        sum: None,
        stall: [crate::state::stalls::Whole::NONE; 2],
        cwnd: [super::facts::CwndFacts::NONE; 2],
        fs: Default::default(),
    };
    let mut c = Conn::new(&mut prior, 0.2);
    let pk = |row: u32, time: f64, seq: i64, len: i64, flags: u8, ack: i64| {
        pk(row, time, (seq, len), flags, ack)
    };
    let (syn, ack, synack) = (0x02, 0x10, 0x12);
    c.on_packet(0, &pk(0, 0.0, 0, 0, syn, MISSING), &[]);
    c.on_packet(1, &pk(1, 0.01, 0, 0, synack, 1), &[]);
    c.on_packet(0, &pk(2, 0.02, 1, 0, ack, 1), &[]);
    c.on_packet(0, &pk(3, 0.03, 1, 1000, ack, 1), &[]);
    c.on_packet(0, &pk(4, 0.5, 1, 1000, ack, 1), &[]);
    assert_eq!((c.sum[0].retrans, c.sum[0].retrans_bytes), (1, 1000));
    assert_eq!(c.sum[0].kinds, [0, 1, 0]);
    // a D-SACK block for other bytes changes nothing; one covering the re-send does
    c.on_packet(1, &pk(5, 0.51, 1, 0, ack, 1001), &[(1, 500)]);
    assert_eq!(c.sum[0].kinds, [0, 1, 0]);
    c.on_packet(1, &pk(6, 0.52, 1, 0, ack, 1001), &[(1, 1001)]);
    assert_eq!(c.sum[0].kinds, [0, 0, 1]);
    c.on_packet(1, &pk(7, 0.53, 1, 0, ack, 1001), &[(1, 1001)]);
    assert_eq!((c.sum[0].retrans, c.sum[0].kinds), (1, [0, 0, 1]));
}

/// Pass 1's TSval tables kept within a window of the highest echo: when an echo falls
/// further, pass 1 runs again within the falls it measured, and every column is the one
/// keeping every TSval gives (window 0: again on every sample whose ACKs were reordered).
#[test]
fn pass_1_read_again_when_an_echo_falls_below_its_window_gives_the_same_summary() {
    use super::drive::{echo_falls, summary_within};
    fn each(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                each(&p, out);
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    each(Path::new("samples"), &mut files);
    assert!(files.len() > 20);
    // ACKs in the middle of the segments (no `seq` sample: the `ts` ones give the RTT), one
    // echo 2 ticks below the one before it
    let ts = |fwd: bool, seq: u32, ack: u32, flags: u8, len: usize, v: u32, e: u32| {
        let mut p = seg(fwd, seq, ack, flags, len);
        let opt = [[1, 1, 8, 10], v.to_be_bytes(), e.to_be_bytes()].concat();
        p.splice(34 + 20..34 + 20, opt);
        p[34 + 12] = 0x80; // 32-byte header
        let total = u16::from_be_bytes([p[16], p[17]]) + 12;
        p[16..18].copy_from_slice(&total.to_be_bytes());
        p
    };
    let mut frames = vec![ts(true, 1, 1, 0x10, 0, 101, 500)]; // (no handshake)
    for k in 0..8 {
        frames.push(ts(true, 1 + 1000 * k, 1, 0x18, 1000, 102 + k, 500));
    }
    for (k, e) in [(0, 102), (1, 103), (2, 104), (3, 107), (4, 105), (5, 108)] {
        frames.push(ts(false, 1, 501 + 1000 * k, 0x10, 0, 501 + k, e));
    }
    files.push(write("echo_falls.pcap", &pcap(&frames)));
    let mut fell = 0;
    for p in &files {
        let show = |w: i64| format!("{:?}", summary_within(p, 0.2, w, 2));
        assert_eq!(show(0), show(i64::MAX), "{}", p.display());
        let falls = echo_falls(p).map(|f| f.into_iter().flatten().max());
        fell += usize::from(falls.is_ok_and(|m| m.is_some_and(|m| m > 0)));
    }
    assert!(fell > 0);
    let made = files.pop().unwrap();
    assert_eq!(echo_falls(&made).unwrap(), [[0, 2]]);
    std::fs::remove_file(made).unwrap();
}

#[test]
fn facts_are_those_read_capture_gives() {
    let (syn, ack, synack) = (0x02, 0x10, 0x12);
    let frames = vec![
        seg(true, 100, 0, syn, 0),
        seg(false, 500, 101, synack, 0),
        seg(true, 101, 501, ack, 100),
        vec![0u8; 20], // no IP: a count
    ];
    let path = write("facts.pcap", &pcap(&frames));
    let _ = super::source::take_warnings();
    summary(&path, 0.2).unwrap();
    let facts = super::source::take_facts().unwrap();
    let limits = crate::capture::Limits::default();
    let mut src = crate::capture::bytes::FileSource::open(&path).unwrap();
    let cap = crate::capture::read(&mut src, crate::capture::Format::Pcap, &limits).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(format!("{:?}", facts.meta), format!("{:?}", cap.meta));
    assert_eq!(facts.counts, cap.counts);
    assert!(!facts.counts.is_empty());
    assert_eq!((facts.records, facts.t0_ns), (cap.records, cap.t0_ns));
    assert_eq!(facts.rows, cap.rows.size.len() as u64);
    let cut = cap
        .rows
        .caplen
        .iter()
        .zip(&cap.rows.size)
        .filter(|(c, s)| c < s);
    assert_eq!(facts.cut, cut.count() as u64);
}

/// A packet for the tests: no timestamp option, no MSS option.
pub(crate) fn pk(row: u32, time: f64, (seq, len): (i64, i64), flags: u8, ack: i64) -> Pk {
    use crate::state::seq::MISSING;
    Pk {
        row,
        time,
        seq,
        len,
        flags,
        ack,
        win: 65535,
        ts_val: MISSING,
        ts_ecr: MISSING,
        ttl: 64,
        mss: -1,
    }
}

#[test]
fn each_pass_reader_is_named_and_only_pass_2_numbers() {
    let p = write("named.pcap", &pcap(&[seg(true, 100, 0, 0x02, 0)]));
    for (number, name) in [(false, "tk-read-1"), (true, "tk-read-2")] {
        let mut r = super::source::Reader::start(&p, None, number);
        assert_eq!(r.thread_name().as_deref(), Some(name));
        let b = r.next().expect("a batch").expect("read");
        assert_eq!((b.rows.len(), b.nums.len()), (1, usize::from(number)));
        assert!(r.next().is_none());
        assert_eq!(r.numbering.is_some(), number);
    }
    std::fs::remove_file(p).unwrap();
}
