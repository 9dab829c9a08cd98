//! pcapng options (pcapng §3.5) and the interface table: every IDB's link type, snaplen, name,
//! time resolution and offset and FCS length, and its timestamps as epoch ns.

use super::bytes::{Endian, Source};
use super::pcapng::{corrupt, Block};
use super::{Failure, Interface, Text, Warn};

pub(super) const OPT_NAME: u16 = 2;
pub(super) const OPT_HARDWARE: u16 = 2;
pub(super) const OPT_OS: u16 = 3;
pub(super) const OPT_USERAPPL: u16 = 4;
pub(super) const OPT_TSRESOL: u16 = 9;
pub(super) const OPT_FCSLEN: u16 = 13;
pub(super) const OPT_TSOFFSET: u16 = 14;
/// Largest timestamp accepted, in seconds from the epoch either way (int64 ns stays exact).
pub const MAX_SEC: i64 = 9_000_000_000;

/// A block's options (first value of each code) and whether they are well formed (pcapng §3.5).
pub(super) fn options(
    src: &mut dyn Source,
    start: u64,
    end: u64,
    e: Endian,
) -> (Vec<(u16, Vec<u8>)>, bool) {
    let region = usize::try_from(end.saturating_sub(start))
        .ok()
        .and_then(|n| src.get(start, n))
        .unwrap_or(&[]);
    let end = region.len();
    let mut out: Vec<(u16, Vec<u8>)> = Vec::new();
    let mut off = 0usize;
    while off + 4 <= end {
        let (Some(code), Some(len)) = (e.u16(region, off), e.u16(region, off + 2)) else {
            break;
        };
        if code == 0 {
            return (out, true); // opt_endofopt
        }
        let len = usize::from(len);
        let Some(v) = region.get(off + 4..off + 4 + len) else {
            return (out, false);
        };
        if !out.iter().any(|(c, _)| *c == code) {
            out.push((code, v.to_vec()));
        }
        off += 4 + len + ((4 - len % 4) % 4);
    }
    (out, true)
}

pub(super) fn opt(opts: &[(u16, Vec<u8>)], code: u16) -> Option<&[u8]> {
    opts.iter()
        .find(|(c, _)| *c == code)
        .map(|(_, v)| v.as_slice())
}

pub(super) fn text(v: Option<&[u8]>) -> Text {
    v.map(<[u8]>::to_vec)
}

/// One IDB's interface (block number `i + 1`), the W-OPTION warning when its options run past
/// the block, and the failure at a time resolution beyond 64-bit timestamps (the interface
/// then keeps the default resolution).
pub(super) fn interface(
    src: &mut dyn Source,
    b: &Block,
    i: usize,
) -> (Interface, Option<Warn>, Option<Failure>) {
    let (o, e) = (b.off, b.e);
    let (opts, ok) = options(src, o + 16, o + u64::from(b.len) - 4, e);
    let warn = (!ok).then(|| {
        Warn::new(
            "W-OPTION",
            "interface option runs past its block (options after it ignored)",
            1,
        )
        .at(Some(o), None)
    });
    let mut itf = Interface {
        linktype: src.u16(e, o + 8).unwrap_or(0).into(),
        snaplen: src.u32(e, o + 12).unwrap_or(0),
        tsresol: 6, // default: 10^-6 s
        tsoffset: 0,
        fcslen: 0,
        name: text(opt(&opts, OPT_NAME)),
        section: b.section,
    };
    let mut fail = None;
    if let Some(&r) = opt(&opts, OPT_TSRESOL).and_then(|v| v.first()) {
        // 10^-19 s still fits a u64 tick count; finer resolutions (libpcap: "too high") cannot.
        if (r & 0x80 != 0 && (r & 0x7F) > 63) || (r & 0x80 == 0 && r > 19) {
            let what = if r & 0x80 != 0 {
                format!("2^-{}", r & 0x7F)
            } else {
                format!("10^-{r}")
            };
            fail = Some(
                corrupt(
                    format!("interface time resolution {what} s is beyond 64-bit timestamps"),
                    i + 1,
                    o,
                )
                .hint("the if_tsresol option is corrupt"),
            );
        } else {
            itf.tsresol = r;
        }
    }
    if let Some(v) = opt(&opts, OPT_TSOFFSET).filter(|v| v.len() == 8) {
        itf.tsoffset = e.i64(v, 0).unwrap_or(0);
    }
    if let Some(&f) = opt(&opts, OPT_FCSLEN).and_then(|v| v.first()) {
        itf.fcslen = f;
    }
    (itf, warn, fail)
}

/// 10^k for every decimal resolution a u64 tick count can have (a table, not a power per packet).
const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut k = 1;
    while k < 20 {
        t[k] = t[k - 1] * 10;
        k += 1;
    }
    t
};

/// A raw 64-bit timestamp of an interface as epoch ns, with exact integer math (float seconds
/// would lose sub-µs precision); true when it was out of range and clamped.
pub fn ts_to_ns(ts: u64, itf: &Interface) -> (i64, bool) {
    let r = itf.tsresol;
    let (sec, frac) = if r & 0x80 != 0 {
        let mut n = u32::from(r & 0x7F).min(63);
        let sec = ts >> n;
        let mut frac = ts & ((1u64 << n) - 1);
        if n > 32 {
            frac >>= n - 32; // keep frac * 1e9 below 2^64: drop bits finer than 2^-32 s
            n = 32;
        }
        (sec, (frac * 1_000_000_000) >> n)
    } else {
        let r = usize::from(r.min(19));
        let (sec, frac) = (ts / POW10[r], ts % POW10[r]);
        (
            sec,
            if r <= 9 {
                frac * POW10[9 - r]
            } else {
                frac / POW10[r - 9]
            },
        )
    };
    let mut bad = sec > MAX_SEC as u64;
    let s = (sec.min(MAX_SEC as u64) as i64).wrapping_add(itf.tsoffset);
    bad |= !(-MAX_SEC..=MAX_SEC).contains(&s);
    (
        s.clamp(-MAX_SEC, MAX_SEC) * 1_000_000_000 + frac as i64,
        bad,
    )
}
